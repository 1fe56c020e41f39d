"""Which steps of starting the GPU hold the GIL (issue 24: the thread that starts the GPU beside the
input's reading slowed the reading by ~0.3 s on the H100 host). Each step runs on a thread while
this thread counts loop turns; a step that holds the GIL shows as a gap as long as itself.

    python bench/probe_gil_cuda.py ctypes|cupy
"""
from __future__ import annotations

import sys
import threading
import time


def watch(label: str, fn) -> None:
    done = threading.Event()
    span = {}

    def run():
        t = time.perf_counter()
        fn()
        span["s"] = time.perf_counter() - t
        done.set()

    th = threading.Thread(target=run)
    longest, last, turns = 0.0, time.perf_counter(), 0
    th.start()
    while not done.is_set():
        now = time.perf_counter()
        longest, last, turns = max(longest, now - last), now, turns + 1
    th.join()
    print(f"{label:40} {span['s']:7.3f} s; this thread's longest wait {longest:7.3f} s")


def main() -> int:
    way = sys.argv[1]
    if way == "ctypes":  # the driver's primary context through ctypes (foreign calls release the GIL)
        import ctypes

        cuda = ctypes.CDLL("libcuda.so.1")

        def init():
            assert cuda.cuInit(0) == 0

        def retain():
            dev, ctx = ctypes.c_int(), ctypes.c_void_p()
            assert cuda.cuDeviceGet(ctypes.byref(dev), 0) == 0
            assert cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0

        watch("ctypes cuInit", init)
        watch("ctypes cuDevicePrimaryCtxRetain", retain)
    watch("import cupy", lambda: __import__("cupy"))
    import cupy

    watch("cupy getDeviceCount", cupy.cuda.runtime.getDeviceCount)
    watch("cupy getDeviceProperties", lambda: cupy.cuda.runtime.getDeviceProperties(0))
    watch("cupy first allocation (context)", lambda: cupy.zeros(1))

    def kernels():
        from gboost.engines.gpu.compile import kernels
        from gboost.engines.gpu.config import MmaConfig

        kernels(0, MmaConfig())

    watch("gboost kernels (CuPy's disk cache)", kernels)
    return 0


if __name__ == "__main__":
    sys.exit(main())
