"""CuPy, imported only when a GPU engine is prepared or described, and what the engine asks of the
CUDA runtime: a device's name and compute capability, and which errors are out-of-memory errors."""
from __future__ import annotations

_CUDA_OOM = 2  # cudaErrorMemoryAllocation / CUDA_ERROR_OUT_OF_MEMORY


def cupy():
    import cupy as cp  # noqa: PLC0415 - lazily, so that gboost never needs CuPy to import

    return cp


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
