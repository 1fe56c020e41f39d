#!/usr/bin/env bash
# Nineteenth session: issue 24's row without missing calls on today's code, and where its floor lies: the command
# (bench_cli, 500k x 5k, fast fileset), its timeline (ab_start.py, this tree twice: GPU thread, CuPy done, counting
# pass done, first tile, screen done, exit), and the GPU's own start alone in a process (probe_driver_start.py).
. scripts/device/env.sh
export GBOOST_COMMIT=$(cat .commit 2>/dev/null || echo "?")
( time python3 -m gboost.cli warm ) 2>&1 | tail -4
timeout 200 python3 bench/bench_cli.py --sizes 500000 --n 5000 --missing 0 --device gpu --maker fast --repeat 2 \
  --no-engine --dir /tmp/b19 --json $OUT/cli.json 2>&1 | tee $OUT/cli.txt | tail -4
timeout 150 python3 bench/ab_start.py --trees . . --bfile /tmp/b19/fast_p500000_n5000_m0.0 --runs 4 2>&1 | tee $OUT/start.txt | tail -14
for i in 1 2 3 4 5; do python3 bench/probe_driver_start.py; done 2>&1 | tee $OUT/driver.txt
