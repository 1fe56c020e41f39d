#!/usr/bin/env bash
# Eighteenth session, 2026-11-27: the CUDA-core path's missing calls counted by correction (mode 4,
# gboost/engines/gpu/missing_lists.py). Warm (compiles the new kernels), the new GPU tests, the GPU engine,
# LD and realistic tests (both counting paths), then the screen's kernel time corrected against direct.
. scripts/device/env.sh
( time python3 -m gboost.cli warm ) 2>&1 | tail -4
timeout 240 python3 -m pytest -q -x tests/test_gpu_missing_lists.py 2>&1 | tail -15 | tee $OUT/tests_lists.txt
timeout 300 python3 -m pytest -q tests/test_gpu_engine.py tests/test_gpu_ld.py tests/test_gpu_realistic.py 2>&1 | tail -15 | tee $OUT/tests_engine.txt
timeout 200 python3 bench/bench_popc_missing.py --p 200000 --missing 0,0.01 --json $OUT/popc_missing.json 2>&1 | tee $OUT/popc_missing.txt
