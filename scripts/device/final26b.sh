#!/usr/bin/env bash
# Device run (lead, 2026-11-26, second session), in calls back to back on one warm machine:
#   PART=a: gboost warm, the GPU suite, the command at 500k x 5k (0 and 1 % missing, best of 2) with
#           the .bed encoded beside the screen (default) and, for the A/B, before it.
#   PART=b: biobank scale, 200k x 200k (issue 21).
#   PART=c: issue 21's study larger than the GPU's memory: write its fileset (55 GB).
#   PART=d: scan it, and a resident quarter of it (run right after c, on the same machine).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD:$PWD/tests:/tmp/site || exit
export PYTHONUNBUFFERED=1 QT_QPA_PLATFORM=offscreen
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
mkdir -p $OUT
python3 -m gboost.cli warm 2>&1 | tail -1
case "${PART:-a}" in
a)
  timeout 300 python3 -m pytest -q -rs -p no:cacheprovider -p no:logging -m gpu --ignore=tests/gui tests/ 2>&1 | tee $OUT/gpu_tests.txt | grep -E "passed|failed|FAILED|ERROR|SKIPPED" | tail -25
  timeout 150 python3 bench/bench_cli.py --sizes 500000 --n 5000 --missing 0,0.01 --device gpu --maker fast --repeat 2 --json $OUT/bench_cli.json 2>&1 | tee $OUT/bench_cli.txt | grep -v '^#' | tail -8
  GBOOST_BACKGROUND_ENCODE=0 timeout 100 python3 bench/bench_cli.py --sizes 500000 --n 5000 --missing 0,0.01 --device gpu --maker fast --repeat 2 --no-engine --json $OUT/bench_cli_before.json 2>&1 | tee $OUT/bench_cli_before.txt | grep -v '^#' | tail -6
  ;;
b) timeout 560 python3 bench/bench_biobank.py 2>&1 | tee $OUT/bench_biobank.txt | tail -30 ;;
c|d)
  # A disk (not tmpfs: the planes need the memory) with room for the 58 GB (54 GiB) fileset (the other
  # benchmarks' filesets removed first). 100k x 2.32M: 87 GB of planes against the H100's 85.5 GB.
  [ "$PART" = c ] && rm -rf /tmp/gboost_biobank /tmp/gboost-bench
  dir=""
  for d in /tmp /var/tmp /root "$PWD/.."; do
    [ "$(df --output=fstype "$d" 2>/dev/null | tail -1)" = tmpfs ] && continue
    [ "$(df --output=avail -B1G "$d" 2>/dev/null | tail -1)" -ge 56 ] 2>/dev/null && { dir="$d/gboost_over"; break; }
  done
  df -h /tmp /var/tmp /root 2>/dev/null; free -g | head -2
  [ "$PART" = d ] && [ -d /tmp/gboost_over ] && dir=/tmp/gboost_over  # written by PART=c
  [ -n "$dir" ] || { echo "no disk with 56 GiB free"; exit 1; }
  if [ "$PART" = c ]; then
    timeout 560 python3 bench/bench_biobank.py --dir "$dir" --skip big,stream,sub --quick --over --over-size 100000x2320000 --over-write-only 2>&1 | tail -5
  else
    timeout 560 python3 bench/bench_biobank.py --dir "$dir" --skip big,stream,sub --quick --over --over-size 100000x2320000 2>&1 | tee $OUT/bench_over.txt | tail -12
  fi ;;
esac
