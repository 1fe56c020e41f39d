#!/usr/bin/env bash
# Device run (lead, 2026-11-26, tenth session), issue 18: warps of 32 x 16 SNPs with both classes packed
# in the <2,2> ring (GM_TR=2, MmaConfig.warp_rows=32) against 16 x 16 with the classes apart (5429cd8,
# copied to ab_old_5429cd8/ for this run only and carried). First the kernel-correctness GPU tests on
# this tree, then the A/B (each tree in its own process, alternating, best of 2 launches a row).
. scripts/device/env.sh
timeout 240 python3 -m pytest -q -x -m gpu tests/test_gpu_engine.py tests/test_gpu_tensor.py -p no:cacheprovider 2>&1 | tee $OUT/gpu_tests.txt | tail -4
timeout 330 python3 bench/ab_kernels.py --trees . ab_old_5429cd8 --rows 200000:5000:0 200000:5000:0.01 60000:20000:0 60000:50000:0 --rounds 2 2>&1 | tee $OUT/ab.txt | tail -6
