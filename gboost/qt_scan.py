"""The scan of a quantitative trait: every pair by PLINK 1.9's linear epistasis test.

One call, :func:`run_qt_scan`: the engine (gboost/engines/qt_cpu.py) tests every pair and keeps
the pairs PLINK writes to ``.epi.qt`` (STAT >= the epi1 threshold; with ``epi1 = 1`` also the
failed pairs, as NaN rows) and the per-SNP summary; the survivors are then re-tested one by one
(beta, SE, the optional 4-df genotypic F-test), and every SNP gets a single-locus linear test for
the Manhattan plot. Statistics and file formats: docs/qt_epistasis.md.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import cached_property

import numba as nb
import numpy as np

from gboost.engines.qt_cpu import QTCPUEngine, QTPlanes, retest_pairs
from gboost.numba_cache import cached_njit
from gboost.stats.qt import QT_DEFAULT_EPI1, genotypic_f_test, plink_normal_p_many, qt_thresholds
from gboost.study import Study


@dataclass
class QTParams:
    epi1: float = QT_DEFAULT_EPI1  # PLINK 1.9's --epistasis default
    epi2: float = 0.01
    device: str = "auto"
    threads: int | None = None
    genotypic: bool = False  # also the 4-df genotypic interaction F-test of the reported pairs
    tile: int | None = None  # GPU engine: SNPs per side of a tile (gboost/engines/qt_gpu.py)
    gpus: list[int] | None = None  # GPU engine: devices (default: every visible GPU)
    part: tuple[int, int] | None = None  # --part k/n: only the k-th of n shares of SNP1 rows (gboost merge joins)

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
    adj: tuple | None = None  # (BETA_ADJ, SE_ADJ, STAT_ADJ, P_ADJ) with --covar, on the reported pairs

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
                       adj=None if self.adj is None else tuple(x[idx] for x in self.adj))


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
    covariate_names: list | None = None  # --covar columns of the adjusted refit
    core: object = None  # the engine's QTScanCore (a --part writes its summary halves)
    engine_counts: dict = field(default_factory=dict)  # GPU engine: pairs re-tested on the CPU, tiles per device

    marginal_df = 1  # the marginal STAT is a 1-df Wald chi-square (t^2)
    _covariates = None  # (n, c) matrix aligned with study.samples (run_qt_scan), or the parts' AdjustedTable (merge)

    @cached_property
    def reported(self) -> QTPairs:
        """pairs.tsv: valid pairs with exact P <= epi1, by STAT descending (ties: (i, j) order)."""
        sc = self.screened
        p = sc.p
        keep = np.flatnonzero(sc.ok & (p <= self.params.epi1))
        order = np.lexsort((sc.j[keep], sc.i[keep], -sc.stat[keep]))
        rep = sc.take(keep[order])
        if self._covariates is not None:
            from gboost.covariates import adjusted_linear_tests

            rep.adj = adjusted_linear_tests(self.study, rep.i, rep.j, self._covariates)
        return rep

    @property
    def bonferroni(self) -> float:
        return 0.05 / self.n_valid if self.n_valid else float("nan")


def run_qt_scan(study: Study, params: QTParams | None = None, *, progress=None, cancel=None,
                covariates: tuple | None = None, engine=None, checkpoint_dir=None, resume: bool = False,
                checkpoint_interval: float = 60.0) -> QTScanResult:
    """Scan every pair of a quantitative-trait study (``study.trait`` set).

    ``covariates`` = (matrix aligned with study.samples, names) adds a least-squares refit of
    each reported pair with the covariates (``reported.adj``: BETA_ADJ, SE_ADJ, STAT_ADJ, P_ADJ).

    ``progress(pairs_done, pairs_total)`` is called after each block of rows; ``cancel()``
    returning true between blocks raises :class:`gboost.errors.ScanCancelled`. ``engine``: one
    made already (tests run the GPU engine's tile math on numpy this way); else ``params.device``
    chooses (:func:`make_qt_engine`).

    ``checkpoint_dir``: the engine's finished work is saved there now and then (every
    ``checkpoint_interval`` seconds) and when the scan stops early (:class:`QTCheckpoint`); with
    ``resume`` an interrupted run's is taken up again (the outputs are one run's, byte for byte).
    """
    params = params or QTParams()
    if not study.quantitative:
        raise ValueError("run_qt_scan needs a study with a quantitative trait (study.trait)")
    timings: dict[str, float] = {}
    alpha1, alpha2 = qt_thresholds(params.epi1, params.epi2)
    if engine is None:
        engine = make_qt_engine(params.device, threads=params.threads, tile=params.tile, gpus=params.gpus)
    t = time.perf_counter()
    rows = None
    if params.part is not None:
        from gboost.tiles import part_rows

        rows = part_rows(study.n_snps, *params.part)
    extra = {} if rows is None else {"rows": rows}
    if checkpoint_dir is not None:
        extra["checkpoint"] = QTCheckpoint(checkpoint_dir, study, params, engine.checkpoint_plan(rows), resume=resume,
                                           interval=checkpoint_interval)
    core, qp = engine.scan(study, alpha1, alpha2, progress=progress, cancel=cancel, **extra)
    timings["screen"] = time.perf_counter() - t
    t = time.perf_counter()
    screened = retest(qp, core.i, core.j, genotypic=params.genotypic)
    timings["exact"] = time.perf_counter() - t
    t = time.perf_counter()
    mbeta, mstat, mp = marginal_linear(study, qp)
    timings["marginal"] = time.perf_counter() - t
    timings["total"] = sum(timings.values())
    # the GPU engine's parts of "screen" (set-up, device tiles, CPU re-test of undecided pairs)
    timings.update({f"screen.{key}": value for key, value in getattr(engine, "timings", {}).items()})
    p = study.n_snps
    summary = QTSummary(core.n_sig, (p - 1) - core.n_fail, core.best, core.best_partner)
    res = QTScanResult(study, params, engine.name, engine.describe(), screened, summary, core.n_valid, alpha1, alpha2,
                       mbeta, mstat, mp, timings, "linear+genotypic" if params.genotypic else "linear")
    res.core = core
    if hasattr(engine, "tiles_per_device"):
        res.engine_counts = {"exact_retest_pairs": int(engine.n_exact),
                             "tiles_per_device": {str(d): int(k) for d, k in engine.tiles_per_device.items()}}
    if covariates is not None:
        res._covariates, res.covariate_names = covariates[0], list(covariates[1])
        t = time.perf_counter()
        res.reported  # noqa: B018 - the refit, timed here rather than when a writer first asks
        res.timings["adjusted_tests"] = time.perf_counter() - t
    return res


def make_qt_engine(device: str = "auto", *, threads: int | None = None, tile: int | None = None,
                   gpus: list[int] | None = None):
    """The QT scan's engine, by the case-control scan's device policy
    (:func:`gboost.engines.choose_gpu`): 'gpu' needs a GPU engine that starts (else one line,
    exit 2); 'auto' takes it when CuPy sees a GPU and its probe runs, else the CPU engine (the log
    names the reason). ``gpus``: the GPU engine's devices (default: all)."""
    import logging

    from gboost.engines import GpuRefused, choose_gpu
    from gboost.errors import InputError

    def build():
        from gboost.engines.qt_gpu import QTGPUEngine

        return QTGPUEngine(threads, tile=tile, gpus=gpus)

    try:
        engine, reason = choose_gpu(device, build, probe_gpu=True, build_may_fail=True)
    except GpuRefused as exc:
        if exc.started:
            raise InputError(None, f"--device gpu: the GPU engine of the quantitative trait scan failed to start "
                                   f"({exc.reason})") from None
        raise InputError(None, f"--device gpu: no GPU for the quantitative trait scan ({exc.reason})") from None
    if engine is not None:
        return engine
    if reason is not None:
        logging.getLogger("gboost").warning("--device auto: using the CPU engine for the QT scan; %s", reason)
    return QTCPUEngine(threads)


# --- --resume ------------------------------------------------------------------------------------

class QTCheckpoint:
    """An engine's finished work of one QT scan, saved whole in the output folder
    (``checkpoint.ledger``: its arrays; ``checkpoint.json``: what they depend on), each save
    replacing the last atomically, so a kill leaves the previous one. The engines save at clean
    points only (whole tiles or row blocks), now and then and when the scan stops early;
    :func:`gboost.io.qt_results.write_qt_outputs` removes it with the finished outputs.

    What it pins: the study (SNP IDs, genotype counts and sampled planes, the trait and A1s), the
    thresholds, ``--part`` and the engine's plan (which engine, its tile edge): a ``--resume``
    with any of these changed is refused in one line naming it."""

    def __init__(self, out_dir, study: Study, params: QTParams, plan: dict, *, resume: bool = False,
                 interval: float = 60.0):
        from pathlib import Path

        self.dir = Path(out_dir)
        self.interval = float(interval)
        self.fingerprint = self._fingerprint(study, params, plan)
        self.resume = resume
        self._last = time.monotonic()

    @staticmethod
    def _fingerprint(study: Study, params: QTParams, plan: dict) -> dict:
        import hashlib

        from gboost.checkpoint import ids_sha256, study_content_hash

        ids = ids_sha256(study.variants.snp)
        trait = hashlib.sha256(np.ascontiguousarray(study.trait, np.float64).tobytes()
                               + np.ascontiguousarray(study.a1_flip if study.a1_flip is not None
                                                      else np.zeros(study.n_snps, bool), bool).tobytes()).hexdigest()
        return {"phenotype": QT_PART_KIND, "snps": int(study.n_snps), "samples": int(study.n_samples),
                "snp_ids_sha256": ids, "genotypes_sha256": study_content_hash(study), "trait_sha256": trait,
                "epi1": float(params.epi1), "epi2": float(params.epi2),
                "part": list(params.part) if params.part else None, "plan": plan}

    _WHAT = {"phenotype": "the phenotype (a case-control scan's checkpoint)", "snps": "the number of SNPs",
             "samples": "the samples", "snp_ids_sha256": "the SNP IDs", "genotypes_sha256": "the genotypes or samples",
             "trait_sha256": "the trait or A1 alleles", "epi1": "--epi1", "epi2": "--epi2", "part": "--part",
             "plan": "the engine (--device) or its --tile"}

    def restore(self) -> dict | None:
        """The saved arrays of an interrupted run (None: start afresh)."""
        import json

        from gboost.checkpoint import LEDGER, MANIFEST
        from gboost.errors import InputError

        if not self.resume or not (self.dir / MANIFEST).exists():
            return None
        try:
            saved = json.loads((self.dir / MANIFEST).read_text())
        except (OSError, ValueError):
            saved = {}
        diff = [self._WHAT.get(k, k) for k in self.fingerprint if saved.get(k) != self.fingerprint[k]]
        if diff:
            raise InputError(self.dir / MANIFEST, f"the interrupted scan differs in {', '.join(diff)}: rerun it as it "
                                                  "was, or use --overwrite to start over")
        try:
            with open(self.dir / LEDGER, "rb") as f:
                arrays = dict(np.load(f, allow_pickle=False))
        except FileNotFoundError:
            return None  # killed before its first save
        except Exception as exc:  # noqa: BLE001 - a damaged file: one line, not a traceback
            raise InputError(self.dir / LEDGER,
                             f"unreadable checkpoint ({exc}): use --overwrite to start over") from None
        return arrays

    def due(self) -> bool:
        return time.monotonic() - self._last >= self.interval

    def save(self, arrays: dict) -> None:
        import io
        import json

        from gboost.checkpoint import LEDGER, MANIFEST
        from gboost.io.outdir import write_files

        buf = io.BytesIO()
        np.savez(buf, **arrays)
        write_files(self.dir, {LEDGER: buf.getvalue(), MANIFEST: json.dumps(self.fingerprint, indent=2) + "\n"},
                    overwrite=True)
        self._last = time.monotonic()


# --- --part k/n and `gboost merge` -----------------------------------------------------------------

QT_PART_KIND = "quantitative"  # meta["phenotype"] of a QT part (parts share part.npz's name with case-control ones)
_VARIANT_FIELDS = ("chrom", "snp", "cm", "bp", "a1", "a2")
_PAIR_FIELDS = ("i", "j", "tables", "sums", "sumsq", "ok", "beta", "se", "stat", "f", "f_df1", "f_df2", "f_p")
_SCIENCE = ("epi1", "epi2", "genotypic")  # the parameters that change the files (engine options do not)
_ADJ_FIELDS = ("beta", "se", "stat", "p")  # the adjusted refit's columns (QTPairs.adj)


def write_qt_part(out_dir, result: QTScanResult, *, overwrite: bool = False):
    """One part's share of a QT scan (``part.npz`` + ``run.json``), atomically: its .epi.qt rows with
    their re-tests, its per-SNP counts and best partners after / before each SNP (uncombined: merge
    folds them as one scan does), the marginal tests and what the writers need of the study; with
    covariates, the adjusted refit of its reported pairs (``adj_*``: the merge has no genotypes)."""
    import json

    from gboost.covariates import covariates_key
    from gboost.io.outdir import staged_files
    from gboost.parts import PART_FILE

    s, core = result.study, result.core
    arrays = {f"var_{f}": (np.asarray(getattr(s.variants, f)) if f in ("cm", "bp")
                           else np.asarray(getattr(s.variants, f)).astype(str)) for f in _VARIANT_FIELDS}
    arrays.update(counts=s.counts, layout=np.array([s.layout.n_ctrl, s.layout.n_case], np.int64),
                  snp_col_width=np.int64(s.snp_id_width), trait=np.asarray(s.trait, np.float64),
                  a1_flip=(np.asarray(s.a1_flip, bool) if s.a1_flip is not None else np.zeros(s.n_snps, bool)),
                  n_sig=core.n_sig, n_fail=core.n_fail, marginal_beta=result.marginal_beta,
                  marginal_stat=result.marginal_stat, marginal_p=result.marginal_p)
    for name, a in zip(("best_after", "after_id", "best_before", "before_id"), core.halves):
        arrays[name] = a
    for f in _PAIR_FIELDS:
        v = getattr(result.screened, f)
        if v is not None:
            arrays[f"pair_{f}"] = v
    covariates = None
    if result._covariates is not None:
        covariates = (result._covariates, result.covariate_names)
        rep = result.reported
        arrays.update(adj_i=rep.i, adj_j=rep.j, **{f"adj_{k}": v for k, v in zip(_ADJ_FIELDS, rep.adj)})
    params = {k: v for k, v in result.params.__dict__.items() if k != "part"}
    meta = {"phenotype": QT_PART_KIND, "covariates": covariates_key(covariates), "part": list(result.params.part), "params": params, "test": result.test,
            "engine": result.engine, "device": result.device, "qc": s.qc.as_dict(),
            "source_files": list(s.source_files), "timings_s": result.timings,
            "counts": {"pairs": int(sum(s.n_snps - 1 - i for i in range(*_part_rows(result)))),
                       "epi_qt_rows": len(result.screened), **result.engine_counts}}
    arrays["meta"] = np.array(json.dumps(meta, default=str))

    def fill(staging):
        with open(staging / PART_FILE, "wb") as f:
            np.savez(f, **arrays)
        (staging / "run.json").write_text(json.dumps(meta, indent=2, default=str) + "\n")

    from gboost.checkpoint import LEDGER, MANIFEST

    out = staged_files(out_dir, fill, overwrite=overwrite)
    for name in (LEDGER, MANIFEST, MANIFEST + ".tmp"):  # the part's checkpoint, now done with
        (out / name).unlink(missing_ok=True)
    return out


def _part_rows(result: QTScanResult) -> tuple[int, int]:
    from gboost.tiles import part_rows

    return part_rows(result.study.n_snps, *result.params.part)


def load_qt_part(path):
    """(arrays, meta) of a part directory, or None where it holds a case-control part."""
    from gboost.parts import read_part

    d, meta = read_part(path)
    return (d, meta) if meta.get("phenotype") == QT_PART_KIND else None


def is_qt_part(path) -> bool:
    """Whether a part directory holds a QT part (its meta alone is read)."""
    from gboost.parts import read_part

    return read_part(path, meta_only=True).get("phenotype") == QT_PART_KIND


def merge_qt_parts(dirs) -> QTScanResult:
    """Join the parts of one QT scan into the result one run gives (the same files byte for byte):
    counts summed; each SNP's best partner after it from the part holding its row, before it folded
    in part order (larger STAT, the earliest partner on ties); the rows of every part, in (i, j)
    order. Refuses parts of another scan, of other data, given twice or missing."""
    from pathlib import Path

    from gboost.encode import ClassLayout
    from gboost.engines.qt_cpu import combine_best
    from gboost.errors import InputError
    from gboost.parts import check_part_set
    from gboost.study import QCReport, SampleTable, Study, VariantTable

    if not dirs:
        raise InputError(None, "merge needs at least one part directory")
    loaded = []
    for path in dirs:
        got = load_qt_part(path)
        if got is None:
            raise InputError(path, "a case-control part: it cannot be merged with a quantitative trait scan's parts")
        loaded.append((Path(path), *got))
    _, d0, m0 = loaded[0]
    check_part_set(loaded, lambda m: {**{k: m["params"].get(k) for k in _SCIENCE}, "covariates": m.get("covariates")},
                   ("var_snp", "counts", "trait", "a1_flip"))
    loaded.sort(key=lambda x: x[2]["part"][0])  # rows in order: the fold's ties go to the earliest partner
    p = len(d0["var_snp"])
    n_sig = np.zeros(p, np.int64)
    n_fail = np.zeros(p, np.int64)
    best_after, after_id = np.zeros(p), np.full(p, -1, np.int64)
    best_before, before_id = np.zeros(p), np.full(p, -1, np.int64)
    for _, d, _ in loaded:
        n_sig += d["n_sig"]
        n_fail += d["n_fail"]
        for best, bid, name, nid in ((best_after, after_id, "best_after", "after_id"),
                                     (best_before, before_id, "best_before", "before_id")):
            take = (d[nid] >= 0) & (d[name] > best)
            best[take], bid[take] = d[name][take], d[nid][take]
    best, partner = combine_best(best_after, after_id, best_before, before_id)
    fields = {}
    for f in _PAIR_FIELDS:
        if f"pair_{f}" in d0:
            fields[f] = np.concatenate([d[f"pair_{f}"] for _, d, _ in loaded])
    order = np.lexsort((fields["j"], fields["i"]))
    screened = QTPairs(**{f: v[order] for f, v in fields.items()})
    params = QTParams(**{k: v for k, v in m0["params"].items() if k in QTParams.__dataclass_fields__})
    alpha1, alpha2 = qt_thresholds(params.epi1, params.epi2)
    variants = VariantTable(*(d0[f"var_{f}"].astype(object) if f not in ("cm", "bp") else d0[f"var_{f}"]
                              for f in _VARIANT_FIELDS))
    empty = np.zeros(0, dtype=object)
    samples = SampleTable(empty, empty, np.zeros(0, np.int8), np.zeros(0, np.int8))
    n_ctrl, n_case = (int(x) for x in d0["layout"])
    study = Study(variants, samples, ClassLayout(n_ctrl, n_case), np.zeros((p, 3, 0), np.uint64), d0["counts"],
                  QCReport(**m0["qc"]), list(m0["source_files"]), int(d0["snp_col_width"]), trait=d0["trait"],
                  a1_flip=d0["a1_flip"])
    engines = sorted({(meta["engine"], meta["device"]) for _, _, meta in loaded})
    engine = "+".join(sorted({e for e, _ in engines}))
    device = "; ".join(dev for _, dev in engines)
    timings = {"screen": sum(meta["timings_s"].get("screen", 0.0) for _, _, meta in loaded)}
    summary = QTSummary(n_sig, (p - 1) - n_fail, best, partner)
    n_valid = p * (p - 1) // 2 - int(n_fail.sum()) // 2
    res = QTScanResult(study, params, engine, device, screened, summary, n_valid, alpha1, alpha2,
                       d0["marginal_beta"], d0["marginal_stat"], d0["marginal_p"], timings, m0["test"])
    if m0.get("covariates") is not None:  # the refit the parts made, looked up by pair
        from gboost.covariates import AdjustedTable

        res._covariates = AdjustedTable.joined([AdjustedTable.of(d["adj_i"], d["adj_j"],
                                                                 [d[f"adj_{k}"] for k in _ADJ_FIELDS])
                                                for _, d, _ in loaded])
        res.covariate_names = list(m0["covariates"]["names"])
    return res


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
    """The QT scan as a :class:`gboost.scan.ScanResult`, for views written for case-control scans
    (the GUI's table, plots and pathway graph): STAT the Wald chi-square (DF 1; 0 for failed
    pairs), P exact, KSA NaN, tables with every sample in the first class. ``.qt`` keeps the
    original result, whose writers (gboost/io/qt_results.py) give the QT files."""
    from gboost.engines.base import Thresholds
    from gboost.scan import Pairs, ScanParams, ScanResult, Summary

    sc = res.screened
    m = len(sc)
    tables = np.zeros((m, 3, 3, 2), np.int64)
    tables[..., 0] = sc.tables
    pairs = Pairs(sc.i.copy(), sc.j.copy(), np.full(m, np.nan), np.where(sc.ok, sc.stat, np.nan),
                  sc.ok.astype(np.int64), sc.p, np.ones(m, bool), tables)
    sm = res.summary
    summary = Summary(sm.n_sig.copy(), sm.n_tot.copy(), sm.best.copy(), sm.best_partner.copy())
    # ScanParams holds a case-control scan's bounds (epi1 < 1); "write every pair" shows as nearly 1
    params = ScanParams(epi1=min(res.params.epi1, np.nextafter(1.0, 0.0)), epi2=res.params.epi2, device=res.params.device,
                        threads=res.params.threads, calibration_pairs=0)
    thr = Thresholds(np.full(5, res.alpha1), np.full(5, res.alpha2))
    out = ScanResult(res.study, params, res.engine, res.device, pairs, summary, res.marginal_stat, res.marginal_p, 1,
                     res.n_valid, thr, dict(res.timings))
    out.qt = res
    return out
