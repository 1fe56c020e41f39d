"""The machine's GPUs and the one device policy of every scan (:func:`choose_gpu`): whether CuPy
sees a GPU, which GPUs a scan uses, the memory it may take, and the CPU engine that stands in when
the GPU engine cannot start. Engines and the engine makers import this; it imports no engine at
module level (the CPU fallback's class is made on first use)."""
from __future__ import annotations

import functools


def gpu_available() -> tuple[bool, str]:
    """(True, device name) when CuPy imports and sees a GPU; else (False, the reason)."""
    try:
        from gboost.engines.cupy_import import import_cupy

        cupy = import_cupy()
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


def select_gpus(gpus: list[int] | None, visible: int) -> list[int]:
    """The GPUs a scan uses: ``gpus`` (``--gpus``) checked against the ``visible`` count, in order
    and without repeats, or every visible one. Both GPU engines (case-control and QT) ask here."""
    if gpus is None:
        if visible == 0:
            raise RuntimeError("no CUDA device is visible")
        return list(range(visible))
    bad = [g for g in gpus if not 0 <= g < visible]
    if bad or not gpus:
        raise ValueError(f"--gpus {','.join(map(str, gpus))}: {visible} CUDA device(s) visible "
                         f"(indices 0..{visible - 1})")
    return list(dict.fromkeys(gpus))


GPU_MEMORY_ENV = "GBOOST_GPU_MEMORY_LIMIT"


def gpu_memory_limit() -> int | None:
    """Device memory (bytes) the GPU engine may take on each GPU, from ``GBOOST_GPU_MEMORY_LIMIT``
    (None: unset, the engine takes its free memory). Not a flag: it exists to force the streaming
    path (planes kept on the host, uploaded block by block) on a study that would fit, so that its
    rate can be measured against the in-memory one (bench/bench_biobank.py), and for
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


class GpuRefused(RuntimeError):
    """``--device gpu`` and no GPU engine: ``reason`` says why (no usable device, or, where
    ``started``, the GPU engine failed to start). Each caller words its own error from it."""

    def __init__(self, reason: str, started: bool):
        super().__init__(reason)
        self.reason, self.started = reason, started


def choose_gpu(device: str, build, *, probe_gpu: bool = False, build_may_fail: bool = False):
    """The one device policy of every scan: ``(gpu_engine, None)`` to use the GPU, or
    ``(None, reason)`` to use the CPU, ``reason`` being what the log and run.json say (None where
    nothing needs saying: ``--device cpu``, or a machine without CuPy).

    ``device``: 'cpu'; 'gpu' (a GPU or :class:`GpuRefused`); 'auto' (the engine ``build()`` gives
    when CuPy sees a GPU and the engine's ``probe()`` runs; else the CPU). ``probe_gpu``: probe
    under 'gpu' too (a failure is then refused rather than met in the first tile).
    ``build_may_fail``: a failure of ``build()`` itself counts as a failure to start (else it is
    raised as it is).
    """
    if device not in ("auto", "cpu", "gpu"):
        raise ValueError(f"--device must be auto, cpu or gpu, not {device!r}")
    if device == "cpu":
        return None, None
    ok, why = gpu_available()
    if not ok:
        if device == "gpu":
            raise GpuRefused(why, started=False)
        return None, (why if _cupy_installed() else None)

    def failed(exc: Exception):
        if device == "gpu":
            raise GpuRefused(str(exc), started=True) from exc
        return None, f"the GPU engine failed to start ({exc})"

    if build_may_fail:
        try:
            engine = build()
        except Exception as exc:  # noqa: BLE001 - any failure to start: the CPU engine still works
            return failed(exc)
    else:
        engine = build()
    if device == "auto" or probe_gpu:
        try:
            engine.probe()
        except Exception as exc:  # noqa: BLE001 - as above
            return failed(exc)
    return engine, None
