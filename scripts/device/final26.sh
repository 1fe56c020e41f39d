#!/usr/bin/env bash
# Device run (lead, 2026-11-26), in calls back to back on one warm H100:
#   PART=a: gboost warm (bytecode, numba, NVRTC), the GPU suite, the command at 500k x 5k (0 and
#           1 % missing, best of 2) with the GPU started early (default) and, for the A/B, not.
#   PART=b: biobank scale, 200k x 200k (issue 21).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD:$PWD/tests:/tmp/site || exit
export PYTHONUNBUFFERED=1 QT_QPA_PLATFORM=offscreen
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p $OUT
python3 -m gboost.cli warm 2>&1 | tail -1
if [ "${PART:-a}" = a ]; then
  timeout 300 python3 -m pytest -q -rs -p no:cacheprovider -p no:logging -m gpu --ignore=tests/gui tests/ 2>&1 | tee $OUT/gpu_tests.txt | grep -E "passed|failed|FAILED|ERROR|SKIPPED" | tail -25
  timeout 150 python3 bench/bench_cli.py --sizes 500000 --n 5000 --missing 0,0.01 --device gpu --maker fast --repeat 2 --json $OUT/bench_cli.json 2>&1 | tee $OUT/bench_cli.txt | grep -v '^#' | tail -8
  GBOOST_EARLY_GPU=0 timeout 100 python3 bench/bench_cli.py --sizes 500000 --n 5000 --missing 0,0.01 --device gpu --maker fast --repeat 2 --no-engine --json $OUT/bench_cli_late.json 2>&1 | tee $OUT/bench_cli_late.txt | grep -v '^#' | tail -6
  timeout 60 python3 bench/bench_load.py --bfile /tmp/gboost-bench/fast_p500000_n5000_m0.01 --repeats 2 2>&1 | tail -6
  timeout 60 python3 bench/bench_write.py --threads 1,4,16 --repeat 3 --check 2>&1 | tee $OUT/bench_write.txt | tail -8
else
  timeout 560 python3 bench/bench_biobank.py 2>&1 | tee $OUT/bench_biobank.txt | tail -30
fi
