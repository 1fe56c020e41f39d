"""PLINK's ``.epi.cc`` and ``.summary`` rows written by compiled loops (numba), byte for byte what
the per-row Python writer printed (gboost/readers/plink_format.py stays the readable reference, and the
tests compare the two on adversarial values).

Why: at 500k SNPs the per-row Python formatting of these two files took longer than the scan. Here
each row goes straight into a byte buffer: IDs and chromosome codes are padded once per SNP, and
numbers use the same integer arithmetic as ``plink_g`` (scale into d significant digits, PLINK's
tolerant banker's rounding, trailing zeros trimmed), with every power of ten precomputed in Python
so the float operations are the same ones in the same order. Widths count bytes, as PLINK's do.
"""
from __future__ import annotations

import math

import numpy as np

from gboost.readers.plink_format import _DECADE, _DOWN_STEPS, _EPS, _UP_STEPS
from gboost.runtime.numba_cache import cached_njit
from gboost.stats.pvalues import chi2_sf


def _constants(d: int) -> np.ndarray:
    """Thresholds and factors of plink_g for ``d`` digits, as plink_format computes them."""
    m = _DECADE[d]
    up_t = [m * 10.0 ** (1 - k) for k, _ in _UP_STEPS]
    down_t = [m * 10.0 ** k for k, _ in _DOWN_STEPS]
    int_t = [m * 10.0 ** j for j in range(1, 8)]
    return np.array([m, _EPS[d], m * 1e-4, m * 10.0 ** d, m * 1e-2, m * 1e-1, 10 ** (d - 1), 10 ** d]
                    + up_t + down_t + int_t, dtype=np.float64)


_C4, _C6 = _constants(4), _constants(6)
_UP_K = np.array([k for k, _ in _UP_STEPS], np.int64)
_UP_F = np.array([f for _, f in _UP_STEPS], np.float64)
_DOWN_K = np.array([k for k, _ in _DOWN_STEPS], np.int64)
_DOWN_F = np.array([f for _, f in _DOWN_STEPS], np.float64)
_NS = len(_UP_STEPS)


@cached_njit(inline="always")
def _bround(x, eps):
    whole = np.int64(x)
    frac = x - whole
    if whole % 2 == 0:
        return whole + np.int64(frac + (0.5 - eps))
    return whole + np.int64(frac + (0.5 + eps))


@cached_njit()
def _put_int(buf, pos, q, min_width):
    """Decimal digits of q >= 0, zero-padded on the left to ``min_width``; returns the new end.
    (Written from the last digit back: no scratch array, which cost an allocation per number.)"""
    n = 1
    t = q // 10
    while t > 0:
        n += 1
        t //= 10
    if n < min_width:
        n = min_width
    for k in range(n - 1, -1, -1):
        buf[pos + k] = 48 + q % 10
        q //= 10
    return pos + n


@cached_njit(inline="always")
def _rjust_from(buf, pos, end, width):
    """Right-justify buf[pos:end] to ``width`` bytes in place (never truncated); returns the end."""
    n = end - pos
    if n >= width:
        return end
    shift = width - n
    for k in range(n - 1, -1, -1):
        buf[pos + shift + k] = buf[pos + k]
    for k in range(shift):
        buf[pos + k] = 32
    return pos + width


@cached_njit()
def _put_digits(buf, pos, q, places):
    """plink_format._digits: q with ``places`` decimals, trailing zeros and a bare point trimmed."""
    if places == 0:
        return _put_int(buf, pos, q, 0)
    start = pos
    end = _put_int(buf, pos, q, places + 1)
    # split: head = all but the last `places` characters, tail = the last `places`
    tail_start = end - places
    tail_end = end
    while tail_end > tail_start and buf[tail_end - 1] == 48:
        tail_end -= 1
    if tail_end == tail_start:
        return tail_start
    for k in range(tail_end - 1, tail_start - 1, -1):  # shift the tail one right for the point
        buf[k + 1] = buf[k]
    buf[tail_start] = 46  # '.'
    return tail_end + 1 + (0 * start)


@cached_njit()
def _put_g(buf, pos, x, d, c):
    """plink_format.plink_g(x, d) into buf at pos; returns the new end. ``c``: _constants(d)."""
    if math.isnan(x):
        buf[pos] = 110; buf[pos + 1] = 97; buf[pos + 2] = 110  # nan
        return pos + 3
    if x < 0:
        buf[pos] = 45
        pos += 1
        x = -x
    if math.isinf(x):
        buf[pos] = 105; buf[pos + 1] = 110; buf[pos + 2] = 102  # inf
        return pos + 3
    if x == 0.0:
        buf[pos] = 48
        return pos + 1
    eps = c[1]
    if x < c[2]:  # exponential, small
        xp10 = 0
        for s in range(_NS):
            if x < c[8 + s]:
                x *= _UP_F[s]
                xp10 += _UP_K[s]
        pos = _put_digits(buf, pos, _bround(x * c[6], eps), d - 1)
        buf[pos] = 101; buf[pos + 1] = 45  # e-
        return _put_int(buf, pos + 2, xp10, 2)
    if x >= c[3]:  # exponential, large
        xp10 = 0
        for s in range(_NS):
            if x >= c[8 + _NS + s]:
                x *= _DOWN_F[s]
                xp10 += _DOWN_K[s]
        pos = _put_digits(buf, pos, _bround(x * c[6], eps), d - 1)
        buf[pos] = 101; buf[pos + 1] = 43  # e+
        return _put_int(buf, pos + 2, xp10, 2)
    if x >= c[0]:  # significand only
        int_digits = 1
        while int_digits < d and x >= c[8 + 2 * _NS + int_digits - 1]:
            int_digits += 1
        places = d - int_digits
        return _put_digits(buf, pos, _bround(x * 10.0 ** places, eps), places)
    # 0.0001 <= x < 1: "0." then up to three zeros, then d digits
    buf[pos] = 48; buf[pos + 1] = 46
    pos += 2
    if x < c[4]:
        x *= 100
        buf[pos] = 48; buf[pos + 1] = 48
        pos += 2
    if x < c[5]:
        x *= 10
        buf[pos] = 48
        pos += 1
    q = _bround(x * c[7], eps)
    end = _put_int(buf, pos, q, d)
    while end > pos and buf[end - 1] == 48:
        end -= 1
    return end


@cached_njit(inline="always")
def _rjust_g(buf, pos, x, d, c, width):
    """_put_g right-justified to ``width`` (never truncated)."""
    return _rjust_from(buf, pos, _put_g(buf, pos, x, d, c), width)


@cached_njit(inline="always")
def _put_field(buf, pos, text, off, k):
    for t in range(off[k], off[k + 1]):
        buf[pos] = text[t]
        pos += 1
    return pos


@cached_njit(nogil=True)
def _put_pair_ids(buf, pos, chrom, chrom_off, snp, snp_off, a, b):
    """CHR1 SNP1 CHR2 SNP2 of pair (a, b), each padded field followed by a space (.epi.cc, .epi.qt)."""
    pos = _put_field(buf, pos, chrom, chrom_off, a)
    buf[pos] = 32
    pos = _put_field(buf, pos + 1, snp, snp_off, a)
    buf[pos] = 32
    pos = _put_field(buf, pos + 1, chrom, chrom_off, b)
    buf[pos] = 32
    pos = _put_field(buf, pos + 1, snp, snp_off, b)
    buf[pos] = 32
    return pos


@cached_njit(nogil=True)
def _epi_cc_rows(ia, ib, stat_print, df, p, chrom, chrom_off, snp, snp_off, c4, c6):
    """The .epi.cc rows (df > 0) of screened pairs: fields pre-padded per SNP in chrom/snp."""
    n = len(ia)
    size = 0
    for r in range(n):
        if df[r] > 0:
            size += (chrom_off[ia[r] + 1] - chrom_off[ia[r]] + snp_off[ia[r] + 1] - snp_off[ia[r]]
                     + chrom_off[ib[r] + 1] - chrom_off[ib[r]] + snp_off[ib[r] + 1] - snp_off[ib[r]] + 96)
    buf = np.empty(size, np.uint8)
    pos = 0
    for r in range(n):
        if df[r] <= 0:
            continue
        a, b = ia[r], ib[r]
        pos = _put_pair_ids(buf, pos, chrom, chrom_off, snp, snp_off, a, b)
        pos = _rjust_g(buf, pos + 1, stat_print[r], 6, c6, 12)
        buf[pos] = 32
        pos += 1
        pos = _rjust_from(buf, pos, _put_int(buf, pos, df[r], 0), 4)
        buf[pos] = 32
        pos = _rjust_g(buf, pos + 1, p[r], 4, c4, 12)
        buf[pos] = 32
        buf[pos + 1] = 10
        pos += 2
    return buf[:pos]


@cached_njit(nogil=True)
def _summary_rows(chrom, chrom_off, snp, snp_off, n_sig, n_tot, best, best_partner, na_best, c4, k0, k1, first):
    """The .summary rows of SNPs [k0, k1); ``na_best``: the padded "NA NA NA" tail for SNPs with
    no test; ``first``: the partner PLINK names where no value is above 0 (its first scanned partner)."""
    size = 0
    for k in range(k0, k1):
        size += 2 * (chrom_off[k + 1] - chrom_off[k] + snp_off[k + 1] - snp_off[k]) + len(na_best) + 120
    buf = np.empty(size, np.uint8)
    pos = 0
    for k in range(k0, k1):
        pos = _put_field(buf, pos, chrom, chrom_off, k)
        buf[pos] = 32
        pos = _put_field(buf, pos + 1, snp, snp_off, k)
        buf[pos] = 32
        pos += 1
        pos = _rjust_from(buf, pos, _put_int(buf, pos, n_sig[k], 0), 12)
        buf[pos] = 32
        pos = _rjust_from(buf, pos + 1, _put_int(buf, pos + 1, n_tot[k], 0), 12)
        buf[pos] = 32
        pos += 1
        nt = n_tot[k]
        prop = n_sig[k] * (1.0 / nt) if nt else math.nan
        pos = _rjust_g(buf, pos, prop, 4, c4, 12)
        buf[pos] = 32
        pos += 1
        if nt == 0:
            for t in range(len(na_best)):
                buf[pos + t] = na_best[t]
            pos += len(na_best)
        else:
            b = best_partner[k]
            z = best[k]
            if b < 0 or z <= 0.0:
                b = first
                z = 0.0
            pos = _rjust_g(buf, pos, z, 4, c4, 12)
            buf[pos] = 32
            pos = _put_field(buf, pos + 1, chrom, chrom_off, b)
            buf[pos] = 32
            pos = _put_field(buf, pos + 1, snp, snp_off, b)
        buf[pos] = 32
        buf[pos + 1] = 10
        pos += 2
    return buf[:pos]


@cached_njit(nogil=True)
def _plink_p(stat_print, df):
    """P as PLINK prints it (io.results.plink_p) from the cleared STAT: 0 for a negative one."""
    n = len(stat_print)
    p = np.empty(n)
    for r in range(n):
        x = stat_print[r]
        if df[r] <= 0:
            p[r] = math.nan
        elif x < 0:
            p[r] = 0.0
        else:
            p[r] = chi2_sf(x, df[r])
    return p


def printed_stat_and_p(stat, df) -> tuple[np.ndarray, np.ndarray]:
    """STAT with PLINK's 2 low mantissa bits cleared where finite (io.results.clear_low_bits)
    and P as PLINK prints it, for every row."""
    stat = np.ascontiguousarray(stat, np.float64)
    cleared = (stat.view(np.int64) & ~np.int64(3)).view(np.float64)
    sp = np.where(np.isfinite(stat), cleared, stat)
    return sp, _plink_p(sp, np.ascontiguousarray(df, np.int64))


@cached_njit(nogil=True)
def _rjust_ragged(buf, off, width):
    """Each field of (buf, off) without its newline, right-justified to ``width`` bytes."""
    m = len(off) - 1
    size = 0
    for k in range(m):
        size += max(width, off[k + 1] - 1 - off[k])
    out = np.empty(size, np.uint8)
    out_off = np.zeros(m + 1, np.int64)
    pos = 0
    for k in range(m):
        n = off[k + 1] - 1 - off[k]
        for _ in range(width - n):
            out[pos] = 32
            pos += 1
        for t in range(n):
            out[pos + t] = buf[off[k] + t]
        pos += n
        out_off[k + 1] = pos
    return out, out_off


def padded(texts, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Each text right-justified to ``width`` bytes (never truncated), concatenated, with offsets."""
    from gboost.readers.fastnum import ragged

    return _rjust_ragged(*ragged(texts), width)


def pad_ragged(texts: tuple, width: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`padded` of texts already made :func:`gboost.readers.fastnum.ragged` (buffer, offsets)."""
    return _rjust_ragged(texts[0], texts[1], width)


def _bounds(n: int, pieces: int) -> list[tuple[int, int]]:
    edges = np.linspace(0, n, max(1, min(pieces, n)) + 1).astype(np.int64).tolist()
    return list(zip(edges[:-1], edges[1:]))


def epi_cc_pieces(ia, ib, stat, df, chrom: tuple, snp: tuple, pieces: int = 1) -> list:
    """The .epi.cc rows (after the header) of the screened pairs ``ia, ib`` with exact ``stat``,
    as functions each returning the bytes (a uint8 array) of a run of rows; joined in order they
    are the body. Each run clears STAT's low bits and computes PLINK's P of its own rows, in
    compiled code that releases the GIL, so threads run them side by side. ``chrom``, ``snp``:
    the padded fields of every SNP (:func:`padded`, as (bytes, offsets))."""
    df = np.ascontiguousarray(df, np.int64)
    stat = np.ascontiguousarray(stat, np.float64)
    ia, ib = np.ascontiguousarray(ia, np.int64), np.ascontiguousarray(ib, np.int64)

    def piece(a: int, b: int):
        def run() -> np.ndarray:
            sp, p = printed_stat_and_p(stat[a:b], df[a:b])
            return _epi_cc_rows(ia[a:b], ib[a:b], sp, df[a:b], p, chrom[0], chrom[1], snp[0], snp[1], _C4, _C6)
        return run

    return [piece(a, b) for a, b in _bounds(len(ia), pieces)]


def epi_cc_rows(ia, ib, stat, df, chrom: tuple, snp: tuple) -> bytes:
    """Every .epi.cc row (after the header): :func:`epi_cc_pieces` in one piece."""
    return b"".join(f() for f in epi_cc_pieces(ia, ib, stat, df, chrom, snp))


def summary_pieces(chrom: tuple, snp: tuple, w: int, n_sig, n_tot, best, best_partner, pieces: int = 1,
                   first: int = 0) -> list:
    """The .summary rows as functions each returning a run of rows (as :func:`epi_cc_pieces`);
    ``w`` is the SNP column width; ``first`` the SNP named where no partner's value is above 0 (the
    first SNP; a candidate-set scan's first column).  The rows are those of the arrays given (a
    rectangle's: its rows), the names those of every SNP."""
    na = np.frombuffer(f"{'NA':>12} {'NA':>4} {'NA':>{w}}".encode(), np.uint8)
    arrays = (np.ascontiguousarray(n_sig, np.int64), np.ascontiguousarray(n_tot, np.int64),
              np.ascontiguousarray(best, np.float64), np.ascontiguousarray(best_partner, np.int64))

    def piece(a: int, b: int):
        return lambda: _summary_rows(chrom[0], chrom[1], snp[0], snp[1], *arrays, na, _C4, a, b, first)

    return [piece(a, b) for a, b in _bounds(len(arrays[0]), pieces)]


def summary_rows(chrom: tuple, snp: tuple, w: int, n_sig, n_tot, best, best_partner, first: int = 0) -> bytes:
    """Every .summary row: :func:`summary_pieces` in one piece."""
    return b"".join(f() for f in summary_pieces(chrom, snp, w, n_sig, n_tot, best, best_partner, first=first))


@cached_njit(nogil=True)
def _epi_qt_rows(ia, ib, ok, beta, stat, p, chrom, chrom_off, snp, snp_off, c4, c6):
    """The .epi.qt rows (docs/qt_epistasis.md §5): BETA_INT, STAT (6 digits), P (4 digits), each
    right-justified to 12; ``nan`` in all three for a failed pair."""
    n = len(ia)
    size = 0
    for r in range(n):
        size += (chrom_off[ia[r] + 1] - chrom_off[ia[r]] + snp_off[ia[r] + 1] - snp_off[ia[r]]
                 + chrom_off[ib[r] + 1] - chrom_off[ib[r]] + snp_off[ib[r] + 1] - snp_off[ib[r]] + 96)
    buf = np.empty(size, np.uint8)
    pos = 0
    for r in range(n):
        a, b = ia[r], ib[r]
        pos = _put_pair_ids(buf, pos, chrom, chrom_off, snp, snp_off, a, b)
        if ok[r]:
            pos = _rjust_g(buf, pos + 1, beta[r], 6, c6, 12)
            buf[pos] = 32
            pos = _rjust_g(buf, pos + 1, stat[r], 6, c6, 12)
            buf[pos] = 32
            pos = _rjust_g(buf, pos + 1, p[r], 4, c4, 12)
        else:
            pos += 1
            for _ in range(3):
                for _s in range(9):
                    buf[pos] = 32
                    pos += 1
                buf[pos] = 110; buf[pos + 1] = 97; buf[pos + 2] = 110  # nan
                buf[pos + 3] = 32
                pos += 4
            pos -= 1
        buf[pos] = 32
        buf[pos + 1] = 10
        pos += 2
    return buf[:pos]


def epi_qt_pieces(ia, ib, ok, beta, stat, chrom: tuple, snp: tuple, pieces: int = 1, p=None) -> list:
    """The .epi.qt rows (after the header) as functions each returning the bytes (a uint8 array)
    of a run of rows, as :func:`epi_cc_pieces`: each run computes the printed P of its own rows
    (PLINK's normal-tail approximation, clamped at 0) and formats them, compiled, without the GIL.
    ``p``: the rows' P instead (a covariate-adjusted scan's t-test P)."""
    from gboost.stats.qt import plink_normal_p_many

    ia, ib = np.ascontiguousarray(ia, np.int64), np.ascontiguousarray(ib, np.int64)
    ok, beta = np.ascontiguousarray(ok, np.bool_), np.ascontiguousarray(beta, np.float64)
    stat = np.ascontiguousarray(stat, np.float64)
    given = None if p is None else np.where(ok, np.asarray(p, np.float64), np.nan)

    def piece(a: int, b: int):
        def run() -> np.ndarray:
            p = plink_normal_p_many(stat[a:b], ok[a:b]) if given is None else given[a:b]
            return _epi_qt_rows(ia[a:b], ib[a:b], ok[a:b], beta[a:b], stat[a:b], p, chrom[0], chrom[1], snp[0],
                                snp[1], _C4, _C6)
        return run

    return [piece(a, b) for a, b in _bounds(len(ia), pieces)]


def epi_qt_rows(ia, ib, ok, beta, stat, chrom: tuple, snp: tuple) -> bytes:
    """Every .epi.qt row (after the header): :func:`epi_qt_pieces` in one piece."""
    return b"".join(f() for f in epi_qt_pieces(ia, ib, ok, beta, stat, chrom, snp))
