"""numba compiles on the main thread only, for a host (the GUI) whose work runs on other threads.

Two CI runs of the GUI tests crashed (an abort, then a segfault) while the GUI's loading thread
compiled a numba function and the main thread ran Python's garbage collector inside Qt's event
loop (docs/DESIGN.md, "numba compiles on the main thread"). ``gboost warm`` fills the cache so an
installed app normally compiles nothing, but any cache miss (a new numba or CPU, a signature not
warmed, an unwritable cache folder) would bring the crash back. With the guard installed, a
thread other than the main one that needs a function compiled (or loaded from the cache: that
builds LLVM objects too) hands the work to the main thread and waits for it; the main thread does
it when its event loop calls :func:`serve`.

Why here, at numba's one entry point for a new signature (``Dispatcher.compile``), rather than a
list of what each input format or engine compiles, warmed before a task starts: such a list must
name every function with the exact types the pipeline's arrays take, and one it misses is the
crash again (gboost/warm.py runs real scans for that reason). ``Dispatcher.compile`` is reached
only when a dispatcher has no machine code for the argument types yet, so calls of compiled
functions never come here: the guard costs nothing once a function has run.

The library never installs the guard (the CLI compiles on its main thread or in numba's own
parallel regions); the GUI does (gui/worker.py), and so does nothing else. No Qt here: the host
passes ``wake``, a thread-safe callable that makes its main thread call :func:`serve` soon.
"""
from __future__ import annotations

import queue
import threading
from typing import Callable

_pending: "queue.SimpleQueue[_Request]" = queue.SimpleQueue()
_state: dict = {"wake": None, "original": None, "on_compile": None, "numba": None}


class _Request:
    __slots__ = ("dispatcher", "sig", "done", "value", "error")

    def __init__(self, dispatcher, sig):
        self.dispatcher, self.sig = dispatcher, sig
        self.done = threading.Event()
        self.value = self.error = None


def installed() -> bool:
    return _state["original"] is not None


def install(wake: Callable[[], None], on_compile: Callable[[str], None] | None = None) -> None:
    """Route every numba compilation asked for on a thread other than the main one to the main
    thread. Call on the main thread. ``wake()`` is called from the asking thread and must make the
    main thread call :func:`serve` (a queued Qt signal, say). ``on_compile(name)``, if given, is
    called on the main thread before each routed compilation (a status line, a busy cursor).
    Installing again replaces ``wake`` and ``on_compile``."""
    if threading.current_thread() is not threading.main_thread():
        raise RuntimeError("compile_guard.install must be called on the main thread")
    from numba.core.dispatcher import Dispatcher

    _state["wake"], _state["on_compile"] = wake, on_compile
    if _state["original"] is None:
        _state["original"] = Dispatcher.compile
        _state["numba"] = _state["numba"] or Dispatcher.compile  # kept after uninstall, for late waiters
        Dispatcher.compile = _guarded_compile


def uninstall() -> None:
    """numba's own ``Dispatcher.compile`` back (requests still queued are served first)."""
    from numba.core.dispatcher import Dispatcher

    if _state["original"] is not None:
        Dispatcher.compile = _state["original"]
    _state.update(wake=None, original=None, on_compile=None)
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
        n += 1
        try:
            if _state["on_compile"] is not None:
                _state["on_compile"](_name(req.dispatcher))
            req.value = _state["numba"](req.dispatcher, req.sig)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the thread that asked
            req.error = exc
        finally:
            req.done.set()


def _guarded_compile(self, sig):
    original = _state["numba"]
    if threading.current_thread() is threading.main_thread() or not installed():
        return original(self, sig)
    from numba.core.compiler_lock import global_compiler_lock

    if global_compiler_lock.is_locked():
        # A callee typed inside a compilation this thread already holds the lock for (begun
        # before the guard was installed): the main thread would wait for the lock forever.
        return original(self, sig)
    req = _Request(self, sig)
    _pending.put(req)
    wake = _state["wake"]
    if wake is not None:
        wake()
    while not req.done.wait(0.5):
        if not installed() and not req.done.is_set():  # uninstalled meanwhile: nobody serves it
            return original(self, sig)
    if req.error is not None:
        raise req.error
    return req.value


def _name(dispatcher) -> str:
    f = getattr(dispatcher, "py_func", None)
    return f"{f.__module__}.{f.__qualname__}" if f is not None else repr(dispatcher)
