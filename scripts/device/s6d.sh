#!/usr/bin/env bash
# Device run (lead, 2026-11-26, sixth session): the passes fed by the .bed's readers on the cores
# the readers leave (fed_threads): the loader's passes at 4 readers, the start-up timeline, then the
# command at 500k x 5k (0 and 1 % missing, best of 3).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD:$PWD/tests:/tmp/site || exit
export PYTHONUNBUFFERED=1 QT_QPA_PLATFORM=offscreen
mkdir -p $OUT
python3 -m gboost.cli warm 2>&1 | tail -1
D=/tmp/gboost-bench
mkdir -p $D
for m in 0.0 0.01; do
  [ -e $D/fast_p500000_n5000_m$m.bed ] || python3 bench/make_bed.py --out $D/fast_p500000_n5000_m$m --snps 500000 --samples 5000 --missing $m > /dev/null
done
timeout 100 python3 bench/probe_bed_read.py $D/fast_p500000_n5000_m0.0 --repeat 3 --readers 1,4 2>&1 | tee $OUT/probe_bed_read.txt
timeout 60 python3 bench/bench_start.py $D/fast_p500000_n5000_m0.0 2>&1 | tee $OUT/bench_start.txt | head -14
timeout 300 python3 bench/bench_cli.py --sizes 500000 --n 5000 --missing 0,0.01 --device gpu --maker fast --repeat 3 --json $OUT/bench_cli.json 2>&1 | tee $OUT/bench_cli.txt | grep -v '^#' | tail -8
