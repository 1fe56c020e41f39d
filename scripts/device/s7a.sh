#!/usr/bin/env bash
# Device run (written by the lead, 2026-11-26, sixth session, for the next one): issue 21's figures
# at HEAD after the sixth session's readers, fed threads and GPU decode — the 200k x 200k command
# (wall, ETA, peak RSS, planted pair), the forced budget on 200k x 200k (the decode now runs there
# too), and GPU = CPU on a sub-block.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD:$PWD/tests:/tmp/site || exit
export PYTHONUNBUFFERED=1
mkdir -p $OUT
python3 -m gboost.cli warm 2>&1 | tail -1
timeout 500 python3 bench/bench_biobank.py --stream-snps 200000 --stream-samples 200000 2>&1 | tee $OUT/bench_biobank.txt | tail -16
