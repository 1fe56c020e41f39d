#!/usr/bin/env bash
# Device run (lead, 2026-11-27, fourteenth session): what lies between the counting pass and the first tile
# (bench/probe_first_tile.py, 0.12-0.16 s in s15b/s15d's timelines) at 500k and 100k x 5k, no missing calls.
. scripts/device/env.sh
python3 -m gboost.cli warm 2>&1 | tail -1
mkdir -p /tmp/gb
for p in 100000 500000; do python3 bench/make_bed.py --out /tmp/gb/p$p --snps $p --samples 5000 --missing 0 | tail -1; cat /tmp/gb/p$p.bed > /dev/null; done
for p in 500000 100000; do for r in 1 2; do rm -rf /tmp/o
  python3 bench/probe_first_tile.py --bfile /tmp/gb/p$p --out /tmp/o --device gpu 2>/dev/null > $OUT/first_tile_${p}_$r.txt
done; echo "== p=$p (second run)"; grep -v "encoded\|upload chunk [1-9]" $OUT/first_tile_${p}_2.txt | head -40; done
