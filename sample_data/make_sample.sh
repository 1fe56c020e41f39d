#!/usr/bin/env bash
# Makes sample_data/sample.{bed,bim,fam}, the study the app opens on first start: 3,000 SNPs on
# real gene coordinates (GRCh38, the gene annotation bundled in gboost/pathways/data) of
# chromosomes 1-5, 800 cases and 800 controls, three planted interactions between genes that share
# a GO biological process. Deterministic: the same command gives the same files byte for byte
# (tests/test_simulate.py checks it). Usage: bash sample_data/make_sample.sh [PREFIX]
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
"${PYTHON:-python3}" - "${1:-sample_data/sample}" <<'EOF'
import sys

import numpy as np

from gboost.cli.simulate import describe
from gboost.pathways import bundled_annotation, map_snps_to_genes
from gboost.data.simulate import PlantedPair, simulate_study

OUT = sys.argv[1]
SEED = 2024
N_SNPS, CASES, CONTROLS = 3000, 800, 800
# GRCh38 lengths of chromosomes 1-5; SNPs are spread over them in proportion.
LENGTHS = {"1": 248_956_422, "2": 242_193_529, "3": 198_295_559, "4": 190_214_555, "5": 181_538_259}
IN_GENES = 0.6  # share of SNPs drawn inside a random gene of their chromosome; the rest anywhere
# (gene A, gene B, model, strength, MAF): each pair's genes share a GO biological process.
PLANTED = [
    ("DRD3", "DRD1", "xor", 2.5, 0.35),  # adenylate cyclase-activating dopamine receptor signaling
    ("IRS1", "PIK3R1", "xor", 3.0, 0.25),  # insulin-like growth factor receptor signaling
    ("PCSK9", "APOB", "threshold", 8.0, 0.25),  # low-density lipoprotein particle clearance
]

genes = bundled_annotation()
rng = np.random.default_rng(SEED)
chroms = list(LENGTHS)
weights = np.array(list(LENGTHS.values()), dtype=float)
counts = np.floor(N_SNPS * weights / weights.sum()).astype(int)
counts[np.argsort(counts - N_SNPS * weights / weights.sum())[: N_SNPS - counts.sum()]] += 1


def locus(name):
    k = np.flatnonzero(genes.name == name)
    assert len(k) == 1 and genes.chrom[k[0]] in LENGTHS, name
    return genes.chrom[k[0]], int(genes.start[k[0]]), int(genes.end[k[0]])


# A planted SNP sits at the middle of its gene (1-based: start + 1 .. end).
planted_at = {name: (c, (s + 1 + e) // 2) for pair in PLANTED for name in pair[:2] for c, s, e in [locus(name)]}
chrom_out, bp_out = [], []
for c, n in zip(chroms, counts):
    fixed = {bp for cc, bp in planted_at.values() if cc == c}
    on_c = np.flatnonzero(genes.chrom == c)
    pos = set(fixed)
    while len(pos) < n:
        if rng.random() < IN_GENES:
            g = on_c[rng.integers(len(on_c))]
            pos.add(int(rng.integers(genes.start[g] + 1, genes.end[g] + 1)))
        else:
            pos.add(int(rng.integers(10_000, LENGTHS[c] - 10_000)))
    chrom_out += [c] * n
    bp_out += sorted(pos)
chrom_out, bp_out = np.array(chrom_out), np.array(bp_out, dtype=np.int64)

index = {name: int(np.flatnonzero((chrom_out == c) & (bp_out == bp))[0]) for name, (c, bp) in planted_at.items()}
# Each planted SNP must map to its gene and to no other (default 10 kb window).
mapped = map_snps_to_genes(chrom_out, bp_out, genes, 10).genes_per_snp()
for name, k in index.items():
    assert mapped[k] == (name,), (name, mapped[k])

planted = [PlantedPair(index[a], index[b], model, strength, maf, maf) for a, b, model, strength, maf in PLANTED]
study = simulate_study(N_SNPS, CASES, CONTROLS, seed=SEED, maf_range=(0.05, 0.5), missing_rate=0.01,
                       planted=planted, prevalence=0.1, positions=(chrom_out, bp_out))
paths = study.write(OUT)
print(describe(study))
for a, b, *_ in PLANTED:
    print(f"  {study.variants.snp[index[a]]} in {a}, {study.variants.snp[index[b]]} in {b}")
print("wrote " + ", ".join(paths))
EOF
