#!/usr/bin/env bash
# Device run (lead), issue 18: GPU tests FIRST (stops on a failure), the kernel at 0 / 0.1 / 1 / 5 %
# missing calls (default build beside the float64-epilogue build, counting-only roofline), then the
# LAST tests. Usage on the device: [FIRST=...] [LAST=...] [MISSING="0 0.01"] [SIZE=200000] bash scripts/device/issue18.sh
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD:$PWD/tests:/tmp/site || exit
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p $OUT
FIRST=${FIRST-tests/test_gpu_engine.py}
LAST=${LAST-tests/test_gpu_tensor.py tests/test_overlap.py tests/test_gpu_ld.py}
if [ -n "$FIRST" ]; then
  python3 -m pytest -q -x -rs -p no:cacheprovider $FIRST 2>&1 > $OUT/first.txt; tail -4 $OUT/first.txt
  grep -qE "[0-9]+ (failed|error)" $OUT/first.txt && { grep -E "^E |Error|assert" $OUT/first.txt | head -30; exit 1; }
fi
SIZE=${SIZE:-200000}
for m in ${MISSING-0 0.001 0.01 0.05}; do
  python3 bench/bench_gpu.py --sizes $SIZE --n 5000 --missing $m --countings mma --variant-size $SIZE \
    --variants "${VARIANTS:-mma f64 epilogue}" --no-cpu --roofline-size $SIZE --json $OUT/bench_gpu_m$m.json > $OUT/bench_gpu_m$m.txt 2>&1
  echo "== missing $m"; grep -E "^gpu|^roofline|ceiling:" $OUT/bench_gpu_m$m.txt | cut -c1-200
done
if [ -n "$LAST" ]; then
  python3 -m pytest -q -rs -p no:cacheprovider $LAST > $OUT/last.txt 2>&1; tail -6 $OUT/last.txt
fi
