"""The interface every engine implements, and the pieces of work it is handed.

An engine screens tiles of the pair triangle: for each valid pair it computes the KSA statistic,
keeps the pairs above the screening threshold for their DF (the survivors, with their tables),
and reduces the per-SNP summary over the pairs that did *not* survive. The pipeline runs the exact
test on survivors (shared code, all engines) and folds them into the summary. Only survivors and
per-SNP partial summaries cross from an engine to the pipeline, which is what lets a GPU engine
keep everything of size p^2 on the device.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Iterator

import numpy as np

from gboost.study import Study


@dataclass(frozen=True)
class Tile:
    """SNPs [i0, i1) x [j0, j1) of the triangle; only pairs with i < j belong to it.

    Tiles are planned with j0 >= i0; a tile whose column range overlaps its row range is
    "diagonal" and its pairs with j <= i are skipped (row ranges may be clipped by --part, so a
    diagonal tile need not be square).
    """

    index: int
    i0: int
    i1: int
    j0: int
    j1: int

    @property
    def diagonal(self) -> bool:
        return self.j0 < self.i1

    @property
    def n_pairs(self) -> int:
        if not self.diagonal:
            return (self.i1 - self.i0) * (self.j1 - self.j0)
        # sum over rows i of max(0, j1 - max(j0, i + 1)), in closed form (a Python loop over the rows
        # took 0.6 s for the diagonal tiles of a 500k-SNP plan): rows i < j0 see all j1 - j0 columns,
        # rows i in [max(i0, j0), min(i1, j1 - 1)) see j1 - 1 - i.
        i0, i1, j0, j1 = self.i0, self.i1, self.j0, self.j1
        full = max(0, min(i1, j0) - i0) * max(0, j1 - j0)
        a, b = max(i0, j0), min(i1, j1 - 1)  # rows [a, b)
        if b <= a:
            return full
        n = b - a
        return full + n * (j1 - 1) - (a + b - 1) * n // 2


@dataclass
class SummaryPartial:
    """Per-SNP summary over one tile's non-surviving valid pairs, for SNPs [start, start + len)."""

    start: int
    n_sig: np.ndarray  # int64
    n_tot: np.ndarray  # int64
    best: np.ndarray  # float64, -inf where no pair
    best_partner: np.ndarray  # int64, -1 where no pair


@dataclass
class TileResult:
    tile: Tile
    surv_i: np.ndarray  # int64 global SNP index (SNP1, i < j)
    surv_j: np.ndarray
    surv_ksa: np.ndarray  # float64
    surv_tables: np.ndarray  # int64 (m, 3, 3, 2)
    n_valid: int
    rows: SummaryPartial
    cols: SummaryPartial


@dataclass(frozen=True)
class Thresholds:
    """Chi-square thresholds indexed by DF (1, 2, 4): screen from --epi1, summary from --epi2."""

    screen: np.ndarray
    summary: np.ndarray


class Engine(ABC):
    """Screens tiles. Engines are created by :func:`gboost.engines.make_engine`."""

    name: str = "abstract"

    @abstractmethod
    def describe(self) -> str:
        """Human-readable device, e.g. 'CPU (numba, 8 threads)' or 'NVIDIA H100 80GB HBM3'."""

    @abstractmethod
    def prepare(self, study: Study, thresholds: Thresholds) -> None:
        """Move/convert the study's planes once; called before the first tile."""

    @abstractmethod
    def tile_snps(self) -> int:
        """Tile edge (SNPs) this engine wants for the prepared study."""

    @abstractmethod
    def run_tile(self, tile: Tile) -> TileResult:
        """Screen one tile."""

    def run_tiles(self, tiles: list[Tile], cancel=None) -> Iterator[TileResult]:
        """Screen tiles, yielding results as they finish (any order); stop when ``cancel()``.

        Engines with several devices override this to keep them all busy from one queue.
        """
        for tile in tiles:
            if cancel is not None and cancel():
                return
            yield self.run_tile(tile)

    def close(self) -> None:  # noqa: B027 - optional hook
        """Free device memory / threads."""
