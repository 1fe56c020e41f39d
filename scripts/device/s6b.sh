#!/usr/bin/env bash
# Device run (lead, 2026-11-26, sixth session): what bounds the counting pass and the encoder (s6a:
# more readers read the .bed at 22 GB/s, yet the counting pass stayed at ~4.5 GB/s): the compiled
# passes alone in memory at 1..16 numba threads, the counting kernel fed by iter_bed_rows, then the
# readers' table again.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD:$PWD/tests:/tmp/site || exit
export PYTHONUNBUFFERED=1
mkdir -p $OUT
lscpu | grep -E "^Model name|^Thread|^Core|^Socket|^NUMA node\(s\)|^CPU\(s\)"
D=/tmp/gboost-bench
mkdir -p $D
[ -e $D/fast_p500000_n5000_m0.0.bed ] || python3 bench/make_bed.py --out $D/fast_p500000_n5000_m0.0 --snps 500000 --samples 5000 --missing 0.0 > /dev/null
timeout 300 python3 bench/probe_bed_read.py $D/fast_p500000_n5000_m0.0 --repeat 3 --kernels 2>&1 | tee $OUT/probe_bed_kernels.txt
