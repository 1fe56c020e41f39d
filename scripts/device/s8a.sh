#!/usr/bin/env bash
# Device run (lead, 2026-11-26, seventh session): the stream/decode GPU tests after the engine's
# check of the encoder at each tile (a decoding runner stops at the next tile when it fails), then
# issue 21's 200k x 200k figures at HEAD (bench_biobank: the command with ETA, RSS and the planted
# pair, the forced budget with the decode running there too, GPU = CPU on a sub-block).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD:$PWD/tests:/tmp/site || exit
export PYTHONUNBUFFERED=1 QT_QPA_PLATFORM=offscreen
mkdir -p $OUT
python3 -m gboost.cli warm 2>&1 | tail -1
timeout 120 python3 -m pytest -q -rs -p no:cacheprovider -p no:logging -m gpu tests/test_stream_encode.py > $OUT/gpu_tests_stream.txt 2>&1; tail -3 $OUT/gpu_tests_stream.txt
timeout 430 python3 bench/bench_biobank.py --stream-snps 200000 --stream-samples 200000 2>&1 | tee $OUT/bench_biobank.txt | tail -16
