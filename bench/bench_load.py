"""Loading a PLINK fileset into a study (read .bed, QC, encode, count) both ways, and its counting step
both ways: the load stage of the command (no SPEC section 7 row of its own; bench_cli.py's stages
show its share of the command). CPU only.

    python bench/bench_load.py --snps 50000 --samples 2000
    python bench/bench_load.py --bfile PREFIX
    python bench/bench_load.py --formats --snps 100000 --samples 5000   # every input format
    python bench/bench_load.py --rates --bfile PREFIX                    # MB/s of the .bed
    NUMBA_NUM_THREADS=1 python bench/bench_load.py --rates --bfile PREFIX   # the same on one core

With ``--rates``: MB/s of the .bed (its bytes over the seconds) for each step of
loading a PLINK fileset, best of ``--repeats`` in this process after a warm-up: ``open_input``
(the .bim and .fam parsed, the .bed checked), ``load_study`` without QC flags and with
``--maf 0.01 --geno 0.05 --hwe 1e-6``, and the .bed kernel alone (``bed_encode`` over blocks
already in memory, into planes already touched: the rate a core sustains); then the same
``open_input`` + ``load_study`` in a fresh interpreter (numba loading its cached code on first
use: the one-time cost a command pays). The thread count is numba's (``NUMBA_NUM_THREADS``).

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
by NumPy comparisons over the int8 block (``genotype_counts``, the loader's earlier way)
and by popcount over the encoded planes (``plane_counts``, what it does now); the two are compared.
Each mode prints its figures as lines of text; nothing is written outside a temporary folder.
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

from gboost.data.encode import ClassLayout, encode_block, genotype_counts, plane_counts  # noqa: E402
from gboost.data.inputs import open_input  # noqa: E402
from gboost.data.load import load_study  # noqa: E402
from gboost.data.simulate import simulate_study  # noqa: E402
from gboost.data.study import QCOptions  # noqa: E402


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
    ap.add_argument("--formats", action="store_true", help="time every input format against the .bed")
    ap.add_argument("--rates", action="store_true", help="MB/s of the .bed per loading step")
    args = ap.parse_args(argv)
    if args.formats:
        return bench_formats(args)
    if args.rates:
        return bench_rates(args)
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
            the path of the text formats."""

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
        from gboost.data.encode import decode_planes

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


FRESH = """
import sys, time
t0 = time.perf_counter()
from gboost.data.inputs import open_input
from gboost.data.load import load_study
from gboost.data.study import QCOptions
t1 = time.perf_counter()
src = open_input(bfile=sys.argv[1])
t2 = time.perf_counter()
load_study(src, QCOptions())
t3 = time.perf_counter()
print(t1 - t0, t2 - t1, t3 - t2)
"""


def best_of_cpu(fn, repeats: int) -> tuple[float, float]:
    """(wall s, CPU s of the process, all threads) of the run with the shortest wall."""
    best = (float("inf"), 0.0)
    for _ in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        fn()
        wall, cpu = time.perf_counter() - t, time.process_time() - c
        best = min(best, (wall, cpu))
    return best


def bench_rates(args) -> int:
    """MB/s of the .bed per loading step (see the module notes). Beside the wall's rate, MB per
    CPU-second of the process (all threads): on a machine shared with other work the wall
    measures the share of the cores this process got, the CPU seconds what the work cost; with
    perfect scaling MB per CPU-second stays the same from 1 thread to n."""
    import numba

    sys.path.insert(0, os.path.join(ROOT, "bench"))
    from gboost.data.encode import bed_encode, bed_plan

    with tempfile.TemporaryDirectory() as tmp:
        prefix = args.bfile
        if prefix is None:
            import make_bed

            prefix = os.path.join(tmp, "s")
            make_bed.write(prefix, args.snps, args.samples, 0.01, 1, chromosomes=6)
        bed_mb = os.path.getsize(prefix + ".bed") / 1e6
        bim_lines = sum(1 for _ in open(prefix + ".bim", "rb"))
        qc_flags = QCOptions(maf=0.01, geno=0.05, hwe=1e-6)

        def opened():
            return open_input(bfile=prefix)

        study = load_study(opened(), QCOptions())  # warm-up: numba's code loaded, page cache
        load_study(opened(), qc_flags)
        rows = []
        rows.append(("open_input (.bim, .fam parsed; .bed checked)", *best_of_cpu(opened, args.repeats)))
        open_s = rows[0][1]
        src = opened()
        rows.append(("load_study, no QC flags", *best_of_cpu(lambda: load_study(src, QCOptions()), args.repeats)))
        rows.append(("load_study, --maf --geno --hwe", *best_of_cpu(lambda: load_study(src, qc_flags), args.repeats)))

        # The kernel alone: every row of the .bed, blocks in memory, planes touched beforehand.
        is_case = src.samples.status == 2
        scanned = np.flatnonzero(src.samples.status > 0)
        order = np.r_[scanned[~is_case[scanned]], scanned[is_case[scanned]]]
        plan = bed_plan(order, is_case[order], len(src.samples))
        blocks = [(a, d.copy()) for a, d in src.iter_bed_rows(None)]
        planes = np.zeros((len(src.variants), 3, plan.layout.n_words), dtype=np.uint64)
        counts = np.zeros((len(src.variants), 3, 2), dtype=np.int64)

        def kernel():
            for a, d in blocks:
                sel = np.arange(len(d), dtype=np.int64)
                bed_encode(d, plan, sel, planes[a:a + len(d)], counts[a:a + len(d)])

        kernel()
        rows.append(("bed_encode alone (blocks in memory)", *best_of_cpu(kernel, args.repeats)))
        del blocks, planes

        fresh = []
        for _ in range(args.repeats):
            out = subprocess.run([sys.executable, "-c", FRESH, prefix], capture_output=True, text=True, check=True,
                                 env={**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")})
            fresh.append([float(x) for x in out.stdout.split()])
        fresh_imports, fresh_open, fresh_load = min(fresh, key=lambda r: r[1] + r[2])

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=ROOT).stdout.strip()
    threads = numba.get_num_threads()
    print(f"{platform.node()}; {os.cpu_count()} cores, numba threads {threads}; commit {commit or '?'}; "
          f"{time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}; load average {os.getloadavg()[0]:.1f}")
    print(f"fileset: {prefix if args.bfile else 'bench/make_bed.py'}: {len(study.variants):,} SNPs scanned of "
          f"{bim_lines:,} x {study.n_samples:,} samples; .bed {bed_mb:.1f} MB; best of {args.repeats}")
    print(f"{'step':<48} {'s':>8} {'MB/s of .bed':>13} {'per thread':>11} {'CPU s':>7} {'MB/CPU-s':>9}")
    for name, secs, cpu in rows:
        print(f"{name:<48} {secs:>8.3f} {bed_mb / secs:>13.0f} {bed_mb / secs / threads:>11.0f} {cpu:>7.3f} "
              f"{bed_mb / max(cpu, 1e-9):>9.0f}")
    print(f"{'open_input, lines of .bim a second':<48} {open_s:>8.3f} {bim_lines / open_s:>13.3g}")
    print(f"fresh interpreter (first use of numba in the process): imports {fresh_imports:.3f} s, open_input "
          f"{fresh_open:.3f} s, load_study {fresh_load:.3f} s ({bed_mb / fresh_load:.0f} MB/s; "
          f"{fresh_load - rows[1][1]:.2f} s more than warm)")
    return 0


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
