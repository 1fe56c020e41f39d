"""BGEN files (v1.1-1.3, e.g. from imputation) with an Oxford .sample, read through cbgen (optional).

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
  (1/16384) is called round(x) when |x - round(x)| <= T (default 0.1), otherwise missing; a
  sample flagged missing is missing.
* samples: the .sample file's ID_1/ID_2 as FID/IID (or, without --sample, the BGEN's own IDs
  split as for a VCF, gboost.io.sample_ids); its ``sex`` column (type D) when present; its
  first binary (type B: 0 control, 1 case) column as the phenotype unless ``--pheno`` is given.
  Every sample's phenotype is kept, as PLINK 2 does (the log says so). Every sample a founder.

cbgen indexes a BGEN in a "metafile"; we build it in a temporary folder and remove it, so
nothing is written beside the user's data.
"""
from __future__ import annotations

import os
import shutil
import tempfile

import numpy as np

from gboost.errors import InputError
from gboost.io.optional import require
from gboost.io.pheno import apply_pheno, check_regular_file, read_text
from gboost.io.sample_ids import IdMode, split_ids
from gboost.io.streamed import StreamedSource, c_stderr_captured, canonical_chrom, library_words
from gboost.io.vcf import NO_SEX_NOTE
from gboost.study import SampleTable, VariantTable

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
                for k in range(start, stop):
                    words: list[str] = []
                    with c_stderr_captured(words):
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
    prob = np.nan_to_num(prob, nan=0.0)
    if phased:
        first = prob[:, 0] + (prob[:, 2] if prob.shape[1] > 2 else 0.0)
        first = np.where(ploidy == 1, 2 * prob[:, 0], first)
    else:
        first = np.where(ploidy == 1, 2 * prob[:, 0], 2 * prob[:, 0] + prob[:, 1])
    dosage = 2.0 - first if count_second else first
    # plink2's fixed point and its distance test: halfdist = |(d mod 1) - 1/2| in 1/16384 units
    d = np.rint(dosage * DOSAGE_MID).astype(np.int64)
    halfdist = np.abs(d % DOSAGE_MID - DOSAGE_MID // 2)
    called = (halfdist >= DOSAGE_MID // 2 - int(round(threshold * DOSAGE_MID))) & ~missing & (ploidy > 0)
    return np.where(called, (d + DOSAGE_MID // 2) // DOSAGE_MID, -1).astype(np.int8)


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
              ids: IdMode | None = None, hard_call_threshold: float = 0.1, ref_mode: str = "ref-unknown") -> BgenSource:
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
        PLINK 2's ``--hard-call-threshold`` (0 to 0.5).
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
    if not 0 <= hard_call_threshold <= 0.5:
        raise InputError(None, f"--hard-call-threshold {hard_call_threshold:g}: must be in [0, 0.5]")
    check_regular_file(path, "BGEN")
    with _bgen_file(cbgen, path) as bgen:
        n_file = bgen.nsamples
        embedded = [s.decode("utf-8", "replace") for s in bgen.read_samples()] if bgen.contain_samples else None
        variants, offsets = _index(cbgen, bgen, path)
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
        apply_pheno(source, pheno)
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


def _index(cbgen, bgen, path: str) -> tuple[VariantTable, np.ndarray]:
    """Every variant's metadata and file offset, from a metafile built in a temporary folder."""
    folder = tempfile.mkdtemp(prefix="gboost-bgen-")
    try:
        meta = os.path.join(folder, "index.metafile")
        words: list[str] = []
        with c_stderr_captured(words):
            try:
                bgen.create_metafile(meta)
                mf = cbgen.bgen_metafile(meta)
            except RuntimeError as exc:
                raise InputError(path, f"cannot index the BGEN: {library_words(words, str(exc))}") from None
        parts = []
        try:
            with c_stderr_captured(words):
                for k in range(mf.npartitions):
                    parts.append(mf.read_partition(k).variants)
        except RuntimeError as exc:
            raise InputError(path, f"cannot index the BGEN: {library_words(words, str(exc))}") from None
        finally:
            mf.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if not parts or sum(len(v.offset) for v in parts) == 0:
        raise InputError(path, "the BGEN holds no variants")
    cat = {f: np.concatenate([getattr(v, f) for v in parts]) for f in
           ("rsid", "chromosome", "position", "nalleles", "allele_ids", "offset")}
    bad = np.flatnonzero(cat["nalleles"] != 2)
    if len(bad):
        k = int(bad[0])
        raise InputError(path, f"variant {cat['rsid'][k].decode()} has {int(cat['nalleles'][k])} alleles; gboost scans "
                               "biallelic variants: drop the others with `plink2 --bgen FILE ref-unknown --sample FILE "
                               "--max-alleles 2 --make-pgen --out NEW`")
    alleles = [a.decode().split(",") for a in cat["allele_ids"]]
    variants = VariantTable(canonical_chrom([c.decode() for c in cat["chromosome"]]),
                            np.array([s.decode() for s in cat["rsid"]], dtype=str), np.zeros(len(alleles)),
                            cat["position"].astype(np.int64),
                            np.array([a[0] for a in alleles], dtype=str), np.array([a[1] for a in alleles], dtype=str))
    from gboost.io.vcf import _check_unique_ids

    _check_unique_ids(variants, path)
    return variants, cat["offset"].astype(np.int64)


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
    from gboost.io.plink_bed import _check_unique

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
