"""One entry point from "what the user pointed at" to a GenotypeSource (CLI, GUI, cluster)."""
from __future__ import annotations

import os

from gboost.errors import InputError
from gboost.study import GenotypeSource


def open_input(*, bfile: str | None = None, ped: str | None = None, map_file: str | None = None,
               boost_matrix: str | None = None, pheno: str | None = None,
               allow_no_sex: bool = False) -> GenotypeSource:
    """Open exactly one of: a PLINK binary fileset prefix, a .ped/.map pair, a BOOST matrix."""
    given = [x for x in (bfile, ped or map_file, boost_matrix) if x]
    if len(given) != 1:
        raise InputError(None, "give exactly one input: --bfile PREFIX, --ped FILE --map FILE, or --boost-matrix FILE")
    if bfile:
        from gboost.io.plink_bed import open_bfile

        # PLINK's rule: the prefix as given when PREFIX.bed exists (x.bed.bed), else without a typed extension
        prefix = bfile
        if bfile.endswith((".bed", ".bim", ".fam")) and not os.path.exists(bfile + ".bed"):
            prefix = bfile[:-4]
        return open_bfile(prefix, pheno=pheno, allow_no_sex=allow_no_sex)
    if ped or map_file:
        if not (ped and map_file):
            # PLINK's --file PREFIX convention: the other file shares the prefix.
            base = os.path.splitext(ped or map_file)[0]
            ped, map_file = ped or base + ".ped", map_file or base + ".map"
        from gboost.io.ped import open_ped

        return open_ped(ped, map_file, pheno=pheno, allow_no_sex=allow_no_sex)
    from gboost.io.boost_matrix import open_boost_matrix

    src = open_boost_matrix(boost_matrix)
    if pheno:
        from gboost.io.pheno import apply_pheno

        apply_pheno(src, pheno)
    return src
