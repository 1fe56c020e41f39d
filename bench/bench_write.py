"""Formatting and writing a scan's outputs, and the checkpoint's main-thread time, at the size of the
500k x 5k study, without running a scan: the command's last stage (bench_cli.py's "files" line
shows it inside the command; no SPEC section 7 row of its own). CPU only.

    python bench/bench_write.py                          # 500k SNPs, 680k screened pairs, every core
    python bench/bench_write.py --threads 1,2 --repeat 3 # the per-core rate and the speed-up
    python bench/bench_write.py --snps 20000 --pairs 30000 --check   # and the bytes vs one thread

A synthetic ScanResult shaped like the device's 500k x 5k run (bench/make_bed.py's IDs ``snpK`` on
one chromosome, 5,000 samples, ~680k screened pairs of which most are reported, STAT and KSA above
the screen threshold, all four DFs) goes through gboost/outputs/results.py as `gboost scan` calls it.
Printed, one line per thread count (the best of ``--repeat``; nothing is written but a temporary folder):

* format s per file (seconds of formatting work, summed over its pieces) and MB;
* format wall: render_lazily up to the bytes of all four files (run.json's ``format_outputs``);
* write wall: write_outputs into a fresh folder, formatting included (what the command waits for);
* CPU s: the process's CPU seconds during the formatting (all threads), and MB/CPU-s: the four
  files' bytes over them (the per-core rate; steadier than walls on a machine shared with others).

Then the checkpoint ledger (gboost/pipeline/checkpoint.py) on the same study: the caller's seconds in
Ledger (construction, start, record of every tile, flush, close: run.json's ``checkpoint``) and the
writer thread's, for ``--tiles`` tiles carrying the screened pairs.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def synthetic_result(p: int, m: int, n: int = 5000, seed: int = 24, words: int = 80):
    """A ScanResult of ``p`` SNPs and ``m`` screened pairs with the shapes and value ranges of a
    real 500k x 5k run (no scan is run: the statistics are random but of the right kind)."""
    from gboost.data.encode import ClassLayout
    from gboost.pipeline.scan import Pairs, ScanParams, ScanResult
    from gboost.stats.marginal import marginal_tests
    from gboost.stats.pvalues import chi2_sf
    from gboost.data.study import QCReport, SampleTable, Study, VariantTable, plink_snp_width
    from gboost.pipeline.tiles import Summary

    rng = np.random.default_rng(seed)
    variants = VariantTable(np.full(p, "1", dtype=object), np.array([f"snp{k}" for k in range(p)], dtype=object),
                            np.zeros(p), 1000 + 100 * np.arange(p, dtype=np.int64),
                            np.full(p, "A", dtype=object), np.full(p, "G", dtype=object))
    ids = np.array([f"i{k}" for k in range(n)], dtype=object)
    samples = SampleTable(ids, ids, np.ones(n, np.int8), np.r_[np.ones(n // 2), np.full(n - n // 2, 2)].astype(np.int8))
    maf = rng.uniform(0.05, 0.5, p)
    g = np.stack([(1 - maf) ** 2, 2 * maf * (1 - maf), maf ** 2], 1)
    counts = np.stack([rng.multinomial(size, g) for size in (n // 2, n - n // 2)], axis=2).astype(np.int64)
    study = Study(variants, samples, ClassLayout(n // 2, n - n // 2), np.zeros((p, 3, words), np.uint64), counts,
                  QCReport(), snp_col_width=plink_snp_width(variants.snp))  # (as gboost/data/load.py sets it)
    i = np.sort(rng.integers(0, p - 1, m))
    j = np.minimum(i + 1 + rng.integers(0, p, m) % np.maximum(1, p - 1 - i), p - 1)
    ksa = 30.0 + rng.exponential(4.0, m)
    stat = ksa * rng.uniform(0.97, 1.0, m)
    df = rng.choice(np.array([4, 2, 1, 0]), m, p=[0.9, 0.06, 0.03, 0.01]).astype(np.int64)
    pv = np.array([chi2_sf(s, d) if d > 0 else np.nan for s, d in zip(stat.tolist(), df.tolist())])
    tables = rng.integers(0, 600, (m, 3, 3, 2)).astype(np.int64)
    screened = Pairs(i, j, ksa, stat, df, pv, np.ones(m, bool), tables)
    summary = Summary(rng.integers(0, 3, p), np.full(p, p - 1, np.int64), 30.0 + rng.exponential(4.0, p),
                      rng.integers(0, p, p))
    params = ScanParams()
    mstat, mp, mdf = marginal_tests(counts)
    return ScanResult(study, params, "gpu", "synthetic", screened, summary, mstat, mp, mdf, p * (p - 1) // 2,
                      params.thresholds())


def _forget_reported(result) -> None:
    """Drop the cached pairs.tsv rows: a command computes them while writing (cached properties)."""
    for name in ("reported", "reported_rows"):
        result.__dict__.pop(name, None)


def _takes_threads(fn) -> bool:
    import inspect

    return "threads" in inspect.signature(fn).parameters


def outputs(result, threads: int) -> tuple[dict, float, dict, float]:
    """The four files' bytes by render_lazily, its wall seconds, each file's format seconds, and
    the CPU seconds of the process meanwhile (all threads: less disturbed by other processes on a
    shared machine than the wall)."""
    from gboost.outputs.results import render_lazily

    result.timings.clear()
    _forget_reported(result)
    t, cpu = time.perf_counter(), time.process_time()
    out = render_lazily(result, threads=threads) if _takes_threads(render_lazily) else render_lazily(result)
    data = {k: (v() if callable(v) else b"".join(v)) for k, v in out.items() if k != "run.json"}
    wall, cpu = time.perf_counter() - t, time.process_time() - cpu
    return data, wall, {k: result.timings[f"format_{k}"] for k in data}, cpu


def write_wall(result, threads: int, folder: Path) -> float:
    from gboost.outputs.results import write_outputs

    shutil.rmtree(folder, ignore_errors=True)
    _forget_reported(result)
    t = time.perf_counter()
    if _takes_threads(write_outputs):
        write_outputs(result, folder, overwrite=True, threads=threads)
    else:  # (an older checkout, for before/after figures: its own thread count)
        write_outputs(result, folder, overwrite=True)
    return time.perf_counter() - t


def ledger_seconds(result, tiles: int, folder: Path, pace: float = 0.0) -> tuple:
    """Caller's and writer's seconds in a Ledger that records ``tiles`` tiles of the result's
    survivors (each tile a run of them, with summary partials of its rows and columns), one tile
    every ``pace`` seconds (the device's screen: 4.6 s for 496 tiles), the wall of it all, and the
    caller's seconds split: opening (construction, start, replay), recording, flushing."""
    from gboost.pipeline.checkpoint import Ledger
    from gboost.pipeline.tiles import SummaryPartial, Tile, TileResult

    s, pr = result.study, result.screened
    p, m = s.n_snps, len(pr)
    edge = -(-p // max(1, int(np.sqrt(2 * tiles))))
    plan = [(a, b) for a in range(0, p, edge) for b in range(a, p, edge)][:tiles]
    cuts = np.linspace(0, m, len(plan) + 1).astype(int)
    results = []
    rng = np.random.default_rng(1)
    for k, ((a, b), lo, hi) in enumerate(zip(plan, cuts, cuts[1:])):
        ra, rb = min(edge, p - a), min(edge, p - b)
        part = lambda start, n: SummaryPartial(start, rng.integers(0, 3, n), np.full(n, n, np.int64),  # noqa: E731
                                               rng.exponential(4.0, n), rng.integers(0, p, n))
        results.append(TileResult(Tile(k, a, a + ra, b, b + rb), pr.i[lo:hi], pr.j[lo:hi], pr.ksa[lo:hi],
                                  pr.tables[lo:hi], ra * rb, part(a, ra), part(b, rb)))
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    t = time.perf_counter()
    ledger = Ledger(folder, s, result.params, resume=False)
    ledger.start(tile=edge, tiles=len(plan))
    for r in ledger.replay():
        pass
    opened = ledger.seconds
    for r in results:
        if pace:
            time.sleep(pace)
        ledger.record(r)
    recorded = ledger.seconds
    ledger.flush()
    ledger.close()
    wall = time.perf_counter() - t
    split = {"open": opened, "record": recorded - opened, "flush": ledger.seconds - recorded}
    return ledger.seconds, ledger.writer_seconds, len(results), wall, split


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--snps", type=int, default=500_000)
    ap.add_argument("--pairs", type=int, default=680_000)
    ap.add_argument("--threads", default=str(os.cpu_count() or 1), help="comma-separated thread counts")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--tiles", type=int, default=496, help="tiles the ledger records (500k SNPs, edge 16k: 496)")
    ap.add_argument("--tile-seconds", type=float, default=0.0093,
                    help="the ledger gets a tile every this many seconds (4.6 s / 496 tiles, the device's pace)")
    ap.add_argument("--check", action="store_true", help="also check every thread count's bytes against one thread's")
    a = ap.parse_args(argv)
    import subprocess

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    print(f"# bench/bench_write.py --snps {a.snps} --pairs {a.pairs} --threads {a.threads} --repeat {a.repeat}; "
          f"{os.cpu_count()} cores; commit {commit}; {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}; "
          f"load {os.getloadavg()[0]:.1f}")
    t = time.perf_counter()
    result = synthetic_result(a.snps, a.pairs)
    print(f"# synthetic result: {a.snps} SNPs, {a.pairs} screened, {len(result.reported)} reported "
          f"({time.perf_counter() - t:.1f} s to make)")
    outputs(result, 1)  # compile / load the cached functions once
    tmp = Path(tempfile.mkdtemp(prefix="gboost-bench-write-"))
    reference = None
    try:
        names = ("pairs.tsv", "pairs.epi.cc", "pairs.epi.cc.summary", "marginal.tsv")
        print("threads  " + "  ".join(f"{n:>22}" for n in names) + "  format wall  write wall   CPU s  MB/CPU-s")
        for threads in [int(x) for x in a.threads.split(",")]:
            best = None
            for _ in range(a.repeat):
                data, wall, per, cpu = outputs(result, threads)
                if best is None or wall < best[1]:
                    best = (data, wall, per, cpu)
            ww = min(write_wall(result, threads, tmp / "out") for _ in range(a.repeat))
            data, wall, per, cpu = best
            if a.check:
                reference = reference or outputs(result, 1)[0]
                assert data == reference, f"{threads} threads: other bytes than one thread"
            mb = {k: len(v) / 1e6 for k, v in data.items()}
            rate = sum(mb.values()) / max(1e-9, cpu)
            print(f"{threads:>7}  " + "  ".join(f"{per[n]:7.3f} s {mb[n]:7.1f} MB    " for n in names)
                  + f"  {wall:9.3f} s  {ww:8.3f} s  {cpu:6.3f}  {rate:8.1f}")
        mine, writer, n, wall, split = ledger_seconds(result, a.tiles, tmp / "ledger", a.tile_seconds)
        print(f"checkpoint: {n} tiles, {a.pairs} survivors, a tile every {a.tile_seconds} s: caller {mine:.3f} s "
              f"(run.json 'checkpoint'; " + ", ".join(f"{k} {v:.3f}" for k, v in split.items())
              + f"), writer thread {writer:.3f} s, wall {wall:.3f} s (sleeping {n * a.tile_seconds:.3f} s of it)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
