"""Parity with PLINK 1.9 ``--epistasis`` on quantitative traits, through the real CLI.

``pairs.epi.qt`` and ``pairs.epi.qt.summary`` must equal PLINK's files byte for byte on simulated
QT studies with 1 % missing calls, LD, alleles in both orders (PLINK's A1 is the minor allele:
BETA_INT's sign), samples with a missing trait or unknown sex, X-chromosome and monomorphic SNPs,
and pairs PLINK fails (a duplicated SNP, an all-het SNP), at several --epi1/--epi2.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess

import numpy as np
import pytest

from gboost.cli import main as gboost_main
from gboost.data.simulate import simulate_qt_study, write_bfile

PLINK = shutil.which("plink1.9") or shutil.which("plink")

pytestmark = [
    pytest.mark.plink,
    pytest.mark.skipif(PLINK is None, reason="plink1.9 not on PATH (apt-get install plink1.9; .ci/run installs it)"),
]


def qt_fileset(path, *, n_snps=120, n=600, seed=7, chromosomes=(1, 2, "X")):
    """A QT study with every complication PLINK has a rule for; returns the prefix."""
    st = simulate_qt_study(n_snps, n, seed=seed, missing_rate=0.01, effects=[(2, 7, 0.35), (40, 90, 0.3)],
                           ld_block=8, ld_rho=0.9, chromosomes=[str(c) for c in chromosomes], missing_trait=0.03,
                           unknown_sex=0.02)
    g, v = st.genotypes.copy(), st.variants
    flip = np.random.default_rng(seed).random(len(g)) < 0.5  # the .bim's A1 is the major allele here
    g[flip] = np.where(g[flip] >= 0, 2 - g[flip], -1)
    v.a1, v.a2 = np.where(flip, v.a2, v.a1), np.where(flip, v.a1, v.a2)
    g[11] = g[10]  # a duplicated SNP: PLINK fails the pair (r > 0.999)
    g[20] = np.where(g[20] >= 0, 1, -1)  # all het (kept by --epistasis, every pair fails)
    g[21] = np.where(g[21] >= 0, 0, -1)  # one homozygote only: skipped as monomorphic
    prefix = str(path / "qt")
    write_bfile(prefix, g, v, st.samples)
    return prefix


def run_both(prefix, tmp_path, args=()):
    tag = "".join(c if c.isalnum() else "_" for c in "_".join(os.path.basename(a) for a in args)) or "default"
    out = tmp_path / f"gboost_{tag}"
    assert gboost_main(["scan", "--bfile", prefix, "--out", str(out), "--quiet", *args]) == 0
    theirs = tmp_path / f"plink_{tag}"
    subprocess.run([PLINK, "--bfile", prefix, "--epistasis", "--out", str(theirs), "--threads", "2", "--silent",
                    *args], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return out, theirs


def assert_same_files(out, theirs):
    for ours, plink in (("pairs.epi.qt", ".epi.qt"), ("pairs.epi.qt.summary", ".epi.qt.summary")):
        a = (out / ours).read_bytes()
        b = open(str(theirs) + plink, "rb").read()
        assert a == b, f"{ours} differs from PLINK's {plink}"


@pytest.fixture(scope="module")
def fileset(tmp_path_factory):
    return qt_fileset(tmp_path_factory.mktemp("qt"))


@pytest.mark.parametrize("args", [(), ("--epi1", "1"), ("--epi1", "0.01"), ("--epi1", "0.3", "--epi2", "0.2"),
                                  ("--epi1", "0.05", "--epi2", "0.05"),
                                  # QC on a quantitative trait: --hwe tests every founder (no controls)
                                  ("--epi1", "0.05", "--hwe", "0.01", "--maf", "0.05", "--geno", "0.012"),
                                  ("--epi1", "0.05", "--mind", "0.02"), ("--epi1", "0.05", "--allow-no-sex")])
def test_epi_qt_files_are_plinks_byte_for_byte(fileset, tmp_path, args):
    out, theirs = run_both(fileset, tmp_path, args)
    assert_same_files(out, theirs)


def test_every_pair_row_and_fail_rows_at_epi1_1(fileset, tmp_path):
    out, theirs = run_both(fileset, tmp_path, ("--epi1", "1"))
    rows = (out / "pairs.epi.qt").read_text().splitlines()[1:]
    nan_rows = [r for r in rows if r.split()[-1] == "nan"]
    assert nan_rows, "the duplicated and all-het SNPs give failed pairs, written as NaN rows"
    log = open(str(theirs) + ".log").read()
    run = json.loads((out / "run.json").read_text())
    valid = int(log.split(" valid test")[0].split()[-1])
    assert run["counts"]["valid_tests"] == valid
    assert len(rows) == run["counts"]["pairs"]


def test_pairs_tsv_holds_plinks_rows_with_p_at_most_epi1(fileset, tmp_path):
    out, theirs = run_both(fileset, tmp_path, ("--epi1", "0.001"))
    plink_rows = [r.split() for r in open(str(theirs) + ".epi.qt").read().splitlines()[1:]]
    lines = (out / "pairs.tsv").read_text().splitlines()
    assert lines[0].split("\t") == ["CHR1", "SNP1", "BP1", "CHR2", "SNP2", "BP2", "BETA_INT", "SE", "STAT", "P", "N"]
    ours = {(f[1], f[4]): f for f in (line.split("\t") for line in lines[1:])}
    # PLINK writes STAT >= the epi1 threshold; pairs.tsv keeps those whose exact P <= epi1 (the same set
    # except where PLINK's normal-tail approximation sits on the threshold)
    assert set(ours) == {(r[1], r[3]) for r in plink_rows}
    for r in plink_rows:
        f = ours[(r[1], r[3])]
        assert float(f[8]) == pytest.approx(float(r[5]), rel=1e-5)
        assert float(f[6]) == pytest.approx(float(r[4]), rel=1e-5)
    stats = [float(f[8]) for f in ours.values()]
    assert [float(x.split("\t")[8]) for x in lines[1:]] == sorted(stats, reverse=True)


def test_pheno_file_with_a_quantitative_trait_matches_plink(fileset, tmp_path):
    rng = np.random.default_rng(5)
    fam = [line.split() for line in open(fileset + ".fam")]
    values = [f"{v:.4f}" if rng.random() > 0.05 else "-9" for v in rng.normal(3, 2, len(fam))]
    values[3] = "NA"  # non-numeric: missing
    values[4] = "0"  # a value for a quantitative trait
    ph = tmp_path / "trait.txt"
    ph.write_text("FID IID trait\n" + "".join(f"{f[0]} {f[1]} {v}\n" for f, v in zip(fam, values)))
    out, theirs = run_both(fileset, tmp_path, ("--pheno", str(ph), "--epi1", "0.05"))
    assert_same_files(out, theirs)


def test_case_control_fileset_still_runs_boost(tmp_path):
    from gboost.data.simulate import simulate_study

    sim = simulate_study(20, 60, 60, seed=2)
    sim.write(str(tmp_path / "cc"))
    out = tmp_path / "o"
    assert gboost_main(["scan", "--bfile", str(tmp_path / "cc"), "--out", str(out), "--quiet", "--device", "cpu"]) == 0
    assert (out / "pairs.epi.cc").exists() and not (out / "pairs.epi.qt").exists()


def test_qt_files_of_the_simulator_are_read_by_plink_as_quantitative(fileset, tmp_path):
    subprocess.run([PLINK, "--bfile", fileset, "--epistasis", "--out", str(tmp_path / "p"), "--silent"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert "Phenotype data is quantitative." in open(str(tmp_path / "p.log")).read()
    assert os.path.exists(str(tmp_path / "p.epi.qt"))


def test_ped_map_input_with_a_quantitative_trait_matches_plink(tmp_path):
    st = simulate_qt_study(25, 150, seed=31, missing_rate=0.01, effects=[(1, 2, 0.5)])
    prefix = str(tmp_path / "t")
    st.write(prefix)
    subprocess.run([PLINK, "--bfile", prefix, "--recode", "--out", prefix, "--silent"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    out = tmp_path / "g"
    assert gboost_main(["scan", "--file", prefix, "--out", str(out), "--quiet", "--epi1", "0.2"]) == 0
    subprocess.run([PLINK, "--file", prefix, "--epistasis", "--epi1", "0.2", "--out", str(tmp_path / "p"), "--silent"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert_same_files(out, tmp_path / "p")


@pytest.mark.parametrize("kind", ["large_mean", "integer", "rare"])
def test_numerically_hard_traits_match_plink(tmp_path, kind):
    """A trait of mean 1e4 and SD 0.01 (the expanded RSS cancels 12 digits: byte parity needs PLINK's
    order of operations), an integer trait (ties), and rare variants (most pairs fail PLINK's checks:
    NaN rows)."""
    st = simulate_qt_study(60, 600, seed=5, missing_rate=0.02, effects=[(1, 2, 0.5)], ld_block=6, ld_rho=0.97,
                           maf_range=(0.002, 0.02) if kind == "rare" else (0.01, 0.5), chromosomes=2)
    y = st.samples.trait
    if kind == "large_mean":
        y = 1e4 + (y - 10) * 0.01
    elif kind == "integer":
        y = np.round(y)
    st.samples.trait = np.array([np.nan if np.isnan(v) else float(f"{v:.6f}") for v in y])
    prefix = str(tmp_path / kind)
    write_bfile(prefix, st.genotypes, st.variants, st.samples)
    out, theirs = run_both(prefix, tmp_path, ("--epi1", "1"))
    assert_same_files(out, theirs)
    if kind == "rare":
        assert (out / "pairs.epi.qt").read_text().count(" nan \n") > 100
