"""Wall-clock stages of one ``gboost scan`` command, for run.json's ``command_s``.

The figure of merit is the command's wall time (docs/PERFORMANCE.md), so run.json accounts for
all of it: the stages are consecutive stretches of the main thread, from the process's start to
the moment run.json is rendered, and add up to that wall time by construction (tests check them
against the wall measured from outside). Work on other threads (hashing the inputs, the ledger's
writer, the host work beside a GPU screen, formatting the output files) is listed apart, under
``background`` and ``files``: only what the main thread waited for is a stage.
"""
from __future__ import annotations

import os
import threading
import time


def process_age() -> float:
    """Seconds since this process started (Linux: /proc's start time, kept in 10 ms ticks since
    boot, against the boot-time clock; elsewhere 0)."""
    try:
        with open("/proc/self/stat") as fh:
            start_ticks = int(fh.read().rsplit(")", 1)[1].split()[19])
        now = time.clock_gettime(time.CLOCK_BOOTTIME)
        return max(0.0, now - start_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError, AttributeError):
        return 0.0


class StageClock:
    """Consecutive stages of the calling thread; ``since_start`` seconds had passed before it."""

    def __init__(self, since_start: float = 0.0):
        now = time.perf_counter()
        self.origin = now - since_start  # the process start on perf_counter's scale
        self.stages: dict[str, float] = {"startup": since_start}
        self.files: dict[str, dict] = {}  # output file -> {"format": s, "write": s, "bytes": n}
        self.background: dict = {}  # seconds other threads worked beside the stages (or a function giving them)
        # (stage, function): the command's last work, each timed as its own stage just before
        # run.json is rendered (end_stages): the CLI ends the GPUs' contexts there, which the
        # driver would otherwise do after the process's last instruction, outside every stage.
        self.ending: list = []
        self._mark = now

    def lap(self, name: str) -> float:
        """The time since the previous lap goes to stage ``name`` (added, when it recurs)."""
        now = time.perf_counter()
        dt = now - self._mark
        self.stages[name] = self.stages.get(name, 0.0) + dt
        self._mark = now
        return dt

    def lap_at(self, name: str, when: float) -> None:
        """A lap that ended at ``when`` (perf_counter; clamped between the previous lap and now):
        what the caller waited for until then goes to ``name``, the rest to the next lap."""
        when = min(max(when, self._mark), time.perf_counter())
        self.stages[name] = self.stages.get(name, 0.0) + (when - self._mark)
        self._mark = when

    def split(self, whole: str, part: str, seconds: float) -> None:
        """Move ``seconds`` (at most all) of stage ``whole`` into stage ``part``: a callee timed
        a piece of what the caller's lap measured."""
        s = min(max(0.0, seconds), self.stages.get(whole, 0.0))
        if s == 0.0 and part not in self.stages:
            return
        self.stages[whole] = self.stages.get(whole, 0.0) - s
        self.stages[part] = self.stages.get(part, 0.0) + s

    def end_stages(self) -> None:
        """Run :attr:`ending`'s functions, each lapped as its stage (once: the list is emptied).
        An error there is the command's end going wrong after every output is on disk: it is
        not raised (the stage is still timed)."""
        ending, self.ending = self.ending, []
        for name, fn in ending:
            try:
                fn()
            except Exception:  # noqa: BLE001 - the outputs are written; the process ends next anyway
                pass
            self.lap(name)

    def end_beside(self, name: str, fn) -> None:
        """Start ``fn`` now on a thread: a piece of the command's end that nothing after it needs
        (the CLI ends the GPUs' contexts as soon as the screen is done, while the outputs format).
        Its seconds go to ``background[name]``; waiting for it is stage ``name`` among
        :attr:`ending`. An error there is not raised, as in :meth:`end_stages`."""
        spent = [0.0]

        def run() -> None:
            t = time.perf_counter()
            try:
                fn()
            except Exception:  # noqa: BLE001 - the command's end going wrong; the outputs do not depend on it
                pass
            finally:
                spent[0] = time.perf_counter() - t

        thread = threading.Thread(target=run, name=f"gboost-{name}", daemon=True)
        thread.start()
        self.background[name] = lambda: (thread.join(), spent[0])[1]
        self.ending.append((name, thread.join))

    def wall(self) -> float:
        """Seconds from the process start to now."""
        return time.perf_counter() - self.origin

    def as_dict(self) -> dict:
        """run.json's ``command_s``: ``wall`` (process start to this call), the stages (their sum,
        ``stages_sum``, is ``wall`` up to the time since the last lap), per file, background (a
        function there is called now: the figure of a thread that may still be finishing, waited
        for here)."""
        for k, v in list(self.background.items()):
            if callable(v):
                self.background[k] = v()
        self.lap("run_json")
        r = lambda x: round(x, 6)  # noqa: E731
        return {"wall": r(self.wall()), "stages_sum": r(sum(self.stages.values())),
                "stages": {k: r(v) for k, v in self.stages.items()},
                "files": {f: {k: (r(v) if isinstance(v, float) else v) for k, v in d.items()}
                          for f, d in self.files.items()},
                "background": {k: r(v) for k, v in self.background.items()}}
