#!/usr/bin/env bash
# Device run (lead, 2026-11-27, twelfth session): issue 18's rows of missing-call rates at 200k x 5k on the final
# kernels (a67f607; later commits change comments only, with byte-identical cubins), one process.
. scripts/device/env.sh
timeout 170 python3 bench/ab_kernels.py --trees . --rows 200000:5000:0 200000:5000:0.001 200000:5000:0.01 200000:5000:0.05 --rounds 1 --reps 2 2>&1 | tee $OUT/rows.txt | tail -3
