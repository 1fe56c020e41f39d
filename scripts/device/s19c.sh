#!/usr/bin/env bash
# Nineteenth session: SPEC §7's CPU row on the device's 16 CPU cores (the GPU unused): gboost's CPU engine against
# plink1.9 at equal threads. plink1.9 and the libraries it links travel in .plk (copied from the VM's Debian package).
. scripts/device/env.sh
export GBOOST_COMMIT=$(cat .commit 2>/dev/null || echo "?")
export LD_LIBRARY_PATH=$PWD/.plk
nproc; lscpu | grep -E "Model name|Thread|Core|Socket" | head -5
.plk/plink1.9 --version
timeout 330 python3 bench/bench_cpu_vs_plink.py --snps 20000 --samples 5000 --threads 16 --plink $PWD/.plk/plink1.9 2>&1 | tee $OUT/cpu_vs_plink_16.txt
timeout 200 python3 bench/bench_cpu_vs_plink.py --snps 10000 --samples 2000 --threads 2 --plink $PWD/.plk/plink1.9 2>&1 | tee $OUT/cpu_vs_plink_2.txt
