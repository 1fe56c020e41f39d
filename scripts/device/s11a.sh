#!/usr/bin/env bash
# Device run (lead, 2026-11-26, tenth session): the command at 500k x 5k after the ninth session's
# kernel changes (435587b and later; HEAD 5429cd8), without and with 1 % missing calls, the engine-only
# run beside; then bench/ab_kernels.py's first run on a GPU (this tree against itself, one small row).
. scripts/device/env.sh
python3 -m gboost.cli warm 2>&1 | tail -1
timeout 200 python3 bench/bench_cli.py --sizes 500000 --n 5000 --missing 0,0.01 --device gpu --maker fast --repeat 2 --json $OUT/bench_cli.json 2>&1 | tee $OUT/bench_cli.txt | grep -v '^#' | tail -8
timeout 150 python3 bench/ab_kernels.py --trees . . --rows 200000:5000:0.01 --rounds 1 2>&1 | tee $OUT/ab_smoke.txt | tail -4
