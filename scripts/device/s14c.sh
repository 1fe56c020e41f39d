#!/usr/bin/env bash
# Device run (lead, 2026-11-27, thirteenth session): issue 24's command rows on the final code: `gboost warm`,
# then the command at 500k x 5k with and without 1 % missing calls (engine-only runs beside).
. scripts/device/env.sh
python3 -m gboost.cli warm 2>&1 | tail -1
timeout 400 python3 bench/bench_cli.py --sizes 500000 --n 5000 --missing 0.01,0 --device gpu --maker fast --repeat 2 --json $OUT/bench_cli.json 2>&1 | tee $OUT/bench_cli.txt | grep -v '^#' | tail -8
