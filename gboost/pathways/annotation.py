"""Gene annotations (BED, GTF) and the mapping of SNPs to genes by position.

Coordinates are kept as in BED: 0-based, half-open ``[start, end)``; a GTF's 1-based closed
``start..end`` becomes ``[start - 1, end)``. SNP positions are PLINK's 1-based base-pair
coordinates, so a SNP at ``bp`` lies in a gene when ``start < bp <= end``.

A SNP maps to a gene when it lies in the gene or within ``window_kb`` kilobases of either end:
``start - w < bp <= end + w`` with ``w = 1000 * window_kb``. The default window is
:data:`DEFAULT_WINDOW_KB` = 10 kb, which catches promoter and nearby regulatory SNPs as gene-based
GWAS analyses commonly do; use 0 for gene bodies only.

Chromosome names are normalised like PLINK's (``chr1`` -> ``1``, ``X`` -> ``23``, ``Y`` -> ``24``,
``XY`` -> ``25``, ``MT``/``M`` -> ``26``), on both sides, so a ``.bim`` with ``23`` matches an
annotation with ``chrX``.
"""
from __future__ import annotations

import gzip
import os
import re
from dataclasses import dataclass
from importlib import resources
from typing import Iterator, Sequence

import numpy as np

from gboost.errors import InputError
from gboost.outputs.results import plink_chrom

DEFAULT_WINDOW_KB = 10.0
BUNDLED_BUILD = "GRCh38"
_BUILD_BED = re.compile(r"genome[_ -]?build\s*[=:]\s*(\S+)", re.IGNORECASE)  # "# genome_build=GRCh38"
_BUILD_GTF = re.compile(r"^#!\s*genome-build\s+(\S+)", re.IGNORECASE)  # Ensembl: "#!genome-build GRCh38.p14"
_GTF_ATTR = re.compile(r'(\S+)\s+"([^"]*)"')


@dataclass
class GeneAnnotation:
    """Gene loci, one row per locus (a gene may have several), in file order.

    Attributes
    ----------
    chrom
        PLINK-normalised chromosome codes (str).
    start, end
        int64, 0-based half-open.
    name
        Gene names (str); the key into ``.gmt`` gene sets.
    build
        Genome build stated in the file's header (``None`` when the file does not say).
    path
        The file read.
    """

    chrom: np.ndarray
    start: np.ndarray
    end: np.ndarray
    name: np.ndarray
    build: str | None = None
    path: str | None = None

    def __len__(self) -> int:
        return len(self.name)

    @property
    def genes(self) -> set[str]:
        return set(self.name.tolist())


def open_text(path: str | os.PathLike) -> Iterator[str]:
    """Lines of a text file, gzip-compressed or not (by its magic bytes), without newlines."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            gz = f.read(2) == b"\x1f\x8b"
        opener = gzip.open if gz else open
        with opener(path, "rt", encoding="utf-8", newline="") as f:
            for line in f:
                yield line.rstrip("\r\n")
    except UnicodeDecodeError as exc:
        raise InputError(path, f"not a UTF-8 text file ({exc.reason})") from None
    except (gzip.BadGzipFile, EOFError) as exc:
        raise InputError(path, f"damaged gzip file ({exc})") from None


def _normalise_chroms(codes: Sequence[str]) -> np.ndarray:
    cache: dict[str, str] = {}
    return np.array([cache.get(c) or cache.setdefault(c, plink_chrom(c)) for c in codes], dtype=object)


_MAX_POS = 2**31 - 1  # PLINK's limit for a base-pair position


def read_bed(path: str | os.PathLike, build: str | None = None) -> GeneAnnotation:
    """Read genes from a BED file: ``chrom start end name [...]`` (0-based half-open).

    ``track``/``browser`` lines and ``#`` comments are skipped; a comment ``# genome_build=NAME``
    states the build (``build`` overrides it). Extra columns are ignored.
    """
    chrom, start, end, name = [], [], [], []
    stated = None
    for n, line in enumerate(open_text(path), 1):
        if not line.strip() or line.startswith(("track", "browser")):
            continue
        if line.startswith("#"):
            m = _BUILD_BED.search(line)
            stated = stated or (m.group(1) if m else None)
            continue
        f = line.split("\t") if "\t" in line else line.split()
        if len(f) < 4:
            raise InputError(path, f"line {n}: expected chrom, start, end and gene name (BED), found {len(f)} column(s)")
        try:
            s, e = int(f[1]), int(f[2])
        except ValueError:
            raise InputError(path, f"line {n}: start and end must be integers, got {f[1]!r} and {f[2]!r}") from None
        if s < 0 or e <= s:
            raise InputError(path, f"line {n}: expected 0 <= start < end, got {s} and {e}")
        if e > _MAX_POS:  # (larger than any chromosome; int64 arrays overflowed on 1e23)
            raise InputError(path, f"line {n}: end {e} is beyond any chromosome (at most {_MAX_POS})")
        chrom.append(f[0])
        start.append(s)
        end.append(e)
        name.append(f[3].strip())
    return _annotation(chrom, start, end, name, build or stated, path)


def read_gtf(path: str | os.PathLike, build: str | None = None, feature: str = "gene") -> GeneAnnotation:
    """Read genes from a GTF file: the ``gene`` lines (column 3), named by ``gene_name``.

    GTF is 1-based closed; positions are converted to 0-based half-open. A line without
    ``gene_name`` falls back to ``gene_id``. A header ``#!genome-build NAME`` (Ensembl) states
    the build.
    """
    chrom, start, end, name = [], [], [], []
    stated = None
    for n, line in enumerate(open_text(path), 1):
        if not line.strip():
            continue
        if line.startswith("#"):
            m = _BUILD_GTF.match(line)
            stated = stated or (m.group(1) if m else None)
            continue
        f = line.split("\t")
        if len(f) != 9:
            raise InputError(path, f"line {n}: expected 9 tab-separated GTF columns, found {len(f)}")
        if f[2] != feature:
            continue
        try:
            s, e = int(f[3]), int(f[4])
        except ValueError:
            raise InputError(path, f"line {n}: start and end must be integers, got {f[3]!r} and {f[4]!r}") from None
        if s < 1 or e < s:
            raise InputError(path, f"line {n}: expected 1 <= start <= end, got {s} and {e}")
        if e > _MAX_POS:
            raise InputError(path, f"line {n}: end {e} is beyond any chromosome (at most {_MAX_POS})")
        attrs = dict(_GTF_ATTR.findall(f[8]))
        gene = attrs.get("gene_name") or attrs.get("gene_id")
        if not gene:
            raise InputError(path, f"line {n}: a {feature} line without gene_name or gene_id")
        chrom.append(f[0])
        start.append(s - 1)
        end.append(e)
        name.append(gene)
    return _annotation(chrom, start, end, name, build or stated, path)


def _annotation(chrom, start, end, name, build, path) -> GeneAnnotation:
    if not name:
        raise InputError(path, "no genes found")
    return GeneAnnotation(_normalise_chroms(chrom), np.asarray(start, np.int64), np.asarray(end, np.int64),
                          np.array(name, dtype=object), build, os.fspath(path))


def read_annotation(path: str | os.PathLike, build: str | None = None) -> GeneAnnotation:
    """Read a BED or GTF gene annotation, by extension (``.gtf``/``.gff2``, optionally ``.gz``:
    GTF; anything else: BED)."""
    base = os.fspath(path).lower().removesuffix(".gz")
    if base.endswith((".gtf", ".gff2")):
        return read_gtf(path, build)
    return read_bed(path, build)


def bundled_annotation_path() -> str:
    """The gene annotation shipped with gboost (protein-coding genes, GRCh38; see data/README.md)."""
    return str(resources.files("gboost.pathways") / "data" / f"genes_{BUNDLED_BUILD}.bed.gz")


def bundled_annotation() -> GeneAnnotation:
    return read_bed(bundled_annotation_path())


@dataclass
class SnpGeneMap:
    """Which SNP lies in (or near) which gene: parallel arrays of index pairs.

    ``snp`` indexes the SNPs given to :func:`map_snps_to_genes`, ``gene`` the annotation's rows;
    sorted by SNP, then by gene start.
    """

    snp: np.ndarray
    gene: np.ndarray
    n_snps: int
    annotation: GeneAnnotation
    window_kb: float

    def __len__(self) -> int:
        return len(self.snp)

    def genes_per_snp(self) -> list[tuple[str, ...]]:
        """Gene names per SNP (no duplicates, in position order; empty tuple: no gene)."""
        out: list[tuple[str, ...]] = [()] * self.n_snps
        bounds = np.searchsorted(self.snp, np.arange(self.n_snps + 1))
        names = self.annotation.name
        for k in np.flatnonzero(np.diff(bounds)):
            out[k] = tuple(dict.fromkeys(names[self.gene[bounds[k]:bounds[k + 1]]].tolist()))
        return out


def map_snps_to_genes(chrom: Sequence[str], bp: Sequence[int], annotation: GeneAnnotation,
                      window_kb: float = DEFAULT_WINDOW_KB, *, chunk: int = 1 << 22) -> SnpGeneMap:
    """Map SNPs to the genes they lie in or within ``window_kb`` kb of (see the module notes).

    Vectorised: per chromosome, genes are split into length classes (powers of two), and for each
    class the candidates of every SNP are the genes of that class starting at most the class's
    longest length before it, found with ``searchsorted``. A SNP thus checks only genes that
    could contain it, whatever the spread of gene lengths, and no Python code runs per SNP.

    Parameters
    ----------
    chrom, bp
        SNP chromosomes (any PLINK spelling) and 1-based positions.
    annotation
        Genes, e.g. from :func:`read_annotation`.
    window_kb
        Kilobases added on both sides of every gene (>= 0).
    chunk
        Upper bound on candidate (SNP, gene) pairs held at once, to bound memory.
    """
    if not window_kb >= 0:
        raise ValueError(f"window_kb must be >= 0, got {window_kb}")
    bp = np.asarray(bp, dtype=np.int64)
    raw, code = np.unique(np.asarray(chrom).astype(str), return_inverse=True)
    names = _normalise_chroms(raw.tolist())
    # SNPs grouped by chromosome and sorted by position: one sort, and searchsorted likes sorted keys.
    by_pos = np.lexsort((bp, code.ravel()))
    bounds = np.searchsorted(code.ravel()[by_pos], np.arange(len(raw) + 1))
    w = int(round(window_kb * 1000))
    lo = annotation.start - w + 1  # first 1-based position covered
    hi = annotation.end + w  # last 1-based position covered
    gene_order = np.argsort(annotation.chrom.astype(str), kind="stable")
    gene_chrom = annotation.chrom[gene_order].astype(str)
    found_snp, found_gene = [], []
    for c in np.unique(names):
        snps = np.concatenate([by_pos[bounds[k]:bounds[k + 1]] for k in np.flatnonzero(names == c)])
        if len(names[names == c]) > 1:  # e.g. "chr1" and "1" in one file
            snps = snps[np.argsort(bp[snps], kind="stable")]
        a, b = np.searchsorted(gene_chrom, c, "left"), np.searchsorted(gene_chrom, c, "right")
        genes = gene_order[a:b]
        if len(genes) == 0:
            continue
        pos = bp[snps]
        length = hi[genes] - lo[genes] + 1
        length_class = np.ceil(np.log2(length)).astype(np.int64)
        for cls in np.unique(length_class):
            g = genes[length_class == cls]
            g = g[np.argsort(lo[g], kind="stable")]
            g_lo, g_hi = lo[g], hi[g]
            longest = int((g_hi - g_lo).max())
            first = np.searchsorted(g_lo, pos - longest, side="left")
            last = np.searchsorted(g_lo, pos, side="right")  # genes starting at or before the SNP
            for s, gi in _candidate_pairs(first, last, chunk):
                hit = g_hi[gi] >= pos[s]
                found_snp.append(snps[s[hit]])
                found_gene.append(g[gi[hit]])
    snp_idx = np.concatenate(found_snp) if found_snp else np.zeros(0, np.int64)
    gene_idx = np.concatenate(found_gene) if found_gene else np.zeros(0, np.int64)
    order = np.lexsort((gene_idx, annotation.start[gene_idx], snp_idx))
    return SnpGeneMap(snp_idx[order], gene_idx[order], len(bp), annotation, float(window_kb))


def _candidate_pairs(first: np.ndarray, last: np.ndarray, chunk: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Expand the ranges ``[first[k], last[k])`` into (k, index) pairs, at most ~``chunk`` at a time."""
    count = np.maximum(last - first, 0)
    ends = np.cumsum(count)
    start = 0
    while start < len(count):
        base = ends[start - 1] if start else 0
        stop = max(int(np.searchsorted(ends, base + chunk, side="right")), start + 1)
        n = count[start:stop]
        total = int(n.sum())
        if total:
            rows = np.repeat(np.arange(start, stop), n)
            offset = np.arange(total) - np.repeat(np.cumsum(n) - n, n)
            yield rows, first[rows] + offset
        start = stop
