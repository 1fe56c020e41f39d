#!/usr/bin/env bash
# Device run (lead, 2026-11-26, ninth session): the GPU suite on 03b7eb6 (the <2,2> ring's addresses;
# the engine's end releasing the driver's files), then what the warps wait on (Nsight Compute's stall
# reasons per issued instruction) in the counting-only gm_screen_22 at 8k SNPs x 50k samples and the
# default gm_screen_33 at 20k x 5k with 1 % missing calls (issue 18).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD:$PWD/tests:/tmp/site || exit
export PYTHONUNBUFFERED=1 QT_QPA_PLATFORM=offscreen
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p $OUT
python3 -m gboost.cli warm 2>&1 | tail -1
timeout 270 python3 -m pytest -q -rs -p no:cacheprovider -p no:logging -m gpu --ignore=tests/gui tests/ > $OUT/gpu_tests.txt 2>&1; grep -E "passed|failed|FAILED|ERROR" $OUT/gpu_tests.txt | tail -15
M='regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio'
for spec in "gm_screen_22|--p 8000 --n 50000 --missing 0 --count-only" "gm_screen_33|--p 20000 --n 5000 --missing 0.01"; do
  k=${spec%%|*}; a=${spec#*|}
  python3 bench/ncu_target.py $a >/dev/null 2>&1
  timeout 100 ncu --clock-control none -k regex:$k -c 1 --metrics "$M" python3 bench/ncu_target.py $a > $OUT/stalls_$k.txt 2>&1
  echo "== $k $a"; grep -E "stalled" $OUT/stalls_$k.txt | awk '{print $1, $NF}' | sort -k2 -g -r | head -12
done
