#!/usr/bin/env bash
# Device run (lead, 2026-11-27, fourteenth session): the GPU's thread started before NumPy's and numba's imports
# (last session's 839770b applied to this tree: ab_early, carried) against this tree, measured this time by
# bench/ab_start.py (the first tile and the wall, medians, trees alternating) at 100k and 500k x 5k.
. scripts/device/env.sh
python3 -m gboost.cli warm 2>&1 | tail -1
(cd ab_early && PYTHONPATH=$PWD:/tmp/site python3 -m gboost.cli warm 2>&1 | tail -1)
mkdir -p /tmp/gb
for p in 100000 500000; do python3 bench/make_bed.py --out /tmp/gb/p$p --snps $p --samples 5000 --missing 0 | tail -1; cat /tmp/gb/p$p.bed > /dev/null; done
python3 bench/ab_start.py --trees . ab_early --bfile /tmp/gb/p100000 --runs 12 2>&1 | tee $OUT/ab_100k.txt
python3 bench/ab_start.py --trees . ab_early --bfile /tmp/gb/p500000 --runs 6 2>&1 | tee $OUT/ab_500k.txt
