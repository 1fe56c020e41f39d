"""QQ plot of the single-locus P values, with the genomic inflation factor λ."""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg

from gui.plots.base import CHROM_COLOURS, NearestPoint, PlotPanel, UniformScatter
from gui.resultdata import genomic_inflation, marginal_neglog10

# Above this many SNPs the bulk near the diagonal (expected −log10 P < 2) is thinned for drawing;
# the tail, where the plot is read, is always drawn in full.
MAX_BULK_POINTS = 100_000


def qq_points(neglog10_obs: np.ndarray, ids: np.ndarray, max_bulk: int = MAX_BULK_POINTS):
    """(expected, observed, ids) sorted by observed, expected −log10((rank − 0.5) / n)."""
    ok = np.isfinite(neglog10_obs)
    obs, ids = neglog10_obs[ok], ids[ok]
    n = obs.size
    order = np.argsort(-obs, kind="stable")
    obs, ids = obs[order], ids[order]
    exp = -np.log10((np.arange(1, n + 1) - 0.5) / n)
    if n > max_bulk:
        tail = exp >= 2.0
        bulk = np.flatnonzero(~tail)
        keep = np.concatenate([np.flatnonzero(tail), bulk[:: max(1, bulk.size // max_bulk)], bulk[-1:]])
        exp, obs, ids = exp[keep], obs[keep], ids[keep]
    return exp, obs, ids


class QQPlot(PlotPanel):
    name = "QQ plot"

    def __init__(self, parent=None):
        super().__init__(parent)
        self.result = None
        self.lam = float("nan")
        self.n_tested = 0
        self.plot.setLabel("bottom", "Expected −log10 P")
        self.plot.setLabel("left", "Observed −log10 P")
        self.plot.setTitle("QQ plot of the single-locus test")
        self.plot.showGrid(x=True, y=True, alpha=0.15)
        self.diagonal = pg.PlotCurveItem(pen=pg.mkPen("#c0392b", width=1.2))
        self.points = UniformScatter(size=5, pen=None, brush=pg.mkBrush(CHROM_COLOURS[0]), pxMode=True)
        self.plot.addItem(self.diagonal)
        self.plot.addItem(self.points)
        self.lambda_text = pg.TextItem(anchor=(0, 0), color="k")
        self.plot.addItem(self.lambda_text, ignoreBounds=True)
        self.plot.getViewBox().sigRangeChanged.connect(self._place_text)
        self.exp = self.obs = self.ids = np.zeros(0)

    def clear(self) -> None:
        self.result = None
        self.points.clear()
        self.diagonal.setData([], [])
        self.lambda_text.setText("")
        self.hover_index = None

    def set_result(self, result) -> None:
        self.result = result
        y = marginal_neglog10(result)
        self.exp, self.obs, self.ids = qq_points(y, np.arange(len(y)))
        self.n_tested = int(np.isfinite(y).sum())
        self.points.setData(x=self.exp, y=self.obs)
        top = float(self.exp.max()) if self.exp.size else 1.0
        self.diagonal.setData([0.0, top], [0.0, top])
        self.lam = genomic_inflation(result.marginal_p, result.marginal_df)
        self.lambda_text.setText(f"λ = {self.lam:.3f}   ({self.n_tested:,} SNPs)")
        self.plot.setTitle(f"QQ plot of the single-locus test: λ = {self.lam:.3f}")
        self.hover_index = NearestPoint(self.exp, self.obs, self.ids)
        self.reset_view()

    def reset_view(self) -> None:
        if not self.exp.size:
            return
        ymax = max(float(np.nanmax(self.obs)), float(self.exp.max())) * 1.05 + 0.1
        self.plot.setXRange(0, float(self.exp.max()) * 1.05 + 0.05, padding=0)
        self.plot.setYRange(0, ymax, padding=0)

    def _place_text(self, *_):
        (x0, _x1), (_y0, y1) = self.plot.getViewBox().viewRange()
        self.lambda_text.setPos(x0, y1)

    def describe_point(self, k) -> str:
        v = self.result.study.variants
        k = int(k)
        return f"{v.snp[k]}   chr{v.chrom[k]}:{int(v.bp[k]):,}   P = {self.result.marginal_p[k]:.3g}"
