#!/usr/bin/env bash
# Device run (lead, 2026-11-26, fifth session) on two GPUs: the pinner's GPU tests after the
# small-pieces test was put on GPU 0 alone, and every test that needs two GPUs.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD:$PWD/tests:/tmp/site || exit
export PYTHONUNBUFFERED=1 QT_QPA_PLATFORM=offscreen NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
mkdir -p $OUT
python3 -m gboost.cli warm 2>&1 | tail -1
P="python3 -m pytest -q -rs -p no:cacheprovider -p no:logging -m gpu"
timeout 60 $P tests/test_pinned_pieces.py > $OUT/gpu_tests_pinned_2gpu.txt 2>&1; tail -1 $OUT/gpu_tests_pinned_2gpu.txt
timeout 240 $P tests/test_dask.py tests/test_gpu_engine.py tests/test_qt_gpu.py tests/test_qt_parts.py \
  -k "two or gpus_0_1 or local_gpus" > $OUT/gpu_tests_two_2gpu.txt 2>&1; grep -E "passed|failed|FAILED|ERROR|SKIP" $OUT/gpu_tests_two_2gpu.txt | tail -8
