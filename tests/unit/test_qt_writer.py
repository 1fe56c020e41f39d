"""The QT writer on the case-control writer's pool (gboost/outputs/qt_results.py, gboost/outputs/results.py
FilePool): the files are the same bytes in one run of rows on one thread as in runs of a few rows
on four, and pairs.tsv and marginal.tsv equal a plain one-row-at-a-time reference (Python's %g
formatting, NA for NaN and, in marginal.tsv, for infinities; A1/A2 swapped where PLINK's A1 is the
.bim's A2)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from gboost.data.inputs import open_input
from gboost.outputs import results as R
from gboost.outputs.qt_results import render_qt_outputs, write_qt_outputs
from gboost.data.load import load_study
from gboost.pipeline.qt_scan import QTParams, run_qt_scan
from gboost.data.simulate import simulate_qt_study

FILES = ("pairs.epi.qt", "pairs.epi.qt.summary", "pairs.tsv", "marginal.tsv")


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    st = simulate_qt_study(60, 240, seed=31, missing_rate=0.03, ld_block=5, ld_rho=0.95, chromosomes=3,
                           effects=[(2, 40, 0.6), (10, 50, 0.5)])
    prefix = str(tmp_path_factory.mktemp("qtw") / "q")
    st.write(prefix)
    return load_study(open_input(bfile=prefix))


def _scan(study, **kw):
    covariates = kw.pop("covariates", None)
    return run_qt_scan(study, QTParams(**kw), covariates=covariates)


def _g(x, d: int) -> str:
    return "NA" if x != x else f"{x:.{d}g}"


def _pairs_reference(res) -> str:
    v, pr = res.study.variants, res.reported
    lines = []
    for k in range(len(pr)):
        a, b = pr.i[k], pr.j[k]
        row = [v.chrom[a], v.snp[a], v.bp[a], v.chrom[b], v.snp[b], v.bp[b], _g(pr.beta[k], 6), _g(pr.se[k], 6),
               _g(pr.stat[k], 6), _g(pr.p[k], 4), int(pr.n[k])]
        if pr.f is not None:
            row += [_g(pr.f[k], 6), int(pr.f_df1[k]), int(pr.f_df2[k]), _g(pr.f_p[k], 4)]
        if pr.adj is not None:
            row += [_g(pr.adj[0][k], 6), _g(pr.adj[1][k], 6), _g(pr.adj[2][k], 6), _g(pr.adj[3][k], 4),
                    int(pr.adj[4][k]), int(pr.adj[5][k])]  # N_ADJ, DF_ADJ
        lines.append("\t".join(map(str, row)) + "\n")
    return "".join(lines)


def _marginal_reference(res) -> str:
    s = res.study
    v = s.variants
    flip = s.a1_flip if s.a1_flip is not None else np.zeros(s.n_snps, bool)
    called = s.counts[:, :, 0]
    total = 2 * called.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        f = np.where(total > 0, (2 * called[:, 2] + called[:, 1]) / np.maximum(total, 1), np.nan)
    maf = np.minimum(f, 1 - f)
    num = lambda x, d: "NA" if not math.isfinite(x) else f"{x:.{d}g}"  # noqa: E731
    out = []
    for k in range(s.n_snps):
        a1, a2 = (v.a2[k], v.a1[k]) if flip[k] else (v.a1[k], v.a2[k])
        out.append(f"{v.chrom[k]}\t{v.snp[k]}\t{v.bp[k]}\t{a1}\t{a2}\t{num(maf[k], 6)}\t{num(res.marginal_beta[k], 6)}"
                   f"\t{num(res.marginal_stat[k], 8)}\t{num(res.marginal_p[k], 6)}\n")
    return "".join(out)


@pytest.mark.parametrize("kw", [{"epi1": 1.0}, {"epi1": 0.05, "epi2": 0.2, "genotypic": True}, {"epi1": 0.3, "cov": True}],
                         ids=["every-pair", "genotypic", "covariates"])
def test_runs_on_threads_equal_one_run_and_the_reference(study, monkeypatch, kw):
    kw = dict(kw)
    if kw.pop("cov", False):
        rng = np.random.default_rng(5)
        kw["covariates"] = (rng.normal(size=(study.n_samples, 2)), ["c1", "c2"])
    res = _scan(study, **kw)
    assert len(res.reported) > 20
    one = render_qt_outputs(res, threads=1)
    monkeypatch.setattr(R, "_PIECE_ROWS", 5)  # runs of a few rows: every cut is a seam to get wrong
    res.__dict__.pop("reported", None)
    many = render_qt_outputs(res, threads=4)
    assert {k: one[k] for k in FILES} == {k: many[k] for k in FILES}
    head, _, body = many["pairs.tsv"].partition("\n")
    assert body == _pairs_reference(res)
    assert head.split("\t")[-1] == ("DF_ADJ" if res.reported.adj is not None else "P_F" if res.params.genotypic else "N")
    assert many["marginal.tsv"].partition("\n")[2] == _marginal_reference(res)


def test_marginal_na_for_non_finite_and_swapped_alleles(study, monkeypatch):
    res = _scan(study, epi1=0.01)
    res.marginal_beta = res.marginal_beta.copy()
    res.marginal_stat = res.marginal_stat.copy()
    res.marginal_beta[[0, 3]] = [np.inf, np.nan]
    res.marginal_stat[5] = -np.inf
    flip = np.zeros(study.n_snps, bool)
    flip[[1, 4, 7]] = True
    monkeypatch.setattr(study, "a1_flip", flip)
    text = render_qt_outputs(res)["marginal.tsv"]
    assert text.partition("\n")[2] == _marginal_reference(res)
    rows = [r.split("\t") for r in text.splitlines()[1:]]
    assert rows[0][6] == "NA" and rows[3][6] == "NA" and rows[5][7] == "NA"
    assert (rows[1][3], rows[1][4]) == (study.variants.a2[1], study.variants.a1[1])


def test_no_reported_pair(study, tmp_path):
    res = _scan(study, epi1=1e-12, epi2=1e-12)
    assert len(res.reported) == 0
    out = write_qt_outputs(res, tmp_path / "out", threads=3)
    assert (out / "pairs.tsv").read_text() == "CHR1\tSNP1\tBP1\tCHR2\tSNP2\tBP2\tBETA_INT\tSE\tSTAT\tP\tN\n"
    assert "format_pairs.epi.qt" in res.timings
