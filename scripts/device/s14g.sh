#!/usr/bin/env bash
# Device run (lead, 2026-11-27, thirteenth session): the calibration's tables on every core (this tree) against
# the tree before (ab_old_s14, carried): the GPU tests of the host work beside a screen and of warm, `gboost warm`
# for both trees, then the command at 100k x 5k with and without 1 % missing calls, trees alternating, and
# bench/probe_hostwork.py's timeline for this tree.
. scripts/device/env.sh
timeout 240 python3 -m pytest -q -m gpu tests/test_overlap.py tests/test_warm.py -p no:cacheprovider 2>&1 | tail -2
python3 -m gboost.cli warm 2>&1 | tail -1
(cd ab_old_s14 && PYTHONPATH=$PWD:/tmp/site python3 -m gboost.cli warm 2>&1 | tail -1)
for r in 1 2; do
  for t in . ab_old_s14; do
    echo "== tree $t, round $r"
    GBOOST_COMMIT=$t timeout 120 python3 bench/bench_cli.py --repo $t --sizes 100000 --n 5000 --missing 0.01,0 --device gpu --maker fast --repeat 3 --no-engine --dir /tmp/gb 2>&1 | grep -E "^ 100000|^  p=100000"
  done
done 2>&1 | tee $OUT/ab.txt
for m in 0.01 0.0; do
  python3 bench/probe_hostwork.py scan --bfile /tmp/gb/fast_p100000_n5000_m$m --out /tmp/gb/probe --device gpu --quiet 2>&1 | tail -25
done 2>&1 | tee $OUT/hostwork.txt | grep -E "screen ends|_calibrate|_prepare_outputs|exact ends|main returned"
