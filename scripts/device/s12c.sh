#!/usr/bin/env bash
# Device run (lead, 2026-11-26, eleventh session): issue 18. The no-table float32 pre-screen with
# brackets by shares (0481f0a) where the table does not fit, A/B against 105a133 (ab_old_base: float64
# epilogue there) and against the same tree with the no-table build at every n (ab_sfu2: sfu_xlogx 2, so
# also at 5k), then the two GPU test files on this tree.
# Prediction: 60k x 50k 0.2465 -> ~0.19 s (E 2.64 -> 0.85: far fewer float64 candidates); 5k rows:
# ab_sfu2 within +-3 % of . (27 MUFU a pair instead of 9 plus 18 table reads).
. scripts/device/env.sh
timeout 280 python3 bench/ab_kernels.py --trees . ab_old_base ab_sfu2 --rows 60000:50000:0 60000:20000:0 60000:20000:0.01 150000:5000:0 150000:5000:0.01 --rounds 2 2>&1 | tee $OUT/ab.txt | tail -7
timeout 270 python3 -m pytest -q -x -m gpu tests/test_gpu_tensor.py tests/test_gpu_engine.py -p no:cacheprovider 2>&1 | tee $OUT/gpu_tests.txt | tail -4
