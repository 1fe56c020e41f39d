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

    python bench/parity_sweep.py --seeds 1-60 [--work /tmp/sweep] [--plink plink1.9]

Prints a line per seed and a last line "agreed K of N"; exits 1 on any failure.
"""
from __future__ import annotations

import argparse
import filecmp
import os
import random
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def draw(k: int) -> tuple[list[str], list[str]]:
    """Seed ``k``'s `gboost simulate` arguments (after --out) and scan flags."""
    r = random.Random(k)
    snps = r.choice([150, 300, 500])
    sim = ["--snps", str(snps), "--cases", str(r.choice([100, 250, 400])), "--controls", str(r.choice([100, 300, 500])),
           "--seed", str(k), "--missing", str(r.choice([0, 0.01, 0.05])),
           "--chromosomes", r.choice(["1", "3", "1,2,X", "1,X", "1,2,3"]), "--maf-min", str(r.choice([0.005, 0.01, 0.05])),
           "--unknown-sex", str(r.choice([0, 0.02, 0.2]))]
    if r.random() < 0.7:
        sim += ["--ld-block", str(r.choice([5, 20])), "--ld-rho", str(r.choice([0.9, 0.99]))]
    if r.random() < 0.5:
        sim += ["--plant", f"3:{snps // 2}:{r.choice(['xor', 'additive', 'threshold'])}:{r.choice([2.0, 5.0])}"]
    if r.random() < 0.5:
        sim += ["--duplicates", str(r.choice([0.05, 0.15]))]
    flags = ["--epi1", r.choice(["1e-4", "1e-3", "0.01", "0.05"])]
    if r.random() < 0.3:
        flags += ["--allow-no-sex"]
    if r.random() < 0.3:
        flags += ["--maf", r.choice(["0.01", "0.05", "0.1"])]
    if r.random() < 0.3:
        flags += ["--geno", r.choice(["0.02", "0.05"])]
    if r.random() < 0.3:
        flags += ["--hwe", r.choice(["1e-3", "1e-6"])]
    if r.random() < 0.2:
        flags += ["--mind", r.choice(["0.02", "0.1"])]
    if r.random() < 0.2:
        flags += ["--epi2", r.choice(["1e-3", "0.05"])]
    return sim, flags


def one(k: int, work: str, plink: str) -> tuple[bool, str]:
    d = os.path.join(work, f"s{k}")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    sim, flags = draw(k)
    gb = [sys.executable, "-m", "gboost.cli"]
    made = subprocess.run([*gb, "simulate", "--out", f"{d}/s", *sim], cwd=ROOT, capture_output=True, text=True)
    if made.returncode:
        return False, f"simulate failed: {made.stderr.strip()[-300:]}"
    ours = subprocess.run([*gb, "scan", "--bfile", f"{d}/s", "--out", f"{d}/g", "--device", "cpu", "--quiet", *flags],
                          cwd=ROOT, capture_output=True, text=True)
    theirs = subprocess.run([plink, "--bfile", f"{d}/s", "--fast-epistasis", "boost", "--out", f"{d}/p",
                             "--threads", "2", "--silent", *flags], capture_output=True, text=True)
    if ours.returncode or theirs.returncode:
        if ours.returncode == 2 and theirs.returncode:
            shutil.rmtree(d)
            return True, f"both refuse {flags}: {(theirs.stderr or theirs.stdout).strip().splitlines()[-1]}"
        return False, f"exit {ours.returncode} vs plink's {theirs.returncode} {flags}: {ours.stderr.strip()[-300:]}"
    for a, b in (("g/pairs.epi.cc", "p.epi.cc"), ("g/pairs.epi.cc.summary", "p.epi.cc.summary")):
        if not filecmp.cmp(os.path.join(d, a), os.path.join(d, b), shallow=False):
            return False, f"{a} differs {flags} (simulate {' '.join(sim)}; kept in {d})"
    rows = sum(1 for _ in open(os.path.join(d, "p.epi.cc"))) - 1
    shutil.rmtree(d)
    return True, f"identical, {rows} rows {flags}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="1-20", help="a range A-B or a list A,B,C")
    ap.add_argument("--work", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "gboost-parity-sweep"))
    ap.add_argument("--plink", default="plink1.9")
    a = ap.parse_args()
    if "-" in a.seeds:
        lo, hi = (int(x) for x in a.seeds.split("-"))
        seeds = list(range(lo, hi + 1))
    else:
        seeds = [int(x) for x in a.seeds.split(",")]
    agreed = 0
    for k in seeds:
        ok, what = one(k, a.work, a.plink)
        agreed += ok
        print(f"seed {k}: {'ok' if ok else 'FAIL'} {what}", flush=True)
    print(f"agreed {agreed} of {len(seeds)}")
    return 0 if agreed == len(seeds) else 1


if __name__ == "__main__":
    sys.exit(main())
