"""A handful of bench/parity_sweep.py's random realistic studies in CI: LD blocks, 1-5 % missing calls, X,
samples of unknown sex, alleles down to MAF 0.005, duplicated probes with swapped alleles, and PLINK's QC
flags in combination; `.epi.cc` and `.epi.cc.summary` byte for byte against plink1.9. The seeds were chosen
from a sweep of 91 (all agreed, bench/results_parity_sweep_vm_2026-11-27.txt) to cover those features;
`python bench/parity_sweep.py --seeds A-B` draws more."""
from __future__ import annotations

import importlib.util
import os

import pytest

from tests.helpers import NO_PLINK, PLINK, ROOT

pytestmark = [pytest.mark.plink, pytest.mark.skipif(PLINK is None, reason=NO_PLINK)]

_spec = importlib.util.spec_from_file_location("parity_sweep", os.path.join(ROOT, "bench", "parity_sweep.py"))
sweep = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sweep)

# 18 duplicates + X + --maf/--geno (a SNP and its duplicate: an exact statistic of ~0, printed as PLINK rounds it);
# 210 X + unknown sex + 5 % missing; 214 X + duplicates + --maf/--hwe; 219 duplicates + every QC flag;
# 220 X + duplicates + --geno/--hwe; 228 duplicates + MAF 0.005 + 5 % missing; 230 --mind + --epi2;
# 236 X + duplicates + --mind; 238 duplicates + --allow-no-sex + --maf/--hwe.
SEEDS = [18, 210, 214, 219, 220, 228, 230, 236, 238]


@pytest.mark.parametrize("seed", SEEDS)
def test_a_random_realistic_study_matches_plink(seed, tmp_path):
    ok, what = sweep.one(seed, str(tmp_path), PLINK)
    assert ok, what
