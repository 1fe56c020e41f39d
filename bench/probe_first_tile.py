"""Where the GPU's wait before its first tile goes (issue 21: ~4 s at 200k x 200k): the command run
in-process (gboost.cli.main) with timestamps, from the process's start, on the steps between the
counting pass and the first tile's kernel — the engine's prepare, the tile plan, the ledger's
start, the first tile taken, its wait for the encoder, each resident upload chunk it needs, its
submission — and the encoder's watermark.

    python bench/probe_first_tile.py --bfile PREFIX --out DIR [other scan flags]
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
    """Stamp ``what`` now (or at perf_counter time ``at``) on this thread."""
    with LOCK:
        MARKS.append(((time.perf_counter() if at is None else at) - T0, threading.current_thread().name, what))


def wrap(obj, name: str, label: str, limit: int = 3, after: bool = True) -> None:
    """Mark the first ``limit`` calls of ``obj.name`` (start and, with ``after``, end)."""
    fn = getattr(obj, name)
    n = [0]

    @functools.wraps(fn)
    def inner(*a, **k):
        n[0] += 1
        k_ = n[0]
        if k_ <= limit:
            mark(f"{label} #{k_} start")
        try:
            return fn(*a, **k)
        finally:
            if k_ <= limit and after:
                mark(f"{label} #{k_} end")

    setattr(obj, name, inner)


def main() -> int:
    import gboost.checkpoint as ck
    import gboost.engines.gpu.device as dev
    import gboost.engines.gpu.engine as eng
    import gboost.engines.gpu.upload as up
    import gboost.load as load
    import gboost.scan as scan
    import gboost.study as st

    wrap(load, "load_study", "load_study", 1)
    wrap(eng.GpuEngine, "prepare", "engine.prepare", 1)
    wrap(eng.GpuEngine, "tile_snps", "engine.tile_snps", 1)
    wrap(ck.Ledger, "start", "ledger.start", 1)
    wrap(eng.GpuEngine, "run_tiles", "engine.run_tiles (generator made)", 1)
    wrap(dev.DeviceRunner, "try_submit", "runner.try_submit", 3)
    wrap(dev.DeviceRunner, "collect", "runner.collect", 3)
    wrap(st.PlanesReady, "wait", "planes_ready.wait", 4)
    wrap(up.PlaneUpload, "wait", "upload.wait (tile thread)", 3)
    wrap(up.PlaneUpload, "_send", "upload chunk", 1)
    wrap(scan, "stream_order", "stream_order", 1, after=False)
    # the upload's progress: every 25th chunk sent
    send = up.PlaneUpload._send

    def send_marked(self, k, a, b, buf, sent):
        send(self, k, a, b, buf, sent)
        if k % 25 == 0 or b == self._runner.p:
            mark(f"upload chunk {k} sent (SNPs to {b})")

    up.PlaneUpload._send = send_marked
    mark_watermark(0.1)
    return run_scan_and_print(sys.argv[1:], 18)


def mark_watermark(every_s: float) -> None:
    """Mark the background encoder's watermark at most every ``every_s`` seconds, and its end."""
    import gboost.study as st

    adv = st.PlanesReady.advance
    last = [0.0]

    def advance(self, rows):
        adv(self, rows)
        now = time.perf_counter()
        if now - last[0] > every_s or rows >= self.total:
            last[0] = now
            mark(f"encoded {rows}/{self.total}")

    st.PlanesReady.advance = advance


def run_scan_and_print(args: list[str], thread_width: int) -> int:
    """``gboost scan ARGS`` in this process, then every mark in time order; its exit status."""
    from gboost.cli import main as cli

    mark("probe: cli.main called")
    rc = cli(["scan", *args])
    mark(f"cli.main returned {rc}")
    for t, thread, what in sorted(MARKS):
        print(f"{t:8.3f}  {thread:{thread_width}.{thread_width}}  {what}")
    return rc

if __name__ == "__main__":
    sys.exit(main())
