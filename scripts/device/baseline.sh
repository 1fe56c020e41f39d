#!/usr/bin/env bash
# Device run (lead): the command as a user runs it, 500k x 5k, 0 % and 1 % missing, twice each.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD:/tmp/site || exit
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
git log -1 --format='commit %h %s' 2>/dev/null || true
D=/tmp/bench; mkdir -p $D
for m in 0 0.01; do python3 bench/make_bed.py --out $D/p500k_m$m --snps 500000 --samples 5000 --missing $m; done
for m in 0 0.01; do
  for r in first second; do
    rm -rf $D/out_$m
    s=$(date +%s.%N)
    python3 -m gboost.cli scan --bfile $D/p500k_m$m --out $D/out_$m --device gpu --quiet
    e=$(date +%s.%N)
    python3 - "$D/out_$m/run.json" "$s" "$e" "$m" "$r" <<'PY'
import json,sys
j=json.load(open(sys.argv[1])); wall=float(sys.argv[3])-float(sys.argv[2])
t=j.get("timings", j.get("timing", {}))
print(f"missing {sys.argv[4]} {sys.argv[5]} run: wall {wall:.2f} s  pair*samples/s {500000*499999/2*5000/wall:.3g}  timings {json.dumps(t)}")
PY
  done
done
