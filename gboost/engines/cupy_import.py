"""CuPy's import without its cuTENSOR preload (the GPU's start is on the command's way to its
first tile).

A pip-installed CuPy preloads cuTENSOR as its package is imported (``cupy/__init__``:
``_environment._preload_library('cutensor')``): through cuda-pathfinder it imports that package and
opens libcutensor and the libcublasLt it needs, a large share of the import's time
(bench/bench_start.py's "cupy imported"). gboost never uses cuTENSOR (its kernels are
its own; CuPy's reductions use CUB unless ``CUPY_ACCELERATORS`` names cutensor), so the preload is
marked as already attempted, the state CuPy itself records after a preload, as its
``_environment`` module is loaded, before the package's ``__init__`` asks for the preload.

Anything unexpected (a CuPy of a major version not in :data:`CUPY_MAJORS`, without that module,
that table or that entry, or with a ``CUPY_ACCELERATORS`` naming cutensor) leaves the import exactly
as CuPy does it: the skip only saves time. It is opt-in by where it runs: only :func:`import_cupy`,
called once the GPU engine is chosen, installs its finder, and the finder leaves ``sys.meta_path``
when the import ends, whatever happens, so the process keeps no trace of it but CuPy's own table
entry.
"""
from __future__ import annotations

import os
import sys

_ENV = "cupy._environment"
# CuPy's major versions whose ``cupy/_environment.py`` holds the table in this shape
# (``_preload_libs = {..., 'cutensor': None}``, read by ``_preload_library``), the pyproject's
# ``cupy-cuda12x>=13`` / ``cupy-cuda13x>=13``. Another major version is imported untouched.
CUPY_MAJORS = (13, 14)
_DISTRIBUTIONS = ("cupy-cuda12x", "cupy-cuda13x", "cupy-cuda11x", "cupy")  # pip's names for CuPy's wheels


def cupy_major() -> int | None:
    """The installed CuPy's major version from its package metadata (no import); None when no
    known distribution is found (a source tree, a conda build under another name)."""
    from importlib.metadata import PackageNotFoundError, version

    for name in _DISTRIBUTIONS:
        try:
            return int(version(name).split(".")[0])
        except (PackageNotFoundError, ValueError):
            continue
    return None


def import_cupy():
    """``import cupy``, the first time without the cuTENSOR preload (see the module's text)."""
    if ("cupy" not in sys.modules and "cutensor" not in os.environ.get("CUPY_ACCELERATORS", "")
            and cupy_major() in CUPY_MAJORS):
        finder = _SkipCutensorPreload()
        sys.meta_path.insert(0, finder)
        try:
            import cupy
        finally:
            finder.remove()
        return cupy
    import cupy

    return cupy


def _mark_attempted(module) -> None:
    libs = getattr(module, "_preload_libs", None)
    if isinstance(libs, dict) and "cutensor" in libs and libs["cutensor"] is None:
        libs["cutensor"] = {}  # what _preload_library sets before it loads: "attempted", so it returns at once


class _SkipCutensorPreload:
    """A meta-path finder for ``cupy._environment`` alone: the module is found and loaded as the
    import system would (the next finders' spec), then marked by :func:`_mark_attempted`."""

    def remove(self) -> None:
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass

    def find_spec(self, name, path, target=None):
        if name != _ENV:
            return None
        self.remove()  # once: the module is loaded a single time
        from importlib.machinery import PathFinder

        spec = PathFinder.find_spec(name, path, target)
        loader = getattr(spec, "loader", None)
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        run = loader.exec_module

        def exec_module(module) -> None:
            try:
                run(module)
            finally:  # the loader (kept as the module's __spec__.loader) back to its class's method
                loader.__dict__.pop("exec_module", None)
            _mark_attempted(module)

        loader.exec_module = exec_module
        return spec
