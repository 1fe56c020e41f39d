#!/usr/bin/env bash
# Device run (lead, 2026-11-26, third session): warm (now with the dependencies' bytecode and the wide
# study's kernels), the pre-screen timeline and the command at 500k x 5k, and where the first tile's
# wait goes at 200k x 200k (bench/probe_first_tile.py).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD:$PWD/tests:/tmp/site || exit
export PYTHONUNBUFFERED=1
mkdir -p $OUT /tmp/fs
t=$(date +%s%N); python3 -m gboost.cli warm 2>&1 | tail -1; echo "warm: $(( ($(date +%s%N) - t) / 1000000 )) ms"
python3 -X importtime -c "import numpy" 2>&1 | tail -1
python3 bench/make_bed.py --out /tmp/fs/p500k --snps 500000 --samples 5000 --missing 0 > /dev/null
python3 bench/bench_start.py /tmp/fs/p500k 2>&1 | tee $OUT/start_500k.txt | grep -v numpy-bim
timeout 200 python3 bench/bench_cli.py --sizes 500000 --n 5000 --missing 0,0.01 --device gpu --maker fast --repeat 2 --json $OUT/bench_cli.json 2>&1 | tee $OUT/bench_cli.txt | grep -v '^#' | tail -8
python3 bench/make_bed.py --out /tmp/fs/bb --snps 200000 --samples 200000 --missing 0.01 > /dev/null
rm -rf /tmp/o_bb; python3 bench/probe_first_tile.py --bfile /tmp/fs/bb --out /tmp/o_bb --device gpu --quiet 2>&1 | tee $OUT/probe_bb.txt | head -120
python3 -c "import json; d=json.load(open('/tmp/o_bb/run.json')); print(d['command_s']['stages'], d['engine_info'])"
