"""Genome-wide x coordinates: chromosomes laid end to end in PLINK's order, with a small gap."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gboost.outputs.results import plink_chrom
from gboost.data.study import VariantTable


def chrom_sort_key(code: str) -> tuple[int, int, str]:
    """Numeric chromosomes by number (X, Y, XY, MT become 23-26 as in PLINK), then the rest by name."""
    c = plink_chrom(code)
    return (0, int(c), "") if c.isdigit() else (1, 0, c)


@dataclass
class GenomeLayout:
    """Where each SNP sits on a genome-wide axis.

    Attributes
    ----------
    x
        float64 per SNP: chromosome offset + position (bp; the SNP's rank in its chromosome when
        the chromosome has no base-pair positions).
    chroms
        Chromosome codes in axis order.
    chrom_of
        int per SNP: index into ``chroms``.
    starts, ends
        Axis span of each chromosome.
    origins
        bp of each chromosome's first SNP (its position on the axis is its start); NaN where
        the chromosome has no base-pair positions (file order).
    """

    x: np.ndarray
    chroms: list[str]
    chrom_of: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    origins: np.ndarray | None = None

    def mb_origin(self) -> float | None:
        """For a study of one chromosome with positions: the bp at axis 0 (the axis then reads in
        Mb from it); ``None`` otherwise (the axis names chromosomes, or SNP order)."""
        if len(self.chroms) != 1 or self.origins is None or not np.isfinite(self.origins[0]):
            return None
        return float(self.origins[0])

    @property
    def centers(self) -> np.ndarray:
        return 0.5 * (self.starts + self.ends)

    def ticks(self) -> list[tuple[float, str]]:
        """Chromosome labels at their centres (pyqtgraph's ``AxisItem.setTicks`` format)."""
        return [(float(c), name) for c, name in zip(self.centers, self.chroms)]

    def boundaries(self) -> np.ndarray:
        """Axis positions between consecutive chromosomes."""
        return 0.5 * (self.ends[:-1] + self.starts[1:])


def genome_layout(variants: VariantTable, gap_fraction: float = 0.01) -> GenomeLayout:
    """Lay the study's chromosomes end to end (vectorised: fine for millions of SNPs)."""
    chrom = np.asarray(variants.chrom).astype(str)
    p = len(chrom)
    names, inverse = np.unique(chrom, return_inverse=True)
    order = sorted(range(len(names)), key=lambda k: chrom_sort_key(names[k]))
    rank = np.empty(len(names), np.int64)
    rank[order] = np.arange(len(names))
    chrom_of = rank[inverse] if p else np.zeros(0, np.int64)
    chroms = [str(names[k]) for k in order]

    bp = np.asarray(variants.bp, dtype=np.float64)
    local = np.empty(p)
    spans = np.zeros(len(chroms))
    origins = np.full(len(chroms), np.nan)
    for c in range(len(chroms)):
        idx = np.flatnonzero(chrom_of == c)
        pos = bp[idx]
        if idx.size and np.all(pos <= 0):
            pos = np.arange(1.0, idx.size + 1.0)  # no positions in the file: file order
        lo = pos.min() if idx.size else 0.0
        if idx.size and not np.all(bp[idx] <= 0):
            origins[c] = lo
        local[idx] = pos - lo
        spans[c] = (pos.max() - lo) if idx.size else 0.0
    spans = np.maximum(spans, 1.0)
    gap = max(gap_fraction * spans.sum(), 1.0)
    starts = np.concatenate([[0.0], np.cumsum(spans + gap)[:-1]])
    ends = starts + spans
    x = starts[chrom_of] + local if p else np.zeros(0)
    return GenomeLayout(x, chroms, chrom_of, starts, ends, origins)
