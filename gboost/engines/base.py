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
from typing import Iterator

# The pieces of work and the thresholds, re-exported: the engines' interface is written in them.
from gboost.stats.pvalues import Thresholds  # noqa: F401
from gboost.data.planes import PlaneSource
from gboost.data.study import Study
from gboost.pipeline.tiles import SummaryPartial, Tile, TileResult  # noqa: F401


class Engine(ABC):
    """Screens tiles. Engines are created by :func:`gboost.engines.make_engine`."""

    name: str = "abstract"
    # True when the screen runs no numba code on this process's threads (a GPU engine's host threads
    # only drive the device; Dask tiles run in worker processes), so the pipeline may run finalize's
    # host work beside it (gboost/pipeline/hostwork.py). Never beside an engine that uses the host's cores:
    # numba's default (workqueue) threading layer aborts when two threads run parallel kernels at
    # once. None: not declared (the pipeline then goes by name; see gboost/pipeline/scan.py).
    overlaps_host_work: bool | None = None

    @abstractmethod
    def describe(self) -> str:
        """Human-readable device, e.g. 'CPU (numba, 8 threads)' or 'NVIDIA H100 80GB HBM3'."""

    @abstractmethod
    def prepare(self, study: Study, thresholds: Thresholds, planes: PlaneSource | None = None) -> None:
        """Move/convert the study's planes once; called before the first tile. ``planes``: the
        study's planes as the encoder writes them (gboost/data/planes.py: a background encode),
        through which the engine reads them (each tile's rows once written); None where they are
        complete."""

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

    def screen_info(self) -> dict:
        """What run.json records of how the screen ran on this engine's devices (beside the
        timings), after the tiles; empty where there is nothing to say."""
        return {}

    def close(self) -> None:  # noqa: B027 - optional hook
        """Free device memory / threads."""


def overlaps_host_work(engine) -> bool:
    """Whether host work (finalize's, the next permutation's planes) may run on other threads while
    ``engine`` screens: the engine says so (:attr:`Engine.overlaps_host_work`)."""
    return bool(getattr(engine, "overlaps_host_work", None))
