#!/usr/bin/env bash
# Device run (lead, 2026-11-26, eighth session): the GPU suite after numba's light cache loads
# (gboost/numba_cache.py), the path to the first tile (bench_start.py, with the GIL's switch interval
# as a variant), the command at 500k x 5k (0 and 1 % missing, best of 3) and, on the same machine,
# the tree before the session (96e4a0c, copied to ab_old_96e4a0c/ for this run only and carried)
# without missing calls: the A/B. Then Nsight Compute's per-SASS-line counts of one gm_screen_33
# launch (20k x 5k, 1 % missing) and one gm_screen_22 launch (no missing) for issue 18.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD:$PWD/tests:/tmp/site || exit
export PYTHONUNBUFFERED=1 QT_QPA_PLATFORM=offscreen
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv,noheader
mkdir -p $OUT
python3 -m gboost.cli warm 2>&1 | tail -1
timeout 260 python3 -m pytest -q -rs -p no:cacheprovider -p no:logging -m gpu --ignore=tests/gui tests/ > $OUT/gpu_tests.txt 2>&1; grep -E "passed|failed|FAILED|ERROR" $OUT/gpu_tests.txt | tail -15
timeout 170 python3 bench/bench_cli.py --sizes 500000 --n 5000 --missing 0,0.01 --device gpu --maker fast --repeat 3 --json $OUT/bench_cli.json 2>&1 | tee $OUT/bench_cli.txt | grep -v '^#' | tail -8
P=/tmp/gboost-bench/fast_p500000_n5000_m0.0
[ -f $P.bed ] && timeout 60 python3 bench/bench_start.py $P > $OUT/bench_start.txt 2>&1; cat $OUT/bench_start.txt | tail -40
[ -d ab_old_96e4a0c ] && GBOOST_COMMIT=96e4a0c timeout 120 python3 bench/bench_cli.py --repo ab_old_96e4a0c --sizes 500000 --n 5000 --missing 0 --device gpu --maker fast --repeat 3 --no-engine 2>&1 | tee $OUT/bench_cli_96e4a0c.txt | grep -v '^#' | tail -4
for k in 33 22; do
  m=$([ $k = 33 ] && echo 0.01 || echo 0)
  python3 bench/ncu_target.py --p 20000 --missing $m --lineinfo >/dev/null 2>&1
  timeout 150 ncu --clock-control none -k regex:gm_screen_$k -c 1 --section SourceCounters --section InstructionStats --section WarpStateStats \
      --import-source no -o $OUT/src$k python3 bench/ncu_target.py --p 20000 --missing $m --lineinfo > $OUT/ncu_src$k.log 2>&1
  ncu -i $OUT/src$k.ncu-rep --page source --csv --print-source sass > $OUT/sass$k.csv 2>&1
  ls -la $OUT/sass$k.csv; head -c 600 $OUT/sass$k.csv; echo
done
ls -la $OUT
