#!/usr/bin/env bash
# Device run (lead, 2026-11-26, ninth session): the GPU timing test that failed once in s10g (a 1 s
# study's wall 3.2 % over its stages: the process's end after run.json), now the closest of three
# runs, repeated; then the GPU tests of the files this session touched.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD:$PWD/tests:/tmp/site || exit
export PYTHONUNBUFFERED=1 QT_QPA_PLATFORM=offscreen
mkdir -p $OUT
for i in 1 2 3; do
  timeout 150 python3 -m pytest -q -rs -p no:cacheprovider -p no:logging -s -m gpu tests/test_command_timings.py 2>&1 | grep -E "share of the wall|passed|failed"
done
