#!/usr/bin/env bash
# Nineteenth session: the lists' GPU tests, the GPU engine's and the realistic cohort's after the last edits of GPU
# code: run on a0c2813 (a docstring of DeviceLists.add), then on 5b70bf5 (GpuEngine.listed_snps dropped; reverted).
. scripts/device/env.sh
( time python3 -m gboost.cli warm ) 2>&1 | tail -3
timeout 400 python3 -m pytest -q tests/test_gpu_missing_lists.py tests/test_gpu_engine.py tests/test_gpu_realistic.py 2>&1 | tail -4 | tee $OUT/tests_final.txt
