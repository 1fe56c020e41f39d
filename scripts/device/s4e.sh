#!/usr/bin/env bash
# Device run (lead, 2026-11-26, fourth session), after the last GPU edit (the copiers-first gate):
# gboost warm, the whole GPU suite, bench_biobank's forced-budget step on 200k x 200k, the stamped
# streamed scan.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD:$PWD/tests:/tmp/site || exit
export PYTHONUNBUFFERED=1 QT_QPA_PLATFORM=offscreen
mkdir -p $OUT
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
python3 -m gboost.cli warm 2>&1 | tail -1
timeout 250 python3 -m pytest -q -rs -p no:cacheprovider -p no:logging -m gpu --ignore=tests/gui tests/ > $OUT/gpu_tests.txt 2>&1; grep -E "passed|failed|FAILED|ERROR" $OUT/gpu_tests.txt | tail -15
timeout 170 python3 bench/bench_biobank.py --skip big,sub --stream-snps 200000 --stream-samples 200000 2>&1 | tee $OUT/bench_biobank.txt | tail -4
python3 -c "import json; d=json.load(open('/tmp/gboost_biobank/out_stream/run.json')); print('streamed engine_info', d['engine_info']); print('stages', {k: round(v, 2) for k, v in d['command_s']['stages'].items() if v > 0.005})"
rm -rf /tmp/o_st
GBOOST_GPU_MEMORY_LIMIT=15004800000 timeout 60 python3 bench/probe_stream_gaps.py --bfile /tmp/gboost_biobank/bb_200000x200000 --out /tmp/o_st --device gpu --quiet > $OUT/probe_streamed.txt 2>&1
grep -v "encoded\|register" $OUT/probe_streamed.txt | head -12
python3 -c "import json; d=json.load(open('/tmp/o_st/run.json')); print(d['engine_info'])"
