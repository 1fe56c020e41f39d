#!/usr/bin/env bash
# Eighteenth session: SPEC §7's CUDA-core row on the final code (as s18c), the command on the realistic cohort.
. scripts/device/env.sh
export GBOOST_COMMIT=$(cat .commit 2>/dev/null || echo "?")
GBOOST_GPU_COUNTING=popc timeout 400 python3 bench/bench_cli.py --sizes 500000 --n 5000 --missing 0.01,0 --device gpu \
  --maker realistic --repeat 1 --no-engine --dir /tmp/b18 --json $OUT/cli_popc.json 2>&1 | tee $OUT/cli_popc.txt | tail -7
