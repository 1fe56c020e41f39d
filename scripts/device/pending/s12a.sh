#!/usr/bin/env bash
# Prepared in the tenth session (2026-11-26) for the next one, NOT run: its device budget was spent.
# f64_parked_cells.patch: with 32 rows a warp, the float64 build's <2,2> kernel (n >= ~12.8k samples,
# where issue 18's goal 2 is measured) parks both row tiles' cells over its ring and runs the float64
# epilogue from there, without its 64 accumulators live: ptxas spills 228 -> 4 bytes a thread (nvcc
# 13.0, sm_90, offline). Prediction: the epilogue at 60k x 50k back from ~0.104-0.11 s toward the 0.084 s
# it took with 16 x 16 warps, the kernel 0.245 -> ~0.23 s (~3.9-4.0e14 pair·samples/s, goal 4e14).
# On this machine first:  git apply scripts/device/pending/f64_parked_cells.patch
#                          rm -rf ab_old_base && mkdir ab_old_base && git archive HEAD gboost bench | tar -x -C ab_old_base
# then run this with carry [".whl", "ab_old_base"]; keep the patch only if it wins, else delete it.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD:$PWD/tests:/tmp/site || exit
export PYTHONUNBUFFERED=1 QT_QPA_PLATFORM=offscreen
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv,noheader
mkdir -p $OUT
timeout 200 python3 bench/ab_kernels.py --trees . ab_old_base --rows 60000:50000:0 60000:20000:0 200000:5000:0 --rounds 2 2>&1 | tee $OUT/ab.txt | tail -5
timeout 330 python3 -m pytest -q -x -m gpu tests/test_gpu_engine.py tests/test_gpu_tensor.py -p no:cacheprovider 2>&1 | tee $OUT/gpu_tests.txt | tail -4
