#!/usr/bin/env bash
# Device run (lead, 2026-11-26, sixth session): (1) the start-up timeline at 500k x 5k with CuPy's
# import beside the parse (as the CLI) and beside the counting pass only (cupy-late), now that the
# counting pass takes 0.07 s; (2) the over-sized study (100k x 2.32M, 58 GB .bed) stamped as in
# s5a.sh, with the .bed read by 4 threads and the passes on the cores they leave (59c3bc6).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD:$PWD/tests:/tmp/site || exit
export PYTHONUNBUFFERED=1
mkdir -p $OUT
python3 -m gboost.cli warm 2>&1 | tail -1
D=/tmp/gboost-bench
mkdir -p $D
python3 bench/make_bed.py --out $D/fast_p500000_n5000_m0.0 --snps 500000 --samples 5000 --missing 0.0 > /dev/null
timeout 90 python3 bench/bench_start.py $D/fast_p500000_n5000_m0.0 > $OUT/bench_start.txt 2>&1
grep -E "parsed|counting|joined|outside|cupy imported|kernels" $OUT/bench_start.txt | grep -E "^(cli|cupy-late|cpu-only)"
rm -rf $D /tmp/gboost_biobank /tmp/fs /tmp/o_st
P=/tmp/gboost_over/over_100000x2320000
timeout 300 python3 bench/bench_biobank.py --dir /tmp/gboost_over --skip big,stream,sub --quick --over --over-size 100000x2320000 --over-write-only 2>&1 | grep -E "wrote|over:"
free -g | head -2
timeout 260 python3 bench/probe_stream_gaps.py --bfile $P --out /tmp/o_over --device gpu --quiet --calibration-pairs 0 > $OUT/probe_over.txt 2>&1
echo "rc $?"
grep -v "register\|encoded" $OUT/probe_over.txt | head -24
echo "-- encoder watermark (every 5th):"
grep "encoded" $OUT/probe_over.txt | awk 'NR%5==1' | head -20
python3 -c "import json; d=json.load(open('/tmp/o_over/run.json')); print(d['engine_info']); print('stages', {k: round(v, 2) for k, v in d['command_s']['stages'].items() if v > 0.005}); print('background', d['command_s'].get('background'))"
free -g | head -2
