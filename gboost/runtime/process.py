"""What the ``gboost`` and ``gboost-gui`` commands change in their own process as they start.

Each step changes the whole process (its signals, its standard streams, its environment, numba's
import and loads), so none runs at ``import gboost``: a notebook or another tool that imports the
library keeps its process as it was. The commands' entry points (``gboost.cli.main``,
``gui.app.main``) call :func:`prepare_process` first thing; each step is a function of its own here
so that it can be called, and tested, alone.
"""
from __future__ import annotations

import os
import sys


def prepare_process(*, interrupts: bool = True, streams: bool = True, numba: bool = True) -> None:
    """The command's start-up, in this order: Ctrl-C answered quietly until the command's own
    handling takes over (:func:`quiet_interrupts`), closed standard streams replaced by /dev/null
    (:func:`repair_streams`), malloc fitted to an address-space limit (:func:`fit_address_limit`), numba's cache folder chosen and handed to child processes
    (:func:`configure_numba_cache`), numba's two start-up adjustments (:func:`adjust_numba`).
    Must run before numba is imported for the adjustments to take effect; they are skipped
    (silently) otherwise, or on a numba they were not verified on."""
    if interrupts:
        quiet_interrupts()
    if streams:
        repair_streams()
    fit_address_limit()
    fit_threads_to_limit()
    if numba:
        configure_numba_cache()
        adjust_numba()


def _quiet_interrupt(signum, frame):  # pragma: no cover - ends the process; tested through a subprocess
    sys.stderr.write("\ngboost: interrupted while starting; nothing was written\n")
    os._exit(130)


def quiet_interrupts() -> bool:
    """Ctrl-C ends the starting command with one line and exit 130, not a traceback from whatever
    module was being imported (numpy's, numba's imports take a second or more on a cold disk). The
    command replaces it by Python's own handler once it can turn a KeyboardInterrupt into its one
    line (``gboost.cli.main``, after the flags are parsed). False where signals cannot be set here
    (not the main thread)."""
    import signal

    try:
        signal.signal(signal.SIGINT, _quiet_interrupt)
    except ValueError:  # not the main thread
        return False
    return True


def repair_streams() -> list[int]:
    """A standard stream the caller closed (``2>&-``: cron jobs, daemons) is /dev/null from here:
    else the first file the command opens takes its descriptor and gets what is written to
    stdout/stderr, and Python's ``sys.stderr`` is None, whose flush failed a finished scan (exit 1).
    Returns the descriptors replaced."""
    fixed = []
    for fd, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)  # the lowest free descriptor: this one
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
            if getattr(sys, name) is None:
                setattr(sys, name, open(fd, "r" if fd == 0 else "w", closefd=False))
            fixed.append(fd)
    return fixed


# glibc's mallopt parameter for the number of malloc arenas (malloc.h).
_M_ARENA_MAX = -8


def address_limit() -> int | None:
    """The soft address-space limit (``ulimit -v``, as batch schedulers set it) in bytes, or None."""
    try:
        import resource
    except ImportError:  # (Windows)
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    return None if soft == resource.RLIM_INFINITY else int(soft)


# What a scan needs under an address-space limit, measured with ``ulimit -v`` on the sample study
# (tests/hostile/test_resource_limits.py): about 700 MB of addresses to start numba's compiler and
# NumPy's buffers (at 600 MB LLVM aborted), and about 16 MB more per compute thread (its stack and
# its share of the thread pools' reservations: 64 threads failed at 1.2 GB and ran at 1.6 GB).
START_BYTES = 700 << 20
THREAD_BYTES = 16 << 20


def address_limit_problem() -> str | None:
    """Why the command cannot run under this process's address-space limit, in one line; None when
    it can (or no limit is set). Checked before numba starts: below the floor, LLVM and OpenMP end
    the process by abort() or exit(), where no handler can say why."""
    limit = address_limit()
    if limit is None or limit >= START_BYTES + THREAD_BYTES:
        return None
    need = (START_BYTES + THREAD_BYTES) >> 20
    return (f"the address-space limit of this process (ulimit -v) is {limit >> 20} MB; gboost needs at least "
            f"{need} MB to start its compiler and one compute thread: raise it (ulimit -v {need * 1024 * 2}, "
            "or ask the batch scheduler for more memory per task)")


def fit_threads_to_limit(environ=None) -> int | None:
    """Under an address-space limit, as many compute threads as the limit has room for (numba's
    pool, and OpenMP's where numba runs on it, start every thread at once whatever a scan then
    uses): NUMBA_NUM_THREADS and OMP_NUM_THREADS set for this process and its children, unless the
    user set them (``environ``: where to set them, default ``os.environ``; numba reads its own
    from there as it compiles). Returns the number set, or None (no limit, or already set)."""
    environ = os.environ if environ is None else environ
    limit = address_limit()
    if limit is None or "NUMBA_NUM_THREADS" in environ:
        return None
    from gboost.pipeline.validate import usable_cores  # (the cores --dask local:N is checked against)

    cores = usable_cores()
    room = max(1, (limit - START_BYTES) // THREAD_BYTES)
    n = int(max(1, min(cores, room)))
    if n >= cores:
        return None
    environ["NUMBA_NUM_THREADS"] = str(n)
    environ.setdefault("OMP_NUM_THREADS", str(n))
    return n


def fit_address_limit() -> bool:
    """Under an address-space limit, glibc's malloc gives each new thread an arena of its own that
    reserves 64 MB of addresses (used or not): the scan's thread pools (numba's, the writers', the
    encoder's) then exhaust a limit far above what they use, and glibc aborts the process ("cannot
    allocate memory for thread-local data") where no Python handler can say why. Where a limit is
    set, malloc keeps to two arenas (threads share them; allocation takes a lock, which the scan's
    large NumPy buffers hardly notice). True when it was set; without a limit, or off glibc, nothing
    changes."""
    if address_limit() is None or not sys.platform.startswith("linux"):
        return False
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return bool(libc.mallopt(_M_ARENA_MAX, 2))
    except (OSError, AttributeError):  # musl and other libcs: no mallopt, and no arenas of this kind
        return False


def configure_numba_cache():
    """gboost's cache folder chosen now (proven private to this user, gboost/runtime/numba_cache.py) and
    handed to the processes the command starts through NUMBA_CACHE_DIR; None when caching is off.
    A library user who never calls this gets the same folder for gboost's functions, chosen at the
    first kernel module's import (``numba_cache.cached_njit``), with their environment untouched."""
    from gboost.runtime import numba_cache
    return numba_cache.configure()


def adjust_numba() -> None:
    """numba's first call imports no ``scipy.linalg`` (``numba_cache.skip_blas_probe``) and a
    cached function's load does not refresh numba's whole target (``numba_cache.light_cache_loads``):
    a few tenths of a second of every command's start-up. Both replace numba internals for the
    whole process, so only the commands ask for them; each checks numba's version and attributes
    and leaves numba untouched where they differ (they change speed only, never results)."""
    from gboost.runtime import numba_cache
    numba_cache.skip_blas_probe()
    numba_cache.light_cache_loads()
