#!/usr/bin/env bash
# Device run (lead, 2026-11-27, fourteenth session): CuPy without its cuTENSOR preload (3a5efc8) against the tree
# before (ab_old_s15 = d1c44d8, carried): the GPU tests of the import and of the runner, both trees warmed, CuPy's
# import alone both ways in fresh processes, then the command at 100k (0 and 1 % missing) and 500k (none),
# trees alternating, and this tree's timeline at 500k and 100k.
. scripts/device/env.sh
timeout 200 python3 -m pytest -q -m gpu tests/test_cupy_import.py tests/test_gpu_start.py tests/test_gpu_engine.py -k "cupy or start or stream or resident or fragment" -p no:cacheprovider 2>&1 | tail -2
python3 -m gboost.cli warm 2>&1 | tail -1
(cd ab_old_s15 && PYTHONPATH=$PWD:/tmp/site python3 -m gboost.cli warm 2>&1 | tail -1)
for r in 1 2 3 4 5; do
  python3 -c "import time; t=time.perf_counter(); import cupy; print(f'import cupy        {time.perf_counter()-t:.3f}')"
  python3 -c "import time; t=time.perf_counter(); from gboost.engines.cupy_import import import_cupy; import_cupy(); print(f'import_cupy()      {time.perf_counter()-t:.3f}')"
done 2>&1 | tee $OUT/cupy_ab.txt | sort | awk '{print}'
for r in 1 2 3; do
  for t in . ab_old_s15; do
    echo "== tree $t, round $r"
    GBOOST_COMMIT=$t timeout 150 python3 bench/bench_cli.py --repo $t --sizes 100000 --n 5000 --missing 0.01,0 --device gpu --maker fast --repeat 3 --no-engine --dir /tmp/gb 2>&1 | grep -E "^ 100000"
    GBOOST_COMMIT=$t timeout 150 python3 bench/bench_cli.py --repo $t --sizes 500000 --n 5000 --missing 0 --device gpu --maker fast --repeat 2 --no-engine --dir /tmp/gb 2>&1 | grep -E "^ 500000"
  done
done 2>&1 | tee $OUT/ab.txt
for f in fast_p500000_n5000_m0.0 fast_p100000_n5000_m0.0; do rm -rf /tmp/o
  python3 bench/probe_cli_timeline.py --bfile /tmp/gb/$f --out /tmp/o --device gpu > /dev/null 2> $OUT/tl_$f.txt
  echo "== $f"; grep -E "GPU|cupy done|open_input|load_study|engine_start|tile submitted #1 start|lap: screen|os._exit" $OUT/tl_$f.txt
done
