"""Engine selection. GPU code (CuPy) is imported only when a GPU engine is asked for."""
from __future__ import annotations

import functools
import logging

from gboost.engines.base import Engine

log = logging.getLogger("gboost")


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


GPU_MEMORY_ENV = "GBOOST_GPU_MEMORY_LIMIT"


def gpu_memory_limit() -> int | None:
    """Device memory (bytes) the GPU engine may take on each GPU, from ``GBOOST_GPU_MEMORY_LIMIT``
    (None: unset, the engine takes its free memory). Not a flag: it exists to force the streaming
    path (planes kept on the host, uploaded block by block) on a study that would fit, so that its
    rate can be measured against the in-memory one (bench/bench_biobank.py, issue 21), and for
    tests."""
    import os

    text = os.environ.get(GPU_MEMORY_ENV, "").strip()
    if not text:
        return None
    try:
        value = int(float(text))
    except ValueError:
        value = 0
    if value < 1:
        raise RuntimeError(f"{GPU_MEMORY_ENV}={text!r}: expected a positive number of bytes")
    return value


def _cupy_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("cupy") is not None


@functools.lru_cache(maxsize=None)
def _fallback_class():
    from gboost.engines.cpu import CpuEngine

    class CpuFallbackEngine(CpuEngine):
        """The CPU engine that ``--device auto`` chose because the GPU engine could not start;
        :meth:`describe` says why, so the log and run.json show it."""

        def __init__(self, reason: str, threads: int | None = None, tile: int | None = None):
            super().__init__(threads=threads, tile=tile)
            self.fallback_reason = reason

        def describe(self) -> str:
            return f"{super().describe()}; GPU not used: {self.fallback_reason}"

    return CpuFallbackEngine


def make_engine(device="auto", *, threads: int | None = None, tile: int | None = None,
                gpus: list[int] | None = None, dask: str | None = None) -> Engine:
    """The one place an engine is made. ``device``: 'cpu', 'gpu' or 'auto' (GPU when CuPy sees one,
    else CPU), or a :class:`gboost.params.EngineOptions` holding every option; with ``dask`` (an
    address or 'local:N') tiles run on a Dask cluster, each worker using that device.

    With 'auto', a GPU engine that fails to start (CuPy installed but no usable device, an NVRTC
    or driver failure) gives way to the CPU engine; its ``describe()`` names the reason and a
    warning is logged. With 'gpu' such a failure is an error.
    """
    if not isinstance(device, str):  # EngineOptions (gboost.params)
        opts = device
        device, threads, tile, dask = opts.device, opts.threads, opts.tile, opts.dask
        gpus = list(opts.gpus) if opts.gpus is not None else None
    if dask:
        from gboost.engines.distributed import DaskEngine

        return DaskEngine(dask, device=device, threads=threads, tile=tile)
    if device not in ("auto", "cpu", "gpu"):
        raise ValueError(f"--device must be auto, cpu or gpu, not {device!r}")
    reason = None
    if device in ("auto", "gpu"):
        ok, why = gpu_available()
        if ok:
            from gboost.engines.gpu import GpuEngine

            engine = GpuEngine(gpus=gpus, tile=tile, memory_limit_bytes=gpu_memory_limit())
            if device == "gpu":
                return engine
            try:
                engine.probe()
                return engine
            except Exception as exc:  # noqa: BLE001 - any failure to start: the CPU engine still works
                reason = f"the GPU engine failed to start ({exc})"
        elif device == "gpu":
            raise RuntimeError(f"--device gpu: {why}")
        elif _cupy_installed():
            reason = why
    if reason is not None:
        log.warning("--device auto: using the CPU engine; %s", reason)
        return _fallback_class()(reason, threads=threads, tile=tile)
    from gboost.engines.cpu import CpuEngine

    return CpuEngine(threads=threads, tile=tile)
