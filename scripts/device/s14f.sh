#!/usr/bin/env bash
# Device run (lead, 2026-11-27, thirteenth session): what the 100k x 5k command waits for after its screen:
# bench/probe_hostwork.py on the 1 % and 0 % filesets, twice each, after `gboost warm`.
. scripts/device/env.sh
python3 -m gboost.cli warm 2>&1 | tail -1
mkdir -p /tmp/fs
for m in 0.01 0; do
  python3 bench/make_bed.py --out /tmp/fs/p100k_m$m --snps 100000 --samples 5000 --missing $m > /dev/null
  for r in 1 2; do
    echo "== 100k x 5k, missing $m, run $r"
    python3 bench/probe_hostwork.py scan --bfile /tmp/fs/p100k_m$m --out /tmp/fs/out --device gpu --quiet 2>&1 | tail -40
  done
done 2>&1 | tee $OUT/hostwork.txt | grep -v "^#"
