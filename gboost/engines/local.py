"""An engine on this machine: the CPU engine, or the GPU engine where the device policy
(gboost.engines.devices.choose_gpu) takes it. :func:`gboost.engines.make_engine` comes here for
anything but a Dask cluster, and so does each Dask worker for its own engine."""
from __future__ import annotations

import logging

from gboost.engines.base import Engine
from gboost.engines.devices import GpuRefused, _fallback_class, choose_gpu, gpu_memory_limit

log = logging.getLogger("gboost")


def make_local_engine(device: str = "auto", *, threads: int | None = None, tile: int | None = None,
                      gpus: list[int] | None = None, test: str = "boost"):
    """:func:`gboost.engines.make_engine` without ``dask``: ``device`` 'cpu', 'gpu' or 'auto';
    ``test`` "linear": a quantitative trait scan's engine (:func:`_make_qt_engine`)."""
    if test == "linear":
        return _make_qt_engine(device, threads=threads, tile=tile, gpus=gpus)

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


def _make_qt_engine(device: str, *, threads: int | None, tile: int | None, gpus: list[int] | None):
    """The QT scan's engine by the same device policy (:func:`choose_gpu`): 'gpu' needs a GPU
    engine that starts (else one line, exit 2); 'auto' takes it when CuPy sees a GPU and its probe
    runs, else the CPU engine (the log names the reason). ``gpus``: the GPU engine's devices
    (default: all)."""
    from gboost.errors import InputError

    def build():
        from gboost.engines.qt_gpu import QTGPUEngine

        return QTGPUEngine(threads, tile=tile, gpus=gpus)

    try:
        engine, reason = choose_gpu(device, build, probe_gpu=True, build_may_fail=True)
    except GpuRefused as exc:
        if exc.started:
            raise InputError(None, f"--device gpu: the GPU engine of the quantitative trait scan failed to start "
                                   f"({exc.reason})") from None
        raise InputError(None, f"--device gpu: no GPU for the quantitative trait scan ({exc.reason})") from None
    if engine is not None:
        return engine
    if reason is not None:
        log.warning("--device auto: using the CPU engine for the QT scan; %s", reason)
    from gboost.engines.qt_cpu import QTCPUEngine

    return QTCPUEngine(threads)
