"""Start the GPU while the inputs are read: CuPy's import, the CUDA context and the screen
kernels' module (from CuPy's on-disk cache) cost ~0.5 s of the command at 500k x 5k (run.json's
``engine_start``, issue 24) and need none of the study, so the CLI begins them on a thread first
thing. The engine made later finds them done (the kernels are cached per device and
configuration, gboost/engines/gpu/compile.py). Any failure here is ignored: make_engine meets it
again and reports it (or falls back to the CPU) as it always did."""
from __future__ import annotations

import importlib.util
import threading


def start_gpu_early(device: str) -> threading.Thread | None:
    """The warm-up thread (daemon, already started), or None where no GPU engine will be asked for
    or CuPy is not installed."""
    if device not in ("gpu", "auto") or importlib.util.find_spec("cupy") is None:
        return None
    t = threading.Thread(target=_warm, name="gboost-gpu-start", daemon=True)
    t.start()
    return t


def _warm() -> None:
    try:
        from gboost.engines import gpu_available

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
