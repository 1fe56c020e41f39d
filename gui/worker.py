"""Long work (loading, scanning, exporting) in a QThread; the window only watches.

A :class:`Task` wraps a plain function ``fn(progress, cancel, log)`` from the core's world:
``progress`` takes the core's progress events (forwarded as a signal, at most ~20 per second),
``cancel()`` says whether the user pressed Cancel (the core checks it between tiles), ``log``
takes text lines. Outcomes arrive as signals in the GUI thread: ``succeeded(value)``,
``cancelled()``, or ``failed(title, message, details)``; ``finished()`` follows each of them.
No ``processEvents``: the GUI thread keeps running its own event loop.

numba compiles on the GUI thread only (gboost/runtime/compile_guard.py, docs/DESIGN.md): a task's thread
that needs a function compiled waits while the GUI thread compiles it, under a busy cursor.
"""
from __future__ import annotations

import threading
import time
import traceback
from typing import Callable

from PySide6.QtCore import QObject, Qt, QThread, Signal, Slot
from PySide6.QtGui import QGuiApplication

from gboost.errors import InputError, ScanCancelled


class Task(QObject):
    progressed = Signal(object)
    message = Signal(str)
    succeeded = Signal(object)
    cancelled = Signal()
    failed = Signal(str, str, str)  # title, message for the user, details (traceback for bugs)
    finished = Signal()

    def __init__(self, fn: Callable, name: str = "task", min_interval: float = 0.05):
        super().__init__()
        self._fn = fn
        self.name = name
        self._cancel = threading.Event()
        self._min_interval = min_interval
        self._last_emit = 0.0

    def cancel(self) -> None:
        """Ask the work to stop at its next check (thread-safe)."""
        self._cancel.set()

    @property
    def cancel_requested(self) -> bool:
        return self._cancel.is_set()

    def _progress(self, ev) -> None:
        now = time.monotonic()
        final = getattr(ev, "fraction", 0.0) >= 1.0
        if final or now - self._last_emit >= self._min_interval:
            self._last_emit = now
            self.progressed.emit(ev)

    @Slot()
    def run(self) -> None:
        try:
            value = self._fn(self._progress, self._cancel.is_set, self.message.emit)
        except ScanCancelled:
            self.cancelled.emit()
        except InputError as exc:
            self.failed.emit("Problem with the input", str(exc), "")
        except (RuntimeError, ValueError) as exc:  # e.g. "--device gpu: no CUDA device", bad parameter
            self.failed.emit(f"Could not complete the {self.name}", str(exc), traceback.format_exc())
        except OSError as exc:
            where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
            self.failed.emit(f"Could not complete the {self.name}", f"{where}{exc.strerror or exc}", "")
        except Exception as exc:  # a bug in gboost: say so, keep the details for a bug report
            self.failed.emit("Internal error", f"The {self.name} failed unexpectedly: {type(exc).__name__}: {exc}",
                             traceback.format_exc())
        else:
            self.succeeded.emit(value)
        finally:
            self.finished.emit()


class CompileServer(QObject):
    """Lives in the GUI thread; a worker's ``wake`` (a queued signal) makes it compile there what
    the worker waits for. ``compiled(name, seconds)`` is emitted after each function compiled (not
    for one loaded from numba's cache; the window logs it)."""

    wake = Signal()
    compiled = Signal(str, float)

    def __init__(self):
        super().__init__()
        self.wake.connect(self.serve, Qt.ConnectionType.QueuedConnection)

    @Slot()
    def serve(self) -> int:
        from gboost.runtime import compile_guard
        QGuiApplication.setOverrideCursor(Qt.CursorShape.WaitCursor)
        try:
            return compile_guard.serve()
        finally:
            QGuiApplication.restoreOverrideCursor()

    def _done(self, name: str, seconds: float, compiled: bool) -> None:
        if compiled:
            self.compiled.emit(name, seconds)


_server: list[CompileServer] = []


def compile_server() -> CompileServer:
    """The GUI thread's compile server, created and installed (gboost.runtime.compile_guard) on first use;
    call on the GUI thread before any task starts."""
    if not _server:
        from gboost.runtime import compile_guard
        server = CompileServer()
        compile_guard.install(server.wake.emit, server._done)
        _server.append(server)
    return _server[0]


def wait_threads(threads, timeout_ms: int) -> bool:
    """Wait (GUI thread) until every QThread in ``threads`` has stopped, compiling meanwhile what
    their tasks wait for: a plain ``QThread.wait`` would deadlock on a task waiting for a compile."""
    from gboost.runtime import compile_guard
    deadline = time.monotonic() + timeout_ms / 1000
    for th in threads:
        while not th.wait(20):
            compile_guard.serve()
            if time.monotonic() > deadline:
                return False
    return True


def start_task(task: Task) -> QThread:
    """Run ``task`` in a new QThread, which quits when the task finishes.

    Python owns both objects (no Qt parent, no ``deleteLater``): the caller keeps them until the
    thread's ``finished`` signal, then drops them and Python deletes them in the GUI thread. With
    ``deleteLater`` as well, Qt and Python could both delete the task: a double free.
    """
    compile_server()  # before the thread exists: it must never compile numba code itself
    thread = QThread()
    thread.setObjectName(f"gboost-{task.name}")
    task.moveToThread(thread)
    thread.started.connect(task.run)
    # Direct: quit() (thread-safe) from the worker's own thread as the task ends, so the thread's
    # event loop stops without waiting for the GUI thread's loop to deliver a queued call. Queued,
    # a window dropped right after its task's outcome (a test's teardown) could take the QThread
    # with it while its loop still ran, and Qt aborts the process on that.
    task.finished.connect(thread.quit, Qt.ConnectionType.DirectConnection)
    thread.start()
    return thread
