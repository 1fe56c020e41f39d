"""The simulator: reproducible, planted penetrance visible in the data, valid PLINK output."""
from __future__ import annotations

import argparse
import filecmp
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from gboost.cli import simulate as cli_simulate
from gboost.readers.plink_bed import open_bfile
from gboost.data.simulate import PlantedPair, hwe_frequencies, pair_factors, simulate_study

from tests.helpers import ROOT
PLINK = shutil.which("plink1.9") or shutil.which("plink")


def test_same_seed_gives_the_same_study_and_another_seed_does_not():
    kw = dict(chromosomes=3, missing_rate=0.02, planted=[PlantedPair(1, 50, "xor", 3.0)])
    a = simulate_study(200, 60, 70, seed=9, **kw)
    b = simulate_study(200, 60, 70, seed=9, **kw)
    c = simulate_study(200, 60, 70, seed=10, **kw)
    assert (a.genotypes == b.genotypes).all()
    assert (a.samples.status == b.samples.status).all() and (a.samples.sex == b.samples.sex).all()
    assert (a.variants.bp == b.variants.bp).all() and list(a.variants.a1) == list(b.variants.a1)
    assert not (a.genotypes == c.genotypes).all()


def test_the_missing_rate_masks_calls_without_changing_the_others():
    full = simulate_study(300, 100, 100, seed=4)
    holey = simulate_study(300, 100, 100, seed=4, missing_rate=0.05)
    called = holey.genotypes >= 0
    assert abs((~called).mean() - 0.05) < 0.005
    assert (holey.genotypes[called] == full.genotypes[called]).all()
    assert (full.genotypes >= 0).all()


def test_layout_is_realistic():
    sim = simulate_study(1000, 10, 10, seed=1, chromosomes=5, maf_range=(0.05, 0.5))
    chrom, bp = sim.variants.chrom, sim.variants.bp
    assert list(dict.fromkeys(chrom.tolist())) == ["1", "2", "3", "4", "5"]
    counts = [int((chrom == c).sum()) for c in "12345"]
    assert counts[0] > counts[4] and sum(counts) == 1000  # proportional to length: chr1 > chr5
    for c in "12345":
        pos = bp[chrom == c]
        assert (np.diff(pos) > 0).all() and pos.min() >= 10_000 and pos.max() < 249_250_621
    assert ((sim.maf >= 0.05) & (sim.maf <= 0.5)).all()
    assert (sim.variants.a1 != sim.variants.a2).all()
    assert len(set(sim.variants.snp)) == 1000


@pytest.mark.parametrize("model", ["xor", "additive"])
@pytest.mark.parametrize("mafs", [(0.5, 0.5), (0.2, 0.35), (0.05, 0.45)])
def test_pure_models_have_no_marginal_effect_and_the_requested_strength(model, mafs):
    h = pair_factors(model, 4.0, *mafs)
    fi, fj = hwe_frequencies(mafs[0]), hwe_frequencies(mafs[1])
    np.testing.assert_allclose(h @ fj, 1.0, atol=1e-12)  # mean factor at each genotype of SNP i
    np.testing.assert_allclose(fi @ h, 1.0, atol=1e-12)
    assert h.max() / h.min() == pytest.approx(4.0)
    assert h.min() > 0


def test_xor_factor_is_high_when_both_or_neither_snp_is_heterozygous():
    h = pair_factors("xor", 3.0, 0.5, 0.5)
    assert h[1, 1] > 1 and h[0, 0] > 1 and h[0, 1] < 1 and h[1, 0] < 1


def test_threshold_model_has_marginal_effects():
    h = pair_factors("threshold", 5.0, 0.3, 0.3)
    assert h.tolist() == [[1, 1, 1], [1, 5, 5], [1, 5, 5]]
    marginal = h @ hwe_frequencies(0.3)
    assert marginal[2] > marginal[0]


def genotype_table(sim, pair):
    """Case and control counts (3 x 3 each) of a planted pair's genotypes."""
    gi, gj = sim.genotypes[pair.snp_i], sim.genotypes[pair.snp_j]
    out = np.zeros((2, 3, 3))
    for k, status in enumerate((1, 2)):
        sel = (sim.samples.status == status) & (gi >= 0) & (gj >= 0)
        np.add.at(out[k], (gi[sel], gj[sel]), 1)
    return out


def test_planted_penetrance_shows_in_the_case_control_counts():
    pair = PlantedPair(3, 7, "xor", 4.0, 0.4, 0.4)
    sim = simulate_study(10, 6000, 6000, seed=3, planted=[pair])
    ctrl, case = genotype_table(sim, pair)
    # Retrospective sampling: case/control odds per cell are proportional to P / (1 - P).
    pen = sim.penetrance(0)
    odds = pen / (1 - pen)
    observed = (case / case.sum()) / (ctrl / ctrl.sum())
    assert np.corrcoef(np.log(observed).ravel(), np.log(odds).ravel())[0, 1] > 0.95
    np.testing.assert_allclose(observed / observed[1, 1], odds / odds[1, 1], rtol=0.25)


def test_pure_epistasis_leaves_single_snps_unassociated_and_threshold_does_not():
    pure, marg = PlantedPair(0, 1, "xor", 4.0, 0.4, 0.4), PlantedPair(2, 3, "threshold", 4.0, 0.3, 0.3)
    sim = simulate_study(6, 5000, 5000, seed=12, planted=[pure, marg])
    for snp, associated in ((0, False), (1, False), (2, True), (3, True)):
        g, status = sim.genotypes[snp], sim.samples.status
        freq = [np.bincount(g[status == s], minlength=3) / (status == s).sum() for s in (1, 2)]
        gap = np.abs(freq[1] - freq[0]).max()
        assert (gap > 0.05) == associated, (snp, gap)


def test_planted_pairs_must_be_disjoint_and_valid():
    with pytest.raises(ValueError, match="two planted pairs"):
        simulate_study(10, 5, 5, seed=1, planted=[PlantedPair(0, 1), PlantedPair(1, 2)])
    with pytest.raises(ValueError, match="outside"):
        simulate_study(10, 5, 5, seed=1, planted=[PlantedPair(0, 10)])
    with pytest.raises(ValueError, match="unknown model"):
        PlantedPair(0, 1, "mystery")
    with pytest.raises(ValueError, match="strength must be > 1"):
        PlantedPair(0, 1, "xor", 0.5)


def test_written_fileset_reads_back_with_the_same_genotypes(tmp_path):
    sim = simulate_study(50, 31, 30, seed=6, chromosomes=2, missing_rate=0.1)
    paths = sim.write(tmp_path / "x")
    assert [os.path.basename(p) for p in paths] == ["x.bed", "x.bim", "x.fam"]
    src = open_bfile(str(tmp_path / "x"))
    geno = np.concatenate([g for _, g in src.iter_blocks(np.arange(61), 16)])
    assert (geno == sim.genotypes).all()
    assert os.path.getsize(paths[0]) == 3 + 50 * 16


def cli_args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    cli_simulate.add_arguments(parser)
    return parser.parse_args(argv)


def test_cli_writes_the_fileset_and_describes_the_planted_pair(tmp_path, capsys):
    args = cli_args("--out", str(tmp_path / "c"), "--snps", "40", "--cases", "20", "--controls", "25",
                    "--seed", "3", "--missing", "0.01", "--chromosomes", "2", "--plant", "2:30:threshold:3:0.3")
    assert cli_simulate.run(args) == 0
    out = capsys.readouterr().out
    assert "planted pair 1: snp2 (chr 1:" in out and "x snp30 (chr 2:" in out and "model threshold" in out
    src = open_bfile(str(tmp_path / "c"))
    assert len(src.variants) == 40 and int((src.samples.status == 2).sum()) == 20


@pytest.mark.parametrize("plant, message", [("1:2:xor", "expected I:J:MODEL"), ("0:2:xor:3", "start at 1"),
                                            ("1:2:nope:3", "unknown model"), ("1:2:xor:x", "could not convert")])
def test_cli_rejects_malformed_plant_options(plant, message, capsys):
    with pytest.raises(SystemExit):
        cli_args("--out", "x", "--snps", "5", "--cases", "2", "--controls", "2", "--seed", "1", "--plant", plant)
    assert message in capsys.readouterr().err


def test_cli_reports_impossible_requests_without_a_traceback(tmp_path, capsys):
    args = cli_args("--out", str(tmp_path / "c"), "--snps", "5", "--cases", "2", "--controls", "2",
                    "--seed", "1", "--plant", "1:9:xor:3")
    assert cli_simulate.run(args) == 2
    assert "outside 0..4" in capsys.readouterr().err


@pytest.mark.slow
def test_the_shipped_sample_study_is_what_its_script_makes(tmp_path):
    env = {**os.environ, "PYTHON": sys.executable}
    subprocess.run(["bash", os.path.join(ROOT, "sample_data", "make_sample.sh"), str(tmp_path / "sample")],
                   check=True, capture_output=True, env=env)
    for ext in (".bed", ".bim", ".fam"):
        assert filecmp.cmp(tmp_path / f"sample{ext}", os.path.join(ROOT, "sample_data", f"sample{ext}"), shallow=False), ext
    sizes = sum(os.path.getsize(os.path.join(ROOT, "sample_data", f"sample{e}")) for e in (".bed", ".bim", ".fam"))
    assert sizes < 2_000_000


def test_given_positions_are_used_and_the_rest_is_drawn_as_before():
    chrom = np.array(["2"] * 4 + ["7"] * 6)
    bp = np.array([5, 10, 20, 40, 1, 2, 3, 4, 5, 6]) * 1000
    sim = simulate_study(10, 30, 30, seed=5, positions=(chrom, bp), planted=[PlantedPair(0, 9, "xor", 3.0)])
    assert sim.variants.chrom.tolist() == chrom.tolist() and sim.variants.bp.tolist() == bp.tolist()
    assert sim.variants.cm.tolist() == (bp / 1e6).tolist()
    again = simulate_study(10, 30, 30, seed=5, positions=(chrom, bp), planted=[PlantedPair(0, 9, "xor", 3.0)])
    assert (sim.genotypes == again.genotypes).all()
    with pytest.raises(ValueError, match="for each of the 10 SNPs"):
        simulate_study(10, 3, 3, seed=5, positions=(chrom[:9], bp[:9]))
    with pytest.raises(ValueError, match="integers >= 1"):
        simulate_study(10, 3, 3, seed=5, positions=(chrom, bp - 5000))


# The planted pairs of sample_data/make_sample.sh: (SNP, gene) x (SNP, gene).
SAMPLE_PLANTED = ((("snp1706", "DRD3"), ("snp2962", "DRD1")), (("snp1332", "IRS1"), ("snp2625", "PIK3R1")),
                  (("snp208", "PCSK9"), ("snp758", "APOB")))


@pytest.mark.plink
@pytest.mark.slow
@pytest.mark.skipif(PLINK is None, reason="plink1.9 is not on PATH (apt-get install plink1.9)")
def test_plink_finds_every_planted_pair_of_the_sample_study(tmp_path):
    prefix = os.path.join(ROOT, "sample_data", "sample")
    subprocess.run([PLINK, "--bfile", prefix, "--fast-epistasis", "boost", "--out", str(tmp_path / "s")],
                   check=True, capture_output=True)
    rows = [line.split() for line in (tmp_path / "s.epi.cc").read_text().splitlines()[1:]]
    found = {frozenset((r[1], r[3])): float(r[6]) for r in rows}
    readme = open(os.path.join(ROOT, "sample_data", "README.md")).read()
    for (a, gene_a), (b, gene_b) in SAMPLE_PLANTED:
        assert f"{a} (*{gene_a}*" in readme and f"{b} (*{gene_b}*" in readme
        assert found[frozenset((a, b))] < 1e-8
    assert len(rows) < 60  # the null pairs look like chance (about 22 expected at P < 5e-6)


def test_simulate_refuses_to_replace_an_existing_fileset(tmp_path, capsys):
    from gboost.cli import main

    prefix = tmp_path / "mine"
    for ext, data in ((".bed", b"\x6c\x1b\x01user"), (".bim", b"user bim\n"), (".fam", b"user fam\n")):
        (tmp_path / f"mine{ext}").write_bytes(data)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    rc = main(["simulate", "--out", str(prefix), "--snps", "20", "--cases", "5", "--controls", "5", "--seed", "1"])
    assert rc == 2
    assert "mine.bed exists" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    rc = main(["simulate", "--out", str(prefix), "--snps", "20", "--cases", "5", "--controls", "5", "--seed", "1",
               "--overwrite"])
    assert rc == 0 and (tmp_path / "mine.bed").read_bytes() != before["mine.bed"]


def test_ld_blocks_correlate_neighbours_and_keep_each_maf():
    import numpy as np

    from gboost.data.simulate import simulate_study

    sim = simulate_study(200, 1000, 1000, seed=5, ld_block=20, ld_rho=0.98, maf_range=(0.2, 0.5))
    g = sim.genotypes.astype(float)
    r = [np.corrcoef(g[j], g[j + 1])[0, 1] for j in range(199) if (j + 1) % 20]
    assert np.median(np.square(r)) > 0.5  # strong LD inside blocks
    across = [np.corrcoef(g[j], g[j + 1])[0, 1] ** 2 for j in range(19, 199, 20)]
    assert max(across) < 0.05  # none across block edges
    freq = g.mean(axis=1) / 2
    assert np.abs(freq - sim.maf).max() < 0.05


def test_males_on_x_are_homozygous_and_unknown_sex_is_written():
    import numpy as np

    from gboost.data.simulate import simulate_study

    sim = simulate_study(60, 300, 300, seed=6, chromosomes=["1", "X"], unknown_sex=0.1)
    x = sim.variants.chrom == "X"
    males = sim.samples.sex == 1
    assert x.any() and (sim.genotypes[np.ix_(x, males)] != 1).all()
    assert (sim.genotypes[np.ix_(x, sim.samples.sex == 2)] == 1).any()
    assert 0.03 < (sim.samples.sex == 0).mean() < 0.2


def test_the_cli_lists_the_simulators_models():
    from gboost.cli import simulate as cli_simulate
    from gboost.data import simulate
    assert cli_simulate.MODELS == simulate.MODELS
