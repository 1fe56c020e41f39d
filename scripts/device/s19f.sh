#!/usr/bin/env bash
# Nineteenth session: on one machine, the CLI's timeline (ab_start.py, this tree twice) beside a numba-free read's
# (probe_gpu_first.py), 500k x 5k without missing calls: how near the command's first tile is to the GPU's own floor.
. scripts/device/env.sh
export GBOOST_COMMIT=$(cat .commit 2>/dev/null || echo "?")
( time python3 -m gboost.cli warm ) 2>&1 | tail -3
mkdir -p /tmp/b19 && python3 bench/make_bed.py --out /tmp/b19/f500 --snps 500000 --samples 5000 --missing 0 > /dev/null
cat /tmp/b19/f500.bed > /dev/null
timeout 120 python3 bench/probe_gpu_first.py /tmp/b19/f500 --runs 5 2>&1 | tail -6 | tee $OUT/gpu_first_a.txt
timeout 150 python3 bench/ab_start.py --trees . . --bfile /tmp/b19/f500 --runs 3 2>&1 | tee $OUT/start.txt | tail -6
timeout 120 python3 bench/probe_gpu_first.py /tmp/b19/f500 --runs 5 2>&1 | tail -6 | tee $OUT/gpu_first_b.txt
