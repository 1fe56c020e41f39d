"""``gboost scan`` and ``gboost simulate --qt`` on quantitative traits: what is written,
what is refused (one line, exit 2, nothing written), and the loader's QT rules."""
from __future__ import annotations

import json

import numpy as np
import pytest

from gboost.cli import main as gboost_main
from gboost.errors import InputError
from gboost.data.inputs import open_input
from gboost.data.load import load_study
from gboost.data.simulate import simulate_qt_study, write_bfile


@pytest.fixture
def qt_prefix(tmp_path):
    st = simulate_qt_study(30, 300, seed=4, missing_rate=0.01, effects=[(1, 2, 0.8)])
    prefix = str(tmp_path / "q")
    st.write(prefix)
    return prefix


def test_scan_writes_the_qt_files_and_says_which_test(qt_prefix, tmp_path):
    out = tmp_path / "o"
    assert gboost_main(["scan", "--bfile", qt_prefix, "--out", str(out), "--quiet", "--epi1", "0.01"]) == 0
    names = sorted(p.name for p in out.iterdir())
    assert names == ["gboost.log", "marginal.tsv", "pairs.epi.qt", "pairs.epi.qt.summary", "pairs.tsv", "run.json"]
    run = json.loads((out / "run.json").read_text())
    assert run["phenotype"] == "quantitative" and run["test"] == "linear"
    assert run["parameters"]["epi1"] == 0.01
    rows = [line.split("\t") for line in (out / "pairs.tsv").read_text().splitlines()]
    assert ("snp2", "snp3") in {(r[1], r[4]) for r in rows[1:]}, "the planted pair is reported"
    marg = (out / "marginal.tsv").read_text().splitlines()
    assert marg[0].split("\t") == ["CHR", "SNP", "BP", "A1", "A2", "MAF", "BETA", "STAT", "P"]
    assert len(marg) == 31


def test_default_epi1_is_plinks_1e_4_for_a_quantitative_trait(qt_prefix, tmp_path):
    out = tmp_path / "o"
    assert gboost_main(["scan", "--bfile", qt_prefix, "--out", str(out), "--quiet"]) == 0
    assert json.loads((out / "run.json").read_text())["parameters"]["epi1"] == 1e-4


def test_genotypic_flag_adds_the_f_test_columns(qt_prefix, tmp_path):
    out = tmp_path / "o"
    assert gboost_main(["scan", "--bfile", qt_prefix, "--out", str(out), "--quiet", "--epi1", "0.05",
                        "--genotypic"]) == 0
    lines = (out / "pairs.tsv").read_text().splitlines()
    assert lines[0].split("\t")[-4:] == ["F", "F_DF1", "F_DF2", "P_F"]
    first = lines[1].split("\t")
    assert 1 <= int(first[-3]) <= 4 and 0 <= float(first[-1]) < 0.05  # (empty cells take dfs away)
    assert json.loads((out / "run.json").read_text())["test"] == "linear+genotypic"


@pytest.mark.parametrize("flag", [["--dask", "local:1"], ["--allelic"],
                                  ["--max-r2", "0.5"]])
def test_options_the_qt_scan_lacks_are_refused_in_one_line(qt_prefix, tmp_path, capsys, flag):
    out = tmp_path / "o"
    assert gboost_main(["scan", "--bfile", qt_prefix, "--out", str(out), "--quiet", *flag]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "quantitative trait" in err[0] and "Traceback" not in err[0]
    assert not out.exists() or not any(p.name != ".gboost.lock" for p in out.iterdir())


def test_epi1_above_1_is_refused(qt_prefix, tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        gboost_main(["scan", "--bfile", qt_prefix, "--out", str(tmp_path / "o"), "--epi1", "1.5"])
    assert exc.value.code == 2


def test_epi1_1_on_a_case_control_study_is_refused_in_one_line(tmp_path, capsys):
    from gboost.data.simulate import simulate_study

    simulate_study(10, 20, 20, seed=1).write(str(tmp_path / "cc"))
    assert gboost_main(["scan", "--bfile", str(tmp_path / "cc"), "--out", str(tmp_path / "o"), "--epi1", "1",
                        "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--epi1" in err[0]


def test_constant_trait_is_refused_in_one_line(tmp_path, capsys):
    st = simulate_qt_study(10, 50, seed=1)
    st.samples.trait[:] = 3.25
    prefix = str(tmp_path / "c")
    st.write(prefix)
    assert gboost_main(["scan", "--bfile", prefix, "--out", str(tmp_path / "o"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "c.fam" in err[0] and "3.25 for all 50" in err[0]


def test_loader_keeps_all_het_snps_and_skips_one_homozygote_snps(tmp_path):
    st = simulate_qt_study(8, 120, seed=2)
    g = st.genotypes
    g[2] = 1  # all het: PLINK's --epistasis keeps it (its pairs fail)
    g[3] = 0
    g[3][:4] = -1  # one homozygote and missing calls: monomorphic
    g[4] = 0
    g[4][0] = 1  # one het: polymorphic
    prefix = str(tmp_path / "m")
    write_bfile(prefix, g, st.variants, st.samples)
    study = load_study(open_input(bfile=prefix))
    assert study.quantitative
    assert list(study.variants.snp) == ["snp1", "snp2", "snp3", "snp5", "snp6", "snp7", "snp8"]
    assert study.qc.snps_monomorphic == 1


def test_plinks_a1_is_the_founders_minor_allele(tmp_path):
    st = simulate_qt_study(6, 400, seed=3, maf_range=(0.1, 0.3))
    g = st.genotypes
    g[1] = np.where(g[1] >= 0, 2 - g[1], -1)  # .bim's A1 now the major allele of SNP 2
    prefix = str(tmp_path / "a")
    write_bfile(prefix, g, st.variants, st.samples)
    study = load_study(open_input(bfile=prefix))
    assert study.a1_flip.tolist() == [False, True, False, False, False, False]


def test_unknown_sex_clears_the_trait_unless_allow_no_sex(tmp_path):
    st = simulate_qt_study(6, 100, seed=5, unknown_sex=0.2)
    prefix = str(tmp_path / "s")
    st.write(prefix)
    no_sex = int((st.samples.sex == 0).sum())
    assert no_sex > 0
    assert load_study(open_input(bfile=prefix)).n_samples == 100 - no_sex
    assert load_study(open_input(bfile=prefix, allow_no_sex=True)).n_samples == 100
    src = open_input(bfile=prefix)
    assert np.isnan(src.samples.trait[st.samples.sex == 0]).all()


def test_too_few_phenotyped_samples_is_an_input_error(tmp_path):
    st = simulate_qt_study(6, 30, seed=6)
    st.samples.trait[1:] = np.nan
    prefix = str(tmp_path / "f")
    st.write(prefix)
    with pytest.raises(InputError, match="only 1 sample with a quantitative phenotype"):
        load_study(open_input(bfile=prefix))


def test_simulate_qt_cli_is_seeded_and_read_back_as_quantitative(tmp_path, capsys):
    args = ["simulate", "--snps", "12", "--qt", "150", "--seed", "8", "--qt-effect", "1:2:0.5", "--missing", "0.01",
            "--missing-trait", "0.1"]
    assert gboost_main([*args, "--out", str(tmp_path / "a")]) == 0
    assert gboost_main([*args, "--out", str(tmp_path / "b")]) == 0
    for ext in (".bed", ".bim", ".fam"):
        assert (tmp_path / f"a{ext}").read_bytes() == (tmp_path / f"b{ext}").read_bytes()
    src = open_input(bfile=str(tmp_path / "a"), allow_no_sex=True)
    assert src.samples.trait is not None and np.isnan(src.samples.trait).sum() > 0
    assert "beta 0.5" in capsys.readouterr().out


def test_simulate_needs_cases_and_controls_or_qt(tmp_path, capsys):
    assert gboost_main(["simulate", "--snps", "5", "--seed", "1", "--out", str(tmp_path / "x")]) == 2
    assert "--qt" in capsys.readouterr().err


def test_covariate_refit_equals_frisch_waugh_lovell(rng):
    """BETA_ADJ is the slope of y on a*b after both are residualised on (1, covariates, a, b)."""
    from gboost.stats.covariates import adjusted_linear_test

    n = 400
    a, b = rng.integers(0, 3, n), rng.integers(0, 3, n)
    cov = np.column_stack([rng.normal(size=n), rng.integers(0, 2, n)]).astype(float)
    y = 1.0 + 0.7 * cov[:, 0] + 0.4 * a * b + rng.normal(size=n)
    a[:5] = -1  # missing calls and a missing covariate leave those samples out
    cov[7, 1] = np.nan
    beta, se, stat, p = adjusted_linear_test(a, b, y, cov)
    ok = (a >= 0) & ~np.isnan(cov).any(axis=1)
    Z = np.column_stack([np.ones(ok.sum()), cov[ok], a[ok], b[ok]])
    res = lambda v: v - Z @ np.linalg.lstsq(Z, v, rcond=None)[0]  # noqa: E731
    ry, rab = res(y[ok]), res((a[ok] * b[ok]).astype(float))
    assert beta == pytest.approx(float(rab @ ry / (rab @ rab)), rel=1e-9)
    resid = ry - rab * (rab @ ry / (rab @ rab))
    assert se == pytest.approx(np.sqrt(resid @ resid / (ok.sum() - 6) / (rab @ rab)), rel=1e-9)
    assert stat == pytest.approx((beta / se) ** 2, rel=1e-12) and 0 <= p < 1e-3


def test_covar_adds_adjusted_columns_for_the_reported_pairs(qt_prefix, tmp_path):
    fam = [line.split() for line in open(qt_prefix + ".fam")]
    rng = np.random.default_rng(3)
    (tmp_path / "c.txt").write_text("FID IID age sex2\n" + "".join(
        f"{f[0]} {f[1]} {rng.normal(50, 10):.2f} {'NA' if k == 0 else k % 2}\n" for k, f in enumerate(fam)))
    out = tmp_path / "o"
    assert gboost_main(["scan", "--bfile", qt_prefix, "--out", str(out), "--quiet", "--epi1", "0.01",
                        "--covar", str(tmp_path / "c.txt")]) == 0
    lines = [line.split("\t") for line in (out / "pairs.tsv").read_text().splitlines()]
    assert lines[0][-4:] == ["BETA_ADJ", "SE_ADJ", "STAT_ADJ", "P_ADJ"]
    top = lines[1]
    # a noise covariate barely moves a real interaction
    assert float(top[-4]) == pytest.approx(float(top[6]), rel=0.1)
    assert json.loads((out / "run.json").read_text())["covariates"] == ["age", "sex2"]
