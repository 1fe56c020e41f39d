"""SPEC section 7's permutation row: `gboost scan --perm N` as a subprocess, start to exit, beside the
same scan without --perm: seconds per permutation, the command's wall, and the screens repeated.

    python bench/bench_perm.py --snps 100000 --n 5000 --perms 100 --device gpu     # the row: 1,000 perms <= 10 min
    python bench/bench_perm.py --snps 500000 --n 5000 --perms 10 --project 100 --device gpu  # 100 perms <= 15 min
    python bench/bench_perm.py --snps 100000 --n 5000 --perms 10 --qt --device gpu            # the QT test's max |T|
    python bench/bench_perm.py --snps 3000 --n 1600 --perms 20 --device cpu --threads 2

A fileset of bench/make_bed.py (random HWE genotypes, LD blocks of 20 SNPs at rho 0.9, 1 % missing
calls) is written once into ``--dir``. Prints one line of JSON per run (``#``-prefixed), then the
table: wall of the plain scan, wall with --perm, run.json's permutations seconds and seconds per
permutation, rescans, the projection of the command for ``--project`` permutations (1,000), and a
permutation's seconds by step (run.json's seconds_by_step over --perms).
``--qt`` scans a quantitative trait instead (standard normal values in a ``--pheno`` file written
beside the fileset): its permutations move the values among the samples.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from bench_cli import ld_fileset, scan  # noqa: E402 - bench/ is this script's folder


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--snps", type=int, default=100000)
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--perms", type=int, default=100)
    ap.add_argument("--device", default="gpu", choices=("cpu", "gpu", "auto"))
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--project", type=int, default=1000, help="permutations the projected wall is for")
    ap.add_argument("--qt", action="store_true", help="a quantitative trait (--pheno of normal values)")
    ap.add_argument("--dir", default="/tmp/gboost-bench-perm")
    args = ap.parse_args()
    folder = Path(args.dir)
    prefix = ld_fileset(folder, args.snps, args.n)
    extra = ["--calibration-pairs", "0"] + (["--threads", str(args.threads)] if args.threads else [])
    if args.qt:
        pheno = Path(prefix + ".qt.pheno")
        if not pheno.exists():
            fam = [line.split()[:2] for line in Path(prefix + ".fam").read_text().splitlines()]
            values = np.random.default_rng(1).standard_normal(len(fam))
            pheno.write_text("".join(f"{f} {i} {v:.6f}\n" for (f, i), v in zip(fam, values)))
        extra += ["--pheno", str(pheno)]
    plain, _ = scan(prefix, folder / "plain", args.device, extra)
    wall, run = scan(prefix, folder / "perm", args.device, extra + ["--perm", str(args.perms)])
    pr = run["permutations"]
    row = {"snps": args.snps, "n": args.n, "trait": "quantitative" if args.qt else "case-control",
           "device": run["device"], "perms": args.perms, "plain_s": round(plain, 3),
           "perm_s": round(wall, 3), "permutations_s": pr["seconds"], "per_perm_s": pr["seconds_per_permutation"],
           "rescans": pr["rescans"], "project": args.project,
           "projected_s": round(plain + args.project * pr["seconds_per_permutation"], 1),
           "steps_per_perm_s": {k: round(v / args.perms, 4) for k, v in pr.get("seconds_by_step", {}).items()}}
    print("# " + json.dumps(row), flush=True)
    print(f"{'snps':>8} {'n':>6} {'perms':>6} {'plain s':>8} {'--perm s':>9} {'s/perm':>8} {'rescans':>7} "
          f"{f'{args.project} perms s':>12}  device")
    print(f"{args.snps:>8} {args.n:>6} {args.perms:>6} {plain:>8.2f} {wall:>9.2f} {row['per_perm_s']:>8.3f} "
          f"{row['rescans']:>7} {row['projected_s']:>12.1f}  {row['device']}")
    steps = ", ".join(f"{k} {v:.4f}" for k, v in row["steps_per_perm_s"].items())
    print(f"a permutation's steps (s): {steps} (relabel: what the run waited for the permuted planes; made "
          "ahead beside a GPU's screen)")


if __name__ == "__main__":
    main()
