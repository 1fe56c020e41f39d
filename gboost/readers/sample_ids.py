"""Sample IDs of single-ID formats (VCF, BGEN) split into FID and IID the way PLINK 2 imports them.

A VCF header or a BGEN file holds one ID per sample. PLINK 2 (v2.00a3.5, checked with
``plink2 --vcf X --make-bed``) turns it into a .fam's two columns as follows, and so do we:

* default: FID ``0``, IID = the whole ID (``fam1_ind1`` stays one ID);
* ``--double-id``: FID = IID = the whole ID;
* ``--const-fid [ID]``: FID = ID (default ``0``), IID = the whole ID;
* ``--id-delim [D]``: FID before the delimiter D (default ``_``), IID after it; an ID without
  D, or with more than two parts, is refused (PLINK 2 reads a third part as a SID, which gboost
  does not keep).

The ``--pheno`` file then names samples by these FID/IID pairs.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gboost.errors import InputError


@dataclass(frozen=True)
class IdMode:
    """How one-part sample IDs become FID/IID (see the module notes)."""

    double_id: bool = False
    const_fid: str | None = None
    id_delim: str | None = None

    def check(self) -> None:
        if self.id_delim is not None and (self.double_id or self.const_fid is not None):
            raise InputError(None, "--id-delim cannot be combined with --double-id or --const-fid (as in PLINK 2)")
        if self.double_id and self.const_fid is not None:
            raise InputError(None, "--double-id and --const-fid are alternatives: give one")
        if self.id_delim is not None and len(self.id_delim) != 1:
            raise InputError(None, f"--id-delim takes one character, not {self.id_delim!r}")

    def describe(self) -> str:
        if self.double_id:
            return "--double-id: FID = IID = the file's sample ID"
        if self.id_delim is not None:
            return f"--id-delim {self.id_delim}: FID{self.id_delim}IID split at the delimiter"
        return f"FID {self.const_fid or '0'}, IID = the file's sample ID (PLINK 2's default; see --double-id, --id-delim)"


def split_ids(ids: list[str], mode: IdMode, path: str) -> tuple[np.ndarray, np.ndarray]:
    """``(fid, iid)`` str arrays for the file's sample IDs; duplicates refused."""
    mode.check()
    if mode.id_delim is not None:
        fid, iid = [], []
        for k, name in enumerate(ids):
            parts = name.split(mode.id_delim)
            if len(parts) != 2 or not all(parts):
                raise InputError(path, f"sample {k + 1} ID {name!r} is not FID{mode.id_delim}IID (--id-delim "
                                       f"{mode.id_delim}): give --double-id or --const-fid instead")
            fid.append(parts[0])
            iid.append(parts[1])
    else:
        iid = list(ids)
        fid = iid if mode.double_id else [mode.const_fid or "0"] * len(iid)
    fid_a, iid_a = np.array(fid, dtype=str), np.array(iid, dtype=str)
    seen: dict = {}
    for k, key in enumerate(zip(fid_a.tolist(), iid_a.tolist())):
        if key in seen:
            raise InputError(path, f"sample {k + 1}: duplicate sample ID {' '.join(key)!r} (first is sample "
                                   f"{seen[key] + 1}); IDs must be unique")
        seen[key] = k
    return fid_a, iid_a
