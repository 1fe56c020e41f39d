#!/usr/bin/env bash
# Device run (lead, 2026-11-26, third session): CuPy's import after the parse (fe43dba), and the
# teardown with the device's pools emptied first.
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
mkdir -p $OUT /tmp/fs
python3 -m gboost.cli warm 2>&1 | tail -1
for k in 1 2; do for w in ctx gpu freed; do
  t=$(date +%s%N); python3 bench/probe_teardown.py $w; echo "   outside $(( ($(date +%s%N) - t) / 1000000 )) ms"
done; done
python3 bench/make_bed.py --out /tmp/fs/p500k --snps 500000 --samples 5000 --missing 0 > /dev/null
python3 bench/bench_start.py /tmp/fs/p500k 2>&1 | head -14
timeout 150 python3 bench/bench_cli.py --sizes 500000 --n 5000 --missing 0 --device gpu --maker fast --repeat 3 --no-engine --json $OUT/bench_cli.json 2>&1 | tee $OUT/bench_cli.txt | grep -v '^#' | tail -5
