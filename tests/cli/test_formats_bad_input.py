"""bad .pgen/.pvar/.psam, VCF/BCF and BGEN/.sample files, and a missing optional
package, each give exit code 2 and one line naming the file and the problem; no traceback, no
output folder (the style of tests/cli/test_bad_input.py)."""
from __future__ import annotations

import gzip
import shutil
import sys

import pytest

from tests.helpers import make_formats_study, needs_plink2
from gboost.cli import main

pytestmark = needs_plink2


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    return make_formats_study(str(tmp_path_factory.mktemp("badformats")))


def one_line_error(tmp_path, capsys, args, names, words):
    out = tmp_path / "out"
    rc = main(["scan", *args, "--out", str(out), "--device", "cpu", "--quiet", "--calibration-pairs", "0"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2, err
    assert len(err) == 1 and err[0].startswith("gboost: error:") and "Traceback" not in err[0], err
    assert names in err[0], err[0]
    assert words.lower() in err[0].lower(), err[0]
    assert not out.exists()


def edit_lines(src, dst, fn):
    lines = open(src).read().splitlines(True)
    with open(dst, "w") as f:
        f.writelines(fn(lines))


def first_data_line(lines, marker="#"):
    return next(k for k, line in enumerate(lines) if not line.startswith(marker))


def replace_field(lines, col, value, which=None, sep="\t"):
    k = first_data_line(lines) if which is None else which
    f = lines[k].rstrip("\n").split(sep)
    f[col] = value
    return lines[:k] + [sep.join(f) + "\n"] + lines[k + 1:]


# ---------------------------------------------------------------------------------------------
# .pgen/.pvar/.psam

def _pfile(study, tmp_path, damage):
    prefix = str(tmp_path / "p")
    for ext in (".pgen", ".pvar", ".psam"):
        shutil.copy(study + ext, prefix + ext)
    damage(prefix)
    return prefix


def _cut(path, keep):
    data = open(path, "rb").read()
    open(path, "wb").write(data[:keep] if keep >= 0 else data[:keep])


PFILE_CASES = {
    "truncated pgen": (lambda p: _cut(p + ".pgen", -200), "p.pgen", "pgen"),
    "pgen header only": (lambda p: _cut(p + ".pgen", 40), "p.pgen", "corrupted"),
    "not a pgen": (lambda p: open(p + ".pgen", "wb").write(b"hello world, not a pgen"), "p.pgen", "not a PLINK 2 .pgen"),
    "psam one sample short": (lambda p: edit_lines(p + ".psam", p + ".psam", lambda r: r[:-1]), "p.pgen", "belong together"),
    "pvar one variant short": (lambda p: edit_lines(p + ".pvar", p + ".pvar", lambda r: r[:-1]), "p.pgen", "belong together"),
    "multi-allelic variant": (lambda p: edit_lines(p + ".pvar", p + ".pvar", lambda r: replace_field(r, 4, "A,C")), "p.pvar",
                              "2 ALT alleles"),
    "pvar header without REF": (lambda p: edit_lines(p + ".pvar", p + ".pvar", lambda r: [x.replace("\tREF\t", "\tXREF\t")
                                                                                         for x in r]), "p.pvar", "REF"),
    "pvar non-numeric position": (lambda p: edit_lines(p + ".pvar", p + ".pvar", lambda r: replace_field(r, 1, "12x")),
                                  "p.pvar", "not an integer"),
    # a trait value makes the column quantitative (as in a .fam: a QT scan, tests/parity/test_formats.py); one that is
    # not finite is refused
    "non-finite phenotype": (lambda p: edit_lines(p + ".psam", p + ".psam", lambda r: replace_field(r, 3, "inf")),
                             "p.psam", "not a finite number"),
    "psam wrong column count": (lambda p: edit_lines(p + ".psam", p + ".psam", lambda r: replace_field(r, 3, "2\textra")),
                                "p.psam", "expected 4 columns"),
    "missing psam": (lambda p: __import__("os").remove(p + ".psam"), "p.psam", "No such file"),
}


@pytest.mark.parametrize("name", list(PFILE_CASES))
def test_bad_pfile(study, tmp_path, capsys, name):
    pytest.importorskip("pgenlib", reason="pgenlib not installed (pip install 'gboost[formats]')")
    damage, names, words = PFILE_CASES[name]
    prefix = _pfile(study, tmp_path, damage)
    one_line_error(tmp_path, capsys, ["--pfile", prefix], names, words)


# ---------------------------------------------------------------------------------------------
# VCF/BCF

def _vcf(study, tmp_path, fn, name="v.vcf"):
    path = str(tmp_path / name)
    edit_lines(study + ".vcf", path, fn)
    return path


def _half_call(lines):
    k = first_data_line(lines)
    f = lines[k].rstrip("\n").split("\t")
    f[9] = "./1"
    return lines[:k] + ["\t".join(f) + "\n"] + lines[k + 1:]


def _no_gt(lines):
    out = [x for x in lines if not x.startswith("##FORMAT=<ID=GT")]
    return [x.replace("\tGT\t", "\tDS\t") if not x.startswith("#") else x for x in out]


VCF_CASES = {
    "not a VCF": (lambda s, t: shutil.copy(s + ".bim", t / "v.vcf") and str(t / "v.vcf"), "v.vcf", "VCF"),
    "truncated vcf.gz": (lambda s, t: open(t / "v.vcf.gz", "wb").write(open(s + "_bgz.vcf.gz", "rb").read()[:2500])
                         and str(t / "v.vcf.gz"), "v.vcf.gz", "VCF"),
    "truncated gzip record": (lambda s, t: open(t / "v.vcf.gz", "wb").write(gzip.compress(open(s + ".vcf", "rb").read()[:-900]))
                              and str(t / "v.vcf.gz"), "v.vcf.gz", "VCF"),
    "multi-allelic record": (lambda s, t: _vcf(s, t, lambda r: replace_field(r, 4, "A,C")), "v.vcf", "2 ALT alleles"),
    "half call": (lambda s, t: _vcf(s, t, _half_call), "v.vcf", "half-missing"),
    "no GT field": (lambda s, t: _vcf(s, t, _no_gt), "v.vcf", "GT"),
    "no samples": (lambda s, t: _vcf(s, t, lambda r: ["\t".join(x.split("\t")[:8]).rstrip("\n") + "\n" if not x.startswith("##")
                                                     else x for x in r if not x.startswith("##FORMAT")]), "v.vcf", "no samples"),
}


@pytest.mark.parametrize("name", list(VCF_CASES))
def test_bad_vcf(study, tmp_path, capsys, name):
    pytest.importorskip("cyvcf2", reason="cyvcf2 not installed (pip install 'gboost[formats]')")
    make, names, words = VCF_CASES[name]
    path = make(study, tmp_path)
    one_line_error(tmp_path, capsys, ["--vcf", path, "--pheno", study + "_vcf.pheno"], names, words)


def test_vcf_without_pheno_says_how_samples_are_named(study, tmp_path, capsys):
    pytest.importorskip("cyvcf2", reason="cyvcf2 not installed (pip install 'gboost[formats]')")
    one_line_error(tmp_path, capsys, ["--vcf", study + ".vcf"], "s.vcf", "--pheno FILE")


def test_vcf_id_delim_on_ids_without_the_delimiter(study, tmp_path, capsys):
    pytest.importorskip("cyvcf2", reason="cyvcf2 not installed (pip install 'gboost[formats]')")
    one_line_error(tmp_path, capsys, ["--vcf", study + ".vcf", "--id-delim", "+", "--pheno", study + ".pheno"], "s.vcf",
                   "is not FID+IID")


def test_vcf_pheno_naming_no_sample_names_the_ids(study, tmp_path, capsys):
    """A --pheno file written with the .fam's IDs does not name the VCF's default IDs (FID 0,
    IID FID_IID): the one line names the --pheno file, the IDs and the flags that set them."""
    pytest.importorskip("cyvcf2", reason="cyvcf2 not installed (pip install 'gboost[formats]')")
    one_line_error(tmp_path, capsys, ["--vcf", study + ".vcf", "--pheno", study + ".pheno"], "s.pheno",
                   "no entry of the --pheno file matches a loaded sample ID")


# ---------------------------------------------------------------------------------------------
# BGEN/.sample

def _bgen_copy(study, tmp_path, keep=None):
    path = tmp_path / "b.bgen"
    data = open(study + ".bgen", "rb").read()
    path.write_bytes(data if keep is None else data[:keep])
    return str(path)


BGEN_CASES = {
    "not a BGEN": (lambda s, t: (shutil.copy(s + ".bed", t / "b.bgen"), [str(t / "b.bgen"), "--sample", s + ".sample"])[1],
                   "b.bgen", "not a BGEN"),
    "truncated": (lambda s, t: [_bgen_copy(s, t, -300), "--sample", s + ".sample"], "b.bgen", "truncated"),
    "header only": (lambda s, t: [_bgen_copy(s, t, 30), "--sample", s + ".sample"], "b.bgen", "truncated"),
    "tiny": (lambda s, t: [_bgen_copy(s, t, 10), "--sample", s + ".sample"], "b.bgen", "not a BGEN"),
    "v1.1 (layout 1)": (lambda s, t: [s + "_11.bgen", "--sample", s + "_11.sample"], "s_11.bgen", "export bgen-1.2"),
    "sample one short": (lambda s, t: (edit_lines(s + ".sample", t / "b.sample", lambda r: r[:-1]),
                                       [s + ".bgen", "--sample", str(t / "b.sample")])[1], "b.sample", "belong together"),
    "sample not Oxford": (lambda s, t: (shutil.copy(s + ".fam", t / "b.sample"), [s + ".bgen", "--sample", str(t / "b.sample")])[1],
                          "b.sample", "Oxford"),
    "sample without phenotype": (lambda s, t: (edit_lines(s + ".sample", t / "b.sample",
                                                          lambda r: [" ".join(x.split()[:4]) + "\n" for x in r]),
                                               [s + ".bgen", "--sample", str(t / "b.sample")])[1], "b.sample", "--pheno"),
    "sample wrong columns": (lambda s, t: (edit_lines(s + ".sample", t / "b.sample", lambda r: r[:2] + [r[2].rstrip() + " 9\n"]
                                                      + r[3:]), [s + ".bgen", "--sample", str(t / "b.sample")])[1],
                             "b.sample", "expected 5 columns"),
}


@pytest.mark.parametrize("name", list(BGEN_CASES))
def test_bad_bgen(study, tmp_path, capsys, name):
    pytest.importorskip("cbgen", reason="cbgen not installed (pip install 'gboost[formats]')")
    make, names, words = BGEN_CASES[name]
    one_line_error(tmp_path, capsys, ["--bgen", *make(study, tmp_path)], names, words)


def test_sample_without_bgen(study, tmp_path, capsys):
    one_line_error(tmp_path, capsys, ["--bfile", study, "--sample", study + ".sample"], "s.sample", "--sample goes with --bgen")


def test_two_inputs(study, tmp_path, capsys):
    one_line_error(tmp_path, capsys, ["--bfile", study, "--vcf", study + ".vcf"], "", "give exactly one input")


# ---------------------------------------------------------------------------------------------
# Missing optional packages

@pytest.mark.parametrize("module, args", [
    ("pgenlib", ["--pfile", "{s}"]),
    ("cyvcf2", ["--vcf", "{s}.vcf", "--pheno", "{s}_vcf.pheno"]),
    ("cbgen", ["--bgen", "{s}.bgen", "--sample", "{s}.sample"]),
])
def test_missing_optional_package_says_what_to_install(study, tmp_path, capsys, monkeypatch, module, args):
    monkeypatch.setitem(sys.modules, module, None)  # import now raises ImportError
    one_line_error(tmp_path, capsys, [a.format(s=study) for a in args], "s", f"pip install {module}")


def test_pvar_zst_without_zstandard(study, tmp_path, capsys, monkeypatch):
    pytest.importorskip("pgenlib", reason="pgenlib not installed (pip install 'gboost[formats]')")
    monkeypatch.setitem(sys.modules, "zstandard", None)
    one_line_error(tmp_path, capsys, ["--pfile", study + "_zst"], "s_zst.pvar.zst", "pip install zstandard")


@pytest.mark.parametrize("flag, suffix", [("--pfile", ""), ("--vcf", ".vcf"), ("--bgen", ".bgen")])
def test_out_in_the_folder_of_the_input_is_refused(study, tmp_path, capsys, flag, suffix):
    import os

    folder = os.path.dirname(study)
    rc = main(["scan", flag, study + suffix, "--out", folder, "--device", "cpu", "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "holds the input" in err[0]
