#!/usr/bin/env bash
# Device run (lead, 2026-11-26, seventh session): the over-sized study (100k x 2.32M) stamped by
# probe_stream_gaps after the block uploads and decodes hold the pinner's gate only while they queue
# copies from page-locked memory (s7b with the decode kernel: 127 GB went pageable, screen 80 %).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD:$PWD/tests:/tmp/site || exit
export PYTHONUNBUFFERED=1 QT_QPA_PLATFORM=offscreen
mkdir -p $OUT
rm -rf /tmp/gboost_biobank /tmp/fs /tmp/o_st /tmp/o_over
python3 -m gboost.cli warm 2>&1 | tail -1
P=/tmp/gboost_over/over_100000x2320000
[ -f $P.bed ] || timeout 300 python3 bench/bench_biobank.py --dir /tmp/gboost_over --skip big,stream,sub --quick --over --over-size 100000x2320000 --over-write-only 2>&1 | grep -E "over:"
timeout 200 python3 bench/probe_stream_gaps.py --bfile $P --out /tmp/o_over --device gpu --quiet --calibration-pairs 0 > $OUT/probe_over.txt 2>&1
echo "rc $?"
grep -v "register\|encoded" $OUT/probe_over.txt | head -16
python3 -c "import json; d=json.load(open('/tmp/o_over/run.json')); print(d['engine_info']); print('stages', {k: round(v, 2) for k, v in d['command_s']['stages'].items() if v > 0.005}); print('background', d['command_s'].get('background'))"
timeout 245 python3 -m pytest -q -rs -p no:cacheprovider -p no:logging -m gpu --ignore=tests/gui tests/ > $OUT/gpu_tests.txt 2>&1; grep -E "passed|failed|FAILED|ERROR" $OUT/gpu_tests.txt | tail -15
