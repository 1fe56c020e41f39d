#!/usr/bin/env bash
# Device run (lead): the GPU suite, then the command benchmark; a short table at the end.
# Usage on the device: bash scripts/device/gpu_check.sh [pytest args...]
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD:$PWD/tests:/tmp/site || exit
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p $OUT
if [ "${TESTS:-1}" = 1 ]; then  # every test marked gpu, and those that exercise the GPU engine's host side
  python3 -m pytest -q -rs -p no:cacheprovider -m gpu --ignore=tests/gui tests/ "$@" 2>&1 | tee $OUT/gpu_tests.txt | tail -15
  python3 -m pytest -q -rs -p no:cacheprovider tests/test_overlap.py tests/test_tiles.py 2>&1 | tail -3
fi
if [ "${BENCH:-1}" = 1 ]; then
  python3 bench/bench_cli.py --sizes ${SIZES:-100000,500000} --n 5000 --missing 0,0.01 --device gpu --json $OUT/bench_cli.json 2>&1 | tee $OUT/bench_cli.txt | grep -v '^#'
fi
