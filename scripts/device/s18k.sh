#!/usr/bin/env bash
# Eighteenth session: the correction loop at 8 samples an iteration against 4 (A/B, one machine, two rounds).
. scripts/device/env.sh
timeout 300 python3 bench/bench_popc_missing.py --p 200000 --missing 0.001,0.01 --variants corrected,step8 --rounds 2 \
  2>&1 | tee $OUT/step8.txt
