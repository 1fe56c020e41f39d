#!/usr/bin/env bash
# Device run (lead, 2026-11-26, eleventh session): issue 18 goal 1, the cost of correcting for missing
# calls on the CUDA cores (bench/missing_correction.py, bench/kernels/missing_correction.cu): its GPU test
# (counts against NumPy's integer products), then its seconds at 200k x 5k with 1 %, 5 % and 0.1 %.
# Prediction: ~1.7M lane operations a block of 128 x 64 SNPs -> ~0.14 s at 200k if the ALUs bound it,
# 0.15-0.4 s with its loads; the 9-product kernel's extra over the 4-product one is 0.71 s (s12f).
. scripts/device/env.sh
timeout 120 python3 -m pytest -q -m gpu tests/test_missing_correction.py -p no:cacheprovider 2>&1 | tee $OUT/gpu_tests.txt | tail -3
timeout 300 python3 bench/missing_correction.py --p 200000 --n 5000 --missing 0.01 0.05 0.001 2>&1 | tee $OUT/corrections.txt
