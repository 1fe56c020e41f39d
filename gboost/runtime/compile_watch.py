"""Count what a piece of work compiles: numba functions (cache misses) and NVRTC modules.

A scan after ``gboost warm`` should compile nothing: its numba functions load from gboost's
cache folder (gboost/runtime/numba_cache.py) and its CUDA modules from CuPy's kernel cache. This watch
is how ``gboost warm`` reports what it built, how tests prove a later scan built nothing
(tests/cli/test_warm.py), and how scripts/device/first_run.sh shows it on a GPU.

numba: every real compilation of a dispatcher fires the ``numba:compile`` event (a load from the
cache does not), in whichever thread it happens. NVRTC: CuPy compiles a module only when its
kernel cache has no entry for the source, options, architecture and NVRTC version; the watch
wraps the CuPy function that runs NVRTC on such a miss.
"""
from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field

# CuPy >= 14 compiles through the first name, CuPy 13 through the second (cupy/cuda/compiler.py).
_NVRTC_ENTRY_POINTS = ("_compile_using_nvrtc_no_warning", "compile_using_nvrtc")


@dataclass
class CompileWatch:
    """Context manager: ``numba`` lists the numba functions compiled inside it (module.qualname),
    ``nvrtc`` counts NVRTC compilations (``None`` when CuPy was not watched)."""

    watch_cupy: bool = False
    numba: list[str] = field(default_factory=list)
    nvrtc: int | None = None

    def __enter__(self) -> "CompileWatch":
        from numba.core import event

        self._recorder = event.install_recorder("numba:compile")
        self._listener = self._recorder.__enter__()
        self._undo = None
        if self.watch_cupy and importlib.util.find_spec("cupy") is not None:
            self._patch_cupy()
        return self

    def _patch_cupy(self) -> None:
        try:
            from gboost.engines.cupy_import import import_cupy

            import_cupy()  # (the first import may be this one: without cuTENSOR's preload)
            from cupy.cuda import compiler
        except Exception:  # noqa: BLE001 - CuPy that cannot load: there is nothing to watch
            return
        name = next((n for n in _NVRTC_ENTRY_POINTS if hasattr(compiler, n)), None)
        if name is None:
            return
        original = getattr(compiler, name)
        self.nvrtc = 0

        def counted(*args, **kwargs):
            self.nvrtc += 1
            return original(*args, **kwargs)

        setattr(compiler, name, counted)
        self._undo = (compiler, name, original)

    def __exit__(self, *exc) -> None:
        self._recorder.__exit__(*exc)
        for _, ev in self._listener.buffer:
            if ev.is_start:
                disp = ev.data["dispatcher"]
                f = getattr(disp, "py_func", None)
                self.numba.append(f"{f.__module__}.{f.__qualname__}" if f is not None else repr(disp))
        if self._undo is not None:
            compiler, name, original = self._undo
            setattr(compiler, name, original)

    @property
    def compiled_nothing(self) -> bool:
        return not self.numba and not self.nvrtc
