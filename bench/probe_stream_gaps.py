"""Where a streamed scan's GPU waits (issue 21: one 2.48 s gap at 200k x 200k through a forced
budget, more than a tile): the command in-process (gboost.cli.main) with timestamps from the
process's start on every tile's gap before its kernels (CUDA events, the engine's own idle_gaps),
every block upload's host time, every page-locking of a piece, every wait for the encoder longer
than 5 ms, and the encoder's watermark.

    GBOOST_GPU_MEMORY_LIMIT=BYTES python bench/probe_stream_gaps.py --bfile PREFIX --out DIR [flags]
"""
from __future__ import annotations

import functools
import sys
import threading
import time

from gboost.stages import process_age

T0 = time.perf_counter() - process_age()
MARKS: list[tuple[float, str, str]] = []
LOCK = threading.Lock()


def mark(what: str, at: float | None = None) -> None:
    with LOCK:
        MARKS.append(((time.perf_counter() if at is None else at) - T0, threading.current_thread().name, what))


def timed(obj, name: str, label, min_s: float = 0.0) -> None:
    """Mark each call of ``obj.name`` lasting at least ``min_s``: its start and seconds (``label``
    formats the arguments)."""
    fn = getattr(obj, name)

    @functools.wraps(fn)
    def inner(*a, **k):
        t = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            dt = time.perf_counter() - t
            if dt >= min_s:
                mark(f"{label(*a, **k)}: {dt:.3f} s", at=t)

    setattr(obj, name, inner)


def main() -> int:
    import gboost.engines.gpu.device as dev
    import gboost.engines.gpu.engine as eng
    import gboost.study as st
    from gboost.cli import main as cli

    row = {}

    def upload_label(self, a, b, out, off):
        row.setdefault("n", 3 * 8 * self.n_words)
        pin = self._pinner
        end = (pin.pinned_end - pin.base) // row["n"] if pin is not None else -1
        return f"upload SNPs {a}-{b} ({(b - a) * row['n'] / 1e9:.2f} GB; pinned below SNP {end})"

    timed(dev.DeviceRunner, "_upload", upload_label)
    timed(eng.GpuEngine, "prepare", lambda self, study, thr: "engine prepare")
    timed(dev.DeviceRunner, "submit", lambda self, tile, slot: f"tile {tile.index} queued (uploads included)")
    timed(dev.DeviceRunner, "_host_register", lambda self, ptr, n: f"register {n / 1e6:.0f} MB")
    timed(st.PlanesReady, "wait", lambda self, rows=None, stop=None: f"wait for the encoder (SNP {rows})", 0.005)
    collect = dev.DeviceRunner.collect

    def collect_marked(self, pend):
        res = collect(self, pend)
        t = pend.tile
        idx, gap = self.stats.idle_gaps[-1] if self.stats.idle_gaps else (t.index, 0.0)
        mark(f"tile {idx} [{t.i0}:{t.i1}) x [{t.j0}:{t.j1}) collected; GPU idle {gap:.3f} s before it, "
             f"kernels {self.cp.cuda.get_elapsed_time(pend.slot.t0, pend.slot.t1) / 1000:.3f} s")
        return res

    dev.DeviceRunner.collect = collect_marked
    adv = st.PlanesReady.advance
    last = [0.0]

    def advance(self, rows):
        adv(self, rows)
        now = time.perf_counter()
        if now - last[0] > 0.25 or rows >= self.total:
            last[0] = now
            mark(f"encoded {rows}/{self.total}")

    st.PlanesReady.advance = advance
    mark("probe: cli.main called")
    rc = cli(["scan", *sys.argv[1:]])
    mark(f"cli.main returned {rc}")
    for t, thread, what in sorted(MARKS):
        print(f"{t:8.3f}  {thread:16.16}  {what}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
