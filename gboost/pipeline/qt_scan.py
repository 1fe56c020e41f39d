"""The scan of a quantitative trait: every pair by PLINK 1.9's linear epistasis test.

One call, :func:`run_qt_scan`: the engine (gboost/engines/qt_cpu.py) tests every pair and keeps
the pairs PLINK writes to ``.epi.qt`` (STAT >= the epi1 threshold; with ``epi1 = 1`` also the
failed pairs, as NaN rows) and the per-SNP summary; the survivors are then re-tested one by one
(beta, SE, the optional 4-df genotypic F-test), and every SNP gets a single-locus linear test for
the Manhattan plot. With covariates every pair's test is the adjusted one instead
(gboost/engines/qt_covar.py: the screen, the summary and the rows of ``.epi.qt``), the survivors
keep their unadjusted test beside it. Statistics and file formats: docs/qt_epistasis.md.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import cached_property

import numba as nb
import numpy as np

from gboost.engines.qt_cpu import QTCPUEngine, QTPlanes, retest_pairs
from gboost.runtime.numba_cache import cached_njit
from gboost.stats.qt import QT_DEFAULT_EPI1, genotypic_f_test, plink_normal_p_many, qt_thresholds
from gboost.data.study import Study


@dataclass
class QTParams:
    epi1: float = QT_DEFAULT_EPI1  # PLINK 1.9's --epistasis default
    epi2: float = 0.01
    device: str = "auto"
    threads: int | None = None
    genotypic: bool = False  # also the 4-df genotypic interaction F-test of the reported pairs
    tile: int | None = None  # GPU engine: SNPs per side of a tile (gboost/engines/qt_gpu.py)
    gpus: list[int] | None = None  # GPU engine: devices (default: every visible GPU)
    dask: str | None = None  # scheduler address or 'local:N': the CPU engine's tiles as Dask tasks
    min_distance_kb: float | None = None  # pairs.tsv: leave out pairs closer than this on one chromosome
    max_r2: float | None = None  # pairs.tsv: leave out pairs in LD above this r^2
    part: tuple[int, int] | None = None  # --part k/n: only the k-th of n shares of SNP1 rows (gboost merge joins)
    # --perm N: N permutations of the trait among the samples after the scan (0: none), seeded by
    # perm_seed, within the clusters of the --within file when given (gboost/pipeline/permute.py)
    perm: int = 0
    perm_seed: int = 0
    within: str | None = None

    def __post_init__(self):
        # PLINK accepts any --epi1 > 0; above 1 its threshold is no longer a p value, so we stop at 1
        # (1 = write every pair, PLINK's special case).
        if not 0.0 < self.epi1 <= 1.0:
            raise ValueError(f"--epi1 must be in (0, 1] for a quantitative trait, got {self.epi1}")
        if not 0.0 < self.epi2 < 1.0:
            raise ValueError(f"--epi2 must be between 0 and 1 (exclusive), got {self.epi2}")
        if self.part is not None:
            self.part = (int(self.part[0]), int(self.part[1]))
            if not 1 <= self.part[0] <= self.part[1]:
                raise ValueError(f"--part {self.part[0]}/{self.part[1]}: need 1 <= k <= n")
        from gboost.engines.qt_distributed import DASK_WITH_GPU
        from gboost.pipeline.params import check_permutations
        from gboost.pipeline.validate import check_setting, dask_setting

        check_permutations(self, "QTParams")
        check_setting("QTParams", "min_distance_kb", self.min_distance_kb)
        check_setting("QTParams", "max_r2", self.max_r2)
        self.dask = dask_setting("QTParams", self.dask)
        if self.dask is not None and (self.device == "gpu" or self.dask == "local:gpus"):
            raise ValueError(DASK_WITH_GPU)

    def checkpoint_settings(self) -> tuple[str, dict]:
        """The test and the settings a checkpoint pins (gboost/pipeline/checkpoint.py): what the tiles
        depend on (--genotypic only adds a test of the re-tested pairs; engine options none), and
        with --perm the permutations' (a --resume continues the same ones)."""
        settings = {"epi1": float(self.epi1), "epi2": float(self.epi2), "part": list(self.part) if self.part else None}
        if self.perm:
            from gboost.pipeline.params import perm_settings

            settings["perm"] = perm_settings(self)
        return "linear", settings


@dataclass
class QTPairs:
    """Pairs i < j with their tables and linear tests (``ok`` False: PLINK fails the pair)."""

    i: np.ndarray
    j: np.ndarray
    tables: np.ndarray  # (m, 3, 3) int64 counts by dosage
    sums: np.ndarray  # (m, 3, 3) float64 trait sums
    sumsq: np.ndarray  # (m,) sum of y^2 over the table
    ok: np.ndarray
    beta: np.ndarray
    se: np.ndarray
    stat: np.ndarray
    f: np.ndarray | None = None  # genotypic F, its dfs and P (with --genotypic)
    f_df1: np.ndarray | None = None
    f_df2: np.ndarray | None = None
    f_p: np.ndarray | None = None
    # with --covar: (BETA_ADJ, SE_ADJ, STAT_ADJ, P_ADJ, N_ADJ, DF_ADJ), the adjusted test of each pair
    # (gboost/engines/qt_covar.py; NaN in the first four where it fails)
    adj: tuple | None = None
    emp2: np.ndarray | None = None  # --perm's family-wise P of each pair (gboost/pipeline/permute.py)

    def __len__(self) -> int:
        return len(self.i)

    @property
    def n(self) -> np.ndarray:
        """Samples in each pair's table."""
        return self.tables.sum(axis=(1, 2))

    @property
    def p(self) -> np.ndarray:
        """Exact two-sided normal P of the Wald statistic (pairs.tsv); NaN for failed pairs."""
        from gboost.stats.qt import exact_normal_p

        return exact_normal_p(self.stat, self.ok)

    @property
    def plink_p(self) -> np.ndarray:
        """P as PLINK prints it in .epi.qt (its normal-tail approximation, docs/qt_epistasis.md §3)."""
        return plink_normal_p_many(np.ascontiguousarray(self.stat, np.float64), np.ascontiguousarray(self.ok, np.bool_))

    def take(self, idx) -> "QTPairs":
        opt = {k: (None if getattr(self, k) is None else getattr(self, k)[idx]) for k in ("f", "f_df1", "f_df2", "f_p")}
        return QTPairs(self.i[idx], self.j[idx], self.tables[idx], self.sums[idx], self.sumsq[idx], self.ok[idx],
                       self.beta[idx], self.se[idx], self.stat[idx], **opt,
                       adj=None if self.adj is None else tuple(x[idx] for x in self.adj),
                       emp2=None if self.emp2 is None else self.emp2[idx])


@dataclass
class QTSummary:
    n_sig: np.ndarray
    n_tot: np.ndarray
    best: np.ndarray
    best_partner: np.ndarray


@dataclass
class QTScanResult:
    study: Study
    params: QTParams
    engine: str
    device: str
    screened: QTPairs  # PLINK's .epi.qt rows, in (i, j) order
    summary: QTSummary
    n_valid: int
    alpha1: float
    alpha2: float
    marginal_beta: np.ndarray
    marginal_stat: np.ndarray
    marginal_p: np.ndarray
    timings: dict = field(default_factory=dict)
    test: str = "linear"
    covariate_names: list | None = None  # --covar columns of the adjusted test (None: no covariates)
    covariates_key: dict | None = None  # what pins them (gboost.stats.covariates.covariates_key): parts, merge
    core: object = None  # the engine's QTScanCore (a --part writes its summary partial)
    engine_counts: dict = field(default_factory=dict)  # GPU engine: pairs re-tested on the CPU, tiles per device
    perm: object | None = None  # --perm: gboost.pipeline.permute.PermResult (perm.tsv, EMP2, run.json)

    marginal_df = 1  # the marginal STAT is a 1-df Wald chi-square (t^2)

    @cached_property
    def reported(self) -> QTPairs:
        """pairs.tsv: valid pairs with exact P <= epi1, by STAT descending (ties: (i, j) order);
        with covariates by the adjusted test: P_ADJ ascending (each pair's df is its own), then
        STAT_ADJ descending, then (i, j)."""
        sc = self.screened
        if sc.adj is not None:
            stat, p = sc.adj[2], sc.adj[3]
            keep = np.flatnonzero(np.isfinite(stat) & (p <= self.params.epi1))
            return sc.take(self._filtered(keep[np.lexsort((sc.j[keep], sc.i[keep], -stat[keep], p[keep]))]))
        p = sc.p
        keep = np.flatnonzero(sc.ok & (p <= self.params.epi1))
        order = np.lexsort((sc.j[keep], sc.i[keep], -sc.stat[keep]))
        return sc.take(self._filtered(keep[order]))

    def _filtered(self, rows: np.ndarray) -> np.ndarray:
        """``rows`` of ``screened`` less the pairs --min-distance and --max-r2 leave out of pairs.tsv
        (as the case-control scan's, gboost.pipeline.scan.ScanResult.reported_rows: .epi.qt keeps them)."""
        params, sc = self.params, self.screened
        ok = np.ones(len(rows), bool)
        if params.min_distance_kb is not None:
            d = self.study.variants.distance(sc.i[rows], sc.j[rows])
            ok &= np.isnan(d) | (d >= params.min_distance_kb * 1000.0)
        if params.max_r2 is not None:
            from gboost.stats.multiple import r2_at

            # (a QT pair's table is one class of 3 x 3 dosage counts: the r^2 of case-control tables
            # with every sample in one class)
            t = np.asarray(sc.tables[rows], np.int64)
            pooled = np.stack([t, np.zeros_like(t)], axis=-1)
            ok &= ~(r2_at(pooled, np.arange(len(rows))) > params.max_r2)
        return rows if ok.all() else rows[ok]

    @property
    def model(self) -> str:
        """The model every pair was tested in (run.json)."""
        from gboost.stats.qt_covar import model_formula

        return model_formula(self.covariate_names or [])

    @property
    def bonferroni(self) -> float:
        return 0.05 / self.n_valid if self.n_valid else float("nan")


def run_qt_scan(study: Study, params: QTParams | None = None, *, progress=None, cancel=None,
                covariates: tuple | None = None, engine=None, checkpoint_dir=None, resume: bool = False,
                checkpoint_options: dict | None = None, checkpoint=None, perm_progress=None) -> QTScanResult:
    """Scan every pair of a quantitative-trait study (``study.trait`` set).

    ``covariates`` = (matrix aligned with study.samples, NaN where missing; names): every pair is
    tested in ``y ~ 1 + covariates + a + b + a*b`` over its complete cases instead
    (gboost/engines/qt_covar.py): the screen, N_SIG, BEST and the rows of .epi.qt by that test
    (its P the t test's), ``screened.adj`` its columns; the CPU engine only (``device`` 'auto'
    takes it; 'gpu', or a GPU engine given, is refused with a ValueError).

    ``progress(pairs_done, pairs_total)`` is called after each block of rows; ``cancel()``
    returning true between blocks raises :class:`gboost.errors.ScanCancelled`. ``engine``: one
    made already (tests run the GPU engine's tile math on numpy this way); else ``params.device``
    chooses (:func:`gboost.engines.make_engine`, ``test="linear"``).

    ``checkpoint_dir``: each tile the engine finishes is recorded there, as a case-control scan's
    (:class:`gboost.pipeline.checkpoint.Ledger`, pinned to the study, the trait, the thresholds, the
    covariates and the engine's plan; ``checkpoint_options``: its ``sync_every`` / ``batch_seconds``);
    with ``resume`` an interrupted run's tiles are taken up again (the outputs are one run's, byte
    for byte). ``checkpoint``: a Ledger made by the caller instead (the GUI's; its ``plan`` must be
    ``engine.checkpoint_plan()`` of this scan's rows and its params :func:`checkpoint_params`);
    closed here as run_pipeline closes one.

    ``params.perm`` N: then N permutations of the trait on the same engine
    (:func:`gboost.pipeline.permute.run_permutations`), each recorded beside the scan's checkpoint
    (a resumed run continues them), ``perm_progress`` (a :class:`gboost.pipeline.progress.Progress`
    per permutation) after each; their maxima give ``screened.emp2`` and ``result.perm``. Not with
    covariates (ValueError: :data:`PERM_WITH_COVARIATES`).
    """
    params = params or QTParams()
    if not study.quantitative:
        raise ValueError("run_qt_scan needs a study with a quantitative trait (study.trait)")
    if params.perm and covariates is not None:
        raise ValueError(PERM_WITH_COVARIATES)
    strata = None
    if params.perm:  # a bad --within file is refused before the scan, not after it
        from gboost.pipeline.permute import strata_of

        strata = strata_of(study, params)
    screen = None
    if covariates is not None:
        screen = _covariate_screen(study, params, covariates)
        if (params.device == "gpu" and engine is None) or (engine is not None and not isinstance(engine, QTCPUEngine)):
            raise ValueError(COVAR_NEEDS_CPU)
    if engine is not None:  # the caller's: it closes it
        return _scan(study, params, engine, screen, strata, covariates, progress, cancel, checkpoint_dir, resume,
                     checkpoint_options, checkpoint, perm_progress)
    engine = qt_engine(params, covariates is not None)
    try:
        return _scan(study, params, engine, screen, strata, covariates, progress, cancel, checkpoint_dir, resume,
                     checkpoint_options, checkpoint, perm_progress)
    finally:
        engine.close()


def qt_engine(params: QTParams, covariates: bool = False):
    """The engine :func:`run_qt_scan` makes for ``params`` (``covariates``: an adjusted scan's, whose
    test runs on the CPU engine's kernels, here or on the Dask workers); the GUI makes its own by it."""
    from gboost.engines import make_engine

    return make_engine("cpu" if covariates or params.dask else params.device, threads=params.threads,
                       tile=params.tile, gpus=params.gpus, dask=params.dask, test="linear")


def _scan(study, params, engine, screen, strata, covariates, progress, cancel, checkpoint_dir, resume,
          checkpoint_options, checkpoint, perm_progress) -> QTScanResult:
    """:func:`run_qt_scan` on ``engine`` (its arguments checked, the covariates' screen made)."""
    timings: dict[str, float] = {}
    alpha1, alpha2 = qt_thresholds(params.epi1, params.epi2)
    t = time.perf_counter()
    rect = study.rect  # a candidate-set scan's rectangle (gboost/data/candidates.py), or None
    rows = qt_rows(study, params)
    extra = {} if rows is None else {"rows": rows}
    ledger = checkpoint
    if checkpoint_dir is not None and ledger is None:
        from gboost.pipeline.checkpoint import Ledger

        plan = engine.checkpoint_plan(rows, rect=True) if rect is not None else engine.checkpoint_plan(rows)
        ledger = Ledger(checkpoint_dir, study, checkpoint_params(params, covariates), resume=resume,
                        plan=plan, **(checkpoint_options or {}))
    if ledger is not None:
        extra["checkpoint"] = ledger
    try:
        if screen is None:
            core, qp = engine.scan(study, alpha1, alpha2, progress=progress, cancel=cancel, **extra)
        else:
            from gboost.engines.qt_covar import scan_adjusted

            core, qp, cp = scan_adjusted(engine, study, screen, progress=progress, cancel=cancel, **extra)
    finally:
        if ledger is not None:
            ledger.close()
    timings["screen"] = time.perf_counter() - t
    t = time.perf_counter()
    screened = retest(qp, core.i, core.j, genotypic=params.genotypic)
    if screen is not None:
        from gboost.engines.qt_covar import adjusted_pairs

        # the screen kept pairs a hair below the epi1 threshold: the rows are those whose exact P passes
        adj = adjusted_pairs(cp, core.i, core.j)
        keep = np.flatnonzero(np.ones(len(core.i), bool) if params.epi1 >= 1.0 else adj[3] <= params.epi1)
        screened = screened.take(keep)
        screened.adj = tuple(col[keep] for col in adj)
    timings["exact"] = time.perf_counter() - t
    t = time.perf_counter()
    mbeta, mstat, mp = marginal_linear(study, qp)
    timings["marginal"] = time.perf_counter() - t
    timings["total"] = sum(timings.values())
    # the GPU engine's parts of "screen" (set-up, device tiles, CPU re-test of undecided pairs)
    timings.update({f"screen.{key}": value for key, value in getattr(engine, "timings", {}).items()})
    summary = QTSummary(core.n_sig, qt_pairs_per_snp(study) - core.n_fail, core.best, core.best_partner)
    test = "linear" + ("+covariates" if screen is not None else "") + ("+genotypic" if params.genotypic else "")
    res = QTScanResult(study, params, engine.name, engine.describe(), screened, summary, core.n_valid, alpha1, alpha2,
                       mbeta, mstat, mp, timings, test)
    res.core = core
    if hasattr(engine, "tiles_per_device"):
        res.engine_counts = {"exact_retest_pairs": int(engine.n_exact),
                             "tiles_per_device": {str(d): int(k) for d, k in engine.tiles_per_device.items()}}
    if screen is not None:
        from gboost.stats.covariates import covariates_key

        res.covariate_names = list(covariates[1])
        res.covariates_key = covariates_key(covariates)
        res.engine_counts = {**res.engine_counts, "covariate_columns": int(cp.n_covariate_columns),
                             "samples_with_covariates": int(cp.n_g)}
    if params.perm:
        where = checkpoint_dir if checkpoint_dir is not None else getattr(checkpoint, "dir", None)
        permute_trait(res, engine, checkpoint_dir=where, progress=perm_progress, cancel=cancel, strata=strata)
    return res


def permute_trait(res: QTScanResult, engine, *, checkpoint_dir=None, progress=None, cancel=None,
                  strata: np.ndarray | None = None) -> None:
    """``--perm``: the maxima of ``res.params.perm`` permutations of the trait on ``engine``
    (gboost/pipeline/permute.py, the case-control scan's machinery), recorded in ``checkpoint_dir``
    when given, and every screened pair's EMP2 (NaN where its test failed) into ``res``.
    ``strata``: the --within file's codes (:func:`gboost.pipeline.permute.strata_of`)."""
    from gboost.pipeline.permute import run_permutations

    t = time.perf_counter()
    params, study = res.params, res.study
    perm = run_permutations(study, engine, params.perm, params.perm_seed, strata=strata, within=params.within,
                            checkpoint_dir=checkpoint_dir, progress=progress, cancel=cancel)
    sc = res.screened
    sc.emp2 = perm.emp2(np.where(sc.ok, sc.stat, np.nan))
    res.perm = perm
    res.timings["permutations"] = time.perf_counter() - t
    res.timings["total"] = res.timings.get("total", 0.0) + res.timings["permutations"]


def qt_rows(study: Study, params: QTParams) -> tuple[int, int] | None:
    """The SNP1 rows of this scan's --part (None: every row): a share of the triangle balanced by
    pairs, or of a candidate-set scan's rectangle rows (each row as many pairs)."""
    if params.part is None:
        return None
    from gboost.pipeline.tiles import part_rows, rect_rows

    rect = study.rect
    return rect_rows(rect.n_rows, *params.part) if rect is not None else part_rows(study.n_snps, *params.part)


def qt_pairs_per_snp(study: Study) -> np.ndarray:
    """Each SNP's pairs in the whole scan (N_TOT before the failed pairs): p - 1, or a rectangle
    row's columns but its own (its columns' entries 0: the summary lists the rows)."""
    rect = study.rect
    return np.full(study.n_snps, study.n_snps - 1, np.int64) if rect is None else rect.row_pairs()


# Why --perm and --covar do not go together on a quantitative trait (docs/qt_epistasis.md, "--perm").
PERM_WITH_COVARIATES = ("--perm permutes the trait among the samples, which keeps the trait's relation to no "
                        "covariate; the covariate-adjusted test's null is not exchangeable that way, so --perm and "
                        "--covar do not go together (scan without --covar, or regress the covariates out of the "
                        "trait first)")

COVAR_NEEDS_CPU = ("--covar on a quantitative trait: the covariate-adjusted test of every pair runs on the CPU "
                   "engine only (--device cpu, or auto, which takes it); the GPU engine has no covariates yet")


def _covariate_screen(study: Study, params: QTParams, covariates):
    from gboost.engines.qt_covar import CovariateScreen

    if not isinstance(covariates, tuple) or len(covariates) != 2:
        raise TypeError("run_qt_scan: covariates must be (matrix, names), as gboost.stats.covariates.read_covariates "
                        f"returns, or None; got {type(covariates).__name__}")
    matrix = np.asarray(covariates[0], np.float64)
    if matrix.ndim != 2 or matrix.shape[0] != study.n_samples or matrix.shape[1] != len(covariates[1]):
        raise ValueError(f"run_qt_scan: covariates of shape {matrix.shape} for {study.n_samples} samples and "
                         f"{len(covariates[1])} names")
    return CovariateScreen(matrix, params.epi1, params.epi2)


class _AdjustedCheckpoint:
    """A QT scan's settings as its checkpoint pins them, with its covariates beside the thresholds
    (a ledger of an unadjusted scan, or one with other covariates, is refused on --resume)."""

    def __init__(self, params: QTParams, key: dict):
        self.params, self.key = params, key

    def checkpoint_settings(self) -> tuple[str, dict]:
        test, settings = self.params.checkpoint_settings()
        return test, {**settings, "covariates": self.key}

    def __getattr__(self, name):  # the thresholds and the rest, as the params' (the GUI's checkpoint key)
        return getattr(self.params, name)


def checkpoint_params(params: QTParams, covariates: tuple | None):
    """What a QT scan's :class:`gboost.pipeline.checkpoint.Ledger` takes as its params: ``params``
    itself, or with covariates the same settings and the covariates' key."""
    if covariates is None:
        return params
    from gboost.stats.covariates import covariates_key

    return _AdjustedCheckpoint(params, covariates_key(covariates))


def retest(qp: QTPlanes, i: np.ndarray, j: np.ndarray, *, genotypic: bool = False) -> QTPairs:
    """Tables and linear tests of the pairs (i, j) (pass 2 of the scan), and the F-tests."""
    m = len(i)
    tables = np.zeros((m, 3, 3), np.int64)
    sums = np.zeros((m, 3, 3))
    sumsq = np.zeros(m)
    beta, stat, se = np.full(m, np.nan), np.full(m, np.nan), np.full(m, np.nan)
    ok = np.zeros(m, bool)
    if m:
        retest_pairs(*qp.retest_args(), np.ascontiguousarray(i), np.ascontiguousarray(j), tables, sums, sumsq,
                     beta, stat, se, ok)
    pairs = QTPairs(i, j, tables, sums, sumsq, ok, beta, se, stat)
    if genotypic:
        pairs.f, pairs.f_df1, pairs.f_df2, pairs.f_p = genotypic_tests(tables, sums, sumsq)
    return pairs


def genotypic_tests(tables, sums, sumsq):
    """The 4-df genotypic F-test of each table (:func:`gboost.stats.qt.genotypic_f_test`)."""
    from scipy.special import fdtrc

    m = len(tables)
    f = np.full(m, np.nan)
    d1 = np.zeros(m, np.int64)
    d2 = np.zeros(m, np.int64)
    for k in range(m):
        ok, fk, a, b = genotypic_f_test(tables[k], sums[k], float(sumsq[k]))
        d1[k], d2[k] = a, int(b)
        if ok:
            f[k] = fk
    with np.errstate(invalid="ignore"):
        p = np.where(np.isnan(f), np.nan, fdtrc(np.maximum(d1, 1), np.maximum(d2, 1), np.nan_to_num(f)))
    return f, d1, d2, p


@cached_njit(parallel=True)
def _called_y2(miss, ty2, y2_sum):
    p, W = miss.shape
    out = np.empty(p)
    for i in nb.prange(p):
        s = 0.0
        for k in range(W):
            w = miss[i, k]
            base = 8 * k
            while w:
                s += ty2[base, w & np.uint64(255)]
                w >>= np.uint64(8)
                base += 1
        out[i] = y2_sum - s
    return out


def marginal_linear(study: Study, qp: QTPlanes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per SNP the additive linear test ``y ~ 1 + dosage`` over its called samples (PLINK's
    ``--assoc`` on a quantitative trait): beta, Wald chi-square t^2 and the t-test's two-sided P
    with n - 2 df. NaN where the dosage does not vary or n < 3."""
    from scipy.special import stdtr

    n = qp.cnt.sum(axis=1).astype(np.float64)
    sx = qp.cnt[:, 1] + 2.0 * qp.cnt[:, 2]
    sxx = qp.cnt[:, 1] + 4.0 * qp.cnt[:, 2]
    sy = qp.sy.sum(axis=1)
    sxy = qp.sy[:, 1] + 2.0 * qp.sy[:, 2]
    syy = _called_y2(qp.miss, qp.ty2, qp.y2_sum)
    with np.errstate(invalid="ignore", divide="ignore"):
        vxx = sxx - sx * sx / n
        vxy = sxy - sx * sy / n
        vyy = syy - sy * sy / n
        beta = vxy / vxx
        rss = np.maximum(vyy - beta * vxy, 0.0)
        df = n - 2
        se2 = rss / df / vxx
        stat = beta * beta / se2
        good = (vxx > 0) & (df > 0) & (se2 > 0)
        t = np.sqrt(np.where(good, stat, 0.0))
        p = np.where(good, 2.0 * stdtr(np.maximum(df, 1), -t), np.nan)
    return np.where(good, beta, np.nan), np.where(good, stat, np.nan), p



def as_scan_result(res: QTScanResult):
    """The QT scan as a :class:`gboost.pipeline.scan.ScanResult`, for views written for case-control scans
    (the GUI's table, plots and pathway graph): STAT the Wald chi-square (DF 1; 0 for failed
    pairs), P exact, KSA NaN, tables with every sample in the first class. ``.qt`` keeps the
    original result, whose writers (gboost/outputs/qt_results.py) give the QT files. With covariates
    STAT and P are the adjusted test's (STAT = t^2, P the t test's)."""
    from gboost.engines.base import Thresholds
    from gboost.pipeline.scan import Pairs, ScanParams, ScanResult, Summary

    sc = res.screened
    m = len(sc)
    tables = np.zeros((m, 3, 3, 2), np.int64)
    tables[..., 0] = sc.tables
    if sc.adj is not None:  # with covariates the views show the test that chose the pairs
        ok, stat, p = np.isfinite(sc.adj[2]), sc.adj[2], sc.adj[3]
    else:
        ok, stat, p = sc.ok, sc.stat, sc.p
    pairs = Pairs(sc.i.copy(), sc.j.copy(), np.full(m, np.nan), np.where(ok, stat, np.nan),
                  ok.astype(np.int64), p, np.ones(m, bool), tables,
                  emp2=None if sc.emp2 is None else sc.emp2.copy())
    sm = res.summary
    summary = Summary(sm.n_sig.copy(), sm.n_tot.copy(), sm.best.copy(), sm.best_partner.copy())
    # ScanParams holds a case-control scan's bounds (epi1 < 1); "write every pair" shows as nearly 1
    params = ScanParams(epi1=min(res.params.epi1, np.nextafter(1.0, 0.0)), epi2=res.params.epi2, device=res.params.device,
                        threads=res.params.threads, calibration_pairs=0)
    thr = Thresholds(np.full(5, res.alpha1), np.full(5, res.alpha2))
    out = ScanResult(res.study, params, res.engine, res.device, pairs, summary, res.marginal_stat, res.marginal_p, 1,
                     res.n_valid, thr, dict(res.timings))
    out.perm = res.perm  # --perm's maxima (their STAT is the QT test's, as the pairs')
    out.qt = res
    return out
