#!/usr/bin/env bash
# Device run (lead, 2026-11-26, sixth session): s6h again after the decode took 64 MB chunks and
# summed its counts per word first (s6h: 8 GB decoded in 2.9 s, slower than the encoder).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD:$PWD/tests:/tmp/site || exit
export PYTHONUNBUFFERED=1 QT_QPA_PLATFORM=offscreen
mkdir -p $OUT
python3 -m gboost.cli warm 2>&1 | tail -1
timeout 150 python3 -m pytest -q -rs -x -p no:cacheprovider -p no:logging -m gpu tests/test_stream_encode.py tests/test_biobank.py tests/test_pinned_pieces.py > $OUT/gpu_tests_decode.txt 2>&1; grep -E "passed|failed|FAILED|ERROR|Error" $OUT/gpu_tests_decode.txt | tail -15
P=/tmp/gboost_over/over_100000x2320000
timeout 300 python3 bench/bench_biobank.py --dir /tmp/gboost_over --skip big,stream,sub --quick --over --over-size 100000x2320000 --over-write-only 2>&1 | grep -E "over:"
timeout 60 python3 bench/probe_decode.py $P --rows 28,112 2>&1 | tee $OUT/probe_decode.txt
timeout 200 python3 bench/probe_stream_gaps.py --bfile $P --out /tmp/o_over --device gpu --quiet --calibration-pairs 0 > $OUT/probe_over.txt 2>&1
echo "rc $?"
grep -v "register\|encoded" $OUT/probe_over.txt | head -16
python3 -c "import json; d=json.load(open('/tmp/o_over/run.json')); print(d['engine_info']); print('stages', {k: round(v, 2) for k, v in d['command_s']['stages'].items() if v > 0.005}); print('background', d['command_s'].get('background'))"
