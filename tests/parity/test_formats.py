"""a study read from .pgen, VCF/BCF or BGEN scans to outputs identical, byte for byte,
to the scan of the PLINK 1 .bed it was converted from by plink2.

VCF and BGEN carry no sex (a BGEN's .sample may), and PLINK 2 keeps every sample's phenotype,
so their scans are compared with the .bed scan given the same treatment: the VCF with the .bed
whose sex column is zeroed, scanned with --allow-no-sex (without it PLINK 1.9's unknown-sex rule
would drop those samples from the .bed scan only); the BGEN, whose .sample keeps the sexes, with
the .bed scanned with --allow-no-sex. The .pgen keeps sexes and phenotypes in its .psam, so it
is compared with the plain .bed scan. QC flags run too, over X SNPs that they count by sex.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from tests.helpers import make_formats_study, needs_plink2, plink2
from gboost.cli import main

pytestmark = [pytest.mark.slow, needs_plink2]
OUTPUTS = ("marginal.tsv", "pairs.tsv", "pairs.epi.cc", "pairs.epi.cc.summary")
QC = ["--maf", "0.08", "--geno", "0.05", "--hwe", "0.001", "--mind", "0.05"]


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    return make_formats_study(str(tmp_path_factory.mktemp("formats")))


def scan(tmp_path, name, *args):
    out = tmp_path / name
    rc = main(["scan", *args, "--out", str(out), "--device", "cpu", "--quiet", "--epi1", "0.3",
               "--calibration-pairs", "0"])
    assert rc == 0
    return out


def assert_same_scan(a, b):
    for name in OUTPUTS:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    qa, qb = (json.loads((x / "run.json").read_text()) for x in (a, b))
    for key in ("counts", "thresholds"):
        assert qa[key] == qb[key], key
    strip = ("messages",)
    assert {k: v for k, v in qa["qc"].items() if k not in strip} == {k: v for k, v in qb["qc"].items() if k not in strip}


@pytest.mark.parametrize("qc", [[], QC], ids=["noqc", "qc"])
@pytest.mark.parametrize("pfile", ["s", "s_zst"])
def test_pgen_equals_bed(study, tmp_path, pfile, qc):
    pytest.importorskip("pgenlib", reason="pgenlib not installed (pip install 'gboost[formats]')")
    if pfile == "s_zst":
        pytest.importorskip("zstandard", reason="zstandard not installed (pip install 'gboost[formats]')")
    bed = scan(tmp_path, "bed", "--bfile", study, *qc)
    pgen = scan(tmp_path, "pgen", "--pfile", study.replace("/s", "/" + pfile) if pfile != "s" else study, *qc)
    assert_same_scan(bed, pgen)
    assert (pgen / "pairs.tsv").read_text().count("\n") > 5  # something to compare


@pytest.mark.parametrize("qc", [[], QC], ids=["noqc", "qc"])
@pytest.mark.parametrize("ext", [".vcf", "_bgz.vcf.gz", ".bcf"])
def test_vcf_equals_bed_without_sexes(study, tmp_path, ext, qc):
    pytest.importorskip("cyvcf2", reason="cyvcf2 not installed (pip install 'gboost[formats]')")
    bed = scan(tmp_path, "bed", "--bfile", study + "_nosex", "--allow-no-sex", *qc)
    vcf = scan(tmp_path, "vcf", "--vcf", study + ext, "--pheno", study + "_vcf.pheno", *qc)
    assert_same_scan(bed, vcf)
    # --id-delim splits plink2's FID_IID back: the .fam's own IDs then match a --pheno file
    split = scan(tmp_path, "vcf_delim", "--vcf", study + ext, "--id-delim", "--pheno", study + ".pheno", *qc)
    assert_same_scan(bed, split)


def test_vcf_log_says_phenotypes_are_kept(study, tmp_path, capsys):
    pytest.importorskip("cyvcf2", reason="cyvcf2 not installed (pip install 'gboost[formats]')")
    out = tmp_path / "o"
    assert main(["scan", "--vcf", study + ".vcf", "--pheno", study + "_vcf.pheno", "--out", str(out), "--device", "cpu",
                 "--calibration-pairs", "0"]) == 0
    err = capsys.readouterr().err
    assert "carries no sex: every sample's phenotype is kept, as PLINK 2 does" in err
    assert "140 samples (70 cases, 70 controls) go into the scan" in err
    assert "carries no sex" in " ".join(json.loads((out / "run.json").read_text())["qc"]["messages"])


@pytest.mark.parametrize("qc", [[], QC], ids=["noqc", "qc"])
@pytest.mark.parametrize("version", ["", "_13"], ids=["v1.2", "v1.3"])
def test_bgen_equals_bed(study, tmp_path, qc, version):
    pytest.importorskip("cbgen", reason="cbgen not installed (pip install 'gboost[formats]')")
    bed = scan(tmp_path, "bed", "--bfile", study, "--allow-no-sex", *qc)
    bgen = scan(tmp_path, "bgen", "--bgen", study + version + ".bgen", "--sample", study + version + ".sample", *qc)
    assert_same_scan(bed, bgen)
    # ref-last counts the same (first) allele; --pheno overrides the .sample's phenotype alike
    again = scan(tmp_path, "bgen2", "--bgen", study + version + ".bgen", "ref-last", "--sample", study + ".sample",
                 "--pheno", study + ".pheno", *qc)
    assert_same_scan(bed, again)


def test_bgen_ref_first_counts_the_other_allele(study):
    pytest.importorskip("cbgen", reason="cbgen not installed (pip install 'gboost[formats]')")
    from gboost.data.inputs import open_input
    from gboost.readers.plink_bed import open_bfile

    first = open_input(bgen=study + ".bgen", sample=study + ".sample", bgen_ref="ref-first")
    bed = open_bfile(study)
    assert (first.variants.a1 == bed.variants.a2).all() and (first.variants.a2 == bed.variants.a1).all()
    g = np.concatenate([b for _, b in first.iter_blocks(np.arange(len(first.samples)), 50)])
    h = np.concatenate([b for _, b in bed.iter_blocks(np.arange(len(bed.samples)), 50)])
    assert ((g == -1) == (h == -1)).all() and (g[h >= 0] == 2 - h[h >= 0]).all()


@pytest.fixture(scope="module")
def dosages(tmp_path_factory, study):
    """A BGEN of genuine probabilities: dosages imported by plink2 (values on and around the
    thresholds tested), exported as BGEN 1.2 by plink2."""
    folder = tmp_path_factory.mktemp("dosage")
    rng = np.random.default_rng(7)
    ids = [line.split()[:2] for line in open(study + ".fam")]
    values = [0, 1, 2, 0.3, 1.7, 0.95, 1.05, 0.5, 1.5, 0.2, 1.8, 0.12, 1.9, 0.25, 1.75, 0.4, 1.6, 0.35, 1.15, 0.45, 1.55]
    with open(folder / "d.txt", "w") as f:
        f.write("SNP\tA1\tA2\t" + "\t".join(f"{a}\t{b}" for a, b in ids) + "\n")
        for k in range(30):
            f.write(f"d{k}\tA\tG\t" + "\t".join(f"{rng.choice(values):g}" for _ in ids) + "\n")
    with open(folder / "d.map", "w") as f:
        f.writelines(f"1\td{k}\t0\t{1000 + k}\n" for k in range(30))
    prefix = str(folder / "d")
    plink2("--import-dosage", prefix + ".txt", "format=1", "--fam", study + ".fam", "--map", prefix + ".map",
           "--make-pgen", "--out", prefix)
    plink2("--pfile", prefix, "--export", "bgen-1.2", "--out", prefix)
    return prefix


@pytest.mark.parametrize("threshold", [0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.49])
def test_bgen_hard_calls_follow_plink2s_threshold(dosages, threshold):
    pytest.importorskip("cbgen", reason="cbgen not installed (pip install 'gboost[formats]')")
    from gboost.data.inputs import open_input
    from gboost.readers.plink_bed import open_bfile

    out = f"{dosages}_hc{threshold}"
    plink2("--bgen", dosages + ".bgen", "ref-last", "--sample", dosages + ".sample", "--hard-call-threshold",
           str(threshold), "--make-bed", "--out", out)
    ours = open_input(bgen=dosages + ".bgen", sample=dosages + ".sample", hard_call_threshold=threshold)
    theirs = open_bfile(out, allow_no_sex=True)
    g = np.concatenate([b for _, b in ours.iter_blocks(np.arange(len(ours.samples)), 8)])
    h = np.concatenate([b for _, b in theirs.iter_blocks(np.arange(len(theirs.samples)), 8)])
    assert (ours.variants.a1 == theirs.variants.a1).all()
    assert (g == h).all()
    assert 0 < (g == -1).mean() < 1 or threshold >= 0.3  # some calls missing, some not: the test bites


def test_pgen_with_dosages_is_refused(dosages, tmp_path, capsys):
    pytest.importorskip("pgenlib", reason="pgenlib not installed (pip install 'gboost[formats]')")
    out = tmp_path / "o"
    rc = main(["scan", "--pfile", dosages, "--out", str(out), "--device", "cpu", "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "carries dosages" in err[0] and "d.pgen" in err[0]
    assert not out.exists()


@pytest.mark.parametrize("flags", [[], ["--double-id"], ["--id-delim"], ["--const-fid", "F7"]])
def test_vcf_sample_ids_are_plink2s(study, tmp_path, flags):
    pytest.importorskip("cyvcf2", reason="cyvcf2 not installed (pip install 'gboost[formats]')")
    from gboost.readers.sample_ids import IdMode
    from gboost.readers.vcf import open_vcf

    out = str(tmp_path / "p")
    plink2("--vcf", study + ".vcf", *flags, "--make-bed", "--out", out)
    fam = [line.split()[:2] for line in open(out + ".fam")]
    mode = IdMode(double_id="--double-id" in flags, id_delim="_" if "--id-delim" in flags else None,
                  const_fid=flags[1] if "--const-fid" in flags else None)
    pheno = tmp_path / "ph"
    pheno.write_text("".join(f"{f} {i} 1\n" for f, i in fam))
    src = open_vcf(study + ".vcf", pheno=str(pheno), ids=mode)
    assert [list(x) for x in zip(src.samples.fid.tolist(), src.samples.iid.tolist())] == fam
    assert (src.samples.status == 1).all()  # every sample matched the --pheno file


def test_bgen_without_sample_uses_its_own_ids(study, tmp_path):
    """plink2 stores FID_IID in the BGEN; without --sample they are split as for a VCF, and no
    sexes are known: the scan equals the sexless .bed's."""
    pytest.importorskip("cbgen", reason="cbgen not installed (pip install 'gboost[formats]')")
    bed = scan(tmp_path, "bed", "--bfile", study + "_nosex", "--allow-no-sex")
    bgen = scan(tmp_path, "bgen", "--bgen", study + ".bgen", "--pheno", study + "_vcf.pheno")
    assert_same_scan(bed, bgen)
    split = scan(tmp_path, "bgen_delim", "--bgen", study + ".bgen", "--id-delim", "--pheno", study + ".pheno")
    assert_same_scan(bed, split)


def test_phased_calls_read_alike_from_vcf_bgen_and_pgen(study, tmp_path):
    """Phased GTs (the study's VCF with | for /): plink2 makes a phased BGEN (4 probabilities per
    sample) and a .pgen with hard-call phase (8-bit record types, so gboost checks it for dosages
    and must find none); all three give the same calls."""
    for module in ("cbgen", "cyvcf2", "pgenlib"):
        pytest.importorskip(module, reason=f"{module} not installed (pip install 'gboost[formats]')")
    from gboost.data.inputs import open_input

    phased = str(tmp_path / "ph")
    with open(study + ".vcf") as src, open(phased + ".vcf", "w") as dst:
        for line in src:
            dst.write(line if line.startswith("#") else line.replace("/", "|"))
    plink2("--vcf", phased + ".vcf", "--export", "bgen-1.2", "--out", phased)
    plink2("--vcf", phased + ".vcf", "--make-pgen", "--out", phased)
    with open(phased + ".pgen", "rb") as f:
        assert f.read(12)[11] & 15 >= 4  # phase stored: the dosage check runs
    sources = [open_input(vcf=phased + ".vcf", pheno=study + "_vcf.pheno"),
               open_input(bgen=phased + ".bgen", sample=phased + ".sample", pheno=study + "_vcf.pheno"),
               open_input(pfile=phased, pheno=study + "_vcf.pheno")]
    calls = [np.concatenate([b for _, b in s.iter_blocks(np.arange(len(s.samples)), 32)]) for s in sources]
    assert (calls[0] == calls[1]).all() and (calls[0] == calls[2]).all()
    assert (sources[0].variants.a1 == sources[1].variants.a1).all()
    assert (sources[0].variants.a1 == sources[2].variants.a1).all()
    assert 0 < (calls[0] == -1).mean() < 0.1


def test_pgen_with_a_quantitative_trait_equals_bed(tmp_path):
    """A .psam whose phenotype is a quantitative trait (plink2 writes NA for a missing one) scans as the
    .bed plink2 makes back of the .pgen: the linear --epistasis test, `.epi.qt` files alike. gboost
    refused it ("not case/control") before: found by bench/parity_sweep.py --more-flags, seed 403."""
    pytest.importorskip("pgenlib", reason="pgenlib not installed (pip install 'gboost[formats]')")
    from gboost.data.simulate import simulate_qt_study

    st = simulate_qt_study(40, 300, seed=11, missing_rate=0.01, effects=[(1, 2, 0.5)], missing_trait=0.05,
                           unknown_sex=0.05, chromosomes=["1", "2"])
    prefix = str(tmp_path / "q")
    st.write(prefix)
    plink2("--bfile", prefix, "--make-pgen", "--out", prefix + "_p")
    plink2("--pfile", prefix + "_p", "--make-bed", "--out", prefix + "_b")
    assert "NA" in open(prefix + "_p.psam").read()
    runs = {}
    for name, src in (("bed", ["--bfile", prefix + "_b"]), ("pgen", ["--pfile", prefix + "_p"])):
        out = tmp_path / name
        assert main(["scan", *src, "--out", str(out), "--device", "cpu", "--quiet", "--epi1", "0.05"]) == 0
        runs[name] = out
    for f in ("pairs.epi.qt", "pairs.epi.qt.summary", "pairs.tsv"):
        assert (runs["pgen"] / f).read_bytes() == (runs["bed"] / f).read_bytes(), f
    assert (runs["pgen"] / "pairs.epi.qt").read_text().count("\n") > 5
