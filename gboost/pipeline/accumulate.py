"""What the screen has produced so far (:class:`Accumulator`): survivors, the per-SNP summary,
counts. Tiles are added as they finish, in any order; a checkpoint, a part file or another
worker's accumulator merges in the same way (the merges of gboost/pipeline/tiles.py are order-free).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from gboost.pipeline.tiles import Summary, TileResult


@dataclass
class Accumulator:
    """What the screen has produced so far: survivors, per-SNP summary partials, counts.

    Everything merges order-independently, so tiles may finish in any order, come back from a
    checkpoint, another GPU, a Dask worker or another --part, and give the same result.
    """

    p: int
    summary: Summary = None
    surv_i: list = field(default_factory=list)
    surv_j: list = field(default_factory=list)
    surv_ksa: list = field(default_factory=list)
    surv_tables: list = field(default_factory=list)
    # The row block (its first SNP) each entry of the surv_ lists came from; None where unknown
    # (absorbed or loaded survivors). HostWork sorts and tests survivors row block by row block.
    surv_rows: list = field(default_factory=list)
    n_valid: int = 0
    pairs_done: int = 0
    tiles_done: set = field(default_factory=set)

    def __post_init__(self):
        if self.summary is None:
            self.summary = Summary.empty(self.p)

    def add(self, res: TileResult) -> None:
        if res.tile.index in self.tiles_done:  # a tile computed twice (a rerun task) counts once
            return
        self.summary.merge_partial(res.rows)
        self.summary.merge_partial(res.cols)
        self.surv_i.append(res.surv_i)
        self.surv_j.append(res.surv_j)
        self.surv_ksa.append(res.surv_ksa)
        self.surv_tables.append(res.surv_tables)
        self.surv_rows.append(res.tile.i0)
        self.n_valid += res.n_valid
        self.pairs_done += res.tile.n_pairs
        self.tiles_done.add(res.tile.index)

    def absorb(self, other: "Accumulator") -> None:
        """Merge another accumulator over the same SNPs (another --part, another worker)."""
        self.summary.merge_partial(other.summary)
        for name in ("surv_i", "surv_j", "surv_ksa", "surv_tables"):
            getattr(self, name).extend(getattr(other, name))
        self.surv_rows.extend([None] * len(other.surv_i))
        self.n_valid += other.n_valid
        self.pairs_done += other.pairs_done

    def survivors(self):
        i = np.concatenate(self.surv_i) if self.surv_i else np.zeros(0, np.int64)
        j = np.concatenate(self.surv_j) if self.surv_j else np.zeros(0, np.int64)
        ksa = np.concatenate(self.surv_ksa) if self.surv_ksa else np.zeros(0)
        tab = np.concatenate(self.surv_tables) if self.surv_tables else np.zeros((0, 3, 3, 2), np.int64)
        return i, j, ksa, tab

    def to_arrays(self) -> dict:
        """Plain arrays (for a part file or a checkpoint); inverse of :meth:`from_arrays`."""
        i, j, ksa, tab = self.survivors()
        s = self.summary
        return {"p": np.int64(self.p), "n_valid": np.int64(self.n_valid), "pairs_done": np.int64(self.pairs_done),
                "n_sig": s.n_sig, "n_tot": s.n_tot, "best": s.best, "best_partner": s.best_partner,
                "surv_i": i, "surv_j": j, "surv_ksa": ksa, "surv_tables": tab}

    @classmethod
    def from_arrays(cls, d) -> "Accumulator":
        acc = cls(int(d["p"]), Summary(np.array(d["n_sig"]), np.array(d["n_tot"]), np.array(d["best"]),
                                       np.array(d["best_partner"])))
        acc.surv_i, acc.surv_j = [np.array(d["surv_i"])], [np.array(d["surv_j"])]
        acc.surv_ksa, acc.surv_tables = [np.array(d["surv_ksa"])], [np.array(d["surv_tables"])]
        acc.surv_rows = [None]
        acc.n_valid, acc.pairs_done = int(d["n_valid"]), int(d["pairs_done"])
        return acc
