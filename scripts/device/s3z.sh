#!/usr/bin/env bash
# Device run (lead, 2026-11-26, third session), two calls back to back on one warm machine:
#   PART=a: gboost warm, the GPU suite, the command at 500k x 5k (0 and 1 % missing, best of 2).
#   PART=b: biobank scale 200k x 200k, and the same study streamed through a forced budget (the
#           host planes page-locked in pieces beside the screen: gboost/engines/gpu/pinning.py).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD:$PWD/tests:/tmp/site || exit
export PYTHONUNBUFFERED=1 QT_QPA_PLATFORM=offscreen
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
mkdir -p $OUT
case "${PART:-a}" in
a)
  python3 -m gboost.cli warm 2>&1 | tail -1
  timeout 270 python3 -m pytest -q -rs -p no:cacheprovider -p no:logging -m gpu --ignore=tests/gui tests/ 2>&1 | tee $OUT/gpu_tests.txt | grep -E "passed|failed|FAILED|ERROR" | tail -25
  timeout 150 python3 bench/bench_cli.py --sizes 500000 --n 5000 --missing 0,0.01 --device gpu --maker fast --repeat 2 --json $OUT/bench_cli.json 2>&1 | tee $OUT/bench_cli.txt | grep -v '^#' | tail -8
  ;;
b)
  timeout 280 python3 bench/bench_biobank.py --skip sub --stream-snps 200000 --stream-samples 200000 2>&1 | tee $OUT/bench_biobank.txt | tail -22
  python3 -c "import json; d=json.load(open('/tmp/gboost_biobank/out_stream/run.json')); print('streamed engine_info', d['engine_info']); print('stages', {k: round(v, 2) for k, v in d['command_s']['stages'].items() if v > 0.005})"
  ;;
esac
