"""A pytest plugin for scripts/device/gpu_tests.sh: each test's start and outcome as one line of a file
(``GBOOST_TEST_PROGRESS``), written and flushed as it happens, by the controlling process only (with
pytest-xdist the workers' starts and reports reach it), so that a run cut off by its time limit, even
by SIGKILL before pytest's summary, still tells which tests failed and which were still running.

    START <Unix time> <nodeid>
    END <outcome> <seconds since its start> <nodeid>

``outcome``: passed, failed or skipped (the call's), skipped or error (a setup's), error (a teardown's
failure: a second END line). A START without an END: still running when the run ended.
Loaded with ``-p gpu_progress`` (scripts/device on PYTHONPATH); does nothing without the variable."""
from __future__ import annotations

import os
import time

_state: dict = {"fh": None, "started": {}}


def pytest_configure(config):
    path = os.environ.get("GBOOST_TEST_PROGRESS")
    if path and not hasattr(config, "workerinput"):  # (an xdist worker: its controller writes)
        _state["fh"] = open(path, "a", buffering=1)


def pytest_unconfigure(config):
    fh, _state["fh"] = _state["fh"], None
    if fh is not None:
        fh.close()


def _write(line: str) -> None:
    fh = _state["fh"]
    if fh is not None:
        fh.write(line + "\n")
        fh.flush()


def pytest_runtest_logstart(nodeid, location):
    _state["started"][nodeid] = time.monotonic()
    _write(f"START {time.time():.1f} {nodeid}")


def pytest_runtest_logreport(report):
    if report.when == "call":
        outcome = report.outcome
    elif report.when == "setup" and not report.passed:
        outcome = "error" if report.failed else "skipped"
    elif report.when == "teardown" and report.failed:
        outcome = "error"
    else:
        return
    t0 = _state["started"].get(report.nodeid)
    _write(f"END {outcome} {time.monotonic() - t0:.1f} {report.nodeid}" if t0 is not None
           else f"END {outcome} ? {report.nodeid}")
