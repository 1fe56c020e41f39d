"""PLINK 1.9's BEST_SNP where a SNP's best partners tie (docs/plink_boost_notes.md §6).

Two partners q and q' of a SNP m give the same statistic whenever q and q' split the samples the
same way, up to the names of the three genotypes: a duplicated SNP, the same SNP with its alleles
swapped, rare variants carried by the same samples, SNPs in perfect LD with the same missing calls.
Real genotype data has many. Their tables with m are then the same table with rows or columns
relabelled (and transposed where q lies before m and q' after), so their z (the KSA, or the exact
statistic of a pair over the screen) are equal as numbers, but not as doubles: PLINK evaluates each
table in its own orientation (the first SNP's genotypes as rows, cases first, each SNP's genotypes
in the order of its minor allele), and the last bits differ. PLINK's summary then takes the partner
whose double is larger, where gboost's engines, which compute the same value another way, saw a tie
or the other order, and BEST_SNP differed (a 1,000-sample study with a duplicated eighth of its SNPs:
10 of 337 summary rows; 20,000 SNPs with 5 % duplicated: 223 of 20,000; bench/parity_sweep.py and
tests/parity/test_best_ties.py). The exact statistic of a pair over the screen is already PLINK's double
(gboost/stats/exact.py evaluates it in PLINK's order), so what differs is the KSA of pairs below it.

So after the scan, for each SNP whose best partner has such equivalents, z is computed again for
every equivalent partner exactly as PLINK computes it (:func:`plink_z`, its order of operations in
double precision: fepi_counts_to_boost_chisq of plink_ld.c, read to learn the order, not copied),
and the best is chosen among them by PLINK's rule (:func:`gboost.pipeline.tiles.better`).

Partners whose statistics are equal only by coincidence are not alike: in a study of a few dozen
samples (a cohort cut down by --mind, a candidate-gene study) unrelated partners often give tables of
the same statistic, and so do partners alike only on the samples called at m. Finding those takes
every partner's z. So where that second pass over every pair is cheap (:func:`tie_classes`: p (p - 1)
times (plane words + 20) up to ``ALL_PARTNERS_WORK``, a few tenths of a second), every SNP is put in one
class and the best is re-chosen among all partners by PLINK's z and rule, which is what PLINK itself
computes; elsewhere the alike classes stand (docs/plink_boost_notes.md §6).

PLINK's orientation of a pair and its order of operations: gboost/stats/plink_order.py.
"""
from __future__ import annotations

import math

import numpy as np

from gboost.runtime.numba_cache import cached_njit
from gboost.stats.plink_order import plink_counts, plink_z
from gboost.stats.table import pair_table
from gboost.pipeline.tiles import better

# ---- Classes of SNPs that split the samples alike ------------------------------------------------

_MIX = np.array([0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93,
                 0xFF51AFD7ED558CCD, 0xC4CEB9FE1A85EC53], dtype=np.uint64)


@cached_njit()
def _plane_hashes(planes, rows, out):
    """A 64-bit hash of each genotype plane of SNPs ``rows`` (``out[k, t]``)."""
    n_words = planes.shape[2]
    for k in range(len(rows)):
        s = rows[k]
        for t in range(3):
            h = np.uint64(0x243F6A8885A308D3)
            for w in range(n_words):
                h = (h ^ planes[s, t, w]) * np.uint64(0x100000001B3)
                h ^= h >> np.uint64(29)
            out[k, t] = h


def equivalence_classes(planes: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Per SNP, the index of the first SNP that splits the called samples into the same three
    genotype groups (up to their names), per class; -1 for a SNP alike to no other.

    Candidates first by their counts (the three (controls, cases) pairs, in sorted order: alike
    SNPs have the same), then by hashes of their planes, and every member checked plane by plane
    against its class's first SNP."""
    p = counts.shape[0]
    out = np.full(p, -1, dtype=np.int64)
    if p < 2:
        return out
    pairs = np.ascontiguousarray(counts, dtype=np.int64).reshape(p, 3, 2)
    key = np.sort(pairs[:, :, 0] * (1 << 32) + pairs[:, :, 1], axis=1)  # a type's (controls, cases), sorted
    h = (key.astype(np.uint64) * _MIX[:3]).sum(axis=1, dtype=np.uint64)
    order = np.argsort(h, kind="stable")
    hs = h[order]
    same = np.flatnonzero(hs[1:] == hs[:-1])
    if len(same) == 0:
        return out
    cand = np.unique(np.concatenate([order[same], order[same + 1]]))
    ph = np.empty((len(cand), 3), dtype=np.uint64)
    _plane_hashes(planes, cand, ph)
    full = (np.sort(ph, axis=1) * _MIX[3:]).sum(axis=1, dtype=np.uint64) ^ h[cand]
    by = np.argsort(full, kind="stable")
    groups = np.split(cand[by], np.flatnonzero(np.diff(full[by]) != 0) + 1)
    for g in groups:
        if len(g) < 2:
            continue
        g = np.sort(g)
        first = g[0]
        ref = planes[first]
        members = [first]
        for s in g[1:]:
            if _alike(ref, planes[s]):
                members.append(s)
        if len(members) > 1:
            out[np.array(members)] = first
    return out


def _alike(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether planes ``b`` (3, W) are planes ``a`` with the three genotypes renamed."""
    used = [False, False, False]
    for t in range(3):
        for u in range(3):
            if not used[u] and np.array_equal(a[t], b[u]):
                used[u] = True
                break
        else:
            return False
    return True


# The work of re-choosing every SNP's best among all its partners, as p (p - 1) times (plane words + 20):
# each unordered pair's table (its words) and PLINK's z (a fixed cost of about 20 words'), once a pair
# (_all_pairs_z). At the bound: ~1,160 SNPs of a few dozen samples, ~910 of 1,000, ~550 of 5,000; near it
# the re-choice takes a fraction of a second even on two cores, small beside the scan of so few SNPs.
ALL_PARTNERS_WORK = 30_000_000


def tie_classes(planes: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The classes :func:`repair_best` re-chooses within: every SNP in class 0 where re-choosing among
    all partners is cheap (``ALL_PARTNERS_WORK``), so that coincidental ties are settled as PLINK
    settles them; else :func:`equivalence_classes`."""
    p = counts.shape[0]
    if p >= 2 and p * (p - 1) * (planes.shape[2] + 20) <= ALL_PARTNERS_WORK:
        return np.zeros(p, dtype=np.int64)
    return equivalence_classes(planes, counts)


# ---- The repair --------------------------------------------------------------------------------


@cached_njit(inline="always")
def _pair_z(planes, counts, has_missing, w_ctrl, rev, alpha1, i, j, t, c):
    """PLINK's z of pair (i, j), i < j: its table, PLINK's orientation of it, PLINK's double
    (``t``, ``c``: scratch of the caller's)."""
    pair_table(planes, counts, has_missing, w_ctrl, i, j, t)
    plink_counts(t, rev[i], rev[j], c)
    return plink_z(c, alpha1)


@cached_njit()
def _candidate_z(planes, counts, has_missing, w_ctrl, m_of, q_of, rev, alpha1, out):
    t = np.zeros((3, 3, 2), np.int64)
    c = np.zeros(18, np.int64)
    for k in range(len(m_of)):
        m, q = m_of[k], q_of[k]
        i, j = (m, q) if m < q else (q, m)
        out[k] = _pair_z(planes, counts, has_missing, w_ctrl, rev, alpha1, i, j, t, c)


@cached_njit()
def _all_pairs_z(planes, counts, has_missing, w_ctrl, rev, alpha1, r0, r1, z):
    """PLINK's z of every pair (i < j, r0 <= i < r1) into z[i, j] and z[j, i] (NaN elsewhere)."""
    p = z.shape[0]
    t = np.zeros((3, 3, 2), np.int64)
    c = np.zeros(18, np.int64)
    for i in range(r0, r1):
        for j in range(i + 1, p):
            z[i, j] = z[j, i] = _pair_z(planes, counts, has_missing, w_ctrl, rev, alpha1, i, j, t, c)


@cached_njit()
def _choose_all(z, snps, best, best_partner, done):
    """For each SNP m of ``snps``, its best among every partner by PLINK's rule (``better``), where
    one has z > 0: written into ``best``/``best_partner`` and flagged in ``done``."""
    for k in range(len(snps)):
        m = snps[k]
        bv, bp = -np.inf, -1
        for q in range(z.shape[0]):
            v = z[m, q]
            if q != m and not np.isnan(v) and better(v, q, bv, bp, m):
                bv, bp = v, q
        if bp >= 0 and bv > 0:
            best[m], best_partner[m] = bv, bp
            done[k] = True


def _repair_all(study, summary, alpha1: np.ndarray, snps: np.ndarray, r0: int, r1: int, rect=None,
                own=None) -> np.ndarray:
    """:func:`repair_best` where every SNP is one class (:func:`tie_classes` of a small study): each pair's
    z once, then each SNP's choice among all its partners (a rectangle's row: the columns but its own)."""
    p = study.n_snps
    z = np.full((p, p), np.nan)
    _all_pairs_z(study.planes, study.counts, study.has_missing, study.layout.w_ctrl, study.plink_reversed(),
                 np.ascontiguousarray(alpha1, dtype=np.float64), r0, r1, z)
    if rect is not None:
        n = rect.n_rows
        z[:n, :n] = np.nan
        has = np.flatnonzero(own >= 0)
        z[has, own[has]] = np.nan
    done = np.zeros(len(snps), np.bool_)
    _choose_all(z, np.ascontiguousarray(snps, np.int64), summary.best, summary.best_partner, done)
    return snps[done]


def repair_best(study, summary, alpha1: np.ndarray, cls: np.ndarray, rows: tuple[int, int] | None = None) -> np.ndarray:
    """Re-choose, in place, the best partner of every SNP whose best partner has alike SNPs
    (``cls``: :func:`tie_classes` of the study), among those alike partners, by PLINK's z
    (:func:`plink_z`) and PLINK's rule; its value becomes PLINK's z. ``alpha1[d]``: the screen
    threshold for DF d. ``rows`` = (r0, r1): only pairs whose first SNP lies in [r0, r1) (a --part's
    share). Returns the SNPs re-chosen.

    Needs the study's planes, written (finalize runs it once every plane is; a merge of --part
    outputs has none: it takes what each part chose, :func:`apply_part_ties`)."""
    none = np.zeros(0, np.int64)
    planes = study.planes
    best_p = summary.best_partner
    ok = best_p >= 0
    lead = np.full(len(best_p), -1, np.int64)
    lead[ok] = cls[best_p[ok]]
    snps = np.flatnonzero(ok & (lead >= 0) & (summary.best > 0))
    # A candidate-set scan's rectangle (gboost/data/candidates.py): only its rows have a summary, and
    # a row's partners are the columns other than its own.
    rect = getattr(study, "rect", None)
    own = None
    if rect is not None:
        snps = snps[snps < rect.n_rows]
        own = rect.self_columns()
    if len(snps) == 0:
        return none
    r0, r1 = rows if rows is not None else (0, study.n_snps)
    if len(cls) and not cls.any():  # one class: every partner (tie_classes of a small study)
        return _repair_all(study, summary, alpha1, snps, r0, r1, rect, own)
    members: dict = {}
    for s_ in np.flatnonzero(cls >= 0):
        members.setdefault(int(cls[s_]), []).append(int(s_))
    m_of, q_of = [], []
    for m in snps.tolist():
        qs = [q for q in members[int(lead[m])] if q != m and r0 <= min(m, q) < r1
              and (rect is None or (q >= rect.n_rows and q != own[m]))]
        m_of += [m] * len(qs)
        q_of += qs
    if not m_of:
        return none
    m_of, q_of = np.array(m_of, np.int64), np.array(q_of, np.int64)
    rev = study.plink_reversed()
    z = np.empty(len(m_of))
    _candidate_z(planes, study.counts, study.has_missing, study.layout.w_ctrl, m_of, q_of, rev,
                 np.ascontiguousarray(alpha1, dtype=np.float64), z)
    done = []
    starts = np.flatnonzero(np.r_[True, m_of[1:] != m_of[:-1]])
    for a, b in zip(starts, np.r_[starts[1:], len(m_of)]):
        m = int(m_of[a])
        bv, bp = -np.inf, -1
        for k in range(a, b):
            if not math.isnan(z[k]) and better(z[k], int(q_of[k]), bv, bp, m):
                bv, bp = float(z[k]), int(q_of[k])
        if bp >= 0 and bv > 0:
            summary.best[m], summary.best_partner[m] = bv, bp
            done.append(m)
    return np.array(done, np.int64)


def apply_part_ties(summary, cls: np.ndarray, ties: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """:func:`repair_best` for a merge of --part outputs, in place: each part re-chose, among its
    own pairs, the best partner of every SNP whose best was alike to others (``ties``: per part,
    PLINK's z and the partner, NaN and -1 elsewhere); for a SNP whose best partner after the merge
    has alike SNPs, the parts' choices of that class compete by PLINK's rule. A part whose share
    holds a member of that class had its own best in that class (they tie with the best), so every
    member is among the choices. Returns the SNPs re-chosen."""
    best_p = summary.best_partner
    lead = np.where(best_p >= 0, cls[np.maximum(best_p, 0)], -1)
    done = []
    for m in np.flatnonzero((lead >= 0) & (summary.best > 0)).tolist():
        g = lead[m]
        bv, bp = -np.inf, -1
        for z, q in ties:
            if q[m] >= 0 and cls[q[m]] == g and better(z[m], int(q[m]), bv, bp, m):
                bv, bp = float(z[m]), int(q[m])
        if bp >= 0:
            summary.best[m], summary.best_partner[m] = bv, bp
            done.append(m)
    return np.array(done, np.int64)
