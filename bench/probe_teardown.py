"""How long a process takes to end after os._exit (issue 24: ~0.15 s of the 500k x 5k command lies
after its last stage): with host memory touched, with a CUDA context and device memory. Prints the
process age at os._exit; the caller times the process from outside.

    python bench/probe_teardown.py none|host|gpu|both|ctx|freed|reset

``reset`` ends the context itself (cudaDeviceReset, timed) before os._exit: whether the end's
seconds move into a stage the command can time.
"""
from __future__ import annotations

import os
import sys

import numpy as np

from gboost.stages import process_age

way = sys.argv[1]
if way in ("host", "both"):
    a = np.ones(940_000_000 // 8, np.uint64)  # the 500k x 5k study's host planes
if way in ("gpu", "both", "ctx", "freed", "reset"):
    import time

    import cupy

    n = 1 if way == "ctx" else 1_400_000_000 // 8
    d = cupy.ones(n, cupy.uint64)  # its planes on the device, and buffers
    p = cupy.cuda.alloc_pinned_memory(16 << 20)
    cupy.cuda.Device().synchronize()
    if way == "freed":  # given back before the end, as a closed engine's pools could be
        t = time.perf_counter()
        del d, p
        cupy.get_default_memory_pool().free_all_blocks()
        cupy.get_default_pinned_memory_pool().free_all_blocks()
        print(f"freed: pools emptied in {time.perf_counter() - t:.3f} s", flush=True)
    if way == "reset":  # the context ended here, timed; the pools' pointers are never used again
        t = time.perf_counter()
        cupy.cuda.runtime.deviceReset()
        print(f"reset: cudaDeviceReset took {time.perf_counter() - t:.3f} s", flush=True)
print(f"{way}: os._exit at {process_age():.3f} s", flush=True)
os._exit(0)
