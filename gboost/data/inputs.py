"""One entry point from "what the user pointed at" to a GenotypeSource (CLI, GUI, cluster)."""
from __future__ import annotations

import os

from gboost.errors import InputError
from gboost.readers.sample_ids import IdMode
from gboost.data.study import GenotypeSource

INPUT_CHOICES = ("--bfile PREFIX, --ped FILE --map FILE, --boost-matrix FILE, --pfile PREFIX, --vcf FILE, "
                 "or --bgen FILE")


def open_input(*, bfile: str | None = None, ped: str | None = None, map_file: str | None = None,
               boost_matrix: str | None = None, pheno: str | None = None,
               allow_no_sex: bool = False, pfile: str | None = None, vcf: str | None = None,
               bgen: str | None = None, sample: str | None = None, hard_call_threshold: float = 0.1,
               bgen_ref: str = "ref-unknown", ids: IdMode | None = None, pheno_name: str | None = None,
               mpheno: int | None = None) -> GenotypeSource:
    """Open exactly one of: a PLINK binary fileset prefix, a .ped/.map pair, a BOOST matrix, a
    PLINK 2 fileset prefix, a VCF/BCF file or a BGEN file (with its .sample); docs/FORMATS.md.
    Paths are str or os.PathLike (a wrong type is a TypeError naming the argument). ``pheno_name``
    (``--pheno-name``) or ``mpheno`` (``--mpheno``, from 1) picks the --pheno file's phenotype column."""
    from gboost.pipeline.validate import check_pheno_column, check_setting, check_type

    paths = dict(bfile=bfile, ped=ped, map_file=map_file, boost_matrix=boost_matrix, pheno=pheno, pfile=pfile,
                 vcf=vcf, bgen=bgen, sample=sample)
    for name, value in paths.items():
        check_type("open_input", name, value, "path")
    bfile, ped, map_file, boost_matrix, pheno, pfile, vcf, bgen, sample = (
        None if v is None else os.fspath(v) for v in paths.values())
    check_type("open_input", "allow_no_sex", allow_no_sex, "bool", optional=False)
    check_type("open_input", "pheno_name", pheno_name, "str")
    check_type("open_input", "mpheno", mpheno, "int")
    try:
        check_setting("open_input", "hard_call_threshold", hard_call_threshold)
        check_pheno_column(pheno, pheno_name, mpheno)
    except ValueError as exc:
        raise InputError(None, str(exc)) from None
    column = pheno_name if pheno_name is not None else mpheno
    if ids is not None and not isinstance(ids, IdMode):
        raise TypeError(f"open_input: ids must be a gboost.readers.sample_ids.IdMode or None, got {type(ids).__name__}")
    given = [x for x in (bfile, ped or map_file, boost_matrix, pfile, vcf, bgen) if x]
    if len(given) != 1:
        raise InputError(None, f"give exactly one input: {INPUT_CHOICES}")
    if sample and not bgen:
        raise InputError(sample, "--sample goes with --bgen")
    ids = ids or IdMode()
    if bfile:
        from gboost.readers.plink_bed import open_bfile

        # PLINK's rule: the prefix as given when PREFIX.bed exists (x.bed.bed), else without a typed extension
        prefix = bfile
        if bfile.endswith((".bed", ".bim", ".fam")) and not os.path.exists(bfile + ".bed"):
            prefix = bfile[:-4]
        return open_bfile(prefix, pheno=pheno, allow_no_sex=allow_no_sex, pheno_column=column)
    if pfile:
        from gboost.readers.pgen import open_pfile

        return open_pfile(pfile, pheno=pheno, allow_no_sex=allow_no_sex, pheno_column=column)
    if vcf:
        from gboost.readers.vcf import open_vcf

        return open_vcf(vcf, pheno=pheno, ids=ids, pheno_column=column)
    if bgen:
        from gboost.readers.bgen import open_bgen

        return open_bgen(bgen, sample=sample, pheno=pheno, ids=ids, hard_call_threshold=hard_call_threshold,
                         ref_mode=bgen_ref, pheno_column=column)
    if ped or map_file:
        if not (ped and map_file):
            # PLINK's --file PREFIX convention: the other file shares the prefix.
            base = os.path.splitext(ped or map_file)[0]
            ped, map_file = ped or base + ".ped", map_file or base + ".map"
        from gboost.readers.ped import open_ped

        return open_ped(ped, map_file, pheno=pheno, allow_no_sex=allow_no_sex, pheno_column=column)
    from gboost.readers.boost_matrix import open_boost_matrix

    src = open_boost_matrix(boost_matrix)
    if pheno:
        from gboost.readers.pheno import apply_pheno

        apply_pheno(src, pheno, column)
    return src
