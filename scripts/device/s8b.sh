#!/usr/bin/env bash
# Device run (lead, 2026-11-26, seventh session): the GPU suite after this session's edits (the
# engine's check of the encoder per tile; the contexts ended beside the formatting; the row blocks'
# output rows formatted beside the screen), then the command at 500k x 5k (0 and 1 % missing, best
# of 3) and, on the same machine, the tree before those two host changes (d297b0c, copied to
# ab_old_d297b0c/ for this run only and carried) without missing calls: the A/B.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD:$PWD/tests:/tmp/site || exit
export PYTHONUNBUFFERED=1 QT_QPA_PLATFORM=offscreen
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
mkdir -p $OUT
python3 -m gboost.cli warm 2>&1 | tail -1
timeout 250 python3 -m pytest -q -rs -p no:cacheprovider -p no:logging -m gpu --ignore=tests/gui tests/ > $OUT/gpu_tests.txt 2>&1; grep -E "passed|failed|FAILED|ERROR" $OUT/gpu_tests.txt | tail -15
timeout 160 python3 bench/bench_cli.py --sizes 500000 --n 5000 --missing 0,0.01 --device gpu --maker fast --repeat 3 --json $OUT/bench_cli.json 2>&1 | tee $OUT/bench_cli.txt | grep -v '^#' | tail -8
[ -d ab_old_d297b0c ] && GBOOST_COMMIT=d297b0c timeout 120 python3 bench/bench_cli.py --repo ab_old_d297b0c --sizes 500000 --n 5000 --missing 0 --device gpu --maker fast --repeat 3 --no-engine 2>&1 | tee $OUT/bench_cli_d297b0c.txt | grep -v '^#' | tail -4
