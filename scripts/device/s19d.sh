#!/usr/bin/env bash
# Nineteenth session: the CUDA-core path (GBOOST_GPU_COUNTING=popc: blocks with missing calls counted by correction,
# mode 4, where the study's lists allow) against the CPU engine on bench/gpu_cpu_sweep.py's random realistic studies
# and flags, all four data files byte for byte.
. scripts/device/env.sh
export GBOOST_COMMIT=$(cat .commit 2>/dev/null || echo "?")
( time python3 -m gboost.cli warm ) 2>&1 | tail -4
GBOOST_GPU_COUNTING=popc timeout 440 python3 bench/gpu_cpu_sweep.py --seeds 1-130 2>&1 | tee $OUT/gpu_cpu_sweep_popc.txt | tail -8
