#!/usr/bin/env bash
# Device run (lead, 2026-11-26, sixth session): how readers and numba threads share the 16 cores
# (s6b: the counting kernel fed by 4 readers ran at 10.6 GB/s with 8 threads, 5.9 with 16), with
# OpenMP's threads spinning (the default) and passive.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD:$PWD/tests:/tmp/site || exit
export PYTHONUNBUFFERED=1
mkdir -p $OUT
D=/tmp/gboost-bench
mkdir -p $D
[ -e $D/fast_p500000_n5000_m0.0.bed ] || python3 bench/make_bed.py --out $D/fast_p500000_n5000_m0.0 --snps 500000 --samples 5000 --missing 0.0 > /dev/null
timeout 200 python3 bench/probe_bed_read.py $D/fast_p500000_n5000_m0.0 --repeat 3 --grid --readers 2,4,8 2>&1 | tee $OUT/probe_grid.txt
OMP_WAIT_POLICY=PASSIVE timeout 200 python3 bench/probe_bed_read.py $D/fast_p500000_n5000_m0.0 --repeat 3 --grid --readers 2,4,8 2>&1 | tee $OUT/probe_grid_passive.txt
OMP_WAIT_POLICY=PASSIVE timeout 100 python3 bench/probe_bed_read.py $D/fast_p500000_n5000_m0.0 --repeat 3 --readers 4 2>&1 | tail -3
