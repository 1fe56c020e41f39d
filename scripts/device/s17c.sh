#!/usr/bin/env bash
# Seventeenth session, 2026-11-27: issue 24's remaining lever measured before it is built: the .bed read split
# over two processes (bench/probe_split_read.py --mode fork2: one parses the .fam/.bim, one counts the .bed)
# against the CLI's in-process read and the sixteenth session's one-child fork, 500k and 100k x 5k.
. scripts/device/env.sh
mkdir -p /tmp/gb
python3 bench/make_bed.py --out /tmp/gb/p500k --snps 500000 --samples 5000 --missing 0 | tail -1
python3 bench/make_bed.py --out /tmp/gb/p100k --snps 100000 --samples 5000 --missing 0 | tail -1
# a first run of each mode compiles what the read and the kernels need (numba's cache, NVRTC's)
python3 bench/probe_split_read.py --bfile /tmp/gb/p100k --mode inproc,fork,fork2 --runs 1 > /dev/null 2>&1
python3 bench/probe_split_read.py --bfile /tmp/gb/p500k --mode inproc,fork,fork2 --runs 6 2>&1 | tee $OUT/split2_500k.txt | tail -3
python3 bench/probe_split_read.py --bfile /tmp/gb/p100k --mode inproc,fork,fork2 --runs 6 2>&1 | tee $OUT/split2_100k.txt | tail -3
