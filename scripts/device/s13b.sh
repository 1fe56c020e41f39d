#!/usr/bin/env bash
# Device run (lead, 2026-11-27, twelfth session): issue 18. The missing-call pre-screen (gm_ksa32m) takes its
# counts as floats straight from the parked words and sums each margin once on the packed words, instead of
# unpacking 18 ints, summing 12 class margins and converting ~50 counts a pair (this tree), against 26202a0
# (ab_old_base); then the two GPU test files on this tree.
# Prediction: PTX of gm_screen_33 8568 -> 8088 instructions (-5.6 %), spills 56 -> 48 bytes (23, 32: to 0);
# the pre-screen is ~36 % of the kernel's instructions and the kernel is issue- and latency-bound, so ~2-4 %
# off 200k x 5k with missing calls; nothing on the fully called rows (60k x 20k: one add a bracket).
. scripts/device/env.sh
timeout 300 python3 bench/ab_kernels.py --trees . ab_old_base --rows 200000:5000:0.01 200000:5000:0.001 500000:5000:0.01 60000:20000:0.01 60000:20000:0 --rounds 2 2>&1 | tee $OUT/ab.txt | tail -8
timeout 280 python3 -m pytest -q -x -m gpu tests/test_gpu_tensor.py tests/test_gpu_engine.py -p no:cacheprovider 2>&1 | tee $OUT/gpu_tests.txt | tail -3
