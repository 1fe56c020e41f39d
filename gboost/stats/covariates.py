"""Covariate-adjusted interaction tests of the screened pairs (`--covar FILE --covar-name ...`).

BOOST's log-linear test cannot take covariates. For every pair that passed the screen we refit the
interaction by logistic regression, as PLINK 2's --epistasis does for binary traits:

    reduced: y ~ covariates + factor(SNP1) + factor(SNP2)
    full:    y ~ covariates + factor(SNP1 x SNP2)   (one level per occupied genotype cell)

STAT_ADJ is the likelihood-ratio statistic (deviance difference) and its DF the number of
interaction parameters the occupied cells identify: (cells - 1) - (levels1 - 1) - (levels2 - 1).
Only samples with both genotypes and every covariate are used. Fitted by Newton-Raphson (IRLS)
with step halving; separation in a sparse cell drives its fitted probability to 0 or 1, where
the deviance still converges.

A quantitative trait's scan adjusts every pair instead, screen included (gboost/stats/qt_covar.py,
gboost/engines/qt_covar.py); :func:`read_covariates` and :func:`covariates_key` serve both.
"""
from __future__ import annotations

import hashlib
import math
import os
from dataclasses import dataclass

import numpy as np

from gboost.data.encode import decode_planes
from gboost.errors import InputError
from gboost.readers.pheno import read_rows
from gboost.stats.pvalues import chi2_sf
from gboost.data.study import Study

_MISSING = {"-9", "NA", "na", "nan", "NaN", "."}


# The largest covariate value the fit takes: products of two (X'WX) and their sums over the samples
# stay finite well past any real measurement.
_LARGEST = 1e150


def read_covariates(path: str | os.PathLike, study: Study, names: list[str] | None = None,
                    numbers: list[int] | None = None):
    """Covariates aligned with ``study.samples`` (plane order): ``(matrix (n, c), names)``; NaN
    where missing. PLINK's format: FID IID then one column per covariate, an optional header
    line starting ``FID IID`` naming them (else COV1, COV2, ...); ``-9``/``NA`` missing.
    ``names`` (``--covar-name``) or ``numbers`` (``--covar-number``: 1-based, the file's third
    column is covariate 1; taken in file order, as PLINK takes them) picks some; default all."""
    rows = read_rows(path, "--covar")
    if not rows:
        raise InputError(path, "empty covariate file")
    header = None
    if rows[0][1][:2] == ["FID", "IID"]:
        header = rows[0][1][2:]
        rows = rows[1:]
    width = len(rows[0][1]) if rows else 0
    if width < 3:
        raise InputError(path, f"line {rows[0][0] if rows else 1}: expected FID IID and at least one covariate")
    header = header or [f"COV{k + 1}" for k in range(width - 2)]
    if len(header) != width - 2:
        raise InputError(path, f"the header names {len(header)} covariates but rows have {width - 2}")
    values = {}
    first_line: dict = {}
    repeated: dict = {}  # (FID, IID) -> the line that repeats it
    for line, tok in rows:
        if len(tok) != width:
            raise InputError(path, f"line {line}: expected {width} columns, found {len(tok)}")
        vals = []
        for t in tok[2:]:
            if t in _MISSING:
                vals.append(math.nan)
                continue
            try:
                v = float(t)
            except ValueError:
                raise InputError(path, f"line {line}: covariate value {t!r} is not a number") from None
            if not math.isfinite(v):  # inf / 1e400 made every adjusted fit NaN
                col = header[len(vals)] if header else f"COV{len(vals) + 1}"
                raise InputError(path, f"line {line}: covariate {col} value {t!r} is not a finite number")
            vals.append(v)
        key = (tok[0], tok[1])
        if key in values:
            repeated.setdefault(key, line)
        else:
            first_line[key] = line
        values[key] = vals
    cols = list(range(len(header)))
    if names:
        unknown = [n for n in names if n not in header]
        if unknown:
            raise InputError(path, f"--covar-name: no column {', '.join(unknown)} (columns: {', '.join(header)})")
        cols = [header.index(n) for n in names]
    elif numbers:
        beyond = [k for k in numbers if not 1 <= k <= len(header)]
        if beyond:
            raise InputError(path, f"--covar-number {','.join(map(str, beyond))}: the file has {len(header)} covariate"
                                   f"{'' if len(header) == 1 else 's'} ({', '.join(header)})")
        cols = sorted({k - 1 for k in numbers})
    n = len(study.samples)
    out = np.full((n, len(cols)), np.nan)
    matched = 0
    for s in range(n):
        key = (str(study.samples.fid[s]), str(study.samples.iid[s]))
        if key in repeated:  # plink1.9 refuses it too (a repeat of a sample not loaded it ignores)
            raise InputError(path, f"line {repeated[key]}: duplicate sample ID {key[0]} {key[1]} (first on line "
                                   f"{first_line[key]}); each sample may have one row of covariates")
        v = values.get(key)
        if v is not None:
            out[s] = [v[c] for c in cols]
            matched += 1
    if matched == 0:
        raise InputError(path, "no sample of the study has covariates here (FID/IID do not match the .fam)")
    huge = [header[c] for k, c in enumerate(cols) if np.nanmax(np.abs(out[:, k]), initial=0.0) > _LARGEST]
    if huge:
        raise InputError(path, f"covariate {', '.join(huge)} has values beyond {_LARGEST:g}: the logistic fit "
                               "multiplies covariates and would overflow; rescale it (other units) or leave it "
                               "out with --covar-name")
    empty = [header[c] for k, c in enumerate(cols) if np.isnan(out[:, k]).all()]
    if empty:
        raise InputError(path, f"covariate {', '.join(empty)} is missing (-9/NA) for every sample of the study; "
                               "leave it out with --covar-name")
    return out, [header[c] for c in cols]


@dataclass
class AdjustedTable:
    """Adjusted tests computed where the genotypes were (each ``--part``), looked up by pair where
    they are not (``gboost merge``: its study has no planes). It stands in for the covariate
    matrix of ``(matrix, names)``: :func:`adjusted_tests` takes either, so the pipeline attaches
    the adjusted columns in one place whichever it holds. (A quantitative trait's parts carry
    the adjusted test of every row instead: gboost/pipeline/parts.py.)"""

    i: np.ndarray
    j: np.ndarray
    values: tuple  # the tests' columns, row k for pair (i[k], j[k])

    @classmethod
    def of(cls, i, j, values) -> "AdjustedTable":
        return cls(np.asarray(i, np.int64), np.asarray(j, np.int64), tuple(np.asarray(v) for v in values))

    @classmethod
    def joined(cls, tables: list["AdjustedTable"]) -> "AdjustedTable":
        return cls.of(np.concatenate([t.i for t in tables]), np.concatenate([t.j for t in tables]),
                      [np.concatenate(col) for col in zip(*(t.values for t in tables))])

    def lookup(self, i, j) -> tuple:
        """The columns of pairs (i[k], j[k]); each must have been tested where the genotypes were."""
        i, j = np.asarray(i, np.int64), np.asarray(j, np.int64)
        n = int(max(self.i.max(initial=0), self.j.max(initial=0), i.max(initial=0), j.max(initial=0))) + 1
        have = self.i * n + self.j
        order = np.argsort(have, kind="stable")
        want = i * n + j
        at = np.searchsorted(have[order], want)
        hit = at < len(have)
        hit[hit] = have[order][at[hit]] == want[hit]
        if not hit.all():
            k = int(np.flatnonzero(~hit)[0])
            raise RuntimeError(f"no adjusted test of pair ({int(i[k])}, {int(j[k])}) among the parts' "
                               f"({len(have)} pairs)")
        rows = order[at]
        return tuple(v[rows] for v in self.values)


def covariates_key(covariates: tuple | None) -> dict | None:
    """What pins a scan's covariates for ``gboost merge`` (the parts of one scan agree on it): the
    names and the matrix's bytes, aligned with the study's samples."""
    if covariates is None:
        return None
    matrix, names = covariates
    digest = hashlib.sha256(np.ascontiguousarray(matrix, np.float64).tobytes()).hexdigest()
    return {"names": list(names), "sha256": digest}


def _fit_deviance(X: np.ndarray, y: np.ndarray, max_iter: int = 60) -> float:
    """Binomial deviance (-2 log-likelihood) of the logistic MLE, by IRLS with step halving."""
    beta = np.zeros(X.shape[1])

    def dev(b):
        eta = X @ b
        # log(1 + e^eta) stably; deviance = -2 sum(y eta - log(1 + e^eta))
        return -2.0 * float(np.sum(y * eta - np.logaddexp(0.0, eta)))

    cur = dev(beta)
    for _ in range(max_iter):
        eta = X @ beta
        mu = 1.0 / (1.0 + np.exp(-eta))
        w = np.maximum(mu * (1.0 - mu), 1e-12)
        grad = X.T @ (y - mu)
        hess = X.T @ (X * w[:, None]) + 1e-9 * np.eye(X.shape[1])
        step = np.linalg.solve(hess, grad)
        t = 1.0
        while t > 1e-6:
            new = dev(beta + t * step)
            if new <= cur + 1e-12:
                break
            t *= 0.5
        beta = beta + t * step
        if cur - new < 1e-10 * (1.0 + abs(new)):
            cur = new
            break
        cur = new
    return cur


def _dummies(codes: np.ndarray, levels: list[int]) -> np.ndarray:
    """Indicator columns for every level but the first (treatment contrasts)."""
    return np.stack([(codes == lv).astype(np.float64) for lv in levels[1:]], axis=1) if len(levels) > 1 \
        else np.zeros((len(codes), 0))


def adjusted_test(g1: np.ndarray, g2: np.ndarray, y: np.ndarray, covars: np.ndarray) -> tuple[float, int, float]:
    """(STAT_ADJ, DF, P_ADJ) for one pair; genotypes 0/1/2 (-1 missing), y 0/1, covariates (n, c)."""
    ok = (g1 >= 0) & (g2 >= 0) & ~np.isnan(covars).any(axis=1)
    g1, g2, y, cv = g1[ok], g2[ok], y[ok].astype(np.float64), covars[ok]
    lv1 = sorted(set(g1.tolist()))
    lv2 = sorted(set(g2.tolist()))
    cells = sorted(set((3 * g1 + g2).tolist()))
    df = (len(cells) - 1) - (len(lv1) - 1) - (len(lv2) - 1)
    if df <= 0 or len(set(y.tolist())) < 2:
        return math.nan, 0, math.nan
    base = np.column_stack([np.ones(len(y)), cv])
    reduced = np.column_stack([base, _dummies(g1, lv1), _dummies(g2, lv2)])
    full = np.column_stack([base, _dummies(3 * g1 + g2, cells)])
    stat = max(_fit_deviance(reduced, y) - _fit_deviance(full, y), 0.0)
    return stat, df, chi2_sf(stat, df) if df in (1, 2, 4) else _chi2_sf_3(stat) if df == 3 else math.nan


def _chi2_sf_3(x: float) -> float:
    """Upper chi-square tail for 3 DF (a pair with one empty cell): erfc(sqrt(x/2)) + sqrt(2x/pi) e^(-x/2)."""
    return math.erfc(math.sqrt(x / 2)) + math.sqrt(2 * x / math.pi) * math.exp(-x / 2) if x > 0 else 1.0


def adjusted_tests(study: Study, i: np.ndarray, j: np.ndarray, covars: np.ndarray):
    """STAT_ADJ, DF_ADJ, P_ADJ for pairs (i[k], j[k]) of a study with covariates aligned to it
    (or looked up in the :class:`AdjustedTable` of the parts)."""
    if isinstance(covars, AdjustedTable):
        return covars.lookup(i, j)
    out_s, out_d, out_p = np.full(len(i), np.nan), np.zeros(len(i), np.int64), np.full(len(i), np.nan)
    if len(i) == 0:
        return out_s, out_d, out_p
    snps = np.unique(np.concatenate([i, j]))
    geno, is_case = decode_planes(study.planes[snps], study.layout)
    row = {int(s): k for k, s in enumerate(snps)}
    y = is_case.astype(np.float64)
    for k, (a, b) in enumerate(zip(i, j)):
        out_s[k], out_d[k], out_p[k] = adjusted_test(geno[row[int(a)]], geno[row[int(b)]], y, covars)
    return out_s, out_d, out_p
