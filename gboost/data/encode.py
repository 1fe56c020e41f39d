"""Genotypes -> bit planes (docs/DESIGN.md §3.2, GBOOST §2.2).

Per SNP three planes, one per genotype type 0/1/2; bit s of a plane is set when sample s has that
type. A missing call sets no bit in any plane, so AND+popcount over two SNPs counts exactly the
samples called in both (PLINK 1.9's rule). Controls come first, cases after, each class padded with
zero bits to a whole number of 64-bit words so that no word mixes classes.

Two layouts of the same words:

* CPU, SNP-major ``(p, 3, W)``: one SNP's three planes are contiguous, so a pair streams two short
  contiguous rows through the cache.
* GPU, type-major and SNP fastest ``(3, W, p)`` (GBOOST Fig. S5): thread t of a warp handles SNP
  j0 + t and reads word ``[type, w, j0 + t]``, so neighbouring threads touch neighbouring
  addresses and every load is coalesced.
"""
from __future__ import annotations

from dataclasses import dataclass

import numba as nb
import numpy as np

from gboost.runtime.numba_cache import cached_njit
from gboost.stats.table import popcount64  # the hardware popcount (LLVM ctpop)

WORD_BITS = 64


def words_for(n: int) -> int:
    """Words needed for ``n`` samples of one class."""
    return (n + WORD_BITS - 1) // WORD_BITS


@dataclass(frozen=True)
class ClassLayout:
    """Where each class lives in a plane: controls in words [0, w_ctrl), cases in [w_ctrl, W)."""

    n_ctrl: int
    n_case: int

    @property
    def w_ctrl(self) -> int:
        return words_for(self.n_ctrl)

    @property
    def w_case(self) -> int:
        return words_for(self.n_case)

    @property
    def n_words(self) -> int:
        return self.w_ctrl + self.w_case

    @classmethod
    def from_status(cls, is_case: np.ndarray) -> "ClassLayout":
        is_case = np.asarray(is_case, dtype=bool)
        return cls(int((~is_case).sum()), int(is_case.sum()))


def sample_order(is_case: np.ndarray) -> np.ndarray:
    """Column order that puts controls first then cases, each in file order (stable)."""
    is_case = np.asarray(is_case, dtype=bool)
    return np.concatenate([np.flatnonzero(~is_case), np.flatnonzero(is_case)])


def _pack_class(geno: np.ndarray, n_words: int) -> np.ndarray:
    """Pack one class's genotypes ``(b, n)`` into ``(b, 3, n_words)`` uint64 planes (NumPy).

    The reference for :func:`encode_block`; sample s of the class is bit s % 64 of word s // 64.
    """
    b, n = geno.shape
    out = np.zeros((b, 3, n_words * WORD_BITS), dtype=bool)
    for t in range(3):
        out[:, t, :n] = geno == t
    packed = np.packbits(out, axis=-1, bitorder="little")
    return packed.view("<u8").reshape(b, 3, n_words).astype(np.uint64, copy=False)


# A .bed 2-bit code -> the A1 count bed-reader gives with count_A1=True (00 -> 2, 01 missing, 10 -> 1, 11 -> 0).
_BED_GENO = np.array([2, -1, 1, 0], dtype=np.int8)


def _read_only(a: np.ndarray) -> np.ndarray:
    """``a`` as a read-only array (a view; no copy). numba types read-only and writable arrays
    apart and compiles each: a .bed block read whole is the file's read-only map, one with SNPs
    left out a writable copy. One signature for both, so that ``gboost warm`` covers every
    block (docs/PERFORMANCE.md, "First run after install")."""
    if a.flags.writeable:
        a = a.view()
        a.flags.writeable = False
    return a


@cached_njit(parallel=True)
def _encode_words(src, sel, cols, w_first, out, bed):
    """Planes of the samples ``cols`` (in plane order) of the SNP rows ``sel`` of ``src`` into words
    ``w_first...`` of ``out`` (row k of ``out`` from row ``sel[k]``): sample s is bit s % 64 of word
    w_first + s // 64 of the plane of its genotype (a missing call sets none). ``src`` is an int8
    block of calls (0/1/2, negative missing, column = sample) or, with ``bed``, raw .bed rows
    (column = byte of 4 samples). Rows are picked by ``sel`` rather than copied out first: a .bed
    block with SNPs left out would otherwise be copied whole (host memory at biobank scale).

    Each word of the three planes is built in registers from 64 samples, branch-free, and stored
    once: a store per sample (and, on random genotypes, a mispredicted branch) was the cost of the
    first versions, several times this loop's.
    """
    n = cols.shape[0]
    for k in nb.prange(sel.shape[0]):
        r = sel[k]
        for w in range((n + 63) >> 6):
            w0 = np.uint64(0)
            w1 = np.uint64(0)
            w2 = np.uint64(0)
            for b in range(min(64, n - (w << 6))):
                c = cols[(w << 6) + b]
                if bed:  # the same every iteration: no misprediction
                    g = _BED_GENO[(src[r, c >> 2] >> ((c & 3) * 2)) & 3]
                else:
                    g = src[r, c]
                sh = np.uint64(b)
                w0 |= np.uint64(g == 0) << sh
                w1 |= np.uint64(g == 1) << sh
                w2 |= np.uint64(g == 2) << sh
            out[k, 0, w_first + w] = w0
            out[k, 1, w_first + w] = w1
            out[k, 2, w_first + w] = w2


# ---------------------------------------------------------------------------------------------
# A .bed's 2-bit codes -> planes, 64 samples at a time
#
# A .bed row holds sample s's code at bits 2(s % 4) and 2(s % 4) + 1 of byte s // 4 (low bit
# first). Sixteen bytes unshuffled give two words over 64 file samples: ``lo`` (the low bits) and
# ``hi``. Codes 00 / 01 / 10 / 11 are A1/A1 (2 copies), missing, het, A2/A2, so genotype 0 is
# ``lo & hi``, 1 is ``hi & ~lo``, 2 is ``~(lo | hi)`` and a missing call sets none.
# A class's samples in plane order are its file samples in file order, so its bits in one file
# word are that word *compressed* by the class's mask (x86's PEXT, done here by Hacker's
# Delight's compress, 7-4, whose six move masks depend on the mask only: precomputed per word in
# BedPlan). The compressed bits are appended to the class's output word. About 6x fewer
# operations per sample than gathering sample by sample (what _encode_words does for any column
# order), and no branch that depends on the data.

_U64 = np.uint64
# Per byte: its four low code bits in bits 0-3, its four high code bits in bits 4-7 (a row's tail).
_BED_SPLIT = np.array([sum(((x >> (2 * s)) & 1) << s | ((x >> (2 * s + 1)) & 1) << (s + 4) for s in range(4))
                       for x in range(256)], dtype=np.uint8)


@cached_njit(inline="always")
def _unshuffle(x):
    """Even bits of ``x`` to its low half, odd bits to its high half, each in order."""
    t = (x ^ (x >> _U64(1))) & _U64(0x2222222222222222)
    x = x ^ t ^ (t << _U64(1))
    t = (x ^ (x >> _U64(2))) & _U64(0x0C0C0C0C0C0C0C0C)
    x = x ^ t ^ (t << _U64(2))
    t = (x ^ (x >> _U64(4))) & _U64(0x00F000F000F000F0)
    x = x ^ t ^ (t << _U64(4))
    t = (x ^ (x >> _U64(8))) & _U64(0x0000FF000000FF00)
    x = x ^ t ^ (t << _U64(8))
    t = (x ^ (x >> _U64(16))) & _U64(0x00000000FFFF0000)
    return x ^ t ^ (t << _U64(16))


@cached_njit(inline="always")
def _load8(raw, r, i):
    """Bytes i..i+7 of row r as a little-endian word (LLVM merges the loads into one)."""
    return (_U64(raw[r, i]) | (_U64(raw[r, i + 1]) << _U64(8)) | (_U64(raw[r, i + 2]) << _U64(16))
            | (_U64(raw[r, i + 3]) << _U64(24)) | (_U64(raw[r, i + 4]) << _U64(32))
            | (_U64(raw[r, i + 5]) << _U64(40)) | (_U64(raw[r, i + 6]) << _U64(48))
            | (_U64(raw[r, i + 7]) << _U64(56)))


@cached_njit(inline="always")
def _bed_word(raw, r, fw, split):
    """(lo, hi): the low and high code bits of file samples 64 fw ... 64 fw + 63 of row r (zero
    past the row's end)."""
    b0 = fw * 16
    nbytes = raw.shape[1]
    if b0 + 16 <= nbytes:
        a = _unshuffle(_load8(raw, r, b0))
        b = _unshuffle(_load8(raw, r, b0 + 8))
        return (a & _U64(0xFFFFFFFF)) | (b << _U64(32)), (a >> _U64(32)) | (b & _U64(0xFFFFFFFF00000000))
    lo = _U64(0)
    hi = _U64(0)
    for j in range(nbytes - b0):
        v = _U64(split[raw[r, b0 + j]])
        lo |= (v & _U64(15)) << _U64(4 * j)
        hi |= (v >> _U64(4)) << _U64(4 * j)
    return lo, hi


@cached_njit(inline="always")
def _compressed(x, moves, c, fw):
    """Hacker's Delight 7-4 compress of ``x`` by the mask whose moves are ``moves[c, fw]``."""
    for i in range(6):
        mv = moves[c, fw, i]
        t = x & mv
        x = (x ^ t) | (t >> _U64(1 << i))
    return x


@cached_njit(inline="always")
def _put_planes(out, k, w, lo, hi, valid):
    """Word w of row k's three planes from low/high code bits; returns their popcounts."""
    g0 = lo & hi
    g1 = hi & ~lo
    g2 = ~(lo | hi) & valid
    out[k, 0, w] = g0
    out[k, 1, w] = g1
    out[k, 2, w] = g2
    return popcount64(g0), popcount64(g1), popcount64(g2)


@cached_njit(inline="always")
def _append(out, k, x, y, kk, acc_lo, acc_hi, filled, w, c0, c1, c2):
    """Append ``kk`` compressed samples (low bits ``x``, high bits ``y``) to a class's output
    words, storing a word (and counting it) when 64 are in hand."""
    acc_lo |= x << _U64(filled)
    acc_hi |= y << _U64(filled)
    filled += kk
    if filled >= 64:
        p0, p1, p2 = _put_planes(out, k, w, acc_lo, acc_hi, ~_U64(0))
        c0 += p0
        c1 += p1
        c2 += p2
        w += 1
        filled -= 64
        if filled > 0:  # the bits of x, y that did not fit
            acc_lo = x >> _U64(kk - filled)
            acc_hi = y >> _U64(kk - filled)
        else:
            acc_lo = _U64(0)
            acc_hi = _U64(0)
    return acc_lo, acc_hi, filled, w, c0, c1, c2


@cached_njit(parallel=True, nogil=True)
def _bed_encode(raw, sel, masks, moves, pops, w_first, split, out, counts, quantitative, mono):
    """Planes of rows ``sel`` of raw .bed rows into ``out`` (row k from row sel[k]) and their
    called-genotype counts per class into ``counts[k, type, class]``: class c (0 controls, 1
    cases) holds the set bits of ``masks[c]`` (words over file samples), its plane words start
    at ``w_first[c]``; ``moves``, ``pops``: each mask word's compress moves and popcount
    (BedPlan). ``mono[k]``: whether the scan skips the SNP (:func:`monomorphic`'s rule). Each
    file word is read and unshuffled once for both classes (cases and controls interleave in a
    real cohort's .fam)."""
    n_fw = masks.shape[1]
    full = ~_U64(0)
    for k in nb.prange(sel.shape[0]):
        r = sel[k]
        a_lo = a_hi = b_lo = b_hi = _U64(0)
        a_n = b_n = 0
        a_w = w_first[0]
        b_w = w_first[1]
        a0 = a1 = a2 = b0 = b1 = b2 = 0
        for fw in range(n_fw):
            m0 = masks[0, fw]
            m1 = masks[1, fw]
            if m0 == _U64(0) and m1 == _U64(0):
                continue
            lo, hi = _bed_word(raw, r, fw, split)
            if m0 != _U64(0):
                x = lo & m0
                y = hi & m0
                if m0 != full:
                    x = _compressed(x, moves, 0, fw)
                    y = _compressed(y, moves, 0, fw)
                a_lo, a_hi, a_n, a_w, a0, a1, a2 = _append(out, k, x, y, pops[0, fw], a_lo, a_hi, a_n, a_w,
                                                           a0, a1, a2)
            if m1 != _U64(0):
                x = lo & m1
                y = hi & m1
                if m1 != full:
                    x = _compressed(x, moves, 1, fw)
                    y = _compressed(y, moves, 1, fw)
                b_lo, b_hi, b_n, b_w, b0, b1, b2 = _append(out, k, x, y, pops[1, fw], b_lo, b_hi, b_n, b_w,
                                                           b0, b1, b2)
        if a_n > 0:  # a class's last word: zero padding
            p0, p1, p2 = _put_planes(out, k, a_w, a_lo, a_hi, (_U64(1) << _U64(a_n)) - _U64(1))
            a0 += p0
            a1 += p1
            a2 += p2
        if b_n > 0:
            p0, p1, p2 = _put_planes(out, k, b_w, b_lo, b_hi, (_U64(1) << _U64(b_n)) - _U64(1))
            b0 += p0
            b1 += p1
            b2 += p2
        counts[k, 0, 0] = a0
        counts[k, 1, 0] = a1
        counts[k, 2, 0] = a2
        counts[k, 0, 1] = b0
        counts[k, 1, 1] = b1
        counts[k, 2, 1] = b2
        t0 = a0 + b0
        t1 = a1 + b1
        t2 = a2 + b2
        if quantitative:
            mono[k] = t1 == 0 and (t0 == 0 or t2 == 0)
        else:
            mono[k] = (t0 > 0) + (t1 > 0) + (t2 > 0) < 2


@cached_njit(parallel=True, nogil=True)
def _bed_set_counts(raw, sel, masks, split, out):
    """``out[k, type, s]``: samples of set s (bit mask ``masks[s]`` over file samples) with
    genotype type 0/1/2 in row ``sel[k]`` of raw .bed rows; by popcount, no planes made."""
    n_sets = masks.shape[0]
    for k in nb.prange(sel.shape[0]):
        r = sel[k]
        for s in range(n_sets):
            out[k, 0, s] = 0
            out[k, 1, s] = 0
            out[k, 2, s] = 0
        for fw in range(masks.shape[1]):
            lo, hi = _bed_word(raw, r, fw, split)
            g0 = lo & hi
            g1 = hi & ~lo
            g2 = ~(lo | hi)
            for s in range(n_sets):
                m = masks[s, fw]
                out[k, 0, s] += popcount64(g0 & m)
                out[k, 1, s] += popcount64(g1 & m)
                out[k, 2, s] += popcount64(g2 & m)


_EVEN = _U64(0x5555555555555555)


@cached_njit(parallel=True, nogil=True)
def _bed_class_counts(raw, sel, spread, n_class, quantitative, out, mono):
    """``out[k, type, c]``: called genotypes of type 0/1/2 among the samples of class c (0
    controls, 1 cases) in row ``sel[k]`` of raw .bed rows, read off the 2-bit codes in place: no
    unshuffle, no planes (the counting pass of a background encode). ``spread[c,
    q]``: class c's samples among file samples 32 q ... 32 q + 31, one bit at the low bit of each
    sample's code (zero past the row's last sample). Per class: a = samples with the low bit set
    (codes 01 missing, 11), b = with the high bit set (10, 11), d = with both (11, type 0): type 1
    (code 10) is b - d, type 2 (code 00) is n - a - b + d. ``mono[k]``: whether the scan skips
    the SNP (:func:`monomorphic`'s rule, as ``_bed_encode`` flags it)."""
    nbytes = raw.shape[1]
    n_full = nbytes // 8
    n_chunks = spread.shape[1]
    for k in nb.prange(sel.shape[0]):
        r = sel[k]
        a0 = b0 = d0 = a1 = b1 = d1 = 0
        for q in range(n_chunks):
            if q < n_full:
                x = _load8(raw, r, 8 * q)
            else:  # the row's last bytes
                x = _U64(0)
                for j in range(nbytes - 8 * q):
                    x |= _U64(raw[r, 8 * q + j]) << _U64(8 * j)
            lo = x & _EVEN
            hi = (x >> _U64(1)) & _EVEN
            both = lo & hi
            m0 = spread[0, q]
            m1 = spread[1, q]
            a0 += popcount64(lo & m0)
            b0 += popcount64(hi & m0)
            d0 += popcount64(both & m0)
            a1 += popcount64(lo & m1)
            b1 += popcount64(hi & m1)
            d1 += popcount64(both & m1)
        c0 = n_class[0] - a0 - b0 + d0
        c1 = n_class[1] - a1 - b1 + d1
        out[k, 0, 0] = d0
        out[k, 1, 0] = b0 - d0
        out[k, 2, 0] = c0
        out[k, 0, 1] = d1
        out[k, 1, 1] = b1 - d1
        out[k, 2, 1] = c1
        t0 = d0 + d1
        t1 = b0 - d0 + b1 - d1
        t2 = c0 + c1
        if quantitative:
            mono[k] = t1 == 0 and (t0 == 0 or t2 == 0)
        else:
            mono[k] = (t0 > 0) + (t1 > 0) + (t2 > 0) < 2


def spread_masks(member: np.ndarray, n_file: int) -> np.ndarray:
    """Sample sets ``(k, n_file)`` bool as :func:`_bed_class_counts` reads them: per 32 file
    samples a word with bit 2 s set for sample s of the set (the low bit of its .bed code)."""
    member = np.atleast_2d(np.asarray(member, dtype=bool))
    n_chunks = -(-n_file // 32)
    bits = np.zeros((member.shape[0], n_chunks * 64), dtype=bool)
    bits[:, : 2 * n_file : 2] = member
    return np.packbits(bits, axis=-1, bitorder="little").view("<u8").astype(np.uint64).reshape(member.shape[0], -1)


def bed_class_counts(raw: np.ndarray, rows: np.ndarray, plan: "BedPlan",
                     quantitative: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Called-genotype counts ``(len(rows), 3, 2)`` int64 (type, class) of rows ``rows`` of raw
    .bed rows, what :func:`bed_encode` counts as it encodes them by ``plan``, without encoding;
    and, as it does, which rows the scan skips (:func:`monomorphic`)."""
    out = np.empty((len(rows), 3, 2), dtype=np.int64)
    mono = np.zeros(len(rows), dtype=np.bool_)
    if len(rows):
        _bed_class_counts(_read_only(np.ascontiguousarray(raw, dtype=np.uint8)), np.ascontiguousarray(rows, dtype=np.int64),
                          plan.spread, plan.n_class, bool(quantitative), out, mono)
    return out, mono


def move_rows(a: np.ndarray, base: int, src: np.ndarray) -> None:
    """Rows ``base + src`` of ``a`` moved to ``base, base + 1, ...`` in place (``src``
    increasing): closing the gaps of dropped rows, one slice copy per run of consecutive rows
    (NumPy copies an overlapping run through a temporary of at most that run). NumPy rather
    than a compiled loop: this runs only in blocks that drop a row, so ``gboost warm`` might
    not meet it, and a compiled loop would then compile in a user's first scan."""
    src = np.asarray(src, dtype=np.int64)
    if len(src) == 0:
        return
    cuts = np.flatnonzero(np.diff(src) != 1) + 1
    for s, e in zip(np.r_[0, cuts].tolist(), np.r_[cuts, len(src)].tolist()):
        first = int(src[s])
        if first != s:
            a[base + s : base + e] = a[base + first : base + first + (e - s)]


def file_masks(member: np.ndarray, n_file: int) -> np.ndarray:
    """Bit-mask words over ``n_file`` file samples, ``(k, ceil(n_file / 64))``, from boolean
    membership ``(k, n_file)``."""
    member = np.atleast_2d(np.asarray(member, dtype=bool))
    bits = np.zeros((member.shape[0], words_for(n_file) * WORD_BITS), dtype=bool)
    bits[:, :n_file] = member
    return np.packbits(bits, axis=-1, bitorder="little").view("<u8").astype(np.uint64).reshape(member.shape[0], -1)


def _compress_moves(mask: np.ndarray) -> np.ndarray:
    """Hacker's Delight 7-4 compress for 64-bit words: the six move masks of each mask word
    ``(..., 6)`` (vectorised over the words)."""
    m = np.array(mask, dtype=np.uint64)
    mk = ~m << _U64(1)
    out = np.empty(m.shape + (6,), dtype=np.uint64)
    for i in range(6):
        mp = mk ^ (mk << _U64(1))
        for s in (2, 4, 8, 16, 32):
            mp = mp ^ (mp << _U64(s))
        mv = mp & m
        out[..., i] = mv
        m = (m ^ mv) | (mv >> _U64(1 << i))
        mk = mk & ~mp
    return out


@dataclass(frozen=True)
class BedPlan:
    """Where each file sample of a .bed goes in the planes (what :func:`bed_plan` computes once
    per study): per class (controls, cases) its mask words over the file samples, their compress
    moves and popcounts, and its first plane word."""

    layout: ClassLayout
    masks: np.ndarray
    moves: np.ndarray
    pops: np.ndarray
    w_first: np.ndarray
    spread: np.ndarray  # the classes as spread_masks (bed_class_counts)
    n_class: np.ndarray  # samples per class (controls, cases)


def bed_plan(columns: np.ndarray, is_case: np.ndarray, n_file: int) -> BedPlan | None:
    """The plan for planes of the .bed columns ``columns`` (plane order, ``is_case`` per column)
    of a .bed of ``n_file`` samples; None when a class's columns are not in increasing file order
    (then only the sample-by-sample gather can place them)."""
    columns = np.asarray(columns, dtype=np.int64)
    is_case = np.asarray(is_case, dtype=bool)
    member = np.zeros((2, n_file), dtype=bool)
    for c, cols in enumerate((columns[~is_case], columns[is_case])):
        if len(cols) and (np.any(np.diff(cols) <= 0) or cols[0] < 0 or cols[-1] >= n_file):
            return None
        member[c, cols] = True
    layout = ClassLayout.from_status(is_case)
    masks = file_masks(member, n_file)
    # popcount per word (np.bitwise_count needs NumPy 2; pyproject allows 1.26)
    pops = np.unpackbits(masks.view(np.uint8), axis=-1).reshape(masks.shape + (WORD_BITS,)).sum(axis=-1, dtype=np.int64)
    return BedPlan(layout, masks, _compress_moves(masks), pops, np.array([0, layout.w_ctrl], dtype=np.int64),
                   spread_masks(member, n_file), np.array([layout.n_ctrl, layout.n_case], dtype=np.int64))


def bed_encode(raw: np.ndarray, plan: BedPlan, rows: np.ndarray, out: np.ndarray, counts: np.ndarray | None = None,
               quantitative: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Rows ``rows`` of raw .bed rows encoded into ``out`` (``(len(rows), 3, W)`` uint64,
    C-contiguous, every word written) by ``plan``, their called-genotype counts into ``counts``
    (``(len(rows), 3, 2)`` int64, C-contiguous; what :func:`plane_counts` gives for ``out``).
    Returns ``(counts, monomorphic)``: which rows the scan skips (:func:`monomorphic`)."""
    if counts is None:
        counts = np.empty((len(rows), 3, 2), dtype=np.int64)
    mono = np.zeros(len(rows), dtype=np.bool_)
    if len(rows):
        _bed_encode(_read_only(np.ascontiguousarray(raw, dtype=np.uint8)), np.ascontiguousarray(rows, dtype=np.int64),
                    plan.masks, plan.moves, plan.pops, plan.w_first, _BED_SPLIT, out, counts, bool(quantitative), mono)
    return counts, mono


def bed_columns(plan: BedPlan) -> np.ndarray:
    """Per plane bit (``n_words x 64``: the controls' words, then the cases'), the .bed column (file
    sample) whose call it holds, -1 for a padding bit: the placement ``bed_encode`` makes by its
    compress moves, as one gather (:func:`decode_bed_rows`)."""
    cols = np.full(plan.layout.n_words * WORD_BITS, -1, dtype=np.int64)
    for c in range(2):
        member = np.unpackbits(plan.masks[c].astype("<u8").view(np.uint8), bitorder="little")
        idx = np.flatnonzero(member)
        w0 = int(plan.w_first[c]) * WORD_BITS
        cols[w0 : w0 + len(idx)] = idx
    return cols


def bed_gather(xp, cols: np.ndarray) -> tuple:
    """What :func:`decode_bed_rows` reads the codes by, as ``xp`` arrays (NumPy, or CuPy made once
    per GPU): each plane bit's byte in a .bed row, the shift of its code in that byte, and the
    padding bits."""
    valid = cols >= 0
    c = np.where(valid, cols, 0)
    return (xp.asarray((c >> 2).astype(np.int64)), xp.asarray(((c & 3) * 2).astype(np.uint8)),
            xp.asarray(np.flatnonzero(~valid)))


def decode_bed_rows(xp, raw, byte_index, shift, padding, w_ctrl: int):
    """Rows of raw .bed rows ``raw`` (``(n, ceil(n_file / 4))`` uint8) as planes ``(n, 3, W)``
    uint64 and called-genotype counts ``(n, 3, 2)`` int64 (type, class): what :func:`bed_encode`
    writes for the same rows with the plan :func:`bed_columns` was made from, by array operations
    (NumPy or CuPy as ``xp``). The reference of the GPU's decode kernel (``gb_decode_bed``,
    gboost/engines/gpu/decode.py; tests/invariants/test_stream_encode.py holds them equal, and this equal to
    :func:`bed_encode`). ``byte_index,
    shift, padding``: :func:`bed_gather`. Type 0 is code 11 (two A2 alleles), 1 is 10 (het), 2 is 00 (two
    A1 alleles); 01 (missing) and the padding set no bit."""
    n = raw.shape[0]
    codes = (raw[:, byte_index] >> shift) & xp.uint8(3)
    codes[:, padding] = 1
    bits = xp.empty((n, 3, codes.shape[1]), dtype=bool)
    bits[:, 0] = codes == 3
    bits[:, 1] = codes == 2
    bits[:, 2] = codes == 0
    planes = xp.packbits(bits.ravel(), bitorder="little").view(xp.uint64).reshape(n, 3, -1)
    # Per word first, then per class: a GPU reduction of a few rows' 2.32M bits each into one sum
    # would run on a handful of thread blocks.
    words = bits.reshape(n, 3, -1, WORD_BITS).sum(axis=3, dtype=xp.int64)
    counts = xp.stack([words[:, :, :w_ctrl].sum(axis=2), words[:, :, w_ctrl:].sum(axis=2)], axis=2)
    return planes, counts


def monomorphic(counts: np.ndarray, quantitative: bool = False) -> np.ndarray:
    """SNPs the scan skips, from their called-genotype counts ``(b, 3, 2)``: fewer than two
    genotype classes among cases and controls (PLINK's --fast-epistasis); for a QT scan, calls
    all one homozygote or none (PLINK's --epistasis: a het makes a SNP polymorphic there)."""
    if quantitative:
        called = counts.sum(axis=2)
        return (called[:, 1] == 0) & ((called[:, 0] == 0) | (called[:, 2] == 0))
    return (counts.sum(axis=2) > 0).sum(axis=1) < 2


def bed_set_counts(raw: np.ndarray, rows: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """Genotype counts ``(len(rows), 3, k)`` of rows ``rows`` of raw .bed rows within k sample
    sets (bit-mask words over the file's samples, :func:`file_masks`), read off the 2-bit codes."""
    out = np.empty((len(rows), 3, masks.shape[0]), dtype=np.int64)
    if len(rows):
        _bed_set_counts(_read_only(np.ascontiguousarray(raw, dtype=np.uint8)), np.ascontiguousarray(rows, dtype=np.int64),
                        np.ascontiguousarray(masks, dtype=np.uint64), _BED_SPLIT, out)
    return out


@cached_njit(parallel=True, nogil=True)
def _bed_column_counts(raw, sel, cols, weight, out):
    """``out[k, type]`` += ``weight[i]`` for each file column ``cols[i]`` whose 2-bit code in row
    ``sel[k]`` is genotype type 0/1/2 (codes 3, 2, 0 as :func:`_bed_set_counts` reads them; 1, no
    call, counts nowhere)."""
    for k in nb.prange(sel.shape[0]):
        r = sel[k]
        c0 = c1 = c2 = 0
        for i in range(cols.shape[0]):
            c = cols[i]
            code = (raw[r, c >> 2] >> ((c & 3) << 1)) & 3
            w = weight[i]
            c0 += w * (code == 3)
            c1 += w * (code == 2)
            c2 += w * (code == 0)
        out[k, 0] += c0
        out[k, 1] += c1
        out[k, 2] += c2


def bed_column_counts(raw: np.ndarray, rows: np.ndarray, cols: np.ndarray, weight: np.ndarray,
                      out: np.ndarray) -> np.ndarray:
    """Add to ``out`` (``(len(rows), 3)`` int64) each listed sample's genotype type in rows ``rows``
    of raw .bed rows, weighted: the few samples by which one sample set differs from another
    whose counts are known (the founders against the scanned samples: gboost/data/load.py), one code
    read a sample, where :func:`bed_set_counts` would popcount every word of the row."""
    if len(rows) and len(cols):
        _bed_column_counts(_read_only(np.ascontiguousarray(raw, dtype=np.uint8)), np.ascontiguousarray(rows, dtype=np.int64),
                           np.ascontiguousarray(cols, dtype=np.int64), np.ascontiguousarray(weight, dtype=np.int64), out)
    return out


def encode_bed_bytes(raw: np.ndarray, columns: np.ndarray, is_case: np.ndarray, *,
                     rows: np.ndarray | None = None, out: np.ndarray | None = None) -> np.ndarray:
    """CPU-layout planes ``(b, 3, W)`` of the samples at .bed columns ``columns`` (plane order:
    controls then cases, as ``is_case`` says per column) from a block of raw .bed rows ``raw``
    (uint8, ``(b, ceil(n/4))``): what :func:`encode_block` gives for the same genotypes read and
    decoded first (the tests compare the two), in one pass over the 2-bit codes.

    ``rows``: encode only these rows of ``raw`` (in this order). ``out``: write the planes there
    (``(len(rows), 3, W)`` uint64, C-contiguous; every word is written, padding included), e.g.
    straight into the study's planes, with no block-sized temporary (host memory at biobank scale).

    Columns in increasing file order within each class (the loader's) go through the compress
    kernel (:func:`bed_encode`); any other order through the sample-by-sample gather."""
    is_case = np.asarray(is_case, dtype=bool)
    columns = np.asarray(columns, dtype=np.int64)
    layout = ClassLayout.from_status(is_case)
    sel = np.arange(raw.shape[0], dtype=np.int64) if rows is None else np.asarray(rows, dtype=np.int64)
    if out is None:
        out = np.empty((len(sel), 3, layout.n_words), dtype=np.uint64)
    elif out.shape != (len(sel), 3, layout.n_words) or out.dtype != np.uint64 or not out.flags.c_contiguous:
        raise ValueError(f"out {out.shape} {out.dtype} is not C-contiguous uint64 {(len(sel), 3, layout.n_words)}")
    if len(sel):
        raw = _read_only(np.ascontiguousarray(raw, dtype=np.uint8))
        plan = bed_plan(columns, is_case, 4 * raw.shape[1])
        if plan is not None:
            bed_encode(raw, plan, sel, out)
        else:
            _encode_words(raw, sel, np.ascontiguousarray(columns[~is_case]), 0, out, True)
            _encode_words(raw, sel, np.ascontiguousarray(columns[is_case]), layout.w_ctrl, out, True)
    return out


@cached_njit(parallel=True)
def _bed_missing(raw, n, out):
    for j in nb.prange(raw.shape[1]):  # a byte column: 4 samples
        c0 = c1 = c2 = c3 = 0
        for r in range(raw.shape[0]):
            b = raw[r, j]
            c0 += (b & 3) == 1
            c1 += ((b >> 2) & 3) == 1
            c2 += ((b >> 4) & 3) == 1
            c3 += ((b >> 6) & 3) == 1
        s = 4 * j
        out[s] += c0
        if s + 1 < n:
            out[s + 1] += c1
        if s + 2 < n:
            out[s + 2] += c2
        if s + 3 < n:
            out[s + 3] += c3


def bed_missing_counts(raw: np.ndarray, n: int) -> np.ndarray:
    """Missing calls (.bed code 01) of each of the ``n`` samples over the raw .bed rows ``raw``
    (uint8, ``(b, ceil(n/4))``), in file order: the per-sample count --mind needs, without
    decoding the calls."""
    out = np.zeros(n, dtype=np.int64)
    if raw.shape[0] and n:
        _bed_missing(np.ascontiguousarray(raw, dtype=np.uint8), n, out)
    return out


def encode_block(geno: np.ndarray, is_case: np.ndarray) -> np.ndarray:
    """Encode an int8 genotype block ``(b, n)`` (0/1/2, -1 missing) into CPU-layout planes.

    Parameters
    ----------
    geno
        Genotype codes, one row per SNP, columns in the study's sample order.
    is_case
        Boolean per column.

    Returns
    -------
    ndarray of uint64, shape ``(b, 3, W)`` with ``W = ceil(n_ctrl/64) + ceil(n_case/64)``.
    """
    geno = np.asarray(geno)
    is_case = np.asarray(is_case, dtype=bool)
    if geno.ndim != 2 or geno.shape[1] != is_case.shape[0]:
        raise ValueError(f"genotype block {geno.shape} does not match {is_case.shape[0]} samples")
    layout = ClassLayout.from_status(is_case)
    out = np.zeros((geno.shape[0], 3, layout.n_words), dtype=np.uint64)
    if geno.shape[0]:
        g = _read_only(np.ascontiguousarray(geno, dtype=np.int8))
        sel = np.arange(g.shape[0], dtype=np.int64)
        _encode_words(g, sel, np.flatnonzero(~is_case), 0, out, False)
        _encode_words(g, sel, np.flatnonzero(is_case), layout.w_ctrl, out, False)
    return out


def encode_block_reference(geno: np.ndarray, is_case: np.ndarray) -> np.ndarray:
    """NumPy version of :func:`encode_block` (same signature; the tests compare the two)."""
    geno = np.asarray(geno)
    is_case = np.asarray(is_case, dtype=bool)
    layout = ClassLayout.from_status(is_case)
    ctrl = _pack_class(geno[:, ~is_case], layout.w_ctrl)
    case = _pack_class(geno[:, is_case], layout.w_case)
    return np.ascontiguousarray(np.concatenate([ctrl, case], axis=2))


def to_gpu_layout(planes: np.ndarray) -> np.ndarray:
    """CPU layout ``(p, 3, W)`` -> type-major, SNP-fastest ``(3, W, p)`` (contiguous)."""
    return np.ascontiguousarray(np.transpose(planes, (1, 2, 0)))


def from_gpu_layout(planes_gpu: np.ndarray) -> np.ndarray:
    """Inverse of :func:`to_gpu_layout`."""
    return np.ascontiguousarray(np.transpose(planes_gpu, (2, 0, 1)))


@cached_njit(parallel=True)
def _masked_popcounts(planes, masks, out):
    for r in nb.prange(planes.shape[0]):
        for t in range(3):
            for k in range(masks.shape[0]):
                c = 0
                for w in range(planes.shape[2]):
                    c += np.int64(popcount64(planes[r, t, w] & masks[k, w]))
                out[r, t, k] = c


def masked_counts(planes: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """Per-SNP genotype counts within sample sets: ``out[snp, type, k]`` = the samples of set k
    (bit-mask words ``masks[k]``, laid out as the planes' words) with that type; by popcount."""
    planes = np.ascontiguousarray(planes, dtype=np.uint64)
    masks = np.ascontiguousarray(masks, dtype=np.uint64)
    out = np.empty((planes.shape[0], 3, masks.shape[0]), dtype=np.int64)
    if planes.shape[0]:
        _masked_popcounts(planes, masks, out)
    return out


def mask_words(member: np.ndarray) -> np.ndarray:
    """Boolean sample-set membership ``(n, k)`` (samples in plane order of one class) as bit-mask
    words ``(k, ceil(n/64))`` for :func:`masked_counts`."""
    member = np.asarray(member, dtype=bool)
    n, k = member.shape
    bits = np.zeros((k, words_for(n) * WORD_BITS), dtype=bool)
    bits[:, :n] = member.T
    return np.packbits(bits, axis=-1, bitorder="little").view("<u8").astype(np.uint64).reshape(k, words_for(n))


def plane_counts(planes: np.ndarray, layout: ClassLayout) -> np.ndarray:
    """Per-SNP called-genotype counts ``(b, 3, 2)`` from CPU-layout planes, by popcount: what
    :func:`genotype_counts` gives for the genotypes the planes encode (a missing call sets no bit),
    at a few words a SNP instead of a pass over every sample per type and class."""
    classes = np.zeros((2, layout.n_words), dtype=np.uint64)  # each class's words, all bits
    classes[0, : layout.w_ctrl] = classes[1, layout.w_ctrl :] = ~np.uint64(0)
    return masked_counts(planes, classes)  # padding bits are never set in the planes


def genotype_counts(geno: np.ndarray, is_case: np.ndarray) -> np.ndarray:
    """Per-SNP called-genotype counts ``(b, 3, 2)``: [snp, type, class] with class 0 = control
    (NumPy; the reference for :func:`plane_counts`)."""
    geno = np.asarray(geno)
    is_case = np.asarray(is_case, dtype=bool)
    out = np.empty((geno.shape[0], 3, 2), dtype=np.int64)
    for k, mask in enumerate((~is_case, is_case)):
        g = geno[:, mask]
        for t in range(3):
            out[:, t, k] = (g == t).sum(axis=1)
    return out


def decode_planes(planes: np.ndarray, layout: ClassLayout) -> tuple[np.ndarray, np.ndarray]:
    """Back from CPU-layout planes to genotypes (controls first): ``(geno int8 (p, n), is_case)``.

    Used by tests and by the marginal/LD code that wants genotypes of a few SNPs.
    """
    p = planes.shape[0]
    bits = np.unpackbits(planes.astype("<u8").view(np.uint8).reshape(p, 3, -1), axis=-1, bitorder="little")
    ctrl_bits = bits[:, :, : layout.n_ctrl]
    case_bits = bits[:, :, layout.w_ctrl * WORD_BITS : layout.w_ctrl * WORD_BITS + layout.n_case]
    both = np.concatenate([ctrl_bits, case_bits], axis=2)
    geno = np.full((p, layout.n_ctrl + layout.n_case), -1, dtype=np.int8)
    for t in range(3):
        geno[both[:, t, :] == 1] = t
    is_case = np.r_[np.zeros(layout.n_ctrl, bool), np.ones(layout.n_case, bool)]
    return geno, is_case
