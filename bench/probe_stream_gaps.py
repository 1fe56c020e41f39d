"""Where a streamed scan's GPU waits (issue 21: one 2.48 s gap at 200k x 200k through a forced
budget, more than a tile): the command in-process (gboost.cli.main) with timestamps from the
process's start on every tile's gap before its kernels (CUDA events, the engine's own idle_gaps),
every block upload's host time, every page-locking of a piece, every tile's queueing and the
engine's prepare, every wait for the encoder longer than 5 ms, and the encoder's watermark.

    GBOOST_GPU_MEMORY_LIMIT=BYTES python bench/probe_stream_gaps.py --bfile PREFIX --out DIR [flags]
"""
from __future__ import annotations

import functools
import sys
import time

from probe_first_tile import mark, mark_watermark, run_scan_and_print  # bench/probe_first_tile.py


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
    mark_watermark(0.25)
    return run_scan_and_print(sys.argv[1:], 16)

if __name__ == "__main__":
    sys.exit(main())
