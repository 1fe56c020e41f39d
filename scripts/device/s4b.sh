#!/usr/bin/env bash
# Device run (lead, 2026-11-26, fourth session): streamed planes with the pinner's gate, the driver's
# registrations and the blocks on an upload stream: the GPU tests of streaming and pinning, the
# stamped streamed 200k x 200k scan, then bench_biobank's big scan and forced-budget step.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD:$PWD/tests:/tmp/site || exit
export PYTHONUNBUFFERED=1 QT_QPA_PLATFORM=offscreen
mkdir -p $OUT /tmp/fs
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
python3 -m gboost.cli warm 2>&1 | tail -1
timeout 200 python3 -m pytest -q -rs -p no:cacheprovider -m gpu tests/test_pinned_pieces.py tests/test_gpu_engine.py tests/test_biobank.py tests/test_overlap.py 2>&1 | tee $OUT/gpu_tests.txt | grep -E "passed|failed|FAILED|ERROR|Error" | tail -15
[ -f /tmp/fs/bb.bed ] || python3 bench/make_bed.py --out /tmp/fs/bb --snps 200000 --samples 200000 --missing 0.01 --chromosomes 22 --ld-block 50 > /dev/null
rm -rf /tmp/o_st
GBOOST_GPU_MEMORY_LIMIT=15004800000 python3 bench/probe_stream_gaps.py --bfile /tmp/fs/bb --out /tmp/o_st --device gpu --quiet 2>&1 > $OUT/probe_streamed.txt
grep -v "encoded\|register" $OUT/probe_streamed.txt | head -12; grep -c register $OUT/probe_streamed.txt
python3 -c "import json; d=json.load(open('/tmp/o_st/run.json')); c=d['command_s']; print({k: round(v,3) for k,v in c['stages'].items() if v>0.005}, d['engine_info'])"
[ "${BB:-1}" = 1 ] && timeout 280 python3 bench/bench_biobank.py --skip sub --stream-snps 200000 --stream-samples 200000 2>&1 | tee $OUT/bench_biobank.txt | tail -14
