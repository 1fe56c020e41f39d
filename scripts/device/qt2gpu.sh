#!/usr/bin/env bash
# Device run (lead, 2026-11-26) on two H100s: the QT engine on several GPUs (issue 22): its
# gpu-marked tests, then 500k x 5k on both GPUs.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD:$PWD/tests:/tmp/site || exit
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p $OUT
python3 -m gboost.cli warm 2>&1 | tail -1
timeout 150 python3 -m pytest -q -rs -p no:cacheprovider -m gpu tests/test_qt_gpu.py tests/test_qt_parts.py 2>&1 | tee $OUT/qt_gpu_tests.txt | tail -6
timeout 420 python3 bench/bench_qt.py --gpu --no-plink --snps 1500 --samples 1000 --repeat 1 --gpu-sizes 500000 --gpus 0,1 2>&1 | tee $OUT/bench_qt_500k_2gpu.txt | tail -8
