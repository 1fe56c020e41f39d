#!/usr/bin/env bash
# Device run (lead, 2026-11-26, fifth session): the command at 500k x 5k (no missing calls) with the
# GIL's switch interval at 1 ms (this tree) against the same tree without that line (/tmp/base),
# alternating on one machine.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD:$PWD/tests:/tmp/site || exit
export PYTHONUNBUFFERED=1
mkdir -p $OUT /tmp/fs
rm -rf /tmp/base && cp -r . /tmp/base && sed -i 's/sys.setswitchinterval(0.001)/pass/' /tmp/base/gboost/cli.py
grep -c setswitchinterval gboost/cli.py /tmp/base/gboost/cli.py
python3 -m gboost.cli warm 2>&1 | tail -1
(cd /tmp/base && PYTHONPATH=/tmp/base:/tmp/site python3 -m gboost.cli warm 2>&1 | tail -1)
for k in 1 2; do
  for v in base new; do
    R=$PWD; [ $v = base ] && R=/tmp/base
    timeout 100 python3 bench/bench_cli.py --repo $R --sizes 500000 --n 5000 --missing 0 --device gpu --maker fast --dir /tmp/fs --repeat 3 --no-engine 2>&1 | grep -v '^#' | sed "s/^/$v  /" | head -4 | tail -2
  done
done
