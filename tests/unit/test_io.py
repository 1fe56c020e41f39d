"""Readers of docs/DESIGN.md §3.1: PLINK binary and text filesets, the BOOST matrix, --pheno, bad input."""
from __future__ import annotations

import os

import numpy as np
import pytest

from gboost.errors import InputError
from gboost.readers.boost_matrix import open_boost_matrix
from gboost.readers.ped import open_ped
from gboost.readers import pheno as pheno_module
from gboost.readers.pheno import apply_pheno, is_case_control_token, read_pheno_file, read_table
from gboost.readers.plink_bed import open_bfile
from gboost.data.load import load_study
from gboost.data.simulate import pack_bed_block, simulate_study, write_bfile
from gboost.data.study import QCOptions, SampleTable, VariantTable
from tests.helpers import needs_plink, plink


def small_fileset(tmp_path, n_snps=37, n_samples=53, seed=3, missing=0.05, name="s"):
    """A simulated fileset (sample count not a multiple of 4) written with our writer."""
    sim = simulate_study(n_snps, n_samples // 2 + 1, n_samples - n_samples // 2 - 1, seed=seed,
                         chromosomes=2, missing_rate=missing)
    prefix = str(tmp_path / name)
    sim.write(prefix)
    return sim, prefix


def all_blocks(source, sample_index=None, block_snps=7):
    if sample_index is None:
        sample_index = np.arange(len(source.samples))
    return np.concatenate([g for _, g in source.iter_blocks(sample_index, block_snps)])


# ---------------------------------------------------------------------------------------------
# .bed round trips


def test_write_bfile_then_open_bfile_returns_the_same_genotypes(tmp_path):
    sim, prefix = small_fileset(tmp_path)
    src = open_bfile(prefix)
    assert (all_blocks(src) == sim.genotypes).all()
    assert (sim.genotypes == -1).any(), "the fixture should have missing calls"
    assert list(src.variants.snp) == list(sim.variants.snp)
    assert (src.variants.bp == sim.variants.bp).all()
    assert list(src.variants.a1) == list(sim.variants.a1)
    assert (src.samples.status == sim.samples.status).all()
    assert (src.samples.sex == sim.samples.sex).all()


def test_iter_blocks_follows_the_requested_sample_order_and_block_size(tmp_path):
    sim, prefix = small_fileset(tmp_path)
    src = open_bfile(prefix)
    order = np.array([5, 0, 52, 17, 3])
    starts, sizes = [], []
    for start, g in src.iter_blocks(order, 10):
        starts.append(start)
        sizes.append(g.shape)
        assert g.dtype == np.int8 and g.flags["C_CONTIGUOUS"]
        assert (g == sim.genotypes[start : start + 10][:, order]).all()
    assert starts == [0, 10, 20, 30]
    assert sizes[-1] == (7, 5)


def test_open_bfile_accepts_a_prefix_with_an_extension(tmp_path):
    sim, prefix = small_fileset(tmp_path)
    assert len(open_bfile(prefix + ".bed").variants) == len(sim.variants)


def test_pack_bed_block_uses_plinks_two_bit_codes():
    # 5 samples: A1/A1, het, A2/A2, missing, A1/A1 -> codes 00 10 11 01 | 00 (+ zero padding)
    geno = np.array([[2, 1, 0, -1, 2]], dtype=np.int8)
    assert pack_bed_block(geno).tolist() == [[0b01_11_10_00, 0b00_00_00_00]]


@needs_plink
@pytest.mark.plink
def test_our_bed_is_byte_identical_to_plinks_rewrite(tmp_path):
    _, prefix = small_fileset(tmp_path)
    plink("--bfile", prefix, "--keep-allele-order", "--make-bed", "--out", str(tmp_path / "re"), cwd=tmp_path)
    assert (tmp_path / "re.bed").read_bytes() == (tmp_path / "s.bed").read_bytes()


def test_bim_and_fam_skip_blank_and_comment_lines_like_plink(tmp_path):
    sim, prefix = small_fileset(tmp_path)
    bim = (tmp_path / "s.bim").read_text().splitlines(keepends=True)
    (tmp_path / "s.bim").write_text("# made by hand\n" + "".join(bim[:3]) + "\n  \n" + "".join(bim[3:]))
    fam = (tmp_path / "s.fam").read_text().replace("\n", "\r\n")  # Windows line ends too
    (tmp_path / "s.fam").write_text("#FID IID\r\n" + fam)
    src = open_bfile(prefix)
    assert list(src.variants.snp) == list(sim.variants.snp)
    assert (src.samples.status == sim.samples.status).all() and list(src.samples.iid) == list(sim.samples.iid)


def test_read_table_numbers_lines_across_chunks(tmp_path, monkeypatch):
    monkeypatch.setattr(pheno_module._line_chunks, "__defaults__", (16,))  # many tiny chunks
    rows = [f"c{k} id{k} {k}" for k in range(40)]
    rows[7] = "# comment"
    rows[8] = ""
    (tmp_path / "t.txt").write_text("\n".join(rows) + "\n")
    (first, second, third), lines = read_table(tmp_path / "t.txt", 3, "test", "a, b, c")
    assert lines.tolist() == [k + 1 for k in range(40) if k not in (7, 8)]
    assert third.astype(int).tolist() == [k for k in range(40) if k not in (7, 8)]
    rows[30] = "c30 id30"
    (tmp_path / "t.txt").write_text("\n".join(rows) + "\n")
    with pytest.raises(InputError, match="line 31: expected 3 columns .a, b, c., found 2"):
        read_table(tmp_path / "t.txt", 3, "test", "a, b, c")


def test_non_ascii_ids_are_read_as_text(tmp_path):
    sim, prefix = small_fileset(tmp_path)
    text = (tmp_path / "s.bim").read_text().replace("snp2\t", "snp\u00e9\t", 1)
    (tmp_path / "s.bim").write_text(text, encoding="utf-8")
    assert open_bfile(prefix).variants.snp[1] == "snp\u00e9"


# ---------------------------------------------------------------------------------------------
# .ped/.map


PED = """\
f1 i1 0 0 1 2 A A C G 1 2 G G 0 0 A C
f2 i2 0 0 1 1 A C G C 2 2 G G 0 0 C C
f3 i3 0 0 2 2 A A C G 1 1 G G 0 0 C A
f4 i4 0 0 2 1 A A G C 2 1 G G 0 0 0 0
f5 i5 f1 f2 2 1 C C G G 2 2 G G 0 0 A A
f6 i6 f1 f2 2 1 C C G G 2 2 G G 0 0 A A
"""
MAP = "1 s1 0 100\n1 s2 0 200\n1 s3 300\n1 s4 0 400\n1 s5 0 500\n1 s6 0 600\n"


def write_ped(tmp_path, ped=PED, map_text=MAP, name="t"):
    (tmp_path / f"{name}.ped").write_text(ped)
    (tmp_path / f"{name}.map").write_text(map_text)
    return str(tmp_path / f"{name}.ped"), str(tmp_path / f"{name}.map")


def test_open_ped_takes_a1_as_the_founders_minor_allele(tmp_path):
    src = open_ped(*write_ped(tmp_path))
    # s6: all samples A=6, C=4, but founders (i1-i4) A=2, C=4: A1 is A, as plink1.9 makes it.
    assert list(src.variants.a1) == ["C", "C", "1", "0", "0", "A"]
    assert list(src.variants.a2) == ["A", "G", "2", "G", "0", "C"]
    assert src.genotypes[0].tolist() == [0, 1, 0, 0, 2, 2]
    assert src.genotypes[3].tolist() == [0] * 6  # monomorphic: A1 '0', zero copies
    assert src.genotypes[4].tolist() == [-1] * 6
    assert src.genotypes[5].tolist() == [1, 0, 1, -1, 2, 2]
    assert src.founder.tolist() == [True] * 4 + [False] * 2
    assert src.samples.status.tolist() == [2, 1, 2, 1, 1, 1]
    assert src.variants.bp.tolist() == [100, 200, 300, 400, 500, 600]  # 3-column .map line read


def test_open_ped_breaks_a1_ties_towards_the_allele_seen_second(tmp_path):
    ped = "f0 i0 fx 0 1 2 G G\nf1 i1 0 0 1 2 A A\nf2 i2 0 0 1 1 G G\n"
    src = open_ped(*write_ped(tmp_path, ped, "1 s1 0 100\n"))
    # founders A=2, G=2 (tie); G appears first in the file (in a non-founder): A1 = A.
    assert (src.variants.a1[0], src.variants.a2[0]) == ("A", "G")


def test_open_ped_reads_compound_genotypes(tmp_path):
    ped = "f1 i1 0 0 1 2 AG CC\nf2 i2 0 0 1 1 GG CT\nf3 i3 0 0 1 1 GG 00\n"
    src = open_ped(*write_ped(tmp_path, ped, "1 s1 0 100\n1 s2 0 200\n"))
    assert list(src.variants.a1) == ["A", "T"]
    assert src.genotypes.tolist() == [[1, 0, 0], [0, 1, -1]]


@pytest.mark.parametrize(
    "ped, expected",
    [
        ("f1 i1 0 0 1 2 A A C\nf2 i2 0 0 1 1 C C C C\n", "line 1: expected 10 columns .*found 9"),
        ("f1 i1 0 0 1 2 A 0 C C\n", "line 1: half-missing call"),
        ("f1 i1 0 0 1 2 A G C C\nf2 i2 0 0 1 1 T T C C\n", "more than two alleles"),
        ("f1 i1 0 0 1 2 A G C C\nf1 i1 0 0 1 1 T T C C\n", "line 2: duplicate sample"),
        ("f1 i1 0 0 1 nan A G C C\n", "line 1: phenotype 'nan' is not a finite number"),
    ],
)
def test_bad_ped_lines_raise_input_error_naming_the_file_and_line(tmp_path, ped, expected):
    ped_path, map_path = write_ped(tmp_path, ped, "1 s1 0 100\n1 s2 0 200\n")
    with pytest.raises(InputError, match=expected) as err:
        open_ped(ped_path, map_path)
    assert err.value.path == ped_path


def test_bad_map_line_raises_input_error(tmp_path):
    ped_path, map_path = write_ped(tmp_path, "f1 i1 0 0 1 2 A A\n", "1 s1 0 100 extra\n")
    with pytest.raises(InputError, match="line 1: expected 4 columns") as err:
        open_ped(ped_path, map_path)
    assert err.value.path == map_path


@needs_plink
@pytest.mark.plink
def test_plink_make_bed_of_a_ped_gives_the_same_genotypes_as_open_ped(tmp_path):
    rng = np.random.default_rng(7)
    n, p = 41, 30
    letters = np.array(list("ACGT"))
    rows = []
    for k in range(n):
        pat = "0" if k % 5 else f"i{k - 1}"  # some non-founders, so founder counting matters
        alleles = []
        for j in range(p):
            pair = letters[[j % 4, (j + 1) % 4]]
            freq = rng.uniform(0.1, 0.9)
            call = [pair[int(rng.random() < freq)], pair[int(rng.random() < freq)]]
            alleles += ["0", "0"] if rng.random() < 0.05 else call
        rows.append(f"f{k} i{k} {pat} 0 {1 + k % 2} {1 + (k * 7) % 3 % 2} " + " ".join(alleles))
    map_text = "".join(f"{1 + j // 15} rs{j} 0 {1000 * (j + 1)}\n" for j in range(p))
    ped_path, map_path = write_ped(tmp_path, "\n".join(rows) + "\n", map_text)
    plink("--file", str(tmp_path / "t"), "--make-bed", "--out", str(tmp_path / "b"), cwd=tmp_path)
    ours, theirs = open_ped(ped_path, map_path), open_bfile(str(tmp_path / "b"))
    assert list(ours.variants.a1) == list(theirs.variants.a1)
    assert list(ours.variants.a2) == list(theirs.variants.a2)
    assert (ours.genotypes == all_blocks(theirs)).all()
    assert (ours.samples.status == theirs.samples.status).all()


# ---------------------------------------------------------------------------------------------
# BOOST matrix


def test_boost_matrix_reads_labels_and_genotypes_with_synthesized_metadata(tmp_path):
    path = tmp_path / "m.txt"
    path.write_text("1 0 1 2\n0,2,2,0\n\n1\t1 0 1\n")
    src = open_boost_matrix(path)
    assert src.genotypes.tolist() == [[0, 2, 1], [1, 2, 0], [2, 0, 1]]
    assert src.samples.status.tolist() == [2, 1, 2]
    assert list(src.variants.snp) == ["snp1", "snp2", "snp3"]
    assert src.variants.bp.tolist() == [1, 2, 3]
    assert list(src.variants.chrom) == ["1"] * 3
    assert (list(src.variants.a1), list(src.variants.a2)) == (["1"] * 3, ["2"] * 3)
    assert list(src.samples.iid) == ["sample1", "sample2", "sample3"]
    assert src.input_files() == [str(path)]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("1 0 1\n0 2\n", "line 2: expected 3 values"),
        ("2 0 1\n", "line 1: class label '2'"),
        ("1 0 3\n", "line 1, genotype column 2: value '3'"),
        ("1 0 -1\n", "line 1, genotype column 2: value '-1'"),
        ("", "empty"),
    ],
)
def test_bad_boost_matrix_raises_input_error(tmp_path, text, expected):
    path = tmp_path / "m.txt"
    path.write_text(text)
    with pytest.raises(InputError, match=expected) as err:
        open_boost_matrix(path)
    assert err.value.path == str(path)


# ---------------------------------------------------------------------------------------------
# Phenotypes


@pytest.mark.parametrize("token", ["0", "1", "2", "-9", "-9.0", "-09", "-9abc", "-9e0", "abc", "NA", "-0x9"])
def test_case_control_compatible_tokens(token):
    assert is_case_control_token(token)


@pytest.mark.parametrize("token", ["3", "1.5", "2.0", "0.0", "01", "+2", "2x", "1e0", "nan", "inf", "-10"])
def test_tokens_that_make_plink_read_a_quantitative_trait(token):
    assert not is_case_control_token(token)


def fam_with_phenotypes(tmp_path, tokens, name="p"):
    sim, prefix = small_fileset(tmp_path, n_samples=len(tokens), name=name)
    lines = (tmp_path / f"{name}.fam").read_text().splitlines()
    text = "".join(" ".join(line.split()[:5] + [tok]) + "\n" for line, tok in zip(lines, tokens))
    (tmp_path / f"{name}.fam").write_text(text)
    return prefix


def test_fam_phenotype_decoding_follows_plink(tmp_path):
    prefix = fam_with_phenotypes(tmp_path, ["1", "2", "0", "-9", "abc", "NA", "-9.0", "2", "1"])
    assert open_bfile(prefix).samples.status.tolist() == [1, 2, 0, 0, 0, 0, 0, 2, 1]


def test_quantitative_fam_phenotype_is_read_as_a_trait(tmp_path):
    # one non-case/control token makes the column quantitative (PLINK's rule): -9 and non-numeric
    # tokens are missing, 0 is a value, a numeric prefix is read as strtod reads it
    prefix = fam_with_phenotypes(tmp_path, ["1", "2", "0", "1.5", "-9", "abc", "2x", "-9.0"])
    s = open_bfile(prefix, allow_no_sex=True).samples
    assert s.trait is not None
    np.testing.assert_array_equal(s.trait, [1, 2, 0, 1.5, np.nan, np.nan, 2, np.nan])
    assert s.status.tolist() == [1, 1, 1, 1, 0, 0, 1, 0]


def test_case_control_fam_phenotype_has_no_trait(tmp_path):
    prefix = fam_with_phenotypes(tmp_path, ["1", "2", "0", "-9", "abc", "2"])
    assert open_bfile(prefix).samples.trait is None


@pytest.mark.parametrize("token", ["nan", "inf", "-inf", "1e999"])
def test_non_finite_quantitative_phenotype_raises_input_error_naming_the_line(tmp_path, token):
    prefix = fam_with_phenotypes(tmp_path, ["1", "2", "1", "1.5", token])
    with pytest.raises(InputError, match=rf"line 5: phenotype '{token}' is not a finite number") as err:
        open_bfile(prefix)
    assert err.value.path == prefix + ".fam"


@needs_plink
@pytest.mark.plink
def test_fam_phenotype_decoding_matches_plink_make_bed(tmp_path):
    tokens = ["1", "2", "0", "-9", "abc", "NA", "-9.0", "-9abc", "2", "1", "1", "2"]
    prefix = fam_with_phenotypes(tmp_path, tokens)
    plink("--bfile", prefix, "--make-bed", "--out", str(tmp_path / "o"), cwd=tmp_path)
    theirs = [line.split()[5] for line in (tmp_path / "o.fam").read_text().splitlines()]
    expected = [{"1": 1, "2": 2}.get(t, 0) for t in theirs]
    assert open_bfile(prefix).samples.status.tolist() == expected


PHENO = "FID IID trait\nfam2 ind2 2\nfam1 ind1 1\nzzz zzz 2\nfam3 ind3 -9\nfam4 ind4 1\nfam4 ind4 2\n\n"


def test_pheno_file_overrides_the_fam_with_plink_semantics(tmp_path):
    sim, prefix = small_fileset(tmp_path, n_samples=8)
    (tmp_path / "ph.txt").write_text(PHENO)
    src = open_bfile(prefix, pheno=str(tmp_path / "ph.txt"))
    # header skipped, unknown IDs ignored, -9 missing, the later fam4 row wins, absent samples missing
    assert src.samples.status.tolist() == [1, 2, 0, 2, 0, 0, 0, 0]
    assert str(tmp_path / "ph.txt") in src.input_files()


def test_pheno_file_can_override_a_quantitative_fam_column(tmp_path):
    prefix = fam_with_phenotypes(tmp_path, ["1.5"] * 8)
    (tmp_path / "ph.txt").write_text(PHENO)
    assert open_bfile(prefix, pheno=str(tmp_path / "ph.txt")).samples.status.tolist()[:4] == [1, 2, 0, 2]


def test_apply_pheno_overrides_an_in_memory_source(tmp_path):
    path = tmp_path / "m.txt"
    path.write_text("1 0 1\n0 2 2\n1 1 0\n")
    src = open_boost_matrix(path)
    (tmp_path / "ph.txt").write_text("sample1 sample1 1\nsample3 sample3 2\n")
    apply_pheno(src, str(tmp_path / "ph.txt"))
    assert src.samples.status.tolist() == [1, 0, 2]
    assert src.input_files() == [str(path), str(tmp_path / "ph.txt")]


@pytest.mark.parametrize(
    "text, expected",
    [("fam1 ind1 2\nfam2 ind2\n", "line 2: expected FID IID value"), ("fam1 ind1 2\nfam2 ind2 1.5\n", "line 2: phenotype '1.5'")],
)
def test_bad_pheno_file_raises_input_error(tmp_path, text, expected):
    (tmp_path / "ph.txt").write_text(text)
    with pytest.raises(InputError, match=expected) as err:
        read_pheno_file(tmp_path / "ph.txt", np.array(["fam1", "fam2"]), np.array(["ind1", "ind2"]))
    assert err.value.path == tmp_path / "ph.txt" or str(err.value.path) == str(tmp_path / "ph.txt")


@needs_plink
@pytest.mark.plink
def test_pheno_override_matches_plink(tmp_path):
    sim, prefix = small_fileset(tmp_path, n_samples=8)
    (tmp_path / "ph.txt").write_text(PHENO)
    plink("--bfile", prefix, "--pheno", str(tmp_path / "ph.txt"), "--make-bed", "--out", str(tmp_path / "o"), cwd=tmp_path)
    theirs = [{"1": 1, "2": 2}.get(line.split()[5], 0) for line in (tmp_path / "o.fam").read_text().splitlines()]
    assert open_bfile(prefix, pheno=str(tmp_path / "ph.txt")).samples.status.tolist() == theirs


# ---------------------------------------------------------------------------------------------
# Bad binary filesets: every problem is an InputError naming the file


def corrupt(prefix: str, ext: str, transform) -> str:
    path = prefix + ext
    mode = "b" if ext == ".bed" else ""
    with open(path, "r" + mode) as fh:
        data = fh.read()
    with open(path, "w" + mode) as fh:
        fh.write(transform(data))
    return path


def _replace_line(k, new):
    def edit(text):
        lines = text.splitlines(keepends=True)
        lines[k] = new
        return "".join(lines)
    return edit


BAD_FILESETS = {
    "wrong magic": (".bed", lambda d: b"\x00\x00\x01" + d[3:], "not a PLINK 1 .bed"),
    "individual-major": (".bed", lambda d: d[:2] + b"\x00" + d[3:], "individual-major.*--make-bed"),
    "truncated bed": (".bed", lambda d: d[:-5], r"is \d+ bytes but 37 SNPs .* need .* = \d+ bytes; it is truncated"),
    "fam lacks a sample": (".fam", lambda t: "".join(t.splitlines(keepends=True)[1:]), r"x 52 samples \(s.fam\) need 3 \+ 37 x 13"),
    "bim lacks a SNP": (".bim", lambda t: "".join(t.splitlines(keepends=True)[:-1]), r"36 SNPs \(s.bim\) x 53 samples .* larger than expected"),
    "duplicate sample": (".fam", _replace_line(3, "fam1 ind1 0 0 1 2\n"), "line 4: duplicate sample FID\\+IID 'fam1 ind1'"),
    "bim column count": (".bim", _replace_line(2, "1 snp3 0 300 A\n"), "line 3: expected 6 columns .*found 5"),
    "fam column count": (".fam", _replace_line(2, "fam3 ind3 0 0 1 2 extra\n"), "line 3: expected 6 columns .*found 7"),
    "non-numeric bp": (".bim", _replace_line(1, "1 snp2 0 12x A C\n"), "line 2: base-pair position '12x' is not an integer"),
    "empty bim": (".bim", lambda t: "", "the .bim file is empty"),
    "empty fam": (".fam", lambda t: "\n", "the .fam file is empty"),
    "non-UTF-8 bim": (".bim", lambda t: t, "not UTF-8"),
}


@pytest.mark.parametrize("case", sorted(BAD_FILESETS))
def test_bad_binary_fileset_raises_input_error_naming_the_file(tmp_path, case):
    ext, transform, expected = BAD_FILESETS[case]
    _, prefix = small_fileset(tmp_path)
    if case == "non-UTF-8 bim":
        with open(prefix + ".bim", "ab") as fh:
            fh.write(b"1 caf\xe9 0 1 A C\n")
        path = prefix + ".bim"
    else:
        path = corrupt(prefix, ext, transform)
    with pytest.raises(InputError, match=expected) as err:
        open_bfile(prefix)
    # A size mismatch is the .bed's error, whose message names the .bim and .fam it was checked against.
    assert err.value.path == (prefix + ".bed" if "lacks" in case else path)
    assert os.path.basename(path) in str(err.value)


def test_missing_file_raises_input_error(tmp_path):
    with pytest.raises(InputError, match="cannot read the .bim file") as err:
        open_bfile(str(tmp_path / "nothing"))
    assert err.value.path.endswith("nothing.bim")


def test_fileset_without_cases_raises_input_error_naming_the_fam(tmp_path):
    prefix = fam_with_phenotypes(tmp_path, ["1", "1", "-9", "1", "0"])
    with pytest.raises(InputError, match=r"only 0 cases \(phenotype 2\) among the 3 samples with a phenotype") as err:
        load_study(open_bfile(prefix))
    assert err.value.path == prefix + ".fam"


def test_study_without_controls_names_the_pheno_file(tmp_path):
    sim, prefix = small_fileset(tmp_path, n_samples=8)
    (tmp_path / "ph.txt").write_text("fam1 ind1 2\nfam2 ind2 2\n")
    with pytest.raises(InputError, match="only 0 controls") as err:
        load_study(open_bfile(prefix, pheno=str(tmp_path / "ph.txt")))
    assert err.value.path == str(tmp_path / "ph.txt")


def test_a_single_case_is_not_enough_as_in_plink(tmp_path):
    prefix = fam_with_phenotypes(tmp_path, ["1", "1", "2", "1", "1"])
    with pytest.raises(InputError, match="only 1 case .* at least two cases and two controls"):
        load_study(open_bfile(prefix))


def set_sex(tmp_path, name, sexes):
    lines = (tmp_path / f"{name}.fam").read_text().splitlines()
    text = "".join(" ".join(line.split()[:4] + [sx] + line.split()[5:]) + "\n" for line, sx in zip(lines, sexes))
    (tmp_path / f"{name}.fam").write_text(text)


def test_samples_of_unknown_sex_lose_their_phenotype_unless_allowed(tmp_path):
    sim, prefix = small_fileset(tmp_path, n_samples=8)
    set_sex(tmp_path, "s", ["1", "0", "2", "x", "1", "2", "-9", "1"])
    status = sim.samples.status
    src = open_bfile(prefix)
    assert src.samples.status.tolist() == np.where(np.isin(np.arange(8), [1, 3, 6]), 0, status).tolist()
    assert src.pheno_without_sex == int((status[[1, 3, 6]] > 0).sum())
    assert (open_bfile(prefix, allow_no_sex=True).samples.status == status).all()
    (tmp_path / "ph.txt").write_text("".join(f"fam{k} ind{k} 2\n" for k in range(1, 9)))
    assert open_bfile(prefix, pheno=str(tmp_path / "ph.txt")).samples.status.tolist() == [2, 0, 2, 0, 2, 2, 0, 2]


def test_unknown_sex_rule_applies_to_ped_but_not_to_the_boost_matrix(tmp_path):
    ped = "f1 i1 0 0 0 2 A A\nf2 i2 0 0 1 1 A C\n"
    ped_path, map_path = write_ped(tmp_path, ped, "1 s1 0 100\n")
    assert open_ped(ped_path, map_path).samples.status.tolist() == [0, 1]
    assert open_ped(ped_path, map_path, allow_no_sex=True).samples.status.tolist() == [2, 1]
    path = tmp_path / "m.txt"
    path.write_text("1 0 1\n0 2 2\n")
    src = open_boost_matrix(path)
    (tmp_path / "ph.txt").write_text("sample1 sample1 1\nsample2 sample2 2\n")
    apply_pheno(src, str(tmp_path / "ph.txt"))
    assert src.samples.status.tolist() == [1, 2]


@needs_plink
@pytest.mark.plink
def test_unknown_sex_rule_matches_plink(tmp_path):
    """A SNP with an HWE departure, and one polymorphic, only among samples of unknown sex."""
    sim = simulate_study(60, 50, 50, seed=3)
    g = sim.genotypes
    sim.samples.sex[:30] = 0
    nosex_ctrl = np.flatnonzero((sim.samples.sex == 0) & (sim.samples.status == 1))
    g[5, nosex_ctrl] = np.where(np.arange(len(nosex_ctrl)) % 2, 0, 2)
    g[6] = 0
    g[6, :30] = 2
    sim.write(tmp_path / "x")
    log = plink("--bfile", str(tmp_path / "x"), "--hwe", "0.01", "--fast-epistasis", "boost", "--out", str(tmp_path / "x"),
                cwd=tmp_path)
    scanned = [line.split()[1] for line in (tmp_path / "x.epi.cc.summary").read_text().splitlines()[1:]]
    study = load_study(open_bfile(str(tmp_path / "x")), QCOptions(hwe=0.01))
    assert list(study.variants.snp) == scanned and "snp6" in scanned and "snp7" not in scanned
    assert f"{study.layout.n_case} are cases and {study.layout.n_ctrl} are controls" in log.replace("\n", " ")


def test_writer_rejects_genotype_codes_outside_the_format(tmp_path):
    v = VariantTable(np.array(["1"]), np.array(["a"]), np.zeros(1), np.array([1]), np.array(["A"]), np.array(["C"]))
    s = SampleTable(np.array(["f"]), np.array(["i"]), np.array([1], np.int8), np.array([1], np.int8))
    with pytest.raises(ValueError, match="0, 1, 2 or -1"):
        write_bfile(str(tmp_path / "x"), np.array([[3]], np.int8), v, s)


@pytest.mark.parametrize("readers", [1, 3])
@pytest.mark.parametrize("block_bytes", [1, 7, 1 << 20])
def test_iter_bed_rows_reads_the_bed_rows_in_reused_blocks(tmp_path, monkeypatch, block_bytes, readers):
    """The .bed is read block by block into two reused buffers (prefetched, each block by
    several threads at once), not mapped; with a keep mask only kept rows are read and blocks
    without one are skipped."""
    from gboost.readers import plink_bed

    prefix = str(tmp_path / "s")
    simulate_study(37, 9, 8, seed=5).write(prefix)
    src = open_bfile(prefix)
    row = (len(src.samples) + 3) // 4
    whole = np.fromfile(prefix + ".bed", np.uint8, offset=3).reshape(37, row)
    monkeypatch.setattr(plink_bed, "READ_BLOCK_BYTES", block_bytes * row)
    monkeypatch.setattr(plink_bed, "BED_READERS", readers)
    monkeypatch.setattr(plink_bed, "MIN_READ_BYTES", 1)  # pieces of a row: every reader has work
    seen = []
    for start, data in src.iter_bed_rows(4):
        np.testing.assert_array_equal(data, whole[start:start + len(data)])
        seen.append((start, len(data)))
    assert seen[0][0] == 0 and sum(k for _, k in seen) == 37
    assert all(k <= min(4, block_bytes) for _, k in seen)
    keep = np.zeros(37, bool)
    keep[[0, 1, 5, 20, 21, 36]] = True
    starts = []
    for start, data in src.iter_bed_rows(4, keep):
        sel = keep[start:start + len(data)]
        assert sel.any()
        np.testing.assert_array_equal(data[sel], whole[start:start + len(data)][sel])
        starts.append(start)
    assert len(starts) == len({s // min(4, block_bytes) for s in np.flatnonzero(keep)})


@pytest.mark.parametrize("seed", range(40))
def test_bed_read_pieces_cover_each_kept_row_once(seed):
    """A block's kept rows are cut into at most ``readers`` parts for its reading threads: every
    kept row in exactly one part, no other row, parts of nearly equal size, none below the minimum
    read unless the rows run out."""
    from gboost.readers.plink_bed import _pieces, _runs

    rng = np.random.default_rng(seed)
    n_rows, row, readers = int(rng.integers(1, 60)), int(rng.integers(1, 9)), int(rng.integers(1, 6))
    keep = rng.random(n_rows) < rng.choice([0.2, 0.7, 1.0])
    first = int(rng.integers(0, 1000))
    runs = _runs(keep, first)
    min_rows = int(rng.integers(1, 5))
    parts = _pieces(runs, row, readers, min_bytes=min_rows * row)
    assert len(parts) <= readers
    got = [r for part in parts for a, b in part for r in range(a, b)]
    assert sorted(got) == list(first + np.flatnonzero(keep)) and len(got) == len(set(got))
    sizes = [sum(b - a for a, b in part) for part in parts]
    per = max(-(-int(keep.sum()) // readers), min_rows)
    assert all(size == per for size in sizes[:-1]) and (not sizes or 0 < sizes[-1] <= per)


def _per_token(tokens, lines, path):
    """The per-token reading (as the decoders read before they judged each distinct token once)."""
    from gboost.readers.pheno import MISSING_PHENO, case_control_code, strtod_prefix

    if all(is_case_control_token(t) for t in tokens):
        return np.array([case_control_code(t) for t in tokens], dtype=np.int8), None
    out = np.full(len(tokens), np.nan)
    for k, (t, line) in enumerate(zip(tokens, lines)):
        v = strtod_prefix(t)
        if v is None or v == MISSING_PHENO:
            continue
        if not np.isfinite(v):
            raise InputError(path, f"line {line}: phenotype {t!r} is not a finite number")
        out[k] = v
    return np.where(np.isnan(out), 0, 1).astype(np.int8), out


@pytest.mark.parametrize("column", [
    ["1", "2", "2", "0", "-9", "x", "1", "2"],                     # case/control, every missing kind
    ["2"] * 5 + ["1"] * 5,
    [],
    ["1", "2", "1.5", "-9", "1.5", "abc", "3", "2"],               # one value makes it quantitative
    ["0.25", "-9", "0.25", "1e-3", "0x1p-2", "-0", "abc"],
])
def test_phenotype_columns_decode_as_token_by_token(column):
    """decode_phenotype judges each distinct token once (2.32M samples took ~1 s token by token on
    the path before the first tile): the status and trait are those of the per-token reading."""
    from gboost.readers.pheno import decode_phenotype

    lines = list(range(2, 2 + len(column)))
    status, trait = decode_phenotype(column, lines, "x.fam")
    want_status, want_trait = _per_token(column, lines, "x.fam")
    assert status.dtype == np.int8 and np.array_equal(status, want_status)
    assert (trait is None) == (want_trait is None)
    if trait is not None:
        assert np.array_equal(trait, want_trait, equal_nan=True)


@pytest.mark.parametrize("bad", ["inf", "nan", "1e999"])
def test_a_non_finite_phenotype_is_refused_at_its_first_line(bad):
    from gboost.readers.pheno import decode_case_control, decode_phenotype

    column = ["1.5", "2", bad, "0.5", bad]
    with pytest.raises(InputError, match=rf"line 4: phenotype '{bad}' is not a finite number"):
        decode_phenotype(column, [2, 3, 4, 5, 6], "x.fam")
    with pytest.raises(InputError, match=r"line 2: phenotype '1.5' is not case/control"):
        decode_case_control(column, [2, 3, 4, 5, 6], "x.psam")
