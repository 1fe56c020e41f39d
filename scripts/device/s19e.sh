#!/usr/bin/env bash
# Nineteenth session: how soon the first tile could start with a read that needs no numba (issue 24's floor):
# bench/probe_gpu_first.py on the 500k x 5k fast fileset (no missing calls), five fresh processes after a first.
. scripts/device/env.sh
export GBOOST_COMMIT=$(cat .commit 2>/dev/null || echo "?")
mkdir -p /tmp/b19 && python3 bench/make_bed.py --out /tmp/b19/f500 --snps 500000 --samples 5000 --missing 0 > /dev/null
cat /tmp/b19/f500.bed > /dev/null
timeout 300 python3 bench/probe_gpu_first.py /tmp/b19/f500 --runs 6 2>&1 | tee $OUT/gpu_first.txt
