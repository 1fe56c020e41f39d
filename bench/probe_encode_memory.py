"""What bounds the background encoder at biobank scale (issue 21): the over-sized study's encoder
wrote planes at ~2.5 GB/s of .bed while the same kernel on 500k x 5k in memory ran at 9 GB/s. Here
``bed_encode`` on a .bed held in memory (``--snps`` SNPs x ``--samples`` samples, written here),
into planes that are (a) fresh ``np.empty`` (first touch: the kernel's page faults and zeroing),
(b) already touched, (c) fresh but advised as transparent huge pages; at the encoder's thread count
and at every core; and the page-cache read of the same .bed by 1 and 4 readers.

    python bench/probe_encode_memory.py [--snps 2000] [--samples 2320000] [--dir /tmp/gboost_enc]
"""
from __future__ import annotations

import argparse
import mmap
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def huge_empty(shape, dtype=np.uint64) -> np.ndarray:
    n = int(np.prod(shape)) * np.dtype(dtype).itemsize
    m = mmap.mmap(-1, n, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    if hasattr(m, "madvise") and hasattr(mmap, "MADV_HUGEPAGE"):
        m.madvise(mmap.MADV_HUGEPAGE)
    return np.frombuffer(m, dtype=dtype).reshape(shape)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--snps", type=int, default=2000)
    ap.add_argument("--samples", type=int, default=2320000)
    ap.add_argument("--dir", default="/tmp/gboost_enc")
    a = ap.parse_args()
    import numba as nb

    from gboost.encode import bed_encode, bed_plan
    from gboost.io import plink_bed

    prefix = f"{a.dir}/enc_{a.snps}x{a.samples}"
    Path(a.dir).mkdir(parents=True, exist_ok=True)
    if not Path(prefix + ".bed").exists():
        subprocess.run([sys.executable, str(ROOT / "bench" / "make_bed.py"), "--out", prefix, "--snps", str(a.snps),
                        "--samples", str(a.samples), "--missing", "0.01"], check=True, stdout=subprocess.DEVNULL)
    for f in ("enabled", "defrag"):
        try:
            print(f"THP {f}: {Path('/sys/kernel/mm/transparent_hugepage/' + f).read_text().strip()}")
        except OSError:
            pass
    src = plink_bed.open_bfile(prefix)
    n = len(src.samples)
    raw = np.fromfile(prefix + ".bed", np.uint8, offset=3).reshape(a.snps, (n + 3) // 4)
    is_case = src.samples.status == 1
    plan = bed_plan(np.r_[np.flatnonzero(~is_case), np.flatnonzero(is_case)],
                    np.r_[is_case[~is_case], is_case[is_case]], n)
    rows = np.arange(a.snps)
    shape = (a.snps, 3, plan.layout.n_words)
    counts = np.empty((a.snps, 3, 2), np.int64)
    bed_encode(raw[:8], plan, rows[:8], np.empty((8,) + shape[1:], np.uint64), counts[:8])  # compiled/loaded
    gb = raw.nbytes / 1e9
    print(f".bed {gb:.2f} GB in memory, planes {np.prod(shape) * 8 / 1e9:.2f} GB; {os.cpu_count()} CPUs")
    print(f"{'threads':>7} {'fresh s':>8} {'GB/s':>6} {'touched s':>9} {'GB/s':>6} {'huge s':>7} {'GB/s':>6}")
    for t in sorted({plink_bed.fed_threads(spare=1), nb.config.NUMBA_NUM_THREADS}):
        nb.set_num_threads(t)
        res = []
        for kind in ("fresh", "touched", "huge"):
            best = float("inf")
            for _ in range(2):
                out = huge_empty(shape) if kind == "huge" else np.empty(shape, np.uint64)
                if kind == "touched":
                    out.fill(0)
                s = time.perf_counter()
                bed_encode(raw, plan, rows, out, counts)
                best = min(best, time.perf_counter() - s)
                del out
            res.append(best)
        print(f"{t:>7} " + " ".join(f"{x:>{w}.3f} {gb / x:>6.2f}" for x, w in zip(res, (8, 9, 7))))
    for r in (1, 4):
        plink_bed.BED_READERS = r
        s = time.perf_counter()
        for _ in src.iter_bed_rows(None):
            pass
        dt = time.perf_counter() - s
        print(f"read by {r} reader(s): {dt:.3f} s, {gb / dt:.2f} GB/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
