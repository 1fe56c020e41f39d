"""`gboost scan --perm N`: pairs.tsv's EMP2, perm.tsv, run.json's threshold, PLINK's files unchanged,
--within, the refusals (one line, exit 2, nothing written) and --resume of an interrupted run."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

from gboost.cli import main
from gboost.data.simulate import PlantedPair, simulate_study
from gboost.pipeline import permute
from tests.helpers import read_tsv


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    prefix = str(tmp_path_factory.mktemp("perm") / "s")
    simulate_study(40, 120, 130, seed=8, chromosomes=2, missing_rate=0.02, ld_block=5, ld_rho=0.9,
                   planted=[PlantedPair(3, 30, "threshold", 10.0)]).write(prefix)
    return prefix


def _scan(study, out, *flags):
    return main(["scan", "--bfile", study, "--out", str(out), "--device", "cpu", "--quiet", "--epi1", "1e-3",
                 "--calibration-pairs", "0", *flags])


@pytest.fixture(scope="module")
def plain(study, tmp_path_factory):
    out = tmp_path_factory.mktemp("plain") / "o"
    assert _scan(study, out) == 0
    return out


@pytest.fixture(scope="module")
def permuted(study, tmp_path_factory):
    out = tmp_path_factory.mktemp("permuted") / "o"
    assert _scan(study, out, "--perm", "25", "--perm-seed", "4") == 0
    return out


def test_perm_adds_emp2_perm_tsv_and_the_threshold_and_leaves_plinks_files_as_they_were(plain, permuted):
    for name in ("pairs.epi.cc", "pairs.epi.cc.summary", "marginal.tsv"):
        assert (plain / name).read_bytes() == (permuted / name).read_bytes()
    assert "perm.tsv" in os.listdir(permuted) and "perm.tsv" not in os.listdir(plain)
    rows, head = read_tsv(permuted / "pairs.tsv")
    plain_rows, plain_head = read_tsv(plain / "pairs.tsv")
    assert head == plain_head + ["EMP2"] and len(rows) == len(plain_rows) >= 1
    assert all({k: r[k] for k in plain_head} == p for r, p in zip(rows, plain_rows))
    perms, perm_head = read_tsv(permuted / "perm.tsv")
    assert perm_head == ["PERM", "STAT", "DF", "P", "CHR1", "SNP1", "BP1", "CHR2", "SNP2", "BP2"]
    assert [int(r["PERM"]) for r in perms] == list(range(1, 26))
    maxima = np.array([float(r["STAT"]) for r in perms])
    for r in rows:  # EMP2 recomputed from the two files
        want = (1 + (maxima >= float(r["STAT"])).sum()) / 26
        assert float(r["EMP2"]) == pytest.approx(want, rel=1e-5)
    assert float(rows[0]["EMP2"]) == pytest.approx(1 / 26)  # the planted pair beats every permutation
    run = json.loads((permuted / "run.json").read_text())
    pr = run["permutations"]
    assert pr["n"] == 25 and pr["seed"] == 4 and pr["within"] is None
    t = pr["threshold_0.05"]  # the floor(0.05 * 26) = 1st largest maximum
    assert t == pytest.approx(maxima.max(), rel=1e-9)
    assert pr["threshold_0.05_p_by_df"]["4"] == pytest.approx(np.exp(-t / 2) * (1 + t / 2), rel=1e-9)
    assert pr["maxima_quantile_95"] == pytest.approx(np.quantile(maxima, 0.95), rel=1e-6)
    assert run["bonferroni_0.05"] > 0 and pr["rescans"] >= 0
    assert run["parameters"]["perm"] == 25 and run["parameters"]["perm_seed"] == 4
    assert not any(n.startswith("checkpoint") for n in os.listdir(permuted))


def test_the_same_seed_gives_the_same_maxima_whatever_the_tile(study, permuted, tmp_path):
    assert _scan(study, tmp_path / "t", "--perm", "25", "--perm-seed", "4", "--tile", "9", "--threads", "1") == 0
    assert (tmp_path / "t" / "perm.tsv").read_bytes() == (permuted / "perm.tsv").read_bytes()
    assert (tmp_path / "t" / "pairs.tsv").read_bytes() == (permuted / "pairs.tsv").read_bytes()
    assert _scan(study, tmp_path / "s", "--perm", "25", "--perm-seed", "5") == 0
    assert (tmp_path / "s" / "perm.tsv").read_bytes() != (permuted / "perm.tsv").read_bytes()


def _fam(study):
    return [line.split() for line in open(study + ".fam").read().splitlines()]


def test_within_clusters_of_one_class_each_move_no_label(study, tmp_path):
    """Cluster = the sample's own status: a permutation within clusters changes nothing, so every
    permutation's maximum is the real scan's (a label moved across clusters would change some)."""
    within = tmp_path / "within.txt"
    within.write_text("".join(f"{f[0]} {f[1]} c{f[5]}\n" for f in _fam(study)))
    out = tmp_path / "o"
    assert _scan(study, out, "--perm", "6", "--within", str(within)) == 0
    perms, _ = read_tsv(out / "perm.tsv")
    rows, _ = read_tsv(out / "pairs.tsv")
    assert {r["STAT"] for r in perms} == {rows[0]["STAT"]}
    assert float(rows[0]["EMP2"]) == 1.0
    run = json.loads((out / "run.json").read_text())
    assert run["permutations"]["strata"] == 2 and run["permutations"]["within"] == str(within)


def _refused(study, out, capsys, *flags):
    rc = _scan(study, out, *flags)
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "Traceback" not in err[0]
    assert not out.exists() or not [n for n in os.listdir(out) if not n.startswith(".")]
    return err[0]


def test_bad_within_files_are_one_line_and_nothing_written(study, tmp_path, capsys):
    fam = _fam(study)
    within = tmp_path / "w.txt"
    within.write_text("".join(f"{f[0]} {f[1]} A\n" for f in fam[1:]))
    line = _refused(study, tmp_path / "o1", capsys, "--perm", "3", "--within", str(within))
    assert str(within) in line and f"sample {fam[0][0]} {fam[0][1]} of the scan has no cluster" in line
    line = _refused(study, tmp_path / "o2", capsys, "--perm", "3", "--within", str(tmp_path / "absent.txt"))
    assert "absent.txt" in line
    line = _refused(study, tmp_path / "o3", capsys, "--perm", "3", "--within", str(tmp_path))  # a folder
    assert str(tmp_path) in line
    within.write_text("a b\n")
    assert "expected FID IID CLUSTER" in _refused(study, tmp_path / "o4", capsys, "--perm", "3", "--within",
                                                  str(within))


def test_perm_refusals(study, tmp_path, capsys):
    within = tmp_path / "w.txt"
    within.write_text("".join(f"{f[0]} {f[1]} A\n" for f in _fam(study)))
    assert "no --perm was given" in _refused(study, tmp_path / "o1", capsys, "--within", str(within))
    assert "no --perm was given" in _refused(study, tmp_path / "o2", capsys, "--perm-seed", "3")
    covar = tmp_path / "c.txt"
    covar.write_text("".join(f"{f[0]} {f[1]} {k % 7}\n" for k, f in enumerate(_fam(study))))
    assert "--perm and --covar" in _refused(study, tmp_path / "o3", capsys, "--perm", "3", "--covar", str(covar))
    assert "--part" in _refused(study, tmp_path / "o4", capsys, "--perm", "3", "--part", "1/2")
    pheno = tmp_path / "qt.txt"
    pheno.write_text("".join(f"{f[0]} {f[1]} {0.25 * (k % 9) + 0.1:.2f}\n" for k, f in enumerate(_fam(study))))
    # a quantitative trait permutes (tests/cli/test_qt_perm_cli.py), but not with covariates either
    line = _refused(study, tmp_path / "o5", capsys, "--perm", "3", "--pheno", str(pheno), "--covar", str(covar))
    assert str(covar) in line and "--perm and --covar do not go together" in line


def test_library_refuses_perm_with_covariates(study):
    import gboost

    s = gboost.load_study(gboost.open_input(bfile=study))
    with pytest.raises(ValueError, match="--perm and --covar"):
        gboost.run_pipeline(s, gboost.ScanParams(device="cpu", perm=3), covariates=(np.zeros((s.n_samples, 1)), ["a"]))


@pytest.mark.slow
def test_an_interrupted_perm_run_resumes_the_same_permutations(study, permuted, tmp_path, monkeypatch, capsys):
    real = permute.relabelled_maximum

    def stop_at_ninth(engine, pstudy, t, k, *args):
        if k == 9:
            raise KeyboardInterrupt
        return real(engine, pstudy, t, k, *args)

    out = tmp_path / "o"
    monkeypatch.setattr(permute, "relabelled_maximum", stop_at_ninth)
    assert _scan(study, out, "--perm", "25", "--perm-seed", "4") == 130
    assert len((out / "checkpoint.perm").read_bytes().splitlines()) == 9
    assert not (out / "pairs.tsv").exists()
    monkeypatch.setattr(permute, "relabelled_maximum", real)
    capsys.readouterr()
    # Another seed, another N or another --within is another study of permutations: refused.
    line = _refused_resume(study, out, capsys, "--perm", "25", "--perm-seed", "5")
    assert "--perm, --perm-seed or the --within file" in line
    assert _scan(study, out, "--perm", "25", "--perm-seed", "4", "--resume") == 0
    for name in ("perm.tsv", "pairs.tsv", "pairs.epi.cc", "pairs.epi.cc.summary"):
        assert (out / name).read_bytes() == (permuted / name).read_bytes()
    run = json.loads((out / "run.json").read_text())
    assert run["permutations"]["resumed"] == 9
    assert not any(n.startswith("checkpoint") for n in os.listdir(out))


def _refused_resume(study, out, capsys, *flags):
    rc = _scan(study, out, *flags, "--resume")
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1
    assert (out / "checkpoint.perm").exists()  # (left as it was)
    return err[0]


def test_overwrite_without_perm_leaves_no_stale_perm_tsv(study, tmp_path):
    out = tmp_path / "o"
    assert _scan(study, out, "--perm", "3") == 0 and (out / "perm.tsv").exists()
    assert _scan(study, out, "--overwrite") == 0
    assert not (out / "perm.tsv").exists()
    assert "EMP2" not in (out / "pairs.tsv").read_text().splitlines()[0]
