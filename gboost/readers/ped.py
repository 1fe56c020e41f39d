"""PLINK text filesets (.ped/.map), and :class:`ArraySource`, a genotype source held in memory.

A .ped is sample-major text, so it is parsed whole; the genotypes are then kept as one int8
``(snps, samples)`` matrix (a quarter of the text's size at most) and served in blocks.

Allele coding follows ``plink1.9 --file X --make-bed`` (checked with plink1.9 v1.90b6.26):

* alleles are any tokens (letters, 1-4, longer names); ``0`` is a missing allele, and a
  half-missing call (``A 0``) is an error, as in PLINK;
* A1 is chosen in two steps, as PLINK converts the text then loads the binary result: first the
  allele rarer over *all* samples, a tie going to the allele that appears second in the file
  (samples in order, first allele then second); then the two are swapped if A1 is the more
  common allele among *founders* (both parent IDs ``0``, whatever the phenotype), a founder tie
  keeping the order. A SNP with a single allele gets A1 ``0``;
* a line may also give each genotype as one two-character token (``AG``), as PLINK accepts;
* a third allele is an error here (PLINK would set the rarest allele's calls missing);
* genotype code = number of A1 copies, -1 missing.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Iterator

import numpy as np

from gboost.errors import InputError
from gboost.readers.pheno import apply_pheno, decode_phenotype, drop_phenotypes_without_sex, read_rows
from gboost.data.study import SampleTable, VariantTable

MISSING_ALLELE = b"0"


@dataclass
class ArraySource:
    """A :class:`gboost.data.study.GenotypeSource` over an in-memory int8 ``(snps, samples)`` matrix."""

    path: str
    variants: VariantTable
    samples: SampleTable
    genotypes: np.ndarray
    founder: np.ndarray | None = None
    files: list[str] = field(default_factory=list)
    pheno_path: str | None = None
    sex_rule: bool = True  # PLINK's "phenotype of unknown-sex samples ignored" applies to --pheno
    pheno_without_sex: int = 0  # phenotypes ignored because the sex is unknown
    # Per SNP, whether PLINK's own binary codes count the other allele (a .ped's A1 swapped at load:
    # see the module notes); None: they count A1. Only PLINK's skip of SNPs with "fewer than two
    # genotypes" reads its raw codes (gboost/data/plink_skips.py).
    raw_swapped: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.genotypes.shape != (len(self.variants), len(self.samples)):
            raise ValueError(
                f"genotypes {self.genotypes.shape} do not match {len(self.variants)} SNPs x {len(self.samples)} samples"
            )
        if self.founder is None:
            self.founder = np.ones(len(self.samples), dtype=bool)

    def iter_blocks(self, sample_index: np.ndarray, block_snps: int) -> Iterator[tuple[int, np.ndarray]]:
        """Yield ``(first_snp, int8 (snps, len(sample_index)))`` over all SNPs in order."""
        sample_index = np.asarray(sample_index, dtype=np.intp)
        for start in range(0, len(self.variants), block_snps):
            yield start, np.ascontiguousarray(self.genotypes[start : start + block_snps][:, sample_index])

    def input_files(self) -> list[str]:
        """Every file read (the genotype file when none was recorded)."""
        return list(self.files) or [self.path]


def open_ped(  # noqa: A002 - PLINK's names
    ped: str | os.PathLike, map: str | os.PathLike, pheno: str | None = None, *, allow_no_sex: bool = False,
    pheno_column: str | int | None = None,
) -> ArraySource:
    """Read a PLINK text fileset.

    Parameters
    ----------
    ped
        The .ped file: FID IID father mother sex phenotype, then two alleles per SNP.
    map
        The .map file: chrom SNP [cM] bp, one line per SNP, in .ped column order.
    pheno
        Optional ``--pheno`` file overriding the .ped's phenotype column (which is then not
        decoded, so it may even be quantitative).
    allow_no_sex
        PLINK's ``--allow-no-sex``; by default samples of unknown sex get a missing phenotype.

    Returns
    -------
    ArraySource
        Genotypes coded as copies of A1 (PLINK's minor allele, see the module notes).

    Raises
    ------
    InputError
        A line with the wrong number of columns (named), a half-missing call, a third allele,
        duplicate sample IDs, or a phenotype column PLINK would read as quantitative.
    """
    ped, map_path, pheno_file = os.fspath(ped), os.fspath(map), pheno
    chrom, snp, cm, bp = read_map(map_path)
    header, alleles = _read_ped_lines(ped, len(snp))
    fid, iid, pat, mat, sex, pheno_tokens, lines = header
    _check_unique_samples(fid, iid, lines, ped)
    founder = np.array([p == "0" and m == "0" for p, m in zip(pat, mat)], dtype=bool)
    a1, a2, geno, swapped = _code_genotypes(alleles, founder, snp, lines, ped)
    variants = VariantTable(chrom, snp, cm, bp, a1, a2)
    status, trait = (np.zeros(len(fid), dtype=np.int8), None) if pheno_file else decode_phenotype(pheno_tokens, lines, ped)
    samples = SampleTable(
        np.array(fid, dtype=str),
        np.array(iid, dtype=str),
        np.array([{"1": 1, "2": 2}.get(s, 0) for s in sex], dtype=np.int8),
        status,
        trait,
    )
    source = ArraySource(ped, variants, samples, geno, founder, [ped, map_path], sex_rule=not allow_no_sex,
                         raw_swapped=swapped)
    if pheno_file:
        apply_pheno(source, pheno_file, pheno_column)
    elif not allow_no_sex:
        source.pheno_without_sex = drop_phenotypes_without_sex(samples)
    return source


def read_map(path: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Parse a .map: ``chrom snp cm bp`` (or ``chrom snp bp``) per line; returns the four columns."""
    rows = read_rows(path, ".map")
    if not rows:
        raise InputError(path, "the .map file is empty: expected one line per SNP (chrom, SNP ID, cM, bp)")
    chrom, snp, cm, bp = [], [], [], []
    for line, tokens in rows:
        if len(tokens) not in (3, 4):
            raise InputError(
                path, f"line {line}: expected 4 columns (chrom, SNP ID, cM, bp) or 3 (chrom, SNP ID, bp), found {len(tokens)}"
            )
        chrom.append(tokens[0])
        snp.append(tokens[1])
        cm.append(_number(tokens[2], float, path, line, "cM position") if len(tokens) == 4 else 0.0)
        bp.append(_number(tokens[-1], int, path, line, "base-pair position"))
    return (np.array(chrom, dtype=str), np.array(snp, dtype=str),
            np.array(cm, dtype=np.float64), np.array(bp, dtype=np.int64))


def _number(token: str, convert, path: str, line: int, what: str):
    try:
        return convert(token)
    except ValueError:
        kind = "an integer" if convert is int else "a number"
        raise InputError(path, f"line {line}: {what} {token!r} is not {kind}") from None


def _read_ped_lines(path: str, p: int):
    """Split every sample line into its 6 header fields and a ``(2p,)`` bytes array of alleles."""
    from gboost.readers.pheno import input_lines

    fid, iid, pat, mat, sex, pheno, lines, alleles = [], [], [], [], [], [], [], []
    for number, raw in input_lines(path, ".ped"):
        tokens = _ped_tokens(raw, number, path)
        if not tokens or tokens[0].startswith(b"#"):
            continue
        alleles.append(_allele_tokens(tokens, p, number, path))
        for column, value in zip((fid, iid, pat, mat, sex, pheno), tokens[:6]):
            column.append(value.decode())
        lines.append(number)
    if not lines:
        raise InputError(path, "the .ped file is empty: expected one line per sample")
    return (fid, iid, pat, mat, sex, pheno, lines), np.stack(alleles)


def _ped_tokens(raw: bytes, number: int, path: str) -> list[bytes]:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(path, f"line {number}: not UTF-8 text; is this really a .ped file?") from None
    return raw.split()


def _allele_tokens(tokens: list[bytes], p: int, number: int, path: str) -> np.ndarray:
    body = tokens[6:]
    if len(tokens) == 6 + 2 * p:
        return np.array(body, dtype=bytes)
    if len(tokens) == 6 + p and all(len(t) == 2 for t in body):
        # Compound genotypes ("AG"): split each token into its two one-character alleles.
        joined = np.frombuffer(b"".join(body), dtype="S1")
        return joined.astype(bytes)
    raise InputError(
        path,
        f"line {number}: expected {6 + 2 * p} columns (FID, IID, father, mother, sex, phenotype, then "
        f"2 alleles for each of the {p} SNPs in the .map), found {len(tokens)}",
    )


def _check_unique_samples(fid, iid, lines, path) -> None:
    seen: dict = {}
    for key, line in zip(zip(fid, iid), lines):
        if key in seen:
            raise InputError(path, f"line {line}: duplicate sample FID+IID {' '.join(key)!r} (first on line {seen[key]})")
        seen[key] = line


def _code_genotypes(alleles: np.ndarray, founder: np.ndarray, snp: np.ndarray, lines: list[int], path: str):
    """Per SNP choose A1/A2 as PLINK does and code calls as A1 counts (-1 missing); also whether
    A1 was swapped at PLINK's load (its binary codes then count A2)."""
    n, p = alleles.shape[0], alleles.shape[1] // 2
    geno = np.empty((p, n), dtype=np.int8)
    a1, a2 = np.empty(p, dtype=object), np.empty(p, dtype=object)
    swapped = np.zeros(p, dtype=bool)
    for j in range(p):
        first, second = alleles[:, 2 * j], alleles[:, 2 * j + 1]
        _check_half_missing(first, second, snp[j], lines, path)
        allele1, allele2, swapped[j] = _choose_a1(first, second, founder, snp[j], path)
        called = first != MISSING_ALLELE
        codes = (first == allele1).astype(np.int8) + (second == allele1).astype(np.int8)
        geno[j] = np.where(called, codes, -1)
        a1[j], a2[j] = allele1.decode(), allele2.decode()
    return a1.astype(str), a2.astype(str), geno, swapped


def _check_half_missing(first, second, snp_id, lines, path) -> None:
    half = (first == MISSING_ALLELE) != (second == MISSING_ALLELE)
    if half.any():
        k = int(np.flatnonzero(half)[0])
        raise InputError(
            path,
            f"line {lines[k]}: half-missing call '{first[k].decode()} {second[k].decode()}' at SNP {snp_id}; "
            "a genotype needs both alleles or neither ('0 0')",
        )


def _choose_a1(first, second, founder, snp_id, path) -> tuple[bytes, bytes, bool]:
    """(A1, A2) as ``plink1.9 --file`` makes them (see the module notes), and whether the load
    swapped the conversion's A1."""
    interleaved = np.column_stack([first, second]).ravel()  # file order: sample, then allele 1, 2
    called = interleaved != MISSING_ALLELE
    values, first_seen = np.unique(interleaved[called], return_index=True)
    if len(values) > 2:
        shown = ", ".join(v.decode() for v in values)
        raise InputError(path, f"SNP {snp_id} has more than two alleles ({shown}); gboost needs biallelic SNPs")
    if len(values) == 0:
        return MISSING_ALLELE, MISSING_ALLELE, False
    if len(values) == 1:
        return MISSING_ALLELE, values[0], False
    order = np.argsort(first_seen)
    seen_first, seen_second = values[order[0]], values[order[1]]
    # Conversion: A1 = the allele rarer in all samples, ties to the one seen second.
    if _count(interleaved, seen_first) < _count(interleaved, seen_second):
        a1, a2 = seen_first, seen_second
    else:
        a1, a2 = seen_second, seen_first
    # Loading: swapped when A1 is the more common allele among founders (a tie keeps the order).
    founder_alleles = np.concatenate([first[founder], second[founder]])
    if _count(founder_alleles, a1) > _count(founder_alleles, a2):
        return a2, a1, True
    return a1, a2, False


def _count(alleles: np.ndarray, allele: bytes) -> int:
    return int((alleles == allele).sum())
