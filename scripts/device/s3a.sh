#!/usr/bin/env bash
# Device run (lead, 2026-11-26, third session): where the command's time before the first tile goes.
#   the pre-screen timeline at 500k x 5k (bench/bench_start.py: the CLI's order, CPU alone, NumPy .bim, GPU alone),
#   the background encoder's watermark at 500k x 5k and 200k x 200k, and one 200k x 200k command with
#   run.json's stages, background work and engine_info.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD:$PWD/tests:/tmp/site || exit
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; nproc; free -g | head -2
mkdir -p $OUT /tmp/fs
python3 -m gboost.cli warm 2>&1 | tail -1
python3 bench/make_bed.py --out /tmp/fs/p500k --snps 500000 --samples 5000 --missing 0 > /dev/null
python3 bench/bench_start.py /tmp/fs/p500k 2>&1 | tee $OUT/start_500k.txt
python3 bench/bench_start.py /tmp/fs/p500k --encode 2>&1 | awk 'NR<=8 || /encoded/ && (++k % 4 == 1)' | tail -20
t=$(date +%s.%N); python3 bench/make_bed.py --out /tmp/fs/bb --snps 200000 --samples 200000 --missing 0.01 > /dev/null; echo "make 200k x 200k: $(echo "$(date +%s.%N) - $t" | bc) s"
python3 bench/bench_start.py /tmp/fs/bb --encode 2>&1 | tee $OUT/start_bb.txt | awk 'NR<=9 || /encoded/ && (++k % 3 == 1)' | tail -40
rm -rf /tmp/o_bb; t=$(date +%s.%N)
python3 -m gboost.cli scan --bfile /tmp/fs/bb --out /tmp/o_bb --device gpu --quiet
echo "200k x 200k command: $(echo "$(date +%s.%N) - $t" | bc) s"
python3 - <<'PY'
import json; d = json.load(open("/tmp/o_bb/run.json")); c = d["command_s"]
print("stages", {k: round(v, 3) for k, v in c["stages"].items()})
print("background", c.get("background")); print("engine_info", json.dumps(d.get("engine_info"))[:1500])
PY
