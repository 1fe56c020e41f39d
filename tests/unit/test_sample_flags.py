"""The sample lists (--keep, --remove, --keep-fam, --remove-fam), the phenotype column (--pheno-name,
--mpheno), --covar-number, --parallel, --keep-allele-order and OUT/gboost.log: the readers, the
library's checks in the command line's words, and what the command writes. (plink1.9 as the oracle
of their outputs: tests/parity/test_plink_flags.py.)"""
from __future__ import annotations

import numpy as np
import pytest

import gboost
from gboost.cli import main
from gboost.data.simulate import simulate_study
from gboost.errors import InputError
from gboost.pipeline import validate as V
from gboost.readers.id_lists import listed_families, listed_samples
from gboost.readers.pheno import read_pheno_values

FID = np.array(["f1", "f1", "f2", "f3", "f3"])
IID = np.array(["a", "b", "a", "c", "d"])


def _file(tmp_path, text: str, name: str = "ids.txt") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_a_keep_file_names_samples_by_fid_and_iid(tmp_path):
    path = _file(tmp_path, "#FID IID\nf1 b extra columns\n\nf2\ta\nf9 zz\n")
    assert listed_samples(path, "--keep", FID, IID).tolist() == [False, True, True, False, False]


def test_a_file_of_iids_alone_names_them_in_any_family(tmp_path):
    assert listed_samples(_file(tmp_path, "c\nd\nnobody\n"), "--keep", FID, IID).tolist() == [0, 0, 0, 1, 1]
    assert listed_samples(_file(tmp_path, "#IID\nb\n"), "--remove", FID, IID).tolist() == [0, 1, 0, 0, 0]


def test_an_iid_of_two_families_is_refused_naming_its_line(tmp_path):
    path = _file(tmp_path, "c\na\n")
    with pytest.raises(InputError, match=r"line 2: IID 'a' names samples of 2 families \(f1, f2\)"):
        listed_samples(path, "--keep", FID, IID)


def test_a_line_without_iid_in_a_fid_iid_file_is_refused_as_plink_refuses_it(tmp_path):
    path = _file(tmp_path, "f1 a\nlonely\n")
    with pytest.raises(InputError, match=r"line 2: expected FID IID, found 1 column \(plink1.9: \"Line 2 of --keep file"):
        listed_samples(path, "--keep", FID, IID)


def test_a_family_file_names_families(tmp_path):
    assert listed_families(_file(tmp_path, "f3 x\nf1\n"), "--keep-fam", FID).tolist() == [1, 1, 0, 1, 1]
    assert not listed_families(_file(tmp_path, ""), "--keep-fam", FID).any()


@pytest.fixture(scope="module")
def study_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sample_flags")
    sim = simulate_study(40, 30, 30, seed=4, missing_rate=0.05)
    prefix = str(folder / "s")
    sim.write(prefix)
    fam = [line.split() for line in open(prefix + ".fam", encoding="utf-8")]
    return prefix, [(r[0], r[1]) for r in fam]


def test_the_lists_apply_in_plinks_order_and_are_counted(study_files, tmp_path):
    prefix, ids = study_files
    keep = _file(tmp_path, "".join(f"{f} {i}\n" for f, i in ids[:40]), "keep.txt")
    remove = _file(tmp_path, "".join(f"{f} {i}\n" for f, i in ids[30:50]), "remove.txt")
    messages = []
    study = gboost.load_study(gboost.open_input(bfile=prefix), gboost.QCOptions(keep=keep, remove=remove),
                              log=messages.append)
    assert study.n_samples == 30 and study.qc.samples_id_lists == 30
    assert [m for m in messages if m.startswith("--")][:2] == [f"--keep {keep}: 40 samples remaining",
                                                               f"--remove {remove}: 30 samples remaining"]
    kept = {f"{f} {i}" for f, i in ids[:30]}
    assert {f"{f} {i}" for f, i in zip(study.samples.fid, study.samples.iid)} == kept


def test_mind_counts_only_the_samples_the_lists_left(study_files, tmp_path):
    prefix, ids = study_files
    keep = _file(tmp_path, "".join(f"{f} {i}\n" for f, i in ids[:45]), "keep.txt")
    whole = gboost.load_study(gboost.open_input(bfile=prefix), gboost.QCOptions(mind=0.05))
    part = gboost.load_study(gboost.open_input(bfile=prefix), gboost.QCOptions(mind=0.05, keep=keep))
    dropped = set(zip(*(map(str, x) for x in (whole.samples.fid, whole.samples.iid))))
    dropped_first45 = sum(1 for f, i in ids[:45] if (f, i) not in dropped)
    assert part.qc.samples_mind == dropped_first45 and part.n_samples == 45 - dropped_first45


def test_a_list_that_leaves_nobody_is_refused_in_plinks_words(study_files, tmp_path):
    prefix, _ = study_files
    path = _file(tmp_path, "nobody here\n")
    with pytest.raises(InputError, match=r"no samples remain after --keep-fam: .*\(plink1.9: \"No people remaining after "
                                         r"--keep-fam.\"\)"):
        gboost.load_study(gboost.open_input(bfile=prefix), gboost.QCOptions(keep_fam=path))


@pytest.mark.parametrize("kw, name", [({"keep": 5}, "keep"), ({"remove_fam": ["a"]}, "remove_fam"),
                                      ({"keep_allele_order": "yes"}, "keep_allele_order")])
def test_qc_options_refuse_wrong_types_naming_the_argument(kw, name):
    with pytest.raises(TypeError, match=rf"^QCOptions: {name} must be"):
        gboost.QCOptions(**kw)


def test_the_phenotype_column_by_name_or_number(tmp_path):
    path = _file(tmp_path, "FID IID qt cc\nf1 a 1.5 2\nf1 b 2.5 1\nf2 a 0.5 -9\n")
    status, trait = read_pheno_values(path, FID[:3], IID[:3], "cc")
    assert status.tolist() == [2, 1, 0] and trait is None
    status, trait = read_pheno_values(path, FID[:3], IID[:3], 1)
    assert trait.tolist() == [1.5, 2.5, 0.5]
    assert read_pheno_values(path, FID[:3], IID[:3], 2)[0].tolist() == [2, 1, 0]
    with pytest.raises(InputError, match=r"--pheno-name nope: no such column .*the header names qt, cc"):
        read_pheno_values(path, FID[:3], IID[:3], "nope")
    with pytest.raises(InputError, match=r"line 2: phenotype column 3 \(token 5\) is not there"):
        read_pheno_values(path, FID[:3], IID[:3], 3)
    bare = _file(tmp_path, "f1 a 1 2\n", "bare.txt")
    with pytest.raises(InputError, match=r"--pheno-name cc: the file has no header line"):
        read_pheno_values(bare, FID[:1], IID[:1], "cc")


@pytest.mark.parametrize("kw, message", [
    ({"pheno_name": "cc"}, "--pheno-name cc picks a column of the --pheno file but no --pheno file was given"),
    ({"mpheno": 2}, "--mpheno 2 picks a column of the --pheno file but no --pheno file was given"),
    ({"pheno": "p.txt", "mpheno": 0}, "invalid --mpheno parameter 0 (must be at least 1)"),
    ({"pheno": "p.txt", "pheno_name": "cc", "mpheno": 2}, "--pheno-name cc and --mpheno 2 both pick"),
])
def test_open_input_and_the_command_line_refuse_a_column_in_the_same_words(study_files, tmp_path, capsys, kw, message):
    prefix, _ = study_files
    with pytest.raises(InputError) as exc:
        gboost.open_input(bfile=prefix, **kw)
    assert str(exc.value).startswith(message)
    flags = {"pheno": "--pheno", "pheno_name": "--pheno-name", "mpheno": "--mpheno"}
    argv = [x for k, v in kw.items() for x in (flags[k], str(v))]
    if kw.get("mpheno") == 0:  # argparse's check, the same words
        with pytest.raises(SystemExit):
            main(["scan", "--bfile", prefix, "--out", str(tmp_path / "o"), "--quiet", *argv])
        assert capsys.readouterr().err.strip().endswith("invalid --mpheno parameter '0' (must be at least 1)")
        return
    assert main(["scan", "--bfile", prefix, "--out", str(tmp_path / "o"), "--quiet", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("gboost: error: " + message)
    assert not (tmp_path / "o").exists()  # refused before the output folder is touched


@pytest.mark.parametrize("text, want", [("1-3,5", [1, 2, 3, 5]), ("3,1,1", [1, 3]), ("2", [2]), ("2-2", [2])])
def test_plinks_number_lists(text, want):
    assert V.number_list("--covar-number", text) == want


@pytest.mark.parametrize("text", ["0", "3-1", "a", "", "1,,x", "-2"])
def test_bad_number_lists_are_refused_naming_the_flag(text):
    with pytest.raises(ValueError, match=r"^invalid --covar-number parameter"):
        V.number_list("--covar-number", text)


def test_covariates_by_number(study_files, tmp_path):
    from gboost.stats.covariates import read_covariates

    prefix, ids = study_files
    path = _file(tmp_path, "FID IID age sex pc1\n" + "".join(f"{f} {i} {k} {k % 2} {k / 10}\n"
                                                             for k, (f, i) in enumerate(ids)), "cov.txt")
    study = gboost.load_study(gboost.open_input(bfile=prefix))
    m, names = read_covariates(path, study, numbers=[3, 1])
    assert names == ["age", "pc1"] and m.shape == (study.n_samples, 2)
    with pytest.raises(InputError, match=r"--covar-number 4: the file has 3 covariates \(age, sex, pc1\)"):
        read_covariates(path, study, numbers=[1, 4])


@pytest.mark.parametrize("flags, message", [
    (["--parallel", "3", "2"], "gboost: error: --parallel 3 2: need 1 <= K <= N"),
    (["--parallel", "1", "2", "--part", "2/2"], "gboost: error: --parallel 1 2 and --part 2/2 name different shares"),
    (["--covar-number", "1"], "gboost: error: --covar-number 1 picks covariate columns but no --covar file"),
    (["--covar", "c.txt", "--covar-name", "age", "--covar-number", "1"], "gboost: error: --covar-name and "
                                                                            "--covar-number both pick"),
])
def test_the_command_line_refuses_flags_that_contradict(study_files, tmp_path, capsys, flags, message):
    prefix, _ = study_files
    assert main(["scan", "--bfile", prefix, "--out", str(tmp_path / "o"), "--quiet", *flags]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(message), err


@pytest.mark.parametrize("quiet", [False, True])
def test_the_scan_writes_what_it_printed_to_gboost_log(study_files, tmp_path, capsys, quiet):
    prefix, _ = study_files
    out = tmp_path / "o"
    argv = ["scan", "--bfile", prefix, "--out", str(out), "--device", "cpu", "--epi1", "0.01", "--maf", "0.05"]
    assert main(argv + (["--quiet"] if quiet else [])) == 0
    printed = [line for line in capsys.readouterr().err.splitlines() if line and "\r" not in line]
    log = (out / "gboost.log").read_text().splitlines()
    assert log[0] == "gboost " + " ".join(argv + (["--quiet"] if quiet else []))
    assert log[1].startswith(f"gboost {gboost.__version__}, started ")
    assert any(line.startswith("--maf 0.05: ") for line in log) and log[-1].startswith(f"outputs in {out}/")
    if quiet:
        assert printed == []
    else:
        assert log[2:] == printed  # every console line, in order; the progress bar left out
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == [
        "gboost.log", "marginal.tsv", "pairs.epi.cc", "pairs.epi.cc.summary", "pairs.tsv", "run.json"]
