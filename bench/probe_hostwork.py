"""When the host work of a GPU scan runs against the screen (issue 24: at 100k x 5k the command waits
0.3-0.4 s after its screen for the exact tests and the calibration). Runs `gboost scan ARGS` in this
process with the stage clock's laps and each HostWork job (gboost/hostwork.py) logged, in seconds from
the process's start, then prints the timeline.

    python bench/probe_hostwork.py scan --bfile STUDY --out DIR --device gpu --quiet
"""
from __future__ import annotations

import shutil
import sys
import threading

from gboost.stages import StageClock, process_age

marks: list = []
_lap = StageClock.lap


def lap(self, name, *a, **k):
    out = _lap(self, name, *a, **k)
    marks.append((process_age(), f"stage {name} ends", threading.current_thread().name))
    return out


StageClock.lap = lap

from gboost import hostwork  # noqa: E402

_timed = hostwork.HostWork._timed


def timed(self, job):
    fn = getattr(job, "func", job)
    name = getattr(fn, "__name__", str(fn))
    marks.append((process_age(), f"host job {name} starts", threading.current_thread().name))
    try:
        return _timed(self, job)
    finally:
        marks.append((process_age(), f"host job {name} ends", threading.current_thread().name))


hostwork.HostWork._timed = timed

from gboost.cli import main  # noqa: E402

argv = sys.argv[1:]
if "--out" in argv:
    shutil.rmtree(argv[argv.index("--out") + 1], ignore_errors=True)
rc = main(argv)
marks.append((process_age(), "main returned", threading.current_thread().name))
for t, what, thread in sorted(marks):
    print(f"{t:8.3f}  {what:45s} {thread}")
sys.exit(rc)
