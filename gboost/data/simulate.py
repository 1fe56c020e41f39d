"""Seeded case-control studies with planted SNP x SNP interactions, and a PLINK .bed writer.

Each planted pair multiplies every individual's disease risk by a factor ``h(a, b)`` of its two
genotypes (a, b = copies of the counted allele, A1); the penetrance is
``baseline x product of the pairs' factors``. Models (``strength`` R = largest / smallest factor):

``xor``
    Pure epistasis, no marginal effect: ``h = 1 + s u(a) v(b)`` with ``u(a) = [a == 1] - P(het)``
    (centred heterozygosity), so risk is high when both SNPs are heterozygous or both homozygous
    and low otherwise (XOR-like). ``E[u] = E[v] = 0`` under Hardy-Weinberg, so the average factor
    at any genotype of either SNP is exactly 1: neither SNP has a marginal effect in the
    population, nor in cases or controls sampled from it.
``additive``
    Pure epistasis, additive x additive: the same with ``u(a) = a - 2 maf`` (centred allele count).
``threshold``
    With marginal effects: ``h = R`` when both SNPs carry at least one A1 copy, else 1 (jointly
    dominant); each SNP alone is associated with disease.

Sampling is retrospective: individuals are drawn from the population (planted SNPs only),
their status drawn from the penetrance, and cases and controls kept until the requested numbers
are reached; every other SNP is a Hardy-Weinberg draw at its own MAF: independent of the others,
or, with ``ld_block``, in haplotype blocks with linkage disequilibrium (below).

LD blocks (``ld_block`` = B SNPs, ``ld_rho`` = r): each haplotype carries a latent uniform u that
runs along a block; at each next SNP it is kept with probability r and redrawn otherwise, and the
haplotype carries A1 where u < MAF. Every SNP keeps its MAF exactly in expectation, and neighbours
are correlated up to r^2 ~ 1 when r is near 1 and the MAFs are alike. Real chips look like this:
near-diagonal pair tables, empty cells, DF 2 and DF 1 pairs, and exact tests whose IPF needs
hundreds of sweeps, which independent SNPs never produce. On chromosome X males carry one
haplotype, written homozygous (as PLINK stores haploid calls); ``unknown_sex`` is the share of
samples whose sex is written 0. Planted pairs
must not share SNPs (so their factors are independent and the no-marginal property holds).
Independent random streams (derived from the seed) drive layout, sampling, background genotypes,
sex and missing calls, so changing the missing rate does not change the genotypes.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from gboost.readers.ped import ArraySource
from gboost.data.study import SampleTable, VariantTable

MODELS = ("xor", "additive", "threshold")
PURE_MODELS = ("xor", "additive")

# GRCh37 chromosome lengths, for realistic base-pair positions.
CHROM_LENGTHS = {
    "1": 249250621, "2": 243199373, "3": 198022430, "4": 191154276, "5": 180915260, "6": 171115067,
    "7": 159138663, "8": 146364022, "9": 141213431, "10": 135534747, "11": 135006516, "12": 133851895,
    "13": 115169878, "14": 107349540, "15": 102531392, "16": 90354753, "17": 81195210, "18": 78077248,
    "19": 59128983, "20": 63025520, "21": 48129895, "22": 51304566, "X": 155270560, "Y": 59373566,
}
_BASES = np.array(["A", "C", "G", "T"])
# PLINK 2-bit codes indexed by genotype + 1: missing 01, 0 copies of A1 11, het 10, A1/A1 00.
_BED_CODE = np.array([0b01, 0b11, 0b10, 0b00], dtype=np.uint8)


@dataclass(frozen=True)
class PlantedPair:
    """A planted interaction between SNPs ``snp_i`` and ``snp_j`` (0-based indices).

    Parameters
    ----------
    snp_i, snp_j
        Indices of the two SNPs.
    model
        ``"xor"`` or ``"additive"`` (no marginal effects) or ``"threshold"`` (with marginal
        effects); see the module notes.
    strength
        Ratio of the largest to the smallest risk factor of the pair's 9 genotype combinations
        (> 1).
    maf_i, maf_j
        Optional minor allele frequencies for the two SNPs (else drawn like the others).
    """

    snp_i: int
    snp_j: int
    model: str = "xor"
    strength: float = 3.0
    maf_i: float | None = None
    maf_j: float | None = None

    def __post_init__(self) -> None:
        if self.model not in MODELS:
            raise ValueError(f"unknown model {self.model!r}; expected one of {', '.join(MODELS)}")
        if not self.strength > 1:
            raise ValueError(f"strength must be > 1 (largest / smallest risk factor), got {self.strength}")
        if self.snp_i == self.snp_j:
            raise ValueError(f"a planted pair needs two different SNPs, got {self.snp_i} twice")


@dataclass
class SimulatedStudy:
    """A simulated study: genotypes (A1 counts, -1 missing) with PLINK-style metadata."""

    genotypes: np.ndarray  # int8 (snps, samples)
    variants: VariantTable
    samples: SampleTable
    maf: np.ndarray  # population frequency of A1 per SNP
    planted: list[PlantedPair]
    factors: list[np.ndarray]  # per pair: 3x3 risk factor h[a, b]
    baseline: float  # penetrance = baseline x product of factors
    seed: int
    draws: int = 0  # individuals drawn to fill the case and control quotas

    def penetrance(self, k: int) -> np.ndarray:
        """3x3 penetrance of pair ``k`` when every other pair's factor is at its mean."""
        others = np.prod([_mean_factor(f, self.maf[p.snp_i], self.maf[p.snp_j])
                          for m, (p, f) in enumerate(zip(self.planted, self.factors)) if m != k])
        return self.baseline * others * self.factors[k]

    def source(self, path: str = "<simulated>") -> ArraySource:
        """This study as a genotype source for :func:`gboost.data.load.load_study`."""
        return ArraySource(path, self.variants, self.samples, self.genotypes)

    def write(self, prefix: str | os.PathLike) -> list[str]:
        """Write ``prefix.bed/.bim/.fam``; returns the three paths."""
        return write_bfile(prefix, self.genotypes, self.variants, self.samples)


def pair_factors(model: str, strength: float, maf_i: float, maf_j: float) -> np.ndarray:
    """Risk factors ``h[a, b]`` (3x3) of a planted pair; see the module notes.

    For the pure models the factor averages to 1 over either SNP's Hardy-Weinberg genotype
    frequencies at every genotype of the other, so there is no marginal effect.
    """
    if model == "threshold":
        h = np.ones((3, 3))
        h[1:, 1:] = strength
        return h
    u, v = _centred(model, maf_i), _centred(model, maf_j)
    d = np.outer(u, v)
    hi, lo = d.max(), d.min()
    # Scale so that max(h) / min(h) = strength: (1 + s hi) = R (1 + s lo), with lo < 0 < hi.
    s = (strength - 1.0) / (hi - strength * lo)
    return 1.0 + s * d


def _centred(model: str, maf: float) -> np.ndarray:
    freq = hwe_frequencies(maf)
    x = np.array([0.0, 1.0, 0.0]) if model == "xor" else np.array([0.0, 1.0, 2.0])
    return x - freq @ x


def hwe_frequencies(maf: float) -> np.ndarray:
    """Genotype frequencies (0, 1, 2 copies of the allele of frequency ``maf``) under HWE."""
    return np.array([(1 - maf) ** 2, 2 * maf * (1 - maf), maf**2])


def _mean_factor(h: np.ndarray, maf_i: float, maf_j: float) -> float:
    return float(hwe_frequencies(maf_i) @ h @ hwe_frequencies(maf_j))


def simulate_study(
    n_snps: int,
    n_cases: int,
    n_controls: int,
    *,
    seed: int,
    chromosomes: int | Sequence[str] = 1,
    maf_range: tuple[float, float] = (0.05, 0.5),
    missing_rate: float = 0.0,
    planted: Sequence[PlantedPair] = (),
    prevalence: float = 0.1,
    positions: tuple[Sequence[str], Sequence[int]] | None = None,
    ld_block: int = 0,
    ld_rho: float = 0.95,
    unknown_sex: float = 0.0,
    duplicates: float = 0.0,
) -> SimulatedStudy:
    """Simulate a case-control study with planted pairwise interactions.

    Parameters
    ----------
    n_snps, n_cases, n_controls
        Study size.
    seed
        Seed of every random draw: the same arguments give the same study.
    chromosomes
        Number K of autosomes (1..K) or a list of chromosome codes; SNPs are spread over them in
        proportion to their (GRCh37) lengths, positions increasing within each.
    maf_range
        MAFs are drawn uniformly in this range (the counted allele A1 is the minor one).
    missing_rate
        Probability that any call is set missing, independently.
    planted
        The interacting pairs (disjoint SNPs).
    prevalence
        Population disease prevalence; the baseline penetrance is set from it (and lowered if a
        penetrance would exceed 1).
    positions
        Optional ``(chromosomes, base-pair positions)`` of the SNPs, one entry each, in the order
        wanted in the ``.bim`` (e.g. on real gene coordinates); ``chromosomes`` is then ignored.
        Without it positions are drawn as described above. Either way the rest of the study is
        drawn the same way.
    ld_block, ld_rho
        Haplotype blocks of ``ld_block`` consecutive SNPs (0: independent SNPs) in which the latent
        allele of a haplotype is kept from one SNP to the next with probability ``ld_rho``; see the
        module notes. Blocks do not cross chromosomes.
    unknown_sex
        Share of samples whose sex is unknown (0 in the .fam).
    duplicates
        Share of SNPs that are copies of another SNP of their chromosome, missing calls included,
        as real arrays probe a variant twice; half of the copies with the alleles swapped (A1 the
        major allele). Planted SNPs are never replaced. Such SNPs tie exactly as partners
        (gboost/pipeline/best_ties.py).

    Returns
    -------
    SimulatedStudy
    """
    _check_arguments(n_snps, n_cases, n_controls, maf_range, missing_rate, planted, prevalence)
    if ld_block < 0 or not 0 <= ld_rho <= 1:
        raise ValueError(f"ld_block must be >= 0 and ld_rho in [0, 1], got {ld_block} and {ld_rho}")
    if not 0 <= unknown_sex <= 1:
        raise ValueError(f"unknown_sex must be in [0, 1], got {unknown_sex}")
    if not 0 <= duplicates < 1:
        raise ValueError(f"duplicates must be in [0, 1), got {duplicates}")
    layout_rng, sample_rng, background_rng, sex_rng, missing_rng = (
        np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(5)
    )
    chrom_list = [str(c) for c in (range(1, chromosomes + 1) if isinstance(chromosomes, int) else chromosomes)]
    variants, maf = _layout(n_snps, chrom_list, maf_range, planted, layout_rng, _check_positions(positions, n_snps))
    factors = [pair_factors(p.model, p.strength, maf[p.snp_i], maf[p.snp_j]) for p in planted]
    baseline = _baseline(prevalence, planted, factors, maf)
    planted_snps = np.array([s for p in planted for s in (p.snp_i, p.snp_j)], dtype=np.intp)
    planted_geno, is_case, draws = _sample_retrospective(
        maf[planted_snps], planted, factors, baseline, n_cases, n_controls, sample_rng
    )
    n = n_cases + n_controls
    samples = _samples(is_case, sex_rng, unknown_sex)
    if ld_block > 1 or "X" in set(variants.chrom.tolist()):
        genotypes = _haplotype_blocks(maf, variants.chrom, samples.sex, ld_block, ld_rho, background_rng)
    else:  # (the original independent draw, kept so that earlier seeds give the same studies)
        genotypes = _background(maf, n, background_rng)
    genotypes[planted_snps] = planted_geno
    _set_missing(genotypes, missing_rate, missing_rng)
    if duplicates > 0:  # (a stream of its own: studies without copies are drawn as before)
        dup_rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(6)[5])
        variants, maf = _duplicate(genotypes, variants, maf, planted_snps, duplicates, dup_rng)
    return SimulatedStudy(genotypes, variants, samples, maf, list(planted), factors, baseline, seed, draws)


def _duplicate(genotypes, variants: VariantTable, maf, planted_snps, share: float, rng):
    """Replace ``share`` of the SNPs (in place) by copies of other SNPs of their chromosome, half
    with the alleles swapped; returns the variants and A1 frequencies that go with them."""
    p = len(genotypes)
    free = np.setdiff1d(np.arange(p), planted_snps)
    targets = rng.choice(free, size=min(len(free), int(round(share * p))), replace=False)
    a1, a2, maf = variants.a1.copy(), variants.a2.copy(), maf.copy()
    chrom = variants.chrom
    for t in np.sort(targets).tolist():
        same = np.flatnonzero((chrom == chrom[t]) & (np.arange(p) != t))
        if len(same) == 0:
            continue
        src = int(rng.choice(same))
        g = genotypes[src].copy()
        a1[t], a2[t], maf[t] = a1[src], a2[src], maf[src]
        if rng.random() < 0.5:  # the same variant, its alleles the other way round
            g = np.where(g >= 0, 2 - g, g).astype(genotypes.dtype)
            a1[t], a2[t], maf[t] = a2[src], a1[src], 1.0 - maf[src]
        genotypes[t] = g
    return VariantTable(variants.chrom, variants.snp, variants.cm, variants.bp, a1, a2), maf


def simulate_qt_study(
    n_snps: int,
    n_samples: int,
    *,
    seed: int,
    chromosomes: int | Sequence[str] = 1,
    maf_range: tuple[float, float] = (0.05, 0.5),
    missing_rate: float = 0.0,
    effects: Sequence[tuple[int, int, float]] = (),
    ld_block: int = 0,
    ld_rho: float = 0.95,
    unknown_sex: float = 0.0,
    mean: float = 10.0,
    missing_trait: float = 0.0,
) -> SimulatedStudy:
    """Simulate a study with a quantitative trait and planted interactions.

    Genotypes are drawn as by :func:`simulate_study` (population samples, no ascertainment); the
    trait is ``mean + sum_k beta_k * (a_k b_k - E[a_k b_k]) + N(0, 1)`` for ``effects`` =
    ``[(i, j, beta), ...]`` (0-based SNPs), with ``a_k``, ``b_k`` the A1 dosages of SNPs i and j
    (``beta``: the interaction effect per unit of the dosage product, in noise SDs). Missing calls are drawn
    after the trait, so the trait depends on the true genotypes. A share ``missing_trait`` of the
    samples get a missing trait (-9 in the .fam). Returns a :class:`SimulatedStudy` whose samples
    carry the trait (``samples.trait``, NaN for missing; status 1 where present, 0 where missing).
    """
    planted = [PlantedPair(int(i), int(j), "additive", 2.0) for i, j, _ in effects]  # (checks the SNPs only)
    _check_arguments(n_snps, n_samples, 0, maf_range, missing_rate, planted, 0.1)
    if not 0 <= missing_trait < 1:
        raise ValueError(f"missing_trait must be in [0, 1), got {missing_trait}")
    layout_rng, trait_rng, background_rng, sex_rng, missing_rng = (
        np.random.default_rng(s) for s in np.random.SeedSequence([seed, 22]).spawn(5)
    )
    chrom_list = [str(c) for c in (range(1, chromosomes + 1) if isinstance(chromosomes, int) else chromosomes)]
    variants, maf = _layout(n_snps, chrom_list, maf_range, planted, layout_rng)
    samples = _samples(np.zeros(n_samples, bool), sex_rng, unknown_sex)
    if ld_block > 1 or "X" in set(variants.chrom.tolist()):
        genotypes = _haplotype_blocks(maf, variants.chrom, samples.sex, ld_block, ld_rho, background_rng)
    else:
        genotypes = _background(maf, n_samples, background_rng)
    y = mean + trait_rng.standard_normal(n_samples)
    for i, j, beta in effects:
        a, b = genotypes[i].astype(np.float64), genotypes[j].astype(np.float64)
        expected = 4.0 * maf[i] * maf[j]  # E[a b] for independent HWE SNPs
        y += beta * (a * b - expected)
    if missing_trait > 0:
        y[trait_rng.random(n_samples) < missing_trait] = np.nan
    _set_missing(genotypes, missing_rate, missing_rng)
    # the values the .fam will hold (write_bfile prints 6 decimals), so memory and file agree
    y = np.array([np.nan if np.isnan(v) else float(f"{v:.6f}") for v in y.tolist()])
    samples.trait = y
    samples.status = np.where(np.isnan(y), 0, 1).astype(np.int8)
    study = SimulatedStudy(genotypes, variants, samples, maf, [], [], 0.0, seed, n_samples)
    study.effects = [(int(i), int(j), float(beta)) for i, j, beta in effects]
    return study


def _check_arguments(n_snps, n_cases, n_controls, maf_range, missing_rate, planted, prevalence) -> None:
    if n_snps < 1 or n_cases < 0 or n_controls < 0:
        raise ValueError("need at least one SNP and non-negative case and control counts")
    lo, hi = maf_range
    if not 0 < lo <= hi <= 0.5:
        raise ValueError(f"maf_range must satisfy 0 < low <= high <= 0.5, got {maf_range}")
    if not 0 <= missing_rate < 1:
        raise ValueError(f"missing_rate must be in [0, 1), got {missing_rate}")
    if not 0 < prevalence < 1:
        raise ValueError(f"prevalence must be in (0, 1), got {prevalence}")
    used: set[int] = set()
    for p in planted:
        for s, maf in ((p.snp_i, p.maf_i), (p.snp_j, p.maf_j)):
            if not 0 <= s < n_snps:
                raise ValueError(f"planted SNP index {s} is outside 0..{n_snps - 1}")
            if s in used:
                raise ValueError(f"SNP {s} is in two planted pairs; planted pairs must be disjoint")
            if maf is not None and not 0 < maf <= 0.5:
                raise ValueError(f"planted MAF {maf} must be in (0, 0.5]")
            used.add(s)


def _check_positions(positions, n_snps) -> tuple[np.ndarray, np.ndarray] | None:
    if positions is None:
        return None
    chrom, bp = np.asarray(positions[0], dtype=str), np.asarray(positions[1])
    if len(chrom) != n_snps or len(bp) != n_snps:
        raise ValueError(f"positions must give a chromosome and a position for each of the {n_snps} SNPs, "
                         f"got {len(chrom)} and {len(bp)}")
    if not np.issubdtype(bp.dtype, np.integer) or (bp < 1).any():
        raise ValueError("positions must be integers >= 1 (base pairs)")
    return chrom, bp.astype(np.int64)


def _layout(n_snps, chrom_list, maf_range, planted, rng, positions=None) -> tuple[VariantTable, np.ndarray]:
    """Chromosomes, positions, alleles, IDs and MAFs of every SNP."""
    if positions is None:
        lengths = np.array([CHROM_LENGTHS.get(c.upper().removeprefix("CHR"), 100_000_000) for c in chrom_list], dtype=float)
        per_chrom = _apportion(n_snps, lengths)
        chrom = np.repeat(np.array(chrom_list, dtype=str), per_chrom)
        bp = np.concatenate([_positions(k, int(length), rng) for k, length in zip(per_chrom, lengths)])
    else:
        chrom, bp = positions
    maf = rng.uniform(maf_range[0], maf_range[1], n_snps)
    for p in planted:
        if p.maf_i is not None:
            maf[p.snp_i] = p.maf_i
        if p.maf_j is not None:
            maf[p.snp_j] = p.maf_j
    bases = np.argsort(rng.random((n_snps, 4)), axis=1)[:, :2]  # two distinct bases per SNP
    variants = VariantTable(
        chrom,
        np.array([f"snp{k}" for k in range(1, n_snps + 1)], dtype=str),
        np.round(bp / 1e6, 6),  # ~1 cM per Mb
        bp.astype(np.int64),
        _BASES[bases[:, 0]],
        _BASES[bases[:, 1]],
    )
    return variants, maf


def _apportion(total: int, weights: np.ndarray) -> np.ndarray:
    """Split ``total`` in proportion to ``weights`` (largest remainders)."""
    share = total * weights / weights.sum()
    counts = np.floor(share).astype(int)
    counts[np.argsort(counts - share)[: total - counts.sum()]] += 1
    return counts


def _positions(k: int, length: int, rng) -> np.ndarray:
    """``k`` distinct sorted positions inside a chromosome of ``length`` bp (10 kb from the ends)."""
    lo, hi = 10_000, max(length - 10_000, 10_000 + 2 * k)
    pos = np.unique(rng.integers(lo, hi, k))
    while len(pos) < k:
        pos = np.unique(np.concatenate([pos, rng.integers(lo, hi, k - len(pos))]))
    return pos


def _baseline(prevalence, planted, factors, maf) -> float:
    mean = np.prod([_mean_factor(f, maf[p.snp_i], maf[p.snp_j]) for p, f in zip(planted, factors)])
    peak = np.prod([f.max() for f in factors])
    return float(min(prevalence / mean, 1.0 / peak))


def _sample_retrospective(maf, planted, factors, baseline, n_cases, n_controls, rng):
    """Draw individuals (planted SNPs only) until the case and control quotas are full.

    Returns genotypes ``(2 x pairs, n)`` with the kept cases and controls, their status in draw
    order, and the number of individuals drawn.
    """
    need = {True: n_cases, False: n_controls}
    kept = {True: [], False: []}
    draws = 0
    batch = max(1024, 2 * (n_cases + n_controls))
    while need[True] > 0 or need[False] > 0:
        geno = rng.binomial(2, maf[:, None], size=(len(maf), batch)).astype(np.int8)
        risk = np.full(batch, baseline)
        for k, h in enumerate(factors):
            risk *= h[geno[2 * k], geno[2 * k + 1]]
        affected = rng.random(batch) < risk
        for status in (True, False):
            take = np.flatnonzero(affected == status)[: need[status]]
            kept[status].append(geno[:, take])
            need[status] -= len(take)
        draws += batch
    geno = np.concatenate(kept[True] + kept[False], axis=1)
    is_case = np.r_[np.ones(n_cases, bool), np.zeros(n_controls, bool)]
    # Interleave cases and controls as in real files (the order carries no information).
    order = rng.permutation(len(is_case))
    return geno[:, order], is_case[order], draws


def _background(maf: np.ndarray, n: int, rng) -> np.ndarray:
    """Independent Hardy-Weinberg genotypes for every SNP (planted rows overwritten later)."""
    out = np.empty((len(maf), n), dtype=np.int8)
    for start in range(0, len(maf), 4096):
        m = maf[start : start + 4096, None]
        out[start : start + 4096] = rng.binomial(2, m, size=(len(m), n))
    return out


def _haplotype_blocks(maf, chrom, sex, block: int, rho: float, rng) -> np.ndarray:
    """Genotypes drawn as two haplotypes per sample, in LD blocks of ``block`` SNPs (see the module
    notes); males on X get one haplotype, doubled."""
    p, n = len(maf), len(sex)
    out = np.empty((p, n), dtype=np.int8)
    male = np.asarray(sex) == 1
    u = rng.random((2, n))
    run = 0
    for j in range(p):
        if j and block > 1 and run < block and chrom[j] == chrom[j - 1]:
            keep = rng.random((2, n)) < rho
            u = np.where(keep, u, rng.random((2, n)))
            run += 1
        else:
            u = rng.random((2, n))
            run = 1
        h = u < maf[j]
        g = h[0].astype(np.int8) + h[1]
        if chrom[j] == "X":
            g = np.where(male, 2 * h[0], g).astype(np.int8)
        out[j] = g
    return out


def _set_missing(genotypes: np.ndarray, rate: float, rng) -> None:
    if rate > 0:
        for start in range(0, len(genotypes), 4096):
            block = genotypes[start : start + 4096]
            block[rng.random(block.shape) < rate] = -1


def _samples(is_case: np.ndarray, rng, unknown_sex: float = 0.0) -> SampleTable:
    n = len(is_case)
    sex = rng.integers(1, 3, n).astype(np.int8)
    if unknown_sex > 0:  # (drawn after the sexes, so that 0 keeps earlier seeds' studies)
        sex[rng.random(n) < unknown_sex] = 0
    return SampleTable(
        np.array([f"fam{k}" for k in range(1, n + 1)], dtype=str),
        np.array([f"ind{k}" for k in range(1, n + 1)], dtype=str),
        sex,
        np.where(is_case, 2, 1).astype(np.int8),
    )


def write_bfile(
    prefix: str | os.PathLike,
    genotypes: np.ndarray,
    variants: VariantTable,
    samples: SampleTable,
    *,
    block_snps: int = 8192,
) -> list[str]:
    """Write a SNP-major PLINK 1 binary fileset.

    Parameters
    ----------
    prefix
        Output path without extension.
    genotypes
        int8 ``(snps, samples)``: copies of A1 (0/1/2), -1 missing.
    variants, samples
        Metadata; a sample status of 0 is written as ``-9`` (missing).
    block_snps
        SNPs packed at a time.

    Returns
    -------
    The paths of the .bed, .bim and .fam written.
    """
    prefix = os.fspath(prefix)
    genotypes = np.asarray(genotypes)
    p, n = genotypes.shape
    if p != len(variants) or n != len(samples):
        raise ValueError(f"genotypes {genotypes.shape} do not match {len(variants)} SNPs x {len(samples)} samples")
    bed, bim, fam = (prefix + ext for ext in (".bed", ".bim", ".fam"))
    with open(bed, "wb") as fh:
        fh.write(bytes([0x6C, 0x1B, 0x01]))
        for start in range(0, p, block_snps):
            fh.write(pack_bed_block(genotypes[start : start + block_snps]).tobytes())
    with open(bim, "w", encoding="utf-8") as fh:
        for row in zip(variants.chrom, variants.snp, variants.cm, variants.bp, variants.a1, variants.a2):
            fh.write("{}\t{}\t{:.10g}\t{}\t{}\t{}\n".format(*row))
    with open(fam, "w", encoding="utf-8") as fh:
        trait = getattr(samples, "trait", None)
        if trait is not None:  # a quantitative trait, 6 decimals (what PLINK and gboost read back), -9 missing
            for f, i, sex, y in zip(samples.fid, samples.iid, samples.sex, trait):
                fh.write(f"{f} {i} 0 0 {int(sex)} {'-9' if np.isnan(y) else f'{y:.6f}'}\n")
        else:
            for f, i, sex, status in zip(samples.fid, samples.iid, samples.sex, samples.status):
                fh.write(f"{f} {i} 0 0 {int(sex)} {int(status) if status in (1, 2) else -9}\n")
    return [bed, bim, fam]


def pack_bed_block(geno: np.ndarray) -> np.ndarray:
    """Pack int8 genotypes ``(snps, n)`` into .bed bytes ``(snps, ceil(n/4))`` (4 samples a byte)."""
    geno = np.asarray(geno)
    if ((geno < -1) | (geno > 2)).any():
        raise ValueError("genotypes must be 0, 1, 2 or -1 (missing)")
    b, n = geno.shape
    codes = np.zeros((b, 4 * ((n + 3) // 4)), dtype=np.uint8)  # padding 00, as PLINK writes
    codes[:, :n] = _BED_CODE[geno.astype(np.intp) + 1]
    quads = codes.reshape(b, -1, 4)
    return quads[:, :, 0] | (quads[:, :, 1] << 2) | (quads[:, :, 2] << 4) | (quads[:, :, 3] << 6)
