"""A handful of the parity sweep's random realistic studies (tests/parity/sweep.py) in CI: LD blocks,
1-5 % missing calls, X, samples of unknown sex, alleles down to MAF 0.005, duplicated probes with swapped
alleles, and PLINK's QC flags in combination; `.epi.cc` and `.epi.cc.summary` byte for byte against
plink1.9. The seeds were chosen from a sweep of 91 (all agreed) to cover those features;
`python bench/parity_sweep.py --seeds A-B` draws more."""
from __future__ import annotations

import shutil

import pytest

from tests.helpers import NO_PLINK, PLINK
from tests.parity import sweep

pytestmark = [pytest.mark.slow, pytest.mark.plink, pytest.mark.skipif(PLINK is None, reason=NO_PLINK)]

# 18 duplicates + X + --maf/--geno (a SNP and its duplicate: an exact statistic of ~0, printed as PLINK rounds it);
# 210 X + unknown sex + 5 % missing; 214 X + duplicates + --maf/--hwe; 219 duplicates + every QC flag;
# 220 X + duplicates + --geno/--hwe; 228 duplicates + MAF 0.005 + 5 % missing; 230 --mind + --epi2;
# 236 X + duplicates + --mind; 238 duplicates + --allow-no-sex + --maf/--hwe.
SEEDS = [18, 210, 214, 219, 220, 228, 230, 236, 238]


@pytest.mark.parametrize("seed", SEEDS)
def test_a_random_realistic_study_matches_plink(seed, tmp_path):
    ok, what = sweep.one(seed, str(tmp_path), PLINK)
    assert ok, what


# bench/parity_sweep.py --more-flags draws: 403 a quantitative trait read from the .pgen plink2 makes of it (was
# refused: a .psam's trait); 444 a quantitative trait in 3 --part runs + merge; 447 --chr 1-3 + a --pheno file +
# --mind; 486 chr-prefixed .bim names, --chr chr0,chr2, --extract, rs-like IDs; 493 --chr chr2-chrXY (was refused:
# a range's ends may be any standard code); 506 --mind leaving 32 samples, --exclude, --chr chr1,chrX, .pgen
# (PLINK's skip of hets + A1 homozygotes in one word, gboost/data/plink_skips.py); 428 --pheno + 3 parts; 441 the
# .ped/.map fileset + --pheno + 5 parts + --mind; 1190 --mind leaving 18 samples: coincidental BEST_SNP ties,
# settled among every partner (gboost/pipeline/best_ties.py, tie_classes; 10 summary rows differed before).
MORE_SEEDS = [403, 444, 447, 486, 493, 506, 428, 441, 1190]


@pytest.mark.parametrize("seed", MORE_SEEDS)
def test_a_random_study_with_more_flags_matches_plink(seed, tmp_path):
    if sweep.draw(seed, more=True)[2].get("pfile"):
        if shutil.which("plink2") is None:
            pytest.skip("plink2 not on PATH (the study's .pgen is made with it)")
        pytest.importorskip("pgenlib", reason="pgenlib not installed (pip install 'gboost[formats]')")
    ok, what = sweep.one(seed, str(tmp_path), PLINK, more=True)
    assert ok, what
