"""From a path the user picked to a Study: the core's ``open_input`` and ``load_study``."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

from gboost.errors import InputError
from gboost.study import QCOptions, Study

PLINK_BINARY = (".bed", ".bim", ".fam")
PLINK_TEXT = (".ped", ".map")
OPEN_FILTER = ("PLINK binary fileset (*.bed *.bim *.fam);;PLINK text fileset (*.ped *.map);;"
               "BOOST/GBOOST matrix (*.txt *.dat *.csv *.tsv);;All files (*)")


def input_kwargs(path: str | os.PathLike) -> dict:
    """``open_input`` keyword arguments for a path: a PLINK prefix or any file of a fileset."""
    path = os.fspath(path)
    low = path.lower()
    if low.endswith(PLINK_BINARY):
        return {"bfile": path[:-4]}
    if low.endswith(".ped"):
        return {"ped": path}
    if low.endswith(".map"):
        return {"map_file": path}
    if os.path.isfile(path + ".bed"):
        return {"bfile": path}
    if os.path.isfile(path + ".ped"):
        return {"ped": path + ".ped"}
    if os.path.isfile(path):
        return {"boost_matrix": path}
    raise InputError(path, "no such file or PLINK fileset (expected PREFIX.bed/.bim/.fam, .ped/.map or a BOOST matrix)")


def display_name(path: str | os.PathLike) -> str:
    """The fileset's name as a geneticist says it: the prefix for PLINK files."""
    return Path(canonical(path)).name


def canonical(path: str | os.PathLike) -> str:
    """One key per fileset for the recent-files list (prefix for PLINK binary filesets)."""
    path = os.path.abspath(os.fspath(path))
    return path[:-4] if path.lower().endswith(PLINK_BINARY) else path


def open_study(path: str | os.PathLike, qc: QCOptions, *, pheno: str | None = None, allow_no_sex: bool = False,
               log: Callable[[str], None] = lambda m: None) -> Study:
    """Open the fileset at ``path`` and load it with ``qc``; raises InputError on bad input."""
    from gboost.inputs import open_input

    source = open_input(pheno=pheno, allow_no_sex=allow_no_sex, **input_kwargs(path))
    from gboost.load import load_study

    return load_study(source, qc, log=log)

