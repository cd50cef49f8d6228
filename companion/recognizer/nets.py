"""The model's files and nets: where they are, which set of nets suits this CPU, and the
onnxruntime sessions that run them.

The nets come in three sets: ``int8``, both nets quantized, for CPUs with int8 dot products
(x86 VNNI or AMX, Arm dotprod; ``int8_is_fast``); ``float`` (``float_nets`` in the metadata);
and ``avx2`` (``avx2_nets``), the float localizer with a classifier quantized to 7-bit weights,
for x86 CPUs without int8 dot products. There 8-bit weights saturate onnxruntime's int8 sums (a
loss of recall) and the int8 localizer is no faster than the float one, while the 7-bit
classifier cannot saturate and runs a quarter faster than the float one. ``auto`` picks the set
made for this CPU.
"""

from __future__ import annotations

import platform
import re
import sys
from pathlib import Path

import numpy as np

from companion.recognizer.settings import RecognizerError
from companion.resources import package_path

MODELS_DIR = package_path("models")  # the runtime nets ship inside the package
DEFAULT_MODEL = MODELS_DIR / "recognizer.json"
NETS = ("auto", "int8", "float", "avx2")  # the sets of nets a model may have, and auto
NET_SETS = {"float": "float_nets", "avx2": "avx2_nets"}  # metadata keys of the other sets
INT8_DOT_FLAGS = {"avx512_vnni", "avx_vnni", "amx_int8"}  # x86 flags in /proc/cpuinfo


def cpuinfo_text() -> str:
    """The text of /proc/cpuinfo; empty where there is none."""
    try:
        return Path("/proc/cpuinfo").read_text()
    except OSError:
        return ""


def int8_is_fast(cpu_flags: str | None = None, machine: str | None = None) -> bool:
    """Whether this CPU multiplies int8 vectors natively (x86 VNNI or AMX, Arm dotprod), where
    the int8 nets run faster than the float ones. Without (plain AVX2) onnxruntime's int8
    kernels are slower than its float ones. ``cpu_flags``: the
    text of /proc/cpuinfo (read when None; empty where there is none)."""
    machine = (machine or platform.machine()).lower()
    if cpu_flags is None:
        cpu_flags = cpuinfo_text()
    flags = set(re.findall(r"[a-z0-9_]+", cpu_flags.lower()))
    if machine in ("arm64", "aarch64"):
        return "asimddp" in flags or sys.platform == "darwin"  # every Apple chip has dotprod
    return bool(flags & INT8_DOT_FLAGS)


def cpu_name(cpuinfo: str | None = None) -> str:
    """What CPU this is, for speed figures: /proc/cpuinfo's model name (``cpuinfo``: that
    file's text, read when None), else what the platform says."""
    if cpuinfo is None:
        cpuinfo = cpuinfo_text()
    found = re.search(r"^(?:model name|Model|Hardware)\s*:\s*(.+)$", cpuinfo, re.MULTILINE)
    if found:
        return found.group(1).strip()
    return platform.processor() or platform.machine() or "unknown CPU"


def auto_nets(available, cpu_flags: str | None = None, machine: str | None = None) -> str:
    """Which of a model's sets of nets (``available``: names among NETS) suits this CPU:
    int8 where it has int8 dot products; else the avx2 set on x86 (float localizer, 7-bit
    classifier), else float; int8 where the model has nothing else. ``cpu_flags`` and
    ``machine`` as for ``int8_is_fast``."""
    machine = (machine or platform.machine()).lower()
    if int8_is_fast(cpu_flags, machine):
        order = ("int8", "avx2", "float")
    elif machine in ("x86_64", "amd64", "i686", "x86"):
        order = ("avx2", "float", "int8")
    else:  # the 7-bit classifier is made for x86's int8 kernels
        order = ("float", "int8", "avx2")
    return next(name for name in order if name in available)


def metadata_path(path: str | Path | None = None) -> Path:
    """The metadata JSON a ``--model`` value names: a JSON file, a folder holding
    recognizer.json, or None for the committed model."""
    path = Path(path) if path else DEFAULT_MODEL
    return path / "recognizer.json" if path.is_dir() else path


def open_session(path: Path, threads: int):
    import onnxruntime as ort

    if not Path(path).is_file():
        raise RecognizerError(f"The model file {path} is missing.")
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 3
    # Between runs the worker threads sleep instead of spinning: on a small CPU their spinning
    # starves the OpenCV work between the two nets (66 -> 44 ms per frame on 2 cores).
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    # No "session.set_denormal_as_zero": it flushes denormals on the calling thread for the
    # rest of the process, so numpy and torch arithmetic (the simulator's scenes, training)
    # would depend on whether a net had been loaded; `companion bench` timed no difference.
    try:
        return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime raises its own exception types
        raise RecognizerError(
            f"The model file {path} cannot be loaded ({type(exc).__name__})."
        ) from None


def to_chw_float(images: np.ndarray) -> np.ndarray:
    """uint8 BGR (N,H,W,3) -> float32 RGB (N,3,H,W) in 0..1, the nets' input layout."""
    return np.ascontiguousarray(images[..., ::-1].transpose(0, 3, 1, 2), np.float32) / 255.0


def net_input(session, images: np.ndarray) -> np.ndarray:
    """uint8 BGR images (N,H,W,3) as ``session``'s input wants them: as they are for models
    exported with the conversion inside the graph, else float RGB NCHW (older models)."""
    if session.get_inputs()[0].type == "tensor(uint8)":
        return np.ascontiguousarray(images)
    return to_chw_float(images)
