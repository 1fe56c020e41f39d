"""Loading a PLINK fileset into a study (read .bed, QC, encode, count) both ways, and its counting step both ways.

    python bench/bench_load.py --snps 50000 --samples 2000
    python bench/bench_load.py --bfile PREFIX

Simulates a fileset (seeded, 1 % missing calls, 6 chromosomes) unless ``--bfile`` is given, loads it
once to warm numba's cache and the page cache, then times ``load_study`` (the best of ``--repeats``)
and prints SNP·samples per second: the .bed's 2-bit codes encoded directly (with ``--qc``, the
per-SNP QC counted from planes too) beside the same load through bed-reader's decoded int8 calls
(the path of the text formats).
Side by side on the same genotypes: the per-SNP genotype counts
by NumPy comparisons over the int8 block (``genotype_counts``, what the loader did until session 4)
and by popcount over the encoded planes (``plane_counts``, what it does now); the two are compared.
"""
from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402

from gboost.encode import ClassLayout, encode_block, genotype_counts, plane_counts  # noqa: E402
from gboost.inputs import open_input  # noqa: E402
from gboost.load import load_study  # noqa: E402
from gboost.simulate import simulate_study  # noqa: E402
from gboost.study import QCOptions  # noqa: E402


def best_of(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bfile", help="an existing fileset (default: simulate one)")
    ap.add_argument("--snps", type=int, default=50_000)
    ap.add_argument("--samples", type=int, default=2_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--qc", action="store_true", help="with --maf 0.01 --geno 0.05 --hwe 1e-6 (per-SNP QC)")
    args = ap.parse_args(argv)
    qc = QCOptions(maf=0.01, geno=0.05, hwe=1e-6) if args.qc else QCOptions()

    with tempfile.TemporaryDirectory() as tmp:
        prefix = args.bfile
        if prefix is None:
            prefix = os.path.join(tmp, "s")
            half = args.samples // 2
            simulate_study(args.snps, half, args.samples - half, seed=4, chromosomes=6, missing_rate=0.01).write(prefix)

        def load():
            return load_study(open_input(bfile=prefix, ped=None, map_file=None, boost_matrix=None, pheno=None,
                                         allow_no_sex=False), qc)

        class Decoded:
            """The same fileset without ``iter_bed_rows``: loaded through bed-reader's int8 calls,
            the path of the text formats (and of every load until session 4)."""

            def __init__(self, src):
                self._src = src

            def __getattr__(self, name):
                if name == "iter_bed_rows":
                    raise AttributeError(name)
                return getattr(self._src, name)

        def load_decoded():
            return load_study(Decoded(open_input(bfile=prefix, ped=None, map_file=None, boost_matrix=None,
                                                 pheno=None, allow_no_sex=False)), qc)

        study = load()  # warm-up: numba cache, page cache
        load_decoded()
        load_s = best_of(load, args.repeats)
        decoded_s = best_of(load_decoded, args.repeats)
        p, n = study.n_snps, study.n_samples

        # The counting step alone, both ways, on the study's own genotypes (blocks of 4,096 SNPs).
        from gboost.encode import decode_planes

        geno, is_case = decode_planes(study.planes, study.layout)
        layout = ClassLayout.from_status(is_case)
        blocks = [geno[a:a + 4096] for a in range(0, p, 4096)]
        planes = [encode_block(b, is_case) for b in blocks]
        ref = np.concatenate([genotype_counts(b, is_case) for b in blocks])
        new = np.concatenate([plane_counts(pl, layout) for pl in planes])
        same = bool(np.array_equal(ref, new)) and bool(np.array_equal(new, study.counts))
        numpy_s = best_of(lambda: [genotype_counts(b, is_case) for b in blocks], args.repeats)
        popc_s = best_of(lambda: [plane_counts(pl, layout) for pl in planes], args.repeats)

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=ROOT).stdout.strip()
    print(f"{platform.node()}; {os.cpu_count()} cores; commit {commit or '?'}; "
          f"{time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}")
    print(f"study: {p} SNPs x {n} samples ({'simulated' if args.bfile is None else args.bfile}); "
          f"QC: {'--maf 0.01 --geno 0.05 --hwe 1e-6' if args.qc else 'none'}")
    print(f"{'step':<40} {'s':>8} {'SNP·samples/s':>14}")
    print(f"{'load_study, .bed bytes encoded directly':<40} {load_s:>8.3f} {p * n / load_s:>14.3g}")
    print(f"{'load_study through int8 calls':<40} {decoded_s:>8.3f} {p * n / decoded_s:>14.3g}")
    print(f"{'counts by NumPy comparisons (before)':<40} {numpy_s:>8.3f} {p * n / numpy_s:>14.3g}")
    print(f"{'counts by popcount of the planes (now)':<40} {popc_s:>8.3f} {p * n / popc_s:>14.3g}")
    print(f"counts identical both ways and to the study's: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
