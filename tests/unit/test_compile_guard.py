"""gboost/runtime/compile_guard.py without Qt: a compilation asked for on another thread runs on the main
thread when the main thread serves, and on the asking thread when the main thread is blocked
waiting for it (else that would deadlock: the CLI run in-process after the GUI installed the guard
did, in a full GUI test run)."""
from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np
import pytest
from numba.core import event

from gboost.runtime import compile_guard
@pytest.fixture
def compiles():
    """(function name, compiled on the main thread?) for every numba compilation meanwhile."""
    seen = []

    class Listener(event.Listener):
        def on_start(self, ev):
            seen.append((ev.data["dispatcher"].py_func.__name__, threading.current_thread() is threading.main_thread()))

        def on_end(self, ev):
            pass

    listener = Listener()
    event.register("numba:compile", listener)
    yield seen
    event.unregister("numba:compile", listener)
    compile_guard.uninstall()


def _fresh():
    """A numba function never compiled before (no cache): calling it compiles it."""
    @numba.njit(cache=False)
    def fresh_sum(x):
        s = 0.0
        for v in x:
            s += v
        return s
    return fresh_sum


def test_a_worker_thread_gets_its_function_compiled_on_the_main_thread(compiles):
    woken, told = threading.Event(), []
    compile_guard.install(woken.set, lambda *a: told.append((*a, threading.current_thread() is threading.main_thread())))
    fn, out = _fresh(), {}
    worker = threading.Thread(target=lambda: out.setdefault("v", fn(np.arange(5.0))))
    worker.start()
    served = 0
    deadline = time.monotonic() + 120
    while worker.is_alive() and time.monotonic() < deadline:
        served += compile_guard.serve()  # a GUI's event loop, polled (never a Python wait: see below)
        time.sleep(0.002)
    worker.join()
    assert out["v"] == 10.0 and woken.is_set() and served == 1
    assert compiles == [("fresh_sum", True)]
    assert len(told) == 1 and told[0][0].endswith("fresh_sum") and told[0][2] is True and told[0][3] is True
    assert fn(np.arange(3.0)) == 3.0  # compiled once, for every thread


def test_a_main_thread_waiting_for_a_pool_does_not_deadlock(compiles):
    compile_guard.install(lambda: None)  # nobody serves: the main thread waits in Future.result
    fn = _fresh()
    with ThreadPoolExecutor(2) as pool:
        assert pool.submit(fn, np.arange(4.0)).result(timeout=120) == 6.0
    assert compiles == [("fresh_sum", False)]


def test_errors_reach_the_thread_that_asked(compiles):
    woken = threading.Event()
    compile_guard.install(woken.set)

    @numba.njit(cache=False)
    def bad(x):
        return x.no_such_attribute

    out = {}

    def call():
        try:
            bad(np.arange(3.0))
        except Exception as exc:  # noqa: BLE001
            out["error"] = exc

    worker = threading.Thread(target=call)
    worker.start()
    while worker.is_alive():
        compile_guard.serve()
        time.sleep(0.002)
    assert isinstance(out["error"], numba.core.errors.TypingError)


def test_uninstall_gives_numba_its_compile_back(compiles):
    from numba.core.dispatcher import Dispatcher

    original = Dispatcher.compile
    compile_guard.install(lambda: None)
    assert Dispatcher.compile is not original and compile_guard.installed()
    compile_guard.uninstall()
    assert Dispatcher.compile is original and not compile_guard.installed()
    errors = []

    def install_elsewhere():
        try:
            compile_guard.install(lambda: None)
        except RuntimeError as exc:
            errors.append(str(exc))

    t = threading.Thread(target=install_elsewhere)
    t.start()
    t.join()
    assert errors and "main thread" in errors[0] and not compile_guard.installed()
