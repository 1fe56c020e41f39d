"""SPEC section 7's candidate-set row: `gboost scan --set FILE --set-by-all` (every SNP of a set of
candidates against every SNP of the study) as a subprocess, start to exit, beside the whole triangle's
scan of the same fileset: the command's pair·samples/s and the screen stage's (run.json's timings_s).

    python bench/bench_sets.py --snps 500000 --n 5000 --candidates 1000 --device gpu   # the row
    python bench/bench_sets.py --snps 20000 --n 2000 --candidates 100 --device cpu --threads 2
    python bench/bench_sets.py ... --no-triangle      # the set scan alone

A fileset of bench/make_bed.py (random HWE genotypes, LD blocks of 20 SNPs at rho 0.9, 1 % missing
calls) is written once into ``--dir``, with a PLINK set file of ``--candidates`` SNPs spread evenly
over the study (one set, its IDs, END). Each scan runs twice (the first warms the page cache and the
kernel cache); the second is shown. Prints one line of JSON per scan (``#``-prefixed), then the table:
pairs, command wall, pair·samples/s of the command, the screen stage's seconds and pair·samples/s.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from bench_cli import ld_fileset, scan  # noqa: E402 - bench/ is this script's folder


def _set_file(prefix: str, candidates: int) -> Path:
    """One set of ``candidates`` SNPs of the .bim, evenly spaced."""
    path = Path(f"{prefix}.{candidates}.set")
    if not path.exists():
        ids = [line.split()[1] for line in Path(prefix + ".bim").read_text().splitlines()]
        step = max(1, len(ids) // candidates)
        chosen = ids[::step][:candidates]
        path.write_text("CANDIDATES\n" + "".join(f"{s}\n" for s in chosen) + "END\n")
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--snps", type=int, default=500000)
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--candidates", type=int, default=1000)
    ap.add_argument("--device", default="gpu", choices=("cpu", "gpu", "auto"))
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--no-triangle", action="store_true", help="skip the whole triangle's scan")
    ap.add_argument("--dir", default="/tmp/gboost-bench-sets")
    args = ap.parse_args()
    folder = Path(args.dir)
    prefix = ld_fileset(folder, args.snps, args.n)
    extra = ["--threads", str(args.threads)] if args.threads else []
    scans = [("set-by-all", ["--set", str(_set_file(prefix, args.candidates)), "--set-by-all"])]
    if not args.no_triangle:
        scans.append(("all pairs", []))
    rows = []
    for name, flags in scans:
        for _ in range(2):
            wall, run = scan(prefix, folder / "out", args.device, extra + flags)
        pairs = int(run["counts"]["pairs"])
        screen = float(run["timings_s"]["screen"])
        work = pairs * args.n
        row = {"scan": name, "snps": args.snps, "n": args.n, "candidates": args.candidates if flags else None,
               "pairs": pairs, "device": run["device"], "command_s": round(wall, 3),
               "command_pair_samples_per_s": work / wall, "screen_s": screen,
               "screen_pair_samples_per_s": work / screen if screen > 0 else None,
               "reported_pairs": run["counts"]["reported_pairs"]}
        print("# " + json.dumps(row), flush=True)
        rows.append(row)
    print(f"{'scan':>10} {'snps':>8} {'n':>6} {'pairs':>14} {'cmd s':>8} {'cmd pair·s/s':>13} {'screen s':>9} "
          f"{'screen pair·s/s':>16}  device")
    for r in rows:
        rate = f"{r['screen_pair_samples_per_s']:.3g}" if r["screen_pair_samples_per_s"] else "-"
        print(f"{r['scan']:>10} {r['snps']:>8} {r['n']:>6} {r['pairs']:>14} {r['command_s']:>8.2f} "
              f"{r['command_pair_samples_per_s']:>13.3g} {r['screen_s']:>9.3f} {rate:>16}  {r['device']}")


if __name__ == "__main__":
    main()
