"""Issue 18, goal 1: the cost of correcting for missing calls on the CUDA cores (bench only).

    python3 bench/missing_correction.py --p 200000 --n 5000 --missing 0.01   # on a GPU: seconds a scan

A pair's table with missing calls needs, besides the 4 products of the fully called path, 5 counts a
class: popc(G_a(i) & M(j)), popc(M(i) & G_b(j)) and popc(M(i) & M(j)). ``bench/kernels/missing_correction.cu``
takes them from each SNP's short list of missing samples as bit-sliced counters, for the tensor-core
kernel's blocks of 128 x 64 SNPs, alone (no counting, no KSA). Its time against the 9-product
kernel's extra time over the 4-product one (1.30 against 0.59 s at 200k x 5k with 1 % missing calls on an
H100, docs/PERFORMANCE.md) says whether counting 4 products and correcting would reach issue 18's
1.3x. ``tests/test_missing_correction.py`` checks its counts against NumPy's, exactly.

Measured on an H100 (2026-11-27, docs/PERFORMANCE.md, issue 18 eleventh round): 1.294 s at 1 %, as long
as the whole 9-product kernel; it is bound by its ~64k scattered loads a block. So the design does not
pay in this form; this script keeps the measurement reproducible.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

KERNEL = Path(__file__).resolve().parent / "kernels" / "missing_correction.cu"
SMEM = (2 * 2 * 64 * 33 + 2 * 3 * 128 * 17) * 4  # the kernel's dynamic shared memory


def simulate(p: int, n: int, missing, seed: int = 1, rng=None):
    """Genotype planes G1, G2 and the missing plane M (bool, p x n) of random SNPs (allele frequencies
    0.05-0.5, probabilities in steps of 2^-16: 16-bit draws, no p x n float arrays); ``missing``: one
    rate or a rate per SNP."""
    rng = np.random.default_rng(seed) if rng is None else rng
    f = (rng.uniform(0.05, 0.5, p) * 65536).astype(np.uint16)[:, None]
    h1 = rng.integers(0, 65536, (p, n), dtype=np.uint16) < f  # the two alleles
    h2 = rng.integers(0, 65536, (p, n), dtype=np.uint16) < f
    rate = (np.broadcast_to(np.asarray(missing, float), (p,)) * 65536).astype(np.uint32)[:, None]
    m = rng.integers(0, 65536, (p, n), dtype=np.uint16) < rate
    return (h1 ^ h2) & ~m, h1 & h2 & ~m, m


def transposed_planes(planes) -> np.ndarray:
    """[3][n][pw] uint32: bit i % 32 of word i / 32 of sample s is plane[i, s]."""
    p, n = planes[0].shape
    pw = -(-p // 32)
    out = np.zeros((3, n, pw * 4), np.uint8)
    for x, pl in enumerate(planes):
        out[x, :, : -(-p // 8)] = np.packbits(pl.T, axis=1, bitorder="little")
    return out.view(np.uint32)


def missing_lists(m: np.ndarray, n_ctrl: int) -> tuple[np.ndarray, np.ndarray]:
    """([p][2][lmax] sample indices, [p][2] their number) of each SNP's missing samples by class."""
    p = m.shape[0]
    cnt = np.stack([m[:, :n_ctrl].sum(axis=1), m[:, n_ctrl:].sum(axis=1)], axis=1).astype(np.int32)
    lmax = max(1, int(cnt.max()))
    lst = np.zeros((p, 2, lmax), np.int32)
    for k, (a, b) in enumerate(((0, n_ctrl), (n_ctrl, m.shape[1]))):
        snp, s = np.nonzero(m[:, a:b])
        pos = np.arange(len(snp)) - np.repeat(np.cumsum(cnt[:, k]) - cnt[:, k], cnt[:, k])
        lst[snp, k, pos] = s + a
    return lst, cnt


def reference(g1, g2, m, n_ctrl: int) -> np.ndarray:
    """[p][p][2][5] counts c1, c2, d1, d2, e by integer products (NumPy), every pair."""
    p = g1.shape[0]
    out = np.zeros((p, p, 2, 5), np.int64)
    for k, cls in enumerate((slice(0, n_ctrl), slice(n_ctrl, None))):
        a1, a2, am = (x[:, cls].astype(np.int64) for x in (g1, g2, m))
        out[:, :, k, 0] = a1 @ am.T
        out[:, :, k, 1] = a2 @ am.T
        out[:, :, k, 2] = am @ a1.T
        out[:, :, k, 3] = am @ a2.T
        out[:, :, k, 4] = am @ am.T
    return out


def emulate(gt: np.ndarray, lst: np.ndarray, cnt: np.ndarray, bits: int) -> np.ndarray:
    """The kernel's arithmetic in NumPy (bit-sliced adds of whole words, then the counts read bit by
    bit), every pair: [p][p][2][5] like :func:`reference`."""
    p, pw = lst.shape[0], gt.shape[2]

    def counted(plane: int, snp: int, k: int) -> np.ndarray:  # counts of all SNPs against snp's list
        v = np.zeros((bits, pw), np.uint32)
        for s in lst[snp, k, : cnt[snp, k]]:
            x = gt[plane, s].copy()
            for b in range(bits):
                t = v[b] & x
                v[b] ^= x
                x = t
            assert not x.any(), "a count carried out of its bit planes"
        bit = (v[:, :, None] >> np.arange(32, dtype=np.uint32)) & 1          # (bits, pw, 32)
        return (bit.reshape(bits, -1)[:, :p].astype(np.int64) << np.arange(bits)[:, None]).sum(axis=0)

    out = np.zeros((p, p, 2, 5), np.int64)
    for snp in range(p):
        for k in range(2):
            out[:, snp, k, 0] = counted(0, snp, k)  # c_a(i, snp): i's G_a at snp's missing samples
            out[:, snp, k, 1] = counted(1, snp, k)
            out[snp, :, k, 2] = counted(0, snp, k)  # d_b(snp, j): j's G_b at snp's missing samples
            out[snp, :, k, 3] = counted(1, snp, k)
            out[snp, :, k, 4] = counted(2, snp, k)
    return out


def bits_for(cnt: np.ndarray) -> int:
    """Bit planes of the counters: enough for the longest list (the kernel is built for 5 to 8)."""
    need = max(5, int(cnt.max()).bit_length())
    if need > 8:
        raise ValueError(f"{int(cnt.max())} missing calls of one class at one SNP: more than 8 bit planes")
    return need


def simulate_large(p: int, n: int, n_ctrl: int, missing: float, seed: int = 1, chunk: int = 8192):
    """(gt, lst, cnt) of a large study (:func:`simulate`), built a chunk of SNPs at a time."""
    rng = np.random.default_rng(seed)
    pw = -(-p // 32)
    gt = np.zeros((3, n, pw), np.uint32)
    lists, cnts = [], []
    for a in range(0, p, chunk):
        planes = simulate(min(chunk, p - a), n, missing, rng=rng)
        m = planes[2]
        part = transposed_planes(planes)  # (chunk a multiple of 32: whole words)
        gt[:, :, a // 32: a // 32 + part.shape[2]] = part
        lst, cnt = missing_lists(m, n_ctrl)
        lists.append(lst)
        cnts.append(cnt)
    lmax = max(x.shape[2] for x in lists)
    lst = np.zeros((p, 2, lmax), np.int32)
    o = 0
    for x in lists:
        lst[o: o + len(x), :, : x.shape[2]] = x
        o += len(x)
    return gt, lst, np.concatenate(cnts)


class Corrections:
    """The kernel on one device, for one study's planes and lists (or ``prepared``: gt, lst, cnt)."""

    def __init__(self, g1=None, g2=None, m=None, n_ctrl: int = 0, prepared=None):
        import cupy as cp

        self.cp = cp
        if prepared is None:
            lst, cnt = missing_lists(m, n_ctrl)
            gt = transposed_planes((g1, g2, m))
        else:
            gt, lst, cnt = prepared
        self.p, self.n = lst.shape[0], gt.shape[1]
        self.pw, self.lmax, self.bits = gt.shape[2], lst.shape[2], bits_for(cnt)
        self.gt, self.lst, self.cnt = cp.asarray(gt), cp.asarray(lst), cp.asarray(cnt)
        self.mod = cp.RawModule(code=KERNEL.read_text(), options=("-std=c++17",))
        sms = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)["multiProcessorCount"]
        self.grid = sms * 2  # two blocks of 256 threads an SM (86 KB of shared memory each)

    def _fn(self, write: bool):
        f = self.mod.get_function(f"mc_corrections_{8 if write else self.bits}_{int(write)}")
        f.max_dynamic_shared_size_bytes = SMEM
        return f

    def run(self, write: bool = False):
        cp = self.cp
        out = cp.zeros((self.p, self.p, 2, 5) if write else (1,), cp.uint8)
        chk = cp.zeros(self.grid * 256, cp.uint32)
        self._fn(write)((self.grid,), (256,), (self.gt, np.int32(self.n), np.int32(self.pw), self.lst, self.cnt,
                                                np.int32(self.lmax), np.int32(self.p), out, chk), shared_mem=SMEM)
        return out, chk

    def seconds(self, reps: int = 3) -> float:
        cp = self.cp
        self.run()
        best = float("inf")
        for _ in range(reps):
            e0, e1 = cp.cuda.Event(), cp.cuda.Event()
            e0.record()
            self.run()
            e1.record()
            e1.synchronize()
            best = min(best, cp.cuda.get_elapsed_time(e0, e1) / 1000.0)
        return best


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--p", type=int, default=200000)
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--missing", type=float, nargs="+", default=[0.001, 0.01, 0.05])
    a = ap.parse_args(argv)
    for rate in a.missing:
        c = Corrections(prepared=simulate_large(a.p, a.n, a.n // 2, rate))
        t = c.seconds()
        pairs = a.p * (a.p - 1) / 2
        print(f"corrections p={a.p} n={a.n} missing={rate}: {t:.4f} s ({c.bits} bit planes, lists up to "
              f"{c.lmax}), {pairs / t:.3e} pairs/s", flush=True)
        del c
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
