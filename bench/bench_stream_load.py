"""The background encode of a .bed (issues 21, 24; gboost/load.py ``background_encode``), timed in
this process after a warm-up, the .bed in the page cache, best of ``--repeats``:

* one-pass: ``load_study`` as before (QC and encoding in one pass: the "encode" stage);
* counting pass: what ``load_study(..., background_encode=True)`` takes before it returns (the
  "encode" stage of a streamed scan: what the screen waits for before its first tile);
* encoder: the background thread's seconds; ready: from the call to the last plane written.

    python bench/bench_stream_load.py --bfile PREFIX [--qc] [--repeats 3]

The thread count is numba's (``NUMBA_NUM_THREADS``); the background encoder leaves one core free.
"""
from __future__ import annotations

import argparse
import os
import time

from gboost.io.plink_bed import open_bfile
from gboost.load import load_study
from gboost.study import QCOptions


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bfile", required=True)
    ap.add_argument("--qc", action="store_true", help="--maf 0.01 --geno 0.05 --hwe 1e-6")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    qc = QCOptions(maf=0.01, geno=0.05, hwe=1e-6) if args.qc else QCOptions()
    size = os.path.getsize(args.bfile + ".bed")
    for background in (False, True):  # warm: numba's cache, the page cache
        load_study(open_bfile(args.bfile), qc, background_encode=background).wait_planes()
    one, count, enc, ready = [], [], [], []
    for _ in range(args.repeats):
        src = open_bfile(args.bfile)
        tm: dict = {}
        load_study(src, qc, timings=tm)
        one.append(tm["encode"])
        src = open_bfile(args.bfile)
        tm = {}
        t = time.perf_counter()
        study = load_study(src, qc, timings=tm, background_encode=True)
        count.append(tm["encode"])
        study.wait_planes()
        ready.append(time.perf_counter() - t)
        enc.append(study.planes_ready.seconds if study.planes_ready is not None else float("nan"))
    print(f"{args.bfile}.bed: {size / 1e6:.0f} MB, {study.n_snps} SNPs kept x {study.n_samples} samples, "
          f"QC {'on' if args.qc else 'off'}, {os.environ.get('NUMBA_NUM_THREADS', os.cpu_count())} threads; "
          f"best of {args.repeats}")
    print(f"  one-pass QC+encode   {min(one):.3f} s")
    print(f"  counting pass        {min(count):.3f} s   (before the Study returns)")
    print(f"  background encoder   {min(enc):.3f} s   (beside the screen)")
    print(f"  call to planes ready {min(ready):.3f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
