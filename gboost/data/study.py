"""The data model shared by readers, QC, encoder, engines, writers and the GUI.

Genotypes travel between readers and the encoder as ``int8`` blocks of shape
``(snps_in_block, samples)``: the number of copies of allele A1 (0, 1, 2; PLINK's A1 is the first
allele column of the ``.bim``) and ``-1`` for a missing call. The statistics do not depend on
which allele is counted (relabelling a SNP's genotype types permutes its table's rows), but the
marginal table's orientation and MAF do, so we follow PLINK's A1.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable, Iterator, Protocol

import numpy as np

MISSING = np.int8(-1)


@dataclass
class VariantTable:
    """One row per SNP, as in a ``.bim``; all arrays have the same length."""

    chrom: np.ndarray  # str codes as written in the file ("1", "22", "X")
    snp: np.ndarray  # str IDs
    cm: np.ndarray  # float64 genetic position
    bp: np.ndarray  # int64 base-pair position
    a1: np.ndarray  # str
    a2: np.ndarray  # str

    def __len__(self) -> int:
        return len(self.snp)

    def take(self, index: np.ndarray) -> "VariantTable":
        return VariantTable(*(getattr(self, f)[index] for f in ("chrom", "snp", "cm", "bp", "a1", "a2")))

    def distance(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        """Base pairs between SNPs ``i[k]`` and ``j[k]``; NaN across chromosomes (pairs.tsv's DIST NA,
        --min-distance's rule)."""
        same = self.chrom[i] == self.chrom[j]
        return np.where(same, np.abs(self.bp[j].astype(np.float64) - self.bp[i].astype(np.float64)), np.nan)


@dataclass
class SampleTable:
    """One row per sample, as in a ``.fam``."""

    fid: np.ndarray
    iid: np.ndarray
    sex: np.ndarray  # int8: 1 male, 2 female, 0 unknown
    status: np.ndarray  # int8: 1 control, 2 case, 0 missing (already decoded from the raw column)
    # A quantitative phenotype (float64, NaN = missing) when PLINK would read the column as one;
    # then ``status`` is 1 where the trait has a value and 0 where it is missing.
    trait: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.iid)

    @property
    def is_quantitative(self) -> bool:
        return self.trait is not None

    def take(self, index: np.ndarray) -> "SampleTable":
        return SampleTable(self.fid[index], self.iid[index], self.sex[index], self.status[index],
                           None if self.trait is None else self.trait[index])


class GenotypeSource(Protocol):
    """What every reader returns: metadata now, genotypes streamed in SNP blocks."""

    path: str  # the file genotypes come from (for messages and run.json)
    variants: VariantTable
    samples: SampleTable

    def iter_blocks(self, sample_index: np.ndarray, block_snps: int) -> Iterator[tuple[int, np.ndarray]]:
        """Yield ``(first_snp, int8 array (snps, len(sample_index)))`` over all SNPs in order."""
        ...

    def input_files(self) -> list[str]:
        """Every file read, for checksums in run.json."""
        ...

    # Optional: ``iter_bed_rows(block_snps)`` yielding ``(first_snp, uint8 (snps, ceil(n/4)))`` raw
    # .bed rows of every sample; where present and no per-SNP QC flag needs decoded calls, the
    # loader encodes those bytes directly (gboost.readers.plink_bed.BedSource has it).


@dataclass
class QCReport:
    """What the loading step removed, in PLINK's terms; shown in the log, run.json and the GUI."""

    samples_in: int = 0
    samples_missing_pheno: int = 0
    samples_mind: int = 0
    samples_id_lists: int = 0  # removed by --keep / --remove / --keep-fam / --remove-fam
    snps_in: int = 0
    snps_chr_filter: int = 0  # --chr / --extract / --exclude
    snps_non_autosomal: int = 0
    snps_geno: int = 0
    snps_hwe: int = 0
    snps_maf: int = 0
    snps_monomorphic: int = 0
    messages: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        d = dict(self.__dict__)
        d["messages"] = list(self.messages)
        return d


def plink_snp_width(ids) -> int:
    """PLINK 1.9's SNP column width: start at 4; an ID longer than the width so far sets it to
    the ID's length + 2 (so IDs 'abcde', 'abcdef' give 7, not 8). Order matters: file order."""
    ids = np.ascontiguousarray(ids)
    if ids.dtype.kind == "U" and ids.size and int(ids.view(np.uint32).max()) < 128:
        # Only an ID longer than every earlier one can widen the column (the width is always at
        # least every earlier length), so the rule runs over the running-maximum records alone: a
        # Python loop over every ID was a visible part of a large study's command. ASCII: bytes = chars.
        n = np.char.str_len(ids)
        rec = np.flatnonzero(n > np.maximum.accumulate(np.concatenate([[-1], n[:-1]])))
        lengths = n[rec].tolist()
    else:
        lengths = [len(str(x).encode("utf-8")) for x in ids]  # PLINK counts bytes (strlen)
    w = 4
    for k in lengths:
        if k > w:
            w = k + 2
    return w


@dataclass
class QCOptions:
    """PLINK's QC flags, PLINK's meanings; ``None`` = filter off (PLINK 1.9's default)."""

    maf: float | None = None  # --maf: drop SNPs with minor allele frequency < maf
    geno: float | None = None  # --geno: drop SNPs with missing-call rate > geno
    mind: float | None = None  # --mind: drop samples with missing-call rate > mind
    hwe: float | None = None  # --hwe: drop SNPs with HWE exact-test p < hwe (controls)
    extract: str | None = None  # --extract FILE: keep only SNP IDs listed
    exclude: str | None = None  # --exclude FILE: drop SNP IDs listed
    chrom: list[str] | None = None  # --chr: keep only these chromosomes
    allow_extra_chr: bool = False  # --allow-extra-chr: accept chromosome names PLINK does not know (contigs)
    # Sample lists (gboost/readers/id_lists.py), applied before --mind in PLINK 1.9's order:
    # --keep-fam, --keep, --remove-fam, --remove.
    keep: str | None = None  # --keep FILE: only the samples listed (FID IID, or IID alone)
    remove: str | None = None  # --remove FILE: all but the samples listed
    keep_fam: str | None = None  # --keep-fam FILE: only the families listed (FID)
    remove_fam: str | None = None  # --remove-fam FILE: all but the families listed
    # --keep-allele-order: A1 stays the .bim's first allele (PLINK otherwise makes it the founders'
    # minor allele): the allele a QT scan counts, and the orientation of PLINK's doubles.
    keep_allele_order: bool = False

    def __post_init__(self):
        from gboost.pipeline.validate import check_setting, check_type

        for name in ("maf", "geno", "mind", "hwe"):
            check_setting("QCOptions", name, getattr(self, name))
        for name in ("extract", "exclude", "keep", "remove", "keep_fam", "remove_fam"):
            check_type("QCOptions", name, getattr(self, name), "path")
        check_type("QCOptions", "keep_allele_order", self.keep_allele_order, "bool", optional=False)
        if self.chrom is not None:
            # A string is a list of its characters to the filter: "22" kept chromosome 2.
            if not isinstance(self.chrom, (list, tuple)) or not all(isinstance(c, str) for c in self.chrom):
                raise TypeError(f"QCOptions: chrom must be a list of chromosome names (e.g. ['22'] or ['1', '2']) "
                                f"or None, got {type(self.chrom).__name__} {self.chrom!r}")
            self.chrom = chr_list(self.chrom, bool(self.allow_extra_chr))


def chr_list(items, allow_extra_chr: bool) -> list[str]:
    """A ``--chr`` list as plink1.9 reads it (checked on it): items separated by commas or
    whitespace (``--chr 2 3`` is ``--chr 2,3``; empty items skipped), each a chromosome code or a
    range ``A-B`` of codes (``chr`` prefix and case ignored; X, Y, XY, MT are 23-26), its end
    greater than its start. Ranges become the codes they take, names stay as given (load.py's
    ``plink_chrom_code`` reads them). A name PLINK does not know (``foo``, ``27``, ``001``) is
    refused ("Invalid --chr chromosome code") unless ``allow_extra_chr``, and a range may never
    hold one ("Chromosome ranges cannot include nonstandard names"). Raises ValueError."""
    from gboost.readers.plink_format import HUMAN_CHROMS, chrom_number

    def code(name: str):
        n = chrom_number(name)
        return n if n is not None and n <= HUMAN_CHROMS else None

    out: list[str] = []
    for part in " ".join(items).replace(",", " ").split():
        lo, sep, hi = part.partition("-")
        if sep and not (lo and hi):
            raise ValueError(f"--chr: invalid item {part!r} (PLINK 1.9: \"Invalid --chr parameter\"): a range needs "
                             "two chromosome codes, e.g. 1-4")
        if sep:
            a, b = code(lo), code(hi)
            for end, n in ((lo, a), (hi, b)):
                if n is None:
                    raise ValueError(f"--chr: bad range {part!r}: {end!r} is not a chromosome code (1-22, X, Y, XY, MT, "
                                     "with or without 'chr'); a range cannot include other names, as in PLINK 1.9")
            if b <= a:
                raise ValueError(f"--chr: bad range {part!r}: {hi!r} is not greater than {lo!r}")
            out.extend(str(c) for c in range(a, b + 1))
        elif code(part) is None and not allow_extra_chr:
            raise ValueError(f"--chr: invalid chromosome code {part!r} (PLINK 1.9 refuses it: \"Invalid --chr chromosome "
                             "code\"); codes are 1-22, X, Y, XY, MT (or 0), with or without 'chr'; a contig's name "
                             "needs --allow-extra-chr")
        else:
            out.append(part)
    return out


def founders_a1_major(f: np.ndarray) -> np.ndarray:
    """Per SNP: whether PLINK 1.9 swaps the .bim's alleles (A1 more frequent than A2 among the
    founders' called alleles, strictly; no calls count as 0.5, no swap), from the founders'
    genotype counts ``(snps, 3)`` of 0/1/2 copies of the file's A1. Diploid counting (the
    epistasis scans skip X and Y)."""
    f = np.asarray(f, dtype=np.int64)
    a1 = 2 * f[:, 2] + f[:, 1]
    total = 2 * f.sum(axis=1)
    return 2 * a1 > total


@dataclass
class Study:
    """A study ready to scan: kept SNPs and samples, encoded.

    Samples are stored in plane order (controls first, then cases, each in file order), so
    ``samples`` row i is bit i of the planes' sample axis (after the class padding).
    """

    variants: VariantTable
    samples: SampleTable
    layout: "ClassLayout"
    # (p, 3, W) uint64, CPU layout (gboost.data.encode). Complete, except for a study of
    # gboost.data.load.load_with_encoder, whose rows an encoder still writes: read them through its
    # gboost.data.planes.PlaneSource then (the study itself holds no thread).
    planes: np.ndarray
    counts: np.ndarray  # (p, 3, 2) int64: called genotypes per type and class (0 control, 1 case)
    qc: QCReport
    source_files: list[str] = field(default_factory=list)
    # Width PLINK gives SNP columns, from the IDs of the input file in file order (including SNPs
    # later removed by QC, excluding --extract/--exclude/--chr drops): see plink_snp_width.
    snp_col_width: int | None = None
    # Quantitative trait studies (docs/qt_epistasis.md): the trait per sample (plane order; every
    # sample is in the first class) and per SNP whether PLINK's A1 is the .bim's A2 (its dosage
    # counts the other allele: 2 - type).
    trait: np.ndarray | None = None
    a1_flip: np.ndarray | None = None
    # The founders' genotype counts (p, 3) by type where the founders are not the scanned samples
    # (made when first asked for): what PLINK's allele order comes from (plink_reversed); None where
    # they are, whose counts are ``counts`` summed over the classes.
    founder_counts: Callable[[], np.ndarray] | None = field(default=None, repr=False, compare=False)
    # Per SNP whether PLINK swaps the alleles (plink_reversed), once made or as a merge's parts carried it.
    reversed_alleles: np.ndarray | None = field(default=None, repr=False, compare=False)
    # A candidate-set scan's rectangle (gboost.data.candidates.Rectangle): the first rect.n_rows SNPs
    # are the rows, the rest the columns; None for the whole triangle.
    rect: object | None = field(default=None, repr=False, compare=False)

    @property
    def quantitative(self) -> bool:
        return self.trait is not None

    def plink_reversed(self) -> np.ndarray:
        """Per SNP whether PLINK 1.9 swaps the .bim's alleles (:func:`founders_a1_major` of the
        founders' counts, made on first use; a merge of parts takes what the parts carried). PLINK's
        orientation of a pair (gboost/stats/plink_order.py)."""
        if self.reversed_alleles is None:
            f = self.counts.sum(axis=2) if self.founder_counts is None else self.founder_counts()
            self.reversed_alleles = founders_a1_major(f)
        return self.reversed_alleles

    @property
    def snp_id_width(self) -> int:
        if self.snp_col_width is not None:
            return self.snp_col_width
        return plink_snp_width(self.variants.snp)

    @property
    def n_snps(self) -> int:
        return len(self.variants)

    @property
    def n_samples(self) -> int:
        return self.layout.n_ctrl + self.layout.n_case

    @cached_property
    def has_missing(self) -> np.ndarray:
        """Per SNP: True when any kept sample has a missing call. Cached: engines and tile
        planning ask for it often, and each sum is a pass over every SNP's counts (which never change)."""
        return self.counts.sum(axis=(1, 2)) < self.n_samples

    @property
    def missing_rate(self) -> float:
        total = self.n_snps * self.n_samples
        return 0.0 if total == 0 else 1.0 - float(self.counts.sum()) / total


from gboost.data.encode import ClassLayout  # noqa: E402  (placed last: encode has no deps on study)


def study_from_genotypes(geno: np.ndarray, is_case: np.ndarray, variants: VariantTable | None = None,
                         samples: SampleTable | None = None) -> Study:
    """Build a :class:`Study` from an in-memory genotype matrix ``(p, n)`` (0/1/2, -1 missing).

    No QC is applied: for tests, simulations and Python users who filtered already.
    """
    from gboost.data.encode import encode_block, plane_counts, sample_order

    geno = np.asarray(geno, dtype=np.int8)
    is_case = np.asarray(is_case, dtype=bool)
    p, n = geno.shape
    if variants is None:
        variants = VariantTable(np.full(p, "1", dtype=object), np.array([f"snp{k + 1}" for k in range(p)], dtype=object),
                                np.zeros(p), np.arange(1, p + 1, dtype=np.int64),
                                np.full(p, "A", dtype=object), np.full(p, "B", dtype=object))
    if samples is None:
        ids = np.array([f"s{k + 1}" for k in range(n)], dtype=object)
        samples = SampleTable(ids, ids.copy(), np.zeros(n, np.int8), np.where(is_case, 2, 1).astype(np.int8))
    order = sample_order(is_case)
    g, c = geno[:, order], is_case[order]
    layout, planes = ClassLayout.from_status(c), encode_block(g, c)
    return Study(variants, samples.take(order), layout, planes, plane_counts(planes, layout),
                 QCReport(samples_in=n, snps_in=p))
