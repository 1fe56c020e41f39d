"""Engine selection: :func:`make_engine`, the one place an engine is made. GPU code (CuPy) is
imported only when a GPU engine is asked for; the device policy lives in gboost/engines/devices.py,
an engine on this machine is made in gboost/engines/local.py, one on a Dask cluster in
gboost/engines/distributed.py."""
from __future__ import annotations

from gboost.engines.base import Engine
from gboost.engines.devices import (  # noqa: F401 - the names callers import from here
    GPU_MEMORY_ENV, GpuRefused, choose_gpu, gpu_available, gpu_memory_limit, select_gpus)


def make_engine(device="auto", *, threads: int | None = None, tile: int | None = None,
                gpus: list[int] | None = None, dask: str | None = None, test: str = "boost"):
    """The one place an engine is made. ``device``: 'cpu', 'gpu' or 'auto' (GPU when CuPy sees one,
    else CPU), or a :class:`gboost.pipeline.params.EngineOptions` holding every option; with ``dask`` (an
    address or 'local:N') tiles run on a Dask cluster, each worker using that device. ``test``:
    "boost" (case-control, an :class:`Engine`) or "linear" (a quantitative trait's engine,
    gboost/engines/qt_cpu.py or qt_gpu.py; with ``dask`` gboost/engines/qt_distributed.py, the CPU
    engine's tiles on the workers; a start failure under 'gpu' is then an
    :class:`gboost.errors.InputError`).

    With 'auto', a GPU engine that fails to start (CuPy installed but no usable device, an NVRTC
    or driver failure) gives way to the CPU engine; its ``describe()`` names the reason and a
    warning is logged. With 'gpu' such a failure is an error.
    """
    if not isinstance(device, str):  # EngineOptions (gboost.pipeline.params)
        opts = device
        device, threads, tile, dask = opts.device, opts.threads, opts.tile, opts.dask
        gpus = list(opts.gpus) if opts.gpus is not None else None
    if dask and test == "linear":
        from gboost.engines.qt_distributed import QTDaskEngine

        return QTDaskEngine(dask, threads=threads)
    if dask:
        from gboost.engines.distributed import DaskEngine

        return DaskEngine(dask, device=device, threads=threads, tile=tile)
    from gboost.engines.local import make_local_engine

    return make_local_engine(device, threads=threads, tile=tile, gpus=gpus, test=test)
