#!/usr/bin/env bash
# Device run (written by the lead, 2026-11-26, sixth session, for the next one): the over-sized study
# (100k x 2.32M, 87 GB of planes against 80 GB) through bench_biobank's step 5 at HEAD: the whole
# study against a quarter of its SNPs, peak RSS, the planted pair, run.json's engine_info (decoded
# and uploaded bytes, the GPU's idle time).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD:$PWD/tests:/tmp/site || exit
export PYTHONUNBUFFERED=1
mkdir -p $OUT
rm -rf /tmp/gboost_biobank /tmp/fs /tmp/o_st
python3 -m gboost.cli warm 2>&1 | tail -1
timeout 570 python3 bench/bench_biobank.py --dir /tmp/gboost_over --skip big,stream,sub --quick --over --over-size 100000x2320000 2>&1 | tee $OUT/bench_over.txt | tail -12
python3 -c "import json; d=json.load(open('/tmp/gboost_over/out_over/run.json')); print('engine_info', d['engine_info'])"
