"""The files of a quantitative-trait scan (docs/qt_epistasis.md §5).

* ``pairs.epi.qt`` and ``pairs.epi.qt.summary``: PLINK 1.9's ``--epistasis`` files on a
  quantitative trait, byte for byte (same widths and number formatting as ``.epi.cc``:
  gboost/readers/plink_format.py);
* ``pairs.tsv``: the pairs with exact P <= epi1, STAT descending, columns
  ``CHR1 SNP1 BP1 CHR2 SNP2 BP2 BETA_INT SE STAT P N`` (and ``F F_DF1 F_DF2 P_F`` with
  ``--genotypic``); with covariates the pairs with P_ADJ <= epi1, P_ADJ ascending, and
  ``BETA_ADJ SE_ADJ STAT_ADJ P_ADJ N_ADJ DF_ADJ`` after them (the unadjusted test's columns kept);
* with covariates ``pairs.epi.qt`` holds the adjusted test in PLINK's layout (BETA_INT, STAT = t^2,
  P the t test's) and the summary counts it: docs/qt_epistasis.md §7;
* ``marginal.tsv``: per SNP the additive linear test, ``CHR SNP BP A1 A2 MAF BETA STAT P`` with
  PLINK's A1 (the founders' minor allele: the dosage counted);
* ``run.json``: as for case-control scans, with ``"test"`` naming the test;
* with ``--perm``: pairs.tsv's last column ``EMP2``, ``perm.tsv`` (each permutation's maximum and
  its pair) and run.json's ``"permutations"``, as a case-control scan writes them
  (gboost/pipeline/permute.py).
"""
from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path

import numpy as np

from gboost.version import __version__
from gboost.outputs.results import SnpTexts, _json_default, _rj, _sha256, summary_span

QT_OUTPUT_FILES = ("pairs.tsv", "pairs.epi.qt", "pairs.epi.qt.summary", "marginal.tsv", "run.json")


def _epi_qt_header(w: int) -> bytes:
    return f"CHR1 {_rj('SNP1', w)} CHR2 {_rj('SNP2', w)}     BETA_INT         STAT            P \n".encode()


def _summary_header(w: int) -> bytes:
    """.epi.qt.summary's: the layout of .epi.cc.summary (PLINK writes both with the same code),
    BEST_CHISQ the best STAT."""
    return (f" CHR {_rj('SNP', w)}        N_SIG        N_TOT         PROP   BEST_CHISQ BEST_CHR "
            f"{_rj('BEST_SNP', w)} \n").encode()


def _pairs_header(pr) -> bytes:
    cols = ["CHR1", "SNP1", "BP1", "CHR2", "SNP2", "BP2", "BETA_INT", "SE", "STAT", "P", "N"]
    if pr.f is not None:
        cols += ["F", "F_DF1", "F_DF2", "P_F"]
    if pr.adj is not None:
        cols += ["BETA_ADJ", "SE_ADJ", "STAT_ADJ", "P_ADJ", "N_ADJ", "DF_ADJ"]
    if pr.emp2 is not None:
        cols += ["EMP2"]
    return ("\t".join(cols) + "\n").encode()


_MARGINAL_HEADER = b"CHR\tSNP\tBP\tA1\tA2\tMAF\tBETA\tSTAT\tP\n"


class _SnpColumns:
    """Every SNP's CHR, SNP, BP (and A1, A2 as marginal.tsv prints them) as byte matrices and
    lengths (gboost/readers/fastnum.py), made once: runs of pairs.tsv gather their rows' by index."""

    def __init__(self, study, texts: SnpTexts):
        from gboost.readers.fastnum import int_bytes, ragged_matrix

        self.chrom, self.snp = ragged_matrix(texts.chrom), ragged_matrix(texts.snp)
        self.bp = int_bytes(study.variants.bp)


def pairs_tsv_pieces(pr, cols: _SnpColumns, pieces: int = 1) -> list:
    """pairs.tsv's rows (after the header; see the module notes) in up to ``pieces`` runs, as
    functions returning the bytes of their run (uint8 arrays): the SNPs' fields gathered by
    index from ``cols``, numbers by compiled passes (gboost/readers/fastnum.py) that release the GIL."""
    from gboost.readers.fastnum import format_g_bytes, int_bytes, take_rows, tsv_rows_array
    from gboost.readers.plink_text import _bounds
    from gboost.stats.qt import exact_normal_p

    def piece(a: int, b: int):
        def run() -> np.ndarray:
            i, j = pr.i[a:b], pr.j[a:b]
            columns = [take_rows(cols.chrom, i), take_rows(cols.snp, i), take_rows(cols.bp, i),
                       take_rows(cols.chrom, j), take_rows(cols.snp, j), take_rows(cols.bp, j),
                       format_g_bytes(pr.beta[a:b], 6, na="NA"), format_g_bytes(pr.se[a:b], 6, na="NA"),
                       format_g_bytes(pr.stat[a:b], 6, na="NA"),
                       format_g_bytes(exact_normal_p(pr.stat[a:b], pr.ok[a:b]), 4, na="NA"),
                       int_bytes(pr.tables[a:b].sum(axis=(1, 2)))]  # (QTPairs.p and .n of these rows)
            if pr.f is not None:
                columns += [format_g_bytes(pr.f[a:b], 6, na="NA"), int_bytes(pr.f_df1[a:b]),
                            int_bytes(pr.f_df2[a:b]), format_g_bytes(pr.f_p[a:b], 4, na="NA")]
            if pr.adj is not None:
                columns += [format_g_bytes(pr.adj[0][a:b], 6, na="NA"), format_g_bytes(pr.adj[1][a:b], 6, na="NA"),
                            format_g_bytes(pr.adj[2][a:b], 6, na="NA"), format_g_bytes(pr.adj[3][a:b], 4, na="NA"),
                            int_bytes(pr.adj[4][a:b]), int_bytes(pr.adj[5][a:b])]
            if pr.emp2 is not None:
                columns.append(format_g_bytes(pr.emp2[a:b], 6, na="NA"))
            return tsv_rows_array(columns)
        return run

    return [piece(a, b) for a, b in _bounds(len(pr), pieces) if b > a]


def _finite(x) -> np.ndarray:
    """NaN for every non-finite value: marginal.tsv prints NA for NaN and infinities alike."""
    x = np.asarray(x, np.float64)
    return np.where(np.isfinite(x), x, np.nan)


def marginal_pieces(result, texts: SnpTexts, cols: _SnpColumns, pieces: int = 1) -> list:
    """marginal.tsv's rows (after the header): per SNP the additive linear test, with PLINK's A1
    (the founders' minor allele: the dosage counted), in up to ``pieces`` runs of SNPs as
    functions returning their bytes, as :func:`pairs_tsv_pieces`."""
    from gboost.readers.fastnum import format_g_bytes, ragged, ragged_matrix, tsv_rows_array
    from gboost.readers.plink_text import _bounds

    s = result.study
    v = s.variants
    flip = s.a1_flip if s.a1_flip is not None else np.zeros(s.n_snps, bool)
    if flip.any():
        a1 = ragged_matrix(ragged(np.where(flip, v.a2, v.a1)))
        a2 = ragged_matrix(ragged(np.where(flip, v.a1, v.a2)))
    else:
        a1, a2 = ragged_matrix(texts.a1), ragged_matrix(texts.a2)
    called = s.counts[:, :, 0]  # type = copies of the .bim's A1; every sample is in class 0
    total = 2 * called.sum(axis=1)
    a1_copies = 2 * called[:, 2] + called[:, 1]
    with np.errstate(invalid="ignore", divide="ignore"):
        f = np.where(total > 0, a1_copies / np.maximum(total, 1), np.nan)
    maf = _finite(np.minimum(f, 1 - f))
    beta, stat, p = _finite(result.marginal_beta), _finite(result.marginal_stat), _finite(result.marginal_p)
    fields = [cols.chrom, cols.snp, cols.bp, a1, a2]
    if s.rect is not None:
        # A rectangle study holds a SNP that is both row and column twice (row SNPs first):
        # marginal.tsv lists each scanned SNP once, in file order (gboost/data/candidates.py).
        keep = s.rect.distinct()
        fields = [(c[0][keep], c[1][keep]) for c in fields]
        maf, beta, stat, p = maf[keep], beta[keep], stat[keep], p[keep]

    def piece(a: int, b: int):
        def run() -> np.ndarray:
            return tsv_rows_array([(c[0][a:b], c[1][a:b]) for c in fields]
                                  + [format_g_bytes(maf[a:b], 6, na="NA"), format_g_bytes(beta[a:b], 6, na="NA"),
                                     format_g_bytes(stat[a:b], 8, na="NA"), format_g_bytes(p[a:b], 6, na="NA")])
        return run

    return [piece(a, b) for a, b in _bounds(len(maf), pieces) if b > a]


def qt_run_record(result, extra: dict | None = None) -> dict:
    """run.json of a QT scan."""
    s = result.study
    clock = getattr(result, "command_clock", None)
    if clock is not None:
        clock.lap("write_outputs")
    inputs = {os.path.abspath(f): _sha256(f) for f in s.source_files if os.path.isfile(f)}
    if clock is not None:
        clock.lap("inputs_sha256_wait")
        clock.end_stages()  # the command's last work, where the CLI gave any
    y = s.trait
    return {
        "gboost_version": __version__,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "python": platform.python_version(),
        "host": platform.node(),
        "phenotype": "quantitative",
        "test": result.test,
        "test_description": (("PLINK 1.9 --epistasis on a quantitative trait: y ~ 1 + a + b + a*b (A1 dosages), "
                              "Wald test of the a*b coefficient" if result.covariate_names is None else
                              "every pair adjusted for the covariates (as PLINK 2's QT --epistasis): "
                              f"{result.model} by least squares over the pair's complete cases, Wald test of "
                              "the a*b coefficient, P from the t distribution with N - rank df; pairs.epi.qt and "
                              "its summary hold this test, pairs.tsv's BETA_INT..N the unadjusted one beside it")
                             + ("; plus the 4-df genotypic interaction F-test (9 cell means vs "
                                "factor(a) + factor(b)) of the reported pairs" if result.params.genotypic else "")),
        "model": result.model,
        "engine": result.engine,
        "device": result.device,
        "parameters": dict(result.params.__dict__),
        "thresholds": {"epi1_chisq": result.alpha1, "epi2_chisq": result.alpha2},
        "inputs": inputs,
        "counts": {
            "snps": s.n_snps,
            "samples": s.n_samples,
            "pairs": s.n_snps * (s.n_snps - 1) // 2 if s.rect is None else s.rect.n_pairs(),
            "valid_tests": int(result.n_valid),
            "epi_qt_rows": int(len(result.screened)),
            "reported_pairs": int(len(result.reported)),
            **getattr(result, "engine_counts", {}),
        },
        "trait": {"mean": float(np.mean(y)), "sd": float(np.std(y, ddof=1)) if len(y) > 1 else None},
        "bonferroni_0.05": result.bonferroni,
        **({"permutations": perm.as_dict()} if (perm := getattr(result, "perm", None)) is not None else {}),
        "covariates": result.covariate_names,
        # a candidate-set scan (gboost/data/candidates.py): its mode, sets, rows and columns
        "sets": None if s.rect is None else {"mode": s.rect.mode, "names": list(s.rect.names),
                                             "rows": int(s.rect.n_rows), "columns": int(s.rect.n_cols)},
        "qc": s.qc.as_dict(),
        "timings_s": {k: round(v, 6) for k, v in result.timings.items()},
        **({"command_s": clock.as_dict()} if clock is not None else {}),
        **(extra or {}),
    }


def render_qt_lazily(result, extra: dict | None = None, threads: int | None = None,
                     write_times: dict | None = None) -> dict:
    """The five files for gboost/outputs/outdir.py's write_files, on the case-control writer's machinery
    (gboost/outputs/results.py :class:`FilePool`): the four data files as lists of buffers (header, then
    runs of rows, in order) formatted side by side on one pool of ``threads`` threads (default:
    every core), pairs.tsv's rows picked and sorted (QTScanResult.reported) on the pool while the
    others format; run.json a function write_files calls once the others are on disk."""
    from gboost.readers.plink_text import epi_qt_pieces, summary_pieces
    from gboost.outputs.results import FilePool, files_for_writer, perm_tsv_bytes

    s, pr, sm = result.study, result.screened, result.summary
    texts = SnpTexts(s)
    with FilePool(threads) as pool:
        rep = pool.submit(lambda: result.reported)
        cols = _SnpColumns(s, texts)
        w = texts.w
        if pr.adj is None:
            rows = epi_qt_pieces(pr.i, pr.j, pr.ok, pr.beta, pr.stat, texts.plink_chrom, texts.plink_snp,
                                 pool.pieces(len(pr)))
        else:  # the adjusted test, whose P (the t test's) is printed as computed
            rows = epi_qt_pieces(pr.i, pr.j, np.isfinite(pr.adj[2]), pr.adj[0], pr.adj[2], texts.plink_chrom,
                                 texts.plink_snp, pool.pieces(len(pr)), p=pr.adj[3])
        pool.add("pairs.epi.qt", _epi_qt_header(w), rows)
        n, first = summary_span(s)  # (a candidate-set scan's summary lists its rows)
        pool.add("pairs.epi.qt.summary", _summary_header(w),
                 summary_pieces(texts.plink_chrom, texts.plink_snp, w, sm.n_sig[:n], sm.n_tot[:n], sm.best[:n],
                                sm.best_partner[:n], pool.pieces(n), first=first))
        pool.add("marginal.tsv", _MARGINAL_HEADER, marginal_pieces(result, texts, cols, pool.pieces(s.n_snps)))
        reported, rep_s, _ = rep.result()
        pool.add("pairs.tsv", _pairs_header(reported), pairs_tsv_pieces(reported, cols, pool.pieces(len(reported))),
                 rep_s)
        names = list(QT_OUTPUT_FILES[:-1])
        perm = getattr(result, "perm", None)
        if perm is not None:  # --perm's maxima (gboost/pipeline/permute.py)
            pool.add_done("perm.tsv", [perm_tsv_bytes(s, perm)], 0.0)
            names.append("perm.tsv")
        done = pool.results()
    return files_for_writer(result, done, names,
                            lambda: json.dumps(qt_run_record(result, extra), indent=2, default=_json_default) + "\n",
                            write_times)


def render_qt_outputs(result, extra: dict | None = None, threads: int | None = None) -> dict:
    """The five files' texts (run.json as a function, rendered when called: after the others)."""
    out = render_qt_lazily(result, extra, threads)
    return {name: (b"".join(bytes(b) for b in v).decode("utf-8") if name != "run.json" else v)
            for name, v in out.items()}


def write_qt_outputs(result, out_dir: str | os.PathLike, *, overwrite: bool = False, extra: dict | None = None,
                     threads: int | None = None, extra_files: dict | None = None,
                     also_remove: tuple = ()) -> Path:
    """Write the QT scan's files into ``out_dir`` (gboost/outputs/outdir.py's rules: each whole,
    run.json last, nothing else touched), formatted on ``threads`` threads (default: every core);
    ``extra_files`` and ``also_remove`` as :func:`gboost.outputs.results.write_outputs` takes them."""
    from gboost.outputs.outdir import write_files

    from gboost.pipeline.checkpoint import LEDGER, MANIFEST, PERM_LEDGER

    # the finished scan's checkpoint (gboost/pipeline/checkpoint.py's ledger, and --perm's) goes once the
    # outputs are in place, and an earlier --perm run's perm.tsv with it
    write_times: dict = {}
    files = render_qt_lazily(result, extra, threads, write_times)
    return write_files(out_dir, {**files, **(extra_files or {})}, overwrite=overwrite,
                       remove=(LEDGER, MANIFEST, MANIFEST + ".tmp", PERM_LEDGER, "perm.tsv", *also_remove),
                       write_times=write_times)
