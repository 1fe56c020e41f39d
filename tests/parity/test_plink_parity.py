"""Parity with PLINK 1.9 --fast-epistasis boost, the oracle (docs/DESIGN.md §3.3).

Each study is scanned by ``gboost scan`` (the real CLI) and by ``plink1.9``; ``pairs.epi.cc`` and
``pairs.epi.cc.summary`` must equal PLINK's files byte for byte, and ``pairs.tsv`` must hold exactly
PLINK's rows whose P <= epi1, with the same DF and STAT/P equal to PLINK's printed digits.
"""
from __future__ import annotations

import os

import numpy as np
import pytest

from gboost.data.simulate import PlantedPair, simulate_study, write_bfile
from tests.helpers import NO_PLINK, PLINK, ROOT, assert_parity, read, run_both

SAMPLE = os.path.join(ROOT, "sample_data", "sample")

pytestmark = [
    pytest.mark.plink,
    pytest.mark.skipif(PLINK is None, reason=NO_PLINK),
]


@pytest.fixture(scope="module")
def awkward_study(tmp_path_factory):
    """Missing calls, several chromosomes (with X, which PLINK skips, and XY, which it keeps),
    monomorphic / all-het / all-missing SNPs, a long SNP ID, unbalanced classes, planted pairs."""
    sim = simulate_study(420, 230, 311, seed=2024, chromosomes=["1", "2", "3", "X", "XY", "5"], missing_rate=0.02,
                         planted=[PlantedPair(3, 250, "xor", 6.0), PlantedPair(40, 90, "threshold", 10.0)])
    g = sim.genotypes.copy()
    g[10] = 1  # all heterozygous: one genotype class, skipped
    g[11] = np.where(g[11] < 0, -1, 0)  # monomorphic with missing calls
    g[12] = -1  # all missing
    g[13, :] = np.where(np.arange(g.shape[1]) % 2 == 0, 0, 2)  # both homozygotes, no het: kept
    variants = sim.variants
    variants.snp = variants.snp.copy()
    variants.snp[100] = "rs_very_long_identifier_1"
    prefix = str(tmp_path_factory.mktemp("awkward") / "study")
    write_bfile(prefix, g, variants, sim.samples)
    return prefix


@pytest.mark.parametrize("epi1", [None, 1e-2])
def test_awkward_study_matches_plink(awkward_study, tmp_path, epi1):
    out, plink = run_both(awkward_study, tmp_path, epi1)
    rows, reported = assert_parity(out, plink, epi1 or 5e-6, min_rows=1 if epi1 is None else 500)
    if epi1 is None:
        assert reported >= 1  # a planted pair at least


@pytest.mark.parametrize("epi1", [None, 1e-2])
def test_sample_study_matches_plink(tmp_path, epi1):
    if not os.path.exists(SAMPLE + ".bed"):
        pytest.fail("sample_data/sample.bed is missing")
    out, plink = run_both(SAMPLE, tmp_path, epi1)
    rows, reported = assert_parity(out, plink, epi1 or 5e-6, min_rows=3 if epi1 is None else 1000)


def test_non_ascii_snp_ids_pad_as_plink_does(tmp_path):
    """PLINK sizes the SNP columns by bytes (strlen), not characters: the longest ID here has 15
    characters and 20 UTF-8 bytes, so the columns are 22 wide, and IDs with multi-byte characters
    get fewer spaces. Both files must equal PLINK's byte for byte."""
    sim = simulate_study(60, 100, 100, seed=5, chromosomes=2, missing_rate=0.01,
                         planted=[PlantedPair(1, 40, "threshold", 8.0)])
    variants = sim.variants
    variants.snp = variants.snp.astype(object)
    for k, name in {3: "rs_ünïcödé_lång", 10: "β2", 40: "snp_α"}.items():
        variants.snp[k] = name
    prefix = str(tmp_path / "utf8")
    write_bfile(prefix, sim.genotypes, variants, sim.samples)
    out, plink = run_both(prefix, tmp_path, 0.05)
    summary = read(out / "pairs.epi.cc.summary")
    assert summary.splitlines()[0].index("SNP") + 3 == 5 + 22  # "CHR" (4) + space + 22 bytes
    assert "   1   rs_ünïcödé_lång " in summary and "   1                    β2 " in summary
    rows, _ = assert_parity(out, plink, 0.05, min_rows=20)
    assert any("ünï" in line for line in read(out / "pairs.epi.cc").splitlines()[1:])


def test_equal_epi1_and_epi2_and_qc_flags_match_plink(awkward_study, tmp_path):
    """epi1 == epi2 triggers PLINK's nudged summary threshold; QC flags must drop the same SNPs."""
    out, plink = run_both(awkward_study, tmp_path, 1e-2, extra=["--epi2", "0.01", "--maf", "0.1", "--geno", "0.05"])
    assert_parity(out, plink, 1e-2, min_rows=100)


@pytest.fixture(scope="module")
def chr_named_study(tmp_path_factory):
    """Chromosomes 1, 2, X, XY and MT, named chr1, chr2, chrX, chrXY, chrMT in the .bim."""
    sim = simulate_study(160, 150, 160, seed=77, chromosomes=["1", "2", "X", "XY", "MT"], missing_rate=0.01,
                         planted=[PlantedPair(2, 30, "threshold", 8.0)])
    variants = sim.variants
    variants.chrom = np.array(["chr" + c for c in variants.chrom], dtype=object)
    prefix = str(tmp_path_factory.mktemp("chrnamed") / "study")
    write_bfile(prefix, sim.genotypes, variants, sim.samples)
    return prefix


@pytest.mark.parametrize("spec", ["chr1-chr2", "1-X", "chr2-MT", "2-XY", "chrXY,1", "MT,chr1"])
def test_chr_names_and_ranges_match_plink(chr_named_study, tmp_path, spec):
    """PLINK's --chr takes ranges whose ends are any standard code (chr prefix, X/Y/XY/MT = 23-26):
    gboost refused `chr1-chr2` and `1-X` ("bad range") before bench/parity_sweep.py --more-flags."""
    out, plink = run_both(chr_named_study, tmp_path, 1e-2, extra=["--chr", spec])
    assert_parity(out, plink, 1e-2, min_rows=10)
