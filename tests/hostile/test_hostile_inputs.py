"""Hostile inputs: names and flags PLINK reads one way and gboost read another (repeated SNP IDs,
chromosome codes PLINK does not know, --chr lists, a flag without the flag it needs, misleading
messages, control characters in names). Each case is run through plink1.9 (the oracle) where it
can be, and gboost must end in PLINK's answer, or in one line naming the file and the cause with
exit 2; the ``guard`` fixture hashes the inputs and OUT/'s neighbours before and after."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gboost.cli import main
from tests.helpers import NO_PLINK, PLINK, PLINK2, read
from tests.hostile.hostile_helpers import bfile as _bfile, write_study as _write_study


def _edit_bim(prefix, edit):
    bim = Path(prefix + ".bim")
    rows = [line.split("\t") for line in bim.read_text().splitlines()]
    for k, r in enumerate(rows):
        edit(k, r)
    bim.write_text("".join("\t".join(r) + "\n" for r in rows))


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("gboost: error:"), err
    return err[0]


def _gboost(out, *args):
    return main(["scan", *args, "--out", str(out), "--device", "cpu", "--quiet", "--epi1", "0.99"])


def _plink(out, *args, check=True):
    run = subprocess.run([PLINK, *args, "--fast-epistasis", "boost", "--epi1", "0.99", "--out", str(out),
                          "--threads", "2"], capture_output=True, text=True)
    if check:
        assert run.returncode == 0, run.stdout + run.stderr
    return run


def _same_files(out, plink):
    """pairs.epi.cc and its summary byte for byte as plink1.9's (pairs.tsv is keyed by name, so a
    repeated ID is compared here, in PLINK's own files)."""
    assert read(out / "pairs.epi.cc") == read(f"{plink}.epi.cc")
    assert read(out / "pairs.epi.cc.summary") == read(f"{plink}.epi.cc.summary")


# --- repeated SNP IDs -----------------------------------------------------------------------------

def _duplicate_ids(k, r):
    if k in (2, 4, 8, 15):
        r[1] = "."
    elif k in (10, 12):
        r[1] = "rsD"


@pytest.mark.skipif(PLINK is None, reason=NO_PLINK)
@pytest.mark.parametrize("flag, listed", [(None, None), ("--extract", ". snp1 snp2"), ("--exclude", "rsD"),
                                          ("--exclude", ".")])
def test_repeated_snp_ids_are_scanned_as_plink_scans_them(tmp_path, guard, flag, listed):
    """plink1.9 --fast-epistasis scans a .bim whose IDs repeat ("." several times, an rs ID twice)
    with each row its own SNP, the ID printed as given; --extract/--exclude of a repeated ID take
    every row carrying it. gboost refused the .bim ("duplicate SNP ID")."""
    prefix = _write_study(tmp_path / "data")
    _edit_bim(prefix, _duplicate_ids)
    extra = []
    if flag:
        ids = tmp_path / "data" / "ids.txt"
        ids.write_text(listed.replace(" ", "\n") + "\n")
        extra = [flag, str(ids)]
    out = tmp_path / "run" / "res"
    guard(out, *_bfile(prefix))
    assert _gboost(out, "--bfile", prefix, *extra) == 0
    (tmp_path / "oracle").mkdir()
    _plink(tmp_path / "oracle" / "p", "--bfile", prefix, *extra)
    _same_files(out, tmp_path / "oracle" / "p")
    assert ("   .  " in read(out / "pairs.epi.cc.summary")) == (listed != ".")


@pytest.mark.skipif(PLINK is None, reason=NO_PLINK)
def test_repeated_snp_ids_in_a_map_are_scanned_as_plink_scans_them(tmp_path, guard):
    prefix = _write_study(tmp_path / "data")
    _edit_bim(prefix, _duplicate_ids)
    text = str(tmp_path / "data" / "t")
    subprocess.run([PLINK, "--bfile", prefix, "--recode", "--out", text, "--silent"], check=True)
    out = tmp_path / "run" / "res"
    guard(out, text + ".ped", text + ".map")
    assert _gboost(out, "--file", text) == 0
    (tmp_path / "oracle").mkdir()
    _plink(tmp_path / "oracle" / "p", "--file", text)
    _same_files(out, tmp_path / "oracle" / "p")


@pytest.mark.skipif(PLINK is None or PLINK2 is None, reason="plink1.9 and plink2 needed on PATH")
def test_repeated_variant_ids_in_a_pvar_and_a_vcf_of_dots_are_scanned(tmp_path, guard):
    """A .pvar whose IDs repeat, and a VCF whose IDs are all "." (plink1.9 --vcf keeps "." for
    each): scanned as the .bim is, byte for byte as plink1.9 scans them."""
    pytest.importorskip("pgenlib")
    pytest.importorskip("cyvcf2")
    prefix = _write_study(tmp_path / "data")
    _edit_bim(prefix, _duplicate_ids)
    subprocess.run([PLINK2, "--bfile", prefix, "--make-pgen", "--out", prefix, "--silent"], check=True)
    out = tmp_path / "run_pgen" / "res"
    guard(out, prefix + ".pgen", prefix + ".pvar", prefix + ".psam")
    assert _gboost(out, "--pfile", prefix) == 0
    (tmp_path / "oracle").mkdir()
    _plink(tmp_path / "oracle" / "p", "--bfile", prefix)
    _same_files(out, tmp_path / "oracle" / "p")

    subprocess.run([PLINK2, "--bfile", prefix, "--export", "vcf", "--out", prefix, "--silent"], check=True)
    lines = Path(prefix + ".vcf").read_text().splitlines(keepends=True)
    vcf = Path(prefix + "_dots.vcf")
    vcf.write_text("".join(x if x.startswith("#") else "\t".join(f if c != 2 else "." for c, f in enumerate(x.split("\t")))
                           for x in lines))
    pheno = tmp_path / "data" / "s.pheno"
    pheno.write_text("".join(f"{f[0]} {f[1]} {f[5]}\n" for f in (x.split() for x in Path(prefix + ".fam").open())))
    out = tmp_path / "run_vcf" / "res"
    guard(out, vcf, pheno)
    assert _gboost(out, "--vcf", str(vcf), "--id-delim", "--pheno", str(pheno), "--allow-no-sex") == 0
    _plink(tmp_path / "oracle" / "v", "--vcf", str(vcf), "--pheno", str(pheno), "--allow-no-sex")
    _same_files(out, tmp_path / "oracle" / "v")
    assert "   .    1    .  " in read(out / "pairs.epi.cc")


# --- chromosome codes PLINK does not know ---------------------------------------------------------

# What plink1.9 says (v1.90b6.26, the .bim's first 3 rows given the code): a name it does not know
# is refused unless --allow-extra-chr, then printed whole; a number past 26 is refused with it too;
# a control character ends the line for it ("fewer tokens than expected"), with it too.
CODES = {"HLA": "extra", "-1": "extra", "chrUn_gl000220": "extra", "001": "extra", "1a": "extra",
         "27": "never", "chr95": "never", "ch\x01r": "control", "\x1b[31m": "control", "01": "known", "chrM": "known"}


@pytest.mark.skipif(PLINK is None, reason=NO_PLINK)
@pytest.mark.parametrize("code", list(CODES), ids=ascii)
def test_a_chromosome_code_plink_does_not_know_is_refused_without_allow_extra_chr(tmp_path, guard, capsys, code):
    prefix = _write_study(tmp_path / "data")
    _edit_bim(prefix, lambda k, r: r.__setitem__(0, code) if k < 3 else None)
    (tmp_path / "oracle").mkdir()
    rule = CODES[code]
    for extra in ([], ["--allow-extra-chr"]):
        out = tmp_path / f"run{len(extra)}" / "res"
        guard(out, *_bfile(prefix))
        plink = _plink(tmp_path / "oracle" / f"p{len(extra)}", "--bfile", prefix, *extra, check=False)
        accepted = rule == "known" or (rule == "extra" and bool(extra))
        said = plink.stdout + plink.stderr
        assert (plink.returncode == 0) == accepted, said
        if accepted:
            assert _gboost(out, "--bfile", prefix, *extra) == 0
            _same_files(out, tmp_path / "oracle" / f"p{len(extra)}")
            continue
        assert _gboost(out, "--bfile", prefix, *extra) == 2
        line = _one_error_line(capsys)
        assert "\x1b" not in line and "\x01" not in line and ascii(code)[1:-1] in line
        assert prefix + ".bim" in line and "variant 1 ('snp1')" in line
        words = {"extra": ("Invalid chromosome code", "use --allow-extra-chr"),
                 "never": ("Invalid chromosome code", "even with --allow-extra-chr"),
                 "control": ("fewer tokens than expected", "control character")}[rule]
        # (a control character first on the line ends it before any token: PLINK skips the line
        # and then finds the .bed a SNP too long)
        assert (words[0] in said or (rule == "control" and "Invalid .bed file size" in said)) and words[1] in line
        assert not out.exists()


@pytest.mark.parametrize("reader", ["map", "pvar", "vcf"])
def test_other_readers_refuse_a_contig_without_allow_extra_chr(tmp_path, guard, capsys, reader):
    """The .map, .pvar and VCF readers go through the same check (load_study), naming their file."""
    if reader != "map" and PLINK2 is None:
        pytest.skip("plink2 not on PATH")
    pytest.importorskip({"map": "numpy", "pvar": "pgenlib", "vcf": "cyvcf2"}[reader])
    prefix = _write_study(tmp_path / "data")
    _edit_bim(prefix, lambda k, r: r.__setitem__(0, "HLA") if k < 3 else None)
    if reader == "map":
        subprocess.run([PLINK, "--bfile", prefix, "--recode", "--allow-extra-chr", "--out", prefix, "--silent"], check=True)
        args, listed = ["--file", prefix], prefix + ".map"
    elif reader == "pvar":
        subprocess.run([PLINK2, "--bfile", prefix, "--allow-extra-chr", "--make-pgen", "--out", prefix, "--silent"], check=True)
        args, listed = ["--pfile", prefix], prefix + ".pvar"
    else:
        subprocess.run([PLINK2, "--bfile", prefix, "--allow-extra-chr", "--export", "vcf", "--out", prefix, "--silent"],
                       check=True)
        pheno = tmp_path / "data" / "s.pheno"
        pheno.write_text("".join(f"0 {f[0]}_{f[1]} {f[5]}\n" for f in (x.split() for x in Path(prefix + ".fam").open())))
        args, listed = ["--vcf", prefix + ".vcf", "--pheno", str(pheno), "--allow-no-sex"], prefix + ".vcf"
    out = tmp_path / "run" / "res"
    guard(out, listed)
    assert _gboost(out, *args) == 2
    line = _one_error_line(capsys)
    assert listed in line and "'HLA'" in line and "--allow-extra-chr" in line
    out = tmp_path / "run2" / "res"
    assert _gboost(out, *args, "--allow-extra-chr") == 0
    assert "HLA" in read(out / "pairs.epi.cc.summary")


# --- --chr lists ----------------------------------------------------------------------------------

@pytest.mark.skipif(PLINK is None, reason=NO_PLINK)
@pytest.mark.parametrize("spec, plink_says", [("1,foo", "Invalid --chr chromosome code 'foo'"),
                                              ("1-99", "Invalid --chr chromosome code '99'"),
                                              ("27", "Invalid --chr chromosome code '27'"),
                                              ("001", "Invalid --chr chromosome code '001'"),
                                              ("1-contig", "Invalid --chr chromosome code 'contig'")])
def test_a_chr_list_plink_refuses_is_refused(tmp_path, guard, capsys, spec, plink_says):
    """plink1.9 refuses a --chr name it does not know and a range past its codes; gboost kept
    chromosome 1 of ``1,foo`` and took ``1-99`` as 1-26."""
    prefix = _write_study(tmp_path / "data")
    (tmp_path / "oracle").mkdir()
    plink = _plink(tmp_path / "oracle" / "p", "--bfile", prefix, "--chr", spec, check=False)
    assert plink.returncode != 0 and plink_says in plink.stdout + plink.stderr
    out = tmp_path / "run" / "res"
    guard(out, *_bfile(prefix))
    assert _gboost(out, "--bfile", prefix, "--chr", spec) == 2
    line = _one_error_line(capsys)
    assert "--chr" in line and repr(plink_says.split("'")[1]) in line
    assert not out.exists()


@pytest.mark.skipif(PLINK is None, reason=NO_PLINK)
def test_chr_as_space_separated_words_is_read_as_plink_reads_it(tmp_path, guard):
    """``--chr 2 3``: PLINK's space-separated form; gboost's argparse refused the second word."""
    prefix = _write_study(tmp_path / "data", p=36)
    _edit_bim(prefix, lambda k, r: r.__setitem__(0, str(1 + k // 12)))
    out = tmp_path / "run" / "res"
    guard(out, *_bfile(prefix))
    assert _gboost(out, "--bfile", prefix, "--chr", "2", "3") == 0
    (tmp_path / "oracle").mkdir()
    _plink(tmp_path / "oracle" / "p", "--bfile", prefix, "--chr", "2", "3")
    _same_files(out, tmp_path / "oracle" / "p")
    assert {line.split()[0] for line in read(out / "pairs.epi.cc.summary").splitlines()[1:]} == {"2", "3"}


def test_qc_options_check_chr_names_against_allow_extra_chr():
    from gboost.data.study import QCOptions

    with pytest.raises(ValueError, match="'HLA'.*--allow-extra-chr"):
        QCOptions(chrom=["HLA"])
    assert QCOptions(chrom=["HLA", "1-3"], allow_extra_chr=True).chrom == ["HLA", "1", "2", "3"]
    with pytest.raises(ValueError, match="range '1-HLA'"):
        QCOptions(chrom=["1-HLA"], allow_extra_chr=True)


# --- a flag without the flag it needs -------------------------------------------------------------

@pytest.mark.skipif(PLINK is None, reason=NO_PLINK)
def test_covar_name_without_covar_is_refused_as_plink_refuses_it(tmp_path, guard, capsys):
    """gboost ran the scan unadjusted, the --covar-name silently ignored."""
    prefix = _write_study(tmp_path / "data")
    theirs = subprocess.run([PLINK, "--bfile", prefix, "--covar-name", "c1", "--logistic", "--out",
                             str(tmp_path / "oracle")], capture_output=True, text=True)
    assert theirs.returncode != 0 and "--covar-name must be used with --covar" in theirs.stdout + theirs.stderr
    out = tmp_path / "run" / "res"
    guard(out, *_bfile(prefix))
    assert _gboost(out, "--bfile", prefix, "--covar-name", "c1") == 2
    line = _one_error_line(capsys)
    assert "--covar-name c1" in line and "--covar FILE" in line
    assert not out.exists()


# --- messages that named the wrong cause ----------------------------------------------------------

@pytest.mark.skipif(PLINK2 is None, reason="plink2 not on PATH")
@pytest.mark.parametrize("reader", ["bfile", "file"])
def test_a_pheno_matching_no_sample_is_blamed_on_the_ids(tmp_path, guard, capsys, reader):
    """gboost blamed the phenotype coding ("only 0 cases ... 0, -9, non-numeric or unknown sex");
    plink2 names the cause: "No entries in FILE correspond to loaded sample IDs"."""
    prefix = _write_study(tmp_path / "data")
    pheno = tmp_path / "data" / "other.pheno"
    pheno.write_text("".join(f"zz{f[0]} {f[1]} {f[5]}\n" for f in (x.split() for x in Path(prefix + ".fam").open())))
    theirs = subprocess.run([PLINK2, "--bfile", prefix, "--pheno", str(pheno), "--glm", "allow-no-covars", "--out",
                             str(tmp_path / "oracle")], capture_output=True, text=True)
    assert theirs.returncode != 0 and "correspond to loaded sample IDs" in theirs.stdout + theirs.stderr
    args = ["--bfile", prefix]
    if reader == "file":
        subprocess.run([PLINK2, "--bfile", prefix, "--export", "ped", "--out", prefix, "--silent"], check=True)
        args = ["--file", prefix]
    out = tmp_path / "run" / "res"
    guard(out, pheno)
    assert _gboost(out, *args, "--pheno", str(pheno)) == 2
    line = _one_error_line(capsys)
    assert str(pheno) in line and "no entry of the --pheno file matches a loaded sample ID" in line
    assert "'zzfam1 ind1' (line 1)" in line and "'fam1 ind1'" in line and "cases" not in line
    assert not out.exists()


# --- control characters in pathway names ----------------------------------------------------------

def test_control_characters_in_pathway_names_reach_neither_terminal_nor_graphml_raw(tmp_path, capsys):
    """A .gmt name holding an escape code and other C0 controls: gboost pathways printed it raw to
    the terminal and wrote it raw into graph.graphml, which XML 1.0 cannot hold (not well-formed)."""
    pytest.importorskip("networkx")
    import xml.etree.ElementTree as ET

    prefix = _write_study(tmp_path / "data")
    scan = tmp_path / "scan"
    assert main(["scan", "--bfile", prefix, "--out", str(scan), "--device", "cpu", "--quiet", "--epi1", "0.5"]) == 0
    bed = tmp_path / "genes.bed"
    bed.write_text("1\t0\t300000000\tG1\n2\t0\t300000000\tG2\n")
    gmt = tmp_path / "evil.gmt"
    evil = "EVIL\x1b[31mRED\x01\x07\x7f"
    gmt.write_text(f"{evil}\tdesc <&>\tG1\nP2&<b>\"\tx\tG2\n")
    capsys.readouterr()
    out = tmp_path / "graph"
    assert main(["pathways", "--pairs", str(scan), "--annotation", str(bed), "--gmt", str(gmt), "--out", str(out),
                 "--window-kb", "0"]) == 0
    err = capsys.readouterr().err
    assert not any(c in err for c in "\x1b\x01\x07\x7f") and "EVIL\\x1b[31mRED\\x01\\x07\\x7f" in err
    tree = ET.parse(out / "graph.graphml")  # well-formed
    texts = {d.text for d in tree.iter() if d.text}
    assert "EVIL\\x1b[31mRED\\x01\\x07\x7f" in texts and 'P2&<b>"' in texts  # (DEL is legal XML: kept)
    assert evil in (out / "nodes.tsv").read_text()  # the tables keep the name as read
