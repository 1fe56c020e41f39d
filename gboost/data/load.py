"""From a genotype source to a :class:`Study`: PLINK 1.9's QC, then bit-plane encoding.

What PLINK 1.9 (v1.90b6.26) does before ``--fast-epistasis boost``, checked against plink1.9 and
its source (``plink_filter.c``), and what we therefore do, in this order:

1. ``--chr``, ``--extract``, ``--exclude`` (and SNPs with a negative bp, which PLINK ignores);
   then the sample lists ``--keep-fam``, ``--keep``, ``--remove-fam``, ``--remove``
   (gboost/readers/id_lists.py): removed samples count for nothing after (QC, founders, A1).
2. ``--mind``: per-sample missing-call rate over the remaining SNPs; a non-male's Y calls are not
   counted. Removed when ``missing > int(mind * n_snps * (1 + 2^-44))``.
3. Per SNP, on the samples left (*including* those with a missing phenotype: PLINK keeps them in
   its QC even though the scan ignores them):

   * ``--geno``: removed when ``called / n < (1 - geno)(1 - 2^-44)`` (Y: males only);
   * ``--hwe``: Hardy-Weinberg exact test (Wigginton et al. 2005, not mid-p) in founder controls
     (X: non-male founder controls; Y and MT are not tested); removed when ``p < hwe (1 - 2^-44)``;
   * ``--maf``: minor allele frequency from founders' called alleles (X: non-males diploid, males
     haploid; Y: males haploid; het haploid calls ignored; MT diploid, as PLINK 1.9 counts it;
     0.5 when nothing is called); removed when ``maf < maf (1 - 2^-44)``.

   Each filter counts only SNPs the previous ones kept, as PLINK's log does.
4. The scan's own skips (``--fast-epistasis: Skipping N monomorphic/non-autosomal sites``):
   SNPs on X or Y (codes X/23, Y/24, any case, optional ``chr`` prefix; XY/25, MT/26 and 0 are
   *kept*, as PLINK 1.9 keeps them), then SNPs with fewer than two genotype classes among the cases
   and controls (all-het and all-missing SNPs included).

Samples with a missing phenotype are then dropped (the readers have already set missing, as
PLINK does at load time, the phenotype of samples whose sex is unknown); PLINK's requirement of
at least two cases and two controls is enforced. The kept SNPs are encoded block by block in
plane order (controls first). The int8 genotypes are never held whole: one block at a time.
"""
from __future__ import annotations

import os
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable

import numpy as np

from gboost.data import plink_skips
from gboost.data.encode import (ClassLayout, bed_class_counts, bed_column_counts, bed_columns, bed_encode,
                           bed_missing_counts, bed_plan, bed_set_counts, encode_block, file_masks, monomorphic, move_rows, plane_counts,
                           sample_order)
from gboost.errors import InputError, printable
from gboost.readers.pheno import read_text
from gboost.readers.plink_bed import fed_threads
from gboost.readers.plink_format import HUMAN_CHROMS, chrom_number
from gboost.data.plink_skips import types_from_bed_rows
from gboost.stats.hwe import SMALL_EPSILON, hwe_exact_pvalues
from gboost.data.planes import PlaneSource
from gboost.data.study import (GenotypeSource, QCOptions, QCReport, Study, VariantTable, founders_a1_major,
                          plink_snp_width)


# Kinds of chromosome, for the QC rules that differ on sex chromosomes and MT.
DIPLOID, CHR_X, CHR_Y, CHR_MT = 0, 1, 2, 3
_KIND_OF_CODE = {"23": CHR_X, "24": CHR_Y, "26": CHR_MT}
# PLINK 1.9's --fast-epistasis leaves out X and Y only (checked: XY, MT and 0 are scanned).
EPISTASIS_SKIPPED_CODES = frozenset({"23", "24"})

# Columns of the sample-mask matrix used to count genotypes of several sample sets at once.
_ALL, _MALE, _FOUNDER, _FOUNDER_NONMALE, _FOUNDER_MALE, _FOUNDER_CTRL, _FOUNDER_CTRL_NONMALE = range(7)


def plink_chrom_code(code: str) -> str:
    """PLINK 1.9's canonical code for a (human) chromosome name.

    ``chr`` prefix and case ignored, one or two digits (``01`` is 1); ``X``, ``Y``, ``XY``,
    ``MT``/``M`` become ``23``, ``24``, ``25``, ``26`` (the numbers PLINK prints in ``.epi.cc``:
    ``plink_format.chrom_number``). Other names (contigs, which ``check_chrom_codes`` accepts only
    with --allow-extra-chr) are returned unchanged.
    """
    number = chrom_number(code)
    return code if number is None else str(number)


def _shown(text: str) -> str:
    """A name from a file as a message shows it: quoted, control characters escaped (an escape
    code in a .bim must not reach the terminal raw)."""
    return f"'{printable(text)}'"  # (not repr: that would double printable's backslashes)


def check_chrom_codes(names: np.ndarray, where: np.ndarray, source: GenotypeSource, allow_extra_chr: bool) -> None:
    """Refuse, as plink1.9 does (checked on it), a chromosome code it does not know: a name
    (``HLA``, ``-1``, ``chrUn_gl000220``) unless --allow-extra-chr; a number past the human set
    (``27``, ``chr95``) even with it; a control character in a code always (plink1.9 reads it as
    the end of the line: "fewer tokens than expected"). ``names``/``where``: ``_chrom_names``."""
    for k, name in enumerate(str(c) for c in names):
        number = chrom_number(name)
        if number is not None and number <= HUMAN_CHROMS:
            continue
        row = int(np.flatnonzero(where == k)[0])
        at = f"variant {row + 1} ({_shown(str(source.variants.snp[row]))})"
        if any(ord(ch) < 32 or ord(ch) == 127 for ch in name):
            why = (f"chromosome code {_shown(name)} of {at} holds a control character; PLINK 1.9 reads it as the "
                   "end of the line (\"fewer tokens than expected\"): fix the file")
        elif number is not None:
            why = (f"invalid chromosome code {_shown(name)} of {at}: PLINK 1.9's human chromosome set stops at "
                   f"{HUMAN_CHROMS} (X 23, Y 24, XY 25, MT 26) and refuses it even with --allow-extra-chr; check the data")
        elif allow_extra_chr:
            continue
        else:
            why = (f"invalid chromosome code {_shown(name)} of {at}: PLINK 1.9 refuses a name it does not know; "
                   "use --allow-extra-chr to accept it (it is then scanned and printed whole)")
        raise InputError(_variants_file(source), why)


def _variants_file(source: GenotypeSource) -> str:
    """The file that lists the source's variants (.bim, .pvar, .map), else the source's own."""
    for attr in ("bim_path", "pvar_path"):
        if getattr(source, attr, None):
            return getattr(source, attr)
    maps = [f for f in getattr(source, "files", ()) if str(f).endswith(".map")]
    return maps[0] if maps else source.path


def load_study(
    source: GenotypeSource,
    qc: QCOptions | None = None,
    *,
    block_snps: int | None = None,
    log: Callable[[str], object] | None = None,
    timings: dict | None = None,
) -> Study:
    """Apply PLINK 1.9's QC to a genotype source and encode what is kept.

    Parameters
    ----------
    source
        Any :class:`gboost.data.study.GenotypeSource` (``open_bfile``, ``open_ped``, ...). A
        ``founder`` attribute (bool per sample) is used when present; otherwise every sample is a
        founder.
    qc
        PLINK's filters; ``None`` fields are off (and ``None`` means no QC at all).
    block_snps
        SNPs per streamed block at most. By default a .bed is read in blocks of up to
        ``READ_BLOCK_BYTES`` (gboost/readers/plink_bed.py) and other inputs in 4,096 SNPs (memory:
        ``block_snps x samples`` int8 at a time).
    log
        Called with each QC message (``print``, or a logger's ``info``).
    timings
        When given, ``timings["encode"]`` gets the seconds of the QC-and-encode pass over the
        genotypes (the rest of the call reads and checks the inputs); with a background encode
        (:func:`load_with_encoder`), the seconds of the counting pass only (the encoder's own are
        its ``PlaneSource.seconds``).

    Returns
    -------
    Study
        Kept SNPs in file order; samples (cases and controls only) in plane order; its planes
        complete.

    Raises
    ------
    InputError
        No cases or no controls left, a split chromosome, fewer than two SNPs left, or a bad
        --extract/--exclude file.
    """
    return _load(source, qc, block_snps, log, timings, background=False)[0]


def load_with_encoder(
    source: GenotypeSource,
    qc: QCOptions | None = None,
    *,
    block_snps: int | None = None,
    log: Callable[[str], object] | None = None,
    timings: dict | None = None,
) -> tuple[Study, PlaneSource]:
    """:func:`load_study`, for a case-control scan of a .bed that need not wait for every plane:
    ``(study, planes)``, the study's planes still being encoded by a background thread that
    ``planes`` (a :class:`gboost.data.planes.PlaneSource`) owns.

    A first compiled pass counts each SNP's genotypes (the QC sample sets' and the scan's
    classes), so QC and the monomorphic skips are decided and the kept SNPs known before any plane
    is written; the study (final but for its planes' contents) is then returned at once and its
    planes are encoded on the source's thread, SNP blocks in order, straight into their rows.
    Read them through the source (``planes.read(rows)`` waits for SNPs [0, rows); pass it to
    ``run_pipeline(..., planes=planes)``), and close it when done with it (``with planes:``): that
    stops an encoder still running and joins its thread. A failed encode (a read error, a .bed
    changed between the two passes) is raised by the readers that wait, as an InputError naming
    the .bed. Elsewhere (other formats, a QT, a sample order the .bed encoder cannot place,
    numba's workqueue threading layer) the planes are encoded before returning, as by
    :func:`load_study`, and the source is a complete one (no thread, no wait)."""
    study, encoder = _load(source, qc, block_snps, log, timings, background=True)
    return study, (encoder.start() if encoder is not None else PlaneSource.complete(study.planes))


def _load(source, qc, block_snps, log, timings, *, background: bool):
    """load_study's work: ``(study, encoder)``; the encoder (``_PlaneEncoder``, not started) where
    ``background`` and the planes are left to it (load_with_encoder), else None."""
    qc = QCOptions() if qc is None else qc
    report = QCReport(samples_in=len(source.samples), snps_in=len(source.variants))
    say = _Messenger(report, log)
    for note in getattr(source, "notes", ()):  # what a reader of another format chose (gboost.readers.streamed)
        say(note)
    # Per chromosome name, then indexed per SNP: no Python step per SNP (a .bim of a million SNPs).
    names, where = _chrom_names(source.variants.chrom)
    check_chrom_codes(names, where, source, qc.allow_extra_chr)
    name_codes = np.array([plink_chrom_code(str(c)) for c in names], dtype=object)
    codes = name_codes[where]
    _check_contiguous_chromosomes(codes, np.unique(name_codes, return_inverse=True)[1].ravel()[where], source)
    kinds = np.array([_KIND_OF_CODE.get(c, DIPLOID) for c in name_codes], dtype=np.int8)[where]
    snp_keep = _variant_filters(source.variants, (name_codes, where), qc, report, say)
    listed = _sample_lists(source, qc, report, say)
    sample_keep = _mind_filter(source, snp_keep, kinds, qc.mind, block_snps, report, say, listed)
    sets = _sample_sets(source, sample_keep, report, say)
    skipped = np.isin(name_codes, list(EPISTASIS_SKIPPED_CODES))[where]
    scanned = snp_keep & ~skipped
    check_memory(source, int(scanned.sum()), sets.layout, codes[scanned])
    t = time.perf_counter()
    plan = bed_plan(sets.scan_index, sets.is_case, len(source.samples)) if hasattr(source, "iter_bed_rows") else None
    if background and plan is not None and not sets.quantitative:
        planes, counts, kept, encoder, founders = _bed_count_then_encode(source, plan, sets, snp_keep, kinds, skipped,
                                                                         qc, block_snps, report)
    else:
        planes, counts, kept, founders = _qc_and_encode(source, sets, snp_keep, kinds, skipped, qc, block_snps,
                                                        report, plan)
        encoder = None
    if timings is not None:
        timings["encode"] = time.perf_counter() - t
    _report_snp_filters(qc, report, say, sets.quantitative)
    study = _finish(source, sets, planes, counts, kept, report, say)
    # PLINK sizes its SNP columns over every SNP loaded (QC-removed and X/Y ones included).
    study.snp_col_width = plink_snp_width(source.variants.snp[snp_keep])
    if qc.keep_allele_order:  # PLINK's A1 is the .bim's first allele: nothing swapped, nothing counted
        study.reversed_alleles = np.zeros(study.n_snps, dtype=bool)
        if study.a1_flip is not None:
            study.a1_flip = np.zeros(study.n_snps, dtype=bool)
    elif not sets.quantitative:
        study.founder_counts = _founder_counts(source, sets, kept, founders)
    return study, encoder


def _chrom_names(chrom: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(chrom, return_inverse=True)``, sorting only the first name of each run of
    equal names (a .bim's chromosomes come in runs: a million names, a few dozen runs)."""
    if len(chrom) == 0:
        return np.unique(chrom, return_inverse=True)
    starts = np.flatnonzero(np.r_[True, chrom[1:] != chrom[:-1]])
    names, run_name = np.unique(chrom[starts], return_inverse=True)
    return names, np.repeat(run_name.ravel(), np.diff(np.r_[starts, len(chrom)]))


def available_memory() -> int | None:
    """Bytes of memory this process can still take without swapping: MemAvailable on Linux, the
    free physical pages elsewhere; ``GBOOST_MEMORY_LIMIT`` (bytes) overrides both (tests, shared
    nodes whose job has a smaller share than the machine)."""
    forced = os.environ.get("GBOOST_MEMORY_LIMIT")
    if forced:
        try:
            limit = float(forced)
            if not 0 <= limit < 2 ** 63:
                raise ValueError
        except ValueError:
            raise InputError(None, f"GBOOST_MEMORY_LIMIT={forced!r} is not a number of bytes (e.g. 8e9 or "
                                   "8000000000); set it so or unset it") from None
        return int(limit)
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


# What the scan holds beside the planes, per SNP (genotype counts, the .bim's columns as objects,
# the summary and marginal arrays: measured at ~250 bytes) and in all (the engine: a CUDA context,
# numba's compiled code, the .bed read buffers, the calibration's pairs).
SCAN_BYTES_PER_SNP = 320
SCAN_BYTES_FIXED = 768 << 20
# Share of the available memory a scan may plan to take (the rest: the page cache, other processes).
MEMORY_SHARE = 0.9


def scan_memory(n_snps: int, layout) -> int:
    """Bytes of host memory a scan of ``n_snps`` SNPs takes beyond the process's start: the bit
    planes (3 planes x words x 8 bytes a SNP) and what the scan holds beside them."""
    return n_snps * (3 * layout.n_words * 8 + SCAN_BYTES_PER_SNP) + SCAN_BYTES_FIXED


def check_memory(source, n_snps: int, layout, chrom_codes: np.ndarray | None = None) -> None:
    """Refuse, before reading a genotype, a study whose bit planes (and what the scan needs beside
    them) would not fit in the memory this machine can spare: it would swap for hours or be killed
    mid-scan. The one-line message names the .bed, the sizes, how many SNPs would fit and a
    ``--chr`` selection that would (``chrom_codes``: the canonical code of each SNP to be scanned,
    in file order). ``--part`` is not offered: every part holds every SNP's planes (a part's pairs
    reach to the last SNP), so it divides the time, not the memory."""
    need = scan_memory(n_snps, layout)
    have = available_memory()
    if have is None or need <= MEMORY_SHARE * have:
        return
    spare = MEMORY_SHARE * have
    fits = max(0, int((spare - scan_memory(0, layout)) // (scan_memory(1, layout) - scan_memory(0, layout))))
    n = layout.n_ctrl + layout.n_case
    hint = _chr_that_fits(chrom_codes, fits) if chrom_codes is not None else None
    raise InputError(getattr(source, "path", None),
                     f"a scan of {n_snps:,} SNPs x {n:,} samples needs {need / 2**30:.1f} GiB of memory (bit planes "
                     f"{n_snps * 3 * layout.n_words * 8 / 2**30:.1f} GiB), more than the {spare / 2**30:.1f} GiB this "
                     f"machine can spare; about {fits:,} SNPs fit: "
                     + (f"{hint} would, " if hint else "")
                     + "scan fewer SNPs at a time with --chr or --extract (pairs across two such runs are not "
                     "tested; --part k/n splits the time, not the memory)")


def _chr_that_fits(codes: np.ndarray, fits: int) -> str | None:
    """The longest run of consecutive chromosomes (file order) with at most ``fits`` SNPs, as a
    ``--chr`` argument with its SNP count; None when not even one chromosome fits."""
    if len(codes) == 0 or fits <= 0:
        return None
    starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
    names = [str(codes[k]) for k in starts]
    sizes = np.diff(np.r_[starts, len(codes)])
    best = None  # (snps, first, last)
    lo, total = 0, 0
    for hi in range(len(sizes)):
        total += int(sizes[hi])
        while total > fits and lo <= hi:
            total -= int(sizes[lo])
            lo += 1
        if lo <= hi and (best is None or total > best[0]):
            best = (total, lo, hi)
    if best is None:
        return None
    total, lo, hi = best
    run = names[lo:hi + 1]
    numeric = all(x.isdigit() for x in run) and [int(x) for x in run] == list(range(int(run[0]), int(run[0]) + len(run)))
    spec = run[0] if len(run) == 1 else (f"{run[0]}-{run[-1]}" if numeric else ",".join(run))
    return f"--chr {spec} ({total:,} SNPs)"


class _Messenger:
    """Collects QC messages in the report and forwards them to the caller's log."""

    def __init__(self, report: QCReport, log):
        self.report = report
        self.log = getattr(log, "info", log)

    def __call__(self, message: str) -> None:
        self.report.messages.append(message)
        if self.log is not None:
            self.log(message)


def _source_file(source: GenotypeSource, attr: str) -> str:
    return getattr(source, attr, None) or source.path


def _check_contiguous_chromosomes(codes: np.ndarray, ids: np.ndarray, source: GenotypeSource) -> None:
    """PLINK 1.9 refuses a fileset whose chromosome's SNPs are not contiguous ("split chromosome").
    ``ids``: an integer per SNP, equal where the canonical ``codes`` are."""
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
    seen: set = set()
    for start in starts.tolist():
        if codes[start] in seen:
            chrom = source.variants.chrom[start]
            raise InputError(
                _source_file(source, "bim_path"),
                f"SNP {source.variants.snp[start]} (row {start + 1}): chromosome {chrom} appears again after other "
                "chromosomes; PLINK 1.9 refuses such a 'split chromosome' fileset. Sort it with "
                "`plink --bfile PREFIX --make-bed --out SORTED`",
            )
        seen.add(codes[start])


# ---------------------------------------------------------------------------------------------
# SNP filters by name and chromosome


def _variant_filters(variants: VariantTable, chroms: tuple, qc: QCOptions, report: QCReport, say) -> np.ndarray:
    """--chr, --extract, --exclude and negative positions: the SNP mask before any genotype is read.
    ``chroms``: the canonical code of each chromosome name and each SNP's name index."""
    keep = np.ones(len(variants), dtype=bool)
    steps = []
    if qc.chrom is not None:
        name_codes, where = chroms
        steps.append((f"--chr {','.join(qc.chrom)}", "on other chromosomes",
                      np.isin(name_codes, list(_chrom_set(qc.chrom)))[where]))
    if qc.extract is not None:
        steps.append((f"--extract {qc.extract}", "not listed", np.isin(variants.snp, _id_list(qc.extract, "--extract"))))
    if qc.exclude is not None:
        steps.append((f"--exclude {qc.exclude}", "listed", ~np.isin(variants.snp, _id_list(qc.exclude, "--exclude"))))
    steps.append(("negative bp", "with a negative base-pair position (PLINK ignores them)", variants.bp >= 0))
    for flag, why, mask in steps:
        removed = int((keep & ~mask).sum())
        keep &= mask
        report.snps_chr_filter += removed
        if removed or not flag.startswith("negative"):
            say(f"{flag}: {removed} SNP{_s(removed)} {why} removed, {int(keep.sum())} left")
    return keep


def _chrom_set(chroms: list[str]) -> set[str]:
    """Canonical codes for a --chr list (QCOptions has expanded its ranges: ``study.chr_list``)."""
    return {plink_chrom_code(c) for c in chroms}


def _id_list(path: str, flag: str) -> np.ndarray:
    """SNP IDs of an --extract/--exclude file: whitespace-separated, any number per line."""
    return np.array(read_text(path, flag).split(), dtype=str)


def _s(n: int) -> str:
    return "" if n == 1 else "s"


# ---------------------------------------------------------------------------------------------
# --mind


def _sample_lists(source, qc: QCOptions, report: QCReport, say) -> np.ndarray:
    """The samples --keep-fam, --keep, --remove-fam and --remove leave (all True when none is
    given), in PLINK 1.9's order; each step counts only the samples the previous ones left, as
    PLINK's log does ("--keep: 300 people remaining."), and one that leaves none is refused with
    PLINK's words ("No people remaining after --keep.")."""
    from gboost.readers.id_lists import listed_families, listed_samples

    samples = source.samples
    keep = np.ones(len(samples), dtype=bool)
    steps = (("--keep-fam", qc.keep_fam, True, True), ("--keep", qc.keep, True, False),
             ("--remove-fam", qc.remove_fam, False, True), ("--remove", qc.remove, False, False))
    for flag, path, keeps, by_family in steps:
        if path is None:
            continue
        named = (listed_families(path, flag, samples.fid) if by_family
                 else listed_samples(path, flag, samples.fid, samples.iid))
        keep &= named if keeps else ~named
        left = int(keep.sum())
        if left == 0:
            what = "family IDs" if by_family else "sample IDs"
            why = (f"none of its {what} is one of {_sample_file(source)} (whose first sample is "
                   f"{samples.fid[0] + ' ' + samples.iid[0]!r}; an empty file lists none)"
                   if keeps else "it lists every sample that was left")
            raise InputError(path, f"no samples remain after {flag}: {why} (plink1.9: \"No people remaining after "
                                   f"{flag}.\")")
        say(f"{flag} {path}: {left} sample{_s(left)} remaining")
    report.samples_id_lists = len(samples) - int(keep.sum())
    return keep


def _sample_file(source) -> str:
    """The file the study's samples come from, for messages."""
    return os.path.basename(getattr(source, "fam_path", None) or getattr(source, "path", "the input"))


def _mind_filter(source, snp_keep, kinds, mind, block_snps, report, say, listed=None) -> np.ndarray:
    """Samples kept by the sample lists (``listed``) and --mind (all True when both are off): one pass
    over the genotypes. A sample's missing-call rate is its own, so counting it for every sample and
    leaving out those the lists removed is PLINK's --mind on the samples the lists left."""
    n = len(source.samples)
    listed = np.ones(n, dtype=bool) if listed is None else listed
    if mind is None:
        return listed
    male = source.samples.sex == 1
    missing = np.zeros(n, dtype=np.int64)
    direct = hasattr(source, "iter_bed_rows")  # a .bed: count its missing codes, no decoding
    blocks = (source.iter_bed_rows(block_snps, snp_keep) if direct
              else source.iter_blocks(np.arange(n), block_snps or 4096))
    with _numba_threads(fed_threads() if direct else None):
        for start, data in blocks:
            rows = snp_keep[start : start + len(data)]
            is_y = kinds[start : start + len(data)] == CHR_Y
            for sel, weight in ((rows & ~is_y, 1), (rows & is_y, male)):  # Y calls count for males only
                if sel.any():
                    part = data[sel]
                    missing += (bed_missing_counts(part, n) if direct else (part < 0).sum(axis=0)) * weight
    n_snps = int(snp_keep.sum())
    n_nony = n_snps - int((snp_keep & (kinds == CHR_Y)).sum())
    limit = np.where(male, int(mind * n_snps * (1 + SMALL_EPSILON)), int(mind * n_nony * (1 + SMALL_EPSILON)))
    keep = (missing <= limit) & listed
    report.samples_mind = int((~keep).sum()) - int((~listed).sum())
    say(f"--mind {mind:g}: {report.samples_mind} sample{_s(report.samples_mind)} removed (missing-call rate > {mind:g})")
    return keep


# ---------------------------------------------------------------------------------------------
# Sample sets


@dataclass
class _SampleSets:
    """The samples after --mind (the QC set) and which of them each statistic uses.

    ``read_index`` orders the QC set as the scan needs it: the scanned samples first, in plane
    order (controls then cases), then those with a missing phenotype. Blocks are read in this
    order, so the scanned columns are a leading slice and need no gather.
    """

    read_index: np.ndarray  # indices into the source's samples
    masks: np.ndarray  # (n_qc, 7) float32 in read order, columns _ALL.._FOUNDER_CTRL_NONMALE
    is_case: np.ndarray  # per scanned sample, plane order
    layout: ClassLayout
    trait: np.ndarray | None = None  # quantitative phenotype per scanned sample (plane order), or None

    @property
    def quantitative(self) -> bool:
        return self.trait is not None

    @property
    def n_qc(self) -> int:
        return len(self.read_index)

    @property
    def n_scan(self) -> int:
        return len(self.is_case)

    @property
    def scan_index(self) -> np.ndarray:
        return self.read_index[: self.n_scan]

    @property
    def n_male(self) -> int:
        return int(self.masks[:, _MALE].sum())


def _sample_sets(source, sample_keep, report, say) -> _SampleSets:
    samples = source.samples
    qc_index = np.flatnonzero(sample_keep)
    status = samples.status[qc_index]
    scanned, unscanned = qc_index[status > 0], qc_index[status == 0]
    report.samples_missing_pheno = len(unscanned)
    no_sex = getattr(source, "pheno_without_sex", 0)
    if no_sex:
        say(f"{no_sex} sample{_s(no_sex)} of unknown sex (column 5 not 1/2): phenotype ignored, as PLINK 1.9 "
            "does without --allow-no-sex")
    if len(unscanned):
        say(f"{len(unscanned)} sample{_s(len(unscanned))} with a missing phenotype "
            "(0, -9, non-numeric or unknown sex) left out of the scan (PLINK keeps them in --geno/--maf)")
    is_case_file = samples.status[scanned] == 2
    trait = getattr(samples, "trait", None)
    if trait is None:
        _check_both_classes(source, is_case_file, report)
    else:
        _check_trait(source, trait[scanned], report)
    order = sample_order(is_case_file)
    read_index = np.concatenate([scanned[order], unscanned])
    return _SampleSets(read_index, _sample_masks(source, read_index), is_case_file[order],
                       ClassLayout.from_status(is_case_file), None if trait is None else trait[scanned[order]])


def _sample_masks(source, index: np.ndarray) -> np.ndarray:
    """Columns _ALL.._FOUNDER_CTRL_NONMALE (float32 0/1) for the samples ``index``."""
    founder = getattr(source, "founder", None)
    founder = np.ones(len(index), bool) if founder is None else np.asarray(founder, bool)[index]
    male = source.samples.sex[index] == 1
    control = source.samples.status[index] == 1
    if getattr(source.samples, "trait", None) is not None:
        # PLINK 1.9 tests HWE in every founder when no case/control phenotype is loaded (hwe_all)
        control = np.ones(len(index), bool)
    columns = [np.ones(len(index), bool), male, founder, founder & ~male, founder & male,
               founder & control, founder & control & ~male]
    return np.column_stack(columns).astype(np.float32)


def _listed_out(report) -> str:
    """ "N removed by --keep/--remove, " where the sample lists removed any (the messages' counts)."""
    n = report.samples_id_lists
    return f"{n} removed by --keep/--remove, " if n else ""


def _check_trait(source, trait: np.ndarray, report) -> None:
    """PLINK 1.9's --epistasis on a quantitative trait refuses a constant one ("Phenotype is
    constant"), which includes having no phenotyped sample."""
    with np.errstate(all="ignore"):  # values near 1e308 overflow the variance: PLINK calls that constant too
        spread = np.var(np.asarray(trait, np.float64)) if len(trait) >= 2 else 0.0
    if len(trait) >= 2 and np.ptp(trait) > 0 and np.isfinite(spread):
        return
    path = getattr(source, "pheno_path", None) or _source_file(source, "fam_path")
    what = (f"only {len(trait)} sample{_s(len(trait))} with a quantitative phenotype" if len(trait) < 2
            else f"the quantitative phenotype is {trait[0]:g} for all {len(trait)} samples that have one"
            if np.ptp(trait) == 0 else
            f"the quantitative phenotype's values (as large as {np.abs(trait).max():g}) overflow its variance, "
            "so it is constant to PLINK 1.9 too; rescale it")
    raise InputError(path, f"{what} ({report.samples_in} in the file, {_listed_out(report)}{report.samples_mind} "
                           f"removed by --mind, {report.samples_missing_pheno} missing); a scan of a quantitative trait needs it to vary, "
                           "as PLINK 1.9 does")


def _check_both_classes(source, is_case, report) -> None:
    """PLINK 1.9: "--fast-epistasis requires at least two cases and two controls"."""
    n_case, n_ctrl = int(is_case.sum()), int((~is_case).sum())
    if n_case >= 2 and n_ctrl >= 2:
        return
    few = f"{n_case} case{_s(n_case)} (phenotype 2)" if n_case < 2 else f"{n_ctrl} control{_s(n_ctrl)} (phenotype 1)"
    path = getattr(source, "pheno_path", None) or _source_file(source, "fam_path")
    no_sex = getattr(source, "pheno_without_sex", 0)
    raise InputError(
        path,
        f"only {few} among the {n_case + n_ctrl} samples with a phenotype ({report.samples_in} in the file, "
        f"{_listed_out(report)}{report.samples_mind} removed by --mind, {report.samples_missing_pheno} with a missing phenotype); "
        "an epistasis scan needs at least two cases and two controls, as PLINK 1.9 does"
        + (f". {no_sex} sample{_s(no_sex)} of unknown sex (column 5 not 1 or 2) had {'its' if no_sex == 1 else 'their'} "
           "phenotype ignored, as PLINK 1.9 does by default: keep phenotypes of samples of unknown sex with "
           "--allow-no-sex" if no_sex else ""),
    )


# ---------------------------------------------------------------------------------------------
# Per-SNP QC and encoding, one block at a time


@dataclass
class _Verdicts:
    """Per SNP of a block: which filter removed it (first one wins, PLINK's order)."""

    geno: np.ndarray
    hwe: np.ndarray
    maf: np.ndarray


def _qc_and_encode(source, sets, snp_keep, kinds, skipped, qc, block_snps, report, plan):
    """Stream the genotypes once: per-SNP QC, the scan's skips, and encoding of what is kept."""
    n_candidates = int(snp_keep.sum())
    # np.empty does not touch memory: rows never filled cost nothing, and resize() trims them.
    planes = np.empty((n_candidates, 3, sets.layout.n_words), dtype=np.uint64)
    counts = np.empty((n_candidates, 3, 2), dtype=np.int64)
    founders = None
    if plan is not None:
        filled, kept, flips = _bed_qc_and_encode(source, plan, sets, snp_keep, kinds, skipped, qc, block_snps, report,
                                                 planes, counts)
    else:
        filled, kept, flips, founders = _calls_qc_and_encode(source, sets, snp_keep, kinds, skipped, qc,
                                                             block_snps or 4096, report, planes, counts)
    planes.resize((filled, 3, sets.layout.n_words), refcheck=False)
    counts.resize((filled, 3, 2), refcheck=False)
    kept = np.concatenate(kept) if kept else np.zeros(0, dtype=np.intp)
    if sets.quantitative:
        sets.a1_flip = np.concatenate(flips) if flips else np.zeros(0, dtype=bool)
    if founders is not None:
        founders = np.concatenate(founders) if founders else np.zeros((0, 3), dtype=np.int64)
    return planes, counts, kept, founders


def _bed_qc_and_encode(source, plan, sets, snp_keep, kinds, skipped, qc, block_snps, report, planes, counts):
    """A .bed, from its own bytes: per block of rows, one compiled pass counts
    the QC sample sets' genotypes (only when a filter or a QT scan needs them), the verdicts are
    NumPy over the block, and one pass encodes the kept rows straight into the study's planes,
    counting each class's calls as it stores the words. Both passes are parallel over rows and
    release the GIL; the next block is read meanwhile (``iter_bed_rows``). The rows that prove
    monomorphic (known from those counts only after encoding) are closed up in place."""
    kept, flips, filled = [], [], 0
    with _numba_threads(fed_threads()):
        for data, rows, local, keep, set_counts in _bed_blocks_judged(source, sets, snp_keep, kinds, skipped, qc,
                                                                      block_snps, report):
            sel = local[keep]
            end = filled + len(sel)
            _, mono = bed_encode(data, plan, sel, planes[filled:end], counts[filled:end], sets.quantitative)
            _plink_skip_quirk(sets, counts[filled:end], mono, lambda k: types_from_bed_rows(data, sel[k], _fam_cols(sets)))
            n_mono = int(mono.sum())
            report.snps_monomorphic += n_mono
            if sets.quantitative:
                flips.append(a1_is_major(set_counts[keep][~mono]))
            if n_mono:
                stay = np.flatnonzero(~mono)
                move_rows(planes, filled, stay)
                move_rows(counts, filled, stay)
            kept.append(rows[keep][~mono] if n_mono else rows[keep])
            filled = end - n_mono
    return filled, kept, flips


@contextmanager
def _numba_threads(n: int | None):
    """Numba's thread count for this thread set to ``n`` (None: unchanged) while the block runs: a
    compiled pass fed by ``iter_bed_rows`` leaves its readers their cores (``fed_threads``)."""
    if n is None:
        yield
        return
    import numba as nb

    old = nb.get_num_threads()
    nb.set_num_threads(min(n, nb.config.NUMBA_NUM_THREADS))
    try:
        yield
    finally:
        nb.set_num_threads(old)


def _bed_blocks_judged(source, sets, snp_keep, kinds, skipped, qc, block_snps, report):
    """The .bed's blocks of rows that hold a candidate SNP, each with PLINK's QC verdicts: yields
    ``(data, rows, local, keep, set_counts)`` — the block's bytes (valid until the next block),
    its candidates' SNP indices and their rows in the block, which pass (``_block_verdict``), and
    the QC sample sets' genotype counts where a filter or a QT scan needs them (else None; an
    autosomal SNP's sex-split columns stay zero: nothing reads them)."""
    set_masks, autosomal_sets = _qc_set_masks(source, sets, qc)
    for start, data in source.iter_bed_rows(block_snps, snp_keep):
        local = np.flatnonzero(snp_keep[start : start + len(data)])
        if len(local) == 0:
            continue
        rows = start + local
        set_counts = None
        if set_masks is not None:
            set_counts = np.zeros((len(local), 3, set_masks.shape[0]), dtype=np.int64)
            cols = np.arange(set_masks.shape[0]) if np.isin(kinds[rows], (CHR_X, CHR_Y)).any() else autosomal_sets
            set_counts[:, :, cols] = bed_set_counts(data, local, set_masks[cols])
        yield data, rows, local, _block_verdict(None, kinds[rows], skipped[rows], sets, qc, report, set_counts), set_counts


def _qc_set_masks(source, sets, qc) -> tuple[np.ndarray | None, np.ndarray]:
    """The QC sample sets as bit masks over the .bed's samples (None when no filter and no QT
    scan needs their counts), and the sets an autosomal SNP's verdicts read (the sex-split ones
    serve X and Y only: counting only those halves the work of a QC pass)."""
    set_masks = None
    if _needs_calls(qc) or sets.quantitative:
        # A QT scan needs every SNP's founder allele counts (PLINK's A1 is the founders' minor
        # allele: it sets the sign of BETA_INT), so it counts the sample sets whatever the filters.
        member = np.zeros((sets.masks.shape[1], len(source.samples)), dtype=bool)
        member[:, sets.read_index] = (sets.masks > 0).T
        set_masks = file_masks(member, len(source.samples))
    autosomal_sets = np.array(sorted(({_ALL} if qc.geno is not None else set())
                                     | ({_FOUNDER} if qc.maf or sets.quantitative else set())
                                     | ({_FOUNDER_CTRL} if qc.hwe is not None else set())), dtype=np.int64)
    return set_masks, autosomal_sets


# Rows the background encoder stores between two steps of the watermark (gboost.data.planes.PlaneSource):
# at 5,000 samples 4,096 SNPs are 7.8 MB of planes, about the GPU upload's chunk (8 MB), so the
# first tiles wait for a few milliseconds of encoding, not a 32 MB read block's.
ENCODE_STEP_ROWS = 4096
# Tests only: called by the background encoder with the watermark after each step (to slow it
# down so that tiles must wait, or to make it fail).
_ENCODE_HOOK: Callable[[int], None] | None = None


def _bed_count_then_encode(source, plan, sets, snp_keep, kinds, skipped, qc, block_snps, report):
    """The counting pass of a background encode: per block of rows, where a filter
    needs them the QC sample sets' genotype counts and the verdicts, then one compiled pass counts
    the called genotypes per class of the SNPs that pass (the planes' counts, by popcount of the
    2-bit codes in place: ``bed_class_counts``, cheaper than encoding them); the monomorphic
    skips follow from those counts, so the kept SNPs, their counts and the QC report are final
    before a plane is written. Returns ``(planes (unwritten),
    counts, kept, encoder, founders)``; the encoder (``_PlaneEncoder``) fills the planes when started, or
    has filled them already (``None``) where two threads may not run parallel kernels at once;
    ``founders``: PLINK's founders' counts of the kept SNPs where few samples set them apart from
    the scanned ones (:func:`_founders_differ`), else None."""
    kept, counts, founders = [], [], []
    differ = _founders_differ(sets)
    with _numba_threads(fed_threads()):
        for data, rows, local, keep, _ in _bed_blocks_judged(source, sets, snp_keep, kinds, skipped, qc, block_snps,
                                                             report):
            cls, mono = bed_class_counts(data, local[keep], plan)  # the SNPs that pass QC only
            _plink_skip_quirk(sets, cls, mono, lambda k: types_from_bed_rows(data, local[keep][k], _fam_cols(sets)))
            n_mono = int(mono.sum())
            report.snps_monomorphic += n_mono
            kept.append(rows[keep][~mono] if n_mono else rows[keep])
            counts.append(cls[~mono] if n_mono else cls)
            if differ is not None:
                founders.append(bed_column_counts(data, local[keep][~mono], *differ, counts[-1].sum(axis=2)))
    kept = np.concatenate(kept) if kept else np.zeros(0, dtype=np.intp)
    counts = np.ascontiguousarray(np.concatenate(counts) if counts else np.zeros((0, 3, 2)), dtype=np.int64)
    founders = (np.concatenate(founders) if founders else np.zeros((0, 3), dtype=np.int64)) if differ else None
    planes = np.empty((len(kept), 3, sets.layout.n_words), dtype=np.uint64)
    encoder = _PlaneEncoder(source, plan, kept, planes, counts, block_snps)
    if not _threads_may_overlap():
        encoder.run(PlaneSource(planes, 0), background=False)
        encoder = None
    return planes, counts, kept, encoder, founders


def _founders_differ(sets):
    """Where PLINK's founders are a few samples away from the scanned samples (the usual case:
    every scanned sample a founder, and a few founders not scanned, such as those of unknown sex or
    with no phenotype): ``(file columns, weights)``, +1 for a founder not scanned and -1 for a
    scanned sample that is no founder, so that the founders' counts are the scanned samples'
    (the counting pass's) plus those codes, read as each block is counted (a few bytes a row).
    None where the founders are the scanned samples (Study.founder_counts is then None too), and
    where more than one sample in 32 differs: there one code read a sample costs about what a
    popcount over the row's words does (n/32 scattered bytes against n/4 streamed), so the
    founders' counts come from one compiled pass with their mask instead, made off the critical
    path when first asked (_founder_counts). The bound is reasoned, not measured."""
    founder = sets.masks[:, _FOUNDER] > 0
    scanned = np.arange(len(founder)) < sets.n_scan
    plus, minus = np.flatnonzero(founder & ~scanned), np.flatnonzero(scanned & ~founder)
    if len(plus) + len(minus) == 0 or 32 * (len(plus) + len(minus)) > len(founder):
        return None
    cols = sets.read_index[np.concatenate([plus, minus])]
    return cols, np.r_[np.ones(len(plus), np.int64), -np.ones(len(minus), np.int64)]


def _threads_may_overlap() -> bool:
    """Whether numba's threading layer lets two threads run parallel kernels at once (omp, tbb);
    its workqueue layer aborts the process instead. Asked after the counting pass has run a
    parallel kernel (the layer is chosen at the first one)."""
    import numba as nb

    try:
        return nb.threading_layer() != "workqueue"
    except ValueError:  # no parallel kernel has run: assume the worst
        return False


class BedRows:
    """The kept SNPs' rows of a .bed as the planes' rows (SNP k of the study is .bed row
    ``kept[k]``), with what decoding them into planes needs: the columns each plane bit holds
    (``encode.bed_columns``) and the counting pass's counts, against which the encoder and the
    GPU's decode check the rows they make (:meth:`check`: a .bed changed since is refused). For
    the GPU's decode of streamed blocks the encoder has not reached (gboost/engines/gpu/decode.py)."""

    def __init__(self, source, kept: np.ndarray, plan, counts: np.ndarray):
        self.source, self.kept, self.plan, self.counts = source, kept, plan, counts
        self.path = source.path
        self.row_bytes = (len(source.samples) + 3) // 4
        self.w_ctrl = plan.layout.w_ctrl

    def columns(self) -> np.ndarray:
        return bed_columns(self.plan)

    def read(self, a: int, b: int, out: np.ndarray, pool=None) -> None:
        """The .bed rows of SNPs [a, b) into ``out`` (uint8 ``(b - a, row_bytes)``)."""
        self.source.read_rows(self.kept[a:b], out, pool)

    def check(self, a: int, counts: np.ndarray) -> None:
        """Refuse decoded rows from SNP ``a`` on whose counts differ from the counting pass's."""
        if not np.array_equal(counts, self.counts[a : a + len(counts)]):
            raise InputError(self.path, "changed while it was read (its genotype counts differ between two reads); "
                                        "rerun once it is complete")


class _PlaneEncoder:
    """The planes of the kept SNPs of a .bed, encoded in SNP order straight into their rows, the
    watermark (gboost.data.planes.PlaneSource) advanced after every ``ENCODE_STEP_ROWS``. The counts
    the encoder makes on the way are checked against the counting pass's: a .bed that changed
    between the two reads is refused, never scanned half old, half new."""

    def __init__(self, source, plan, kept, planes, counts, block_snps):
        self.source, self.plan, self.kept, self.planes, self.counts = source, plan, kept, planes, counts
        self.block_snps = block_snps
        self.rows = BedRows(source, kept, plan, counts)  # (its check: the counting pass's counts)

    def start(self) -> PlaneSource:
        """The planes' source, its thread running :meth:`run` (the source owns the thread)."""
        return PlaneSource(self.planes, 0, bed_rows=self.rows).start(self.run)

    def run(self, ready: PlaneSource, background: bool = True) -> None:
        """Encode everything (or until ``ready.cancel()``); an error goes to ``ready`` (raised by
        its waiters) in the background, is raised here otherwise."""
        t0 = time.perf_counter()
        if background:
            import numba as nb

            # Numba's thread count is per thread: leave the readers their cores, and one to the
            # threads that feed a GPU.
            nb.set_num_threads(fed_threads(spare=1))
        blocks = None
        try:
            kept, p = self.kept, len(self.source.variants)
            mask = np.zeros(p, dtype=bool)
            mask[kept] = True
            scratch = np.empty((ENCODE_STEP_ROWS, 3, 2), dtype=np.int64)
            filled = 0
            blocks = self.source.iter_bed_rows(self.block_snps, mask)
            for start, data in blocks:
                end = int(np.searchsorted(kept, start + len(data)))
                local = kept[filled:end] - start
                for a in range(0, len(local), ENCODE_STEP_ROWS):
                    if ready.stopping:
                        return
                    b = min(len(local), a + ENCODE_STEP_ROWS)
                    k0, k1 = filled + a, filled + b
                    cnt, _ = bed_encode(data, self.plan, local[a:b], self.planes[k0:k1], scratch[: b - a])
                    self.rows.check(k0, cnt)
                    if _ENCODE_HOOK is not None:
                        _ENCODE_HOOK(k1)
                    if k1 == len(kept):  # known before a waiter can see the planes complete
                        ready.seconds = time.perf_counter() - t0
                    ready.advance(k1)
                filled = end
            if filled != len(kept):  # cannot happen: every kept row lies in a block read
                raise RuntimeError(f"encoded {filled} of {len(kept)} SNPs")
        except BaseException as exc:  # noqa: BLE001 - raised where the planes are waited for
            if not background:
                raise
            ready.fail(exc)
        finally:
            if blocks is not None:
                blocks.close()  # the reader's file and thread, now (a cancel returns mid-way)
            if not ready.done():
                ready.seconds = time.perf_counter() - t0


def _calls_qc_and_encode(source, sets, snp_keep, kinds, skipped, qc, block_snps, report, planes, counts):
    """Any other input: int8 blocks of calls (samples in read order), encoded and counted; with
    the founders' genotype counts of the kept SNPs (``(kept, 3)`` per block, where the founders
    are not exactly the scanned samples; else None): PLINK's allele order (Study.founder_counts)."""
    kept, flips, founders, filled = [], [], [], 0
    founder = sets.masks[:, _FOUNDER] > 0
    founder_cols = None if _founders_are_scanned(sets) else np.flatnonzero(founder)
    for start, data in source.iter_blocks(sets.read_index, block_snps):
        rows = start + np.flatnonzero(snp_keep[start : start + len(data)])
        if len(rows) == 0:
            continue
        block = data if len(rows) == len(data) else data[rows - start]
        keep = _block_verdict(block, kinds[rows], skipped[rows], sets, qc, report)
        part = block if keep.all() else block[keep]
        pl = encode_block(part[:, : sets.n_scan], sets.is_case)
        # The counts come from the planes by popcount; SNPs with fewer than two genotype classes
        # (PLINK's --fast-epistasis skips them) are dropped after encoding.
        cnt = plane_counts(pl, sets.layout)
        mono = monomorphic(cnt, sets.quantitative)
        _plink_skip_quirk(sets, cnt, mono, lambda k: _raw_types(source, rows[keep][k], part[k][:, : sets.n_scan], sets))
        report.snps_monomorphic += int(mono.sum())
        if sets.quantitative:
            flips.append(a1_is_major(_set_counts(part, sets.masks)[~mono]))
        if founder_cols is not None:
            f = part[~mono][:, founder_cols]
            founders.append(np.stack([(f == t).sum(axis=1, dtype=np.int64) for t in range(3)], axis=1))
        if mono.any():
            pl, cnt = pl[~mono], cnt[~mono]
        planes[filled : filled + len(pl)] = pl
        counts[filled : filled + len(cnt)] = cnt
        filled += len(cnt)
        kept.append(rows[keep][~mono])
    return filled, kept, flips, (founders if founder_cols is not None else None)


def _plink_skip_quirk(sets, counts: np.ndarray, mono: np.ndarray, types_of) -> None:
    """Add to ``mono`` (in place) the SNPs of a block that PLINK 1.9's --fast-epistasis skips
    although they have two genotype classes (gboost/data/plink_skips.py: hets and A1 homozygotes whose
    A1 homozygotes all share the first word of 32 scanned samples that holds a call). ``counts``:
    the block's ``(b, 3, 2)`` class counts; ``types_of(k)``: the genotype types of rows ``k`` of the
    block, scanned samples in .fam order. Case-control scans only (PLINK's QT test skips by
    ``is_monomorphic``, which has no such blind spot)."""
    if sets.quantitative:
        return
    k = plink_skips.candidates(counts)
    k = k[~mono[k]]
    if len(k):
        mono[k] |= plink_skips.skipped(types_of(k))


def _raw_types(source, snps: np.ndarray, calls: np.ndarray, sets) -> np.ndarray:
    """Calls of SNPs ``snps`` (scanned samples in plane order) as the genotype types of PLINK's own
    2-bit codes, scanned samples in .fam order: a .ped's calls count its final A1, PLINK's codes the
    allele its conversion chose (``raw_swapped``, gboost/readers/ped.py)."""
    calls = calls[:, np.argsort(sets.scan_index, kind="stable")]
    swapped = getattr(source, "raw_swapped", None)
    if swapped is not None and swapped[snps].any():
        flip = swapped[snps]
        calls = calls.copy()
        calls[flip] = np.where(calls[flip] >= 0, 2 - calls[flip], -1)
    return calls


def _fam_cols(sets) -> np.ndarray:
    """The scanned samples' .fam columns, in .fam order (PLINK's order of the scanned samples)."""
    return np.sort(sets.scan_index)


def _founders_are_scanned(sets) -> bool:
    """Whether PLINK's founders (of the samples QC kept) are exactly the scanned samples."""
    founder = sets.masks[:, _FOUNDER] > 0
    return bool(founder[: sets.n_scan].all() and not founder[sets.n_scan :].any())


def _founder_counts(source, sets, kept: np.ndarray, founders: np.ndarray | None):
    """Study.founder_counts: None where the founders are the scanned samples (their counts are the
    study's); else the counts made as the calls were read (``founders``), or, for a .bed, one more
    compiled pass over the kept rows with the founders' mask (a counting pass, made when
    Study.plink_reversed first asks: on the host-work thread beside a GPU screen)."""
    if _founders_are_scanned(sets):
        return None
    if founders is not None:
        return lambda: founders
    member = np.zeros((1, len(source.samples)), dtype=bool)
    member[0, sets.read_index[sets.masks[:, _FOUNDER] > 0]] = True
    fmask = file_masks(member, len(source.samples))  # the founders' .bed columns

    def from_bed() -> np.ndarray:
        want = np.zeros(len(source.variants), dtype=bool)
        want[kept] = True
        at = np.full(len(source.variants), -1, dtype=np.int64)
        at[kept] = np.arange(len(kept))
        out = np.zeros((len(kept), 3), dtype=np.int64)
        with _numba_threads(fed_threads()):
            for start, data in source.iter_bed_rows(None, want):
                local = np.flatnonzero(want[start : start + len(data)])
                if len(local):
                    out[at[start + local]] = bed_set_counts(data, local, fmask)[:, :, 0]
        return out

    return from_bed


def a1_is_major(c: np.ndarray) -> np.ndarray:
    """:func:`gboost.data.study.founders_a1_major` from sample-set counts ``(snps, 3, sets)``."""
    return founders_a1_major(c[:, :, _FOUNDER])


def _needs_calls(qc: QCOptions) -> bool:
    """Whether the per-SNP filters need the decoded calls of the QC sample set."""
    return qc.geno is not None or qc.hwe is not None or bool(qc.maf)


def _block_verdict(block, kinds, skipped, sets, qc, report, set_counts=None) -> np.ndarray:
    """Which SNPs of a block pass QC and are autosomal, counting each removal (the monomorphic
    ones are found from their planes' counts, in _qc_and_encode). ``block`` (int8 calls) may be
    None when no filter needs it or ``set_counts`` (as :func:`_set_counts` gives) are known."""
    verdict = _snp_verdicts(block, kinds, sets, qc, set_counts)
    keep = ~(verdict.geno | verdict.hwe | verdict.maf)
    report.snps_geno += int(verdict.geno.sum())
    report.snps_hwe += int(verdict.hwe.sum())
    report.snps_maf += int(verdict.maf.sum())
    off_autosome = keep & skipped
    report.snps_non_autosomal += int(off_autosome.sum())
    return keep & ~off_autosome


def _snp_verdicts(block, kinds: np.ndarray, sets: _SampleSets, qc: QCOptions, set_counts=None) -> _Verdicts:
    """--geno, --hwe, --maf decisions for a block of SNPs over the QC sample set."""
    fail_geno = np.zeros(len(kinds), bool)
    if not _needs_calls(qc):
        return _Verdicts(fail_geno, fail_geno.copy(), fail_geno.copy())
    c = set_counts if set_counts is not None else _set_counts(block, sets.masks)
    if qc.geno is not None:
        fail_geno = call_rate(c, kinds, sets.n_qc, sets.n_male) < (1.0 - qc.geno) * (1 - SMALL_EPSILON)
    fail_hwe = np.zeros(len(kinds), bool)
    if qc.hwe is not None:
        fail_hwe = ~fail_geno & (hwe_control_p(c, kinds) < qc.hwe * (1 - SMALL_EPSILON))
    fail_maf = np.zeros(len(kinds), bool)
    if qc.maf:  # PLINK applies --maf 0 as "off"
        fail_maf = ~fail_geno & ~fail_hwe & (founder_maf(c, kinds) < qc.maf * (1 - SMALL_EPSILON))
    return _Verdicts(fail_geno, fail_hwe, fail_maf)


def _set_counts(block: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """Genotype counts ``(snps, 3, 7)`` in each sample set (float32 products are exact below 2^24)."""
    out = np.empty((block.shape[0], 3, masks.shape[1]), dtype=np.int64)
    for t in range(3):
        out[:, t, :] = np.rint((block == t).astype(np.float32) @ masks)
    return out


def call_rate(c: np.ndarray, kinds: np.ndarray, n: int, n_male: int) -> np.ndarray:
    """PLINK's per-SNP genotyping rate: called / samples (Y: called males / males, 0 without males).

    Computed as ``called * (1 / n)``, PLINK's own arithmetic, so that threshold ties agree.
    """
    called = c[:, :, _ALL].sum(axis=1).astype(np.float64) * (1.0 / n)
    called_male = c[:, :, _MALE].sum(axis=1).astype(np.float64) * (1.0 / n_male if n_male else 0.0)
    return np.where(kinds == CHR_Y, called_male, called)


def founder_maf(c: np.ndarray, kinds: np.ndarray) -> np.ndarray:
    """PLINK's minor allele frequency from founders' called alleles (0.5 when none is called).

    Diploid chromosomes (MT included: PLINK 1.9 counts MT calls as diploid here) count 2 alleles per
    call; on X non-males count 2 and males' homozygous calls 1; on Y only males' homozygous calls
    count, 1 allele each (heterozygous haploid calls count nothing).
    """
    f = c[:, :, _FOUNDER]
    fn, fm = c[:, :, _FOUNDER_NONMALE], c[:, :, _FOUNDER_MALE]
    total = np.select(
        [kinds == CHR_X, kinds == CHR_Y],
        [2 * fn.sum(axis=1) + fm[:, 0] + fm[:, 2], fm[:, 0] + fm[:, 2]],
        2 * f.sum(axis=1),
    )
    a1 = np.select(
        [kinds == CHR_X, kinds == CHR_Y],
        [2 * fn[:, 2] + fn[:, 1] + fm[:, 2], fm[:, 2]],
        2 * f[:, 2] + f[:, 1],
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        freq = np.where(total > 0, a1 / np.maximum(total, 1), 0.5)
    return np.minimum(freq, 1.0 - freq)


def hwe_control_p(c: np.ndarray, kinds: np.ndarray) -> np.ndarray:
    """HWE exact p per SNP in founder controls (X: non-male ones); 1 for Y and MT (not tested)."""
    cols = np.where(kinds == CHR_X, _FOUNDER_CTRL_NONMALE, _FOUNDER_CTRL)
    g = c[np.arange(len(c)), :, cols]
    p = hwe_exact_pvalues(g[:, 1], g[:, 0], g[:, 2])
    return np.where((kinds == CHR_Y) | (kinds == CHR_MT), 1.0, p)


# ---------------------------------------------------------------------------------------------
# Messages and the result


def _report_snp_filters(qc: QCOptions, report: QCReport, say, quantitative: bool = False) -> None:
    if qc.geno is not None:
        say(f"--geno {qc.geno:g}: {report.snps_geno} SNP{_s(report.snps_geno)} removed (missing-call rate > {qc.geno:g})")
    if qc.hwe is not None:
        say(f"--hwe {qc.hwe:g}: {report.snps_hwe} SNP{_s(report.snps_hwe)} removed "
            f"(Hardy-Weinberg exact test p < {qc.hwe:g} in founder {'samples' if quantitative else 'controls'})")
    if qc.maf:
        say(f"--maf {qc.maf:g}: {report.snps_maf} SNP{_s(report.snps_maf)} removed "
            f"(minor allele frequency < {qc.maf:g} in founders)")
    say(f"{report.snps_non_autosomal} SNP{_s(report.snps_non_autosomal)} on X or Y skipped "
        "(PLINK 1.9's --fast-epistasis scans autosomes, XY, MT and 0 only)")
    if quantitative:
        say(f"{report.snps_monomorphic} monomorphic SNP{_s(report.snps_monomorphic)} skipped "
            "(every call the same homozygote among the phenotyped samples, as PLINK's --epistasis)")
    else:
        say(f"{report.snps_monomorphic} monomorphic SNP{_s(report.snps_monomorphic)} skipped "
            "(fewer than two genotype classes among cases and controls)")


def _finish(source, sets, planes, counts, kept, report, say) -> Study:
    if len(kept) < 2:
        raise InputError(
            source.path,
            f"{'no SNP' if len(kept) == 0 else 'only 1 SNP'} of {report.snps_in} left after QC and the scan's skips; "
            "an epistasis scan needs at least 2. What was removed: " + "; ".join(report.messages),
        )
    samples = source.samples.take(sets.scan_index)
    if sets.quantitative:
        say(f"{len(kept)} SNPs and {len(samples)} samples with a quantitative phenotype go into the scan "
            "(linear epistasis test, PLINK 1.9's --epistasis)")
        return Study(source.variants.take(kept), samples, sets.layout, planes, counts, report, source.input_files(),
                     trait=np.ascontiguousarray(sets.trait, dtype=np.float64), a1_flip=sets.a1_flip)
    say(f"{len(kept)} SNPs and {len(samples)} samples ({sets.layout.n_case} cases, {sets.layout.n_ctrl} controls) "
        "go into the scan")
    return Study(source.variants.take(kept), samples, sets.layout, planes, counts, report, source.input_files())

