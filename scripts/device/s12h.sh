#!/usr/bin/env bash
# Device run (lead, 2026-11-27, eleventh session): issue 18. The brackets by shares in bits with one ln 2
# a pair and fused shares (this tree) against 672f7c2 (ab_old_s12d), then the two GPU test files.
# Prediction: 1-3 % off the kernels that take shares (150k x 5k with 1 % missing, 60k x 50k), none at
# 150k x 5k without missing calls (the table build, unchanged).
. scripts/device/env.sh
timeout 240 python3 bench/ab_kernels.py --trees . ab_old_s12d --rows 150000:5000:0.01 60000:50000:0 60000:20000:0.01 150000:5000:0 --rounds 3 2>&1 | tee $OUT/ab.txt | tail -7
timeout 280 python3 -m pytest -q -x -m gpu tests/test_gpu_tensor.py tests/test_gpu_engine.py -p no:cacheprovider 2>&1 | tee $OUT/gpu_tests.txt | tail -3
