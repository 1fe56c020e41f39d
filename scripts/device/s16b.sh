#!/usr/bin/env bash
# Part 2 of 2, on the machine s16a left warm (see s16a.sh): the split-read probe, then issue 24's rows.
. scripts/device/env.sh
python3 -m gboost.cli warm 2>&1 | tail -1
mkdir -p /tmp/gb
python3 bench/make_bed.py --out /tmp/gb/p500k --snps 500000 --samples 5000 --missing 0 | tail -1
python3 bench/make_bed.py --out /tmp/gb/p100k --snps 100000 --samples 5000 --missing 0 | tail -1
python3 bench/probe_split_read.py --bfile /tmp/gb/p100k --runs 6 2>&1 | tee $OUT/split_read_100k.txt | tail -2
python3 bench/probe_split_read.py --bfile /tmp/gb/p500k --runs 6 2>&1 | tee $OUT/split_read_500k.txt | tail -2
GBOOST_COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown) python3 bench/bench_cli.py --sizes 500000 --n 5000 --missing 0.01,0 --device gpu --maker fast --repeat 2 --json $OUT/cli.json 2>&1 | tee $OUT/cli.txt | tail -8
