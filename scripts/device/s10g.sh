#!/usr/bin/env bash
# Device run (lead, 2026-11-26, ninth session): the GPU suite on 46f6a9d (every GPU edit of the
# session), the command at 500k x 5k with 0 and 1 % missing calls (best of 2, engine-only runs beside),
# and the issue 18 rows at 200k x 5k with 0 and 1 % missing calls (rooflines in the same run).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD:$PWD/tests:/tmp/site || exit
export PYTHONUNBUFFERED=1 QT_QPA_PLATFORM=offscreen
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
mkdir -p $OUT
python3 -m gboost.cli warm 2>&1 | tail -1
timeout 260 python3 -m pytest -q -rs -p no:cacheprovider -p no:logging -m gpu --ignore=tests/gui tests/ > $OUT/gpu_tests.txt 2>&1; grep -E "passed|failed|FAILED|ERROR" $OUT/gpu_tests.txt | tail -15
timeout 170 python3 bench/bench_cli.py --sizes 500000 --n 5000 --missing 0,0.01 --device gpu --maker fast --repeat 2 --json $OUT/bench_cli.json 2>&1 | tee $OUT/bench_cli.txt | grep -v '^#' | tail -8
for m in 0 0.01; do
  timeout 80 python3 bench/bench_gpu.py --sizes 200000 --n 5000 --missing $m --countings mma --no-cpu --variants "" \
      --roofline-size 200000 > $OUT/rows_m$m.txt 2>&1
  echo "== n 5000, missing $m"; grep -E "^ *200000|^roofline|ceiling:" $OUT/rows_m$m.txt | cut -c1-220
done
