#!/usr/bin/env bash
# (Tried and reverted after this run: kernel time equal within 0.03 %; docs/PERFORMANCE.md, issue 18, fourteenth round.)
# Seventeenth session, 2026-11-27: issue 18. The fragment-native copy's lanes reordered so that a B fragment is
# one 8-byte load (words 2h, 2h + 1) instead of half of a 16-byte one (words h, h + 2); the A fragment is the
# same 16-byte load with its registers renamed. ptxas (offline, nvcc 13): gm_screen_33f's spills 48/64 -> 36/48
# bytes, gm_screen_32f's 16/24 -> 4/8. Prediction: the missing-call kernel 0.5-3 % shorter (ncu, thirteenth round:
# global loads used 15.9 of each sector's 32 bytes, but the kernel is latency-bound, not bound by L1).
# This tree against f02f756's gboost/ (ab_pre17), then the GPU test files that run the copy.
. scripts/device/env.sh
timeout 240 python3 bench/ab_kernels.py --trees . ab_pre17 --rows 200000:5000:0.01 500000:5000:0.01 --rounds 2 2>&1 | tee $OUT/ab.txt | tail -5
timeout 330 python3 -m pytest -q -x -m gpu tests/test_gpu_tensor.py tests/test_gpu_engine.py tests/test_gpu_realistic.py -p no:cacheprovider 2>&1 | tee $OUT/gpu_tests.txt | tail -3
