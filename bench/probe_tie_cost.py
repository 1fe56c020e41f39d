"""What the re-choice of every SNP's best among all its partners costs (gboost/best_ties.py, tie_classes):
run.json's ``best_ties`` seconds of `gboost scan --device cpu` on studies near ALL_PARTNERS_WORK's bound,
with the re-choice (every partner) and with the alike classes alone, alternating.

    python bench/probe_tie_cost.py [--rounds 2]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import gboost.best_ties as bt  # noqa: E402
from gboost.cli import main as gboost_main  # noqa: E402
from gboost.simulate import simulate_study  # noqa: E402

# (SNPs, samples) just under the bound: 2, 16 and 80 plane words.
SIZES = ((1160, 24), (870, 1000), (540, 5000))


def _best_ties_s(out: str) -> float:
    with open(os.path.join(out, "run.json")) as f:
        return float(json.load(f)["timings_s"]["best_ties"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="gboost-tiecost-")
    try:
        for p, n in SIZES:
            prefix = os.path.join(work, f"s{p}")
            simulate_study(n_snps=p, n_cases=n // 2, n_controls=n - n // 2, seed=1, missing_rate=0.01,
                           chromosomes=["1"]).write(prefix)
            got: dict = {"every partner": [], "alike classes": []}
            every = bt.tie_classes
            for _ in range(a.rounds):
                for mode in got:
                    if mode == "alike classes":
                        bt.tie_classes = lambda planes, counts: bt.equivalence_classes(planes, counts)
                    try:
                        out = os.path.join(work, f"o{p}")
                        assert gboost_main(["scan", "--bfile", prefix, "--out", out, "--device", "cpu", "--quiet",
                                            "--overwrite"]) == 0
                    finally:
                        bt.tie_classes = every
                    got[mode].append(_best_ties_s(out))
            whole = p * (p - 1) * (2 * -(-(n // 2) // 64) + 20)
            print(f"{p} SNPs x {n} samples (p (p - 1) (words + 20) ~{whole:.2e}): " +
                  ", ".join(f"{k} {' '.join(f'{x:.3f}' for x in v)} s" for k, v in got.items()), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
