#!/usr/bin/env bash
# Device run (lead, 2026-11-26, third session): the command's last moments at 500k x 5k (bench/probe_exit.py),
# what CuPy's import and numba's start do, and 200k x 200k after tables_of released the GIL.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD:$PWD/tests:/tmp/site || exit
export PYTHONUNBUFFERED=1
mkdir -p $OUT /tmp/fs
python3 -m gboost.cli warm 2>&1 | tail -1
python3 bench/make_bed.py --out /tmp/fs/p500k --snps 500000 --samples 5000 --missing 0 > /dev/null
for k in 1 2 3; do
  rm -rf /tmp/o5; t=$(date +%s%N)
  python3 bench/probe_exit.py --bfile /tmp/fs/p500k --out /tmp/o5 --device gpu --quiet
  e=$(( ($(date +%s%N) - t) / 1000000 ))
  python3 -c "import json; c=json.load(open('/tmp/o5/run.json'))['command_s']; print(f'  outside {$e} ms; run.json wall {c[\"wall\"]:.3f}, stages_sum {c[\"stages_sum\"]:.3f}; tail:', {k: round(v, 3) for k, v in c['stages'].items() if k in ('checkpoint','exact','format_outputs','write_outputs','inputs_sha256_wait','run_json')})"
done
python3 -X importtime -c "import cupy" 2> /tmp/it.txt; sort -t'|' -k1 -n /tmp/it.txt | tail -12
python3 - <<'PY'
import cProfile, pstats, io, numba
from numba.core.registry import cpu_target
pr = cProfile.Profile(); pr.enable(); cpu_target.target_context.refresh(); pr.disable()
s = io.StringIO(); pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(12); print(s.getvalue()[:3000])
PY
python3 bench/make_bed.py --out /tmp/fs/bb --snps 200000 --samples 200000 --missing 0.01 > /dev/null
for k in 1 2; do
rm -rf /tmp/o_bb; t=$(date +%s%N)
python3 -m gboost.cli scan --bfile /tmp/fs/bb --out /tmp/o_bb --device gpu --quiet
echo "200k x 200k command: $(( ($(date +%s%N) - t) / 1000000 )) ms"
python3 -c "import json; d=json.load(open('/tmp/o_bb/run.json')); c=d['command_s']; print({k: round(v,3) for k,v in c['stages'].items() if v>0.005}, c['background'], d['engine_info'])"
done
