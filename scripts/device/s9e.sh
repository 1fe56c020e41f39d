#!/usr/bin/env bash
# Device run (lead, 2026-11-26, eighth session), issue 18 goal 2: the float32 pre-screen of <2,2> blocks without a table at >= ~12.8k samples (against the ring in the
# float64 build alone, 538acf7). The GPU suite after the edit, then bench_gpu at
# n = 20k and 50k without missing calls (counting-only roofline and the mma ceiling in each run) for
# this tree and, on the same machine, the tree before the edit (538acf7, copied to ab_old_538acf7/).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD:$PWD/tests:/tmp/site || exit
export PYTHONUNBUFFERED=1 QT_QPA_PLATFORM=offscreen
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
mkdir -p $OUT
python3 -m gboost.cli warm 2>&1 | tail -1
timeout 280 python3 -m pytest -q -rs -p no:cacheprovider -p no:logging -m gpu --ignore=tests/gui tests/ > $OUT/gpu_tests.txt 2>&1; grep -E "passed|failed|FAILED|ERROR" $OUT/gpu_tests.txt | tail -15
for tree in . ab_old_538acf7; do
  for nn in "20000 60000" "50000 60000"; do
    set -- $nn
    (cd $tree && PYTHONPATH=$PWD:/tmp/site timeout 150 python3 bench/bench_gpu.py --sizes $2 --n $1 --missing 0 --countings mma --no-cpu --variants "" \
        --roofline-size $2) > $OUT/rows_$(basename $tree)_n$1.txt 2>&1
    echo "== $tree n $1 p $2"; grep -E "^gpu mma|^roofline" $OUT/rows_$(basename $tree)_n$1.txt | cut -c1-200
  done
done
