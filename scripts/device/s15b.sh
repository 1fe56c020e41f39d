#!/usr/bin/env bash
# Device run (lead, 2026-11-27, fourteenth session): the real command's timeline (bench/probe_cli_timeline.py) at
# 500k x 5k without and with 1 % missing calls and at 100k, and what CuPy's import opens and scans.
. scripts/device/env.sh
t=$(date +%s); python3 -m gboost.cli warm > $OUT/warm.txt 2>&1; echo "warm rc=$? $(( $(date +%s) - t )) s"
python3 bench/probe_cupy_import.py --runs 2 > $OUT/cupy_import.txt 2>&1; sed -n '/dlopen\|metadata.dist/p' $OUT/cupy_import.txt | head -40
for m in 0 0.01; do python3 bench/make_bed.py --out /tmp/f500_$m --snps 500000 --samples 5000 --missing $m | tail -1; done
python3 bench/make_bed.py --out /tmp/f100_0 --snps 100000 --samples 5000 --missing 0 | tail -1
for r in 1 2 3; do for f in f500_0 f500_0.01 f100_0; do
  rm -rf /tmp/o; s=$(date +%s.%N)
  python3 bench/probe_cli_timeline.py --bfile /tmp/$f --out /tmp/o --device gpu > /dev/null 2> $OUT/tl_${f}_$r.txt
  e=$(date +%s.%N); echo "$f run $r: wall $(python3 -c "print(round($e-$s,3))") s"
done; done
for f in f500_0 f500_0.01 f100_0; do echo "== $f (run 3)"; grep -v "SNPs\|samples\|engine:\|wrote\|pairs" $OUT/tl_${f}_3.txt | grep -v "begins$"; done
