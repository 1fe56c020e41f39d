"""`gboost scan --perm N` on a quantitative trait: pairs.tsv's EMP2, perm.tsv, run.json's threshold,
PLINK's files unchanged, --within, the refusals (one line, exit 2, nothing written), --help, and
--resume of an interrupted permutation run (byte for byte an uninterrupted run's)."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

from gboost.cli import build_parser, main
from gboost.data.simulate import simulate_qt_study
from gboost.pipeline import permute
from gboost.stats.qt import exact_normal_p
from tests.helpers import read_tsv

FILES = ("pairs.tsv", "pairs.epi.qt", "pairs.epi.qt.summary", "marginal.tsv", "perm.tsv")


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    prefix = str(tmp_path_factory.mktemp("qtperm") / "q")
    # (a few samples without a trait: they are not scanned, so not permuted either)
    simulate_qt_study(36, 260, seed=9, chromosomes=2, missing_rate=0.02, ld_block=4, ld_rho=0.9,
                      effects=[(3, 30, 0.9)], missing_trait=0.03).write(prefix)
    return prefix


def _scan(study, out, *flags):
    return main(["scan", "--bfile", study, "--out", str(out), "--device", "cpu", "--quiet", "--epi1", "1e-2", *flags])


def _fam(study):
    return [line.split() for line in open(study + ".fam").read().splitlines()]


@pytest.fixture(scope="module")
def plain(study, tmp_path_factory):
    out = tmp_path_factory.mktemp("plain") / "o"
    assert _scan(study, out) == 0
    return out


@pytest.fixture(scope="module")
def permuted(study, tmp_path_factory):
    out = tmp_path_factory.mktemp("permuted") / "o"
    assert _scan(study, out, "--perm", "20", "--perm-seed", "6") == 0
    return out


def test_perm_adds_emp2_perm_tsv_and_the_threshold_and_leaves_plinks_files_as_they_were(plain, permuted):
    for name in ("pairs.epi.qt", "pairs.epi.qt.summary", "marginal.tsv"):
        assert (plain / name).read_bytes() == (permuted / name).read_bytes()
    assert "perm.tsv" in os.listdir(permuted) and "perm.tsv" not in os.listdir(plain)
    rows, head = read_tsv(permuted / "pairs.tsv")
    plain_rows, plain_head = read_tsv(plain / "pairs.tsv")
    assert head == plain_head + ["EMP2"] and len(rows) == len(plain_rows) >= 2
    assert all({k: r[k] for k in plain_head} == p for r, p in zip(rows, plain_rows))
    perms, perm_head = read_tsv(permuted / "perm.tsv")
    assert perm_head == ["PERM", "STAT", "DF", "P", "CHR1", "SNP1", "BP1", "CHR2", "SNP2", "BP2"]
    assert [int(r["PERM"]) for r in perms] == list(range(1, 21)) and {r["DF"] for r in perms} == {"1"}
    maxima = np.array([float(r["STAT"]) for r in perms])
    for r in perms:  # P as pairs.tsv gives a STAT: the two-sided normal P of T
        assert float(r["P"]) == pytest.approx(exact_normal_p(np.array([float(r["STAT"])]), np.array([True]))[0],
                                              rel=1e-8)
    for r in rows:  # EMP2 recomputed from the two files
        want = (1 + (maxima >= float(r["STAT"])).sum()) / 21
        assert float(r["EMP2"]) == pytest.approx(want, rel=1e-5)
    assert (rows[0]["SNP1"], rows[0]["SNP2"]) == ("snp4", "snp31")  # the planted pair
    assert float(rows[0]["EMP2"]) == pytest.approx(1 / 21)  # beats every permutation
    assert float(rows[-1]["EMP2"]) > 0.5  # a pair at P ~ 0.01 of 630 does not
    run = json.loads((permuted / "run.json").read_text())
    pr = run["permutations"]
    assert pr["n"] == 20 and pr["seed"] == 6 and pr["within"] is None and pr["resumed"] == 0
    t = pr["threshold_0.05"]  # the floor(0.05 * 21) = 1st largest maximum
    assert t == pytest.approx(maxima.max(), rel=1e-9)
    assert pr["threshold_0.05_p"] == pytest.approx(exact_normal_p(np.array([t]), np.array([True]))[0], rel=1e-12)
    assert pr["maxima_quantile_95"] == pytest.approx(np.quantile(maxima, 0.95), rel=1e-6)
    assert "quantitative" in pr["statistic"]
    assert run["parameters"]["perm"] == 20 and run["parameters"]["perm_seed"] == 6
    assert not any(n.startswith("checkpoint") for n in os.listdir(permuted))
    log = (permuted / "gboost.log").read_text()
    assert "20 permutations of the trait" in log and "family-wise 0.05 threshold" in log


def test_the_same_seed_gives_the_same_files_whatever_the_threads(study, permuted, tmp_path):
    assert _scan(study, tmp_path / "t", "--perm", "20", "--perm-seed", "6", "--threads", "1") == 0
    for name in FILES:
        assert (tmp_path / "t" / name).read_bytes() == (permuted / name).read_bytes(), name
    assert _scan(study, tmp_path / "s", "--perm", "20", "--perm-seed", "7") == 0
    assert (tmp_path / "s" / "perm.tsv").read_bytes() != (permuted / "perm.tsv").read_bytes()


def test_within_clusters_of_one_trait_value_each_move_no_value(study, tmp_path):
    """A trait of one value per cluster: a permutation within the clusters moves no value, so every
    permutation's maximum is the real scan's top pair (a value moved across clusters changes it)."""
    fam = _fam(study)
    rng = np.random.default_rng(1)
    cluster = rng.integers(0, 3, len(fam))
    values = np.array([1.5, 4.0, 9.25])
    pheno, within = tmp_path / "y.txt", tmp_path / "within.txt"
    pheno.write_text("".join(f"{f[0]} {f[1]} {values[c]}\n" for f, c in zip(fam, cluster)))
    within.write_text("".join(f"{f[0]} {f[1]} c{c}\n" for f, c in zip(fam, cluster)))
    out = tmp_path / "o"
    assert _scan(study, out, "--pheno", str(pheno), "--perm", "5", "--within", str(within), "--epi1", "1") == 0
    perms, _ = read_tsv(out / "perm.tsv")
    rows, _ = read_tsv(out / "pairs.tsv")
    assert {(r["SNP1"], r["SNP2"]) for r in perms} == {(rows[0]["SNP1"], rows[0]["SNP2"])}
    assert len({r["STAT"] for r in perms}) == 1  # (perm.tsv: 10 digits; pairs.tsv: 6)
    assert float(perms[0]["STAT"]) == pytest.approx(float(rows[0]["STAT"]), rel=1e-5)
    assert float(rows[0]["EMP2"]) == 1.0
    run = json.loads((out / "run.json").read_text())
    assert run["permutations"]["strata"] == 3 and run["permutations"]["within"] == str(within)
    assert _scan(study, tmp_path / "free", "--pheno", str(pheno), "--perm", "5", "--epi1", "1") == 0
    free, _ = read_tsv(tmp_path / "free" / "perm.tsv")
    assert {r["STAT"] for r in free} != {r["STAT"] for r in perms}


def _refused(study, out, capsys, *flags):
    rc = _scan(study, out, *flags)
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "Traceback" not in err[0]
    assert not out.exists() or not [n for n in os.listdir(out) if not n.startswith(".")]
    return err[0]


def test_perm_refusals(study, tmp_path, capsys):
    fam = _fam(study)
    covar = tmp_path / "c.txt"
    covar.write_text("".join(f"{f[0]} {f[1]} {k % 7}\n" for k, f in enumerate(fam)))
    line = _refused(study, tmp_path / "o1", capsys, "--perm", "3", "--covar", str(covar))
    assert line.startswith(f"gboost: error: {covar}: --perm permutes the trait")
    assert "not exchangeable" in line and "--perm and --covar do not go together" in line
    within = tmp_path / "w.txt"
    within.write_text("".join(f"{f[0]} {f[1]} A\n" for f in fam))
    assert "no --perm was given" in _refused(study, tmp_path / "o2", capsys, "--within", str(within))
    assert "no --perm was given" in _refused(study, tmp_path / "o3", capsys, "--perm-seed", "3")
    assert "--part" in _refused(study, tmp_path / "o4", capsys, "--perm", "3", "--part", "1/2")
    # a scanned sample without a cluster (a sample without a trait needs none: it is not scanned)
    scanned = [f for f in fam if f[5] != "-9"]
    within.write_text("".join(f"{f[0]} {f[1]} A\n" for f in scanned[1:]))
    line = _refused(study, tmp_path / "o5", capsys, "--perm", "3", "--within", str(within))
    assert str(within) in line and f"sample {scanned[0][0]} {scanned[0][1]} of the scan has no cluster" in line
    within.write_text("".join(f"{f[0]} {f[1]} A\n" for f in scanned))
    assert _scan(study, tmp_path / "o6", "--perm", "2", "--within", str(within)) == 0


def test_help_says_perm_permutes_either_phenotype():
    scan = next(a for a in build_parser()._subparsers._group_actions[0].choices["scan"]._actions
                if "--perm" in a.option_strings)
    assert "quantitative" in scan.help and "max |T|" in scan.help


def test_an_interrupted_perm_run_resumes_to_the_uninterrupted_runs_bytes(study, permuted, tmp_path, monkeypatch,
                                                                         capsys):
    real = permute.trait_maximum

    def stop_at_eighth(engine, st, trait, k, cancel=None):
        if k == 7:
            raise KeyboardInterrupt
        return real(engine, st, trait, k, cancel)

    out = tmp_path / "o"
    monkeypatch.setattr(permute, "trait_maximum", stop_at_eighth)
    assert _scan(study, out, "--perm", "20", "--perm-seed", "6") == 130
    assert len((out / "checkpoint.perm").read_bytes().splitlines()) == 7
    assert not (out / "pairs.tsv").exists()
    monkeypatch.setattr(permute, "trait_maximum", real)
    capsys.readouterr()
    # another seed is another study of permutations: refused, the checkpoint left as it was
    rc = _scan(study, out, "--perm", "20", "--perm-seed", "5", "--resume")
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "--perm, --perm-seed or the --within file" in err[0]
    assert len((out / "checkpoint.perm").read_bytes().splitlines()) == 7
    assert _scan(study, out, "--perm", "20", "--perm-seed", "6", "--resume") == 0
    for name in FILES:
        assert (out / name).read_bytes() == (permuted / name).read_bytes(), name
    run = json.loads((out / "run.json").read_text())
    assert run["permutations"]["resumed"] == 7
    assert not any(n.startswith("checkpoint") for n in os.listdir(out))


def test_overwrite_without_perm_leaves_no_stale_perm_tsv(study, tmp_path):
    out = tmp_path / "o"
    assert _scan(study, out, "--perm", "2") == 0 and (out / "perm.tsv").exists()
    assert _scan(study, out, "--overwrite") == 0
    assert not (out / "perm.tsv").exists()
    assert "EMP2" not in (out / "pairs.tsv").read_text().splitlines()[0]
