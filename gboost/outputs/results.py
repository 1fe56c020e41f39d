"""Writers for the outputs of docs/DESIGN.md §3.4, all written atomically.

``pairs.epi.cc`` and ``pairs.epi.cc.summary`` reproduce PLINK 1.9's files byte for byte: the same
rows, column widths and number formats (6 significant digits for STAT, 4 for P, PROP and
BEST_CHISQ; SNP columns as wide as PLINK makes them from the longest SNP ID of the input).
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import platform
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from gboost.version import __version__
from gboost.readers.plink_format import chrom_number, plink_g
from gboost.stats.marginal import minor_allele_frequency
from gboost.stats.pvalues import chi2_sf

def ipf_cap_hits(result) -> int:
    """Screened pairs whose exact test stopped at the IPF safety cap instead of PLINK's rule."""
    return int((~result.screened.converged & (result.screened.df > 0)).sum())


def plink_chrom(code: str) -> str:
    """Chromosome as PLINK 1.9 prints it: numeric, 'chr' prefix dropped, X/Y/XY/MT as 23-26
    (``plink_format.chrom_number``). A name PLINK does not know (a contig, ``chrUn_gl000220``,
    ``001``) is printed whole, prefix and all, as plink1.9 --allow-extra-chr does."""
    c = str(code)
    number = chrom_number(c)
    return c if number is None else str(number)


def clear_low_bits(x: float) -> float:
    """PLINK keeps a pair's DF in the 2 low mantissa bits of STAT and clears them before printing
    STAT and computing its P; we do the same so the printed digits agree even on rounding ties."""
    if not math.isfinite(x):
        return x
    bits = struct.unpack("<q", struct.pack("<d", x))[0] & ~3
    return struct.unpack("<d", struct.pack("<q", bits))[0]


def plink_p(stat: float, df: int) -> float:
    """P as PLINK prints it: from the cleared STAT; a negative STAT (round-off below 0) makes
    DCDFLIB fail and PLINK print 0 (our pairs.tsv keeps the correct P = 1 for such pairs)."""
    s = clear_low_bits(stat)
    if s < 0:
        return 0.0
    return chi2_sf(s, int(df))


def _g(x: float, digits: int) -> str:
    """PLINK's %g-style numbers; non-finite values as PLINK writes them."""
    if x is None or math.isnan(x):
        return "NA"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:.{digits}g}"


class SnpTexts:
    """Every SNP's text fields as the compiled row writers take them, made once per study (each
    when first asked for) and shared by the four files: CHR, SNP, A1, A2 as
    :func:`gboost.readers.fastnum.ragged` UTF-8 buffers (pairs.tsv, marginal.tsv), and PLINK's
    chromosome codes and IDs padded to 4 and W bytes (never truncated) for .epi.cc and .summary.
    The codes go through :func:`plink_chrom` once per distinct chromosome, not once per SNP;
    padding is a compiled pass over the ragged buffers."""

    def __init__(self, study):
        self.study = study
        self.w = study.snp_id_width

    def ready(self) -> "SnpTexts":
        """Every field made now (on a background thread, before the writer needs them)."""
        for name in ("chrom", "snp", "a1", "a2", "plink_chrom", "plink_snp", "pairs"):
            getattr(self, name)
        return self

    def _ragged(self, name: str) -> tuple:
        from gboost.readers.fastnum import ragged

        return ragged(getattr(self.study.variants, name))

    @cached_property
    def pairs(self) -> tuple:
        """pairs.tsv's per-SNP texts (gboost/readers/fastnum.py pair_texts)."""
        from gboost.readers.fastnum import pair_texts

        return pair_texts(self.chrom, self.snp, self.study.variants.bp)

    chrom = cached_property(lambda self: self._ragged("chrom"))
    snp = cached_property(lambda self: self._ragged("snp"))
    a1 = cached_property(lambda self: self._ragged("a1"))
    a2 = cached_property(lambda self: self._ragged("a2"))

    @cached_property
    def plink_chrom(self) -> tuple:
        from gboost.readers.fastnum import ragged
        from gboost.readers.plink_text import pad_ragged

        chroms = np.asarray(self.study.variants.chrom).tolist()
        code = {c: plink_chrom(c) for c in dict.fromkeys(chroms)}
        same = all(str(c) == k for c, k in code.items())
        return pad_ragged(self.chrom if same else ragged([code[c] for c in chroms]), 4)

    @cached_property
    def plink_snp(self) -> tuple:
        from gboost.readers.plink_text import pad_ragged

        return pad_ragged(self.snp, self.w)


def plink_fields(study) -> tuple:
    """Every SNP's chromosome code and ID as PLINK pads them in .epi.cc and .summary (4 and W
    bytes, never truncated; gboost/readers/plink_text.py padded), as the compiled writers take them."""
    t = SnpTexts(study)
    return t.plink_chrom, t.plink_snp


def epi_cc_bytes(result, fields: tuple | None = None) -> bytes:
    """PLINK's .epi.cc (docs/plink_boost_notes.md §5) as bytes; rows by gboost/readers/plink_text.py's
    compiled writer, equal byte for byte to :func:`format_epi_cc_rowwise` (the tests hold them
    equal). ``fields``: :func:`plink_fields` of the study, when already made."""
    from gboost.readers.plink_text import epi_cc_rows

    s = result.study
    pr = result.screened
    chrom, snp = fields or plink_fields(s)
    return _epi_cc_header(s.snp_id_width) + epi_cc_rows(pr.i, pr.j, pr.stat, pr.df, chrom, snp)


def _epi_cc_header(w: int) -> bytes:
    return f"{'CHR1':>4} {'SNP1':>{w}} {'CHR2':>4} {'SNP2':>{w}} {'STAT':>12} {'DF':>4} {'P':>12} \n".encode()


def _summary_header(w: int) -> bytes:
    return (f"{'CHR':>4} {'SNP':>{w}} {'N_SIG':>12} {'N_TOT':>12} {'PROP':>12} {'BEST_CHISQ':>12} "
            f"{'BEST_CHR':>4} {'BEST_SNP':>{w}} \n").encode()


def format_epi_cc(result) -> str:
    return epi_cc_bytes(result).decode("utf-8")


def summary_bytes(result, fields: tuple | None = None) -> bytes:
    """PLINK's .epi.cc.summary (docs/plink_boost_notes.md §6) by the compiled writer, equal byte
    for byte to :func:`format_summary_rowwise`."""
    from gboost.readers.plink_text import summary_rows

    s = result.study
    w = s.snp_id_width
    sm = result.summary
    chrom, snp = fields or plink_fields(s)
    n, first = summary_span(s)
    return _summary_header(w) + summary_rows(chrom, snp, w, sm.n_sig[:n], sm.n_tot[:n], sm.best[:n],
                                             sm.best_partner[:n], first)


def summary_span(study) -> tuple[int, int]:
    """The SNPs [0, n) the .summary lists and the partner it names where no value is above 0: every
    SNP and the first; a candidate-set scan's rows and its first column (gboost/data/candidates.py)."""
    rect = getattr(study, "rect", None)
    return (study.n_snps, 0) if rect is None else (rect.n_rows, rect.n_rows)


def format_summary(result) -> str:
    return summary_bytes(result).decode("utf-8")


def _rj(text: str, width: int) -> str:
    """Right-justified to ``width`` bytes as PLINK pads (a non-ASCII ID takes its UTF-8 length)."""
    return " " * (width - len(text.encode("utf-8"))) + text


def format_epi_cc_rowwise(result) -> str:
    """The reference writer, one row at a time in Python (what the compiled one must equal)."""
    s = result.study
    w = s.snp_id_width
    chrom = [plink_chrom(c) for c in s.variants.chrom]
    snp = s.variants.snp
    pr = result.screened
    lines = [f"{'CHR1':>4} {'SNP1':>{w}} {'CHR2':>4} {'SNP2':>{w}} {'STAT':>12} {'DF':>4} {'P':>12} \n"]
    for a, b, st, df, p in zip(pr.i, pr.j, pr.stat, pr.df, pr.p):
        if df <= 0:
            continue
        st_print = clear_low_bits(float(st))
        lines.append(f"{_rj(chrom[a], 4)} {_rj(snp[a], w)} {_rj(chrom[b], 4)} {_rj(snp[b], w)} "
                     f"{plink_g(st_print, 6):>12} {int(df):>4} {plink_g(plink_p(float(st), int(df)), 4):>12} \n")
    return "".join(lines)


def format_summary_rowwise(result) -> str:
    """The reference .summary writer, one row at a time in Python."""
    s = result.study
    w = s.snp_id_width
    chrom = [plink_chrom(c) for c in s.variants.chrom]
    snp = s.variants.snp
    sm = result.summary
    lines = [f"{'CHR':>4} {'SNP':>{w}} {'N_SIG':>12} {'N_TOT':>12} {'PROP':>12} {'BEST_CHISQ':>12} "
             f"{'BEST_CHR':>4} {'BEST_SNP':>{w}} \n"]
    n_rows, first = summary_span(s)
    for k in range(n_rows):
        n_tot = int(sm.n_tot[k])
        # PLINK multiplies by a reciprocal; on halfway cases (7/320) that rounds differently.
        prop = sm.n_sig[k] * (1.0 / n_tot) if n_tot else math.nan
        b, z = int(sm.best_partner[k]), float(sm.best[k])
        if n_tot == 0:
            best = f"{'NA':>12} {'NA':>4} {'NA':>{w}}"
        else:
            if b < 0 or z <= 0.0:
                # PLINK starts from BEST = 0 at the first scanned SNP and only accepts z > 0.
                b, z = first, 0.0
            best = f"{plink_g(z, 4):>12} {_rj(chrom[b], 4)} {_rj(snp[b], w)}"
        lines.append(f"{_rj(chrom[k], 4)} {_rj(snp[k], w)} {int(sm.n_sig[k]):>12} {n_tot:>12} {plink_g(prop, 4):>12} {best} \n")
    return "".join(lines)


PAIRS_COLUMNS = ("CHR1", "SNP1", "BP1", "CHR2", "SNP2", "BP2", "KSA", "STAT", "DF", "P", "Q", "R2", "DIST")


def format_pairs_tsv(result) -> str:
    """pairs.tsv: docs/DESIGN.md §3.4's columns, then Q (Benjamini-Hochberg), R2 (genotypic r^2 of
    the two SNPs) and DIST (bp apart; NA across chromosomes), so pairs in LD can be set apart."""
    return format_pairs(result.study.variants, result.reported)


def format_pairs(v, pr) -> str:
    """pairs.tsv text (header included) for any :class:`gboost.pipeline.scan.Pairs` over variants ``v``
    (the GUI formats the rows it shows with it)."""
    return pairs_bytes(v, pr).decode("utf-8")


def pairs_bytes(v, pr) -> bytes:
    """pairs.tsv as bytes, equal to :func:`format_pairs_rowwise` (compiled rows, gboost/readers/fastnum.py)."""
    return pairs_header(pr) + b"".join(f() for f in pairs_pieces(v, pr, snp_texts(v), 1))


def pairs_header(pr) -> bytes:
    adj = ("STAT_ADJ", "DF_ADJ", "P_ADJ") if pr.adj is not None else ()
    emp2 = ("EMP2",) if getattr(pr, "emp2", None) is not None else ()
    return ("\t".join(PAIRS_COLUMNS + adj + emp2) + "\n").encode()


def with_last_column(rows: np.ndarray, values: np.ndarray, digits: int = 6) -> np.ndarray:
    """pairs.tsv rows (bytes, each ending in a newline) with one more column, ``values`` (%g of
    ``digits``, NA for NaN) before each newline: --perm's EMP2 (gboost/pipeline/permute.py)."""
    from gboost.readers.fastnum import _float_columns

    m = len(values)
    fmat, flen = _float_columns([(values, digits, "NA")], m)
    ends = np.flatnonzero(rows == 10)
    if len(ends) != m:
        raise ValueError(f"{len(ends)} rows for {m} values")
    width = flen[0] + 1
    cell = np.zeros((m, fmat.shape[2] + 1), np.uint8)
    cell[:, 0] = 9
    cell[:, 1:] = fmat[0]
    keep = np.arange(cell.shape[1])[None, :] < width[:, None]
    return np.insert(rows, np.repeat(ends, width), cell[keep])


def snp_texts(v) -> tuple:
    """What pairs.tsv's rows take of every SNP (gboost/readers/fastnum.py pair_texts), once per variant
    table: the rows gather it by index."""
    from gboost.readers.fastnum import pair_texts, ragged

    return pair_texts(ragged(v.chrom), ragged(v.snp), v.bp)


def pairs_pieces(v, pr, texts: tuple, pieces: int, min_rows: int = 20000, rows: np.ndarray | None = None,
                 q: np.ndarray | None = None) -> list:
    """pairs.tsv's rows in up to ``pieces`` runs of at least ``min_rows``: functions returning the
    bytes of their run (uint8 arrays), each formatting it in compiled passes that release the GIL
    (so runs format side by side on threads). ``rows``: the rows of ``pr`` to write, in order
    (default all), with their q values ``q`` (default ``pr.q``): the writer passes
    ScanResult.reported_rows and the screened pairs, so no pair is copied first."""
    from gboost.readers.fastnum import pairs_rows_array

    from gboost.stats.multiple import r2_at

    rows = np.arange(len(pr)) if rows is None else np.asarray(rows, np.int64)
    if q is None:
        q = pr.q if pr.q is not None else np.full(len(rows), np.nan)
    m = len(rows)
    adj = pr.adj
    emp2 = getattr(pr, "emp2", None)

    def piece(a: int, b: int):
        def run() -> np.ndarray:
            r = rows[a:b]
            r2 = r2_at(pr.tables, r)  # (Pairs.r2 of these rows)
            floats = _pairs_floats(pr.ksa[r], pr.stat[r], pr.p[r], r2, q[a:b])
            if adj is not None:
                floats += [(adj[0][r], 8, "NA"), (adj[2][r], 6, "NA")]
            out = pairs_rows_array(pr.i[r], pr.j[r], texts, pr.df[r], floats, None if adj is None else adj[1][r])
            if emp2 is not None:
                out = with_last_column(out, emp2[r])
            return out
        return run

    return [piece(a, b) for a, b in _runs(m, pieces, min_rows)]


def _pairs_floats(ksa, stat, p, r2, q=None) -> list:
    """pairs.tsv's float columns as fastnum.pairs_rows_array takes them (values, %g digits, text of
    a NaN): KSA, STAT and P to 10 digits, Q to 6, R2 to 4. Without ``q`` the Q column is left out, for
    rows formatted with a hole where splice_q puts it (format_block)."""
    cols = [(ksa, 10, None), (stat, 10, None), (p, 10, None)]
    if q is not None:
        cols.append((q, 6, "NA"))
    return cols + [(r2, 4, "NA")]


def _runs(m: int, pieces: int, min_rows: int) -> list[tuple[int, int]]:
    """[a, b) runs of ``m`` rows for a file's pieces: up to ``pieces``, of ``min_rows`` at least
    where there are enough rows (one run otherwise)."""
    cuts = np.linspace(0, m, max(1, min(pieces, m // max(1, min_rows) + 1)) + 1).astype(int)
    return [(int(a), int(b)) for a, b in zip(cuts, cuts[1:])]


@dataclass
class FormattedBlock:
    """One row block's output rows, formatted beside the screen (gboost/pipeline/hostwork.py): its
    ``pairs`` screened pairs' .epi.cc rows, and pairs.tsv's rows of the ``kept`` of them with
    P <= epi1, without Q (``holed``: bytes and marks for gboost/readers/fastnum.py splice_q), with the
    seconds each took."""

    pairs: int
    kept: int
    epi_cc: np.ndarray
    holed: tuple
    epi_cc_s: float
    pairs_s: float


def format_block(texts: "SnpTexts", block: tuple, epi1: float) -> FormattedBlock:
    """:class:`FormattedBlock` of a row block's sorted, tested survivors ``block`` (the fields of
    :class:`gboost.pipeline.scan.Pairs`, in its order): the same bytes the writer's pieces give those rows."""
    from gboost.readers.fastnum import pairs_rows_array
    from gboost.readers.plink_text import epi_cc_pieces
    from gboost.stats.multiple import r2_at

    i, j, ksa, stat, df, p, _conv, tables = block
    t0 = time.perf_counter()
    epi = epi_cc_pieces(i, j, stat, df, texts.plink_chrom, texts.plink_snp)[0]()
    t1 = time.perf_counter()
    keep = np.flatnonzero(p <= epi1)
    floats = _pairs_floats(ksa[keep], stat[keep], p[keep], r2_at(tables, keep))
    holed = pairs_rows_array(i[keep], j[keep], texts.pairs, df[keep], floats, holed=True)
    return FormattedBlock(len(i), len(keep), epi, holed, t1 - t0, time.perf_counter() - t1)


def _formatted(result, kept: np.ndarray) -> list | None:
    """The row blocks formatted beside the screen (``result.prepared["formatted"]``), where they
    are every screened pair's and hold the rows ``kept`` (P <= epi1); else None (the writer
    formats every row)."""
    blocks = (getattr(result, "prepared", None) or {}).get("formatted")
    if not blocks:
        return None
    if sum(b.pairs for b in blocks) != len(kept) or sum(b.kept for b in blocks) != int(kept.sum()):
        return None
    return blocks


def _join_holed(blocks: list, kept: np.ndarray) -> tuple:
    """The blocks' holed pairs.tsv rows as one (bytes, marks), and each screened row's index
    among them (``kept``: the rows with P <= epi1)."""
    bufs = [b.holed[0] for b in blocks]
    base = np.cumsum([0] + [len(x) for x in bufs[:-1]], dtype=np.int64)
    marks = np.concatenate([b.holed[1] + o for b, o in zip(blocks, base)]) if blocks else np.zeros((0, 2), np.int64)
    rank = np.cumsum(kept, dtype=np.int64) - 1
    return (np.concatenate(bufs) if bufs else np.zeros(0, np.uint8), marks), rank


def spliced_pieces(joined, rows: np.ndarray, q: np.ndarray, pieces: int, min_rows: int = 20000) -> list:
    """pairs.tsv's rows ``rows`` (of the screened pairs, in order) with their q values ``q``, from
    the formatted blocks (``joined``: a future of :func:`_join_holed`'s value, made on the pool
    first), in up to ``pieces`` runs as :func:`pairs_pieces` returns them."""
    from gboost.readers.fastnum import splice_q

    m = len(rows)

    def piece(a: int, b: int):
        def run() -> np.ndarray:
            holed, rank = joined.result()[0]
            return splice_q(rank[rows[a:b]], holed, q[a:b])
        return run

    return [piece(a, b) for a, b in _runs(m, pieces, min_rows)]


def format_pairs_rowwise(v, pr) -> str:
    """The reference pairs.tsv writer, one row at a time (what :func:`format_pairs` must equal)."""
    q = pr.q if pr.q is not None else np.full(len(pr), np.nan)
    r2 = pr.r2
    adj = pr.adj
    lines = ["\t".join(PAIRS_COLUMNS + (("STAT_ADJ", "DF_ADJ", "P_ADJ") if adj is not None else ())) + "\n"]
    for n, (a, b, k, st, df, p) in enumerate(zip(pr.i, pr.j, pr.ksa, pr.stat, pr.df, pr.p)):
        dist = str(abs(int(v.bp[b]) - int(v.bp[a]))) if v.chrom[a] == v.chrom[b] else "NA"
        extra = f"\t{_g(adj[0][n], 8)}\t{int(adj[1][n])}\t{_g(adj[2][n], 6)}" if adj is not None else ""
        lines.append(f"{v.chrom[a]}\t{v.snp[a]}\t{v.bp[a]}\t{v.chrom[b]}\t{v.snp[b]}\t{v.bp[b]}\t"
                     f"{k:.10g}\t{st:.10g}\t{int(df)}\t{p:.10g}\t{_g(q[n], 6)}\t{_g(r2[n], 4)}\t{dist}{extra}\n")
    return "".join(lines)


def format_marginal_tsv(result) -> str:
    return marginal_tsv_bytes(result).decode("utf-8")


MARGINAL_HEADER = b"CHR\tSNP\tBP\tA1\tA2\tMAF\tSTAT\tP\n"


def marginal_tsv_bytes(result) -> bytes:
    """marginal.tsv by compiled rows (equal to :func:`format_marginal_tsv_rowwise`)."""
    return MARGINAL_HEADER + b"".join(f() for f in marginal_pieces(result.study, result.marginal_stat,
                                                                   result.marginal_p, SnpTexts(result.study), 1))


@dataclass(frozen=True)
class _MarginalView:
    """What marginal.tsv's rows read of a study (:func:`marginal_pieces`), for a selection of its SNPs."""

    variants: object
    counts: np.ndarray
    snp_id_width: int
    rect = None

    @property
    def n_snps(self) -> int:
        return len(self.counts)


def marginal_pieces(study, stat, p, texts: SnpTexts, pieces: int, min_rows: int = 20000) -> list:
    """marginal.tsv's rows (after the header) of ``study`` with the marginal tests' ``stat`` and
    ``p``, in up to ``pieces`` runs of SNPs, as functions returning their bytes (uint8 arrays),
    compiled passes that release the GIL."""
    from gboost.readers.fastnum import marginal_rows_array

    if getattr(study, "rect", None) is not None:
        # A rectangle study holds a SNP that is both row and column twice (row SNPs first):
        # marginal.tsv lists each scanned SNP once, in file order (gboost/data/candidates.py).
        keep = study.rect.distinct()
        study = _MarginalView(study.variants.take(keep), np.ascontiguousarray(study.counts[keep]),
                              study.snp_id_width)
        stat, p, texts = np.asarray(stat)[keep], np.asarray(p)[keep], SnpTexts(study)
    n = study.n_snps
    bp = np.ascontiguousarray(study.variants.bp, np.int64)
    fields = (texts.chrom, texts.snp, texts.a1, texts.a2)

    def piece(a: int, b: int):
        def run() -> np.ndarray:
            maf = minor_allele_frequency(study.counts[a:b])
            return marginal_rows_array(a, b, fields, bp, [(maf, 6, "NA"), (stat[a:b], 8, "NA"), (p[a:b], 6, "NA")])
        return run

    return [piece(a, b) for a, b in _runs(n, pieces, min_rows) if b > a]


def prepare_outputs(study, marginal) -> dict:
    """What the outputs need of the study alone, made ahead (gboost/pipeline/hostwork.py runs this beside
    a GPU screen): the SNP texts (:class:`SnpTexts`, every field) and marginal.tsv's rows
    (``marginal``: the marginal tests' (stat, p, df)), with the seconds the rows took."""
    texts = SnpTexts(study).ready()
    t = time.perf_counter()
    rows = [f() for f in marginal_pieces(study, marginal[0], marginal[1], texts, 1)]
    return {"texts": texts, "marginal.tsv": (rows, time.perf_counter() - t)}


def format_marginal_tsv_rowwise(result) -> str:
    s = result.study
    v = s.variants
    maf = minor_allele_frequency(s.counts)
    lines = ["CHR\tSNP\tBP\tA1\tA2\tMAF\tSTAT\tP\n"]
    for k in (range(s.n_snps) if s.rect is None else s.rect.distinct().tolist()):
        lines.append(f"{v.chrom[k]}\t{v.snp[k]}\t{v.bp[k]}\t{v.a1[k]}\t{v.a2[k]}\t{_g(maf[k], 6)}\t"
                     f"{_g(result.marginal_stat[k], 8)}\t{_g(result.marginal_p[k], 6)}\n")
    return "".join(lines)


def _sha256_now(path: str) -> str:
    t = time.perf_counter()
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 22), b""):
            h.update(chunk)  # (hashlib releases the GIL on large chunks: a background thread is free)
    _HASHED[os.path.abspath(path)] = time.perf_counter() - t
    return h.hexdigest()


_HASHING: dict = {}
_HASHED: dict = {}  # path -> seconds its SHA-256 took (on whichever thread)


def start_hashing(paths) -> None:
    """Hash the input files on a background thread while the scan runs (a 600 MB .bed takes ~1.5
    s of SHA-256); run.json then only waits for what is not done yet."""
    from concurrent.futures import ThreadPoolExecutor

    todo = [os.path.abspath(p) for p in paths if os.path.isfile(p) and os.path.abspath(p) not in _HASHING]
    if not todo:
        return
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gboost-sha256")
    for p in todo:
        _HASHING[p] = pool.submit(_sha256_now, p)
    pool.shutdown(wait=False)


def _sha256(path: str) -> str:
    fut = _HASHING.pop(os.path.abspath(path), None)
    return fut.result() if fut is not None else _sha256_now(path)


def run_record(result, extra: dict | None = None) -> dict:
    """Provenance for run.json: what ran, on what, with which inputs and parameters, and counts.
    A CLI scan's result carries its :class:`gboost.pipeline.stages.StageClock` (``command_clock``): its
    stages end here, so ``command_s`` covers the command up to this file."""
    s = result.study
    params = {k: v for k, v in result.params.__dict__.items()}
    clock = getattr(result, "command_clock", None)
    if clock is not None:
        clock.lap("write_outputs")
    inputs = {os.path.abspath(f): _sha256(f) for f in s.source_files if os.path.isfile(f)}
    if clock is not None:
        clock.lap("inputs_sha256_wait")  # what the background hashing had not finished by now
        clock.background["inputs_sha256"] = sum(_HASHED.values())
        clock.end_stages()  # the command's last work (the CLI: the GPUs' contexts ended)
    return {
        "gboost_version": __version__,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "python": platform.python_version(),
        "host": platform.node(),
        "engine": result.engine,
        "device": result.device,
        "parameters": params,
        "thresholds": {
            "screen_chisq_by_df": {str(d): float(result.thresholds.screen[d]) for d in (1, 2, 4)},
            "summary_chisq_by_df": {str(d): float(result.thresholds.summary[d]) for d in (1, 2, 4)},
        },
        "inputs": inputs,
        "counts": {
            "snps": s.n_snps,
            "samples": s.n_samples,
            "cases": s.layout.n_case,
            "controls": s.layout.n_ctrl,
            "pairs": s.n_snps * (s.n_snps - 1) // 2 if s.rect is None else s.rect.n_pairs(),
            "valid_tests": int(result.n_valid),
            "screened_survivors": int(len(result.screened)),
            "reported_pairs": int(result.n_reported),
            # pairs whose IPF reached the safety cap (gboost.stats.boost.IPF_MAX_SWEEPS); 0 on every study seen
            "ipf_safety_cap_hits": ipf_cap_hits(result),
        },
        "bonferroni_0.05": result.bonferroni,
        "calibration": result.calibration.as_dict() if result.calibration is not None else None,
        **({"permutations": perm.as_dict()} if (perm := getattr(result, "perm", None)) is not None else {}),
        "covariates": result.covariate_names,
        # a candidate-set scan (gboost/data/candidates.py): its mode, sets, rows and columns
        "sets": None if s.rect is None else {"mode": s.rect.mode, "names": list(s.rect.names),
                                             "rows": int(s.rect.n_rows), "columns": int(s.rect.n_cols)},
        "qc": s.qc.as_dict(),
        "timings_s": {k: round(v, 6) for k, v in result.timings.items()},
        **({"engine_info": info} if (info := getattr(result, "engine_info", None)) else {}),
        **({"command_s": clock.as_dict()} if clock is not None else {}),
        **(extra or {}),
    }


PERM_COLUMNS = ("PERM", "STAT", "DF", "P", "CHR1", "SNP1", "BP1", "CHR2", "SNP2", "BP2")


def perm_tsv_bytes(study, perm) -> bytes:
    """perm.tsv: each permutation (1-based), its maximum STAT (10 digits, as pairs.tsv prints STAT),
    DF and P (the exact P pairs.tsv gives a pair of that STAT: PermResult.p_value), and that pair's
    SNPs (NA where the study had no valid pair); ``perm`` a gboost.pipeline.permute.PermResult, of
    either trait."""
    import math

    v = study.variants
    lines = ["\t".join(PERM_COLUMNS)]
    for m in perm.maxima:
        if math.isnan(m.stat):
            lines.append("\t".join([str(m.k + 1)] + ["NA"] * (len(PERM_COLUMNS) - 1)))
            continue
        lines.append("\t".join([str(m.k + 1), f"{m.stat:.10g}", str(m.df), f"{perm.p_value(m.stat, m.df):.10g}",
                                str(v.chrom[m.i]), str(v.snp[m.i]), str(int(v.bp[m.i])),
                                str(v.chrom[m.j]), str(v.snp[m.j]), str(int(v.bp[m.j]))]))
    return ("\n".join(lines) + "\n").encode()


OUTPUT_FILES = ("pairs.tsv", "pairs.epi.cc", "pairs.epi.cc.summary", "marginal.tsv", "run.json")


def render_outputs(result, extra: dict | None = None) -> dict[str, str]:
    """The five outputs' texts (run.json rendered after the others, so it holds their timings)."""
    out = render_lazily(result, extra)
    return {name: b"".join(v).decode("utf-8") if name != "run.json" else v() for name, v in out.items()}


_PIECE_ROWS = 8192  # the fewest rows a run of rows gets (tests lower it to cut small files often)


class FilePool:
    """One pool of ``threads`` threads on which output files are formatted in runs of rows
    (gboost/outputs/results.py for a case-control scan, gboost/outputs/qt_results.py for a QT scan): each
    run is a function returning its bytes by compiled passes that release the GIL, so runs of all
    files format side by side. A context manager (the threads end on exit); :meth:`streamed`
    hands the files over while their runs still format, and ends the threads itself."""

    def __init__(self, threads: int | None = None):
        from concurrent.futures import ThreadPoolExecutor

        self.threads = max(1, threads or os.cpu_count() or 1)
        self._pool = ThreadPoolExecutor(max_workers=self.threads, thread_name_prefix="gboost-format")
        self._files: dict = {}  # name -> (header, [future of (bytes, s, end)], seconds spent before)

    def __enter__(self) -> "FilePool":
        return self

    def __exit__(self, *exc) -> None:
        self.close(cancel=exc[0] is not None)

    def close(self, cancel: bool = False) -> None:
        self._pool.shutdown(wait=True, cancel_futures=cancel)

    def pieces(self, rows: int) -> int:
        """How many runs a file of ``rows`` rows is cut into: a few per thread, so that files of
        unequal size balance on the pool, none under ~8k rows (a run's fixed cost, a few Python
        calls, stays far below its compiled work)."""
        return max(1, min(4 * self.threads, rows // _PIECE_ROWS + 1))

    def submit(self, fn):
        """``fn()`` on the pool, timed: a future of (its value, seconds, when it ended)."""
        return self._pool.submit(_timed, fn)

    def add(self, name: str, head: bytes, runs: list, seconds: float = 0.0) -> None:
        """File ``name``: ``head`` then the bytes of ``runs`` (functions, formatted on the pool),
        in order; ``seconds``: formatting already spent on it elsewhere (counted in its time)."""
        self._files[name] = (head, [self.submit(f) for f in runs], seconds)

    def add_done(self, name: str, buffers: list, seconds: float) -> None:
        """File ``name`` formatted already (``buffers`` in order, header included)."""
        self._files[name] = (None, buffers, seconds)

    def results(self) -> dict:
        """name -> (buffers in order, header first; seconds of formatting summed over its runs)."""
        done = {}
        for name, (head, runs, seconds) in self._files.items():
            if head is None:
                done[name] = (runs, seconds)
                continue
            parts = [f.result() for f in runs]
            done[name] = ([head] + [p[0] for p in parts], seconds + sum(p[1] for p in parts))
        return done

    def streamed(self) -> tuple[dict, Callable[[], tuple[dict, float]]]:
        """Each file as an iterator of its buffers that waits for each run as it is formatted (so
        write_files writes, and the kernel puts on disk, a file's first runs while the pool formats
        the rest), and a function to call once they are consumed: it ends the pool and returns
        (name -> (byte count, seconds of formatting), when the last run ended)."""
        def buffers(head, runs):
            if head is None:
                yield from runs
                return
            yield head
            for f in runs:
                yield f.result()[0]

        iters = {name: buffers(head, runs) for name, (head, runs, _) in self._files.items()}

        def finish() -> tuple[dict, float]:
            self.close()
            info, last = {}, 0.0
            for name, (head, runs, seconds) in self._files.items():
                if head is None:
                    info[name] = (sum(len(b) for b in runs), seconds)
                    continue
                parts = [f.result() for f in runs]
                info[name] = (len(head) + sum(len(p[0]) for p in parts), seconds + sum(p[1] for p in parts))
                last = max([last] + [p[2] for p in parts])
            return info, last

        return iters, finish


def _timed(fn):
    t = time.perf_counter()
    out = fn()
    end = time.perf_counter()
    return out, end - t, end


def _file_times(result, name: str, dt: float, size: int) -> None:
    result.timings[f"format_{name}"] = dt
    clock = getattr(result, "command_clock", None)
    if clock is not None:
        clock.files[name] = {"format": dt, "bytes": size}


def _run_json_after(result, run_json, write_times: dict | None, before=None):
    """run.json's renderer for write_files: ``before()`` first (where given), then each file's
    write seconds into the clock, then ``run_json()``."""
    def rendered() -> str:
        if before is not None:
            before()
        clock = getattr(result, "command_clock", None)
        if clock is not None:
            for name, dt in (write_times or {}).items():
                if name in clock.files:
                    clock.files[name]["write"] = dt
        return run_json()

    return rendered


def files_for_writer(result, done: dict, names, run_json, write_times: dict | None = None) -> dict:
    """write_files' dict from :meth:`FilePool.results` (``names``: the data files, in order) and
    ``run_json`` (a function rendering run.json, called once the others are written). Each file's
    seconds of formatting go to ``result.timings`` ("format_<file>") and, with the command's
    clock, its bytes and its write seconds (``write_times``, filled by write_files) too."""
    clock = getattr(result, "command_clock", None)
    out = {}
    for name in names:
        buffers, dt = done[name]
        _file_times(result, name, dt, sum(len(b) for b in buffers))
        out[name] = buffers
    if clock is not None:
        clock.lap("format_outputs")  # the files' formatting, side by side
    out["run.json"] = _run_json_after(result, run_json, write_times)
    return out


def streamed_for_writer(result, pool: FilePool, names, run_json, write_times: dict | None = None) -> dict:
    """write_files' dict of iterators (:meth:`FilePool.streamed`): the files are written while they
    format; once they are on disk (run.json's turn) the pool ends, each file's formatting seconds
    and bytes are recorded as in :func:`files_for_writer`, and the clock's "format_outputs" stage
    is the wait for the last run (``StageClock.lap_at``)."""
    iters, finish = pool.streamed()

    def account() -> None:
        info, last = finish()
        for name in names:
            size, dt = info[name]
            _file_times(result, name, dt, size)
        clock = getattr(result, "command_clock", None)
        if clock is not None:
            clock.lap_at("format_outputs", last)

    out = {name: iters[name] for name in names}
    out["run.json"] = _run_json_after(result, run_json, write_times, before=account)
    return out


def render_lazily(result, extra: dict | None = None, threads: int | None = None,
                  write_times: dict | None = None, *, stream: bool = False) -> dict:
    """The five outputs for gboost/outputs/outdir.py's write_files: the four data files as lists of
    buffers (header, then runs of rows, in order), run.json as a function write_files calls once
    the others are on disk. Every file is formatted in runs of rows on one :class:`FilePool` of
    ``threads`` threads (default: every core); pairs.tsv's rows are picked and sorted
    (ScanResult.reported_rows, NumPy sorts that release the GIL too) on the pool while the other
    files format. Each file's seconds of formatting (summed over its pieces) go to
    ``result.timings`` ("format_<file>"); write_files puts each file's write seconds in
    ``write_times``, which run.json reports. run.json is rendered last, so its timings cover the
    others. Work prepared during the screen (``result.prepared``: the SNP texts, marginal.tsv;
    gboost/pipeline/hostwork.py) is used as it is.

    ``stream``: return once every run is queued, each data file as an iterator of its buffers that
    waits for each run as it is formatted (:func:`streamed_for_writer`), so that write_files writes
    a file's first runs while the pool formats the rest."""
    from gboost.readers.plink_text import epi_cc_pieces, summary_pieces

    prepared = getattr(result, "prepared", None) or {}
    s, pr, sm = result.study, result.screened, result.summary
    ahead = prepared["outputs"].result() if "outputs" in prepared else {}
    texts = ahead.get("texts") or SnpTexts(s)
    kept = pr.p <= result.params.epi1
    blocks = _formatted(result, kept)
    pool = FilePool(threads)
    try:
        rep = pool.submit(lambda: result.reported_rows)
        if blocks is not None:  # formatted beside the screen: joined here
            joined = pool.submit(lambda: _join_holed(blocks, kept))
            pool.add_done("pairs.epi.cc", [_epi_cc_header(texts.w)] + [b.epi_cc for b in blocks],
                          sum(b.epi_cc_s for b in blocks))
        else:
            texts.chrom, texts.snp  # noqa: B018 - made here (they hold the GIL), then each SNP's pairs.tsv
            prefix = pool.submit(lambda: texts.pairs)  # prefix on the pool, compiled, beside the rest
            pool.add("pairs.epi.cc", _epi_cc_header(texts.w),
                     epi_cc_pieces(pr.i, pr.j, pr.stat, pr.df, texts.plink_chrom, texts.plink_snp,
                                   pool.pieces(len(pr))))
        n_rows, first = summary_span(s)
        pool.add("pairs.epi.cc.summary", _summary_header(texts.w),
                 summary_pieces(texts.plink_chrom, texts.plink_snp, texts.w, sm.n_sig[:n_rows], sm.n_tot[:n_rows],
                                sm.best[:n_rows], sm.best_partner[:n_rows], pool.pieces(n_rows), first=first))
        if "marginal.tsv" in ahead:  # formatted during the screen: its seconds were spent there
            rows, dt = ahead["marginal.tsv"]
            pool.add_done("marginal.tsv", [MARGINAL_HEADER] + rows, dt)
        else:
            pool.add("marginal.tsv", MARGINAL_HEADER, marginal_pieces(s, result.marginal_stat, result.marginal_p,
                                                                      texts, pool.pieces(s.n_snps), 1))
        (rows, q), rep_s, _ = rep.result()
        if blocks is not None and pr.adj is None and pr.emp2 is None:
            pool.add("pairs.tsv", pairs_header(pr), spliced_pieces(joined, rows, q, pool.pieces(len(rows)), 1),
                     rep_s + sum(b.pairs_s for b in blocks))
        else:
            if blocks is not None:
                prefix = pool.submit(lambda: texts.pairs)
            pool.add("pairs.tsv", pairs_header(pr),
                     pairs_pieces(s.variants, pr, prefix.result()[0], pool.pieces(len(rows)), 1, rows=rows, q=q),
                     rep_s)
        names = list(OUTPUT_FILES[:-1])
        perm = getattr(result, "perm", None)
        if perm is not None:  # --perm's maxima (gboost/pipeline/permute.py)
            pool.add_done("perm.tsv", [perm_tsv_bytes(s, perm)], 0.0)
            names.append("perm.tsv")
        if stream:
            return streamed_for_writer(result, pool, names, lambda: format_run_json(result, extra), write_times)
        done = pool.results()
    except BaseException:
        pool.close(cancel=True)
        raise
    pool.close()
    return files_for_writer(result, done, names, lambda: format_run_json(result, extra), write_times)


def format_run_json(result, extra: dict | None = None) -> str:
    return json.dumps(run_record(result, extra), indent=2, default=_json_default) + "\n"


def _json_default(o):
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    return str(o)


def atomic_directory(out_dir: str | os.PathLike, fill, *, overwrite: bool = False) -> Path:
    """``fill(staging)`` writes gboost-named files; they go into ``out_dir`` whole, replacing only
    files of the same names (gboost/outputs/outdir.py: nothing else in the folder is ever touched)."""
    from gboost.outputs.outdir import staged_files

    return staged_files(out_dir, fill, overwrite=overwrite)


def write_outputs(result, out_dir: str | os.PathLike, *, overwrite: bool = False, extra: dict | None = None,
                  threads: int | None = None, extra_files: dict | None = None,
                  also_remove: tuple = ()) -> Path:
    """Write the scan's five outputs into ``out_dir`` (each whole, run.json last) and drop the
    finished scan's checkpoint; nothing else in the folder is touched (gboost/outputs/outdir.py).
    ``extra_files``: further gboost files of the same set (the command's ``gboost.log``, as a
    function rendered once the data files are on disk, before run.json). ``also_remove``: gboost
    files of an earlier set that this one has not (the GUI's regional.png, when it shows no region
    now), removed with the checkpoint as the new set comes in."""
    from gboost.pipeline.checkpoint import LEDGER, MANIFEST, PERM_LEDGER
    from gboost.outputs.outdir import write_files

    write_times: dict = {}
    files = render_lazily(result, extra, threads, write_times, stream=True)
    return write_files(out_dir, {**files, **(extra_files or {})}, overwrite=overwrite,
                       remove=(LEDGER, MANIFEST, MANIFEST + ".tmp", PERM_LEDGER, "perm.tsv", *also_remove),
                       write_times=write_times)
