"""CuPy, imported only when a GPU engine is prepared or described, and what the engine asks of the
CUDA runtime: a device's name and compute capability, and which errors are out-of-memory errors;
and of the driver, through ctypes: page-locking host memory (the streamed planes, pinning.py)."""
from __future__ import annotations

_CUDA_OOM = 2  # cudaErrorMemoryAllocation / CUDA_ERROR_OUT_OF_MEMORY


def cupy():
    from gboost.engines.cupy_import import import_cupy  # lazily, so that gboost never needs CuPy to import

    return import_cupy()


def device_name(cp, device_id: int) -> str:
    name = cp.cuda.runtime.getDeviceProperties(device_id)["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


def compute_capability(cp, device_id: int) -> int:
    props = cp.cuda.runtime.getDeviceProperties(device_id)
    return 10 * int(props["major"]) + int(props["minor"])


def is_oom(cp, exc: BaseException) -> bool:
    if isinstance(exc, cp.cuda.memory.OutOfMemoryError):
        return True
    errors = (cp.cuda.runtime.CUDARuntimeError, cp.cuda.driver.CUDADriverError)
    return isinstance(exc, errors) and getattr(exc, "status", None) == _CUDA_OOM


def is_cuda_error(cp, exc: BaseException) -> bool:
    return isinstance(exc, (cp.cuda.runtime.CUDARuntimeError, cp.cuda.driver.CUDADriverError))


# -- page-locking host memory through the driver ----------------------------------------------
# CuPy's runtime calls may hold the GIL while the driver works (its getDeviceCount held it through
# cuInit: gboost/engines/early.py); a registration pins a piece for tens of milliseconds, and ctypes
# releases the GIL around a foreign call, so the other Python threads (the encoder's loop, the tile
# thread, the host work) run meanwhile. Portable: valid in every GPU's context (runners share one
# pinner).
_CU_MEMHOSTREGISTER_PORTABLE = 0x01


class DriverError(RuntimeError):
    """A CUDA driver call through ctypes failed (``status`` the CUresult)."""

    def __init__(self, status: int, what: str, name: str):
        super().__init__(f"{what}: {name} ({status})")
        self.status = status


_DRIVER = None


def _driver():
    global _DRIVER
    if _DRIVER is None:
        import ctypes

        lib = ctypes.CDLL("libcuda.so.1")
        c_void_p, c_int, c_uint, c_size_t = ctypes.c_void_p, ctypes.c_int, ctypes.c_uint, ctypes.c_size_t
        for name, args in (("cuDeviceGet", [ctypes.POINTER(c_int), c_int]),
                           ("cuDevicePrimaryCtxRetain", [ctypes.POINTER(c_void_p), c_int]),
                           ("cuDevicePrimaryCtxRelease_v2", [c_int]),
                           ("cuDevicePrimaryCtxReset_v2", [c_int]),
                           ("cuCtxPushCurrent_v2", [c_void_p]),
                           ("cuCtxPopCurrent_v2", [ctypes.POINTER(c_void_p)]),
                           ("cuMemHostRegister_v2", [c_void_p, c_size_t, c_uint]),
                           ("cuMemHostUnregister", [c_void_p]),
                           ("cuGetErrorName", [c_int, ctypes.POINTER(ctypes.c_char_p)])):
            fn = getattr(lib, name)
            fn.argtypes, fn.restype = args, c_int
        _DRIVER = lib
    return _DRIVER


def _call(lib, what: str, status: int) -> None:
    if status != 0:
        import ctypes

        name = ctypes.c_char_p()
        lib.cuGetErrorName(status, ctypes.byref(name))
        raise DriverError(status, what, (name.value or b"CUDA_ERROR_UNKNOWN").decode())


def _on_device(device_id: int, what: str, work) -> None:
    """``work(lib)`` with GPU ``device_id``'s primary context current on this thread (pushed and
    popped: the thread's CuPy state is left as it was)."""
    import ctypes

    lib = _driver()
    dev, ctx, old = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_void_p()
    _call(lib, what, lib.cuDeviceGet(ctypes.byref(dev), int(device_id)))
    _call(lib, what, lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev))
    try:
        _call(lib, what, lib.cuCtxPushCurrent_v2(ctx))
        try:
            work(lib)
        finally:
            lib.cuCtxPopCurrent_v2(ctypes.byref(old))
    finally:
        lib.cuDevicePrimaryCtxRelease_v2(dev)


def host_register(device_id: int, ptr: int, nbytes: int) -> None:
    """Page-lock host memory [ptr, ptr + nbytes) for every GPU (portable), the GIL released."""
    _on_device(device_id, "cuMemHostRegister", lambda lib: _call(
        lib, "cuMemHostRegister", lib.cuMemHostRegister_v2(ptr, nbytes, _CU_MEMHOSTREGISTER_PORTABLE)))


def host_unregister(device_id: int, ptr: int) -> None:
    """Undo :func:`host_register` of the range that starts at ``ptr``."""
    _on_device(device_id, "cuMemHostUnregister", lambda lib: _call(
        lib, "cuMemHostUnregister", lib.cuMemHostUnregister(ptr)))


def end_context(device_id: int) -> None:
    """End GPU ``device_id``'s primary context now: every allocation, registration, module and
    stream of this process on it is gone, so no CUDA object made before may be used after (the
    GIL released). For a command that exits right after: the driver ends the contexts that are
    left after the process's last instruction, time that no stage of run.json could hold."""
    import ctypes

    lib = _driver()
    dev = ctypes.c_int()
    _call(lib, "cuDeviceGet", lib.cuDeviceGet(ctypes.byref(dev), int(device_id)))
    _call(lib, "cuDevicePrimaryCtxReset", lib.cuDevicePrimaryCtxReset_v2(dev))


_RELEASED = [False]


def driver_released() -> bool:
    """Whether :func:`release_driver_files` has run in this process: it must then end by os._exit,
    without the interpreter's and the driver library's teardown (gboost/cli/__init__.py does, on error too)."""
    return _RELEASED[0]


def release_driver_files(prefix: str = "/dev/nvidia", fds: str = "/proc/self/fd") -> int:
    """Point every descriptor this process holds on the driver's device files (``prefix``*) at
    /dev/null, and return how many: the kernel then ends the process's connection to the driver
    (its mappings, the unified-memory teardown) here, on the calling thread, instead of after the
    process's last instruction, where it takes time that no stage of run.json could hold, even with
    the contexts reset. dup2,
    not close: no descriptor number is freed for a later open to reuse while the driver's library
    still holds it. For a process that has ended its contexts (:func:`end_context`) and exits right
    after: no CUDA call can work after this. Where ``fds`` cannot be listed (not Linux), nothing."""
    import os

    try:
        names = os.listdir(fds)
    except OSError:
        return 0
    null = os.open(os.devnull, os.O_RDWR)
    released = 0
    _RELEASED[0] = True  # (from here a normal exit would run the driver's library teardown on /dev/null)
    try:
        for name in names:
            try:
                target = os.readlink(os.path.join(fds, name))
            except OSError:  # (the listing's own descriptor, or one closed meanwhile)
                continue
            if target.startswith(prefix) and int(name) != null:
                os.dup2(null, int(name))
                released += 1
    finally:
        os.close(null)
    return released
