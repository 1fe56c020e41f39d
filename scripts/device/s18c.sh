#!/usr/bin/env bash
# Eighteenth session: SPEC §7's CUDA-core row with missing calls counted by correction (three blocks per SM):
# the command on the realistic cohort (as s17b), then the screen at 0 / 0.1 / 1 / 5 % missing calls,
# corrected against direct.
. scripts/device/env.sh
GBOOST_GPU_COUNTING=popc timeout 330 python3 bench/bench_cli.py --sizes 500000 --n 5000 --missing 0.01,0 --device gpu \
  --maker realistic --repeat 1 --no-engine --dir /tmp/b18 --json $OUT/cli_popc.json 2>&1 | tee $OUT/cli_popc.txt | tail -14
timeout 240 python3 bench/bench_popc_missing.py --p 200000 --missing 0,0.001,0.01,0.05 --variants corrected,direct,minb2 \
  --json $OUT/popc_missing.json 2>&1 | tee $OUT/popc_missing.txt
