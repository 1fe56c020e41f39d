"""Where numba keeps gboost's compiled functions: one cache folder per version of the source.

numba's own cache (``cache=True``) checks only the modification time of the file that defines a
function. A compiled function inlines the numba functions it calls from other modules (the exact
test's batch loop inlines ``gboost.stats.boost.ipf_stat``), so after an edit or an upgrade of a
callee alone it would load the stale machine code and print the old statistics. So the cache lives
in a folder named by a hash of every gboost source file: any change of any module gives a fresh
folder (compiled once, then loaded), and an unchanged install never recompiles.

The folder is ``$NUMBA_CACHE_DIR/gboost-<hash>`` when the user set NUMBA_CACHE_DIR, else
``$XDG_CACHE_HOME/gboost/numba/<hash>`` (``~/.cache/...``), else a folder in the temp directory
when the home is not writable; each is used only once proven private to this user (see
:func:`choose`).

numba fixes a function's cache folder when its decorator runs (``Cache.__init__`` asks its locator
then), that is when the module defining it is imported; so gboost's compiled functions are declared
with :func:`cached_njit`, which points each one at this folder as it is made and leaves numba's
configuration (``numba.config.CACHE_DIR``, ``NUMBA_CACHE_DIR``) as it found it: a library user's
own ``cache=True`` functions keep numba's default, and ``import gboost`` changes nothing. The folder
is chosen once per process, at the first such decorator. The command's start-up
(:func:`gboost.runtime.process.prepare_process`) chooses it earlier and hands it to the processes it starts
(:func:`configure`), and installs the import-time adjustments below (:func:`skip_blas_probe`,
:func:`light_cache_loads`), which change numba for the whole process and so are for the command only.
"""
from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent.parent  # gboost/: every module of the package


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
    return _levels()[-1]


def _levels() -> list[Path]:
    """The cache folder for this source version, after the folders above it that gboost makes
    (and so must prove are private): ``gboost/``, ``gboost/numba/`` under the user's cache home,
    ``gboost-numba-*`` in the temp directory. A folder the user named (NUMBA_CACHE_DIR) is theirs."""
    tag = source_hash()
    user = os.environ.get("NUMBA_CACHE_DIR")
    if user and Path(user).name in (tag, f"gboost-{tag}"):  # set by configure() here or in a parent process
        path = Path(user)
        if path.name == f"gboost-{tag}":
            return [path]
        above = [path.parent] if path.parent.name.startswith("gboost-numba-") else []
        if path.parent.name == "numba" and path.parent.parent.name == "gboost":
            above = [path.parent.parent, path.parent]
        return [*above, path]
    if user:
        return [Path(user) / f"gboost-{tag}"]
    base = Path(os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"))
    return [base / "gboost", base / "gboost" / "numba", base / "gboost" / "numba" / tag]


def _uid() -> int:
    return os.getuid() if hasattr(os, "getuid") else 0


def untrusted(path: Path) -> str | None:
    """Why ``path`` may not hold code this process loads (None when it may): numba unpickles
    what a cache folder holds, so it must be a real folder (not a symlink) owned by this user
    and writable by nobody else."""
    import stat

    try:
        st = os.lstat(path)
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    if stat.S_ISLNK(st.st_mode):
        return "is a symbolic link"
    if not stat.S_ISDIR(st.st_mode):
        return "is not a folder"
    if hasattr(os, "getuid") and st.st_uid != _uid():
        return f"is owned by uid {st.st_uid}, not {_uid()}"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"is writable by {'others' if st.st_mode & stat.S_IWOTH else 'its group'} (mode {stat.S_IMODE(st.st_mode):o})"
    return None


class Untrusted(OSError):
    """A cache folder that exists but is not private to this user."""


def _make_private(levels: list[Path]) -> Path:
    """Each of ``levels`` made (mode 0o700) where missing, then proven private (:func:`untrusted`);
    returns the last. Raises :class:`Untrusted` for one that is not, OSError when one cannot be made.
    The folders above the first (the user's cache home, their NUMBA_CACHE_DIR) are theirs: made
    where missing, as before, and not judged."""
    os.makedirs(levels[0].parent, exist_ok=True)
    for level in levels:
        try:
            os.mkdir(level, 0o700)
        except FileExistsError:
            pass
        why = untrusted(level)
        if why is not None:
            raise Untrusted(f"{level} {why}")
    path = levels[-1]
    if not os.access(path, os.W_OK):
        raise PermissionError(path)
    return path


def _say(line: str) -> None:
    import sys

    try:
        if sys.stderr is not None:
            sys.stderr.write(f"gboost: {line}\n")
    except (OSError, ValueError):  # stderr closed: the run goes on without the line
        pass


def choose() -> Path | None:
    """:func:`cache_dir`, made and proven private to this user; None when no folder can be, and
    gboost's compiled functions are then not cached in this process. Decided once per process (the
    first call; later calls return the same) and changes neither the environment nor numba.

    A folder numba caches in is code this process runs (numba unpickles its index), so each folder
    gboost makes there is created private (0o700) and then checked (owner, mode, not a symlink).
    Where the user's cache home cannot be written, a folder of gboost's name in the temp directory
    is used on the same terms; where that is not private (another user may have made it first), a
    fresh private folder from ``tempfile.mkdtemp`` holds this run's cache, and when even that
    fails caching is off. Either is said in one line on stderr."""
    with _LOCK:
        if not _CHOSEN:
            _CHOSEN.append(_choose())
        return _CHOSEN[0]


_LOCK = threading.RLock()  # one choice per process, however many threads import kernel modules at once
_CHOSEN: list = []  # [the folder or None] once chosen


def _choose() -> Path | None:
    levels = _levels()
    tag = levels[-1].name
    path = None
    why = None
    try:
        path = _make_private(levels)
    except Untrusted as exc:
        why = str(exc)
    except OSError:
        pass
    if path is None and why is None:  # the user's cache home cannot be written: the temp directory
        base = Path(tempfile.gettempdir()) / f"gboost-numba-{_uid()}"
        try:
            path = _make_private([base, base / tag])
        except OSError as exc:
            why = str(exc)
    if path is None:
        try:
            fresh = Path(tempfile.mkdtemp(prefix="gboost-numba-"))  # made 0o700 by mkdtemp
            path = _make_private([fresh, fresh / tag])
            _say(f"numba's cache folder {why}; compiled code for this run is kept in {path} instead")
            _remove_at_exit(fresh)
        except OSError:
            _say(f"numba's cache folder {why}; numba's cache is off for this run")
            return None
    return path


def configure() -> Path | None:
    """The command's cache step (:func:`gboost.runtime.process.prepare_process`): :func:`choose` now, so a
    refused folder is said before the command's own output, and the folder handed on through
    ``NUMBA_CACHE_DIR`` to the processes this one starts (Dask's local workers, a doctor's probe),
    which check it again (:func:`_levels`) and so share this run's folder, a fresh temporary one
    included, instead of each making its own. With caching off, an inherited NUMBA_CACHE_DIR is
    dropped from the environment as well. numba itself is not touched: gboost's functions find the
    folder through :func:`cached_njit`."""
    path = choose()
    if path is None:
        os.environ.pop("NUMBA_CACHE_DIR", None)  # not handed on to the processes this one starts
    else:
        os.environ["NUMBA_CACHE_DIR"] = str(path)
    return path


def cached_njit(**options):
    """``numba.njit(cache=True, **options)`` whose cache is gboost's folder (:func:`choose`)
    rather than wherever numba's configuration points: numba's default (``__pycache__`` beside the
    source, checked by that file's modification time alone) would load a caller's stale machine
    code after an edit of a callee it inlined from another module. With no private folder the
    function is compiled in each process and never cached."""
    import numba

    options.pop("cache", None)

    def decorate(func):
        dispatcher = numba.njit(**options)(func)
        if hasattr(dispatcher, "enable_caching"):  # not NUMBA_DISABLE_JIT's plain function
            _cache_in(dispatcher, choose())
        return dispatcher

    return decorate


def _cache_in(dispatcher, folder: Path | None) -> None:
    """``dispatcher``'s cache opened in ``folder`` (nothing when None). numba's own call,
    ``enable_caching``, reads the folder from ``numba.config.CACHE_DIR`` as it opens the cache, so
    that setting holds gboost's folder for this call alone and is then put back as it was (under
    the lock: two of gboost's threads importing kernel modules do not interleave their swaps)."""
    if folder is None:
        return
    from numba.core import config

    with _LOCK:
        saved = config.CACHE_DIR
        config.CACHE_DIR = str(folder)
        try:
            dispatcher.enable_caching()
        finally:
            config.CACHE_DIR = saved


def _remove_at_exit(folder: Path) -> None:
    """``folder`` (this run's own cache, made by this process) removed when the process ends, so
    runs that cannot keep a cache do not fill the temp directory with compiled code."""
    import atexit
    import shutil

    owner = os.getpid()
    atexit.register(lambda: os.getpid() == owner and shutil.rmtree(folder, ignore_errors=True))


# numba's private layout the two adjustments below rely on (``numba.np.arraymath`` importing
# ``ensure_blas`` from ``numba.np.linalg`` and calling it at import; ``Cache.load_overload``,
# ``_load_overload`` and ``_guard_against_spurious_io_errors``), read and measured on these
# versions (major, minor). On any other numba they leave numba as it is: they only save start-up
# time, correctness never depends on them.
VERIFIED_NUMBA = ((0, 68),)


def numba_verified(version: str | None = None) -> bool:
    """Whether the installed numba (or ``version``) is one the adjustments were verified on; read
    from the package's metadata, so asking imports no numba."""
    if version is None:
        try:
            from importlib.metadata import version as dist_version

            version = dist_version("numba")
        except Exception:  # noqa: BLE001 - no metadata (a source tree on the path): not verified
            return False
    try:
        major, minor = (int(x) for x in version.split(".")[:2])
    except ValueError:
        return False
    return (major, minor) in VERIFIED_NUMBA


_ARRAYMATH = "numba.np.arraymath"


def skip_blas_probe() -> None:
    """Spare every process numba's import of SciPy's linear algebra (imports on every
    process's way to its first compiled call), which gboost never calls.

    numba's target loads ``numba.np.arraymath`` at the first call of any compiled function, and
    that module's import probes for BLAS by importing ``scipy.linalg.cython_blas`` (all of
    ``scipy.linalg``) only to decide whether ``np.dot`` may use BLAS. While it is imported, the
    probe here only asks whether SciPy is installed; the real check (numba's ``ensure_blas``) is
    left in place for the moment a function calling ``np.dot`` or ``np.linalg`` is compiled, so
    such a function behaves as before. Done by an import hook (installed by the command's start-up,
    :func:`gboost.runtime.process.prepare_process`, before numba is imported); on a numba not in
    :data:`VERIFIED_NUMBA`, or where its layout differs, nothing is changed."""
    import sys

    if _ARRAYMATH not in sys.modules:
        _hook(_ARRAYMATH, _run_with_cheap_probe)


def _run_with_cheap_probe(exec_module, module) -> None:
    """``numba.np.arraymath``'s module run with the cheap probe in place of ``ensure_blas``."""
    import importlib.util
    import sys

    if not numba_verified():
        exec_module(module)
        return
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
        exec_module(module)
    finally:
        if real is not None:
            linalg.ensure_blas = real


def _hook(name: str, run) -> None:
    """An import hook (once) that runs module ``name`` as ``run(exec_module, module)``."""
    import sys

    if not any(isinstance(f, _ModuleHook) and f.name == name for f in sys.meta_path):
        sys.meta_path.insert(0, _ModuleHook(name, run))


class _ModuleHook:
    """Finds one module as the other finders do and runs it through ``run(exec_module, module)``
    (numba's modules that the command adjusts, above). It stays in ``sys.meta_path`` (one name
    compared per import) for the command's life: removing it while another thread's import walks
    the list could skip a finder there. Only the command installs it (gboost.runtime.process)."""

    def __init__(self, name: str, run):
        self.name, self._run = name, run

    def find_spec(self, name, path=None, target=None):
        if name != self.name:
            return None
        import importlib.machinery

        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = _HookedLoader(spec.loader, self._run)
        return spec


class _HookedLoader:
    def __init__(self, loader, run):
        self._loader, self._run = loader, run

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module) -> None:
        self._run(self._loader.exec_module, module)

    def __getattr__(self, name):  # get_code, get_source, is_package...: the wrapped loader's
        return getattr(self._loader, name)


def start_target() -> None:
    """What numba's first load of a compiled function needs, made ready now (its runtime, see
    :func:`light_cache_loads`) rather than at the first .bim parse: the CLI calls this before the
    compiled parse, then lets the thread that starts the GPU import CuPy (gboost/engines/early.py),
    so that CuPy's import, which holds the GIL, runs while this thread parses and counts in
    compiled code that releases it, and the two do not queue for the GIL. numba's internal entry
    points: any failure leaves the first load to do the same, as before."""
    try:
        from numba.core.registry import cpu_target

        if not _light_ready(cpu_target.target_context):
            cpu_target.target_context.refresh()
    except Exception:  # noqa: BLE001 - an internal API of numba; the first load does the same
        pass


_CACHING = "numba.core.caching"


def light_cache_loads() -> None:
    """Load gboost's cached compiled functions without first loading all of numba's lowering
    registries (imports that hold the GIL, on the way to a scan's first tile, for a load that uses
    none of them).

    numba's ``Cache.load_overload`` refreshes the whole CPU target before every load "to ensure it
    is initialized": it imports and installs ~250 registries of typing and lowering rules. A load
    uses none of them (it unpickles machine code, links it and wraps its entry point); what the
    loaded code does need is what numba otherwise sets up only in that refresh: the runtime's
    symbols (NRT, ``rtsys.initialize``) and the hash secrets that ``numba.cpython.hashing``
    publishes at its import. Without the runtime the first compiled call crashed (measured). So
    a load here sets up those two and loads; a cache miss compiles, and numba's compiler refreshes
    the target itself as before, so only loads change. Any failure of this path falls back to
    numba's own load. Installed by an import hook (by the command's start-up,
    :func:`gboost.runtime.process.prepare_process`), as it replaces a method of numba's class for every
    cached function of the process, not only gboost's; on a numba not in :data:`VERIFIED_NUMBA`, or
    where an attribute it needs is missing, nothing is changed."""
    import sys

    caching = sys.modules.get(_CACHING)
    if caching is not None:
        _patch_loads(caching)
    else:
        _hook(_CACHING, _run_then_patch)


def _run_then_patch(exec_module, module) -> None:
    exec_module(module)
    _patch_loads(module)


def _light_ready(target_context) -> bool:
    """The runtime's symbols and the hash secrets in place (see :func:`light_cache_loads`);
    False when numba's internals are not as expected (the caller then refreshes in full)."""
    try:
        import numba.cpython.hashing  # noqa: F401 - publishes _numba_hashsecret_* to LLVM
        from numba.core.runtime import rtsys

        rtsys.initialize(target_context)
        return True
    except Exception:  # noqa: BLE001 - numba's internals moved: its own path
        return False


def _patch_loads(caching) -> None:
    if not numba_verified():
        return
    cache = getattr(caching, "Cache", None)
    needed = ("load_overload", "_load_overload", "_guard_against_spurious_io_errors")
    if cache is None or not all(hasattr(cache, a) for a in needed) or getattr(cache.load_overload, "_gboost", False):
        return
    full = cache.load_overload

    def load_overload(self, sig, target_context):
        if not _light_ready(target_context):
            return full(self, sig, target_context)
        try:
            with self._guard_against_spurious_io_errors():
                return self._load_overload(sig, target_context)
        except Exception:  # noqa: BLE001 - whatever the light load lacked, numba's full one has
            return full(self, sig, target_context)

    load_overload._gboost = True
    cache.load_overload = load_overload
