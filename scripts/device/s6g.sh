#!/usr/bin/env bash
# Device run (lead, 2026-11-26, sixth session): the GPU suite after this session's edits, then the
# command at 500k x 5k (0 and 1 % missing, best of 3) and, on the same machine, the tree before the
# session (628be2f, copied to ab_old_628be2f/ for this run only) without missing calls: the A/B of
# the .bed's readers and the passes on the cores they leave.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD:$PWD/tests:/tmp/site || exit
export PYTHONUNBUFFERED=1 QT_QPA_PLATFORM=offscreen
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
mkdir -p $OUT
python3 -m gboost.cli warm 2>&1 | tail -1
timeout 250 python3 -m pytest -q -rs -p no:cacheprovider -p no:logging -m gpu --ignore=tests/gui tests/ > $OUT/gpu_tests.txt 2>&1; grep -E "passed|failed|FAILED|ERROR" $OUT/gpu_tests.txt | tail -15
timeout 200 python3 bench/bench_cli.py --sizes 500000 --n 5000 --missing 0,0.01 --device gpu --maker fast --repeat 3 --json $OUT/bench_cli.json 2>&1 | tee $OUT/bench_cli.txt | grep -v '^#' | tail -8
[ -d ab_old_628be2f ] && GBOOST_COMMIT=628be2f timeout 120 python3 bench/bench_cli.py --repo ab_old_628be2f --sizes 500000 --n 5000 --missing 0 --device gpu --maker fast --repeat 3 --no-engine 2>&1 | tee $OUT/bench_cli_628be2f.txt | grep -v '^#' | tail -4
