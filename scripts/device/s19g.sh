#!/usr/bin/env bash
# Nineteenth session: after the last edits of GPU code (a docstring of missing_lists.DeviceLists.add; then 5b70bf5,
# the unread GpuEngine.listed_snps dropped), the lists' GPU tests, the GPU engine's and the realistic cohort's.
. scripts/device/env.sh
( time python3 -m gboost.cli warm ) 2>&1 | tail -3
timeout 400 python3 -m pytest -q tests/test_gpu_missing_lists.py tests/test_gpu_engine.py tests/test_gpu_realistic.py 2>&1 | tail -4 | tee $OUT/tests_final.txt
