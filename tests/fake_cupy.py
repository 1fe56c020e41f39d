"""A stand-in CuPy package for tests of what gboost reports about a GPU on machines without one
(tests/test_doctor.py, tests/test_setup_detect.py): enough of cupy.cuda.runtime, nvrtc and Device for
gboost.engines.gpu_available, gboost.doctor and gboost.warm, nothing that builds or runs a kernel
(the GPU engine fails on it as on a GPU whose driver or NVRTC is broken)."""
from __future__ import annotations

from pathlib import Path

RUNTIME = '''
DEVICES = {devices}
def getDeviceCount():
    return DEVICES
def getDeviceProperties(d):
    return {{"name": b"Fake GPU X100", "major": 9, "minor": 0, "totalGlobalMem": 80 * 2**30}}
def runtimeGetVersion():
    return 13000
def driverGetVersion():
    return 13010
'''


def write_fake_cupy(folder: Path, *, devices: int = 1, broken: bool = False) -> str:
    """Write a package ``cupy`` under ``folder`` (put it on PYTHONPATH); returns ``folder``.

    ``devices``: how many GPUs it says it sees; ``broken``: importing it fails as a CuPy built for
    another CUDA does."""
    pkg = folder / "cupy"
    (pkg / "cuda").mkdir(parents=True, exist_ok=True)
    if broken:
        (pkg / "__init__.py").write_text("raise ImportError('libnvrtc.so.13: cannot open shared object file')\n")
        return str(folder)
    (pkg / "__init__.py").write_text("__version__ = '99.0.0'\nfrom cupy import cuda\n")
    (pkg / "cuda" / "__init__.py").write_text(
        "from cupy.cuda import runtime, nvrtc\n\n\nclass Device:\n    compute_capability = '90'\n\n"
        "    def __init__(self, device_id=0):\n        self.id = device_id\n")
    (pkg / "cuda" / "runtime.py").write_text(RUNTIME.format(devices=devices))
    (pkg / "cuda" / "nvrtc.py").write_text("def getVersion():\n    return (13, 0)\n")
    return str(folder)
