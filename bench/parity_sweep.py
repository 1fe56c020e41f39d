"""gboost against plink1.9 on random realistic studies and random PLINK flags, byte for byte.

The parity tests (tests/test_plink_parity*.py) pin chosen studies; this sweep draws new ones. Each
seed draws a study from `gboost simulate` (150-500 SNPs on 1, 1-3, 1-2 + X or 1 + X; 100-400 cases
and 100-500 controls; 0, 1 or 5 % missing calls; lowest MAF 0.005-0.05; 0-20 % of samples of
unknown sex; LD blocks of 5 or 20 SNPs at rho 0.9 or 0.99 in 70 % of draws; a planted pair in half;
duplicated SNPs, half allele-swapped, 5 or 15 % of them in half)
and a set of flags (`--epi1` 1e-4 to 0.05, and each with some chance: `--allow-no-sex`, `--maf`,
`--geno`, `--hwe`, `--mind`, `--epi2`), runs `gboost scan --device cpu` and `plink1.9
--fast-epistasis boost` with the same flags, and compares `.epi.cc` and `.epi.cc.summary` byte for
byte. Where both refuse the input (every sample or SNP removed by a filter) the seed counts as
agreed; where one refuses and the other does not, or a byte differs, it is a failure, and its
folder is kept for a look.

With `--more-flags`, each seed draws more after the draws above (so the study and flags above stay those
of the plain sweep, and its old seeds reproduce): in some draws a quantitative trait instead of cases and
controls (`gboost simulate --qt`, compared with plink1.9 `--epistasis`'s `.epi.qt` files), `--extract` /
`--exclude` lists (a random share of the SNPs, with a few names the .bim lacks; IDs separated by spaces,
tabs, newlines, some CRLF), `--chr` (names, lists and ranges such as `chr1-MT`), a `--pheno` file (random
status or trait with -9/0/NA and samples left out, with or without a header line, some with a second
column and CRLF), SNP IDs of rs-like lengths (the columns' width), studies with XY, MT, Y and 0, the
.bim's chromosomes named chr1/chrX or 23-26, the `.ped/.map` text fileset (`--file`, made by plink1.9
`--recode`), `--threads 1` on both, and gboost's scan split into `--part k/n` runs joined by `gboost merge`,
reading the PLINK 2 fileset plink2 `--make-pgen` makes of the study (`--pfile`), or with another `--tile`.
PLINK's QT runs always get `--threads 1` (see `one`).

    python bench/parity_sweep.py --seeds 1-60 [--work /tmp/sweep] [--plink plink1.9] [--more-flags]

Prints a line per seed and a last line "agreed K of N"; exits 1 on any failure.
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tests.parity.sweep import one  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="1-20", help="a range A-B or a list A,B,C")
    ap.add_argument("--work", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "gboost-parity-sweep"))
    ap.add_argument("--plink", default="plink1.9")
    ap.add_argument("--more-flags", action="store_true", help="draw the extra flags and inputs (see above)")
    a = ap.parse_args()
    if "-" in a.seeds:
        lo, hi = (int(x) for x in a.seeds.split("-"))
        seeds = list(range(lo, hi + 1))
    else:
        seeds = [int(x) for x in a.seeds.split(",")]
    agreed = 0
    for k in seeds:
        ok, what = one(k, a.work, a.plink, more=a.more_flags)
        agreed += ok
        print(f"seed {k}: {'ok' if ok else 'FAIL'} {what}", flush=True)
    print(f"agreed {agreed} of {len(seeds)}")
    return 0 if agreed == len(seeds) else 1


if __name__ == "__main__":
    sys.exit(main())
