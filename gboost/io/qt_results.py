"""The files of a quantitative-trait scan (docs/qt_epistasis.md §5).

* ``pairs.epi.qt`` and ``pairs.epi.qt.summary``: PLINK 1.9's ``--epistasis`` files on a
  quantitative trait, byte for byte (same widths and number formatting as ``.epi.cc``:
  gboost/io/plink_format.py);
* ``pairs.tsv``: the pairs with exact P <= epi1, STAT descending, columns
  ``CHR1 SNP1 BP1 CHR2 SNP2 BP2 BETA_INT SE STAT P N`` (and ``F F_DF1 F_DF2 P_F`` with
  ``--genotypic``);
* ``marginal.tsv``: per SNP the additive linear test, ``CHR SNP BP A1 A2 MAF BETA STAT P`` with
  PLINK's A1 (the founders' minor allele: the dosage counted);
* ``run.json``: as for case-control scans, with ``"test"`` naming the test.
"""
from __future__ import annotations

import json
import math
import os
import platform
import time
from pathlib import Path

import numpy as np

import gboost
from gboost.io.results import _json_default, _rj, _sha256, plink_fields
from gboost.stats.qt import plink_normal_p_many

QT_OUTPUT_FILES = ("pairs.tsv", "pairs.epi.qt", "pairs.epi.qt.summary", "marginal.tsv", "run.json")


def epi_qt_text(result) -> str:
    return epi_qt_bytes(result).decode("utf-8")


def epi_qt_bytes(result) -> bytes:
    """PLINK's .epi.qt: header, then one row per pair PLINK writes (NaN for failed pairs), rows by
    the compiled writer of gboost/io/plink_text.py (PLINK's number formatting, widths in bytes)."""
    from gboost.io.plink_text import epi_qt_rows

    s = result.study
    w = s.snp_id_width
    pr = result.screened
    chrom, snp = plink_fields(s)
    p = plink_normal_p_many(np.ascontiguousarray(pr.stat, np.float64), np.ascontiguousarray(pr.ok, np.bool_))
    head = f"CHR1 {_rj('SNP1', w)} CHR2 {_rj('SNP2', w)}     BETA_INT         STAT            P \n".encode()
    return head + epi_qt_rows(pr.i, pr.j, pr.ok, pr.beta, pr.stat, p, chrom, snp)


def epi_qt_summary_text(result) -> str:
    """PLINK's .epi.qt.summary: the layout and writer of .epi.cc.summary (PLINK writes both with
    the same code), BEST_CHISQ the best STAT."""
    from gboost.io.plink_text import summary_rows

    s = result.study
    w = s.snp_id_width
    sm = result.summary
    chrom, snp = plink_fields(s)
    head = f" CHR {_rj('SNP', w)}        N_SIG        N_TOT         PROP   BEST_CHISQ BEST_CHR {_rj('BEST_SNP', w)} \n"
    return head + summary_rows(chrom, snp, w, sm.n_sig, sm.n_tot, sm.best, sm.best_partner).decode("utf-8")


def pairs_tsv_text(result) -> str:
    """pairs.tsv of a QT scan (see the module notes), by compiled columns."""
    from gboost.io.fastnum import format_g_bytes, int_bytes, text_bytes, tsv_rows_bytes

    v = result.study.variants
    pr = result.reported
    geno = pr.f is not None
    cols = ["CHR1", "SNP1", "BP1", "CHR2", "SNP2", "BP2", "BETA_INT", "SE", "STAT", "P", "N"]
    if geno:
        cols += ["F", "F_DF1", "F_DF2", "P_F"]
    if pr.adj is not None:
        cols += ["BETA_ADJ", "SE_ADJ", "STAT_ADJ", "P_ADJ"]
    header = "\t".join(cols) + "\n"
    if len(pr) == 0:
        return header
    i, j = pr.i, pr.j
    columns = [text_bytes(v.chrom[i]), text_bytes(v.snp[i]), int_bytes(v.bp[i]), text_bytes(v.chrom[j]),
               text_bytes(v.snp[j]), int_bytes(v.bp[j]), format_g_bytes(pr.beta, 6, na="NA"),
               format_g_bytes(pr.se, 6, na="NA"), format_g_bytes(pr.stat, 6, na="NA"), format_g_bytes(pr.p, 4, na="NA"),
               int_bytes(pr.n)]
    if geno:
        columns += [format_g_bytes(pr.f, 6, na="NA"), int_bytes(pr.f_df1), int_bytes(pr.f_df2),
                    format_g_bytes(pr.f_p, 4, na="NA")]
    if pr.adj is not None:
        columns += [format_g_bytes(pr.adj[0], 6, na="NA"), format_g_bytes(pr.adj[1], 6, na="NA"),
                    format_g_bytes(pr.adj[2], 6, na="NA"), format_g_bytes(pr.adj[3], 4, na="NA")]
    return header + tsv_rows_bytes(columns).decode("utf-8")


def _num(x: float, digits: int) -> str:
    return "NA" if not math.isfinite(x) else f"{x:.{digits}g}"


def marginal_tsv_text(result) -> str:
    """marginal.tsv of a QT scan: the additive linear test of every SNP."""
    s = result.study
    v = s.variants
    flip = s.a1_flip if s.a1_flip is not None else np.zeros(s.n_snps, bool)
    called = s.counts[:, :, 0]  # type = copies of the .bim's A1; every sample is in class 0
    total = 2 * called.sum(axis=1)
    a1 = 2 * called[:, 2] + called[:, 1]
    with np.errstate(invalid="ignore", divide="ignore"):
        f = np.where(total > 0, a1 / np.maximum(total, 1), np.nan)
    maf = np.minimum(f, 1 - f)
    lines = ["CHR\tSNP\tBP\tA1\tA2\tMAF\tBETA\tSTAT\tP\n"]
    for k in range(s.n_snps):
        a1k, a2k = (v.a2[k], v.a1[k]) if flip[k] else (v.a1[k], v.a2[k])
        lines.append(f"{v.chrom[k]}\t{v.snp[k]}\t{v.bp[k]}\t{a1k}\t{a2k}\t{_num(maf[k], 6)}\t"
                     f"{_num(result.marginal_beta[k], 6)}\t{_num(result.marginal_stat[k], 8)}\t"
                     f"{_num(result.marginal_p[k], 6)}\n")
    return "".join(lines)


def qt_run_record(result, extra: dict | None = None) -> dict:
    """run.json of a QT scan."""
    s = result.study
    clock = getattr(result, "command_clock", None)
    if clock is not None:
        clock.lap("write_outputs")
    inputs = {os.path.abspath(f): _sha256(f) for f in s.source_files if os.path.isfile(f)}
    if clock is not None:
        clock.lap("inputs_sha256_wait")
    y = s.trait
    return {
        "gboost_version": gboost.__version__,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "python": platform.python_version(),
        "host": platform.node(),
        "phenotype": "quantitative",
        "test": result.test,
        "test_description": ("PLINK 1.9 --epistasis on a quantitative trait: y ~ 1 + a + b + a*b (A1 dosages), "
                             "Wald test of the a*b coefficient"
                             + ("; plus the 4-df genotypic interaction F-test (9 cell means vs "
                                "factor(a) + factor(b)) of the reported pairs" if result.params.genotypic else "")),
        "engine": result.engine,
        "device": result.device,
        "parameters": dict(result.params.__dict__),
        "thresholds": {"epi1_chisq": result.alpha1, "epi2_chisq": result.alpha2},
        "inputs": inputs,
        "counts": {
            "snps": s.n_snps,
            "samples": s.n_samples,
            "pairs": s.n_snps * (s.n_snps - 1) // 2,
            "valid_tests": int(result.n_valid),
            "epi_qt_rows": int(len(result.screened)),
            "reported_pairs": int(len(result.reported)),
            **getattr(result, "engine_counts", {}),
        },
        "trait": {"mean": float(np.mean(y)), "sd": float(np.std(y, ddof=1)) if len(y) > 1 else None},
        "bonferroni_0.05": result.bonferroni,
        "covariates": result.covariate_names,
        "qc": s.qc.as_dict(),
        "timings_s": {k: round(v, 6) for k, v in result.timings.items()},
        **({"command_s": clock.as_dict()} if clock is not None else {}),
        **(extra or {}),
    }


def render_qt_outputs(result, extra: dict | None = None) -> dict:
    """The five files (run.json rendered last, when write_files asks for it)."""
    out = {
        "pairs.tsv": pairs_tsv_text(result),
        "pairs.epi.qt": epi_qt_text(result),
        "pairs.epi.qt.summary": epi_qt_summary_text(result),
        "marginal.tsv": marginal_tsv_text(result),
    }
    out["run.json"] = lambda: json.dumps(qt_run_record(result, extra), indent=2, default=_json_default) + "\n"
    return out


def write_qt_outputs(result, out_dir: str | os.PathLike, *, overwrite: bool = False, extra: dict | None = None) -> Path:
    """Write the QT scan's files into ``out_dir`` (gboost/io/outdir.py's rules: each whole,
    run.json last, nothing else touched)."""
    from gboost.io.outdir import write_files

    from gboost.checkpoint import LEDGER, MANIFEST

    # the finished scan's checkpoint (gboost.qt_scan.QTCheckpoint) goes once the outputs are in place
    return write_files(out_dir, render_qt_outputs(result, extra), overwrite=overwrite,
                       remove=(LEDGER, MANIFEST, MANIFEST + ".tmp"))
