"""Loading a PLINK fileset into a study (read .bed, QC, encode, count) both ways, and its counting step both ways.

    python bench/bench_load.py --snps 50000 --samples 2000
    python bench/bench_load.py --bfile PREFIX
    python bench/bench_load.py --formats --snps 100000 --samples 5000   # issue 19: every input format

With ``--formats``: writes a .bed with bench/make_bed.py (1 % missing calls, 2 chromosomes), has
plink2 convert it to .pgen, .vcf.gz (bgzip), .bcf and BGEN 1.2 (conversion times printed, not
counted), then times ``open_input`` + ``load_study`` (reading, decoding, encoding into bit planes;
no QC) per format, best of ``--repeats``, beside the .bed, and checks every study's planes equal
the .bed's.

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
    ap.add_argument("--formats", action="store_true", help="time every input format against the .bed (issue 19)")
    args = ap.parse_args(argv)
    if args.formats:
        return bench_formats(args)
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


def bench_formats(args) -> int:
    """Reading + encoding per input format vs the .bed (see the module notes)."""
    import shutil

    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import make_bed

    plink2 = shutil.which("plink2")
    if plink2 is None:
        raise SystemExit("bench_load --formats: needs plink2 on PATH (apt-get install plink2)")
    p, n = args.snps, args.samples
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        prefix = os.path.join(tmp, "s")
        t = time.perf_counter()
        make_bed.write(prefix, p, n, 0.01, 1, chromosomes=2)
        made = {"bed": time.perf_counter() - t}
        conversions = {"pgen": ["--make-pgen"], "vcf.gz": ["--export", "vcf", "bgz"], "bcf": ["--export", "bcf"],
                       "bgen": ["--export", "bgen-1.2"]}
        for fmt, flags in conversions.items():
            t = time.perf_counter()
            subprocess.run([plink2, "--bfile", prefix, *flags, "--out", prefix, "--silent", "--threads", str(os.cpu_count())],
                           check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            made[fmt] = time.perf_counter() - t
        with open(prefix + ".fam") as src, open(prefix + ".vcf.pheno", "w") as dst:
            for line in src:  # the VCF's samples as PLINK 2 names them: FID 0, IID FID_IID
                f = line.split()
                dst.write(f"0 {f[0]}_{f[1]} {f[5]}\n")
        inputs = {
            "bed": dict(bfile=prefix),
            "pgen": dict(pfile=prefix),
            "vcf.gz": dict(vcf=prefix + ".vcf.gz", pheno=prefix + ".vcf.pheno"),
            "bcf": dict(vcf=prefix + ".bcf", pheno=prefix + ".vcf.pheno"),
            "bgen": dict(bgen=prefix + ".bgen", sample=prefix + ".sample"),
        }
        sizes = {"bed": os.path.getsize(prefix + ".bed"), "pgen": os.path.getsize(prefix + ".pgen"),
                 "vcf.gz": os.path.getsize(prefix + ".vcf.gz"), "bcf": os.path.getsize(prefix + ".bcf"),
                 "bgen": os.path.getsize(prefix + ".bgen")}
        rows, reference, same = [], None, True
        for fmt, kw in inputs.items():
            opened = {}

            def load(kw=kw, opened=opened):
                t0 = time.perf_counter()
                src = open_input(**kw)
                opened["s"] = time.perf_counter() - t0
                return load_study(src, QCOptions())

            study = load()  # warm-up (numba cache, page cache) and the equality check
            if reference is None:
                reference = study
            equal = bool(np.array_equal(study.planes, reference.planes))
            same &= equal
            secs = best_of(load, args.repeats)
            rows.append((fmt, secs, opened["s"], equal))
        bed_s = rows[0][1]

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=ROOT).stdout.strip()
    print(f"{platform.node()}; {os.cpu_count()} cores; commit {commit or '?'}; "
          f"{time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}")
    print(f"study: {p} SNPs x {n} samples (bench/make_bed.py, 1 % missing), converted by plink2; no QC; "
          f"best of {args.repeats}; load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after "
          "(other processes on the machine slow every row)")
    print(f"{'format':<8} {'file MB':>8} {'made s':>7} {'load s':>8} {'of which open':>13} {'x .bed':>7} "
          f"{'SNP·samples/s':>14} {'planes = .bed':>13}")
    for fmt, secs, open_s, equal in rows:
        print(f"{fmt:<8} {sizes[fmt] / 1e6:>8.1f} {made[fmt]:>7.1f} {secs:>8.3f} {open_s:>13.3f} {secs / bed_s:>7.1f} "
              f"{p * n / secs:>14.3g} {str(equal):>13}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
