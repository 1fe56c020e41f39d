#!/usr/bin/env bash
# Device run (lead, 2026-11-26, eleventh session): the command at 500k x 5k with and without 1 % missing
# calls on 672f7c2's kernels (issues 24 and 18 goal 3), then the GPU suite beyond the two files s12d ran.
. scripts/device/env.sh
python3 -m gboost.cli warm 2>&1 | tail -1
timeout 200 python3 bench/bench_cli.py --sizes 500000 --n 5000 --missing 0,0.01 --device gpu --maker fast --repeat 2 --json $OUT/bench_cli.json 2>&1 | tee $OUT/bench_cli.txt | grep -v '^#' | tail -8
timeout 300 python3 -m pytest -q -m gpu tests --ignore=tests/test_gpu_engine.py --ignore=tests/test_gpu_tensor.py -p no:cacheprovider 2>&1 | tee $OUT/gpu_tests.txt | tail -5
