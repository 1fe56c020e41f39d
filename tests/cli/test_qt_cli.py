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


@pytest.mark.parametrize("flag", [["--allelic"], ["--dask", "local:gpus"],
                                  ["--dask", "local:1", "--device", "gpu"]])
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


def test_covar_adjusts_every_pair_and_says_so(qt_prefix, tmp_path):
    fam = [line.split() for line in open(qt_prefix + ".fam")]
    rng = np.random.default_rng(3)
    (tmp_path / "c.txt").write_text("FID IID age sex2\n" + "".join(
        f"{f[0]} {f[1]} {rng.normal(50, 10):.2f} {'NA' if k == 0 else k % 2}\n" for k, f in enumerate(fam)))
    out = tmp_path / "o"
    assert gboost_main(["scan", "--bfile", qt_prefix, "--out", str(out), "--quiet", "--epi1", "0.01",
                        "--covar", str(tmp_path / "c.txt")]) == 0
    lines = [line.split("\t") for line in (out / "pairs.tsv").read_text().splitlines()]
    assert lines[0][-6:] == ["BETA_ADJ", "SE_ADJ", "STAT_ADJ", "P_ADJ", "N_ADJ", "DF_ADJ"]
    top = lines[1]
    # a noise covariate barely moves a real interaction
    assert float(top[-6]) == pytest.approx(float(top[6]), rel=0.1)
    # N in every row: the complete cases lack the sample without sex2; df = N - 1 - 2 covariates - 3
    assert int(top[-2]) in (int(top[10]), int(top[10]) - 1) and int(top[-1]) == int(top[-2]) - 6
    run = json.loads((out / "run.json").read_text())
    assert run["covariates"] == ["age", "sex2"] and run["test"] == "linear+covariates"
    assert run["model"] == "y ~ 1 + age + sex2 + a + b + a*b"
    # .epi.qt holds the adjusted test: its rows are the pairs with P_ADJ <= epi1, their STAT STAT_ADJ
    epi = [line.split() for line in (out / "pairs.epi.qt").read_text().splitlines()[1:]]
    assert len(epi) == len(lines) - 1
    got = {(r[1], r[3]): float(r[5]) for r in epi}
    want = {(r[1], r[4]): float(r[-4]) for r in lines[1:]}
    assert got.keys() == want.keys() and all(got[k] == pytest.approx(want[k], rel=1e-5) for k in got)


def test_covar_on_the_gpu_engine_is_refused_in_one_line(qt_prefix, tmp_path, capsys):
    fam = [line.split() for line in open(qt_prefix + ".fam")]
    (tmp_path / "c.txt").write_text("FID IID age\n" + "".join(f"{f[0]} {f[1]} {k % 40}\n" for k, f in enumerate(fam)))
    capsys.readouterr()
    assert gboost_main(["scan", "--bfile", qt_prefix, "--out", str(tmp_path / "o"), "--quiet", "--device", "gpu",
                        "--covar", str(tmp_path / "c.txt")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "CPU engine" in err[0]


def test_min_distance_and_max_r2_leave_pairs_out_of_pairs_tsv_only(tmp_path):
    """--min-distance and --max-r2 on a quantitative trait, as on a case-control scan: pairs.tsv
    loses the pairs closer than the distance on one chromosome and those whose genotypic r^2 (from
    the dosages of the samples called at both, computed here with NumPy) exceeds the bound;
    pairs.epi.qt (PLINK's file) keeps every row."""
    import numpy as np

    st = simulate_qt_study(60, 400, seed=9, chromosomes=2, missing_rate=0.02, ld_block=6, ld_rho=0.9,
                           effects=[(1, 2, 0.8), (10, 40, 0.6)])
    prefix = str(tmp_path / "ld")
    st.write(prefix)
    base = ["scan", "--bfile", prefix, "--quiet", "--epi1", "0.5"]
    assert gboost_main([*base, "--out", str(tmp_path / "all")]) == 0
    assert gboost_main([*base, "--out", str(tmp_path / "cut"), "--max-r2", "0.05", "--min-distance", "200"]) == 0
    rows = lambda d: [line.split("\t") for line in (tmp_path / d / "pairs.tsv").read_text().splitlines()[1:]]
    every, cut = rows("all"), rows("cut")
    from gboost.data.inputs import open_input
    from gboost.data.load import load_study
    from gboost.engines.qt_gpu import dosages

    study = load_study(open_input(bfile=prefix))
    g = dosages(study)
    at = {s: k for k, s in enumerate(study.variants.snp)}

    def r2(a, b):
        x, y = g[at[a]], g[at[b]]
        called = (x >= 0) & (y >= 0)
        c = np.corrcoef(x[called].astype(float), y[called].astype(float))[0, 1]
        return c * c

    def kept(r):
        near = r[0] == r[3] and abs(int(r[5]) - int(r[2])) < 200_000
        return not near and not r2(r[1], r[4]) > 0.05 + 1e-9

    assert [r for r in every if kept(r)] == cut
    assert 0 < len(cut) < len(every)
    assert (tmp_path / "cut" / "pairs.epi.qt").read_bytes() == (tmp_path / "all" / "pairs.epi.qt").read_bytes()
