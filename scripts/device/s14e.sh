#!/usr/bin/env bash
# Device run (lead, 2026-11-27, thirteenth session): issue 24's bench at its other size, 100k x 5k, with and
# without 1 % missing calls, on a fresh machine: `gboost warm` (as the README's setup runs it), then the command.
. scripts/device/env.sh
python3 -m gboost.cli warm 2>&1 | tail -1
timeout 300 python3 bench/bench_cli.py --sizes 100000 --n 5000 --missing 0.01,0 --device gpu --maker fast --repeat 2 --json $OUT/bench_cli.json 2>&1 | tee $OUT/bench_cli.txt | grep -v '^#' | tail -8
