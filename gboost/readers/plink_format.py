"""Numbers printed the way PLINK 1.9 prints them (its own %g-like formatter).

PLINK does not call printf: it scales the value into an integer of d significant digits and rounds
with a *tolerant banker's rule* (a fraction within eps of .5 goes to the even neighbour), then
trims trailing zeros. On most values that equals C's ``%.{d}g``; it differs on decimal ties such as
PROP = 7/320 = 0.021875 (PLINK ``0.02188`` by the even rule, printf ``0.02187`` from the binary
value just below the tie). Written from the behaviour described in docs/plink_boost_notes.md and checked
against plink1.9 output in tests; digits: 6 for STAT (``%g``), 4 for P, PROP and BEST_CHISQ.
"""
from __future__ import annotations

import math

# Per precision: the mantissa just below which a value rounds down to the lower decade, and the
# tie tolerance PLINK uses on the scaled integer.
_DECADE = {4: 0.99994999999999, 6: 0.99999949999999}
_EPS = {4: 5e-11, 6: 5e-9}
_UP_STEPS = ((256, 1e256), (128, 1e128), (64, 1e64), (32, 1e32), (16, 1e16), (8, 1e8), (4, 1e4), (2, 1e2), (1, 10.0))
_DOWN_STEPS = ((256, 1e-256), (128, 1e-128), (64, 1e-64), (32, 1e-32), (16, 1e-16), (8, 1e-8), (4, 1e-4), (2, 1e-2), (1, 0.1))


def _bround(x: float, eps: float) -> int:
    """Round to an integer; a fraction within ``eps`` of 1/2 rounds to the even neighbour."""
    whole = int(x)
    frac = x - whole
    return whole + int(frac + (0.5 - eps if whole % 2 == 0 else 0.5 + eps))


def _digits(q: int, places: int) -> str:
    """Integer ``q`` with ``places`` decimals, trailing zeros (and a bare point) trimmed."""
    if places == 0:
        return str(q)
    s = str(q).rjust(places + 1, "0")
    head, tail = s[:-places], s[-places:].rstrip("0")
    return f"{head}.{tail}" if tail else head


def plink_g(x: float, digits: int = 6) -> str:
    """Format like PLINK 1.9's ``dtoa_g`` (digits=6) or ``dtoa_g_wxp4`` (digits=4), unpadded."""
    if math.isnan(x):
        return "nan"
    if x < 0:
        return "-" + plink_g(-x, digits)
    if math.isinf(x):
        return "inf"
    if x == 0.0:
        return "0"
    d, eps, m = digits, _EPS[digits], _DECADE[digits]
    if x < m * 1e-4:  # exponential, small
        xp10 = 0
        for k, f in _UP_STEPS:
            if x < m * 10.0 ** (1 - k):
                x *= f
                xp10 += k
        return f"{_digits(_bround(x * 10 ** (d - 1), eps), d - 1)}e-{xp10:02d}"
    if x >= m * 10.0**d:  # exponential, large
        xp10 = 0
        for k, f in _DOWN_STEPS:
            if x >= m * 10.0**k:
                x *= f
                xp10 += k
        return f"{_digits(_bround(x * 10 ** (d - 1), eps), d - 1)}e+{xp10:02d}"
    if x >= m:  # significand only: 1 <= x < 10^d
        int_digits = 1
        while int_digits < d and x >= m * 10.0**int_digits:
            int_digits += 1
        places = d - int_digits
        return _digits(_bround(x * 10**places, eps), places)
    # 0.0001 <= x < 1: "0." then up to three zeros, then d digits
    prefix = "0."
    if x < m * 1e-2:
        x *= 100
        prefix += "00"
    if x < m * 1e-1:
        x *= 10
        prefix += "0"
    q = _bround(x * 10**d, eps)
    tail = str(q).rjust(d, "0").rstrip("0")
    return prefix + tail


# PLINK 1.9's (human) chromosome set: 1-22, then X, Y, XY and MT as 23-26; 0 is "unplaced".
HUMAN_CHROMS = 26
_NAMED_CHROMS = {"X": 23, "Y": 24, "XY": 25, "M": 26, "MT": 26}


def chrom_number(code: str) -> int | None:
    """The number plink1.9 reads in a chromosome code, or None for a name it does not know (a
    contig such as ``HLA`` or ``chrUn_gl000220``, accepted only with ``--allow-extra-chr`` and then
    printed whole). As plink1.9 reads a .bim (checked on it): a ``chr`` prefix in any case, then
    one or two ASCII digits (``01`` is 1, ``001`` and ``1a`` are names) or X, Y, XY, M, MT in any
    case. A number past :data:`HUMAN_CHROMS` is returned as read: PLINK refuses it, with or without
    --allow-extra-chr ("disallowed for humans")."""
    text = code[3:] if code[:3].lower() == "chr" else code
    if 0 < len(text) <= 2 and text.isascii() and text.isdigit():
        return int(text)
    return _NAMED_CHROMS.get(text.upper()) if text.isascii() else None
