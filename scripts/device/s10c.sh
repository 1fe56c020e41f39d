#!/usr/bin/env bash
# Device run (lead, 2026-11-26, ninth session), issue 24: the command at 500k x 5k with the driver's
# files released beside the formatting (5094a7f), against the tree before (f3dcfb6, copied to
# ab_old_f3dcfb6/ for this run only and carried), alternating trees, no missing calls; this tree with
# 1 % missing calls too (engine-only run beside). The GPU suite runs in a later call.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD:$PWD/tests:/tmp/site || exit
export PYTHONUNBUFFERED=1 QT_QPA_PLATFORM=offscreen
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv,noheader
mkdir -p $OUT
python3 -m gboost.cli warm 2>&1 | tail -1
(cd ab_old_f3dcfb6 && PYTHONPATH=$PWD:/tmp/site python3 -m gboost.cli warm 2>&1 | tail -1)
for r in 1 2; do
  timeout 100 python3 bench/bench_cli.py --sizes 500000 --n 5000 --missing 0 --device gpu --maker fast --repeat 2 --no-engine --json $OUT/cli_new_$r.json 2>&1 | tee $OUT/cli_new_$r.txt | grep -v '^#' | tail -2
  GBOOST_COMMIT=f3dcfb6 timeout 100 python3 bench/bench_cli.py --repo ab_old_f3dcfb6 --sizes 500000 --n 5000 --missing 0 --device gpu --maker fast --repeat 2 --no-engine 2>&1 | tee $OUT/cli_old_$r.txt | grep -v '^#' | tail -2
done
timeout 150 python3 bench/bench_cli.py --sizes 500000 --n 5000 --missing 0.01 --device gpu --maker fast --repeat 2 --json $OUT/bench_cli.json 2>&1 | tee $OUT/bench_cli.txt | grep -v '^#' | tail -8
