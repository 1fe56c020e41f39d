#!/usr/bin/env bash
# Device run (lead, 2026-11-26, tenth session), issue 18: warps of 32 x 16 (s11b) with the kernels of
# missing calls back on their own, smaller parking areas (their L1 as before), against 5429cd8; the
# counting-only builds at n = 20k and 50k beside; then the GPU suite on this tree.
. scripts/device/env.sh
timeout 200 python3 bench/ab_kernels.py --trees . ab_old_5429cd8 --rows 200000:5000:0 200000:5000:0.01 60000:20000:0 60000:50000:0 --rounds 2 2>&1 | tee $OUT/ab.txt | tail -5
timeout 100 python3 bench/ab_kernels.py --trees . ab_old_5429cd8 --rows 60000:20000:0 60000:50000:0 --count-only --rounds 2 2>&1 | tee $OUT/ab_count.txt | tail -5
timeout 280 python3 -m pytest -q -x -m gpu tests -p no:cacheprovider 2>&1 | tee $OUT/gpu_tests.txt | tail -4
