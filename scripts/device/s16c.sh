#!/usr/bin/env bash
# Sixteenth session, 2026-11-27: issue 24's rows on a realistic fileset (bench_cli --maker realistic:
# LD blocks, 22 autosomes + X, MAF down to 0.005, 2 % unknown sex, 1 % / no missing calls), and the GPU's
# outputs against the CPU engine's on a smaller realistic fileset, byte for byte.
. scripts/device/env.sh
python3 -m gboost.cli warm 2>&1 | tail -1
mkdir -p /tmp/gb
python3 bench/make_bed.py --out /tmp/gb/r20k --snps 20000 --samples 2000 --missing 0.01 --ld-block 20 --ld-rho 0.9 \
    --chromosomes 23 --x --maf-min 0.005 --unknown-sex 0.02 --seed 5 --plant 3 | tail -1
for d in gpu cpu; do
    /usr/bin/time -f "$d scan %e s" python3 -m gboost.cli scan --bfile /tmp/gb/r20k --out /tmp/gb/r20k_$d --device $d --epi1 1e-4 --quiet
done
for f in pairs.epi.cc pairs.epi.cc.summary pairs.tsv marginal.tsv; do
    cmp /tmp/gb/r20k_gpu/$f /tmp/gb/r20k_cpu/$f && echo "same $f ($(wc -l < /tmp/gb/r20k_cpu/$f) lines)"
done 2>&1 | tee $OUT/gpu_cpu_realistic.txt
GBOOST_COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown) python3 bench/bench_cli.py --sizes 500000 --n 5000 \
    --missing 0.01,0 --device gpu --maker realistic --repeat 2 --json $OUT/cli_realistic.json 2>&1 | tee $OUT/cli_realistic.txt | tail -8
