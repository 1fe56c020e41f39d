"""Start the GPU while the inputs are read: CuPy's import, the CUDA context and the screen
kernels' module (from CuPy's on-disk cache) are a large part of a GPU command's start (run.json's
``engine_start`` when made in line) and need none of the study, so the CLI begins them on a thread first
thing. The engine made later finds them done (the kernels are cached per device and
configuration, gboost/engines/gpu/compile.py). Any failure here is ignored: make_engine meets it
again and reports it (or falls back to the CPU) as it always did.

The driver's start (cuInit) and the first GPU's primary context come first, through ctypes: CuPy's
``getDeviceCount`` holds the GIL through cuInit (a long call), and so stalled the main thread's
reading of the inputs, while a foreign call through ctypes releases it. CuPy then finds the
driver started and the context made (its runtime API uses the same primary context)."""
from __future__ import annotations

import importlib.util
import threading


# The longest the thread waits for the caller's signal to import CuPy (a caller that never signals
# delays the GPU's start by this much, and nothing else).
_GO_TIMEOUT_S = 2.0


def start_gpu_early(device: str, go: threading.Event | None = None) -> threading.Thread | None:
    """The warm-up thread (daemon, already started), or None where no GPU engine will be asked for
    or CuPy is not installed. With ``go`` the thread starts the driver and the contexts at once
    (they release the GIL) but imports CuPy (which holds it) only once ``go`` is set: the caller
    sets it when its own thread turns to work that releases the GIL."""
    if device not in ("gpu", "auto") or importlib.util.find_spec("cupy") is None:
        return None
    t = threading.Thread(target=_warm, args=(go,), name="gboost-gpu-start", daemon=True)
    t.start()
    return t


def _driver_contexts() -> None:
    """cuInit and the first visible GPU's primary context (the one this thread then warms, as before:
    contexts on GPUs a scan may not use would take their memory), with the GIL released (ctypes);
    Linux's driver library only (elsewhere CuPy does it, as before). Errors are left for CuPy."""
    import ctypes

    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return
    dev, ctx = ctypes.c_int(), ctypes.c_void_p()
    if cuda.cuInit(0) == 0 and cuda.cuDeviceGet(ctypes.byref(dev), 0) == 0:
        cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev)  # held for the process's life, as CuPy's


def _warm(go: threading.Event | None = None) -> None:
    try:
        _driver_contexts()
        if go is not None:
            go.wait(_GO_TIMEOUT_S)
        from gboost.engines.devices import gpu_available

        ok, _ = gpu_available()
        if not ok:
            return
        from gboost.engines.gpu.compile import kernels
        from gboost.engines.gpu.config import MmaConfig
        from gboost.engines.gpu.cuda import compute_capability, cupy

        if compute_capability(cupy(), 0) >= 80:  # the tensor-core kernels the engine will choose
            kernels(0, MmaConfig())
    except Exception:  # noqa: BLE001 - make_engine meets the same failure and reports it
        pass
