"""A small study in every format gboost reads, for the readers' tests (issue 19).

One simulated PLINK 1 fileset (chromosomes 1, 2 and X, 3 % missing calls, LD blocks, 10 % of
samples of unknown sex) converted by plink2 itself: ``--make-pgen`` (also with a zstd .pvar),
``--export vcf``, ``vcf bgz``, ``bcf`` and ``bgen-1.2``. A reader that equals the .bed path on
these equals ``plink2 --make-bed`` of the same file.
"""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from gboost.simulate import PlantedPair, simulate_study

PLINK2 = shutil.which("plink2")
needs_plink2 = pytest.mark.skipif(PLINK2 is None, reason="plink2 not on PATH (apt-get install plink2; scripts/setup.sh "
                                                          "installs it)")


def plink2(*args: str) -> None:
    subprocess.run([PLINK2, *args, "--silent"], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def make_study(folder) -> str:
    """Write ``folder/s.*`` and its conversions; returns the prefix ``folder/s``."""
    prefix = os.path.join(folder, "s")
    simulate_study(120, 70, 70, seed=19, chromosomes=["1", "2", "X"], missing_rate=0.03, ld_block=6,
                   unknown_sex=0.1, planted=[PlantedPair(3, 50, "xor", 4.0)]).write(prefix)
    plink2("--bfile", prefix, "--make-pgen", "--out", prefix)
    plink2("--bfile", prefix, "--make-pgen", "vzs", "--out", prefix + "_zst")
    plink2("--bfile", prefix, "--export", "vcf", "--out", prefix)
    plink2("--bfile", prefix, "--export", "vcf", "bgz", "--out", prefix + "_bgz")
    plink2("--bfile", prefix, "--export", "bcf", "--out", prefix)
    plink2("--bfile", prefix, "--export", "bgen-1.2", "--out", prefix)
    plink2("--bfile", prefix, "--export", "bgen-1.3", "--out", prefix + "_13")  # zstd-compressed
    plink2("--bfile", prefix, "--export", "bgen-1.1", "--out", prefix + "_11")  # layout 1: refused
    # The same .bed without sexes: what a VCF holds (see tests/test_formats.py)
    for ext in (".bed", ".bim"):
        shutil.copy(prefix + ext, prefix + "_nosex" + ext)
    with open(prefix + ".fam") as src, open(prefix + "_nosex.fam", "w") as dst:
        for line in src:
            f = line.split()
            f[4] = "0"
            dst.write(" ".join(f) + "\n")
    # --pheno files naming the samples as a VCF reader does: FID 0 and IID FID_IID (plink2's
    # export pastes FID_IID; PLINK 2's import keeps the whole ID as IID), or FID/IID split at '_'
    with open(prefix + ".fam") as src, open(prefix + "_vcf.pheno", "w") as a, open(prefix + ".pheno", "w") as b:
        for line in src:
            f = line.split()
            a.write(f"0 {f[0]}_{f[1]} {f[5]}\n")
            b.write(f"{f[0]} {f[1]} {f[5]}\n")
    return prefix
