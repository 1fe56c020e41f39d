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
    (:func:`repair_streams`), numba's cache folder chosen and handed to child processes
    (:func:`configure_numba_cache`), numba's two start-up adjustments (:func:`adjust_numba`).
    Must run before numba is imported for the adjustments to take effect; they are skipped
    (silently) otherwise, or on a numba they were not verified on."""
    if interrupts:
        quiet_interrupts()
    if streams:
        repair_streams()
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
