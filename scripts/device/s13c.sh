#!/usr/bin/env bash
# Device run (lead, 2026-11-27, twelfth session): issue 18.
# 1. What a fragment-native plane layout could buy the per-warp counting of the missing-call modes: the
#    counting-only build of this tree against ab_probe (this tree with gm_count_class loading each type's A
#    fragment as one 16-byte load and B likewise, as such a layout would allow; wrong counts, timing only).
#    The counting-only rows of this tree also give the counting's share of the kernel (the full kernel in s13b).
# 2. The command at 500k x 5k with and without 1 % missing calls on this tree's kernels (goal 3, issue 24).
. scripts/device/env.sh
timeout 200 python3 bench/ab_kernels.py --count-only --trees . ab_probe --rows 200000:5000:0.01 60000:20000:0.01 200000:5000:0 --rounds 2 2>&1 | tee $OUT/ab_count.txt | tail -5
python3 -m gboost.cli warm 2>&1 | tail -1
timeout 260 python3 bench/bench_cli.py --sizes 500000 --n 5000 --missing 0,0.01 --device gpu --maker fast --repeat 2 --json $OUT/bench_cli.json 2>&1 | tee $OUT/bench_cli.txt | grep -v '^#' | tail -8
