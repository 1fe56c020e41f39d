"""BGEN files (v1.2 and v1.3, e.g. from imputation; v1.1 is refused: cbgen cannot decode it) with an Oxford .sample, read through cbgen (optional).

What is read (docs/FORMATS.md has the user's view), as ``plink2 --bgen FILE MODE --sample FILE
--hard-call-threshold T --make-bed`` does:

* variants: chromosome (numeric codes without leading zeros), position, the rsID field as the
  variant ID (plink2's choice), the two alleles; cM 0. A variant with more than two alleles is
  refused. Which allele is counted (A1, PLINK 2's ALT) follows plink2's REF/ALT modes:
  ``ref-first`` counts the second allele; ``ref-last`` and ``ref-unknown`` (gboost's default:
  plink2 makes users choose) count the first, which is what ``plink2 --export bgen-1.2``
  writes as ALT.
* hard calls, PLINK 2's ``--hard-call-threshold`` meaning: the counted allele's dosage x (0..2;
  a haploid call's probability doubled, phased haplotypes summed) in plink2's fixed point
  (1/16384, T rounded down to it) is called round(x) when |x - round(x)| <= T (default 0.1),
  otherwise missing; a
  sample flagged missing is missing.
* samples: the .sample file's ID_1/ID_2 as FID/IID (or, without --sample, the BGEN's own IDs
  split as for a VCF, gboost.readers.sample_ids); its ``sex`` column (type D) when present; its
  first binary (type B: 0 control, 1 case) column as the phenotype unless ``--pheno`` is given.
  Every sample's phenotype is kept, as PLINK 2 does (the log says so). Every sample a founder.

The file's structure (header, sample IDs, each variant's identifying data and the size of its
genotype block) is walked here, so a truncated or damaged file gives one line (cbgen's C library
crashes the process on a truncated one); cbgen decodes the probabilities of each genotype block.
"""
from __future__ import annotations

import os

import numpy as np

from gboost.errors import InputError
from gboost.readers.optional import require
from gboost.readers.pheno import apply_pheno, check_regular_file, read_text
from gboost.readers.sample_ids import IdMode, split_ids
from gboost.readers.streamed import StreamedSource, c_stderr_captured, canonical_chrom, library_words
from gboost.readers.vcf import NO_SEX_NOTE
from gboost.runtime.numba_cache import cached_njit
from gboost.data.study import SampleTable, VariantTable

REF_MODES = ("ref-first", "ref-last", "ref-unknown")
DOSAGE_MID = 16384  # plink2's fixed point: one allele copy


class BgenSource(StreamedSource):
    """A BGEN file; probabilities decoded by cbgen per variant, hard-called in SNP blocks."""

    offsets: np.ndarray = np.zeros(0, dtype=np.int64)
    count_second: bool = False  # ref-first: the second allele is ALT (counted)
    hard_call_threshold: float = 0.1

    def blocks(self, block_snps: int):
        cbgen = require("cbgen", self.path)
        p, n = len(self.variants), len(self.samples)
        with _bgen_file(cbgen, self.path) as bgen:
            for start in range(0, p, block_snps):
                stop = min(start + block_snps, p)
                out = np.empty((stop - start, n), dtype=np.int8)
                words: list[str] = []
                with c_stderr_captured(words):  # once a block: a capture costs a temporary file
                    for k in range(start, stop):
                        try:
                            g = bgen.read_genotype(int(self.offsets[k]))
                        except RuntimeError as exc:
                            message = library_words(words, str(exc))
                            raise InputError(self.path, f"variant {self.variants.snp[k]}: cannot read its genotype "
                                                        f"probabilities: {message}") from None
                        out[k - start] = hard_calls(g.probability, g.ploidy, g.missing, g.phased, self.count_second,
                                                    self.hard_call_threshold, self.path, self.variants.snp[k])
                yield start, out


def hard_calls(prob: np.ndarray, ploidy: np.ndarray, missing: np.ndarray, phased: bool, count_second: bool,
               threshold: float, path: str = "", snp: str = "") -> np.ndarray:
    """int8 counted-allele hard calls, -1 missing, from one biallelic variant's probabilities.

    ``prob`` is cbgen's ``(samples, combinations)``: unphased diploid P(AA), P(AB), P(BB); haploid
    P(A), P(B); phased P(hap1 = A), P(hap1 = B), P(hap2 = A), P(hap2 = B) (A the first allele).
    """
    if ploidy.size and int(ploidy.max()) > 2:
        raise InputError(path, f"variant {snp}: ploidy {int(ploidy.max())}; gboost reads haploid and diploid calls")
    # plink2's threshold in its fixed point, rounded down (plink2 calls 1.8 missing at 0.2: 3276.8 ->
    # 3276; checked against plink2 --hard-call-threshold 0.2 in tests/parity/test_formats.py)
    limit = int(threshold * DOSAGE_MID * (1 + 2.0**-44))
    out = np.empty(len(ploidy), dtype=np.int8)
    _hard_calls(np.ascontiguousarray(prob, dtype=np.float64), ploidy, missing, bool(phased), bool(count_second),
                DOSAGE_MID // 2 - limit, out)
    return out


@cached_njit()
def _hard_calls(prob, ploidy, missing, phased, count_second, min_halfdist, out):
    """One pass over the samples (NumPy's dozen array passes took several times longer;
    bench/bench_load.py --formats)."""
    for i in range(prob.shape[0]):
        if missing[i] or ploidy[i] == 0:
            out[i] = -1
            continue
        p0 = prob[i, 0] if prob[i, 0] == prob[i, 0] else 0.0  # NaN (absent) -> 0
        if ploidy[i] == 1:
            first = 2.0 * p0
        elif phased:
            p2 = prob[i, 2] if prob[i, 2] == prob[i, 2] else 0.0
            first = p0 + p2
        else:
            p1 = prob[i, 1] if prob[i, 1] == prob[i, 1] else 0.0
            first = 2.0 * p0 + p1
        dosage = 2.0 - first if count_second else first
        # plink2's fixed point: 1/16384 of an allele; halfdist = distance from the half-way point
        d = np.int64(np.rint(dosage * DOSAGE_MID))
        halfdist = abs(d % DOSAGE_MID - DOSAGE_MID // 2)
        out[i] = (d + DOSAGE_MID // 2) // DOSAGE_MID if halfdist >= min_halfdist else -1


class _bgen_file:
    """cbgen's file handle with its C library's messages caught (one line for a bad file)."""

    def __init__(self, cbgen, path: str):
        words: list[str] = []
        with c_stderr_captured(words):
            try:
                self.handle = cbgen.bgen_file(path)
            except RuntimeError as exc:
                message = library_words(words, str(exc))
                raise InputError(path, f"cannot read as BGEN: {message}") from None

    def __enter__(self):
        return self.handle

    def __exit__(self, *exc):
        self.handle.close()


def open_bgen(path: str | os.PathLike, sample: str | None = None, pheno: str | None = None, *,
              ids: IdMode | None = None, hard_call_threshold: float = 0.1, ref_mode: str = "ref-unknown",
              pheno_column: str | int | None = None) -> BgenSource:
    """Index a BGEN file and read its variants and samples; genotypes stream later.

    Parameters
    ----------
    path
        The .bgen.
    sample
        Its Oxford .sample file (needed unless the BGEN stores sample IDs).
    pheno
        ``--pheno`` file overriding the .sample's phenotype.
    ids
        How the BGEN's own sample IDs become FID/IID when no .sample is given.
    hard_call_threshold
        PLINK 2's ``--hard-call-threshold``, in [0, 0.5).
    ref_mode
        plink2's ``ref-first``, ``ref-last`` or ``ref-unknown`` (see the module notes).

    Raises
    ------
    InputError
        cbgen missing, an unreadable or malformed file, a variant with other than 2 alleles,
        a .sample that does not fit, or no phenotype at all.
    """
    path = os.fspath(path)
    cbgen = require("cbgen", path)
    if ref_mode not in REF_MODES:
        raise InputError(None, f"--bgen mode {ref_mode!r}: expected one of {', '.join(REF_MODES)}")
    if not 0 <= hard_call_threshold < 0.5:  # plink2 refuses 0.5 too
        raise InputError(None, f"--hard-call-threshold {hard_call_threshold:g}: must be in [0, 0.5)")
    variants, offsets, n_file, embedded = _index(path)
    if ref_mode == "ref-first":  # the second allele is ALT: it is A1, counted
        variants.a1, variants.a2 = variants.a2, variants.a1
    with _bgen_file(cbgen, path):  # cbgen reads the header too: refuse here what it refuses
        pass
    if sample is not None:
        fid, iid, sex, status = read_sample_file(sample, n_file)
    elif embedded is not None:
        fid, iid = split_ids(embedded, ids or IdMode(), path)
        sex, status = np.zeros(n_file, dtype=np.int8), None
    else:
        raise InputError(path, "the BGEN stores no sample IDs: give its .sample file with --sample FILE")
    samples = SampleTable(fid, iid, sex, np.zeros(n_file, dtype=np.int8) if status is None else status)
    files = [path] + ([os.fspath(sample)] if sample is not None else [])
    source = BgenSource(path, variants, samples, np.ones(n_file, dtype=bool), files, sex_rule=False)
    source.offsets, source.count_second, source.hard_call_threshold = offsets, ref_mode == "ref-first", hard_call_threshold
    if pheno is not None:
        apply_pheno(source, pheno, pheno_column)
    elif status is None:
        where = "its .sample has no binary (type B) column" if sample is not None else "no .sample was given"
        raise InputError(sample or path, f"no phenotype: {where}; give one with --pheno FILE (FID IID value, "
                                         "1 control, 2 case)")
    if sex.any():
        source.notes.append("sexes from the .sample; every sample's phenotype is kept, as PLINK 2 does (PLINK 1.9 ignores "
                            "phenotypes of samples of unknown sex unless --allow-no-sex)")
    else:
        source.notes.append(NO_SEX_NOTE.format(what="The BGEN"))
    source.notes.append(f"BGEN hard calls: --hard-call-threshold {hard_call_threshold:g} (PLINK 2's meaning), {ref_mode}: "
                        f"the {'second' if ref_mode == 'ref-first' else 'first'} allele is counted (A1)")
    return source


def _index(path: str) -> tuple[VariantTable, np.ndarray, int, list[str] | None]:
    """Walk the BGEN's blocks (its spec, layouts 1 and 2; layout 1 is refused before any variant):
    every variant's metadata and the offset of its
    genotype block; also the sample count and the stored sample IDs.

    We read the structure ourselves rather than through cbgen's index: cbgen (its C library)
    crashes the process on a truncated file, and a bad file must give one line instead. Only
    files that pass this walk reach cbgen.
    """
    import mmap

    check_regular_file(path, "BGEN")
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size < 24:
                raise InputError(path, f"not a BGEN file: {size} bytes, shorter than a BGEN header")
            data = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    except OSError as exc:
        raise InputError(path, f"cannot read the BGEN file: {exc.strerror or exc}") from None
    try:
        return _walk(data, size, path)
    finally:
        data.close()


def _walk(data, size: int, path: str):
    import struct

    def u32(at: int) -> int:
        if at + 4 > size:
            raise InputError(path, f"the BGEN is truncated (it ends at byte {size}, inside a block that needs byte "
                                   f"{at + 4}; an interrupted copy or write?)")
        return struct.unpack_from("<I", data, at)[0]

    def u16(at: int) -> int:
        if at + 2 > size:
            raise InputError(path, f"the BGEN is truncated (it ends at byte {size}; an interrupted copy or write?)")
        return struct.unpack_from("<H", data, at)[0]

    def text(at: int, length: int) -> str:
        if at + length > size:
            raise InputError(path, f"the BGEN is truncated (it ends at byte {size}; an interrupted copy or write?)")
        return bytes(data[at:at + length]).decode("utf-8", "replace")

    first, header_len, m, n = u32(0), u32(4), u32(8), u32(12)
    magic = bytes(data[16:20])
    if magic not in (b"bgen", b"\0\0\0\0") or header_len < 20 or header_len > first:
        raise InputError(path, f"not a BGEN file: bytes 16-19 are {magic!r}, expected b'bgen'")
    flags = u32(4 + header_len - 4)
    compression, layout = flags & 3, (flags >> 2) & 15
    if layout == 1:  # cbgen's C library knows layout 2 only (it crashed the process on a v1.1 file)
        raise InputError(path, "a BGEN v1.1 file (layout 1), which the BGEN reader (cbgen) cannot decode; rewrite it "
                               "as v1.2 with `plink2 --bgen FILE ref-unknown --sample FILE --export bgen-1.2 --out NEW`")
    if compression > 2 or layout != 2:
        raise InputError(path, f"unknown BGEN flags {flags:#x} (compression {compression}, layout {layout}); gboost "
                               "reads BGEN v1.2 and v1.3")
    ids = None
    if flags >> 31:  # sample identifier block
        at = 4 + header_len
        if u32(at + 4) != n:
            raise InputError(path, f"the BGEN's sample block lists {u32(at + 4)} samples, its header {n}")
        at += 8
        ids = []
        for _ in range(n):
            length = u16(at)
            ids.append(text(at + 2, length))
            at += 2 + length
    at = first + 4
    chrom, rsid, pos, a1, a2, offsets = [], [], [], [], [], np.empty(m, dtype=np.int64)
    for k in range(m):
        if layout == 1:
            if u32(at) != n:
                raise InputError(path, f"variant {k + 1}: the block says {u32(at)} samples, the header {n}; the file is "
                                       "corrupted")
            at += 4
        fields = []
        for _ in range(3):  # variant ID, rsID, chromosome
            length = u16(at)
            fields.append(text(at + 2, length))
            at += 2 + length
        position = u32(at)
        at += 4
        n_alleles = 2 if layout == 1 else u16(at)
        at += 0 if layout == 1 else 2
        alleles = []
        for _ in range(n_alleles):
            length = u32(at)
            alleles.append(text(at + 4, length))
            at += 4 + length
        if n_alleles != 2:
            raise InputError(path, f"variant {fields[1] or fields[0]} has {n_alleles} alleles; gboost scans biallelic "
                                   "variants: drop the others with `plink2 --bgen FILE ref-unknown --sample FILE "
                                   "--max-alleles 2 --make-pgen --out NEW`")
        offsets[k] = at
        block = 6 * n if (layout == 1 and compression == 0) else 4 + u32(at)
        if at + block > size:
            raise InputError(path, f"the BGEN is truncated: variant {k + 1} of {m} ({fields[1]}) needs bytes up to "
                                   f"{at + block}, the file has {size} (an interrupted copy or write?)")
        at += block
        chrom.append(fields[2])
        rsid.append(fields[1])
        pos.append(position)
        a1.append(alleles[0])
        a2.append(alleles[1])
    if m == 0:
        raise InputError(path, "the BGEN holds no variants")
    variants = VariantTable(canonical_chrom(chrom), np.array(rsid, dtype=str), np.zeros(m), np.array(pos, dtype=np.int64),
                            np.array(a1, dtype=str), np.array(a2, dtype=str))
    return variants, offsets, n, ids


def read_sample_file(path: str, n_expected: int):
    """An Oxford .sample: ``(fid, iid, sex, status or None)``.

    Line 1 names the columns (ID_1 ID_2 missing ...), line 2 gives their types (0 0 0 then D, C,
    P or B); then one line per sample, in the BGEN's order.
    """
    rows = [line.split() for line in read_text(path, ".sample").splitlines() if line.strip()]
    if len(rows) < 2 or rows[0][:2] != ["ID_1", "ID_2"]:
        raise InputError(path, "not an Oxford .sample file: line 1 must start with ID_1 ID_2 and line 2 give the column "
                               "types")
    names, types, body = rows[0], rows[1], rows[2:]
    if len(types) != len(names):
        raise InputError(path, f"line 2: {len(types)} column types for {len(names)} columns")
    for k, r in enumerate(body):
        if len(r) != len(names):
            raise InputError(path, f"sample line {k + 3}: expected {len(names)} columns ({' '.join(names)}), found {len(r)}")
    if len(body) != n_expected:
        raise InputError(path, f"lists {len(body)} samples but the BGEN holds {n_expected}; the files do not belong "
                               "together")
    fid, iid = np.array([r[0] for r in body], dtype=str), np.array([r[1] for r in body], dtype=str)
    from gboost.readers.plink_bed import _check_unique

    _check_unique(np.char.add(np.char.add(fid, "\t"), iid), np.arange(3, len(body) + 3), path, "sample ID_1+ID_2")
    lower = [c.lower() for c in names]
    sex = np.zeros(len(body), dtype=np.int8)
    if "sex" in lower:
        k = lower.index("sex")
        sex = np.array([{"1": 1, "m": 1, "male": 1, "2": 2, "f": 2, "female": 2}.get(r[k].lower(), 0) for r in body],
                       dtype=np.int8)
    status = None
    binary = [k for k, t in enumerate(types) if t == "B"]
    if binary:
        k = binary[0]
        status = np.array([{"0": 1, "1": 2}.get(r[k], 0) for r in body], dtype=np.int8)
    return fid, iid, sex, status
