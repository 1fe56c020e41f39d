#!/usr/bin/env bash
# Device run (lead, 2026-11-27, twelfth session): issue 18. The planes' fragment-native copy for the missing-call
# modes with missing rows (gm_screen_32f/33f: one 16-byte load a type and operand a k-step, MmaCounting.frag)
# in this tree, against 1c4d0db (ab_old_base: the session's kernels before it), then the two GPU test files.
# Prediction (s13c's probe: the counting of 200k x 5k 1 % 0.671 -> 0.600 s with such loads): 200k x 5k 1 %
# 1.280 -> ~1.21 s (-5 %), 60k x 20k 1 % -3 %; no change without missing calls (no copy is made).
. scripts/device/env.sh
timeout 300 python3 bench/ab_kernels.py --trees . ab_old_base --rows 200000:5000:0.01 500000:5000:0.01 60000:20000:0.01 200000:5000:0 --rounds 2 2>&1 | tee $OUT/ab.txt | tail -5
timeout 280 python3 -m pytest -q -x -m gpu tests/test_gpu_tensor.py tests/test_gpu_engine.py -p no:cacheprovider 2>&1 | tee $OUT/gpu_tests.txt | tail -3
