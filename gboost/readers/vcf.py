"""VCF and BCF files (.vcf, .vcf.gz, .bcf), read through cyvcf2 (optional; htslib inside).

What is read (docs/FORMATS.md has the user's view), as ``plink2 --vcf FILE --make-bed`` does:

* variants: CHROM (numeric codes without leading zeros), POS, ID (``.`` when absent), REF, ALT;
  the counted allele A1 is ALT, A2 is REF; cM 0. A record with several ALT alleles is refused
  (one line naming it and the command that splits it). Every record is read whatever its FILTER.
* genotypes: the GT field's hard calls only (a file without GT, e.g. dosages alone, is refused);
  a haploid call counts as homozygous (``1`` is 2 copies of ALT, as plink2 stores a male's X
  call); ``./.`` and a missing GT are missing; a half-call (``./1``) is refused, as PLINK 2 does
  by default.
* samples: IDs split into FID/IID as PLINK 2 does (gboost.readers.sample_ids: FID ``0`` by default,
  ``--double-id``, ``--const-fid``, ``--id-delim``); a VCF has no sex, no parents (every sample
  a founder) and no phenotype: ``--pheno`` gives it, and every sample's phenotype is kept, as
  PLINK 2 does (PLINK 1.9's unknown-sex rule would leave no sample to scan; the log says so).

htslib's own messages about a bad file are caught (gboost.readers.streamed.c_stderr_captured) and
become part of the one line the user sees.
"""
from __future__ import annotations

import os

import numpy as np

from gboost.errors import InputError
from gboost.readers.optional import require
from gboost.readers.pheno import apply_pheno, check_regular_file
from gboost.readers.sample_ids import IdMode, split_ids
from gboost.readers.streamed import StreamedSource, c_stderr_captured, canonical_chrom, library_words
from gboost.runtime.numba_cache import cached_njit
from gboost.data.study import SampleTable, VariantTable

NO_SEX_NOTE = ("{what} carries no sex: every sample's phenotype is kept, as PLINK 2 does (PLINK 1.9 ignores "
               "phenotypes of samples of unknown sex unless --allow-no-sex)")


class VcfSource(StreamedSource):
    """A VCF/BCF file; genotypes decoded by cyvcf2 in SNP blocks (one pass over the file each)."""

    def blocks(self, block_snps: int):
        vcf = _open(self.path)
        p, n = len(self.variants), len(self.samples)
        records = iter(vcf)
        try:
            for start in range(0, p, block_snps):
                stop = min(start + block_snps, p)
                out = np.empty((stop - start, n), dtype=np.int8)
                words: list[str] = []
                with c_stderr_captured(words):
                    for k in range(start, stop):
                        rec = _next(records, self.path, words)
                        if rec is None or rec.POS != self.variants.bp[k]:
                            raise InputError(self.path, "the file changed while it was read (a record is missing "
                                                        "or moved)")
                        try:
                            out[k - start] = alt_counts(rec, self.path, self.variants.snp[k], self.samples.iid)
                        except InputError:
                            raise
                        except Exception as exc:  # cyvcf2: "couldn't get genotypes" (a short line)
                            raise InputError(self.path, f"variant {self.variants.snp[k]} (record {k + 1}): cannot read "
                                                        f"its genotypes: {library_words(words, str(exc))} (a truncated "
                                                        "or damaged line?)") from None
                yield start, out
        finally:
            vcf.close()


def _open(path: str):
    cyvcf2 = require("cyvcf2", path)
    check_regular_file(path, "VCF")
    words: list[str] = []
    with c_stderr_captured(words):
        try:
            return cyvcf2.VCF(path, gts012=True, lazy=True)
        except Exception as exc:  # cyvcf2 raises a bare Exception for a bad header
            message = library_words(words, str(exc).strip() or "not a VCF/BCF file")
    raise InputError(path, f"cannot read as VCF/BCF: {message}")


def _next(records, path: str, words: list[str]):
    try:
        return next(records)
    except StopIteration:
        return None
    except Exception as exc:  # htslib's parse errors arrive as various exception types
        raise InputError(path, f"cannot read as VCF/BCF: {library_words(words, str(exc).strip() or type(exc).__name__)}") \
            from None


def alt_counts(rec, path: str, snp: str, iid: np.ndarray) -> np.ndarray:
    """int8 ALT copies per sample from a record's GT (see the module notes)."""
    gt = rec.genotype
    g = gt.array() if gt is not None else None
    if g is None:  # no GT in this record: every call missing, as plink2 reads it
        return np.full(len(iid), -1, dtype=np.int8)
    if g.shape[1] > 3:
        raise InputError(path, f"variant {snp}: ploidy {g.shape[1] - 1}; gboost reads haploid and diploid calls")
    out = np.empty(len(iid), dtype=np.int8)
    k = _alt_counts(g, out)
    if k >= 0:
        raise InputError(path, f"variant {snp}: half-missing call at sample {iid[k]} (e.g. ./1); PLINK 2 refuses "
                               "these too: set them missing with `plink2 --vcf FILE --vcf-half-call missing "
                               "--make-pgen --out NEW` and scan --pfile NEW")
    return out


@cached_njit()
def _alt_counts(g, out) -> int:
    """ALT copies from cyvcf2's ``(samples, ploidy + 1)`` allele array (-1 missing allele, -2 no
    such allele: a haploid call in a diploid record; last column the phase); returns the first
    sample with a half-call, or -1. One pass (NumPy's several array passes are slower)."""
    diploid = g.shape[1] == 3
    for i in range(g.shape[0]):
        a = g[i, 0]
        b = g[i, 1] if diploid else -2
        if b == -2:  # haploid: homozygous
            out[i] = -1 if a < 0 else (2 if a == 1 else 0)
        elif (a < 0) != (b < 0):
            return i
        elif a < 0:
            out[i] = -1
        else:
            out[i] = (1 if a == 1 else 0) + (1 if b == 1 else 0)
    return -1


def open_vcf(path: str | os.PathLike, pheno: str | None = None, *, ids: IdMode | None = None,
             pheno_column: str | int | None = None) -> VcfSource:
    """Read a VCF/BCF's header and variant columns; genotypes stream later.

    Parameters
    ----------
    path
        ``.vcf``, ``.vcf.gz`` (bgzip or gzip) or ``.bcf``.
    pheno
        The ``--pheno`` file (``FID IID value``); required, a VCF has no phenotypes.
    ids
        How sample IDs become FID/IID (PLINK 2's default: FID ``0``).

    Raises
    ------
    InputError
        cyvcf2 missing, an unreadable or malformed file, no GT field, no samples, a
        multi-allelic record, a duplicate sample ID, or no --pheno.
    """
    path = os.fspath(path)
    vcf = _open(path)
    try:
        if not vcf.samples:
            raise InputError(path, "the VCF has no samples (no columns after FORMAT)")
        if not _has_gt(vcf):
            raise InputError(path, "the VCF header declares no GT (hard-call genotype) FORMAT field; gboost scans hard "
                                   "calls: for dosages (DS) make them with `plink2 --vcf FILE dosage=DS "
                                   "--hard-call-threshold 0.1 --make-pgen --out NEW` and scan --pfile NEW")
        fid, iid = split_ids(list(vcf.samples), ids or IdMode(), path)
        variants = _read_variants(vcf, path)
    finally:
        vcf.close()
    n = len(iid)
    samples = SampleTable(fid, iid, np.zeros(n, dtype=np.int8), np.zeros(n, dtype=np.int8))
    source = VcfSource(path, variants, samples, np.ones(n, dtype=bool), [path], sex_rule=False)
    if pheno is None:
        raise InputError(path, "a VCF holds no phenotypes: give them with --pheno FILE (FID IID value, 1 control, "
                               f"2 case; sample IDs here: {(ids or IdMode()).describe()})")
    apply_pheno(source, pheno, pheno_column)
    source.notes.append(NO_SEX_NOTE.format(what="A VCF"))
    return source


def _has_gt(vcf) -> bool:
    for h in vcf.header_iter():
        info = h.info()
        if info.get("HeaderType") == "FORMAT" and info.get("ID") == "GT":
            return True
    return False


def _read_variants(vcf, path: str) -> VariantTable:
    """The variant columns of every record (genotypes not decoded: cyvcf2 parses them lazily)."""
    chrom, pos, vid, ref, alt = [], [], [], [], []
    words: list[str] = []
    records = iter(vcf)
    with c_stderr_captured(words):
        while (rec := _next(records, path, words)) is not None:
            alts = rec.ALT
            if len(alts) > 1:
                raise InputError(path, f"variant {rec.ID or '.'} at {rec.CHROM}:{rec.POS} has {len(alts)} ALT alleles "
                                       f"({','.join(alts)}); gboost scans biallelic variants: split them with "
                                       "`bcftools norm -m- FILE -Oz -o NEW.vcf.gz` or drop them with `plink2 --vcf FILE "
                                       "--max-alleles 2 --make-pgen --out NEW`")
            chrom.append(rec.CHROM)
            pos.append(rec.POS)
            vid.append(rec.ID or ".")
            ref.append(rec.REF)
            alt.append(alts[0] if alts else ".")
    if not pos:
        raise InputError(path, "the VCF holds no variant records")
    variants = VariantTable(canonical_chrom(chrom), np.array(vid, dtype=str), np.zeros(len(pos)),
                            np.array(pos, dtype=np.int64), np.array(alt, dtype=str), np.array(ref, dtype=str))
    # An ID may repeat (all "." where the VCF names none): plink1.9 --vcf keeps "." as each ID and
    # scans the rows as distinct SNPs, as it does a .bim's (``read_bim``).
    return variants

