#!/usr/bin/env bash
# Eighteenth session: after the last kernel edit (GB_CSTEP fixed at 4, the loop written for it), the new GPU
# tests and the GPU engine, LD and realistic tests (both counting paths).
. scripts/device/env.sh
timeout 420 python3 -m pytest -q tests/test_gpu_missing_lists.py tests/test_gpu_engine.py tests/test_gpu_ld.py tests/test_gpu_realistic.py 2>&1 | tail -4 | tee $OUT/tests_final.txt
