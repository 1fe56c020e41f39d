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
10 of 337 summary rows, bench/parity_sweep.py and tests/test_best_ties.py).

So after the scan, for each SNP whose best partner has such equivalents, z is computed again for
every equivalent partner exactly as PLINK computes it (:func:`plink_z`, its order of operations in
double precision: fepi_counts_to_boost_chisq of plink_ld.c, read to learn the order, not copied),
and the best is chosen among them by PLINK's rule (:func:`gboost.tiles.better`). Partners whose
statistics are equal only by coincidence (a study left with a dozen samples by --mind) are not
looked for: that would take a second pass over every pair.

A SNP's genotype order in PLINK: PLINK 1.9 makes A1 the minor allele of the founders
(:func:`gboost.load.founders_a1_major`; ``--keep-allele-order`` aside, which gboost does not
have), and lays its three planes out as A1/A1, het, A2/A2; gboost's genotype type t counts A1
copies.
"""
from __future__ import annotations

import math

import numba as nb
import numpy as np

from gboost.stats.table import pair_table

_IPF_CAP = 1_000_000  # as gboost.stats.boost.IPF_MAX_SWEEPS: PLINK has none; a guard against a pair that never settles


# ---- Classes of SNPs that split the samples alike ------------------------------------------------

_MIX = np.array([0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93,
                 0xFF51AFD7ED558CCD, 0xC4CEB9FE1A85EC53], dtype=np.uint64)


@nb.njit(cache=True)
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


# ---- PLINK's z of a table, in PLINK's order of operations --------------------------------------


@nb.njit(cache=True)
def plink_counts(t, rev_i, rev_j, c):
    """``c[18]``: table ``t[a, b, k]`` (a the first SNP's type, k 0 controls) in PLINK's order:
    cases, then controls; the first SNP's genotype outer, each in PLINK's order (A1/A1 first, A1
    the minor allele: gboost's type 2 - t, or t where PLINK swapped the SNP's alleles)."""
    for kk in range(2):
        k = 1 - kk
        for a in range(3):
            pa = a if rev_i else 2 - a
            for b in range(3):
                pb = b if rev_j else 2 - b
                c[kk * 9 + pa * 3 + pb] = t[a, b, k]


@nb.njit(cache=True)
def plink_z(c, alpha1):
    """PLINK 1.9's value of a pair for the summary, from its 18 counts ``c`` in PLINK's order
    (:func:`plink_counts`) and the screen thresholds ``alpha1[d]`` for DF d = 1, 2, 4: the KSA, or
    for a pair over the screen the exact statistic raised to the threshold; NaN for a pair PLINK
    counts as failed. Each double is formed as PLINK forms it, in the same order."""
    total = 0
    for q in range(18):
        total += c[q]
    recip = np.empty(total + 1)
    recip[0] = 0.0
    for q in range(1, total + 1):
        recip[q] = 1.0 / float(q)
    # p_bc: the second SNP's genotypes within each class; p_ca: each class within the first SNP's.
    p_bc = np.empty(6)
    case = np.empty(3, np.int64)
    ctrl = np.empty(3, np.int64)
    for b in range(3):
        case[b] = c[b] + c[b + 3] + c[b + 6]
        ctrl[b] = c[9 + b] + c[12 + b] + c[15 + b]
    r = recip[case[0] + case[1] + case[2]]
    for b in range(3):
        p_bc[b] = float(case[b]) * r
    r = recip[ctrl[0] + ctrl[1] + ctrl[2]]
    for b in range(3):
        p_bc[3 + b] = float(ctrl[b]) * r
    p_ca = np.empty(6)
    df_adj = 0
    for a in range(3):
        ca = c[3 * a] + c[3 * a + 1] + c[3 * a + 2]
        ct = c[9 + 3 * a] + c[9 + 3 * a + 1] + c[9 + 3 * a + 2]
        if ca + ct == 0:
            df_adj += 1
        r = recip[ca + ct]
        p_ca[2 * a] = float(ca) * r
        p_ca[2 * a + 1] = float(ct) * r
    if df_adj > 1:
        return np.nan
    mu = np.empty(9)
    empty = 0
    n = 0
    for b in range(3):
        nj = c[b] + c[b + 9]
        nk = c[b + 3] + c[b + 12]
        nm = c[b + 6] + c[b + 15]
        nn = nj + nk + nm
        if nn == 0:
            empty += 1
            if empty > 1:
                return np.nan
            df_adj += 1
        n += nn
        d = recip[nn]
        mu[3 * b] = float(nj) * d
        mu[3 * b + 1] = float(nk) * d
        mu[3 * b + 2] = float(nm) * d
    im = 0.0
    tau = 0.0
    q = 0
    for k in range(2):
        for a in range(3):
            dyy = p_ca[2 * a + k]
            for b in range(3):
                dxx = mu[a + 3 * b] * p_bc[3 * k + b] * dyy
                tau += dxx
                u = c[q]
                q += 1
                if u != 0:
                    if dxx != 0.0:
                        im -= float(u) * math.log(dxx * recip[u])
                    else:
                        du = float(u)
                        im += du * math.log(du)
    sum_recip = recip[n]
    im = 2.0 * (im + float(n) * math.log(tau * sum_recip))
    a1 = alpha1[4 >> df_adj]
    if im > a1:
        im = _plink_exact(c, n, sum_recip)
        if im < a1:
            im = a1
    return im


@nb.njit(cache=True)
def _plink_exact(c, n, sum_recip):
    """PLINK's exact statistic of counts ``c`` (IPF of the no-three-way-interaction model)."""
    mu_t = np.ones(18)
    mu0 = np.empty(18)
    mx = np.empty(9)
    for _ in range(_IPF_CAP):
        mu0[:] = mu_t
        for q in range(9):
            mx[q] = mu_t[2 * q] + mu_t[2 * q + 1]
        for q in range(9):
            d = mx[q]
            if d != 0.0:
                d = float(c[q] + c[q + 9]) / d
            mu_t[2 * q] *= d
            mu_t[2 * q + 1] *= d
        w = 0
        for q0 in range(0, 18, 6):
            for q in range(q0, q0 + 2):
                mx[w] = mu_t[q] + mu_t[q + 2] + mu_t[q + 4]
                w += 1
        for a in range(3):
            for k in range(2):
                d = mx[a * 2 + k]
                if d != 0.0:
                    d = float(c[k * 9 + a * 3] + c[k * 9 + a * 3 + 1] + c[k * 9 + a * 3 + 2]) / d
                mu_t[a * 6 + k] *= d
                mu_t[a * 6 + k + 2] *= d
                mu_t[a * 6 + k + 4] *= d
        for q in range(6):
            mx[q] = mu_t[q] + mu_t[q + 6] + mu_t[q + 12]
        for b in range(3):
            for k in range(2):
                d = mx[b * 2 + k]
                if d != 0.0:
                    d = float(c[k * 9 + b] + c[k * 9 + b + 3] + c[k * 9 + b + 6]) / d
                mu_t[b * 2 + k] *= d
                mu_t[b * 2 + k + 6] *= d
                mu_t[b * 2 + k + 12] *= d
        err = 0.0
        for q in range(18):
            err += abs(mu_t[q] - mu0[q])
        if not (err > 0.001):
            break
    tau = 0.0
    im = 0.0
    q = 0
    for k in range(2):
        for a in range(3):
            for b in range(3):
                dxx = float(c[q]) * sum_recip
                q += 1
                dyy = mu_t[a * 6 + b * 2 + k] * sum_recip
                if dxx != 0.0:
                    if dyy != 0.0:
                        im += dxx * math.log(dxx / dyy)
                    else:
                        im += dxx * math.log(dxx)
                tau += dyy
    return (im + math.log(tau)) * float(2 * n)


# ---- The repair --------------------------------------------------------------------------------


@nb.njit(cache=True)
def _candidate_z(planes, counts, has_missing, w_ctrl, m_of, q_of, rev, alpha1, out):
    t = np.zeros((3, 3, 2), np.int64)
    c = np.zeros(18, np.int64)
    for k in range(len(m_of)):
        m, q = m_of[k], q_of[k]
        i, j = (m, q) if m < q else (q, m)
        pair_table(planes, counts, has_missing, w_ctrl, i, j, t)
        plink_counts(t, rev[i], rev[j], c)
        out[k] = plink_z(c, alpha1)


def repair_best(study, summary, alpha1: np.ndarray, cls: np.ndarray, rows: tuple[int, int] | None = None) -> np.ndarray:
    """Re-choose, in place, the best partner of every SNP whose best partner has alike SNPs
    (``cls``: :func:`equivalence_classes` of the study), among those alike partners, by PLINK's z
    (:func:`plink_z`) and PLINK's rule; its value becomes PLINK's z. ``alpha1[d]``: the screen
    threshold for DF d. ``rows`` = (r0, r1): only pairs whose first SNP lies in [r0, r1) (a --part's
    share). Returns the SNPs re-chosen.

    Needs the study's planes and its founders' counts (a merge of --part outputs has neither: it
    takes what each part chose, :func:`apply_part_ties`)."""
    from gboost.load import founders_a1_major
    from gboost.tiles import better

    none = np.zeros(0, np.int64)
    planes = study.planes
    study.wait_planes()
    best_p = summary.best_partner
    ok = best_p >= 0
    lead = np.full(len(best_p), -1, np.int64)
    lead[ok] = cls[best_p[ok]]
    snps = np.flatnonzero(ok & (lead >= 0) & (summary.best > 0))
    if len(snps) == 0:
        return none
    members: dict = {}
    for s_ in np.flatnonzero(cls >= 0):
        members.setdefault(int(cls[s_]), []).append(int(s_))
    r0, r1 = rows if rows is not None else (0, study.n_snps)
    m_of, q_of = [], []
    for m in snps.tolist():
        qs = [q for q in members[int(lead[m])] if q != m and r0 <= min(m, q) < r1]
        m_of += [m] * len(qs)
        q_of += qs
    if not m_of:
        return none
    m_of, q_of = np.array(m_of, np.int64), np.array(q_of, np.int64)
    need = np.unique(np.concatenate([m_of, q_of]))
    rev = np.zeros(study.n_snps, np.bool_)
    rev[need] = founders_a1_major(study.founder_types(need))
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
    from gboost.tiles import better

    best_p = summary.best_partner
    done = []
    for m in np.flatnonzero((best_p >= 0) & (summary.best > 0)).tolist():
        g = cls[best_p[m]]
        if g < 0:
            continue
        bv, bp = -np.inf, -1
        for z, q in ties:
            if q[m] >= 0 and cls[q[m]] == g and better(z[m], int(q[m]), bv, bp, m):
                bv, bp = float(z[m]), int(q[m])
        if bp >= 0:
            summary.best[m], summary.best_partner[m] = bv, bp
            done.append(m)
    return np.array(done, np.int64)
