"""The GPU's decode of .bed rows into planes (gboost/engines/gpu/decode.py), piece by piece: for
chunks of 28 and 112 SNPs of a .bed, the host read of the rows (``BedSource.read_rows``, four
readers), the copy up, the decode by the engine's kernel (``gb_decode_bed``) and, for comparison,
by ``encode.decode_bed_rows``'s array operations on CuPy (what the engine ran before the kernel),
each synchronised and timed apart (best of 3), as GB of .bed a second.

    python bench/probe_decode.py PREFIX [--rows 28,112]
"""
from __future__ import annotations

import argparse
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("prefix")
    ap.add_argument("--rows", default="28,112")
    a = ap.parse_args()
    import cupy as cp

    from gboost.encode import bed_columns, bed_gather, bed_plan, decode_bed_rows
    from gboost.engines.gpu.compile import kernels
    from gboost.engines.gpu.config import MmaConfig
    from gboost.engines.gpu.decode import decode_columns, decode_rows
    from gboost.io import plink_bed

    src = plink_bed.open_bfile(a.prefix)
    n = len(src.samples)
    is_case = src.samples.status == 1
    plan = bed_plan(np.r_[np.flatnonzero(~is_case), np.flatnonzero(is_case)],
                    np.r_[is_case[~is_case], is_case[is_case]], n)
    columns = bed_columns(plan)
    gather = bed_gather(cp, columns)
    kernel = kernels(0, MmaConfig())["gb_decode_bed"]
    cols_t, n_words = decode_columns(cp, columns), len(columns) // 64
    row = (n + 3) // 4
    pool = ThreadPoolExecutor(plink_bed.BED_READERS)
    print(f"{a.prefix}.bed: {n} samples, {row / 1e6:.2f} MB a row; readers {plink_bed.BED_READERS}")
    print(f"{'rows':>5} {'MB':>6} {'read s':>8} {'GB/s':>6} {'up s':>8} {'GB/s':>6} {'kernel s':>8} {'GB/s':>6} "
          f"{'arrays s':>8} {'GB/s':>6}")
    for rows in (int(x) for x in a.rows.split(",")):
        buf = np.frombuffer(cp.cuda.alloc_pinned_memory(rows * row), np.uint8, rows * row).reshape(rows, row)
        best = [float("inf")] * 4
        for k in range(4):
            idx = np.arange(k * rows, (k + 1) * rows) + 1000
            t = time.perf_counter()
            src.read_rows(idx, buf, pool)
            t1 = time.perf_counter()
            raw = cp.empty((rows, row), np.uint8)
            raw.set(buf)
            cp.cuda.runtime.deviceSynchronize()
            t2 = time.perf_counter()
            planes = cp.empty((rows, 3, n_words), np.uint64)
            counts = cp.empty((rows, 3, 2), np.int64)
            decode_rows(kernel, raw, cols_t, n_words, plan.layout.w_ctrl, planes, counts)
            cp.cuda.runtime.deviceSynchronize()
            t3 = time.perf_counter()
            ref_planes, ref_counts = decode_bed_rows(cp, raw, *gather, plan.layout.w_ctrl)
            cp.cuda.runtime.deviceSynchronize()
            t4 = time.perf_counter()
            if not (bool((planes == ref_planes).all()) and bool((counts == ref_counts).all())):
                raise SystemExit("the kernel's planes or counts differ from decode_bed_rows'")
            if k:  # the first: CuPy's kernels compiled or loaded
                best = [min(b, x) for b, x in zip(best, (t1 - t, t2 - t1, t3 - t2, t4 - t3))]
            del raw, planes, counts, ref_planes, ref_counts
        mb = rows * row / 1e6
        print(f"{rows:>5} {mb:>6.0f} " + " ".join(f"{x:>8.4f} {mb / 1e3 / x:>6.2f}" for x in best))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
