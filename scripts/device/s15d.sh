#!/usr/bin/env bash
# Device run (lead, 2026-11-27, fourteenth session): CuPy without its cuTENSOR preload (3a5efc8) against d1c44d8
# (ab_old_s15), more runs than s15c: CuPy's import after numba's (as in the command), then bench/ab_start.py at
# 100k and 500k x 5k without missing calls, trees alternating.
. scripts/device/env.sh
python3 -m gboost.cli warm 2>&1 | tail -1
(cd ab_old_s15 && PYTHONPATH=$PWD:/tmp/site python3 -m gboost.cli warm 2>&1 | tail -1)
for r in 1 2 3 4 5; do
  python3 -c "import gboost.engines, time; t=time.perf_counter(); import cupy; print(f'after numba: import cupy    {time.perf_counter()-t:.3f}')"
  python3 -c "import gboost.engines, time; from gboost.engines.cupy_import import import_cupy; t=time.perf_counter(); import_cupy(); print(f'after numba: import_cupy() {time.perf_counter()-t:.3f}')"
done 2>&1 | sort | tee $OUT/cupy_ab.txt
for p in 100000 500000; do python3 bench/make_bed.py --out /tmp/gb/p$p --snps $p --samples 5000 --missing 0 | tail -1; cat /tmp/gb/p$p.bed > /dev/null; done
python3 bench/ab_start.py --trees . ab_old_s15 --bfile /tmp/gb/p100000 --runs 10 2>&1 | tee $OUT/ab_start_100k.txt
python3 bench/ab_start.py --trees . ab_old_s15 --bfile /tmp/gb/p500000 --runs 6 2>&1 | tee $OUT/ab_start_500k.txt
