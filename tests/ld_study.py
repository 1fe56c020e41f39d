"""An LD-rich study, shaped like a real chip: haplotype blocks with r^2 up to ~1, rare alleles,
1 % missing calls, chromosome X with males hemizygous, a few samples of unknown sex, and a planted
pair. Shared by the PLINK parity tests and the GPU tests (tests/test_plink_parity_ld.py,
tests/test_gpu_ld.py)."""
from __future__ import annotations

import numpy as np

from gboost.simulate import PlantedPair, simulate_study, write_bfile

LD_ARGS = dict(chromosomes=["1", "2", "X"], missing_rate=0.01, maf_range=(0.01, 0.5), ld_block=20, ld_rho=0.97,
               unknown_sex=0.02, planted=[PlantedPair(9, 1499, "xor", 4.0)])


def ld_study(n_snps: int = 3000, n_cases: int = 600, n_controls: int = 600, seed: int = 3):
    return simulate_study(n_snps, n_cases, n_controls, seed=seed, **LD_ARGS)


def flip_every_other_snp(genotypes: np.ndarray) -> np.ndarray:
    """The same study with A1 the major allele at every other SNP (0 <-> 2 copies; missing kept)."""
    g = genotypes.copy()
    odd = g[1::2]
    g[1::2] = np.where(odd < 0, odd, 2 - odd)
    return g


def write_ld_study(prefix: str, *, flipped: bool = False, **kw) -> str:
    sim = ld_study(**kw)
    g = flip_every_other_snp(sim.genotypes) if flipped else sim.genotypes
    write_bfile(prefix, g, sim.variants, sim.samples)
    return prefix
