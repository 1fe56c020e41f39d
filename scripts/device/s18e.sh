#!/usr/bin/env bash
# Eighteenth session: the screen with the break-even rule at 0 / 0.1 / 1 / 5 % missing calls (corrected
# against direct), then SPEC §7's CUDA-core row as the command on the realistic cohort (as s17b, s18c).
. scripts/device/env.sh
timeout 200 python3 bench/bench_popc_missing.py --p 200000 --missing 0,0.001,0.01,0.05 --variants corrected,direct \
  --json $OUT/popc_missing.json 2>&1 | tee $OUT/popc_missing.txt
GBOOST_GPU_COUNTING=popc timeout 300 python3 bench/bench_cli.py --sizes 500000 --n 5000 --missing 0.01,0 --device gpu \
  --maker realistic --repeat 1 --no-engine --dir /tmp/b18 --json $OUT/cli_popc.json 2>&1 | tee $OUT/cli_popc.txt | tail -7
