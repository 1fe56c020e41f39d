"""From a path the user picked to a Study: the core's ``open_input`` and ``load_study``."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

from gboost.errors import InputError
from gboost.data.study import QCOptions, Study

PLINK_BINARY = (".bed", ".bim", ".fam")
PLINK_TEXT = (".ped", ".map")
PLINK2 = (".pgen", ".pvar", ".psam", ".pvar.zst")  # docs/FORMATS.md
VCF = (".vcf", ".vcf.gz", ".vcf.bgz", ".bcf")
BGEN = (".bgen", ".sample")
OPEN_FILTER = ("Genotype studies (*.bed *.bim *.fam *.ped *.map *.pgen *.pvar *.psam *.zst *.vcf *.gz *.bgz *.bcf "
               "*.bgen *.sample *.txt *.dat *.csv *.tsv);;"
               "PLINK binary fileset (*.bed *.bim *.fam);;PLINK text fileset (*.ped *.map);;"
               "PLINK 2 fileset (*.pgen *.pvar *.psam *.zst);;VCF or BCF (*.vcf *.vcf.gz *.vcf.bgz *.bcf);;"
               "BGEN with its .sample (*.bgen *.sample);;"
               "BOOST/GBOOST matrix (*.txt *.dat *.csv *.tsv);;All files (*)")


def _strip(path: str, exts) -> str:
    low = path.lower()
    return next(path[: -len(e)] for e in sorted(exts, key=len, reverse=True) if low.endswith(e))


def input_kwargs(path: str | os.PathLike) -> dict:
    """``open_input`` keyword arguments for a path: a PLINK prefix or any file of a fileset; a
    PLINK 2 fileset by any of its files, a VCF/BCF, a BGEN by itself or its .sample (the other
    file beside it with the same name)."""
    path = os.fspath(path)
    low = path.lower()
    if low.endswith(PLINK_BINARY):
        return {"bfile": path[:-4]}
    if low.endswith(PLINK2):
        return {"pfile": _strip(path, PLINK2)}
    if low.endswith(VCF):
        return {"vcf": path}
    if low.endswith(BGEN):
        base = _strip(path, BGEN)
        return {"bgen": base + ".bgen", "sample": base + ".sample" if os.path.isfile(base + ".sample") else None}
    if low.endswith(".ped"):
        return {"ped": path}
    if low.endswith(".map"):
        return {"map_file": path}
    if os.path.isfile(path + ".bed"):
        return {"bfile": path}
    if os.path.isfile(path + ".ped"):
        return {"ped": path + ".ped"}
    if os.path.isfile(path + ".pgen"):
        return {"pfile": path}
    if os.path.isfile(path):
        return {"boost_matrix": path}
    raise InputError(path, "no such file or PLINK fileset (expected PREFIX.bed/.bim/.fam, .ped/.map, "
                           ".pgen/.pvar/.psam, a VCF/BCF, a BGEN or a BOOST matrix)")


def input_files(path: str | os.PathLike) -> list[str]:
    """The files a study at ``path`` is read from (checkpoint keys: an edited file, another key)."""
    kw = input_kwargs(path)
    if "bfile" in kw:
        return [kw["bfile"] + ext for ext in PLINK_BINARY]
    if "pfile" in kw:
        p = kw["pfile"]
        return [p + ".pgen", p + ".pvar" if os.path.exists(p + ".pvar") or not os.path.exists(p + ".pvar.zst")
                else p + ".pvar.zst", p + ".psam"]
    if "ped" in kw:
        return [kw["ped"], kw["ped"][:-4] + ".map"]
    if "map_file" in kw:
        return [kw["map_file"][:-4] + ".ped", kw["map_file"]]
    if "bgen" in kw:
        return [kw["bgen"]] + ([kw["sample"]] if kw.get("sample") else [])
    return [kw.get("vcf") or kw["boost_matrix"]]


def display_name(path: str | os.PathLike) -> str:
    """The fileset's name as a geneticist says it: the prefix for PLINK files."""
    return Path(canonical(path)).name


def canonical(path: str | os.PathLike) -> str:
    """One key per fileset for the recent-files list (prefix for PLINK binary filesets)."""
    path = os.path.abspath(os.fspath(path))
    if path.lower().endswith(PLINK_BINARY):
        return path[:-4]
    if path.lower().endswith(PLINK2):
        return _strip(path, PLINK2)
    return _strip(path, BGEN) + ".bgen" if path.lower().endswith(BGEN) else path


def open_study(path: str | os.PathLike, qc: QCOptions, *, pheno: str | None = None, allow_no_sex: bool = False,
               log: Callable[[str], None] = lambda m: None, **reading) -> Study:
    """Open the fileset at ``path`` and load it with ``qc``; raises InputError on bad input.
    ``reading``: open_input's options for other formats (``ids``, ``hard_call_threshold``)."""
    from gboost.data.inputs import open_input

    source = open_input(pheno=pheno, allow_no_sex=allow_no_sex, **reading, **input_kwargs(path))
    from gboost.data.load import load_study

    return load_study(source, qc, log=log)

