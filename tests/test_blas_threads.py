"""The product multiplies its small matrices on one BLAS thread (see companion/__init__.py)."""

import os
import subprocess
import sys

SHOW = "import companion, numpy, os; print(os.environ.get('OPENBLAS_NUM_THREADS'))"


def _threads_after_import(**env) -> str:
    clean = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    done = subprocess.run(
        [sys.executable, "-c", SHOW], env=clean | env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def test_numpy_loaded_after_the_product_multiplies_on_one_thread():
    assert _threads_after_import() == "1"


def test_a_users_own_blas_threads_are_kept():
    assert _threads_after_import(OPENBLAS_NUM_THREADS="3") == "3"
