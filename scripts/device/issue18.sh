#!/usr/bin/env bash
# Device run (lead), issue 18: the tensor-core tests, the kernel at 0 / 0.1 / 1 / 5 % missing calls
# (default build beside the float64-epilogue build, counting-only roofline), then the rest of the GPU suite.
# Usage on the device: bash scripts/device/issue18.sh   (SIZE=200000 by default)
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD:$PWD/tests:/tmp/site || exit
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p $OUT
python3 -m pytest -q -x -rs -p no:cacheprovider tests/test_gpu_tensor.py 2>&1 | tee $OUT/gpu_tensor.txt | tail -6
grep -qE "[0-9]+ failed|error" $OUT/gpu_tensor.txt && exit 1
SIZE=${SIZE:-200000}
for m in ${MISSING:-0 0.001 0.01 0.05}; do
  python3 bench/bench_gpu.py --sizes $SIZE --n 5000 --missing $m --countings mma --variant-size $SIZE \
    --variants "mma f64 epilogue" --no-cpu --roofline-size $SIZE --json $OUT/bench_gpu_m$m.json > $OUT/bench_gpu_m$m.txt 2>&1
  echo "== missing $m"; grep -E "^gpu|roofline|ceiling:" $OUT/bench_gpu_m$m.txt | cut -c1-200
done
if [ "${SUITE:-1}" = 1 ]; then
  python3 -m pytest -q -rs -p no:cacheprovider tests/test_gpu_engine.py tests/test_overlap.py tests/test_gpu_ld.py 2>&1 | tee $OUT/gpu_rest.txt | tail -6
fi
