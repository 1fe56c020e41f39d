"""PLINK 1.9's --fast-epistasis skip of SNPs with "fewer than two genotypes", to the bit.

PLINK decides it per SNP with ``less_than_two_genotypes`` (plink_common.c; read to learn its rule,
not copied) over the scanned samples' 2-bit codes in .fam order, 32 samples to a 64-bit word. It
walks the words up to the first one holding a call, and what it then looks for depends on what that
word holds: after a homozygote for the .bim's A2 (code 11), any other call in that word or a later
one; after a homozygote for A1 (code 00, no het or A2 homozygote in the word), a het or an A2
homozygote in a later word; but after a het with no A2 homozygote in the word, an A1 or an A2
homozygote in a *later* word only: the A1 homozygotes beside that first het in its own word are
never looked at. So a SNP whose calls are hets and A1 homozygotes, with every A1 homozygote in the
first word that holds a call (and a het there too), is skipped as if it had one genotype, unless
that word is the last, partial one (samples beyond the last multiple of 32), which PLINK counts
exactly. Found by bench/parity_sweep.py --more-flags, seed 506: --mind left 32 samples (one word),
two SNPs of hets and A1 homozygotes were skipped by PLINK and scanned by gboost.

In gboost's genotype types, code 11 is type 0, a het type 1 and code 00 type 2 (gboost/data/encode.py).
"""
from __future__ import annotations

import numpy as np

WORD = 32  # samples per 64-bit word of 2-bit codes


def candidates(counts: np.ndarray) -> np.ndarray:
    """Indices of the SNPs (``counts``: ``(b, 3, 2)`` called genotypes per type and class) the
    quirk can skip: hets and code-00 homozygotes, no code-11 homozygote, and at most one word's
    worth of code-00 homozygotes (they must all lie in one word of 32 samples). The last bound
    keeps :func:`skipped`'s per-sample look off the common SNPs of a fileset whose A1 is the major
    allele, where every rare variant has hets and code-00 homozygotes only."""
    called = counts.sum(axis=2)
    return np.flatnonzero((called[:, 0] == 0) & (called[:, 1] > 0) & (called[:, 2] > 0) & (called[:, 2] <= WORD))


def skipped(types: np.ndarray) -> np.ndarray:
    """Which of these SNPs PLINK skips. ``types``: ``(b, n)`` genotype types (-1 missing, 0 code
    11, 1 het, 2 code 00) of the scanned samples in .fam order, for SNPs with no type 0 (see
    :func:`candidates`)."""
    types = np.asarray(types)
    b, n = types.shape
    out = np.zeros(b, dtype=bool)
    full = n // WORD  # whole words; the rest is a partial word PLINK judges exactly
    if b == 0 or full == 0:
        return out
    called = types >= 0
    first = np.argmax(called, axis=1) // WORD  # the first word holding a call
    pos = np.arange(n) // WORD
    in_first = pos[None, :] == first[:, None]
    het_there = ((types == 1) & in_first).any(axis=1)
    hom_elsewhere = ((types == 2) & ~in_first).any(axis=1)
    return (first < full) & called.any(axis=1) & het_there & ~hom_elsewhere


def types_from_bed_rows(raw: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Genotype types ``(len(rows), len(cols))`` read off raw .bed rows ``raw[rows]`` (2-bit codes,
    4 samples a byte) at file columns ``cols``."""
    codes = (raw[np.asarray(rows)][:, cols >> 2] >> ((cols & 3) * 2).astype(np.uint8)) & 3
    return np.array([2, -1, 1, 0], dtype=np.int8)[codes]
