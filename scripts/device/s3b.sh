#!/usr/bin/env bash
# Device run (lead, 2026-11-26, third session): imports on the device (bytecode present?), warm with the
# wide study, and 200k x 200k twice (the second run with every cache warm).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD:$PWD/tests:/tmp/site || exit
export PYTHONUNBUFFERED=1
echo "PYTHONDONTWRITEBYTECODE=${PYTHONDONTWRITEBYTECODE:-unset}"; python3 -c "import sys; print(sys.version, sys.flags.dont_write_bytecode)"
for m in numpy numba llvmlite cupy; do
  d=$(python3 -c "import importlib.util,os; print(os.path.dirname(importlib.util.find_spec('$m').origin))")
  echo "$m at $d: $(find $d -name '*.py' | wc -l) .py, $(find $d -name '*.pyc' | wc -l) .pyc, writable: $([ -w $d ] && echo yes || echo no)"
done
for m in numpy numba cupy; do
  python3 -X importtime -c "import $m" 2> /tmp/it_$m.txt; echo "import $m: $(tail -1 /tmp/it_$m.txt)"
  sort -t'|' -k1 -n /tmp/it_$m.txt | tail -4
done
mkdir -p $OUT /tmp/fs
t=$(date +%s%N); python3 -m gboost.cli warm 2>&1 | tail -1; echo "warm: $(( ($(date +%s%N) - t) / 1000000 )) ms"
python3 bench/make_bed.py --out /tmp/fs/bb --snps 200000 --samples 200000 --missing 0.01 > /dev/null
for k in 1 2; do
  rm -rf /tmp/o_bb; t=$(date +%s%N)
  python3 -m gboost.cli scan --bfile /tmp/fs/bb --out /tmp/o_bb --device gpu --quiet
  echo "200k x 200k command, run $k: $(( ($(date +%s%N) - t) / 1000000 )) ms"
  python3 - <<'PY'
import json; d = json.load(open("/tmp/o_bb/run.json")); c = d["command_s"]
print(" wall", c["wall"], "stages", {k: round(v, 3) for k, v in c["stages"].items() if v > 0.005})
print(" background", c.get("background")); print(" engine_info", json.dumps(d.get("engine_info")))
PY
done
