#!/usr/bin/env bash
# Device run (lead, 2026-11-26, fourth session): where the streamed 200k x 200k scan's GPU waits
# (bench/probe_stream_gaps.py: every tile's gap, upload, page-locking and encoder wait, stamped).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD:$PWD/tests:/tmp/site || exit
export PYTHONUNBUFFERED=1
mkdir -p $OUT /tmp/fs
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
python3 -m gboost.cli warm 2>&1 | tail -1
python3 bench/make_bed.py --out /tmp/fs/bb --snps 200000 --samples 200000 --missing 0.01 --chromosomes 22 --ld-block 50 > /dev/null
rm -rf /tmp/o_st
GBOOST_GPU_MEMORY_LIMIT=15004800000 python3 bench/probe_stream_gaps.py --bfile /tmp/fs/bb --out /tmp/o_st --device gpu --quiet 2>&1 | tee $OUT/probe_streamed.txt | grep -v "encoded\|register" | head -150
grep -c register $OUT/probe_streamed.txt; grep register $OUT/probe_streamed.txt | head -3; grep register $OUT/probe_streamed.txt | tail -2
python3 -c "import json; d=json.load(open('/tmp/o_st/run.json')); c=d['command_s']; print({k: round(v,3) for k,v in c['stages'].items() if v>0.005}, d['engine_info'])"
