#!/usr/bin/env bash
# Device run (lead, 2026-11-26, eighth session), issue 18: the counting loop of the modes with missing
# calls (gm_count_class: 32-bit word offsets, A fragments loaded word by word into place). The GPU
# suite first, then the command at 500k x 5k with 1 % and no missing calls for this tree and, on the
# same machine, the tree before it (96e4a0c, copied to ab_old_96e4a0c/ and carried), engine-only runs
# included; then Nsight Compute's instruction count of one gm_screen_33 launch (20k x 5k, 1 %).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD:$PWD/tests:/tmp/site || exit
export PYTHONUNBUFFERED=1 QT_QPA_PLATFORM=offscreen
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
mkdir -p $OUT
python3 -m gboost.cli warm 2>&1 | tail -1
timeout 270 python3 -m pytest -q -rs -p no:cacheprovider -p no:logging -m gpu --ignore=tests/gui tests/ > $OUT/gpu_tests.txt 2>&1; grep -E "passed|failed|FAILED|ERROR" $OUT/gpu_tests.txt | tail -15
for m in 0.01 0; do
  timeout 120 python3 bench/bench_cli.py --sizes 500000 --n 5000 --missing $m --device gpu --maker fast --repeat 2 --json $OUT/cli_new_m$m.json 2>&1 | grep -v '^#' | tail -3 | tee -a $OUT/bench_cli_ab.txt
  [ -d ab_old_96e4a0c ] && GBOOST_COMMIT=96e4a0c timeout 120 python3 bench/bench_cli.py --repo ab_old_96e4a0c --sizes 500000 --n 5000 --missing $m --device gpu --maker fast --repeat 2 2>&1 | grep -v '^#' | tail -3 | tee -a $OUT/bench_cli_ab.txt
done
python3 bench/ncu_target.py --p 20000 --missing 0.01 >/dev/null 2>&1
timeout 100 ncu --clock-control none -k regex:gm_screen_33 -c 1 --metrics smsp__inst_executed.sum,gpu__time_duration.sum,smsp__sass_inst_executed_op_global_ld.sum,smsp__sass_inst_executed_op_local_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum python3 bench/ncu_target.py --p 20000 --missing 0.01 2>&1 | grep -E "^\s+(smsp|gpu|l1tex)__" | tee $OUT/ncu33_new.txt
