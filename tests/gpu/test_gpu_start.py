"""The thread that starts the GPU beside the input's reading (gboost/engines/early.py): it
imports CuPy, whose import holds the GIL, only once the CLI says its own thread has turned to
compiled work that releases it (or after a timeout, so that it never waits forever); the driver's
start through ctypes comes before and needs no signal. Checked in a fresh interpreter with the
stand-in CuPy of tests/helpers.py (write_fake_cupy) on its path."""
from __future__ import annotations

import os
import subprocess
import sys

from tests.helpers import ROOT, write_fake_cupy


PROBE = r"""
import sys, threading, time
import gboost.engines.early as early
go = threading.Event()
t = early.start_gpu_early("gpu", go)
assert t is not None
time.sleep(0.5)
before = "cupy" in sys.modules
go.set()
t.join(10)
print(before, "cupy" in sys.modules, t.is_alive())
early._GO_TIMEOUT_S = 0.2  # a caller that never signals: the thread goes on after the timeout
del sys.modules["cupy"]
t = early.start_gpu_early("gpu", threading.Event())
t.join(10)
print("cupy" in sys.modules, t.is_alive())
"""


def test_cupy_is_imported_only_after_the_signal_or_the_timeout(tmp_path):
    fake = write_fake_cupy(tmp_path / "fake")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([fake, ROOT])}
    r = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    first, second = r.stdout.split("\n")[:2]
    assert first == "False True False", r.stdout  # not before the signal; after it, and the thread ended
    assert second == "True False", r.stdout
