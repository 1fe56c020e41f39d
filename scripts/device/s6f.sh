#!/usr/bin/env bash
# Device run (lead, 2026-11-26, sixth session): what bounds the encoder at 2.32M samples (s6e: ~2.5
# GB/s of .bed beside the screen) — bed_encode in memory into fresh, touched and huge-page planes.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD:$PWD/tests:/tmp/site || exit
export PYTHONUNBUFFERED=1
mkdir -p $OUT
timeout 300 python3 bench/probe_encode_memory.py --snps 4000 --samples 2320000 2>&1 | tee $OUT/probe_encode_memory.txt
