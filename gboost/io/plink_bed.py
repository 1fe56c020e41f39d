"""PLINK 1 binary filesets (.bed/.bim/.fam), read lazily: metadata now, genotypes in SNP blocks.

We parse .bim and .fam ourselves (so every problem names its file and line) and check the .bed's
header and size before streaming genotypes. The loader reads the .bed's own rows (``iter_bed_rows``,
memory-mapped) and encodes their 2-bit codes straight into bit planes (gboost.encode); decoded int8
A1 counts (``iter_blocks``, through bed-reader) serve the GenotypeSource interface and the tests
that check the direct path against them. Only one block of SNPs is in hand at a time, so a study
larger than RAM streams.

.bed layout (SNP-major): 3 magic bytes ``6c 1b 01``, then per SNP ``ceil(n/4)`` bytes, four
samples per byte starting at the low bits; ``00`` = A1/A1, ``01`` = missing, ``10`` = het,
``11`` = A2/A2.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Iterator

import numpy as np

from gboost.errors import InputError
from gboost.io.pheno import as_text, decode_phenotype, drop_phenotypes_without_sex, read_pheno_values, read_table
from gboost.study import SampleTable, VariantTable

BED_MAGIC = b"\x6c\x1b"
SNP_MAJOR = 0x01
BED_HEADER_LEN = 3
BED_READER_MISSING = -127  # what bed-reader returns for a missing call with dtype int8
# Largest block of .bed rows read at once (two are in memory: the one in use and the next).
READ_BLOCK_BYTES = 32 << 20


@dataclass
class BedSource:
    """A PLINK binary fileset; implements :class:`gboost.study.GenotypeSource`.

    ``founder`` (True where both parent IDs in the .fam are ``0``) is extra: PLINK 1.9 takes
    allele frequencies (``--maf``) and HWE counts from founders only.
    """

    path: str
    variants: VariantTable
    samples: SampleTable
    founder: np.ndarray
    bim_path: str
    fam_path: str
    pheno_path: str | None = None
    num_threads: int | None = None
    _files: list[str] = field(default_factory=list, repr=False)
    pheno_without_sex: int = 0  # phenotypes ignored because the sex is unknown (PLINK's rule)

    def iter_blocks(self, sample_index: np.ndarray, block_snps: int) -> Iterator[tuple[int, np.ndarray]]:
        """Yield ``(first_snp, int8 (snps, len(sample_index)))``: A1 counts, -1 missing."""
        from bed_reader import open_bed  # imported here: only genotype streaming needs it

        sample_index = np.asarray(sample_index, dtype=np.intp)
        p = len(self.variants)
        with open_bed(
            self.path,
            iid_count=len(self.samples),
            sid_count=p,
            count_A1=True,
            num_threads=self.num_threads,
        ) as bed:
            for start in range(0, p, block_snps):
                stop = min(start + block_snps, p)
                # Fortran order (samples fastest) so the transpose is C-contiguous (snps, samples).
                geno = bed.read(index=np.s_[sample_index, start:stop], dtype="int8", order="F").T
                # BED_READER_MISSING (-127) -> -1, 0/1/2 unchanged: one SIMD pass, no mask (at 25 %
                # missing calls a masked assignment took 6x longer).
                np.maximum(geno, -1, out=geno)
                yield start, geno

    def iter_bed_rows(self, block_snps: int | None, keep: np.ndarray | None = None) -> Iterator[tuple[int, np.ndarray]]:
        """Yield ``(first_snp, uint8 (snps, ceil(n/4)))``: the .bed's own bytes, 2-bit codes of
        every sample (gboost.encode.encode_bed_bytes turns them into planes in one pass; check_bed
        has validated the header and the size).

        The rows are read (``readinto``, page-cache speed) into two reused buffers, the next block
        on a thread while the caller works on this one: a block is valid until the next is asked
        for. Reading into buffers rather than mapping the file keeps the .bed out of the process's
        resident set (a map's touched pages stay in it: +1 x the .bed, issue 21) and bounds memory
        by two blocks of at most ``READ_BLOCK_BYTES``. With ``keep`` (bool per SNP) only kept rows
        are read (the others hold garbage) and blocks without one are skipped. ``block_snps``: at
        most that many rows a block (None: as many as fit in ``READ_BLOCK_BYTES``).
        """
        p, n = len(self.variants), len(self.samples)
        row = (n + 3) // 4
        step = max(1, READ_BLOCK_BYTES // max(1, row))
        step = step if block_snps is None else max(1, min(block_snps, step))
        starts = [a for a in range(0, p, step) if keep is None or keep[a:a + step].any()]
        if not starts:
            return
        bufs = [np.empty((min(step, p), row), dtype=np.uint8) for _ in range(min(2, len(starts)))]
        from concurrent.futures import ThreadPoolExecutor

        with open(self.path, "rb", buffering=0) as fh, ThreadPoolExecutor(1, thread_name_prefix="gboost-bed") as pool:
            def read(k: int) -> np.ndarray:
                a = starts[k]
                b = min(p, a + step)
                buf = bufs[k % 2][: b - a]
                runs = [(a, b)] if keep is None else _runs(keep[a:b], a)
                for r0, r1 in runs:
                    _read_full(fh, buf[r0 - a : r1 - a], BED_HEADER_LEN + r0 * row, self.path)
                return buf

            nxt = pool.submit(read, 0)
            for k in range(len(starts)):
                data = nxt.result()
                if k + 1 < len(starts):
                    nxt = pool.submit(read, k + 1)  # the other buffer: the one yielded before this
                yield starts[k], data

    def input_files(self) -> list[str]:
        """The .bed, .bim, .fam (and --pheno file) read."""
        return list(self._files)


def open_bfile(
    prefix: str | os.PathLike,
    pheno: str | None = None,
    *,
    num_threads: int | None = None,
    allow_no_sex: bool = False,
) -> BedSource:
    """Open a PLINK 1 binary fileset ``prefix.bed/.bim/.fam``.

    Parameters
    ----------
    prefix
        Path without extension (as PLINK's ``--bfile``); a trailing ``.bed``, ``.bim`` or ``.fam``
        is tolerated.
    pheno
        Optional ``--pheno`` file (``FID IID value``) overriding the .fam's phenotype column.
    num_threads
        Threads bed-reader may use to decode genotypes (``None``: all cores).
    allow_no_sex
        PLINK's ``--allow-no-sex``: keep the phenotype of samples whose sex (.fam column 5) is not
        1 or 2. By default it is set missing, as PLINK 1.9 does.

    Returns
    -------
    BedSource
        Metadata parsed and checked; genotypes streamed on demand by ``iter_blocks``.

    Raises
    ------
    InputError
        For any problem with the files: missing, not UTF-8, wrong column counts, non-numeric
        positions, duplicate SNP or sample IDs, a bad .bed header, or a .bed whose size does not
        match the .bim and .fam.
    """
    prefix = _strip_extension(os.fspath(prefix))
    bed, bim, fam = (prefix + ext for ext in (".bed", ".bim", ".fam"))
    variants = read_bim(bim)
    fid, iid, founder, sex, raw_pheno, pheno_lines = _read_fam_columns(fam)
    samples = SampleTable(fid, iid, sex, np.zeros(len(iid), dtype=np.int8))
    check_bed(bed, n_snps=len(variants), n_samples=len(samples), bim=bim, fam=fam)
    if pheno is None:
        samples.status, samples.trait = decode_phenotype(raw_pheno, pheno_lines, fam)
    else:
        samples.status, samples.trait = read_pheno_values(pheno, fid, iid)
    files = [bed, bim, fam] + ([os.fspath(pheno)] if pheno is not None else [])
    dropped = 0 if allow_no_sex else drop_phenotypes_without_sex(samples)
    return BedSource(bed, variants, samples, founder, bim, fam, pheno, num_threads, files, dropped)


def _runs(mask: np.ndarray, offset: int) -> list[tuple[int, int]]:
    """[start, stop) runs of True in ``mask``, shifted by ``offset``."""
    edges = np.flatnonzero(np.diff(np.r_[0, mask.astype(np.int8), 0]))
    return [(offset + int(a), offset + int(b)) for a, b in zip(edges[::2], edges[1::2])]


def _read_full(fh, buf: np.ndarray, offset: int, path: str) -> None:
    """Fill ``buf`` from byte ``offset`` of the unbuffered file ``fh`` (a read may return less than
    asked)."""
    view = memoryview(buf).cast("B")
    fh.seek(offset)
    done = 0
    while done < len(view):
        got = fh.readinto(view[done:])
        if not got:  # check_bed saw the full size: the file shrank under us
            raise InputError(path, f"the .bed ended at byte {offset + done} while reading it (truncated meanwhile?)")
        done += got


def _strip_extension(prefix: str) -> str:
    root, ext = os.path.splitext(prefix)
    if ext in (".bed", ".bim", ".fam") and not os.path.exists(prefix + ".bed"):
        return root
    return prefix


def read_bim(path: str | os.PathLike) -> VariantTable:
    """Parse a .bim file: ``chrom snp cm bp a1 a2``, whitespace-separated.

    Raises
    ------
    InputError
        Empty file, a line without exactly 6 columns, a non-numeric cM or bp, or a duplicate SNP ID
        (naming both lines).
    """
    (chrom, snp, cm, bp, a1, a2), lines = read_table(path, 6, ".bim", "chrom, SNP ID, cM, bp, A1, A2")
    if len(lines) == 0:
        raise InputError(path, "the .bim file is empty: expected one line per SNP (chrom, ID, cM, bp, A1, A2)")
    variants = VariantTable(
        as_text(chrom),
        as_text(snp),
        _parse_numbers(cm, lines, path, "cM position", np.float64),
        _parse_numbers(bp, lines, path, "base-pair position", np.int64),
        as_text(a1),
        as_text(a2),
    )
    _check_unique(variants.snp, lines, path, "SNP ID")
    return variants


def _parse_numbers(values: np.ndarray, lines: np.ndarray, path, what: str, dtype) -> np.ndarray:
    try:
        return values.astype(dtype)
    except (ValueError, OverflowError):
        pass
    convert = int if dtype is np.int64 else float
    for value, line in zip(values.tolist(), lines.tolist()):  # find the culprit for the message
        try:
            convert(value)
        except (ValueError, OverflowError):
            kind = "an integer" if convert is int else "a number"
            raise InputError(path, f"line {line}: {what} {value.decode(errors='replace')!r} is not {kind}") from None
    raise InputError(path, f"a {what} is out of range")


def _check_unique(keys: np.ndarray, lines: np.ndarray, path, what: str) -> None:
    """Raise naming the first repeated key (and its first line); sorting keeps this O(n log n)."""
    order = np.argsort(keys, kind="stable")
    repeated = np.flatnonzero(keys[order][1:] == keys[order][:-1])
    if len(repeated) == 0:
        return
    second = order[repeated + 1]
    k = int(second[np.argmin(lines[second])])
    first = int(lines[order[np.searchsorted(keys[order], keys[k])]])
    shown = str(keys[k]).replace("\t", " ")
    raise InputError(path, f"line {lines[k]}: duplicate {what} {shown!r} (first on line {first}); IDs must be unique")


def _read_fam_columns(path):
    columns, lines = read_table(path, 6, ".fam", "FID, IID, father, mother, sex, phenotype")
    if len(lines) == 0:
        raise InputError(
            path, "the .fam file is empty: expected one line per sample (FID, IID, father, mother, sex, phenotype)"
        )
    fid, iid, pat, mat, sex, pheno = (as_text(c) for c in columns)
    _check_unique(np.char.add(np.char.add(fid, "\t"), iid), lines, path, "sample FID+IID")
    # PLINK 1.9 calls a sample a founder when both parent IDs are "0", whether or not the parents
    # are in the file (checked with plink1.9).
    founder = (pat == "0") & (mat == "0")
    sex_code = np.where(sex == "1", 1, np.where(sex == "2", 2, 0)).astype(np.int8)
    return fid, iid, founder, sex_code, pheno.tolist(), lines.tolist()


def check_bed(path: str | os.PathLike, *, n_snps: int, n_samples: int, bim: str, fam: str) -> None:
    """Check the .bed's magic bytes, SNP-major mode and exact size.

    Raises
    ------
    InputError
        Not a PLINK 1 .bed, an individual-major .bed, or a size other than
        ``3 + n_snps * ceil(n_samples / 4)`` bytes.
    """
    from gboost.io.pheno import check_regular_file

    check_regular_file(path, ".bed")
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as fh:
            head = fh.read(BED_HEADER_LEN)
    except OSError as exc:
        raise InputError(path, f"cannot read the .bed file: {exc.strerror or exc}") from None
    if len(head) < BED_HEADER_LEN or head[:2] != BED_MAGIC:
        raise InputError(
            path,
            f"not a PLINK 1 .bed file: it starts with bytes {head.hex(' ') or '(none)'}, expected 6c 1b 01",
        )
    if head[2] == 0x00:
        raise InputError(
            path,
            "this .bed is individual-major (mode byte 00, PLINK 0.99 era); re-make it SNP-major with "
            "`plink --bfile PREFIX --make-bed --out NEWPREFIX`",
        )
    if head[2] != SNP_MAJOR:
        raise InputError(path, f"unknown .bed mode byte {head[2]:02x}, expected 01 (SNP-major)")
    expected = BED_HEADER_LEN + n_snps * ((n_samples + 3) // 4)
    if size != expected:
        raise InputError(path, _size_message(size, expected, n_snps, n_samples, bim, fam))


def _size_message(size: int, expected: int, n_snps: int, n_samples: int, bim: str, fam: str) -> str:
    bytes_per_snp = (n_samples + 3) // 4
    snps_in_file = (size - BED_HEADER_LEN) / bytes_per_snp if bytes_per_snp else float("nan")
    hint = "truncated (an interrupted copy or write?)" if size < expected else "larger than expected"
    return (
        f"the .bed is {size} bytes but {n_snps} SNPs ({os.path.basename(bim)}) x {n_samples} samples "
        f"({os.path.basename(fam)}) need 3 + {n_snps} x {bytes_per_snp} = {expected} bytes; it is {hint}, "
        f"or the .bim/.fam do not belong to it (its size fits {snps_in_file:g} SNPs of {n_samples} samples)"
    )
