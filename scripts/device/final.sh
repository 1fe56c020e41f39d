#!/usr/bin/env bash
# Device run (lead), in two calls back to back on one warm H100:
#   PART=a: the GPU suite, then the 200k x 5k kernel at 1 % missing (the package split: no slower);
#   PART=b: the command at 500k x 5k (0 and 1 % missing), the QT GPU bench (quick), biobank (quick).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD:$PWD/tests:/tmp/site || exit
export PYTHONUNBUFFERED=1 QT_QPA_PLATFORM=offscreen
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p $OUT
if [ "${PART:-a}" = a ]; then
  timeout 330 python3 -m pytest -q -rs -p no:cacheprovider -p no:logging -m gpu --ignore=tests/gui tests/ 2>&1 | tee $OUT/gpu_tests.txt | grep -E "passed|failed|FAILED|ERROR|SKIPPED" | tail -25
  timeout 150 python3 bench/bench_gpu.py --sizes 200000 --n 5000 --missing 0.01 --no-cpu --countings mma 2>&1 | tee $OUT/bench_gpu_200k.txt | tail -6
else
  timeout 200 python3 bench/bench_cli.py --sizes 500000 --n 5000 --missing 0,0.01 --device gpu --maker fast --json $OUT/bench_cli.json 2>&1 | tee $OUT/bench_cli.txt | grep -v '^#' | tail -12
  timeout 110 python3 bench/bench_qt.py ${QT_ARGS:---gpu --quick --no-plink} 2>&1 | tee $OUT/bench_qt.txt | tail -12
  timeout 150 python3 bench/bench_biobank.py --quick 2>&1 | tee $OUT/bench_biobank.txt | tail -16
fi
