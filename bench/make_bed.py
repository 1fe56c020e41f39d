"""Write a large PLINK 1 fileset fast, for benchmarks of the command at scale (bench_cli.py, bench_biobank.py).

    python bench/make_bed.py --out /tmp/big --snps 200000 --samples 200000 --missing 0.01 \\
        --ld-block 50 --ld-rho 0.9 --plant 1.3

`gboost simulate` draws every genotype in NumPy (about 2 minutes for 500k x 5k, and it holds the
whole matrix); plink1.9's --simulate takes minutes at biobank size. This writer streams: parallel
numba loops write each block of SNPs straight into .bed bytes while a thread writes the previous
block to disk, so memory is two blocks (``--block`` SNPs x ceil(n/4) bytes each), never the matrix.

The model, gboost/data/simulate.py's at its core, drawn from a counter-based hash of (seed, SNP,
sample) so that a block's bytes do not depend on the thread count or the block size:

* MAF of each SNP uniform in [``--maf-min``, 0.5] (default 0.05; 0.005 gives rare alleles, a few
  dozen copies at 5,000 samples; the planted SNPs: ``--plant-maf``);
* ``--chromosomes C`` of equal length, numbered 1..C, or with ``--x`` the last one named X, where
  males (sex 1, every other sample) carry one haplotype: their genotypes are homozygous, as a
  real chip calls them;
* ``--unknown-sex F``: that share of the samples (evenly spread) has sex 0 in the .fam, so that
  PLINK (and gboost, without --allow-no-sex) sets their phenotype missing: they are founders who
  are not scanned, as in real cohorts;
* LD blocks (``--ld-block B``, ``--ld-rho r``): each haplotype carries a latent uniform u along a
  block of B SNPs (restarted at every block and chromosome start); at each next SNP it is kept with
  probability r and redrawn otherwise, and the haplotype carries A1 where u < MAF. Every SNP keeps
  its Hardy-Weinberg MAF; neighbours with alike MAFs reach r^2 near 1. ``--ld-block 0``: independent
  SNPs;
* missing calls at rate ``--missing``, independent of everything else;
* ``--plant R``: one interacting pair, SNPs ``p // 3`` and ``2p // 3`` (in different LD blocks
  and, with several chromosomes, on different chromosomes), whose genotypes (A1 copies a, b) set
  the status: logit P(case) = b0 + ln(R) a b, b0 chosen so that about half the samples are cases.
  The pair has no term of its own SNPs alone on the logit scale: an interaction in the sense of
  BOOST's test. Its SNP IDs are printed and written to PREFIX.planted. Without ``--plant`` the
  first half of the samples are cases.

Prints the fileset written and the seconds of each part (the writer's speed); measures nothing else.
"""
from __future__ import annotations

import argparse
import os
import threading
import time

import numba as nb
import numpy as np

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLD = np.uint64(0x9E3779B97F4A7C15)
_SALT = np.uint64(0xD1B54A32D192ED03)
_LOW10 = np.uint64((1 << 10) - 1)
_LOW12 = np.uint64((1 << 12) - 1)
_LOW16 = np.uint64(0xFFFF)


@nb.njit(inline="always")
def _mix(z):
    """splitmix64's finalizer: a well-mixed 64-bit word from a counter."""
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


@nb.njit(cache=True)
def snp_mafs(seed, first, m, planted, plant_maf, maf_min=0.05):
    """MAF of SNPs first..first+m: uniform in [maf_min, 0.5] from the hash of (seed, SNP)."""
    out = np.empty(m, np.float64)
    for r in range(m):
        j = first + r
        h = _mix(np.uint64(seed) * _GOLD + np.uint64(j) * _SALT + np.uint64(1))
        out[r] = maf_min + (0.5 - maf_min) * (np.float64(h >> np.uint64(11)) * (1.0 / 9007199254740992.0))
        for k in range(planted.shape[0]):
            if planted[k] == j:
                out[r] = plant_maf
    return out


@nb.njit(parallel=True, nogil=True, cache=True)
def _fill(rows, first, n, thr, restart, keep10, miss12, seed, u, planted, captured, haploid, male):
    """.bed codes of SNPs first..first+len(rows) into ``rows`` (SNPs x bytes).

    ``u`` (n, 2) uint16: each sample's two haplotypes' latent uniforms (16 bits), carried from block
    to block (the Markov chain runs along the SNPs, so blocks go in order). ``thr``: MAF x 2^16 per
    SNP (a haplotype carries A1 where u < thr); ``restart``: SNPs where every haplotype redraws
    (block or chromosome start); ``keep10``: the chance a haplotype keeps its u, in 2^-10 units;
    ``miss12``: the missing rate in 2^-12 units (so --ld-rho and --missing are rounded to those).
    The true genotypes of the ``planted`` SNPs (global indices) go to ``captured``. Where
    ``haploid[r]`` (an X SNP), a ``male`` sample carries its first haplotype twice.
    Work is split by groups of 64 bytes (256 samples): each thread writes whole 64-byte runs of
    every row, and keeps its samples' state in L1.
    """
    m, nbytes = rows.shape
    groups = (nbytes + 63) // 64
    s0 = np.uint64(seed) * _GOLD
    for gi in nb.prange(groups):
        b0 = gi * 64
        b1 = min(nbytes, b0 + 64)
        for r in range(m):
            j = first + r
            t = np.uint32(thr[r])
            fresh = restart[r]
            hap = haploid[r]
            cap = -1
            for k in range(planted.shape[0]):
                if planted[k] == j:
                    cap = k
            kj = s0 + np.uint64(j) * np.uint64(0x100000001B3)
            for b in range(b0, b1):
                byte = 0
                for q in range(4):
                    s = 4 * b + q
                    if s >= n:
                        break
                    # One hash a sample and SNP, 64 bits: keep-u decisions of the two haplotypes
                    # (10 bits each), the missing call (12 bits), two fresh 16-bit u's. Branch-free
                    # (selects, not jumps): redraws and genotypes are random, and mispredicted
                    # branches cost more than the work they would skip.
                    h = _mix(kj ^ (np.uint64(s) * _SALT))
                    k0 = fresh | ((h & _LOW10) >= np.uint64(keep10))
                    k1 = fresh | (((h >> np.uint64(10)) & _LOW10) >= np.uint64(keep10))
                    v0 = np.uint16((h >> np.uint64(32)) & _LOW16) if k0 else u[s, 0]
                    v1 = np.uint16(h >> np.uint64(48)) if k1 else u[s, 1]
                    u[s, 0] = v0
                    u[s, 1] = v1
                    a0 = np.int32(np.uint32(v0) < t)
                    g = a0 + a0 if hap and male[s] else a0 + np.int32(np.uint32(v1) < t)
                    if cap >= 0:
                        captured[cap, s] = g
                    # .bed codes by A1 copies: 2 -> 00, 1 -> 10, 0 -> 11; 01 = missing
                    code = 3 - g - (g >> 1)
                    code = 1 if ((h >> np.uint64(20)) & _LOW12) < np.uint64(miss12) else code
                    byte |= code << (2 * q)
                rows[r, b] = byte


def warm() -> None:
    """Compile (or load from numba's cache) the kernels on a few bytes, so a timed write is not
    charged for them."""
    planted = np.zeros(0, np.int64)
    thr = np.rint(snp_mafs(1, 0, 2, planted, 0.3, 0.05) * 2.0**16).astype(np.uint32)
    _fill(np.empty((2, 2), np.uint8), 0, 8, thr, np.ones(2, bool), 0, 0, 1, np.zeros((8, 2), np.uint16), planted,
          np.zeros((0, 8), np.int8), np.zeros(2, bool), np.zeros(8, bool))


def planted_snps(snps: int) -> np.ndarray:
    """The planted pair's SNP indices: a third and two thirds of the way along."""
    return np.array([snps // 3, (2 * snps) // 3], dtype=np.int64)


def case_status(a: np.ndarray, b: np.ndarray, effect: float, seed: int) -> np.ndarray:
    """Case (True) per sample under logit P(case) = b0 + ln(effect) a b, b0 set so that the mean
    risk is 1/2 (bisection), drawn with a generator of its own."""
    x = np.log(effect) * (a.astype(np.float64) * b.astype(np.float64))
    lo, hi = -50.0, 50.0
    for _ in range(100):
        b0 = 0.5 * (lo + hi)
        if np.mean(1.0 / (1.0 + np.exp(-(b0 + x)))) > 0.5:
            hi = b0
        else:
            lo = b0
    risk = 1.0 / (1.0 + np.exp(-(0.5 * (lo + hi) + x)))
    return np.random.default_rng([seed, 21]).random(len(a)) < risk


def write(prefix: str, snps: int, samples: int, missing: float, seed: int, chromosomes: int = 1,
          block: int = 4096, ld_block: int = 0, ld_rho: float = 0.9, plant: float | None = None,
          plant_maf: float = 0.3, maf_min: float = 0.05, x: bool = False, unknown_sex: float = 0.0) -> dict:
    """Write PREFIX.bed/.bim/.fam (and PREFIX.planted with ``plant``); returns what was written
    (``planted``: the pair's SNP IDs, ``seconds``: split by part)."""
    if not 0 <= missing < 1 or not 0 <= ld_rho <= 1 or ld_block < 0 or snps < 2 or samples < 4:
        raise SystemExit("make_bed: need 0 <= missing < 1, 0 <= ld-rho <= 1, ld-block >= 0, >= 2 SNPs, >= 4 samples")
    if not 0 < maf_min <= 0.5 or not 0 <= unknown_sex < 1:
        raise SystemExit("make_bed: need 0 < maf-min <= 0.5 and 0 <= unknown-sex < 1")
    t0 = time.perf_counter()
    n = samples
    nbytes = (n + 3) // 4
    per_chr = -(-snps // chromosomes)
    planted = planted_snps(snps) if plant is not None else np.zeros(0, np.int64)
    captured = np.zeros((len(planted), n), np.int8)
    u = np.zeros((n, 2), np.uint16)
    male = np.arange(n) % 2 == 0  # sex 1 in the .fam
    x_first = (chromosomes - 1) * per_chr if x else snps  # the X's first SNP
    keep10 = int(round((ld_rho if ld_block > 1 else 0.0) * (1 << 10)))
    miss12 = int(round(missing * (1 << 12)))
    bufs = [np.empty((min(block, snps), nbytes), np.uint8) for _ in range(2)]
    writer: threading.Thread | None = None
    errors: list = []
    write_s = [0.0]

    def put(fh, data):
        t = time.perf_counter()
        try:
            fh.write(memoryview(data).cast("B"))
        except BaseException as exc:  # noqa: BLE001 - re-raised on the main thread
            errors.append(exc)
        write_s[0] += time.perf_counter() - t

    with open(prefix + ".bed", "wb") as fh:
        fh.write(bytes([0x6C, 0x1B, 0x01]))
        for k, first in enumerate(range(0, snps, block)):
            m = min(block, snps - first)
            buf = bufs[k % 2]
            j = np.arange(first, first + m)
            restart = ((j % per_chr) % ld_block == 0) if ld_block > 1 else np.ones(m, bool)
            thr = np.rint(snp_mafs(seed, first, m, planted, plant_maf, maf_min) * 2.0**16).astype(np.uint32)
            if writer is not None:  # the buffer about to be filled was written two blocks ago
                writer.join()
            if errors:
                raise errors[0]
            _fill(buf[:m], first, n, thr, restart, keep10, miss12, seed, u, planted, captured, j >= x_first, male)
            writer = threading.Thread(target=put, args=(fh, buf[:m]))
            writer.start()
        writer.join()
        if errors:
            raise errors[0]
    t_bed = time.perf_counter() - t0
    names = [f"snp{j}" for j in range(snps)]
    with open(prefix + ".bim", "w") as fh:
        chrom = [str(c) for c in range(1, chromosomes + 1)]
        if x:
            chrom[-1] = "X"
        fh.write("".join(f"{chrom[j // per_chr]}\t{names[j]}\t0\t{1000 + 100 * (j % per_chr)}\tA\tG\n"
                         for j in range(snps)))
    if plant is not None:
        case = case_status(captured[0], captured[1], plant, seed)
        with open(prefix + ".planted", "w") as fh:
            fh.write(f"{names[planted[0]]}\t{names[planted[1]]}\t{plant}\n")
    else:
        case = np.arange(n) < n // 2
    status = np.where(case, 2, 1)
    sex = np.where(male, 1, 2)
    if unknown_sex > 0:  # evenly spread: the samples i where floor((i + 1) F) steps up
        sex[np.flatnonzero(np.diff(np.floor(np.arange(n + 1) * unknown_sex)) > 0)] = 0
    with open(prefix + ".fam", "w") as fh:
        fh.write("".join(f"f{i}\ti{i}\t0\t0\t{sex[i]}\t{status[i]}\n" for i in range(n)))
    return {"planted": [names[k] for k in planted], "cases": int(case.sum()),
            "seconds": {"bed": t_bed, "bed_write_thread": write_s[0], "total": time.perf_counter() - t0}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--snps", type=int, required=True)
    ap.add_argument("--samples", type=int, default=5000)
    ap.add_argument("--missing", type=float, default=0.01)
    ap.add_argument("--chromosomes", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--block", type=int, default=4096, help="SNPs a block (memory: two blocks of ceil(n/4) bytes a SNP)")
    ap.add_argument("--ld-block", type=int, default=0, metavar="B", help="SNPs of an LD block (0: independent SNPs)")
    ap.add_argument("--ld-rho", type=float, default=0.9, metavar="R", help="chance a haplotype keeps its latent allele")
    ap.add_argument("--plant", type=float, metavar="R", help="plant one interacting pair with odds ratio R per a*b")
    ap.add_argument("--plant-maf", type=float, default=0.3)
    ap.add_argument("--maf-min", type=float, default=0.05, help="lowest MAF (uniform in [maf-min, 0.5])")
    ap.add_argument("--x", action="store_true", help="the last chromosome is X (males homozygous there)")
    ap.add_argument("--unknown-sex", type=float, default=0.0, metavar="F", help="share of samples with sex 0")
    a = ap.parse_args()
    for ext in (".bed", ".bim", ".fam"):
        if os.path.exists(a.out + ext):
            raise SystemExit(f"make_bed: {a.out}{ext} exists; choose another --out")
    info = write(a.out, a.snps, a.samples, a.missing, a.seed, a.chromosomes, a.block, a.ld_block, a.ld_rho,
                 a.plant, a.plant_maf, a.maf_min, a.x, a.unknown_sex)
    s = info["seconds"]
    print(f"wrote {a.out}.bed/.bim/.fam: {a.snps} SNPs x {a.samples} samples ({info['cases']} cases), "
          f"{a.missing:.2%} missing, LD blocks {a.ld_block} (rho {a.ld_rho}), MAF >= {a.maf_min}, "
          f"{a.chromosomes} chromosomes{' (last X)' if a.x else ''}, {a.unknown_sex:.0%} unknown sex, planted {info['planted'] or 'none'}; "
          f".bed in {s['bed']:.1f} s ({s['bed_write_thread']:.1f} s of it writing, overlapped), "
          f"all in {s['total']:.1f} s")


if __name__ == "__main__":
    main()
