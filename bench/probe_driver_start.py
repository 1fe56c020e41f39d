"""Where the GPU's own start goes (issue 24): in a fresh process, the driver's calls that
gboost/engines/early.py makes through ctypes, timed one by one from the process's start, then
CuPy's import after them. Run it several times; on the device, beside ``nvidia-smi -q`` (persistence
mode), to tell the driver's start from the context's.

    python bench/probe_driver_start.py
"""
from __future__ import annotations

import ctypes
import json
import time

from gboost.stages import process_age

T0 = time.perf_counter() - process_age()
marks = []


def mark(what: str) -> None:
    marks.append((what, round(time.perf_counter() - T0, 4)))


mark("python up")
cuda = ctypes.CDLL("libcuda.so.1")
mark("libcuda loaded")
rc = cuda.cuInit(0)
mark(f"cuInit (rc {rc})")
dev, ctx, ptr = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_uint64()
cuda.cuDeviceGet(ctypes.byref(dev), 0)
mark("cuDeviceGet")
cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev)
mark("cuDevicePrimaryCtxRetain")
cuda.cuCtxSetCurrent(ctx)
cuda.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(1 << 20))
mark("context current, first 1 MiB allocated")
import cupy  # noqa: E402,F401

mark("cupy imported")
print(json.dumps(marks))
