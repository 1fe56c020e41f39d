#!/usr/bin/env bash
# Device run (lead, 2026-11-26, eleventh session): issue 18. 672f7c2 (the missing-call pre-screen by
# shares at every n, no table in those kernels) against 0481f0a (ab_old_s12c: shares only where the
# table does not fit) and 105a133 (ab_old_base), then the two GPU test files on this tree.
# Prediction: 150k x 5k 1 % missing ~1.6 % below ab_old_s12c (s12c's ab_sfu2 tree), no change without
# missing calls; 60k x 50k ~0.221 s as in s12c.
. scripts/device/env.sh
timeout 250 python3 bench/ab_kernels.py --trees . ab_old_s12c ab_old_base --rows 150000:5000:0.01 150000:5000:0 60000:50000:0 60000:20000:0.01 --rounds 2 2>&1 | tee $OUT/ab.txt | tail -7
timeout 280 python3 -m pytest -q -x -m gpu tests/test_gpu_tensor.py tests/test_gpu_engine.py -p no:cacheprovider 2>&1 | tee $OUT/gpu_tests.txt | tail -4
