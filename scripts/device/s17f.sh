#!/usr/bin/env bash
# Seventeenth session, 2026-11-27: the GPU path after best_ties.tie_classes (PLINK's BEST_SNP among every partner
# in a small study; finalize's host code, the same for both engines): the GPU tests of the tie repair and of a
# realistic cohort, then the GPU engine against the CPU engine on bench/gpu_cpu_sweep.py's small random studies.
. scripts/device/env.sh
( time python3 -m gboost.cli warm ) 2>&1 | tail -4
timeout 200 python3 -m pytest -q -rfE -m gpu tests/test_best_ties.py tests/test_gpu_realistic.py tests/test_gpu_ld.py -p no:cacheprovider 2>&1 | tee $OUT/gpu_tests.txt | tail -3
timeout 200 python3 bench/gpu_cpu_sweep.py --seeds 1-60 2>&1 | tee $OUT/gpu_cpu_sweep.txt | tail -3
