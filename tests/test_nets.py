"""Loading a net leaves the rest of the process's arithmetic alone."""

from __future__ import annotations

import subprocess
import sys


def test_opening_a_net_leaves_denormal_numbers_to_the_rest_of_the_process():
    # In a fresh interpreter: a session opened earlier in this one would hide the change.
    script = (
        "import numpy as np\n"
        "from pathlib import Path\n"
        "from companion.recognizer import DEFAULT_MODEL\n"
        "from companion.recognizer.nets import open_session\n"
        "before = float(np.array([1e-310])[0] * 1.0)\n"
        "open_session(Path(DEFAULT_MODEL).parent / 'localizer.onnx', 1)\n"
        "after = float(np.array([1e-310])[0] * 1.0)\n"
        "print(before, after)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    before, after = (float(v) for v in done.stdout.split())
    assert before == 1e-310  # the machine keeps denormals to begin with
    assert after == before
