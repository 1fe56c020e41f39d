#!/usr/bin/env bash
# Device run (lead, 2026-11-26, fourth session): the real study larger than the GPU's memory (100k SNPs
# x 2.32M samples, 87 GB of planes against the H100's 80 GB), written and scanned with this session's
# pinner (pieces beside the screen, not 28.8 s in the engine's prepare), and a quarter of its SNPs.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD:$PWD/tests:/tmp/site || exit
export PYTHONUNBUFFERED=1
mkdir -p $OUT
rm -rf /tmp/gboost_biobank /tmp/fs /tmp/o_st
df -BG /tmp | tail -1
python3 -m gboost.cli warm 2>&1 | tail -1
timeout 570 python3 bench/bench_biobank.py --dir /tmp/gboost_over --skip big,stream,sub --quick --over --over-size 100000x2320000 2>&1 | tee $OUT/bench_over.txt | tail -12
python3 -c "import json; d=json.load(open('/tmp/gboost_over/out_over/run.json')); print('engine_info', d['engine_info'])"
