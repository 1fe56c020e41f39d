#!/usr/bin/env bash
# Device run (lead, 2026-11-27, twelfth session): the GPU suite beyond the two files s13e ran on a67f607 (the
# fragment-native copy), then the command at 500k x 5k with and without 1 % missing calls on it.
. scripts/device/env.sh
timeout 280 python3 -m pytest -q -m gpu tests --ignore=tests/test_gpu_engine.py --ignore=tests/test_gpu_tensor.py -p no:cacheprovider 2>&1 | tee $OUT/gpu_tests.txt | tail -3
python3 -m gboost.cli warm 2>&1 | tail -1
timeout 200 python3 bench/bench_cli.py --sizes 500000 --n 5000 --missing 0.01,0 --device gpu --maker fast --repeat 2 --json $OUT/bench_cli.json 2>&1 | tee $OUT/bench_cli.txt | grep -v '^#' | tail -8
