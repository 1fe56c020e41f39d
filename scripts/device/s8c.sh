#!/usr/bin/env bash
# Device run (lead, 2026-11-26, seventh session): the fused decode kernel (gb_decode_bed). Its GPU
# tests, issue 21's 200k x 200k bench (the forced budget streams and decodes: 93 % with the array
# decode, s8a), the decode's pieces timed on that .bed (kernel against the array operations, 64 MB
# chunks), then the whole GPU suite after this last GPU edit.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD:$PWD/tests:/tmp/site || exit
export PYTHONUNBUFFERED=1 QT_QPA_PLATFORM=offscreen
mkdir -p $OUT
python3 -m gboost.cli warm 2>&1 | tail -1
timeout 90 python3 -m pytest -q -rs -p no:cacheprovider -p no:logging -m gpu tests/test_stream_encode.py > $OUT/gpu_tests_stream.txt 2>&1; tail -3 $OUT/gpu_tests_stream.txt
timeout 230 python3 bench/bench_biobank.py --stream-snps 200000 --stream-samples 200000 --skip sub 2>&1 | tee $OUT/bench_biobank.txt | grep -E "budget|big: (wall|GPU)"
python3 -c "import json; d=json.load(open('/tmp/gboost_biobank/out_stream/run.json')); print('budget engine_info', d['engine_info'])"
timeout 40 python3 bench/probe_decode.py /tmp/gboost_biobank/bb_200000x200000 --rows 112,1300 2>&1 | tee $OUT/probe_decode.txt
timeout 245 python3 -m pytest -q -rs -p no:cacheprovider -p no:logging -m gpu --ignore=tests/gui tests/ > $OUT/gpu_tests.txt 2>&1; grep -E "passed|failed|FAILED|ERROR" $OUT/gpu_tests.txt | tail -15
