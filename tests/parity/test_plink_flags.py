"""The sample and phenotype flags of every PLINK run, against plink1.9 itself.

``--keep``, ``--remove``, ``--keep-fam``, ``--remove-fam``, ``--pheno-name``, ``--mpheno`` and
``--keep-allele-order``, alone and beside a QC flag (``--maf``, ``--geno``, ``--mind``), are given
to ``gboost scan`` and to plink1.9 alike on simulated LD-rich studies with missing calls and A1
the major allele at every other SNP: the case-control files (``.epi.cc``, its summary) and the
quantitative trait's (``.epi.qt``, its summary: BETA_INT's sign follows A1) must equal PLINK's byte
for byte. A bad ID file fails both programs; gboost says so in one line naming the file, exit 2.
``--parallel K N`` writes what ``--part K/N`` writes.
"""
from __future__ import annotations

import subprocess

import numpy as np
import pytest

from gboost.cli import main as gboost_main
from gboost.data.simulate import simulate_qt_study, write_bfile
from gboost.data.simulate import PlantedPair, simulate_study
from tests.helpers import LD_ARGS, NO_PLINK, PLINK, assert_parity, flip_every_other_snp, read, run_both

pytestmark = [pytest.mark.plink, pytest.mark.slow, pytest.mark.skipif(PLINK is None, reason=NO_PLINK)]


def _families(prefix: str) -> list[tuple[str, str]]:
    """Rewrite the .fam so that samples come in families of three (FID shared); returns the IDs."""
    fam = prefix + ".fam"
    rows = [line.split() for line in open(fam, encoding="utf-8")]
    for k, r in enumerate(rows):
        r[0] = f"fam{k // 3}"
    with open(fam, "w", encoding="utf-8") as f:
        f.writelines(" ".join(r) + "\n" for r in rows)
    return [(r[0], r[1]) for r in rows]


def _id_files(folder, ids: list[tuple[str, str]]) -> dict[str, str]:
    """Sample and family lists drawn at random from ``ids``: --keep (FID IID, with an unknown ID and
    a blank line), --keep of IIDs alone, --remove, --keep-fam, --remove-fam."""
    rng = np.random.default_rng(11)
    pick = lambda frac: [ids[k] for k in np.flatnonzero(rng.random(len(ids)) < frac)]  # noqa: E731
    families = sorted({f for f, _ in ids})
    fams = lambda frac: [families[k] for k in np.flatnonzero(rng.random(len(families)) < frac)]  # noqa: E731
    files = {
        "keep": "".join(f"{f} {i}\n" for f, i in pick(0.7)) + "\nnobody here\n",
        "remove": "".join(f"{f}\t{i} extra columns\n" for f, i in pick(0.2)),
        "keep_fam": "".join(f"{f}\n" for f in fams(0.75)),
        "remove_fam": "".join(f"{f} ignored\n" for f in fams(0.15)),
    }
    out = {}
    for name, text in files.items():
        path = folder / f"{name}.txt"
        path.write_text(text)
        out[name] = str(path)
    return out


@pytest.fixture(scope="module")
def cc_study(tmp_path_factory):
    """An LD-rich case-control study (1 % missing calls, X, unknown sex) in families of three, A1 the
    major allele at every other SNP, with a --pheno file of three columns (a QT, a case-control column
    of its own, the .fam's status) and the ID lists."""
    folder = tmp_path_factory.mktemp("flags_cc")
    sim = simulate_study(240, 260, 260, seed=8, **{**LD_ARGS, "planted": [PlantedPair(9, 200, "xor", 4.0)]})
    prefix = str(folder / "cc")
    write_bfile(prefix, flip_every_other_snp(sim.genotypes), sim.variants, sim.samples)
    ids = _families(prefix)
    files = _id_files(folder, ids)
    rng = np.random.default_rng(3)
    status = [line.split()[5] for line in open(prefix + ".fam", encoding="utf-8")]
    with open(folder / "pheno.txt", "w", encoding="utf-8") as f:
        f.write("FID IID height affected status\n")
        for (fid, iid), st in zip(ids, status):
            f.write(f"{fid} {iid} {rng.normal(170, 10):.3f} {rng.choice(['1', '2', '-9'], p=[0.48, 0.48, 0.04])} {st}\n")
    files["pheno"] = str(folder / "pheno.txt")
    return prefix, files


CC_CASES = [
    ("--keep", "keep"), ("--remove", "remove"), ("--keep-fam", "keep_fam"), ("--remove-fam", "remove_fam"),
    ("--keep", "keep", "--maf", "0.05"), ("--remove", "remove", "--geno", "0.02"),
    ("--keep-fam", "keep_fam", "--remove", "remove", "--mind", "0.02", "--maf", "0.03"),
    ("--keep", "keep", "--remove-fam", "remove_fam", "--keep-fam", "keep_fam", "--remove", "remove"),
    ("--keep-allele-order",), ("--keep-allele-order", "--maf", "0.05", "--keep", "keep"),
    ("--pheno", "pheno", "--pheno-name", "affected"), ("--pheno", "pheno", "--mpheno", "2", "--geno", "0.02"),
    ("--pheno", "pheno", "--pheno-name", "status", "--keep", "keep"),
]


def _args(case, files) -> list[str]:
    return [files.get(a, a) for a in case]


@pytest.mark.parametrize("case", CC_CASES, ids=lambda c: "_".join(a.strip("-") for a in c))
def test_case_control_files_equal_plinks(cc_study, tmp_path, case):
    prefix, files = cc_study
    out, plink = run_both(prefix, tmp_path, 0.01, _args(case, files))
    assert_parity(out, plink, 0.01, min_rows=20)


@pytest.fixture(scope="module")
def qt_study(tmp_path_factory):
    """A QT study (1 % missing calls, LD, X, a missing trait here and there, unknown sex) in families
    of three, A1 the major allele at half the SNPs, with a --pheno file of two traits and the ID lists."""
    folder = tmp_path_factory.mktemp("flags_qt")
    st = simulate_qt_study(90, 450, seed=5, missing_rate=0.01, effects=[(2, 7, 0.35), (30, 60, 0.3)], ld_block=8,
                           ld_rho=0.9, chromosomes=["1", "2", "X"], missing_trait=0.03, unknown_sex=0.02)
    g, v = st.genotypes.copy(), st.variants
    flip = np.random.default_rng(5).random(len(g)) < 0.5
    g[flip] = np.where(g[flip] >= 0, 2 - g[flip], -1)
    v.a1, v.a2 = np.where(flip, v.a2, v.a1), np.where(flip, v.a1, v.a2)
    prefix = str(folder / "qt")
    write_bfile(prefix, g, v, st.samples)
    ids = _families(prefix)
    files = _id_files(folder, ids)
    trait = [line.split()[5] for line in open(prefix + ".fam", encoding="utf-8")]
    rng = np.random.default_rng(9)
    with open(folder / "pheno.txt", "w", encoding="utf-8") as f:
        f.write("FID IID bmi y\n")
        for (fid, iid), y in zip(ids, trait):
            f.write(f"{fid} {iid} {rng.normal(25, 4):.4f} {y}\n")
    files["pheno"] = str(folder / "pheno.txt")
    return prefix, files


QT_CASES = [
    ("--keep", "keep"), ("--remove-fam", "remove_fam"), ("--keep", "keep", "--maf", "0.05"),
    ("--remove", "remove", "--keep-fam", "keep_fam", "--geno", "0.02"),
    ("--keep-allele-order",), ("--keep-allele-order", "--maf", "0.05", "--remove", "remove"),
    ("--pheno", "pheno", "--pheno-name", "y"), ("--pheno", "pheno", "--mpheno", "1", "--keep", "keep"),
]


@pytest.mark.parametrize("case", QT_CASES, ids=lambda c: "_".join(a.strip("-") for a in c))
def test_quantitative_trait_files_equal_plinks(qt_study, tmp_path, case):
    prefix, files = qt_study
    args = ["--epi1", "0.05", *_args(case, files)]
    out = tmp_path / "gboost"
    assert gboost_main(["scan", "--bfile", prefix, "--out", str(out), "--quiet", "--device", "cpu", *args]) == 0
    theirs = tmp_path / "plink"
    subprocess.run([PLINK, "--bfile", prefix, "--epistasis", "--out", str(theirs), "--threads", "2", "--silent", *args],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for ours, suffix in (("pairs.epi.qt", ".epi.qt"), ("pairs.epi.qt.summary", ".epi.qt.summary")):
        assert (out / ours).read_bytes() == open(str(theirs) + suffix, "rb").read(), f"{ours} differs from PLINK's"
    assert len((out / "pairs.epi.qt").read_text().splitlines()) > 20


def test_keep_allele_order_changes_what_it_should(qt_study, cc_study, tmp_path):
    """The flag matters (so the parity above can fail): with it, BETA_INT changes sign on some
    pairs and marginal.tsv's A1 is the .bim's; a case-control scan's pairs stay the same pairs."""
    prefix, _ = qt_study
    outs = {}
    for tag, extra in (("plain", []), ("kao", ["--keep-allele-order"])):
        outs[tag] = tmp_path / tag
        assert gboost_main(["scan", "--bfile", prefix, "--out", str(outs[tag]), "--quiet", "--device", "cpu",
                            "--epi1", "0.05", *extra]) == 0
    rows = {t: {(r[1], r[3]): r for r in (line.split() for line in read(outs[t] / "pairs.epi.qt").splitlines()[1:])}
            for t in outs}
    both = sorted(set(rows["plain"]) & set(rows["kao"]))
    assert len(both) > 20
    # the same test of the same pairs (STAT does not depend on which allele is counted) ...
    assert all(rows["plain"][k][5] == rows["kao"][k][5] for k in both)
    # ... whose interaction coefficient changes sign where one of the two SNPs changed its A1
    flipped = [rows["plain"][k][4].startswith("-") != rows["kao"][k][4].startswith("-") for k in both]
    assert any(flipped) and not all(flipped)
    assert all(rows["plain"][k][4].lstrip("-") == rows["kao"][k][4].lstrip("-") for k in both)
    bim_a1 = [line.split()[4] for line in open(prefix + ".bim", encoding="utf-8")]
    bim_snp = [line.split()[1] for line in open(prefix + ".bim", encoding="utf-8")]
    a1 = dict(zip(bim_snp, bim_a1))
    marg = {t: [line.split("\t") for line in read(outs[t] / "marginal.tsv").splitlines()[1:]] for t in outs}
    assert all(r[3] == a1[r[1]] for r in marg["kao"])
    assert any(r[3] != a1[r[1]] for r in marg["plain"])


def test_parallel_writes_what_part_writes(cc_study, tmp_path):
    prefix, _ = cc_study
    got = {}
    for tag, flag in (("part", ["--part", "2/3"]), ("parallel", ["--parallel", "2", "3"])):
        out = tmp_path / tag
        assert gboost_main(["scan", "--bfile", prefix, "--out", str(out), "--quiet", "--device", "cpu", "--epi1", "0.01",
                            *flag]) == 0
        with np.load(out / "part.npz", allow_pickle=False) as z:
            got[tag] = {k: z[k] for k in z.files}
        log = (out / "gboost.log").read_text().splitlines()
        assert " ".join(flag) in log[0] and log[-1].startswith("part 2/3: ")
    assert got["part"].keys() == got["parallel"].keys()
    for k in got["part"]:
        if k == "meta":  # (its run's timings differ; the share and settings must not)
            continue
        np.testing.assert_array_equal(got["part"][k], got["parallel"][k], err_msg=k)


BAD_FILES = [
    ("missing", None, "cannot read the --keep file"),
    ("empty", "", "no samples remain after --keep"),
    ("unknown", "famX nobody\nfamY none\n", "no samples remain after --keep"),
    ("one_token_line", "fam0 {iid}\nlonely\n", "line 2: expected FID IID, found 1 column"),
]


@pytest.mark.parametrize("name,text,words", BAD_FILES, ids=[b[0] for b in BAD_FILES])
def test_bad_keep_file_fails_as_plink_fails(cc_study, tmp_path, capsys, name, text, words):
    prefix, _ = cc_study
    first_iid = open(prefix + ".fam", encoding="utf-8").readline().split()[1]
    path = tmp_path / f"{name}.txt"
    if text is not None:
        path.write_text(text.format(iid=first_iid))
    out = tmp_path / "out"
    rc = gboost_main(["scan", "--bfile", prefix, "--out", str(out), "--quiet", "--device", "cpu", "--keep", str(path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1, err
    assert str(path) in err[0] and words in err[0] and "Traceback" not in err[0], err
    assert not out.exists() or not any(p.name.endswith((".tsv", ".epi.cc", ".log")) for p in out.iterdir())
    plink = subprocess.run([PLINK, "--bfile", prefix, "--fast-epistasis", "boost", "--keep", str(path), "--out",
                            str(tmp_path / "plink"), "--silent"], capture_output=True, text=True)
    assert plink.returncode != 0  # PLINK refuses it too


def test_remove_of_everyone_is_refused(cc_study, tmp_path, capsys):
    prefix, _ = cc_study
    path = tmp_path / "all.txt"
    path.write_text(open(prefix + ".fam", encoding="utf-8").read())  # a .fam is a sample list
    rc = gboost_main(["scan", "--bfile", prefix, "--out", str(tmp_path / "o"), "--quiet", "--remove", str(path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "no samples remain after --remove" in err[0], err
    plink = subprocess.run([PLINK, "--bfile", prefix, "--fast-epistasis", "boost", "--remove", str(path), "--out",
                            str(tmp_path / "plink")], capture_output=True, text=True)
    assert plink.returncode != 0 and "No people remaining after --remove" in plink.stdout + plink.stderr


@pytest.mark.parametrize("flags,words", [
    (["--pheno-name", "nope"], "--pheno-name nope: no such column"),
    (["--mpheno", "4"], "phenotype column 4 (token 6) is not there"),
])
def test_bad_phenotype_column_fails_as_plink_fails(cc_study, tmp_path, capsys, flags, words):
    prefix, files = cc_study
    rc = gboost_main(["scan", "--bfile", prefix, "--out", str(tmp_path / "o"), "--quiet", "--pheno", files["pheno"],
                      *flags])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and words in err[0] and files["pheno"] in err[0], err
    plink = subprocess.run([PLINK, "--bfile", prefix, "--fast-epistasis", "boost", "--pheno", files["pheno"], *flags,
                            "--out", str(tmp_path / "plink")], capture_output=True, text=True)
    assert plink.returncode != 0
