"""Python's ``format(x, ".{d}g")`` for whole columns, compiled (pairs.tsv and marginal.tsv).

Python rounds the exact binary value correctly. The compiled loop scales x by a power of ten into
[10^(d-1), 10^d) with at most two roundings (relative error <= 2.3e-16, so <= 2.3e-6 on the scaled
value for d <= 10) and rounds half up from there; where the scaled value lies within 1e-5 of a
half-integer (a decimal tie or near one, where those roundings could decide), or the power of ten
is out of range, the value is left to Python's own ``format``. Every other value gets the digits
Python prints: tests/unit/test_plink_text.py compares the two on ties, powers of ten, subnormals and
random values. Python's per-value formatting was most of a large pairs.tsv's writing time; this is a
small part of it (bench/bench_write.py).
"""
from __future__ import annotations

import math

import numpy as np

from gboost.runtime.numba_cache import cached_njit

_WIDTH = 24  # bytes a formatted value may take: "-1.234567891e-308" is 17


@cached_njit(nogil=True)
def _format_g(values, digits, out, lengths, fallback):
    p10 = 10.0 ** digits
    p10m1 = 10.0 ** (digits - 1)
    tmp = np.empty(24, np.uint8)
    for r in range(len(values)):
        x = values[r]
        pos = 0
        if math.isnan(x) or math.isinf(x):
            fallback[r] = True
            continue
        neg = x < 0 or (x == 0.0 and math.copysign(1.0, x) < 0)
        if neg:
            out[r, 0] = 45
            pos = 1
            x = -x
        if x == 0.0:
            out[r, pos] = 48
            lengths[r] = pos + 1
            continue
        e = int(math.floor(math.log10(x)))
        k = digits - 1 - e
        if k > 290 or k < -290:
            fallback[r] = True
            continue
        ok = True
        v = 0.0
        for _ in range(3):  # log10 may be one off near a power of ten
            k = digits - 1 - e
            if k > 290 or k < -290:
                ok = False
                break
            if k >= 0:
                v = x * 10.0 ** min(k, 22) * (10.0 ** (k - 22) if k > 22 else 1.0)
            else:
                v = x / 10.0 ** min(-k, 22) / (10.0 ** (-k - 22) if -k > 22 else 1.0)
            if v < p10m1:
                e -= 1
            elif v >= p10:
                e += 1
            else:
                break
        if not ok or v < p10m1 or v >= p10:
            fallback[r] = True
            continue
        frac = v - math.floor(v)
        if abs(frac - 0.5) < 1e-5:
            fallback[r] = True
            continue
        q = np.int64(math.floor(v + 0.5))
        if q >= np.int64(p10):
            q //= 10
            e += 1
        # q holds `digits` significant digits of x = q * 10^(e - digits + 1)
        n = 0
        qq = q
        while n < digits:
            tmp[digits - 1 - n] = 48 + qq % 10
            qq //= 10
            n += 1
        last = digits  # digits kept after trimming trailing zeros
        while last > 1 and tmp[last - 1] == 48:
            last -= 1
        if -4 <= e < digits:  # fixed notation
            if e >= 0:
                for t in range(e + 1):
                    out[r, pos] = tmp[t] if t < digits else 48
                    pos += 1
                if last > e + 1:
                    out[r, pos] = 46
                    pos += 1
                    for t in range(e + 1, last):
                        out[r, pos] = tmp[t]
                        pos += 1
            else:
                out[r, pos] = 48
                out[r, pos + 1] = 46
                pos += 2
                for _ in range(-e - 1):
                    out[r, pos] = 48
                    pos += 1
                for t in range(last):
                    out[r, pos] = tmp[t]
                    pos += 1
        else:  # scientific: d.ddde+XX
            out[r, pos] = tmp[0]
            pos += 1
            if last > 1:
                out[r, pos] = 46
                pos += 1
                for t in range(1, last):
                    out[r, pos] = tmp[t]
                    pos += 1
            out[r, pos] = 101
            out[r, pos + 1] = 45 if e < 0 else 43
            pos += 2
            ae = -e if e < 0 else e
            if ae >= 100:
                out[r, pos] = 48 + ae // 100
                pos += 1
            out[r, pos] = 48 + (ae // 10) % 10
            out[r, pos + 1] = 48 + ae % 10
            pos += 2
        lengths[r] = pos


def format_g_bytes(values, digits: int, *, na: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Each value as ``format(x, f".{digits}g")`` (``na`` for NaN when given): a (m, 24) byte
    matrix padded with NULs and the lengths. Values the loop leaves to Python are patched here."""
    x = np.ascontiguousarray(values, dtype=np.float64)
    out = np.zeros((len(x), _WIDTH), np.uint8)
    lengths = np.zeros(len(x), np.int64)
    _format_g_into(x, digits, na, out, lengths)
    return out, lengths


def _format_g_into(x: np.ndarray, digits: int, na: str | None, out: np.ndarray, lengths: np.ndarray) -> None:
    m = len(x)
    fallback = np.zeros(m, np.bool_)
    if m:
        _format_g(x, digits, out, lengths, fallback)
    spec = f".{digits}g"
    for r in np.flatnonzero(fallback).tolist():
        v = float(x[r])
        text = (na if (na is not None and v != v) else format(v, spec)).encode()
        out[r, :] = 0
        out[r, :len(text)] = np.frombuffer(text, np.uint8)
        lengths[r] = len(text)


def format_g(values, digits: int, *, na: str | None = None) -> list[str]:
    """``[format(x, f".{digits}g") for x in values]`` (``na`` for NaN when given), compiled."""
    out, _ = format_g_bytes(values, digits, na=na)
    # rows of bytes padded with NULs: numpy's S dtype drops them, then decodes in C
    return out.view(f"S{_WIDTH}").ravel().astype(str).tolist()


def ragged(values) -> tuple[np.ndarray, np.ndarray]:
    """Strings (any objects, as ``str``) as their UTF-8 bytes end to end and offsets: value k is
    ``buf[off[k]:off[k + 1]]``. One join and one encode in C (a per-value ``encode`` is a
    Python call per SNP); the values are fields of whitespace-separated files, so a newline never
    occurs in one and marks where each ends."""
    items = values.tolist() if isinstance(values, np.ndarray) else list(values)
    if not set(map(type, items)) <= {str, np.str_}:  # (one pass in C, not a Python generator)
        items = [x.decode("utf-8") if isinstance(x, bytes) else str(x) for x in items]
    buf = np.frombuffer(("\n".join(items) + "\n").encode("utf-8"), np.uint8) if items else np.zeros(0, np.uint8)
    ends = np.flatnonzero(buf == 10)
    if len(ends) != len(items):
        raise ValueError("a text field holds a newline")
    off = np.zeros(len(items) + 1, np.int64)
    off[1:] = ends + 1
    return buf, off


@cached_njit(nogil=True)
def _ragged_to_matrix(buf, off, width):
    m = len(off) - 1
    mat = np.zeros((m, width), np.uint8)
    lengths = np.empty(m, np.int64)
    for k in range(m):
        n = off[k + 1] - 1 - off[k]  # without the newline
        for t in range(n):
            mat[k, t] = buf[off[k] + t]
        lengths[k] = n
    return mat, lengths


def text_bytes(values) -> tuple[np.ndarray, np.ndarray]:
    """Strings (any objects, as ``str``; bytes as they are) as a UTF-8 byte matrix padded with
    NULs and the lengths."""
    return ragged_matrix(ragged(values))


def ragged_matrix(texts: tuple) -> tuple[np.ndarray, np.ndarray]:
    """:func:`ragged` texts (buffer, offsets) as a byte matrix padded with NULs and the lengths."""
    buf, off = texts
    width = max(int((np.diff(off) - 1).max()) if len(off) > 1 else 1, 1)
    return _ragged_to_matrix(buf, off, width)


def take_rows(column: tuple[np.ndarray, np.ndarray], idx) -> tuple[np.ndarray, np.ndarray]:
    """Rows ``idx`` of a (matrix, lengths) column (NumPy's take releases the GIL)."""
    return np.take(column[0], idx, axis=0), np.take(column[1], idx)


@cached_njit(nogil=True)
def _int_matrix(values):
    m = len(values)
    mat = np.zeros((m, 20), np.uint8)
    lengths = np.empty(m, np.int64)
    for k in range(m):
        q = values[k]
        pos = 0
        if q < 0:
            mat[k, 0] = 45
            pos = 1
            q = -q  # (int64 min has no positive: never a position, count or DF)
        n = 1
        t = q // 10
        while t > 0:
            n += 1
            t //= 10
        for d in range(n - 1, -1, -1):
            mat[k, pos + d] = 48 + q % 10
            q //= 10
        lengths[k] = pos + n
    return mat, lengths


def int_bytes(values) -> tuple[np.ndarray, np.ndarray]:
    """Integers in decimal as a byte matrix and lengths."""
    return _int_matrix(np.ascontiguousarray(values, np.int64))


@cached_njit(nogil=True)
def _join_rows(mat, starts, lens):
    m, nc = lens.shape
    size = 0
    for r in range(m):
        for c in range(nc):
            size += lens[r, c] + 1
    buf = np.empty(size, np.uint8)
    pos = 0
    for r in range(m):
        for c in range(nc):
            s = starts[c]
            for t in range(lens[r, c]):
                buf[pos] = mat[r, s + t]
                pos += 1
            buf[pos] = 9 if c < nc - 1 else 10
            pos += 1
    return buf[:pos]


def tsv_rows_bytes(columns: list[tuple[np.ndarray, np.ndarray]]) -> bytes:
    """Rows of tab-separated fields, each line ending in a newline, from (matrix, lengths) columns."""
    return tsv_rows_array(columns).tobytes()


def tsv_rows_array(columns: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """:func:`tsv_rows_bytes` as a uint8 array (no copy into bytes: write_files takes buffers)."""
    if not columns or len(columns[0][1]) == 0:
        return np.zeros(0, np.uint8)
    mat = np.ascontiguousarray(np.concatenate([c[0] for c in columns], axis=1))
    starts = np.cumsum([0] + [c[0].shape[1] for c in columns[:-1]]).astype(np.int64)
    lens = np.ascontiguousarray(np.stack([c[1] for c in columns], axis=1).astype(np.int64))
    return _join_rows(mat, starts, lens)


def tsv_rows(columns: list[tuple[np.ndarray, np.ndarray]]) -> str:
    return tsv_rows_bytes(columns).decode("utf-8")


# ---- pairs.tsv rows -------------------------------------------------------------------------------
# One compiled pass per run of rows, the SNPs' texts gathered from per-SNP buffers (made once, not
# once per pair), so runs format on a pool of threads without the GIL (gboost/outputs/results.py).


@cached_njit(nogil=True)
def _int_len(q):
    n = 1 if q >= 0 else 2
    q = abs(q)
    while q >= 10:
        n += 1
        q //= 10
    return n


@cached_njit(nogil=True)
def _put_int(buf, pos, q):
    if q < 0:
        buf[pos] = 45
        pos += 1
        q = -q
    n = _int_len(q)
    for d in range(n - 1, -1, -1):
        buf[pos + d] = 48 + q % 10
        q //= 10
    return pos + n


@cached_njit(nogil=True)
def _put_text(buf, pos, tbuf, toff, k):
    for t in range(toff[k], toff[k + 1] - 1):  # (each value ends in a newline, left out)
        buf[pos] = tbuf[t]
        pos += 1
    return pos


@cached_njit(nogil=True)
def _same_text(tbuf, toff, a, b):
    la, lb = toff[a + 1] - toff[a], toff[b + 1] - toff[b]
    if la != lb:
        return False
    for t in range(la):
        if tbuf[toff[a] + t] != tbuf[toff[b] + t]:
            return False
    return True


@cached_njit(nogil=True)
def _put_float(buf, pos, fmat, flen, c, r):
    """A tab, then formatted value r of column c."""
    buf[pos] = 9
    pos += 1
    for t in range(flen[c, r]):
        buf[pos + t] = fmat[c, r, t]
    return pos + flen[c, r]


@cached_njit(nogil=True)
def _pair_prefix(cbuf, coff, sbuf, soff, bp):
    """Every SNP's "CHR<tab>SNP<tab>BP" end to end, and offsets (SNP k: buf[off[k]:off[k + 1]])."""
    p = len(bp)
    size = 0
    for k in range(p):
        size += (coff[k + 1] - coff[k]) + (soff[k + 1] - soff[k]) + _int_len(bp[k])
    buf = np.empty(size, np.uint8)
    off = np.zeros(p + 1, np.int64)
    pos = 0
    for k in range(p):
        pos = _put_text(buf, pos, cbuf, coff, k)
        buf[pos] = 9
        pos = _put_text(buf, pos + 1, sbuf, soff, k)
        buf[pos] = 9
        pos = _put_int(buf, pos + 1, bp[k])
        off[k + 1] = pos
    return buf[:pos], off


@cached_njit(nogil=True)
def _text_ids(tbuf, toff, cap):
    """A number per distinct text (equal texts, equal numbers), or all -1 past ``cap`` distinct
    texts. Runs of equal texts (a .bim's chromosomes) cost one comparison a value."""
    p = len(toff) - 1
    ids = np.empty(p, np.int32)
    first = np.empty(cap, np.int64)  # the first value of each distinct text
    n = 0
    for k in range(p):
        if k > 0 and _same_text(tbuf, toff, k - 1, k):
            ids[k] = ids[k - 1]
            continue
        found = -1
        for d in range(n):
            if _same_text(tbuf, toff, first[d], k):
                found = d
                break
        if found < 0:
            if n == cap:
                ids[:] = -1
                return ids
            first[n] = k
            found = n
            n += 1
        ids[k] = found
    return ids


_ID_CAP = 4096  # distinct chromosome names numbered in compiled code (more: in Python)


def pair_texts(chrom: tuple, snp: tuple, bp) -> tuple:
    """What pairs.tsv's rows take of every SNP, from its :func:`ragged` CHR and SNP and its BP:
    the "CHR<tab>SNP<tab>BP" prefix of each (one place to read per SNP of a pair, not five: the
    pairs of a sorted file hit SNPs at random) and a number per chromosome name (DIST needs
    both SNPs on one chromosome)."""
    bp = np.ascontiguousarray(bp, np.int64)
    buf, off = _pair_prefix(chrom[0], chrom[1], snp[0], snp[1], bp)
    ids = _text_ids(chrom[0], chrom[1], _ID_CAP)
    if len(ids) and ids[0] < 0:  # thousands of contigs: number them in Python
        seen: dict = {}
        names = [bytes(chrom[0][chrom[1][k]:chrom[1][k + 1]]) for k in range(len(bp))]
        ids = np.array([seen.setdefault(x, len(seen)) for x in names], np.int32)
    return buf, off, ids, bp


@cached_njit(nogil=True)
def _pairs_rows(i, j, pbuf, poff, cid, bp, df, fmat, flen, adj_df, marks):
    """Rows CHR1 SNP1 BP1 CHR2 SNP2 BP2 KSA STAT DF P Q R2 DIST [STAT_ADJ DF_ADJ P_ADJ]: pbuf/poff
    each SNP's "CHR<tab>SNP<tab>BP", cid its chromosome's number; fmat[c] / flen[c] the formatted
    floats in that order (5 columns, or 7 with the adjusted ones; adj_df then holds DF_ADJ).
    ``marks`` of shape (m, 2): rows without Q, the hole :func:`_splice_q` fills (fmat then holds
    KSA STAT P R2 [STAT_ADJ P_ADJ]); marks[r] gets where row r's hole is and where the row ends.
    ``marks`` of no rows: every column."""
    m = len(i)
    nf = fmat.shape[0]
    holed = marks.shape[0] > 0
    nq = 4 if holed else 5  # the columns KSA .. R2
    size = 0
    for r in range(m):
        a, b = i[r], j[r]
        size += (poff[a + 1] - poff[a]) + (poff[b + 1] - poff[b]) + _int_len(df[r]) + 20 + 16
        for c in range(nf):
            size += flen[c, r]
        if nf > nq:
            size += _int_len(adj_df[r])
    buf = np.empty(size, np.uint8)
    pos = 0
    for r in range(m):
        a, b = i[r], j[r]
        for t in range(poff[a], poff[a + 1]):
            buf[pos] = pbuf[t]
            pos += 1
        buf[pos] = 9
        pos += 1
        for t in range(poff[b], poff[b + 1]):
            buf[pos] = pbuf[t]
            pos += 1
        for c in range(nq):  # KSA STAT [DF] P Q R2, Q left out of a holed row
            pos = _put_float(buf, pos, fmat, flen, c, r)
            if c == 1:
                buf[pos] = 9
                pos = _put_int(buf, pos + 1, df[r])
            if holed and c == 2:
                marks[r, 0] = pos
        buf[pos] = 9
        pos += 1
        if cid[a] == cid[b]:
            pos = _put_int(buf, pos, abs(bp[b] - bp[a]))
        else:
            buf[pos] = 78  # NA
            buf[pos + 1] = 65
            pos += 2
        if nf > nq:
            for c in range(nq, nq + 2):  # STAT_ADJ [DF_ADJ] P_ADJ
                pos = _put_float(buf, pos, fmat, flen, c, r)
                if c == nq:
                    buf[pos] = 9
                    pos = _put_int(buf, pos + 1, adj_df[r])
        buf[pos] = 10
        pos += 1
        if holed:
            marks[r, 1] = pos
    return buf[:pos]


@cached_njit(nogil=True)
def _splice_q(rows, buf, marks, qmat, qlen):
    """The rows ``rows`` of holed rows (``buf``, ``marks`` as :func:`_pairs_rows` leaves them), in
    that order, each with a tab and its formatted Q (qmat[0, k], qlen[0, k]) in its hole."""
    size = 0
    for k in range(len(rows)):
        g = rows[k]
        start = marks[g - 1, 1] if g > 0 else 0
        size += marks[g, 1] - start + 1 + qlen[0, k]
    out = np.empty(size, np.uint8)
    pos = 0
    for k in range(len(rows)):
        g = rows[k]
        start = marks[g - 1, 1] if g > 0 else 0
        hole, end = marks[g, 0], marks[g, 1]
        out[pos:pos + hole - start] = buf[start:hole]  # (slices: copied a word at a time, not byte by byte)
        pos = _put_float(out, pos + hole - start, qmat, qlen, 0, k)
        out[pos:pos + end - hole] = buf[hole:end]
        pos += end - hole
    return out


def _float_columns(floats: list, m: int) -> tuple[np.ndarray, np.ndarray]:
    """(values, digits, na) columns of ``m`` rows formatted into one (columns, m, 24) byte matrix
    and lengths (compiled; the rare values left to Python patched in)."""
    fmat = np.zeros((len(floats), m, _WIDTH), np.uint8)
    flen = np.zeros((len(floats), m), np.int64)
    for c, (values, digits, na) in enumerate(floats):
        _format_g_into(np.ascontiguousarray(values, dtype=np.float64), digits, na, fmat[c], flen[c])
    return fmat, flen


def pairs_rows_array(i, j, texts: tuple, df, floats: list, adj_df=None, *, holed: bool = False):
    """pairs.tsv rows (no header) for pairs (i, j) as a uint8 array: ``texts`` the SNPs'
    :func:`pair_texts`, ``floats`` the (values, digits, na) of KSA, STAT, P, Q, R2
    [, STAT_ADJ, P_ADJ] of these rows. ``holed``: the rows without Q (``floats`` without it too),
    as (bytes, marks) for :func:`splice_q` once the q values are known."""
    m = len(i)
    fmat, flen = _float_columns(floats, m)
    adj = np.zeros(m, np.int64) if adj_df is None else np.ascontiguousarray(adj_df, np.int64)
    marks = np.zeros((m if holed else 0, 2), np.int64)
    pbuf, poff, cid, bp = texts
    rows = _pairs_rows(np.ascontiguousarray(i, np.int64), np.ascontiguousarray(j, np.int64), pbuf, poff, cid, bp,
                       np.ascontiguousarray(df, np.int64), fmat, flen, adj, marks)
    return (rows, marks) if holed else rows


def splice_q(rows, holed: tuple, q) -> np.ndarray:
    """pairs.tsv rows ``rows`` (indices into the holed rows ``holed`` = (bytes, marks), in the
    order to write) with their q values ``q`` put in: the bytes :func:`pairs_rows_array` gives
    with Q among its floats (6 digits, NA for NaN)."""
    qmat, qlen = _float_columns([(q, 6, "NA")], len(rows))
    return _splice_q(np.ascontiguousarray(rows, np.int64), holed[0], holed[1], qmat, qlen)


# ---- marginal.tsv rows ----------------------------------------------------------------------------


@cached_njit(nogil=True)
def _marginal_rows(k0, k1, cbuf, coff, sbuf, soff, bp, a1buf, a1off, a2buf, a2off, fmat, flen):
    """Rows CHR SNP BP A1 A2 MAF STAT P of SNPs [k0, k1); fmat[c, k - k0] the formatted MAF, STAT, P."""
    size = 0
    for k in range(k0, k1):
        size += (coff[k + 1] - coff[k]) + (soff[k + 1] - soff[k]) + (a1off[k + 1] - a1off[k])
        size += (a2off[k + 1] - a2off[k]) + _int_len(bp[k]) + 8
        for c in range(3):
            size += flen[c, k - k0]
    buf = np.empty(size, np.uint8)
    pos = 0
    for k in range(k0, k1):
        pos = _put_text(buf, pos, cbuf, coff, k)
        buf[pos] = 9
        pos = _put_text(buf, pos + 1, sbuf, soff, k)
        buf[pos] = 9
        pos = _put_int(buf, pos + 1, bp[k])
        buf[pos] = 9
        pos = _put_text(buf, pos + 1, a1buf, a1off, k)
        buf[pos] = 9
        pos = _put_text(buf, pos + 1, a2buf, a2off, k)
        for c in range(3):
            pos = _put_float(buf, pos, fmat, flen, c, k - k0)
        buf[pos] = 10
        pos += 1
    return buf[:pos]


def marginal_rows_array(k0: int, k1: int, texts: tuple, bp, floats: list) -> np.ndarray:
    """marginal.tsv rows of SNPs [k0, k1) as a uint8 array: ``texts`` the :func:`ragged` buffers
    of CHR, SNP, A1, A2 (every SNP), ``floats`` the (values, digits, na) of MAF, STAT, P of these rows."""
    fmat, flen = _float_columns(floats, k1 - k0)
    (cb, co), (sb, so), (ab, ao), (bb, bo) = texts
    return _marginal_rows(k0, k1, cb, co, sb, so, np.ascontiguousarray(bp, np.int64), ab, ao, bb, bo, fmat, flen)
