"""numba compiles on the main thread only, for a host (the GUI) whose work runs on other threads.

Two CI runs of the GUI tests crashed (an abort, then a segfault) while the GUI's loading thread
compiled a numba function and the main thread ran Python's garbage collector inside Qt's event
loop (docs/DESIGN.md §3.4.1). ``gboost warm`` fills the cache so an installed app normally
compiles nothing, but any cache miss (a new numba or CPU, a signature not warmed, an unwritable
cache folder) would bring the crash back. With the guard installed, a thread other than the main
one that needs a function compiled (or loaded from the cache: that builds LLVM objects too) hands
the work to the main thread and waits; the main thread does it when its event loop calls
:func:`serve`.

Why here, at numba's one entry point for a new signature (``Dispatcher.compile``), rather than a
list of what each input format or engine compiles, warmed before a task starts: such a list must
name every function with the exact types the pipeline's arrays take, and one it misses is the
crash again (gboost/cli/warm.py runs real scans for that reason). ``Dispatcher.compile`` is reached
only when a dispatcher has no machine code for the argument types yet, so calls of compiled
functions never come here: the guard costs nothing once a function has run.

One exception: when the main thread itself waits for the asking thread (it called library code
that runs a pool of threads and waits for their results: the CLI run in-process, an export), it
cannot serve, and the request would wait forever. So a request the main thread has not taken
within :data:`PATIENCE` seconds, while the main thread is blocked in a Python wait (a lock, a
condition, a future, a join), is compiled where it was asked. A main thread blocked there runs
no event loop and no collection meanwhile: the CLI's situation, not the crashes'.

The library never installs the guard; the GUI does (gui/worker.py). No Qt here: the host passes
``wake``, a thread-safe callable that makes its main thread call :func:`serve` soon.
"""
from __future__ import annotations

import concurrent.futures._base as _futures_base
import queue
import sys
import threading
import time
from typing import Callable

PATIENCE = 0.05  # s a request waits before checking whether the main thread is blocked
# Where a main thread that waits for other threads in Python sits: the files of these modules.
_WAIT_FILES = frozenset(m.__file__ for m in (threading, queue, _futures_base))

_pending: "queue.SimpleQueue[_Request]" = queue.SimpleQueue()
_state: dict = {"wake": None, "installed": False, "on_compile": None, "numba": None}


class _Request:
    __slots__ = ("dispatcher", "sig", "done", "value", "error", "taken", "lock")

    def __init__(self, dispatcher, sig):
        self.dispatcher, self.sig = dispatcher, sig
        self.done = threading.Event()
        self.value = self.error = None
        self.taken = False  # by the main thread (serve) or back by the asking thread
        self.lock = threading.Lock()

    def take(self) -> bool:
        with self.lock:
            if self.taken:
                return False
            self.taken = True
            return True


def installed() -> bool:
    return _state["installed"]


def install(wake: Callable[[], None], on_compile: Callable[[str, float, bool], None] | None = None) -> None:
    """Route every numba compilation asked for on a thread other than the main one to the main
    thread. Call on the main thread. ``wake()`` is called from the asking thread and must make the
    main thread call :func:`serve` (a queued Qt signal, say). ``on_compile(name, seconds,
    compiled)``, if given, is called on the main thread after each routed request, ``compiled``
    False for a load from the cache (a log line for the others, say). Installing again replaces
    ``wake`` and ``on_compile``."""
    if threading.current_thread() is not threading.main_thread():
        raise RuntimeError("compile_guard.install must be called on the main thread")
    from numba.core.dispatcher import Dispatcher

    _state["wake"], _state["on_compile"] = wake, on_compile
    if not _state["installed"]:
        if _state["numba"] is None:
            _state["numba"] = Dispatcher.compile
        Dispatcher.compile = _guarded_compile
        _state["installed"] = True


def uninstall() -> None:
    """numba's own ``Dispatcher.compile`` back; requests still queued are served."""
    from numba.core.dispatcher import Dispatcher

    if _state["installed"]:
        Dispatcher.compile = _state["numba"]
    _state.update(wake=None, installed=False, on_compile=None)
    serve()


def serve() -> int:
    """Do every compilation other threads are waiting for, here on the main thread; returns how
    many. A no-op elsewhere than on the main thread, and when nothing waits."""
    if threading.current_thread() is not threading.main_thread():
        return 0
    n = 0
    while True:
        try:
            req = _pending.get_nowait()
        except queue.Empty:
            return n
        if not req.take():  # compiled by its own thread meanwhile (see the module notes)
            continue
        n += 1
        misses = _misses(req.dispatcher)
        t = time.perf_counter()
        try:
            req.value = _state["numba"](req.dispatcher, req.sig)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the thread that asked
            req.error = exc
        finally:
            req.done.set()
        if _state["on_compile"] is not None:
            _state["on_compile"](_name(req.dispatcher), time.perf_counter() - t, _misses(req.dispatcher) > misses)


def _misses(dispatcher) -> int:
    """numba's count of the dispatcher's cache misses (compilations, not loads from the cache)."""
    return sum(getattr(dispatcher, "_cache_misses", {}).values())


def main_thread_blocked() -> bool:
    """Whether the main thread sits in a Python wait for other threads (threading, queue or a
    future): it cannot serve a request until what it waits for is done."""
    frame = sys._current_frames().get(threading.main_thread().ident)
    return frame is not None and frame.f_code.co_filename in _WAIT_FILES


def _guarded_compile(self, sig):
    numba_compile = _state["numba"]
    if threading.current_thread() is threading.main_thread() or not _state["installed"]:
        return numba_compile(self, sig)
    from numba.core.compiler_lock import global_compiler_lock

    if global_compiler_lock.is_locked():
        # A callee typed inside a compilation this thread already holds the lock for (begun
        # before the guard was installed): the main thread would wait for the lock forever.
        return numba_compile(self, sig)
    req = _Request(self, sig)
    _pending.put(req)
    wake = _state["wake"]
    if wake is not None:
        wake()
    while not req.done.wait(PATIENCE):
        if (main_thread_blocked() or not _state["installed"]) and req.take():
            return numba_compile(self, sig)  # the main thread waits for this thread (module notes)
    if req.error is not None:
        raise req.error
    return req.value


def _name(dispatcher) -> str:
    f = getattr(dispatcher, "py_func", None)
    return f"{f.__module__}.{f.__qualname__}" if f is not None else repr(dispatcher)
