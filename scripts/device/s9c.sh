#!/usr/bin/env bash
# Device run (lead, 2026-11-26, eighth session), issue 18's bench rows at the current kernel (no GPU
# code changed since s9b's suite): the tensor-core kernel at 200k x 5k with 0 / 0.1 / 1 / 5 % missing
# calls, at n = 20k and 50k without missing calls, each with the counting-only roofline and the mma
# ceiling of the same run; then Nsight Compute's per-SASS-line counts and stall samples of one
# gm_screen_22 launch at n = 50k (what bounds the counting at large n, goal 2).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD:$PWD/tests:/tmp/site || exit
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
mkdir -p $OUT
python3 -m gboost.cli warm --device cpu 2>&1 | tail -1
for m in 0 0.001 0.01 0.05; do
  timeout 100 python3 bench/bench_gpu.py --sizes 200000 --n 5000 --missing $m --countings mma --no-cpu --variants "" \
      --roofline-size 200000 > $OUT/rows_m$m.txt 2>&1
  echo "== n 5000, missing $m"; grep -E "^ *200000|^roofline|ceiling:" $OUT/rows_m$m.txt | cut -c1-220
done
for nn in "20000 60000" "50000 30000"; do
  set -- $nn
  timeout 150 python3 bench/bench_gpu.py --sizes $2 --n $1 --missing 0 --countings mma --no-cpu --variants "" \
      --roofline-size $2 > $OUT/rows_n$1.txt 2>&1
  echo "== n $1, p $2, no missing"; grep -E "^ *$2|^roofline|ceiling:" $OUT/rows_n$1.txt | cut -c1-220
done
python3 bench/ncu_target.py --p 8000 --n 50000 --missing 0 --lineinfo >/dev/null 2>&1
timeout 150 ncu --clock-control none -k regex:gm_screen_22 -c 1 --section SourceCounters --section WarpStateStats \
    --section InstructionStats --import-source no -o /tmp/src22n50k python3 bench/ncu_target.py --p 8000 --n 50000 --missing 0 --lineinfo > $OUT/ncu22.log 2>&1
ncu -i /tmp/src22n50k.ncu-rep --page source --csv --print-source sass > $OUT/sass22_n50k.csv 2>&1
ncu -i /tmp/src22n50k.ncu-rep --page details > $OUT/ncu22_details.txt 2>&1
ls -la $OUT; grep -E "Warp Cycles Per Issued|Issued Ipc|No Eligible|Stall" $OUT/ncu22_details.txt | head -12
