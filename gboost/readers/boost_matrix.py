"""The original BOOST / GBOOST text matrix.

One sample per row: the class label (0 control, 1 case), then the p genotypes coded 0/1/2,
separated by whitespace or commas. The format has no missing code, no header and no SNP
metadata, so we synthesize it:

* SNP IDs ``snp1 .. snpP`` (column order), chromosome ``1``, bp = column number (1-based), cM 0,
  alleles A1 ``1`` and A2 ``2``; the genotype value is taken as the count of A1;
* sample FID = IID = ``sample1 .. sampleN`` (row order), sex unknown, status 1 (control) for
  label 0 and 2 (case) for label 1.

The matrix is parsed whole and held as int8 ``(snps, samples)``.
"""
from __future__ import annotations

import os

import numpy as np

from gboost.errors import InputError
from gboost.readers.ped import ArraySource
from gboost.data.study import SampleTable, VariantTable

_SEPARATORS = bytes.maketrans(b",\t\r", b"   ")
_ZERO = ord("0")


def open_boost_matrix(path: str | os.PathLike) -> ArraySource:
    """Read a BOOST/GBOOST genotype matrix.

    Parameters
    ----------
    path
        Text file, one sample per row: label (0/1) then genotypes (0/1/2).

    Returns
    -------
    ArraySource
        With synthesized SNP and sample metadata (see the module notes).

    Raises
    ------
    InputError
        A row with a different number of values than the first, a label other than 0/1, a genotype
        other than 0/1/2 (naming line and column), or an empty file.
    """
    path = os.fspath(path)
    rows, labels = _read_rows(path)
    geno = np.ascontiguousarray(np.stack(rows).T)
    n, p = len(labels), geno.shape[0]
    ids = np.array([f"snp{k}" for k in range(1, p + 1)], dtype=str)
    variants = VariantTable(
        np.full(p, "1", dtype=str), ids, np.zeros(p), np.arange(1, p + 1, dtype=np.int64),
        np.full(p, "1", dtype=str), np.full(p, "2", dtype=str),
    )
    names = np.array([f"sample{k}" for k in range(1, n + 1)], dtype=str)
    status = np.where(np.array(labels) == 1, 2, 1).astype(np.int8)
    samples = SampleTable(names, names.copy(), np.zeros(n, dtype=np.int8), status)
    # The format has no sex column: PLINK's unknown-sex rule must not erase every phenotype.
    return ArraySource(path, variants, samples, geno, files=[path], sex_rule=False)


def _read_rows(path: str) -> tuple[list[np.ndarray], list[int]]:
    from gboost.readers.pheno import input_lines

    rows, labels, width = [], [], None
    for number, raw in input_lines(path, "BOOST matrix", "BOOST matrix"):
        tokens = raw.translate(_SEPARATORS).split()
        if not tokens:
            continue
        if width is None:
            width = len(tokens)
            if width < 2:
                raise InputError(path, f"line {number}: expected a class label and at least one genotype")
        elif len(tokens) != width:
            raise InputError(path, f"line {number}: expected {width} values (label + {width - 1} genotypes, "
                                   f"as on the first row), found {len(tokens)}")
        labels.append(_label(tokens[0], number, path))
        rows.append(_genotypes(tokens[1:], number, path))
    if not rows:
        raise InputError(path, "the BOOST matrix is empty: expected one row per sample (label 0/1, then genotypes 0/1/2)")
    return rows, labels


def _label(token: bytes, number: int, path: str) -> int:
    if token not in (b"0", b"1"):
        shown = token.decode(errors="replace")
        raise InputError(path, f"line {number}: class label {shown!r} is not 0 (control) or 1 (case)")
    return int(token)


def _genotypes(tokens: list[bytes], number: int, path: str) -> np.ndarray:
    joined = b"".join(tokens)
    values = np.frombuffer(joined, dtype=np.uint8) - _ZERO if len(joined) == len(tokens) else None
    if values is None or (values > 2).any():
        bad = next(k for k, t in enumerate(tokens) if t not in (b"0", b"1", b"2"))
        raise InputError(
            path,
            f"line {number}, genotype column {bad + 1}: value {tokens[bad].decode(errors='replace')!r} is not 0, 1 or 2 "
            "(the BOOST format has no missing code)",
        )
    return values.astype(np.int8)
