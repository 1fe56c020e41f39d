"""Where numba keeps gboost's compiled functions: one cache folder per version of the source.

numba's own cache (``cache=True``) checks only the modification time of the file that defines a
function. A compiled function inlines the numba functions it calls from other modules (the exact
test's batch loop inlines ``gboost.stats.boost.ipf_stat``), so after an edit or an upgrade of a
callee alone it would load the stale machine code and print the old statistics. So the cache lives
in a folder named by a hash of every gboost source file: any change of any module gives a fresh
folder (compiled once, then loaded), and an unchanged install never recompiles.

The folder is ``$NUMBA_CACHE_DIR/gboost-<hash>`` when the user set NUMBA_CACHE_DIR, else
``$XDG_CACHE_HOME/gboost/numba/<hash>`` (``~/.cache/...``), else a folder in the temp directory
when the home is not writable. Imported by ``gboost/__init__`` before any module compiles.
"""
from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def source_hash() -> str:
    """SHA-256 (16 hex digits) over the relative paths and bytes of gboost's .py files."""
    h = hashlib.sha256()
    for path in sorted(_PACKAGE.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        h.update(str(path.relative_to(_PACKAGE)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def cache_dir() -> Path:
    """The folder for this source version (not created)."""
    tag = source_hash()
    user = os.environ.get("NUMBA_CACHE_DIR")
    if user and Path(user).name in (tag, f"gboost-{tag}"):  # set by configure() here or in a parent process
        return Path(user)
    if user:
        return Path(user) / f"gboost-{tag}"
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "gboost" / "numba" / tag


def configure() -> Path:
    """Point numba's cache at :func:`cache_dir` (created; the temp directory if that fails).

    Through the environment when numba is not imported yet (so ``import gboost`` stays light: the
    CLI answers Ctrl-C and bad flags before numba loads), and numba's config when it is."""
    import sys

    path = cache_dir()
    try:
        path.mkdir(parents=True, exist_ok=True)
        if not os.access(path, os.W_OK):
            raise PermissionError(path)
    except OSError:
        path = Path(tempfile.gettempdir()) / f"gboost-numba-{os.getuid() if hasattr(os, 'getuid') else 0}" / path.name
        path.mkdir(parents=True, exist_ok=True)
    if "numba" in sys.modules:
        sys.modules["numba"].config.CACHE_DIR = str(path)
    os.environ["NUMBA_CACHE_DIR"] = str(path)
    return path


_ARRAYMATH = "numba.np.arraymath"


def skip_blas_probe() -> None:
    """Spare every process numba's import of SciPy's linear algebra (0.2-0.4 s measured on the VM,
    issue 24), which gboost never calls.

    numba's target loads ``numba.np.arraymath`` at the first call of any compiled function, and
    that module's import probes for BLAS by importing ``scipy.linalg.cython_blas`` (all of
    ``scipy.linalg``) only to decide whether ``np.dot`` may use BLAS. While it is imported, the
    probe here only asks whether SciPy is installed; the real check (numba's ``ensure_blas``) is
    left in place for the moment a function calling ``np.dot`` or ``np.linalg`` is compiled, so
    such a function behaves as before. Done by an import hook, so ``import gboost`` does not import
    numba; where numba's layout differs, nothing is changed."""
    import sys

    if _ARRAYMATH in sys.modules or any(isinstance(f, _ArraymathFinder) for f in sys.meta_path):
        return
    sys.meta_path.insert(0, _ArraymathFinder())


class _ArraymathFinder:
    """Finds ``numba.np.arraymath`` as the other finders do and runs its module with the cheap
    probe in place of ``ensure_blas``. It stays in ``sys.meta_path`` (one name compared per
    import): removing it while another thread's import walks the list could skip a finder there."""

    def find_spec(self, name, path=None, target=None):
        if name != _ARRAYMATH:
            return None
        import importlib.machinery

        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = _ProbeLoader(spec.loader)
        return spec


class _ProbeLoader:
    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module) -> None:
        import importlib.util
        import sys

        linalg = sys.modules.get("numba.np.linalg")
        if linalg is None:
            import numba.np.linalg as linalg
        real = getattr(linalg, "ensure_blas", None)

        def probe() -> None:  # what the import-time probe learns: whether SciPy can be imported
            if importlib.util.find_spec("scipy") is None:
                raise ImportError("scipy 0.16+ is required for linear algebra")

        if real is not None:
            linalg.ensure_blas = probe
        try:
            self._loader.exec_module(module)
        finally:
            if real is not None:
                linalg.ensure_blas = real

    def __getattr__(self, name):  # get_code, get_source, is_package...: the wrapped loader's
        return getattr(self._loader, name)


def start_target() -> None:
    """numba's CPU target made ready now rather than at the first compiled function's load: its
    registries' imports hold the GIL (~0.13 s on the H100 host). The CLI calls this before the
    compiled .bim parse, then lets the thread that starts the GPU import CuPy (gboost/engines/early.py),
    so that CuPy's import, which holds the GIL too, runs while this thread parses and counts in
    compiled code that releases it (issue 24). numba's internal entry point: any failure leaves the
    target to be made at the first load, as before."""
    try:
        from numba.core.registry import cpu_target

        cpu_target.target_context.refresh()
    except Exception:  # noqa: BLE001 - an internal API of numba; the first load does the same
        pass
