"""PLINK 1 binary filesets (.bed/.bim/.fam), read lazily: metadata now, genotypes in SNP blocks.

We parse .bim and .fam ourselves (so every problem names its file and line) and check the .bed's
header and size before streaming genotypes. The loader reads the .bed's own rows
(``iter_bed_rows``, into reused buffers) and encodes their 2-bit codes straight into bit planes
(gboost.data.encode); decoded int8 A1 counts (``iter_blocks``, through bed-reader) serve the GenotypeSource interface and the tests
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

import numba as nb
import numpy as np

from gboost.errors import InputError
from gboost.readers.pheno import (_check_utf8, _line_chunks, as_text, decode_phenotype,
                             drop_phenotypes_without_sex, read_input_bytes, read_pheno_values)
from gboost.runtime.numba_cache import cached_njit
from gboost.data.study import SampleTable, VariantTable

BED_MAGIC = b"\x6c\x1b"
SNP_MAJOR = 0x01
BED_HEADER_LEN = 3
BED_READER_MISSING = -127  # what bed-reader returns for a missing call with dtype int8
# Largest block of .bed rows read at once (two are in memory: the one in use and the next).
READ_BLOCK_BYTES = 32 << 20
# Threads reading one block's rows at once (positioned reads, each releasing the GIL), and the
# numba threads of a compiled pass they feed (``fed_threads``): one reader copies the page cache
# several times slower than four, too slow for the counting pass it feeds; and the pass runs faster
# on the cores the readers leave than on every core, where OpenMP's spinning threads take the
# readers' (bench/bench_load.py --rates prints each step's MB/s of the .bed).
BED_READERS = max(1, min(4, (os.cpu_count() or 1) // 4))


def fed_threads(spare: int = 0) -> int:
    """Numba threads for a compiled pass over the blocks ``iter_bed_rows`` reads: the cores its
    readers (and ``spare`` other busy threads) leave. Below four cores the readers get none of
    their own (on two cores the counting pass is faster with both computing than with one left to
    the reader)."""
    reserved = min(BED_READERS, (os.cpu_count() or 1) // 4)
    return max(1, nb.config.NUMBA_NUM_THREADS - reserved - spare)


# Smallest piece one reader is given (a thread's hand-off costs tens of microseconds).
MIN_READ_BYTES = 1 << 20


@dataclass
class BedSource:
    """A PLINK binary fileset; implements :class:`gboost.data.study.GenotypeSource`.

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
                # BED_READER_MISSING (-127) -> -1, 0/1/2 unchanged: one SIMD pass, no mask (a masked
                # assignment is several times slower where many calls are missing).
                np.maximum(geno, -1, out=geno)
                yield start, geno

    def iter_bed_rows(self, block_snps: int | None, keep: np.ndarray | None = None) -> Iterator[tuple[int, np.ndarray]]:
        """Yield ``(first_snp, uint8 (snps, ceil(n/4)))``: the .bed's own bytes, 2-bit codes of
        every sample (gboost.data.encode.encode_bed_bytes turns them into planes in one pass; check_bed
        has validated the header and the size).

        The rows are read into two reused buffers, the next block while the caller works on this
        one, each block by ``BED_READERS`` threads at once (positioned reads, so that the copy out
        of the page cache is not one thread's): a block is valid until the next is asked for.
        Reading into buffers rather than mapping the file keeps the .bed out of the process's
        resident set (a map's touched pages stay in it: +1 x the .bed) and bounds memory
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
        readers = _readers()
        from concurrent.futures import ThreadPoolExecutor

        fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
        try:
            with ThreadPoolExecutor(readers, thread_name_prefix="gboost-bed") as pool:
                def submit(k: int) -> tuple[np.ndarray, list]:
                    a = starts[k]
                    b = min(p, a + step)
                    buf = bufs[k % 2][: b - a]
                    runs = [(0, b - a)] if keep is None else _runs(keep[a:b], 0)  # rows of buf
                    pieces = _pieces(runs, row, readers)
                    snps = np.arange(a, b)
                    return buf, [pool.submit(_read_out_rows, fd, buf, snps, row, part, self.path) for part in pieces]

                nxt = submit(0)
                for k in range(len(starts)):
                    data, reads = nxt
                    for r in reads:
                        r.result()
                    if k + 1 < len(starts):
                        nxt = submit(k + 1)  # the other buffer: the one yielded before this
                    yield starts[k], data
        finally:
            os.close(fd)

    def read_rows(self, rows: np.ndarray, out: np.ndarray, pool=None) -> None:
        """The .bed's rows ``rows`` (SNP indices, increasing) into ``out`` (uint8 ``(len(rows),
        ceil(n/4))``), a run of consecutive rows a read, by ``BED_READERS`` threads (``pool``: a
        ThreadPoolExecutor of the caller's to reuse). What the GPU decodes a SNP block from
        (gboost/engines/gpu/decode.py)."""
        rows = np.asarray(rows, dtype=np.int64)
        if len(rows) == 0:
            return
        row = (len(self.samples) + 3) // 4
        cuts = np.flatnonzero(np.diff(rows) != 1) + 1
        runs = [(int(a), int(b)) for a, b in zip(np.r_[0, cuts], np.r_[cuts, len(rows)])]
        parts = _pieces(runs, row, _readers())
        fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
        try:
            if pool is None or len(parts) == 1:
                for part in parts:
                    _read_out_rows(fd, out, rows, row, part, self.path)
            else:
                for f in [pool.submit(_read_out_rows, fd, out, rows, row, part, self.path) for part in parts]:
                    f.result()
        finally:
            os.close(fd)

    def input_files(self) -> list[str]:
        """The .bed, .bim, .fam (and --pheno file) read."""
        return list(self._files)


def open_bfile(
    prefix: str | os.PathLike,
    pheno: str | None = None,
    *,
    num_threads: int | None = None,
    allow_no_sex: bool = False,
    pheno_column: str | int | None = None,
) -> BedSource:
    """Open a PLINK 1 binary fileset ``prefix.bed/.bim/.fam``.

    Parameters
    ----------
    prefix
        Path without extension (as PLINK's ``--bfile``); a trailing ``.bed``, ``.bim`` or ``.fam``
        is tolerated.
    pheno
        Optional ``--pheno`` file (``FID IID value``) overriding the .fam's phenotype column.
    pheno_column
        Which of the --pheno file's phenotypes: ``None`` the first, an int N the N-th (``--mpheno``),
        a str the column its header names (``--pheno-name``).
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
        samples.status, samples.trait = read_pheno_values(pheno, fid, iid, pheno_column)
    files = [bed, bim, fam] + ([os.fspath(pheno)] if pheno is not None else [])
    dropped = 0 if allow_no_sex else drop_phenotypes_without_sex(samples)
    return BedSource(bed, variants, samples, founder, bim, fam, pheno, num_threads, files, dropped)


def _runs(mask: np.ndarray, offset: int) -> list[tuple[int, int]]:
    """[start, stop) runs of True in ``mask``, shifted by ``offset``."""
    edges = np.flatnonzero(np.diff(np.r_[0, mask.astype(np.int8), 0]))
    return [(offset + int(a), offset + int(b)) for a, b in zip(edges[::2], edges[1::2])]


def _pieces(runs: list[tuple[int, int]], row: int, readers: int,
            min_bytes: int | None = None) -> list[list[tuple[int, int]]]:
    """The rows ``runs`` ([start, stop) SNPs) cut into at most ``readers`` parts of equal rows
    (the last one shorter), each part a list of row ranges; a part has at least ``min_bytes``
    (``MIN_READ_BYTES``) unless the rows run out."""
    total = sum(b - a for a, b in runs)
    min_bytes = MIN_READ_BYTES if min_bytes is None else min_bytes
    per = max(-(-total // readers), -(-min_bytes // row), 1)
    parts, part, room = [], [], per
    for a, b in runs:
        while a < b:
            take = min(b - a, room)
            part.append((a, a + take))
            a, room = a + take, room - take
            if room == 0:
                parts.append(part)
                part, room = [], per
    if part:
        parts.append(part)
    return parts


def _read_out_rows(fd: int, out: np.ndarray, rows: np.ndarray, row: int, part: list[tuple[int, int]],
                   path: str) -> None:
    """Rows ``out[k0:k1]`` of each ``(k0, k1)`` in ``part`` from the .bed's rows ``rows[k0] ...``
    (consecutive within a range), by positioned reads of the descriptor ``fd`` (no shared file
    offset: several run at once; each releases the GIL)."""
    for k0, k1 in part:
        _read_span(fd, out[k0:k1], BED_HEADER_LEN + int(rows[k0]) * row, path)


def _read_span(fd: int, dst: np.ndarray, offset: int, path: str) -> None:
    """``dst``'s bytes from byte ``offset`` of the .bed (a read may return less than asked)."""
    view = memoryview(dst).cast("B")
    done = 0
    while done < len(view):
        got = _PREAD(fd, view[done:], offset + done)
        if not got:  # check_bed saw the full size: the file shrank under us
            raise InputError(path, f"the .bed ended at byte {offset + done} while reading it (truncated meanwhile?)")
        done += got


def _seek_read(fd: int, view: memoryview, offset: int) -> int:
    """One read at ``offset`` into ``view`` where the platform has no ``os.preadv`` (Windows: one
    reader, since the file offset is then shared)."""
    os.lseek(fd, offset, os.SEEK_SET)
    got = os.read(fd, len(view))
    view[: len(got)] = got
    return len(got)


def _preadv(fd: int, view: memoryview, offset: int) -> int:
    return os.preadv(fd, [view], offset)


_PREAD = _preadv if hasattr(os, "preadv") else _seek_read


def _readers() -> int:
    """Threads that may read one .bed at once here (one where reads share the file offset)."""
    return BED_READERS if _PREAD is _preadv else 1


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
    (chrom, snp, cm, bp, a1, a2), lines, _ = _read_columns(
        path, ".bim", "chrom, SNP ID, cM, bp, A1, A2", ("text", "text", "float", "int", "text", "text"),
        {"cM position": 2, "base-pair position": 3})
    if len(lines) == 0:
        raise InputError(path, "the .bim file is empty: expected one line per SNP (chrom, ID, cM, bp, A1, A2)")
    # A SNP ID may repeat (several "." are common on real chips): PLINK 1.9's --fast-epistasis
    # scans each row as its own SNP and prints the ID as given, and --extract/--exclude of a
    # repeated ID take every row that carries it (checked with plink1.9).
    return VariantTable(chrom, snp, cm, bp, a1, a2)


# ---------------------------------------------------------------------------------------------
# .bim and .fam at memory speed (a large .bim through Python's split and NumPy's per-element casts
# took seconds, on the path before a scan's first tile). Tokens are located by vectorised whitespace
# tests, each column is gathered from the bytes into a fixed-width matrix (an ASCII one widened
# straight into a str array), and numbers are read from their digits where that is exactly what
# ``float``/``int`` give; anything else takes the general path on that chunk, with its messages. The
# rules are gboost.readers.pheno.read_table's: whitespace as ``bytes.split``, blank and ``#`` lines
# skipped, exactly n columns a line, line numbers in messages.

# Exact powers of ten (a decimal of at most 15 digits divided by one is correctly rounded: the
# value float() reads).
_POW10_F = np.array([10.0 ** k for k in range(16)])
_POW10_I = 10 ** np.arange(19, dtype=np.int64)
_MAX_FAST_INT_DIGITS = 18
_MAX_FAST_FLOAT_DIGITS = 15


def _read_columns(path, what: str, columns: str, kinds: tuple, numbers: dict, hashed: tuple = ()):
    """Columns of a whitespace table with ``len(kinds)`` tokens a line: ``"text"`` (str array),
    ``"int"`` (int64) or ``"float"`` (float64); ``numbers`` names the numeric columns for
    messages; ``hashed``: groups of columns whose rows get a 64-bit hash (uniqueness pre-check).
    Returns ``(columns, line numbers, hashes)``."""
    data = read_input_bytes(path, what)
    n_columns = len(kinds)
    names = {k: name for name, k in numbers.items()}
    fast = _read_columns_compiled(data, kinds, names, hashed, path)
    if fast is not None:
        return fast
    parts: list[list] = [[] for _ in kinds]
    hashes: list[list] = [[] for _ in hashed]
    lines, first_line = [], 1
    for chunk in _line_chunks(data):
        _check_utf8(chunk, first_line, path, what)
        b, starts, ends, numbers_of_lines = _token_bounds(chunk, first_line, n_columns, path, what, columns)
        mats = {}
        for k, kind in enumerate(kinds):
            if kind == "text" or any(k in g for g in hashed):
                mats[k] = _token_matrix(b, starts[:, k], ends[:, k])
            if kind == "text":
                parts[k].append(_as_str(mats[k]))
            else:
                parts[k].append(_numbers(b, starts[:, k], ends[:, k], kind, numbers_of_lines, path, names[k]))
        for g, group in enumerate(hashed):
            hashes[g].append(_row_hash([mats[k] for k in group]))
        lines.append(numbers_of_lines)
        first_line += chunk.count(b"\n")
    empty = {"text": np.zeros(0, dtype="U1"), "int": np.zeros(0, np.int64), "float": np.zeros(0, np.float64)}
    out = [np.concatenate(p) if p else empty[kind] for p, kind in zip(parts, kinds)]
    line_numbers = np.concatenate(lines) if lines else np.zeros(0, np.int64)
    return out, line_numbers, [np.concatenate(h) if h else np.zeros(0, np.uint64) for h in hashes]


# The common table (ASCII, every data line n tokens, plain decimal numbers) in compiled passes that
# release the GIL: several times faster than the NumPy passes below, and the reading no longer holds
# the GIL against the thread that starts the GPU beside it. Anything else (a byte >= 128 or NUL, a
# line of another length, a number outside the decimal fast paths) falls back to the NumPy passes,
# with their messages; the result is the same table (tests/unit/test_bim_fam_parse.py compares the two).
_TEXT, _INT, _FLOAT = 0, 1, 2


def _read_columns_compiled(data: bytes, kinds: tuple, names: dict, hashed: tuple, path):
    """``_read_columns``' result from the compiled passes, or None where the NumPy path must run."""
    b = np.frombuffer(data, dtype=np.uint8)
    n_columns = len(kinds)
    ok, starts, ends, lines = _table_bounds(b, n_columns)
    if not ok or len(lines) == 0:
        return None
    out = []
    for k, kind in enumerate(kinds):
        s, e = starts[:, k], ends[:, k]
        if kind == "text":
            mat = _gather_text(b, s, e)
            out.append(mat.view(f"U{mat.shape[1]}").ravel())
            continue
        ok, ints, floats = _decimal_column(b, s, e, kind == "int")
        values = ints if kind == "int" else floats
        if not ok:  # NumPy's cast and its messages (on the bytes padded as _token_bounds pads them)
            padded = np.zeros(len(b) + 64, dtype=np.uint8)
            padded[: len(b)] = b
            values = _numbers(padded, s, e, kind, lines, path, names[k])
        out.append(values)
    hashes = [_token_hash(b, starts[:, list(group)], ends[:, list(group)]) for group in hashed]
    return out, lines, hashes


# _table_bounds reads a file in a chunk a core (whole lines each), of this many bytes at least:
# one chunk on one core, or for a small file, as the serial pass did.
_BOUNDS_CHUNK_BYTES = 1 << 20


def _table_bounds(b, n_columns):
    """(ok, starts, ends, line numbers) of every data line's ``n_columns`` tokens: whitespace as
    ``bytes.split`` (9-13, 32), lines ended by newlines, blank and ``#`` lines skipped; ok False
    (the NumPy path then runs) at a byte >= 128 or NUL or a data line of another length. The file
    is read in chunks of whole lines on every core: one serial pass over a biobank's .fam is a
    visible wait on the path before a scan's first tile."""
    want = max(1, min(nb.get_num_threads(), len(b) // _BOUNDS_CHUNK_BYTES))
    return _table_bounds_chunks(b, n_columns, _line_cuts(b, want))


@cached_njit(nogil=True)
def _line_cuts(b, want):
    """About ``want`` chunk bounds of b, 0 first and len(b) last, each inner one just after a
    newline (so every chunk holds whole lines), increasing."""
    n = len(b)
    cuts = np.empty(want + 1, np.int64)
    cuts[0] = 0
    m = 1
    for k in range(1, want):
        at = max(cuts[m - 1], k * n // want)
        while at < n and b[at] != 10:
            at += 1
        if at + 1 >= n:  # no newline left before the end
            break
        if at + 1 > cuts[m - 1]:
            cuts[m] = at + 1
            m += 1
    cuts[m] = n
    return cuts[: m + 1]


@cached_njit(nogil=True, parallel=True)
def _table_bounds_chunks(b, n_columns, cuts):
    """_table_bounds over the chunks [cuts[k], cuts[k + 1]), each starting a line: a chunk's
    newlines (a cheap pass) place its lines, so each chunk is parsed once, at rows of its own in
    arrays of a row a line; data rows are packed afterwards only where a blank or comment line
    left a gap before another chunk's."""
    n_chunks = len(cuts) - 1
    newlines = np.zeros(n_chunks, np.int64)
    for c in nb.prange(n_chunks):
        m = 0
        for pos in range(cuts[c], cuts[c + 1]):
            m += b[pos] == 10
        newlines[c] = m
    # A chunk's first row: a row for each of its lines (a chunk ends with a newline, but the last
    # may end with a line without one), so where every line holds data the rows come out packed.
    slot0 = np.zeros(n_chunks + 1, np.int64)
    line0 = np.ones(n_chunks, np.int64)
    for c in range(n_chunks):
        slot0[c + 1] = slot0[c] + newlines[c] + (c == n_chunks - 1)
        if c:
            line0[c] = line0[c - 1] + newlines[c - 1]
    starts = np.empty((slot0[n_chunks], n_columns), np.int64)
    ends = np.empty((slot0[n_chunks], n_columns), np.int64)
    lines = np.empty(slot0[n_chunks], np.int64)
    rows = np.zeros(n_chunks, np.int64)
    good = np.ones(n_chunks, np.bool_)
    for c in nb.prange(n_chunks):
        ok, r = _scan_lines(b, cuts[c], cuts[c + 1], n_columns, starts, ends, lines, slot0[c], line0[c])
        good[c], rows[c] = ok, r
    if not good.all():
        return False, starts[:0], ends[:0], lines[:0]
    packed = True
    for c in range(n_chunks - 1):
        packed = packed and rows[c] == newlines[c]
    if packed:  # (one chunk, or no blank or comment line but in the last chunk)
        total = slot0[n_chunks - 1] + rows[n_chunks - 1] if n_chunks else 0
        return True, starts[:total], ends[:total], lines[:total]
    row0 = np.zeros(n_chunks + 1, np.int64)
    for c in range(n_chunks):
        row0[c + 1] = row0[c] + rows[c]
    out_s = np.empty((row0[n_chunks], n_columns), np.int64)
    out_e = np.empty((row0[n_chunks], n_columns), np.int64)
    out_l = np.empty(row0[n_chunks], np.int64)
    for c in nb.prange(n_chunks):
        for r in range(rows[c]):
            out_l[row0[c] + r] = lines[slot0[c] + r]
            for t in range(n_columns):
                out_s[row0[c] + r, t] = starts[slot0[c] + r, t]
                out_e[row0[c] + r, t] = ends[slot0[c] + r, t]
    return True, out_s, out_e, out_l


@cached_njit(nogil=True)
def _scan_lines(b, lo, hi, n_columns, starts, ends, lines, row0, line0):
    """The lines of b[lo:hi) (lo starts a line; hi ends one, or is the file's end, where a last
    line without its newline ends; its first line is line ``line0``): (ok, data lines), each data
    line's token bounds and line number written from row ``row0`` on."""
    n = len(b)
    rows, line, tokens, comment, pos = 0, line0, 0, False, lo
    while pos < hi or (pos == n and hi == n):
        x = 10 if pos == n else b[pos]
        if x == 0 or x >= 128:
            return False, rows
        if x == 10 or x == 32 or 9 <= x <= 13:
            if x == 10:
                if tokens > 0 and not comment:
                    if tokens != n_columns:
                        return False, rows
                    lines[row0 + rows] = line
                    rows += 1
                tokens, comment = 0, False
                line += 1
            pos += 1
            continue
        start = pos
        while pos < hi:
            x = b[pos]
            if x == 0 or x >= 128:
                return False, rows
            if x == 32 or 9 <= x <= 13:
                break
            pos += 1
        if tokens == 0 and b[start] == 35:  # '#': a comment line
            comment = True
        if not comment and tokens < n_columns:
            starts[row0 + rows, tokens] = start
            ends[row0 + rows, tokens] = pos
        tokens += 1
    return True, rows


def _gather_text(b, starts, ends):
    """ASCII tokens as the code points of a ``U<width>`` array (zero-padded; width: the longest
    token, at least 1, as _as_str makes it)."""
    width = max(1, int((ends - starts).max())) if len(starts) else 1
    return _gather_rows(b, starts, ends, width)


@cached_njit(nogil=True, parallel=True)
def _gather_rows(b, starts, ends, width):
    """_gather_text's rows on every core, each written whole (its padding too: the pages are first
    touched by the thread that fills them): on one core a biobank's .fam columns are a visible wait."""
    out = np.empty((len(starts), width), np.uint32)
    for k in nb.prange(len(starts)):
        n = ends[k] - starts[k]
        for t in range(n):
            out[k, t] = b[starts[k] + t]
        for t in range(n, width):
            out[k, t] = 0
    return out


@cached_njit(nogil=True)
def _decimal_column(b, starts, ends, integer):
    """``_decimal_ints`` (integer) or ``_decimal_floats`` of a column, in one pass: (ok, values);
    ok False where a token is outside those fast paths (the NumPy path then decides)."""
    n = len(starts)
    ints = np.zeros(n if integer else 0, np.int64)
    floats = np.zeros(0 if integer else n, np.float64)
    limit = _MAX_FAST_INT_DIGITS if integer else _MAX_FAST_FLOAT_DIGITS
    for k in range(n):
        pos, end = starts[k], ends[k]
        negative = b[pos] == 45  # '-'
        if negative:
            pos += 1
        value, digits, after, point = 0, 0, 0, False
        while pos < end:
            x = b[pos]
            if 48 <= x <= 57:
                value = value * 10 + (x - 48)
                digits += 1
                if point:
                    after += 1
            elif x == 46 and not integer and not point:  # '.'
                point = True
            else:
                return False, ints, floats
            pos += 1
        if digits == 0 or digits > limit:
            return False, ints, floats
        if integer:
            ints[k] = -value if negative else value
        else:
            v = np.float64(value) / _POW10_F[after]  # exact: at most 15 digits (see _POW10_F)
            floats[k] = -v if negative else v
    return True, ints, floats


@cached_njit(nogil=True)
def _token_hash(b, starts, ends):
    """A 64-bit FNV-1a hash per row over its tokens in the given columns (a separator between
    them): equal rows hash equal, so distinct hashes prove distinct rows (_may_repeat)."""
    out = np.empty(starts.shape[0], np.uint64)
    prime = np.uint64(0x100000001B3)
    for k in range(starts.shape[0]):
        h = np.uint64(0xCBF29CE484222325)
        for c in range(starts.shape[1]):
            if c:
                h = (h ^ np.uint64(0x1F)) * prime
            for pos in range(starts[k, c], ends[k, c]):
                h = (h ^ np.uint64(b[pos])) * prime
        out[k] = h
    return out


def _token_bounds(chunk: bytes, first_line: int, n_columns: int, path, what: str, columns: str):
    """``(bytes, starts, ends, line numbers)`` of a chunk of whole lines: token ``[start, end)``
    per data line and column; a data line with another number of tokens is an error naming it.
    The bytes come back padded with zeros (a token's gather may run past the chunk's end)."""
    b = np.frombuffer(chunk, dtype=np.uint8)
    space = np.ones(len(b) + 2, dtype=bool)
    inner = space[1:-1]
    np.less_equal(b - np.uint8(9), 4, out=inner)  # 9..13 (tab, newline, vt, ff, cr) and space: bytes.split()
    inner |= b == 32
    token = ~space[1:-1]
    starts = np.flatnonzero(token & space[:-2])
    ends = np.flatnonzero(token & space[2:]) + 1
    newlines = np.flatnonzero(b == 10)
    # Tokens per line from where the newlines fall among the tokens (one search per line, not per token).
    bounds = np.empty(len(newlines) + 2, dtype=np.int64)
    bounds[0], bounds[-1] = 0, len(starts)
    bounds[1:-1] = np.searchsorted(starts, newlines)
    counts = np.diff(bounds)
    first = np.minimum(bounds[:-1], max(0, len(starts) - 1))
    comment = (counts > 0) & (b[starts[first]] == ord("#")) if len(starts) else np.zeros(len(counts), dtype=bool)
    data_line = (counts > 0) & ~comment
    bad = np.flatnonzero(data_line & (counts != n_columns))
    if len(bad):
        k = int(bad[0])
        raise InputError(path, f"line {first_line + k}: expected {n_columns} columns ({columns}), found {int(counts[k])}")
    if comment.any():
        keep = np.repeat(data_line, counts)
        starts, ends = starts[keep], ends[keep]
    padded = np.zeros(len(b) + 64, dtype=np.uint8)
    padded[: len(b)] = b
    return (padded, starts.reshape(-1, n_columns), ends.reshape(-1, n_columns),
            first_line + np.flatnonzero(data_line).astype(np.int64))


def _token_matrix(b: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Tokens as rows of a uint8 matrix, zero-padded to the longest (an ``S`` array's bytes)."""
    lengths = ends - starts
    width = max(1, int(lengths.max(initial=0)))
    offsets = np.arange(width)
    if width > 64:  # past the padding of b: clip (a rare long token)
        mat = b[np.minimum(starts[:, None] + offsets, len(b) - 1)]
    else:
        mat = b[starts[:, None] + offsets]
    mat *= offsets < lengths[:, None]
    return mat


def _as_str(mat: np.ndarray) -> np.ndarray:
    """A token matrix as a str array: ASCII widened in place of decoding, other UTF-8 decoded."""
    width = mat.shape[1]
    if mat.size and mat.max() >= 128:
        return as_text(np.ascontiguousarray(mat).view(f"S{width}").ravel())
    return np.ascontiguousarray(mat, dtype=np.uint32).view(f"U{width}").ravel()


def _numbers(b, starts, ends, kind: str, lines, path, what: str) -> np.ndarray:
    """A numeric column: decimal digits read vectorised when every token is a plain decimal
    (``-?digits`` for ints; ``-?digits[.digits]`` of at most 15 digits for floats, where one
    division by an exact power of ten is exactly what ``float`` reads); otherwise the general path
    (``_parse_numbers``: NumPy's cast, messages naming the line)."""
    fast = _decimal_ints(b, starts, ends) if kind == "int" else _decimal_floats(b, starts, ends)
    if fast is not None:
        return fast
    mat = _token_matrix(b, starts, ends)
    return _parse_numbers(mat.view(f"S{mat.shape[1]}").ravel(), lines, path, what,
                          np.int64 if kind == "int" else np.float64)


def _decimal_ints(b, starts, ends, limit: int = _MAX_FAST_INT_DIGITS) -> np.ndarray | None:
    """``-?digits`` tokens (at most ``limit`` digits) as int64, or None when one is not."""
    if len(starts) == 0:
        return None
    negative = b[starts] == ord("-")
    first = starts + negative
    lengths = ends - first
    width = int(lengths.max())
    if lengths.min() < 1 or width > limit:
        return None
    # Right-aligned, one row per weight: row j holds the digits of weight 10 ** (width - 1 - j)
    # (0 left of a token), contiguous for the sums below.
    index = ends[None, :] - width + np.arange(width)[:, None]
    digits = b[np.maximum(index, 0)] - np.uint8(ord("0"))
    digits *= index >= first[None, :]
    if digits.max() > 9:
        return None
    value = np.zeros(len(starts), dtype=np.int64)
    for j in range(width):
        value *= 10
        value += digits[j]
    return np.where(negative, -value, value)


def _decimal_floats(b, starts, ends) -> np.ndarray | None:
    """``-?digits[.digits]`` tokens of at most 15 digits as float64 (exactly ``float``'s value),
    or None when one is not."""
    if len(starts) == 0:
        return None
    whole = _decimal_ints(b, starts, ends, _MAX_FAST_FLOAT_DIGITS)
    if whole is not None:  # no point anywhere: integers, exact in float64 ("-0" is -0.0)
        x = whole.astype(np.float64)
        return np.where(b[starts] == ord("-"), -np.abs(x), x)
    mat = _token_matrix(b, starts, ends)
    width = mat.shape[1]
    length = ends - starts
    negative = mat[:, 0] == ord("-")
    live = np.arange(width) < length[:, None]
    live[:, 0] &= ~negative
    digit = live & (mat >= ord("0")) & (mat <= ord("9"))
    point = live & (mat == ord("."))
    if (point.sum(axis=1) > 1).any() or (live & ~digit & ~point).any():
        return None
    n_digits = digit.sum(axis=1)
    if n_digits.min() == 0 or n_digits.max() > _MAX_FAST_FLOAT_DIGITS:
        return None
    right = n_digits[:, None] - np.cumsum(digit, axis=1)  # digits to the right of each
    value = np.where(digit, (mat.astype(np.int64) - ord("0")) * _POW10_I[np.where(digit, right, 0)], 0).sum(axis=1)
    after = (digit & (np.cumsum(point, axis=1) > 0)).sum(axis=1)
    x = value.astype(np.float64) / _POW10_F[after]
    return np.where(negative, -x, x)


def _row_hash(mats: list[np.ndarray]) -> np.ndarray:
    """A 64-bit FNV-1a hash per row over the bytes of several token matrices (a separator
    between them): equal rows hash equal, so distinct hashes prove distinct rows."""
    with np.errstate(over="ignore"):
        h = np.full(mats[0].shape[0], 0xCBF29CE484222325, dtype=np.uint64)
        prime = np.uint64(0x100000001B3)
        for g, mat in enumerate(mats):
            if g:
                h = (h ^ np.uint64(0x1F)) * prime
            for j in range(mat.shape[1]):
                h = (h ^ mat[:, j].astype(np.uint64)) * prime
    return h


def _may_repeat(hashes: np.ndarray) -> bool:
    """Whether two rows share a hash (then the exact check runs; distinct hashes: all distinct)."""
    h = np.sort(hashes)
    return bool(len(h) > 1 and (h[1:] == h[:-1]).any())


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
    (fid, iid, pat, mat, sex, pheno), lines, (key_hash,) = _read_columns(
        path, ".fam", "FID, IID, father, mother, sex, phenotype", ("text",) * 6, {}, hashed=((0, 1),))
    if len(lines) == 0:
        raise InputError(
            path, "the .fam file is empty: expected one line per sample (FID, IID, father, mother, sex, phenotype)"
        )
    if _may_repeat(key_hash):
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
    from gboost.readers.pheno import check_regular_file

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
    hint = "truncated (an interrupted copy or write?)" if size < expected else "larger than expected"
    body = size - BED_HEADER_LEN
    if bytes_per_snp and body >= 0:
        whole, left = divmod(body, bytes_per_snp)
        # Whole SNPs and what is left: a count rounded to the .bim's would hide the missing bytes.
        fits = (f"its size holds exactly {whole} SNPs of {n_samples} samples" if left == 0 else
                f"its size holds {whole} whole SNPs of {n_samples} samples and {left} byte{'s' if left != 1 else ''} "
                f"of another")
    else:
        fits = f"it is shorter than the {BED_HEADER_LEN}-byte header" if body < 0 else "the .fam lists no sample"
    return (
        f"the .bed is {size} bytes but {n_snps} SNPs ({os.path.basename(bim)}) x {n_samples} samples "
        f"({os.path.basename(fam)}) need 3 + {n_snps} x {bytes_per_snp} = {expected} bytes; it is {hint}, "
        f"or the .bim/.fam do not belong to it ({fits})"
    )
