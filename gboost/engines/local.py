"""An engine on this machine: the CPU engine, or the GPU engine where the device policy
(gboost.engines.devices.choose_gpu) takes it. :func:`gboost.engines.make_engine` comes here for
anything but a Dask cluster, and so does each Dask worker for its own engine."""
from __future__ import annotations

import logging

from gboost.engines.base import Engine
from gboost.engines.devices import GpuRefused, _fallback_class, choose_gpu, gpu_memory_limit

log = logging.getLogger("gboost")


def make_local_engine(device: str = "auto", *, threads: int | None = None, tile: int | None = None,
                      gpus: list[int] | None = None) -> Engine:
    """:func:`gboost.engines.make_engine` without ``dask``: ``device`` 'cpu', 'gpu' or 'auto'."""

    def build():
        from gboost.engines.gpu import GpuEngine

        return GpuEngine(gpus=gpus, tile=tile, memory_limit_bytes=gpu_memory_limit())

    try:
        engine, reason = choose_gpu(device, build)
    except GpuRefused as exc:
        raise RuntimeError(f"--device gpu: {exc.reason}") from None
    if engine is not None:
        return engine
    if reason is not None:
        log.warning("--device auto: using the CPU engine; %s", reason)
        return _fallback_class()(reason, threads=threads, tile=tile)
    from gboost.engines.cpu import CpuEngine

    return CpuEngine(threads=threads, tile=tile)
