"""The command on the GPU against the command on the CPU engine, byte for byte, on a study shaped as a
real cohort's chip: LD blocks, 1 % missing calls, an X (skipped by the scan, as PLINK does), rare
alleles, a few samples of unknown sex (founders who are not scanned: PLINK's allele order from the
counting pass, gboost/data/load.py), duplicated probes (the BEST_SNP tie repair) and a planted pair. The
whole CLI path runs: the .bed read in two passes with the planes encoded beside the screen, the
host-work thread, the exact tests in PLINK's order, the writers. Run on the GPU machine; skipped
with the reason elsewhere."""
from __future__ import annotations

import pytest

from gboost.data.simulate import PlantedPair, simulate_study

FILES = ("pairs.epi.cc", "pairs.epi.cc.summary", "pairs.tsv", "marginal.tsv")


@pytest.fixture(scope="module")
def cohort(tmp_path_factory):
    prefix = str(tmp_path_factory.mktemp("cohort") / "cohort")
    simulate_study(1500, 520, 480, seed=16, chromosomes=["1", "2", "3", "X"], maf_range=(0.005, 0.5),
                   missing_rate=0.01, ld_block=20, ld_rho=0.9, unknown_sex=0.02, duplicates=0.05,
                   planted=[PlantedPair(100, 900, "xor", 4.0)]).write(prefix)
    return prefix


@pytest.mark.gpu
@pytest.mark.parametrize("epi1", ["1e-4", "0.05"])
def test_the_command_on_the_gpu_equals_the_cpu_engine_on_a_realistic_cohort(cohort, tmp_path, epi1):
    from gboost.cli import main

    for device in ("cpu", "gpu"):
        assert main(["scan", "--bfile", cohort, "--out", str(tmp_path / device), "--device", device, "--quiet",
                     "--epi1", epi1]) == 0
    rows = (tmp_path / "cpu" / "pairs.epi.cc").read_text().count("\n") - 1
    assert rows >= (1 if epi1 == "1e-4" else 1000)
    for name in FILES:
        assert (tmp_path / "gpu" / name).read_bytes() == (tmp_path / "cpu" / name).read_bytes(), name
