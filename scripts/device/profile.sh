#!/usr/bin/env bash
# Device run (lead, 2026-11-26): where the command's time goes at 500k x 5k (issue 24, 21), and the
# QT GPU bench at 100k x 5k after the compiled dosage decode (issue 22).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD:$PWD/tests:/tmp/site || exit
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p $OUT /tmp/d
python3 -m gboost.cli warm 2>&1 | tail -1
for m in 0.01 0; do
  python3 bench/make_bed.py --out /tmp/d/s500k_$m --snps 500000 --samples 5000 --missing $m --ld-block 20 | tail -1
  A="scan --bfile /tmp/d/s500k_$m --out /tmp/d/o_$m --device gpu --quiet"
  /usr/bin/time -f "%e s wall, %M KB peak" python3 -m gboost.cli $A 2>&1 | tail -1   # first (page cache, numba cache)
  rm -rf /tmp/d/o_$m; /usr/bin/time -f "%e s wall, %M KB peak" python3 -m gboost.cli $A 2>&1 | tail -1
  python3 -c "import json;d=json.load(open('/tmp/d/o_$m/run.json'));c=d['command_s'];print(round(c['wall'],2), json.dumps({k:round(v,3) for k,v in c['stages'].items()}))" 2>&1 | cut -c1-900
  python3 bench/profile_cli.py --top 45 --prof $OUT/scan_$m.prof -- $A > $OUT/profile_$m.txt 2>&1
  head -1 $OUT/profile_$m.txt; sed -n '/## by tottime/,/## by cum/p' $OUT/profile_$m.txt | grep -E '^ +[0-9]' | head -22 | cut -c1-150
done
python3 -X importtime -c "import gboost.cli" 2> $OUT/importtime.txt; sort -t'|' -k2 -n $OUT/importtime.txt | tail -12
timeout 200 python3 bench/bench_qt.py --gpu --gpu-sizes 100000 --no-plink --snps 1500 --samples 1000 2>&1 | tee $OUT/bench_qt.txt | tail -8
