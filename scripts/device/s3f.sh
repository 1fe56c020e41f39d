#!/usr/bin/env bash
# Device run (lead, 2026-11-26, third session): the command at 500k x 5k after the GPU thread's new order.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD:$PWD/tests:/tmp/site || exit
export PYTHONUNBUFFERED=1
mkdir -p $OUT /tmp/fs
python3 -m gboost.cli warm 2>&1 | tail -1
python3 bench/make_bed.py --out /tmp/fs/p500k --snps 500000 --samples 5000 --missing 0 > /dev/null
python3 bench/bench_start.py /tmp/fs/p500k 2>&1 | tee $OUT/start_500k.txt | grep -v numpy-bim
timeout 200 python3 bench/bench_cli.py --sizes 500000 --n 5000 --missing 0,0.01 --device gpu --maker fast --repeat 3 --json $OUT/bench_cli.json 2>&1 | tee $OUT/bench_cli.txt | grep -v '^#' | tail -8
