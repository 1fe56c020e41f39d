#!/usr/bin/env bash
# Device run (lead), issue 18: the tensor-core GPU tests, then the wgmma ring against the mma.sync ring.
# Usage: [TESTS="tests/test_gpu_tensor.py ..."] [SIZES=200000,500000] bash scripts/device/wg18.sh
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD:$PWD/tests:/tmp/site || exit
export PYTHONUNBUFFERED=1
mkdir -p $OUT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -m pytest -q -x -rs -p no:cacheprovider -m gpu ${TESTS:-tests/test_gpu_tensor.py tests/test_gpu_engine.py} 2>&1 | tee $OUT/gpu_tests.txt | tail -8
for m in ${MISSING:-0 0.01}; do
python3 bench/bench_gpu.py --sizes ${SIZES:-200000,500000} --n 5000 --missing $m --countings mma --no-cpu \
  --variant-size ${VSIZE:-500000} --variants "mma.sync ring (no wgmma)" 2>&1 | tee $OUT/bench_gpu_m$m.txt | grep -E "^(gpu|engine|device|tensor)"
done
