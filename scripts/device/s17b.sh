#!/usr/bin/env bash
# Seventeenth session, 2026-11-27: SPEC §7's CUDA-core fallback row (>= 2e13 pair·samples/s, <= 32 s at 500k x 5k)
# on the data §7 now names, 1 % missing calls, measured as the command (never before with missing calls): the
# realistic cohort of bench_cli.py, GBOOST_GPU_COUNTING=popc, then the same with no missing calls.
. scripts/device/env.sh
( time python3 -m gboost.cli warm ) 2>&1 | tail -4
GBOOST_GPU_COUNTING=popc timeout 420 python3 bench/bench_cli.py --sizes 500000 --n 5000 --missing 0.01,0 --device gpu \
  --maker realistic --repeat 1 --no-engine --dir /tmp/b17 --json $OUT/cli_popc.json 2>&1 | tee $OUT/cli_popc.txt | tail -12
