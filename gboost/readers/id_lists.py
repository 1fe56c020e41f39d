"""Sample ID files of ``--keep``, ``--remove``, ``--keep-fam`` and ``--remove-fam``, read as PLINK reads them.

Checked against plink1.9 v1.90b6.26 and plink2 v2.00a3.5:

* ``--keep``/``--remove``: one sample a line, whitespace-separated ``FID IID`` (further columns
  ignored, as PLINK does: a .fam works as a sample list). PLINK 2 also takes a file of IIDs alone;
  here a file whose first line holds one token (or whose header is ``#IID``) is such a file, and each
  IID names the samples with that IID, whatever their family ID (PLINK 2 would look for FID ``0``
  and, on a .fam with family IDs, keep nobody). An IID that names samples of several families is
  refused: it cannot say which one is meant. In a two-column file a line with one token is refused,
  as plink1.9 refuses it ("Line N of --keep file has fewer tokens than expected").
* ``--keep-fam``/``--remove-fam``: a family ID per line (the first token; further columns ignored).
* Blank lines are skipped; a first line starting ``#FID``, ``#IID`` or ``FID IID`` is PLINK 2's
  header and names the columns. IDs the study does not have are ignored, as by PLINK.
"""
from __future__ import annotations

import os

import numpy as np

from gboost.errors import InputError
from gboost.readers.pheno import read_text


def _rows(path: str | os.PathLike, flag: str) -> tuple[list[tuple[int, list[str]]], str | None]:
    """The data lines ``(line number, tokens)`` of an ID file and its header's first token, if any."""
    text = read_text(path, flag)
    rows = [(n, line.split()) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
    header = None
    if rows and (rows[0][1][0] in ("#FID", "#IID") or rows[0][1][:2] == ["FID", "IID"]):
        header = rows[0][1][0]
        rows = rows[1:]
    return rows, header


def listed_samples(path: str | os.PathLike, flag: str, fid: np.ndarray, iid: np.ndarray) -> np.ndarray:
    """Which samples (``fid``, ``iid``: the study's IDs in file order) a ``--keep``/``--remove`` file
    names: a bool per sample. InputError for an unreadable file, a line without an IID, or an IID
    alone that names samples of several families."""
    rows, header = _rows(path, flag)
    fid, iid = np.asarray(fid).astype(str), np.asarray(iid).astype(str)
    iid_only = header == "#IID" or (header is None and bool(rows) and len(rows[0][1]) == 1)
    if iid_only:
        wanted = {tokens[0]: line for line, tokens in rows}
        hit = np.isin(iid, list(wanted))
        if hit.any():
            # (a .fam repeats no FID IID, so an IID found twice is in two families)
            found, counts = np.unique(iid[hit], return_counts=True)
            if (counts > 1).any():
                name = str(found[int(np.flatnonzero(counts > 1)[0])])
                families = sorted(set(fid[iid == name].tolist()))
                raise InputError(path, f"line {wanted[name]}: IID {name!r} names samples of {len(families)} families "
                                       f"({', '.join(families[:3])}{', ...' if len(families) > 3 else ''}); give "
                                       f"FID IID on each line of the {flag} file")
        return hit
    pairs = set()
    for line, tokens in rows:
        if len(tokens) < 2:
            raise InputError(path, f"line {line}: expected FID IID, found {len(tokens)} column (plink1.9: \"Line "
                                   f"{line} of {flag} file has fewer tokens than expected\"); a file of IIDs alone "
                                   "has one on every line")
        pairs.add(tokens[0] + "\t" + tokens[1])
    keys = np.char.add(np.char.add(fid, "\t"), iid) if len(iid) else np.zeros(0, str)
    return np.isin(keys, list(pairs)) if pairs else np.zeros(len(iid), bool)


def listed_families(path: str | os.PathLike, flag: str, fid: np.ndarray) -> np.ndarray:
    """Which samples a ``--keep-fam``/``--remove-fam`` file names by family ID: a bool per sample."""
    rows, _ = _rows(path, flag)
    families = {tokens[0] for _, tokens in rows}
    return np.isin(np.asarray(fid).astype(str), list(families)) if families else np.zeros(len(fid), bool)
