#!/usr/bin/env bash
# Device run (lead, 2026-11-26, fifth session): the CUDA contexts ended as the command's last stage
# (gpu_end) — first the bare teardown probe with and without cudaDeviceReset, then the whole GPU
# suite after this edit, then the command at 500k x 5k (0 and 1 % missing, best of 3).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD:$PWD/tests:/tmp/site || exit
export PYTHONUNBUFFERED=1 QT_QPA_PLATFORM=offscreen
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
mkdir -p $OUT
python3 -m gboost.cli warm 2>&1 | tail -1
for k in 1 2; do for w in none gpu reset; do
  t=$(date +%s%N); python3 bench/probe_teardown.py $w | tr '\n' ' '; echo "   outside $(( ($(date +%s%N) - t) / 1000000 )) ms"
done; done
timeout 260 python3 -m pytest -q -rs -p no:cacheprovider -p no:logging -m gpu --ignore=tests/gui tests/ > $OUT/gpu_tests.txt 2>&1; grep -E "passed|failed|FAILED|ERROR" $OUT/gpu_tests.txt | tail -15
timeout 200 python3 bench/bench_cli.py --sizes 500000 --n 5000 --missing 0,0.01 --device gpu --maker fast --repeat 3 --json $OUT/bench_cli.json 2>&1 | tee $OUT/bench_cli.txt | grep -v '^#' | tail -8
