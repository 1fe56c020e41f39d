"""QC and loading (docs/DESIGN.md §3.1): PLINK 1.9's --mind/--geno/--hwe/--maf/--chr/--extract/--exclude and
--fast-epistasis's skips, compared with plink1.9 itself; the encoded Study."""
from __future__ import annotations

import re
from fractions import Fraction
from math import factorial

import numpy as np
import pytest

from gboost.data.encode import decode_planes, genotype_counts
from gboost.errors import InputError
from gboost.readers.plink_bed import open_bfile
from gboost.data.load import load_study, plink_chrom_code
from gboost.stats.hwe import hwe_exact_p, hwe_exact_pvalues
from gboost.data.simulate import simulate_study
from gboost.data.study import QCOptions
from tests.helpers import QC_CASES, needs_plink, plink


# ---------------------------------------------------------------------------------------------
# Hardy-Weinberg exact test


def hwe_bruteforce(het: int, hom1: int, hom2: int) -> float:
    """Exact HWE p by enumerating Levene's distribution with rational arithmetic."""
    n = het + hom1 + hom2
    rare = 2 * min(hom1, hom2) + het
    probs = {}
    for h in range(rare % 2, rare + 1, 2):
        r, c = (rare - h) // 2, n - h - (rare - h) // 2
        if c < 0:
            continue
        probs[h] = Fraction(factorial(n) * 2**h * factorial(rare) * factorial(2 * n - rare),
                            factorial(r) * factorial(h) * factorial(c) * factorial(2 * n))
    return float(sum(p for p in probs.values() if p <= probs[het]))


@pytest.mark.parametrize("counts", [(0, 0, 0), (1, 0, 0), (0, 5, 0), (10, 5, 5), (0, 10, 10), (20, 0, 1),
                                    (2, 6, 2), (1, 1, 1), (4, 3, 3), (50, 20, 30), (0, 60, 3), (57, 21, 22)])
def test_hwe_exact_p_equals_enumeration(counts):
    het, hom1, hom2 = counts
    expected = 1.0 if sum(counts) == 0 else hwe_bruteforce(het, hom1, hom2)
    assert hwe_exact_p(het, hom1, hom2) == pytest.approx(expected, rel=1e-12)


def test_hwe_exact_p_counts_equally_likely_het_counts_as_tail():
    # het 2 and het 0 are equally likely for (2, 1, 1)/(0, 2, 2): both in each other's tail.
    assert hwe_bruteforce(0, 2, 2) == pytest.approx(hwe_exact_p(0, 2, 2))
    assert hwe_exact_p(1, 0, 0) == 1.0


def test_hwe_exact_p_is_symmetric_in_the_homozygotes_and_tiny_far_in_the_tail():
    assert hwe_exact_p(30, 100, 5) == hwe_exact_p(30, 5, 100)
    assert 0 <= hwe_exact_p(0, 5000, 5000) < 1e-300
    assert hwe_exact_pvalues(np.array([10, 0]), np.array([5, 10]), np.array([5, 10])).tolist() == [
        pytest.approx(hwe_bruteforce(10, 5, 5)), pytest.approx(hwe_bruteforce(0, 10, 10))]


def _hwe_walked_to_underflow(het, hom1, hom2):
    """hwe_exact_p as it was before its walks were cut short: every walk runs until the ratio underflows."""
    from gboost.stats.hwe import SMALL_EPSILON, _ratio

    def walk(mode, rare, n, step, het):
        total, observed, r, h = 0.0, 0.0, 1.0, mode
        while 0 <= h + step <= rare:
            r *= _ratio(h, rare, n, step)
            h += step
            if h == het:
                observed = r
            if r == 0.0:
                break
            total += r
        return total, observed

    def tail(mode, rare, n, step, limit):
        total, r, h = 0.0, 1.0, mode
        while 0 <= h + step <= rare:
            r *= _ratio(h, rare, n, step)
            h += step
            if r == 0.0:
                break
            if r <= limit:
                total += r
        return total

    n = het + hom1 + hom2
    if n == 0:
        return 1.0
    rare = 2 * min(hom1, hom2) + het
    mode = int(rare * (2 * n - rare) / (2 * n))
    if (mode - rare) % 2 != 0:
        mode += 1
    mode = min(mode, rare)
    total, observed = 1.0, (1.0 if het == mode else 0.0)
    up, down = walk(mode, rare, n, 2, het), walk(mode, rare, n, -2, het)
    total += up[0] + down[0]
    observed = max(observed, up[1], down[1])
    limit = observed * (1.0 + SMALL_EPSILON)
    t = (1.0 if 1.0 <= limit else 0.0) + tail(mode, rare, n, 2, limit) + tail(mode, rare, n, -2, limit)
    return min(1.0, t / total)


def test_hwe_walks_stopped_where_the_sums_are_final_give_the_same_bits(rng):
    """The walks stop once a term is below 2^-55 of its sum (it and every later one
    round away); the p values are those of walking on to underflow, bit for bit, over sample
    sizes from 1 to 20,000, common and rare alleles, HWE and far from it."""
    cases = [(0, 0, 0), (1, 0, 0), (0, 7, 0), (0, 5, 5), (2, 1000, 0), (0, 1000, 1), (300, 0, 0)]
    for n in (1, 2, 3, 7, 40, 300, 2500, 20000):
        for _ in range(60):
            p, f = rng.random() ** 2, rng.random()
            het = int(rng.binomial(n, min(1.0, 2 * p * (1 - p) * (0.3 + f))))
            hom1 = int(rng.binomial(n - het, rng.random()))
            cases.append((het, hom1, n - het - hom1))
    het, hom1, hom2 = (np.array(c, np.int64) for c in zip(*cases))
    got = hwe_exact_pvalues(het, hom1, hom2)
    want = np.array([_hwe_walked_to_underflow(*c) for c in cases])
    np.testing.assert_array_equal(got.view(np.int64), want.view(np.int64))


@needs_plink
@pytest.mark.plink
def test_hwe_exact_p_matches_plink_hardy(tmp_path):
    sim = simulate_study(300, 400, 400, seed=5, maf_range=(0.01, 0.5))
    rng = np.random.default_rng(1)
    g = sim.genotypes
    drift = rng.random(g.shape) < rng.uniform(0, 0.3, len(g))[:, None]  # push calls to homozygotes
    g[drift & (g == 1)] = 2 * rng.integers(0, 2, int((drift & (g == 1)).sum()))
    sim.write(tmp_path / "h")
    plink("--bfile", str(tmp_path / "h"), "--hardy", "--out", str(tmp_path / "h"), cwd=tmp_path)
    rows = [line.split() for line in (tmp_path / "h.hwe").read_text().splitlines()[1:]]
    rows = [r for r in rows if r[2] == "UNAFF"]
    geno = np.array([[int(x) for x in r[5].split("/")] for r in rows])
    theirs = np.array([float(r[8]) for r in rows])
    ours = hwe_exact_pvalues(geno[:, 1], geno[:, 0], geno[:, 2])
    assert theirs.min() < 1e-15 and (theirs == 1).any(), "the fixture should span the whole range"
    np.testing.assert_allclose(ours, theirs, rtol=6e-4)  # PLINK prints 4 significant digits


# ---------------------------------------------------------------------------------------------
# Chromosome codes


@pytest.mark.parametrize("code, canonical", [("1", "1"), ("chr1", "1"), ("CHR22", "22"), ("01", "1"), ("X", "23"),
                                             ("x", "23"), ("chrX", "23"), ("Y", "24"), ("XY", "25"), ("chrM", "26"),
                                             ("MT", "26"), ("26", "26"), ("0", "0"), ("contigA", "contigA")])
def test_plink_chrom_code(code, canonical):
    assert plink_chrom_code(code) == canonical


# ---------------------------------------------------------------------------------------------
# A fileset exercising every QC rule, compared with plink1.9


def plink_count(log: str, pattern: str) -> int:
    m = re.search(pattern, log)
    return int(m.group(1)) if m else 0


@needs_plink
@pytest.mark.plink
@pytest.mark.parametrize("case", sorted(QC_CASES))
def test_kept_snps_samples_and_counts_match_plink_fast_epistasis(qc_fileset, case):
    tmp, prefix = qc_fileset
    flags, qc = QC_CASES[case]
    if qc.extract:
        qc = QCOptions(extract=str(tmp / qc.extract), exclude=str(tmp / qc.exclude), geno=qc.geno)
    log = plink("--bfile", prefix, *flags, "--fast-epistasis", "boost", "--out", str(tmp / case), cwd=tmp)
    plink("--bfile", prefix, *flags, "--make-just-fam", "--out", str(tmp / case), cwd=tmp)
    summary = [line.split()[1] for line in (tmp / f"{case}.epi.cc.summary").read_text().splitlines()[1:]]
    kept_fam = [line.split() for line in (tmp / f"{case}.fam").read_text().splitlines()]
    scanned_iids = {t[1] for t in kept_fam if t[5] in ("1", "2")}

    study = load_study(open_bfile(prefix), qc, block_snps=64)

    assert list(study.variants.snp) == summary  # QC and --fast-epistasis's skips, in file order
    assert set(study.samples.iid) == scanned_iids
    r = study.qc
    assert r.samples_mind == plink_count(log, r"(\d+) (?:people|person) removed due to missing genotype data")
    assert r.snps_geno == plink_count(log, r"(\d+) variants? removed due to missing genotype data")
    assert r.snps_hwe == plink_count(log, r"--hwe: (\d+) variants? removed")
    assert r.snps_maf == plink_count(log, r"(\d+) variants? removed due to minor allele threshold")
    assert r.snps_non_autosomal + r.snps_monomorphic == plink_count(log, r"Skipping (\d+) monomorphic/non-autosomal")
    passed = plink_count(log, r"(\d+) variants? and \d+ people pass filters and QC")
    assert r.snps_in - r.snps_chr_filter - r.snps_geno - r.snps_hwe - r.snps_maf == passed


@pytest.mark.parametrize("case", sorted(QC_CASES))
@pytest.mark.parametrize("block_snps", [64, 4096])
def test_bed_bytes_encoded_directly_equal_the_decoded_calls(qc_fileset, monkeypatch, case, block_snps):
    """A .bed is encoded from its own 2-bit codes, its per-SNP QC counted from planes of the QC
    samples; the same study (kept SNPs and samples, planes, counts, QC report) as through
    bed-reader's decoded int8 calls, under every QC case, on a fileset with every kind of SNP and
    sample."""
    from gboost.readers.plink_bed import BedSource

    tmp, prefix = qc_fileset
    qc = QC_CASES[case][1]
    if qc.extract:
        qc = QCOptions(extract=str(tmp / qc.extract), exclude=str(tmp / qc.exclude), geno=qc.geno)
    direct = load_study(open_bfile(prefix), qc, block_snps=block_snps)
    monkeypatch.delattr(BedSource, "iter_bed_rows")
    decoded = load_study(open_bfile(prefix), qc, block_snps=block_snps)
    assert direct.planes.dtype == decoded.planes.dtype and (direct.planes == decoded.planes).all()
    assert (direct.counts == decoded.counts).all()
    assert list(direct.variants.snp) == list(decoded.variants.snp)
    assert list(direct.samples.iid) == list(decoded.samples.iid)
    assert direct.qc.as_dict() == decoded.qc.as_dict()
    assert direct.qc.samples_missing_pheno > 0 and direct.qc.snps_monomorphic > 0  # the fileset's hard cases
    geno, is_case = decode_planes(direct.planes, direct.layout)
    assert (direct.counts == genotype_counts(geno, is_case)).all()


@needs_plink
@pytest.mark.plink
@pytest.mark.parametrize("flags, qc", [
    (["--maf", "0.05"], QCOptions(maf=0.05)),
    (["--geno", "0.05"], QCOptions(geno=0.05)),
    (["--hwe", "1e-4"], QCOptions(hwe=1e-4)),
    (["--mind", "0.1"], QCOptions(mind=0.1)),
])
def test_qc_alone_matches_plink_write_snplist(qc_fileset, flags, qc):
    """Before the scan's own skips: PLINK's --write-snplist minus X/Y minus monomorphic SNPs."""
    tmp, prefix = qc_fileset
    plink("--bfile", prefix, *flags, "--write-snplist", "--out", str(tmp / "w"), cwd=tmp)
    theirs = (tmp / "w.snplist").read_text().split()
    study = load_study(open_bfile(prefix), qc)
    r = study.qc
    assert len(theirs) == r.snps_in - r.snps_geno - r.snps_hwe - r.snps_maf
    assert set(study.variants.snp) <= set(theirs)
    assert len(theirs) - study.n_snps == r.snps_non_autosomal + r.snps_monomorphic


# ---------------------------------------------------------------------------------------------
# Behaviour that needs no oracle


@pytest.fixture
def study_source():
    sim = simulate_study(120, 45, 38, seed=8, chromosomes=["1", "2", "X", "XY", "MT"], missing_rate=0.03)
    sim.genotypes[3] = 1  # one genotype class
    return sim


def test_study_samples_are_cases_and_controls_in_plane_order(study_source):
    sim = study_source
    sim.samples.status[[0, 5]] = 0
    study = load_study(sim.source())
    assert study.layout.n_case == int((sim.samples.status == 2).sum())
    assert study.layout.n_ctrl == int((sim.samples.status == 1).sum())
    status = study.samples.status
    assert (status[: study.layout.n_ctrl] == 1).all() and (status[study.layout.n_ctrl :] == 2).all()
    iid_row = {iid: k for k, iid in enumerate(sim.samples.iid)}
    cols = np.array([iid_row[i] for i in study.samples.iid])
    assert (np.diff(cols[: study.layout.n_ctrl]) > 0).all()  # file order within each class
    snp_row = {s: k for k, s in enumerate(sim.variants.snp)}
    rows = np.array([snp_row[s] for s in study.variants.snp])
    expected = sim.genotypes[rows][:, cols]
    geno, is_case = decode_planes(study.planes, study.layout)
    assert (geno == expected).all()
    assert (study.counts == genotype_counts(expected, is_case)).all()
    assert study.source_files == sim.source().input_files()


def test_x_and_y_and_monomorphic_snps_are_skipped_but_xy_mt_kept(study_source):
    sim = study_source
    study = load_study(sim.source())
    chrom = sim.variants.chrom
    assert set(study.variants.chrom) == {"1", "2", "XY", "MT"}
    assert study.qc.snps_non_autosomal == int((chrom == "X").sum())
    assert study.qc.snps_monomorphic == 1 and sim.variants.snp[3] not in set(study.variants.snp)
    assert any("X or Y skipped" in m for m in study.qc.messages)


def test_phenotype_missing_samples_count_in_geno_but_not_in_the_scan(study_source):
    sim = study_source
    g = sim.genotypes
    sim.samples.status[:10] = 0
    g[10] = 0
    g[10, 20:30] = 1     # scanned samples: polymorphic
    g[10, :10] = -1      # 10 missing calls, all in samples without phenotype: rate 10/83
    g[11] = 0
    g[11, :10] = 2       # polymorphic only through samples without phenotype
    study = load_study(sim.source(), QCOptions(geno=0.1))
    kept = set(study.variants.snp)
    assert sim.variants.snp[10] not in kept and study.qc.snps_geno >= 1
    assert sim.variants.snp[11] not in kept
    assert study.n_samples == 73 and study.qc.samples_missing_pheno == 10


def test_results_do_not_depend_on_the_block_size_and_blocks_stay_small(study_source):
    sim = study_source
    biggest = []

    class Watching:
        def __init__(self, src):
            self.src, self.path, self.variants, self.samples = src, src.path, src.variants, src.samples

        def iter_blocks(self, sample_index, block_snps):
            for start, g in self.src.iter_blocks(sample_index, block_snps):
                biggest.append(g.shape[0])
                yield start, g

        def input_files(self):
            return self.src.input_files()

    qc = QCOptions(maf=0.1, geno=0.05, mind=0.2, hwe=1e-3)
    small = load_study(Watching(sim.source()), qc, block_snps=7)
    large = load_study(sim.source(), qc, block_snps=4096)
    assert max(biggest) == 7
    assert (small.planes == large.planes).all() and list(small.variants.snp) == list(large.variants.snp)
    assert small.qc.as_dict() == large.qc.as_dict()


def test_log_receives_every_qc_message(study_source):
    seen = []
    study = load_study(study_source.source(), QCOptions(maf=0.05, geno=0.1), log=seen.append)
    assert seen == study.qc.messages
    assert any(m.startswith("--maf 0.05:") for m in seen) and any(m.startswith("--geno 0.1:") for m in seen)


def test_fewer_than_two_snps_left_raises_input_error_naming_the_input(study_source, tmp_path):
    (tmp_path / "one.txt").write_text("snp1\n")
    src = study_source.source("study.bed")
    with pytest.raises(InputError, match="only 1 SNP of 120 left") as err:
        load_study(src, QCOptions(extract=str(tmp_path / "one.txt")))
    assert err.value.path == "study.bed"
    with pytest.raises(InputError, match="no SNP of 120 left"):
        load_study(src, QCOptions(maf=0.51))


def test_split_chromosome_raises_input_error_like_plink(study_source):
    sim = study_source
    sim.variants.chrom[5] = "2"  # a chromosome-2 SNP inside chromosome 1: chromosome 1 resumes after it
    with pytest.raises(InputError, match="SNP snp7 .row 7.: chromosome 1 appears again after other chromosomes"):
        load_study(sim.source("s.bed"))


def test_missing_extract_file_raises_input_error(study_source, tmp_path):
    with pytest.raises(InputError, match="cannot read the --extract file") as err:
        load_study(study_source.source(), QCOptions(extract=str(tmp_path / "none.txt")))
    assert err.value.path == str(tmp_path / "none.txt")


def test_mind_ignores_non_males_y_calls():
    sim = simulate_study(40, 20, 20, seed=2, chromosomes=["1", "Y"])
    y = sim.variants.chrom == "Y"
    female = np.flatnonzero(sim.samples.sex == 2)
    sim.genotypes[np.ix_(y, female)] = -1  # females' Y calls missing, as in real data
    study = load_study(sim.source(), QCOptions(mind=0.05))
    assert study.qc.samples_mind == 0
    sim.samples.sex[female] = 1  # now they are "males" missing all their Y calls
    assert load_study(sim.source(), QCOptions(mind=0.05)).qc.samples_mind == len(female)


def test_hwe_uses_founder_controls_only(study_source):
    sim = study_source
    g = sim.genotypes
    cases = sim.samples.status == 2
    g[20, cases] = np.where(np.arange(int(cases.sum())) % 2, 0, 2)  # departure in cases only
    g[20, ~cases] = sim.genotypes[21, ~cases]
    study = load_study(sim.source(), QCOptions(hwe=1e-3))
    assert sim.variants.snp[20] in set(study.variants.snp)
    controls = np.flatnonzero(~cases)
    g[22, controls] = np.where(np.arange(len(controls)) % 2, 0, 2)  # departure in controls
    assert sim.variants.snp[22] not in set(load_study(sim.source(), QCOptions(hwe=1e-3)).variants.snp)


@needs_plink
@pytest.mark.plink
@pytest.mark.parametrize("case", ["none", "all"])
def test_whole_scan_of_the_qc_fileset_equals_plinks_files(qc_fileset, case):
    """End to end through `gboost scan`: non-founders, missing phenotypes, sex chromosomes, XY/MT/0."""
    from gboost.cli import main

    tmp, prefix = qc_fileset
    flags, _ = QC_CASES[case]
    out = tmp / f"scan_{case}"
    assert main(["scan", "--bfile", prefix, "--out", str(out), "--device", "cpu", "--quiet", "--epi1", "0.01", *flags]) == 0
    plink("--bfile", prefix, "--fast-epistasis", "boost", "--epi1", "0.01", "--out", str(tmp / f"p_{case}"), *flags, cwd=tmp)
    assert (out / "pairs.epi.cc").read_text() == (tmp / f"p_{case}.epi.cc").read_text()
    assert (out / "pairs.epi.cc.summary").read_text() == (tmp / f"p_{case}.epi.cc.summary").read_text()


def test_a_study_whose_planes_exceed_memory_is_refused_before_reading(tmp_path, monkeypatch, capsys):
    """Say so up front in one line naming the .bed, with what would fit (a --chr that
    does), instead of swapping or being killed; nothing is written. The --chr it names then runs
    under the same memory."""
    import re

    from gboost.cli import main
    from gboost.data.load import SCAN_BYTES_FIXED, SCAN_BYTES_PER_SNP, MEMORY_SHARE
    from gboost.data.simulate import simulate_study

    prefix = str(tmp_path / "big")
    simulate_study(400, 300, 300, seed=21, chromosomes=4).write(prefix)
    # 600 samples: 3 x (5 + 5) words x 8 bytes of planes a SNP, and what the scan holds beside them
    per_snp = 240 + SCAN_BYTES_PER_SNP
    limit = int((SCAN_BYTES_FIXED + 250 * per_snp) / MEMORY_SHARE) + 1
    monkeypatch.setenv("GBOOST_MEMORY_LIMIT", str(limit))
    out = tmp_path / "o"
    assert main(["scan", "--bfile", prefix, "--out", str(out), "--quiet", "--device", "cpu"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith(f"gboost: error: {prefix}.bed: ") and "400 SNPs x 600 samples needs" in err[0]
    assert "about 250 SNPs fit" in err[0] and "--part k/n splits the time, not the memory" in err[0]
    assert not out.exists()
    chosen = re.search(r"--chr (\S+) \(([\d,]+) SNPs\) would", err[0])
    assert chosen and chosen.group(1) == "1-2" and 150 < int(chosen.group(2).replace(",", "")) <= 250
    assert main(["scan", "--bfile", prefix, "--out", str(out), "--quiet", "--device", "cpu",
                 "--chr", chosen.group(1), "--calibration-pairs", "0"]) == 0
    monkeypatch.setenv("GBOOST_MEMORY_LIMIT", str(2 * limit))
    assert main(["scan", "--bfile", prefix, "--out", str(tmp_path / "o2"), "--quiet", "--device", "cpu",
                 "--calibration-pairs", "0"]) == 0


def test_the_memory_message_says_when_not_even_one_chromosome_fits(tmp_path, monkeypatch, capsys):
    from gboost.cli import main
    from gboost.data.load import SCAN_BYTES_FIXED, MEMORY_SHARE
    from gboost.data.simulate import simulate_study

    prefix = str(tmp_path / "big")
    simulate_study(100, 30, 30, seed=2, chromosomes=2).write(prefix)
    monkeypatch.setenv("GBOOST_MEMORY_LIMIT", str(int(SCAN_BYTES_FIXED / MEMORY_SHARE)))
    assert main(["scan", "--bfile", prefix, "--out", str(tmp_path / "o"), "--quiet", "--device", "cpu"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "about 0 SNPs fit" in err[0] and "would" not in err[0]
    assert not (tmp_path / "o").exists()