#!/usr/bin/env bash
# Device run (lead, 2026-11-27, thirteenth session): the GPU's thread started before numba's import (this tree)
# against the tree before (ab_old_s14b, carried): `gboost warm` for both, then the command at 100k x 5k with and
# without 1 % missing calls, trees alternating, three rounds (run.json's stages: startup, read, engine_start).
. scripts/device/env.sh
python3 -m gboost.cli warm 2>&1 | tail -1
(cd ab_old_s14b && PYTHONPATH=$PWD:/tmp/site python3 -m gboost.cli warm 2>&1 | tail -1)
for r in 1 2 3; do
  for t in . ab_old_s14b; do
    echo "== tree $t, round $r"
    timeout 120 python3 bench/bench_cli.py --repo $t --sizes 100000 --n 5000 --missing 0.01,0 --device gpu --maker fast --repeat 3 --no-engine --dir /tmp/gb 2>&1 | grep -E "^ 100000|^  p=100000"
  done
done 2>&1 | tee $OUT/ab.txt
