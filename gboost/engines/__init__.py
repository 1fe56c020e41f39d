"""Engine selection. GPU code (CuPy) is imported only when a GPU engine is asked for."""
from __future__ import annotations

from gboost.engines.base import Engine


def gpu_available() -> tuple[bool, str]:
    """(True, device name) when CuPy imports and sees a GPU; else (False, the reason)."""
    try:
        import cupy  # noqa: F401
    except Exception as exc:  # ImportError, or a CUDA library error at import
        return False, f"CuPy is not usable ({type(exc).__name__}: {exc})"
    try:
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        return False, f"no CUDA device ({exc})"
    if n == 0:
        return False, "no CUDA device"
    props = cupy.cuda.runtime.getDeviceProperties(0)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    return True, f"{n} x {name}"


def make_engine(device: str = "auto", *, threads: int | None = None, tile: int | None = None,
                gpus: list[int] | None = None, dask: str | None = None) -> Engine:
    """``device``: 'cpu', 'gpu' or 'auto' (GPU when CuPy sees one, else CPU); with ``dask`` (an
    address or 'local:N') tiles run on a Dask cluster, each worker using that device."""
    if dask:
        from gboost.engines.distributed import DaskEngine

        return DaskEngine(dask, device=device, threads=threads, tile=tile)
    if device not in ("auto", "cpu", "gpu"):
        raise ValueError(f"--device must be auto, cpu or gpu, not {device!r}")
    if device in ("auto", "gpu"):
        ok, why = gpu_available()
        if ok:
            from gboost.engines.gpu import GpuEngine

            return GpuEngine(gpus=gpus, tile=tile)
        if device == "gpu":
            raise RuntimeError(f"--device gpu: {why}")
    from gboost.engines.cpu import CpuEngine

    return CpuEngine(threads=threads, tile=tile)
