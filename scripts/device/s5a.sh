#!/usr/bin/env bash
# Device run (lead, 2026-11-26, fifth session): where the over-sized study's GPU waited 12.6 s before
# its first tile (s4d.sh). Writes the 100k x 2.32M fileset, measures the disk's uncached read rate and
# what of the .bed the page cache holds, then runs the stamped command (bench/probe_stream_gaps.py).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD:$PWD/tests:/tmp/site || exit
export PYTHONUNBUFFERED=1
mkdir -p $OUT
rm -rf /tmp/gboost_biobank /tmp/fs /tmp/o_st
python3 -m gboost.cli warm 2>&1 | tail -1
P=/tmp/gboost_over/over_100000x2320000
timeout 300 python3 bench/bench_biobank.py --dir /tmp/gboost_over --skip big,stream,sub --quick --over --over-size 100000x2320000 --over-write-only 2>&1 | grep -E "wrote|over:"
free -g | head -2
fincore $P.bed 2>&1 | tail -1
echo "uncached read of the .bed's last 4 GB:"; dd if=$P.bed of=/dev/null bs=64M skip=800 count=64 iflag=direct 2>&1 | tail -1
timeout 260 python3 bench/probe_stream_gaps.py --bfile $P --out /tmp/o_over --device gpu --quiet --calibration-pairs 0 > $OUT/probe_over.txt 2>&1
echo "rc $?"
grep -v "register\|encoded" $OUT/probe_over.txt | head -24
echo "-- encoder watermark (every 5th) and registrations (every 40th):"
grep "encoded" $OUT/probe_over.txt | awk 'NR%5==1' | head -30
grep "register" $OUT/probe_over.txt | awk 'NR%40==1'
python3 -c "import json; d=json.load(open('/tmp/o_over/run.json')); print(d['engine_info']); print('stages', {k: round(v, 2) for k, v in d['command_s']['stages'].items() if v > 0.005}); print('background', d['command_s'].get('background'))"
free -g | head -2
