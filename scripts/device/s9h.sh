#!/usr/bin/env bash
# Device run (lead, 2026-11-26, eighth session), issue 24: what lies after run.json (~0.14 s that no
# stage holds). The command in-process through bench/probe_exit.py on 200k x 5k (process ages at
# write_outputs and at _exit_now, the wall from outside), three times; then bench/probe_teardown.py:
# a process without CUDA, one with a context, one that resets its context before os._exit.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD:/tmp/site || exit
export PYTHONUNBUFFERED=1
python3 -m gboost.cli warm 2>&1 | tail -1
python3 bench/make_bed.py --out /tmp/s --snps 200000 --samples 5000 --missing 0 > /dev/null 2>&1; cat /tmp/s.bed > /dev/null
for i in 1 2 3; do
  rm -rf /tmp/o; t0=$(date +%s.%N)
  python3 bench/probe_exit.py --bfile /tmp/s --out /tmp/o --device gpu --quiet 2>&1 | grep probe
  t1=$(date +%s.%N); echo "wall from outside $(echo "$t1 - $t0" | bc) s; run.json command_s $(python3 -c "import json; print(json.load(open('/tmp/o/run.json'))['command_s']['wall'])" 2>/dev/null)"
done
for way in none ctx reset; do for i in 1 2; do
  t0=$(date +%s.%N); python3 bench/probe_teardown.py $way | tail -1; t1=$(date +%s.%N); echo "  wall from outside $(echo "$t1 - $t0" | bc) s"
done; done
