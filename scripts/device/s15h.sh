#!/usr/bin/env bash
# Device run (lead, 2026-11-27, fourteenth session): the host work started at the read's end (f2ad32e) against
# 3a5efc8 (ab_old_s15b, carried): the GPU tests of the overlap, both trees warmed, then bench/ab_start.py
# (trees alternating) at 100k x 5k without and with 1 % missing calls, and at 500k without.
. scripts/device/env.sh
timeout 200 python3 -m pytest -q tests/test_overlap.py tests/test_cupy_import.py -p no:cacheprovider 2>&1 | tail -2
python3 -m gboost.cli warm 2>&1 | tail -1
(cd ab_old_s15b && PYTHONPATH=$PWD:/tmp/site python3 -m gboost.cli warm 2>&1 | tail -1)
mkdir -p /tmp/gb
for f in "100000 0" "100000 0.01" "500000 0"; do set -- $f; python3 bench/make_bed.py --out /tmp/gb/p$1_m$2 --snps $1 --samples 5000 --missing $2 | tail -1; cat /tmp/gb/p$1_m$2.bed > /dev/null; done
python3 bench/ab_start.py --trees . ab_old_s15b --bfile /tmp/gb/p100000_m0 --bfile /tmp/gb/p100000_m0.01 --runs 10 2>&1 | tee $OUT/ab_100k.txt
python3 bench/ab_start.py --trees . ab_old_s15b --bfile /tmp/gb/p500000_m0 --runs 4 2>&1 | tee $OUT/ab_500k.txt
