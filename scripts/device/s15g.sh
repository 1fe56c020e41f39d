#!/usr/bin/env bash
# Device run (lead, 2026-11-27, fourteenth session), right after s15f on the same machine: issue 24's rows on the
# final code, `bench/bench_cli.py` at 500k x 5k with 1 % and without missing calls (engine-only runs beside).
. scripts/device/env.sh
python3 -m gboost.cli warm 2>&1 | tail -1
GBOOST_COMMIT=bfa4ba2 python3 bench/bench_cli.py --sizes 500000 --n 5000 --missing 0.01,0 --device gpu --maker fast --repeat 2 --json $OUT/cli.json 2>&1 | tee $OUT/cli.txt | tail -8
