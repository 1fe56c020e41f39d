#!/usr/bin/env bash
# Device run (lead, 2026-11-27, thirteenth session): the whole GPU suite after the runner's allocation retry
# (e2c6872: planes that cannot be allocated with the fragment-native copy are allocated without it), then
# Nsight Compute on one launch of gm_screen_33f, the final kernel of the modes with missing calls.
. scripts/device/env.sh
timeout 450 python3 -m pytest -q -m gpu tests -p no:cacheprovider 2>&1 | tee $OUT/gpu_tests.txt | tail -3
KERNEL=gm_screen_33f ARGS="--p 20000 --missing 0.01" timeout 130 bash scripts/device/ncu.sh 2>&1 | tail -60
