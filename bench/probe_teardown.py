"""How long a process takes to end after os._exit (issue 24: ~0.15 s of the 500k x 5k command lies
after its last stage): with host memory touched, with a CUDA context and device memory. Prints the
process age at os._exit; the caller times the process from outside.

    python bench/probe_teardown.py none|host|gpu|both
"""
from __future__ import annotations

import os
import sys

import numpy as np

from gboost.stages import process_age

way = sys.argv[1]
if way in ("host", "both"):
    a = np.ones(940_000_000 // 8, np.uint64)  # the 500k x 5k study's host planes
if way in ("gpu", "both"):
    import cupy

    d = cupy.ones(1_400_000_000 // 8, cupy.uint64)  # its planes on the device, and buffers
    p = cupy.cuda.alloc_pinned_memory(16 << 20)
    cupy.cuda.Device().synchronize()
print(f"{way}: os._exit at {process_age():.3f} s", flush=True)
os._exit(0)
