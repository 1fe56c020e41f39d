#!/usr/bin/env bash
# Device run (lead, 2026-11-26, tenth session), issue 18: the kernels with missing calls taking the
# block in slices of 64 rows (a barrier between) and the <2,2> epilogues as one copy of their code
# (this tree), against s11c's tree (ab_cur/) and 5429cd8 (ab_old_5429cd8/); then the GPU tests of the
# kernels on this tree.
. scripts/device/env.sh
timeout 240 python3 bench/ab_kernels.py --trees . ab_cur ab_old_5429cd8 --rows 200000:5000:0 200000:5000:0.01 60000:20000:0 60000:50000:0 --rounds 1 2>&1 | tee $OUT/ab.txt | tail -4
timeout 320 python3 -m pytest -q -x -m gpu tests/test_gpu_engine.py tests/test_gpu_tensor.py -p no:cacheprovider 2>&1 | tee $OUT/gpu_tests.txt | tail -4
