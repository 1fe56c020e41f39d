#!/usr/bin/env bash
# Device run (lead, 2026-11-26, tenth session): the final tree of issue 18's warp tiles of 32 x 16.
# The command at 500k x 5k without and with 1 % missing calls (engine-only run beside), then the rest
# of the GPU suite (test_gpu_engine.py and test_gpu_tensor.py passed on this kernel source in s11d).
. scripts/device/env.sh
python3 -m gboost.cli warm 2>&1 | tail -1
timeout 200 python3 bench/bench_cli.py --sizes 500000 --n 5000 --missing 0,0.01 --device gpu --maker fast --repeat 2 --json $OUT/bench_cli.json 2>&1 | tee $OUT/bench_cli.txt | grep -v '^#' | tail -8
timeout 290 python3 -m pytest -q -m gpu tests --ignore=tests/test_gpu_engine.py --ignore=tests/test_gpu_tensor.py -p no:cacheprovider 2>&1 | tee $OUT/gpu_tests.txt | tail -5
