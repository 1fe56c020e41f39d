"""``--perm N``: max(T) permutations of the phenotype, for a family-wise P of every pair (PLINK's
``mperm`` EMP2) and an empirical genome-wide threshold; for a case-control scan (the labels) and a
quantitative trait's (the trait values), through one run (:func:`run_permutations`: seeds, strata,
checkpoint, progress, EMP2 and threshold are the two traits' alike).

Permutation k moves the phenotype of the samples by an order drawn from a generator seeded from
(seed, k) (:func:`permutation_order`; within the strata of a ``--within`` file when given): the same
order for either trait, on every engine, on --resume.

Case-control: the labels so moved (:func:`permuted_labels`) re-encode the planes of the class
split (:func:`permuted_study`: the pooled genotypes of a pair never change, only which of its
samples are cases), and the largest exact statistic of any pair is found. The relabelled planes
are made on a pool of host threads (:class:`Relabeller`); beside an engine whose screen leaves the
host's cores idle (a GPU's), permutation k + 1's are made while k's is screened. Every engine screens it
through the interface it screens the real study with (``Engine.prepare`` / ``run_tiles``), so the
CPU, GPU and Dask engines all serve it and give the same maxima: the exact statistics are computed
here, on the host, from the engines' integer tables.

Finding that maximum without testing every pair exactly: KSA bounds the exact statistic from
above (docs/DESIGN.md §3.3), so a pair whose KSA is below t cannot have an exact statistic of t or
more. A permutation is screened at a threshold t; if some survivor's exact statistic reaches t,
the largest is the permutation's maximum. If none does, the maximum lies below t, and it is at
least L, the largest exact statistic among the survivors and the best KSA partner of every SNP
(the engines' summary partials name them): a second screen at L finds it for certain. t is
chosen from the maxima seen so far (their least, less 4: the maxima of chi-square statistics
spread by about 2 a Gumbel unit), so second screens ("rescans", counted in run.json) are rare,
and the survivors at t few.

Quantitative trait: the trait values so moved (:func:`permuted_trait`; the genotypes, the A1s and
so every pair's table of counts stay) are scanned by the QT engine's own scan, keeping no pair
(:func:`trait_maximum`): its per-SNP summary holds each SNP's best STAT exactly, as the CPU engine
computes every pair's and the GPU engine re-tests on the CPU every pair that could be a SNP's best,
so the largest of them is the permutation's maximum on either engine.

The statistic is PLINK's max(T): the pair's STAT (case-control: its DF is that of the pooled
table, the same under every permutation; quantitative: the Wald chi-square T^2 of the interaction,
so the largest |T|), the largest over the study's valid pairs. EMP2 of a pair is
(1 + the permutations whose maximum is >= its STAT) / (N + 1).
"""
from __future__ import annotations

import math
import os
import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

import numba as nb
import numpy as np

from gboost.data.study import Study
from gboost.engines.base import overlaps_host_work
from gboost.errors import InputError, ScanCancelled
from gboost.pipeline.accumulate import Accumulator
from gboost.pipeline.checkpoint import PERM_LEDGER
from gboost.pipeline.progress import Progress
from gboost.pipeline.tiles import plan_rect_tiles, plan_tiles
from gboost.runtime.numba_cache import cached_njit
from gboost.stats.exact import exact_tests
from gboost.stats.table import popcount64
from gboost.stats.pvalues import Thresholds, chi2_isf, chi2_sf

# The maxima of chi-square statistics over many pairs spread by ~2 a Gumbel unit: a threshold 4 below
# the least maximum seen so far is reached by almost every later permutation.
_MARGIN = 4.0


# --- the labels -----------------------------------------------------------------------------------

def permutation_rng(seed: int, k: int) -> np.random.Generator:
    """The generator of permutation ``k`` (0-based) of a run seeded ``seed``: the same labels on
    every engine, on --resume, and whatever ran before it."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence([int(seed), int(k)])))


def permutation_order(n: int, seed: int, k: int, strata: np.ndarray | None = None) -> np.ndarray:
    """Permutation ``k`` (0-based) of a run seeded ``seed`` of ``n`` samples, as the sample each
    one takes its phenotype from (``phenotype[order]`` is the permuted phenotype); with ``strata``
    (an integer code per sample) within each stratum only: every sample's source is of its stratum."""
    rng = permutation_rng(seed, k)
    codes = np.zeros(n, np.int64) if strata is None else np.asarray(strata, np.int64)
    if len(codes) != n:
        raise ValueError(f"permutation_order: {len(codes)} strata for {n} samples")
    # Positions grouped by stratum in sample order, and grouped by stratum in a random order: the
    # second group's phenotypes moved onto the first's is a uniform permutation within each stratum.
    home = np.argsort(codes, kind="stable")
    shuffled = np.lexsort((rng.random(n), codes))
    order = np.empty(n, np.int64)
    order[home] = shuffled
    return order


def permuted_labels(is_case: np.ndarray, seed: int, k: int, strata: np.ndarray | None = None) -> np.ndarray:
    """``is_case`` (per sample) shuffled by permutation ``k`` of ``seed``; with ``strata`` (an
    integer code per sample) only within each stratum, so every stratum keeps its cases' count."""
    is_case = np.asarray(is_case, dtype=bool)
    return is_case[permutation_order(len(is_case), seed, k, strata)]


def permuted_trait(trait: np.ndarray, seed: int, k: int, strata: np.ndarray | None = None) -> np.ndarray:
    """A quantitative trait (per sample, plane order) moved by permutation ``k`` of ``seed`` (the
    order :func:`permuted_labels` moves labels by); with ``strata`` only within each stratum, so
    every stratum keeps its values."""
    trait = np.asarray(trait, dtype=np.float64)
    return np.ascontiguousarray(trait[permutation_order(len(trait), seed, k, strata)])


def _bit_positions(n_ctrl: int, w_ctrl: int, n: int) -> np.ndarray:
    """Plane bit of each sample in plane order (controls from bit 0, cases from word w_ctrl)."""
    k = np.arange(n, dtype=np.int64)
    return np.where(k < n_ctrl, k, w_ctrl * 64 + (k - n_ctrl))


@cached_njit(nogil=True)
def _gather_rows(planes, src, dst, w_ctrl, out, counts, s0, s1):
    """SNPs [s0, s1) of ``out``: bit dst[k] of each plane = bit src[k] of the same plane of
    ``planes`` (dst increasing), and ``counts`` (per SNP, type, class) recounted from the new words
    (class 0: words below ``w_ctrl``). Per SNP its calls are first read out of its three planes by
    their set bits (each called sample sets one), into a byte per old bit position (3: no call),
    then the new words are filled in order from those bytes: two sequential passes, where a
    bit-by-bit gather of each plane read the planes at random three times over (several times
    slower). Serial and free of the GIL: host threads run ranges of SNPs side by side, beside
    whatever parallel kernel another thread runs (numba's workqueue layer allows only one)."""
    one = np.uint64(1)
    n_bits = planes.shape[2] * 64
    geno = np.empty(n_bits, np.uint8)
    for s in range(s0, s1):
        geno[:] = 3
        for t in range(3):
            for w in range(planes.shape[2]):
                x = planes[s, t, w]
                while x:
                    low = x & (~x + one)
                    geno[w * 64 + popcount64(low - one)] = t
                    x ^= low
        word = -1
        a0 = a1 = a2 = np.uint64(0)
        for k in range(src.shape[0]):
            b = dst[k]
            if (b >> 6) != word:
                if word >= 0:
                    out[s, 0, word] = a0
                    out[s, 1, word] = a1
                    out[s, 2, word] = a2
                word = b >> 6
                a0 = a1 = a2 = np.uint64(0)
            g = geno[src[k]]
            sh = np.uint64(b & 63)
            # (branch-free: a genotype's branch is a coin toss to the predictor, the loop's cost)
            a0 |= np.uint64(g == 0) << sh
            a1 |= np.uint64(g == 1) << sh
            a2 |= np.uint64(g == 2) << sh
        if word >= 0:
            out[s, 0, word] = a0
            out[s, 1, word] = a1
            out[s, 2, word] = a2
        for t in range(3):
            c0 = 0
            c1 = 0
            for w in range(planes.shape[2]):
                if w < w_ctrl:
                    c0 += popcount64(out[s, t, w])
                else:
                    c1 += popcount64(out[s, t, w])
            counts[s, t, 0] = c0
            counts[s, t, 1] = c1


def permuted_study(study: Study, labels: np.ndarray, pool: ThreadPoolExecutor | None = None) -> Study:
    """``study`` with the case/control labels ``labels`` (per sample, plane order; as many cases as
    the study has): its planes re-encoded for the new split (new controls first, each class in the
    study's sample order), its counts recounted. Alleles and PLINK's orientation of each SNP are
    the study's (they come from the pooled genotypes). The study's planes must be written in full
    (the permutations run after the real scan, whose finalize waited for them). ``pool``: host
    threads that share the SNPs (else the calling thread alone)."""
    lay = study.layout
    n = study.n_samples
    labels = np.asarray(labels, dtype=bool)
    if len(labels) != n or int(labels.sum()) != lay.n_case:
        raise ValueError(f"permuted_study: {int(labels.sum())} cases of {len(labels)} labels for a study of "
                         f"{lay.n_case} cases of {n}")
    order = np.concatenate([np.flatnonzero(~labels), np.flatnonzero(labels)])  # new slot -> old sample
    pos = _bit_positions(lay.n_ctrl, lay.w_ctrl, n)
    src = np.ascontiguousarray(pos[order])
    planes = np.zeros_like(study.planes)
    counts = np.empty((study.n_snps, 3, 2), np.int64)
    p = study.n_snps
    step = max(256, -(-p // 64))  # several ranges a thread of a pool of up to 16: none waits long on the last
    ranges = [(a, min(p, a + step)) for a in range(0, p, step)]
    # The first range on this thread: it compiles the kernel (or loads it) where compiling is safe.
    if ranges:
        _gather_rows(study.planes, src, pos, lay.w_ctrl, planes, counts, *ranges[0])
    args = (study.planes, src, pos, lay.w_ctrl, planes, counts)
    if pool is None:
        for a, b in ranges[1:]:
            _gather_rows(*args, a, b)
    else:
        for f in [pool.submit(_gather_rows, *args, a, b) for a, b in ranges[1:]]:
            f.result()
    samples = study.samples.take(order)
    samples.status = np.where(np.arange(n) < lay.n_ctrl, 1, 2).astype(np.int8)
    return replace(study, samples=samples, planes=planes, counts=counts.astype(study.counts.dtype, copy=False),
                   founder_counts=None, reversed_alleles=study.plink_reversed())


class Relabeller:
    """The permuted studies of a case-control run, made on a pool of host threads; with
    ``ahead``, permutation k + 1's is made on a thread of its own while the engine screens k's
    (an engine whose screen leaves the host's cores idle: the GPU's, Dask's). ``clock`` (when
    given) sums under "relabel" the seconds the run waited for them (all of the relabelling
    without ``ahead``)."""

    def __init__(self, study: Study, labels_of: Callable[[int], np.ndarray], n: int, *, threads: int, ahead: bool,
                 clock: dict | None = None):
        self.study, self.labels_of, self.n, self.clock = study, labels_of, n, clock
        self.pool = ThreadPoolExecutor(max(1, threads), thread_name_prefix="gboost-relabel")
        self.back = ThreadPoolExecutor(1, thread_name_prefix="gboost-relabel-next") if ahead else None
        self.next: tuple[int, object] | None = None

    def study_for(self, k: int) -> Study:
        t = time.perf_counter()
        if self.next is not None and self.next[0] == k:
            got = self.next[1].result()
        else:
            self._drop_next()
            got = permuted_study(self.study, self.labels_of(k), self.pool)
        self.next = None
        _add(self.clock, "relabel", t)
        if self.back is not None and k + 1 < self.n:
            self.next = (k + 1, self.back.submit(lambda: permuted_study(self.study, self.labels_of(k + 1), self.pool)))
        return got

    def _drop_next(self) -> None:
        if self.next is not None:
            try:
                self.next[1].result()  # (its threads finish before the pool goes)
            except Exception:  # noqa: BLE001 - a permutation not asked for: its error is not the run's
                pass
            self.next = None

    def close(self) -> None:
        self._drop_next()
        if self.back is not None:
            self.back.shutdown(wait=True)
        self.pool.shutdown(wait=True)


# --- --within -------------------------------------------------------------------------------------

def read_within(path: str | os.PathLike, study: Study) -> np.ndarray:
    """PLINK's cluster file (``--within``: FID IID CLUSTER, whitespace-separated) as a stratum code
    per sample of ``study`` (plane order). Every scanned sample must be listed, once; rows of
    samples the scan does not have are ignored (QC may have removed them)."""
    from gboost.readers.pheno import read_rows

    rows = read_rows(path, "--within")
    found: dict = {}
    for line, tok in rows:
        if len(tok) < 3:
            raise InputError(path, f"line {line}: expected FID IID CLUSTER, found {len(tok)} column"
                                   f"{'' if len(tok) == 1 else 's'}")
        key = (tok[0], tok[1])
        if key in found:
            raise InputError(path, f"line {line}: sample {tok[0]} {tok[1]} again (first on line {found[key][0]}); "
                                   "each sample belongs to one cluster")
        found[key] = (line, tok[2])
    names: dict = {}
    codes = np.empty(study.n_samples, np.int64)
    s = study.samples
    for k in range(study.n_samples):
        hit = found.get((str(s.fid[k]), str(s.iid[k])))
        if hit is None:
            raise InputError(path, f"sample {s.fid[k]} {s.iid[k]} of the scan has no cluster (every scanned "
                                   "sample needs a row: FID IID CLUSTER)")
        codes[k] = names.setdefault(hit[1], len(names))
    return codes


def strata_of(study: Study, params) -> np.ndarray | None:
    """The stratum code of each sample from ``params.within`` (--within) for ``params.perm``'s
    permutations (either test's params); None without --perm or without the file. The pipelines
    read it before their scan, so that a file that does not fit the study is refused first."""
    if not params.perm or params.within is None:
        return None
    return read_within(params.within, study)


# --- one permutation's maximum --------------------------------------------------------------------

@dataclass
class Maximum:
    """A permutation's largest exact statistic and its pair (the first in (i, j) order on ties);
    ``stat`` NaN where the study has no valid pair."""

    k: int
    stat: float
    i: int
    j: int
    df: int
    threshold: float  # the screen that found it
    rescans: int = 0


def _tiles(study: Study, tile: int) -> list:
    rect = study.rect
    if rect is None:
        return plan_tiles(study.n_snps, tile, None)
    return plan_rect_tiles(rect.n_rows, study.n_snps, rect.self_columns(), tile, None)


def _screen_thresholds(t: float) -> Thresholds:
    """Survivors: KSA > a hair below t (KSA and the exact statistic each carry rounding, so a
    pair whose exact statistic is t exactly still survives); nothing counted for the summary."""
    screen = np.full(5, np.inf)
    summary = np.full(5, np.inf)
    cut = -np.inf if not math.isfinite(t) else t - 1e-9 * max(1.0, abs(t))
    screen[[1, 2, 4]] = cut
    return Thresholds(screen, summary)


def _exact(study: Study, i: np.ndarray, j: np.ndarray, tables: np.ndarray):
    rev = study.plink_reversed()
    stat, df, _, _ = exact_tests(tables, rev[i], rev[j])
    ok = (df > 0) & ~np.isnan(stat)
    return stat, df, ok


def _best(i, j, stat, df, ok):
    """(stat, i, j, df) of the largest valid statistic, the first pair in (i, j) order on ties."""
    if not ok.any():
        return None
    top = np.nanmax(np.where(ok, stat, -np.inf))
    hit = np.flatnonzero(ok & (stat == top))
    pick = hit[np.lexsort((j[hit], i[hit]))[0]]
    return float(top), int(i[pick]), int(j[pick]), int(df[pick])


def _add(clock: dict | None, step: str, since: float) -> float:
    now = time.perf_counter()
    if clock is not None:
        clock[step] = clock.get(step, 0.0) + (now - since)
    return now


def screen_maximum(engine, study: Study, t: float, cancel=None, clock: dict | None = None):
    """Screen ``study`` at ``t`` on ``engine``: (best survivor (stat, i, j, df) or None, the lower
    bound L of the study's maximum that the screen shows, valid pairs). Where the best survivor
    reaches t it is the maximum, and L is its statistic. The engine stays prepared (the next
    permutation's prepare takes its place: a GPU keeps its buffers, Dask its cluster); the caller
    closes it. ``clock`` (when given) sums the seconds of the engine's set-up for the study
    ("prepare"), of its tiles ("screen") and of the exact tests after them ("exact")."""
    from gboost.engines.cpu import tables_of

    since = time.perf_counter()
    engine.prepare(study, _screen_thresholds(t))
    since = _add(clock, "prepare", since)
    tiles = _tiles(study, engine.tile_snps())
    acc = Accumulator(study.n_snps)
    for res in engine.run_tiles(tiles, cancel):
        acc.add(res)
    if len(acc.tiles_done) < len(tiles):
        raise ScanCancelled()
    since = _add(clock, "screen", since)
    i, j, _, tables = acc.survivors()
    stat, df, ok = _exact(study, i, j, tables)
    best = _best(i, j, stat, df, ok)
    lower = best[0] if best is not None else -np.inf
    if best is not None and best[0] >= t:  # found: no bound needed
        _add(clock, "exact", since)
        return best, lower, acc.n_valid
    # Each SNP's best partner among the pairs that did not survive: real pairs, whose exact
    # statistics are further lower bounds of the maximum.
    part = acc.summary.best_partner
    m = np.flatnonzero(part >= 0)
    if len(m):
        a, b = np.minimum(m, part[m]), np.maximum(m, part[m])
        key = np.unique(a * np.int64(study.n_snps) + b)
        a, b = key // study.n_snps, key % study.n_snps
        s2, d2, ok2 = _exact(study, a, b, tables_of(study, a, b))
        if ok2.any():
            lower = max(lower, float(np.max(s2[ok2])))
    _add(clock, "exact", since)
    return best, lower, acc.n_valid


def permutation_maximum(engine, study: Study, labels: np.ndarray, t: float, k: int, cancel=None) -> Maximum:
    """The largest exact statistic of ``study`` relabelled by ``labels``, screening first at ``t``
    (``engine`` closed after)."""
    try:
        return relabelled_maximum(engine, permuted_study(study, labels), t, k, cancel)
    finally:
        engine.close()


def relabelled_maximum(engine, pstudy: Study, t: float, k: int, cancel=None, clock: dict | None = None) -> Maximum:
    """The largest exact statistic of ``pstudy`` (a study relabelled by :func:`permuted_study`),
    screening first at ``t``."""
    rescans = 0
    while True:
        best, lower, n_valid = screen_maximum(engine, pstudy, t, cancel, clock)
        if best is not None and best[0] >= t:
            return Maximum(k, best[0], best[1], best[2], best[3], t, rescans)
        if n_valid == 0:
            return Maximum(k, math.nan, -1, -1, 0, t, rescans)
        # Below t: at least ``lower`` (a pair's exact statistic), so a screen there finds it; past
        # two such screens (rounding at the bound itself) every valid pair survives.
        rescans += 1
        t = lower if rescans <= 2 and math.isfinite(lower) else -math.inf


def trait_maximum(engine, study: Study, trait: np.ndarray, k: int, cancel=None) -> Maximum:
    """The largest STAT of any valid pair of the quantitative-trait ``study`` with the trait
    ``trait`` (per sample, plane order), by ``engine``'s QT scan (gboost/engines/qt_cpu.py,
    qt_gpu.py) of the study so relabelled, keeping no pair: the first pair in (i, j) order on ties."""
    pstudy = replace(study, trait=np.ascontiguousarray(trait, np.float64))
    # (thresholds of infinity: no pair is kept, none counts for N_SIG; the summary's bests remain)
    core, qp = engine.scan(pstudy, math.inf, math.inf, cancel=cancel)
    if core.n_valid == 0:
        return Maximum(k, math.nan, -1, -1, 0, -math.inf)
    s = core.partial  # each SNP's best STAT and partner (-inf / -1 where no partner beats 0)
    has = s.best_partner >= 0
    if not has.any():  # every valid pair's STAT is exactly 0: the first valid pair is the maximum
        top, i, j = _first_valid_pair(pstudy, qp)
        return Maximum(k, top, i, j, 1, -math.inf)
    top = float(np.max(s.best[has]))
    # The first SNP whose best is the maximum is the first pair's SNP1, and its partner (the earliest
    # after it, none before it reaching its best) its SNP2; taken as the least (i, j) of every such SNP.
    m = np.flatnonzero(has & (s.best == top))
    a, b = np.minimum(m, s.best_partner[m]), np.maximum(m, s.best_partner[m])
    pick = np.lexsort((b, a))[0]
    return Maximum(k, top, int(a[pick]), int(b[pick]), 1, -math.inf)


def _first_valid_pair(study: Study, qp) -> tuple[float, int, int]:
    """(STAT, i, j) of the first valid pair of ``study`` in (i, j) order (its QT planes ``qp``), row
    by row: a study whose every valid pair has STAT 0 (its summary names no best)."""
    from gboost.engines.qt_cpu import exact_stats

    p, rect = study.n_snps, study.rect
    rows = range(p) if rect is None else range(rect.n_rows)
    own = None if rect is None else rect.self_columns()
    for i in rows:
        j = np.arange(i + 1, p, dtype=np.int64) if rect is None else np.arange(rect.n_rows, p, dtype=np.int64)
        if own is not None:
            j = j[j != own[i]]
        ok, stat = np.zeros(len(j), np.bool_), np.full(len(j), np.nan)
        if len(j):
            exact_stats(*qp.scan_args(), np.full(len(j), i, np.int64), j, ok, stat)
        if ok.any():
            first = int(np.flatnonzero(ok)[0])
            return float(stat[first]), int(i), int(j[first])
    raise AssertionError("a study with valid pairs has a first one")


def next_threshold(maxima: list[float], first: float) -> float:
    """Where to screen the next permutation: below the least maximum so far (``first`` before any)."""
    seen = [m for m in maxima if math.isfinite(m)]
    return (min(seen) if seen else first) - _MARGIN


# --- the run --------------------------------------------------------------------------------------

@dataclass
class PermResult:
    """The N permutations' maxima (in permutation order) and how they were found."""

    n: int
    seed: int
    within: str | None
    n_strata: int | None
    maxima: list = field(default_factory=list)  # Maximum per permutation
    seconds: float = 0.0
    resumed: int = 0  # permutations replayed from the checkpoint
    trait: str = "case-control"  # or "quantitative": which test's STAT the maxima are
    # Seconds of this run's permutations by step (case-control: "relabel", what the run waited for the
    # permuted planes, "screen", "exact"; quantitative: "scan")
    steps: dict = field(default_factory=dict)

    def p_value(self, stat: float, df: int) -> float:
        """The exact P of a STAT of ``df`` as pairs.tsv gives it: the chi-square's (case-control),
        the two-sided normal P of the Wald statistic (quantitative: STAT = T^2, 1 df)."""
        if self.trait == "quantitative":
            from gboost.stats.qt import exact_normal_p

            return float(exact_normal_p(np.array([stat], np.float64), np.array([True]))[0])
        return chi2_sf(stat, df)

    @property
    def stats(self) -> np.ndarray:
        return np.array([m.stat for m in self.maxima], dtype=np.float64)

    @property
    def rescans(self) -> int:
        return int(sum(m.rescans for m in self.maxima))

    def emp2(self, stat: np.ndarray) -> np.ndarray:
        """(1 + permutations whose maximum >= stat) / (N + 1); NaN where stat is NaN."""
        stat = np.asarray(stat, dtype=np.float64)
        mx = np.sort(self.stats[~np.isnan(self.stats)])
        ge = len(mx) - np.searchsorted(mx, stat, side="left")
        out = (1.0 + ge) / (self.n + 1.0)
        return np.where(np.isnan(stat), np.nan, out)

    def threshold(self, alpha: float = 0.05) -> float | None:
        """The least STAT T with EMP2 <= alpha for every STAT above T: the r-th largest maximum,
        r = floor(alpha (N + 1)); None when N is too small for any EMP2 to reach alpha."""
        mx = np.sort(self.stats[~np.isnan(self.stats)])[::-1]
        r = int(math.floor(alpha * (self.n + 1) + 1e-9))
        if r < 1 or r > len(mx):
            return None
        return float(mx[r - 1])

    def as_dict(self) -> dict:
        """run.json's "permutations"."""
        st = self.stats
        finite = st[~np.isnan(st)]
        q95 = float(np.quantile(finite, 0.95)) if len(finite) else None
        t05 = self.threshold(0.05)

        qt = self.trait == "quantitative"

        def p_of(x):
            if x is None:
                return None
            return {"1": self.p_value(x, 1)} if qt else {str(d): chi2_sf(x, d) for d in (4, 2, 1)}

        statistic = ("max(T): the largest STAT (T^2 of the interaction's Wald test, PLINK's --epistasis on a "
                     "quantitative trait, so the largest |T|) over valid pairs, the trait permuted among the samples"
                     if qt else "max(T): the largest exact STAT over valid pairs (PLINK's mperm)")
        return {
            "n": self.n, "seed": self.seed, "within": self.within, "strata": self.n_strata,
            "statistic": statistic,
            "emp2": "(1 + permutations whose maximum >= STAT) / (N + 1)",
            "maxima_quantile_95": q95, "maxima_quantile_95_p_by_df": p_of(q95),
            "threshold_0.05": t05, "threshold_0.05_p_by_df": p_of(t05),
            **({"threshold_0.05_p": None if t05 is None else self.p_value(t05, 1)} if qt else {}),
            "threshold_0.05_rule": "STAT above it has EMP2 <= 0.05 (the floor(0.05 (N + 1))-th largest maximum)",
            "rescans": self.rescans, "resumed": self.resumed, "seconds": round(self.seconds, 6),
            "seconds_by_step": {k: round(v, 6) for k, v in self.steps.items()},
            "seconds_per_permutation": round(self.seconds / max(1, self.n - self.resumed), 6),
        }


def run_permutations(study: Study, engine, n: int, seed: int, *, strata: np.ndarray | None = None,
                     within: str | None = None, first_threshold: float | None = None,
                     checkpoint_dir: str | os.PathLike | None = None,
                     progress: Callable[[Progress], None] | None = None,
                     cancel: Callable[[], bool] | None = None) -> PermResult:
    """``n`` permutations of ``study``'s phenotype on ``engine`` (a case-control engine, or a
    quantitative trait's where ``study.quantitative``), each one's maximum recorded in
    ``checkpoint_dir`` (when given) as it finishes, so that a resumed run continues after the last.
    Case-control: the first permutation is screened below the expected maximum of as many
    independent chi-square(4) statistics as the study has pairs, or below ``first_threshold`` (the
    real scan's maximum) where that is less."""
    t0 = time.perf_counter()
    res = PermResult(n, seed, None if within is None else os.fspath(within),
                     None if strata is None else int(len(np.unique(strata))),
                     trait="quantitative" if study.quantitative else "case-control")
    ledger = PermLedger(checkpoint_dir, study) if checkpoint_dir is not None else None
    if ledger is not None:
        res.maxima = ledger.replay(n)
        res.resumed = len(res.maxima)
    one, done = (_trait_permutations(study, engine, seed, strata, cancel, res.steps) if study.quantitative
                 else _label_permutations(study, engine, n, seed, strata, first_threshold, cancel, res.steps))
    base, start = (res.resumed, 0.0), time.perf_counter()
    try:
        for k in range(len(res.maxima), n):
            if cancel is not None and cancel():
                raise ScanCancelled()
            mx = one(k, res.maxima)
            res.maxima.append(mx)
            if ledger is not None:
                ledger.record(mx)
            if progress is not None:
                now = time.perf_counter() - start
                progress(Progress(k + 1, n, k + 1, n, now, *base, unit="permutations"))
                if k == res.resumed:  # the pace from the first permutation this run finished
                    base = (k + 1, now)
    finally:
        try:
            done()
        finally:
            if ledger is not None:
                ledger.close()
    res.seconds = time.perf_counter() - t0
    return res


def _label_permutations(study: Study, engine, n: int, seed: int, strata, first_threshold, cancel, clock: dict):
    """(``one(k, maxima so far)`` -> permutation k's :class:`Maximum` of a case-control study, the
    call that ends them)."""
    is_case = np.arange(study.n_samples) >= study.layout.n_ctrl
    pairs = max(2, study.n_snps * (study.n_snps - 1) // 2 if study.rect is None else study.rect.n_pairs())
    first = chi2_isf(min(0.5, 1.0 / pairs), 4)  # the largest of that many independent chi-square(4)
    if first_threshold is not None and math.isfinite(first_threshold):
        first = min(first, first_threshold)

    relabel = Relabeller(study, lambda k: permuted_labels(is_case, seed, k, strata), n,
                         threads=nb.get_num_threads(), ahead=overlaps_host_work(engine), clock=clock)

    def one(k: int, maxima: list) -> Maximum:
        t = next_threshold([m.stat for m in maxima], first)
        return relabelled_maximum(engine, relabel.study_for(k), t, k, cancel, clock)

    def done() -> None:
        try:
            engine.close()  # (prepared by each permutation in turn, closed once)
        finally:
            relabel.close()

    return one, done


def _trait_permutations(study: Study, engine, seed: int, strata, cancel, clock: dict):
    """(``one(k, maxima so far)`` -> permutation k's :class:`Maximum` of a quantitative trait, the
    call that ends them)."""

    def one(k: int, maxima: list) -> Maximum:
        since = time.perf_counter()
        got = trait_maximum(engine, study, permuted_trait(study.trait, seed, k, strata), k, cancel)
        _add(clock, "scan", since)
        return got

    return one, engine.close  # (the GPU engine keeps the dosages from one permutation to the next)


# --- the checkpoint of the permutations -----------------------------------------------------------

def _intact_lines(data: bytes):
    """(fields, offset after the line) of each leading line of a ``checkpoint.perm`` whose CRC-32
    holds; stops at the first torn or altered line (the bytes after the last newline are a torn write)."""
    pos = 0
    while True:
        end = data.find(b"\n", pos)
        if end < 0:
            return
        body, _, crc = data[pos:end].rpartition(b"\t")
        if format(zlib.crc32(body), "08x").encode() != crc:
            return
        yield body, end + 1
        pos = end + 1


def perms_recorded(directory: str | os.PathLike) -> int:
    """Permutations an interrupted --perm scan in ``directory`` recorded intact (what --resume keeps
    of them; read only, unlike :meth:`PermLedger.replay`, which cuts a torn tail to append)."""
    try:
        data = (Path(directory) / PERM_LEDGER).read_bytes()
    except OSError:
        return 0
    return sum(1 for _ in _intact_lines(data))


class PermLedger:
    """``checkpoint.perm``: one line per finished permutation (k, its maximum and pair as exact
    hex doubles and integers, the screen threshold, rescans) with the line's CRC-32. Lives beside
    the scan's ledger, whose manifest pins --perm, --perm-seed and --within
    (gboost/pipeline/checkpoint.py): a new ledger removes it, a finished scan's outputs replace it."""

    def __init__(self, directory: str | os.PathLike, study: Study):
        self.path = Path(directory) / PERM_LEDGER
        self.study = study
        self._fh = None
        self._last_sync = 0.0

    @staticmethod
    def _line(m: Maximum) -> bytes:
        body = (f"{m.k}\t{float(m.stat).hex()}\t{m.i}\t{m.j}\t{m.df}\t{float(m.threshold).hex()}\t"
                f"{m.rescans}").encode()
        return body + b"\t" + format(zlib.crc32(body), "08x").encode() + b"\n"

    def replay(self, n: int) -> list[Maximum]:
        """The permutations recorded intact, in order; a torn or foreign tail is cut off."""
        out: list[Maximum] = []
        good = 0
        if self.path.exists():
            p = self.study.n_snps
            for body, end in _intact_lines(self.path.read_bytes()):
                try:
                    k, stat, i, j, df, thr, rescans = body.decode().split("\t")
                    m = Maximum(int(k), float.fromhex(stat), int(i), int(j), int(df), float.fromhex(thr), int(rescans))
                except ValueError:
                    break
                valid = (0 <= m.i < m.j < p and m.df in (1, 2, 4)) or (math.isnan(m.stat) and m.i == m.j == -1)
                if m.k != len(out) or m.k >= n or not valid:
                    raise InputError(self.path, f"line {len(out) + 1}: not a record of this scan's permutations "
                                                "(edited?); use --overwrite to start a new scan")
                out.append(m)
                good = end
        self._fh = open(self.path, "ab")
        self._fh.truncate(good)
        self._fh.seek(good)
        return out

    def record(self, m: Maximum) -> None:
        if self._fh is None:
            self._fh = open(self.path, "ab")
        self._fh.write(self._line(m))
        self._fh.flush()  # a kill -9 loses nothing written; a power cut at most the last 2 s
        now = time.monotonic()
        if now - self._last_sync >= 2.0:
            os.fsync(self._fh.fileno())
            self._last_sync = now

    def close(self) -> None:
        if self._fh is not None:
            try:
                self._fh.flush()
                os.fsync(self._fh.fileno())
            finally:
                self._fh.close()
                self._fh = None
