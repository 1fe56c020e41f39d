"""QQ plots side by side: the single-locus test with its genomic inflation λ, and the
interaction test itself, from the exact statistics of a random sample of pairs that the scan
computes for calibration (:mod:`gboost.stats.calibration`), with that sample's λ."""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg

from gui.plots.base import CHROM_COLOURS, NearestPoint, PlotPanel, UniformScatter
from gui.resultdata import _neglog10, genomic_inflation, marginal_neglog10

INTERACTION_COLOUR = "#7b3294"  # purple: apart from the single-locus blue

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
        self._build_interaction_plot()

    def _build_interaction_plot(self) -> None:
        """The interaction test's QQ plot, right of the single-locus one, in the same scene (so
        one PNG/SVG export holds both)."""
        ip = self.iplot = self.plot_widget.addPlot(row=0, col=1)
        ip.setMenuEnabled(False)
        ip.showGrid(x=True, y=True, alpha=0.15)
        ip.setLabel("bottom", "Expected −log10 P")
        ip.setLabel("left", "Observed −log10 P (exact interaction test)")
        ip.setTitle("QQ plot of the interaction test")
        self.idiagonal = pg.PlotCurveItem(pen=pg.mkPen("#c0392b", width=1.2))
        self.ipoints = UniformScatter(size=5, pen=None, brush=pg.mkBrush(INTERACTION_COLOUR), pxMode=True)
        ip.addItem(self.idiagonal)
        ip.addItem(self.ipoints)
        self.ilambda_text = pg.TextItem(anchor=(0, 0), color="k")
        ip.addItem(self.ilambda_text, ignoreBounds=True)
        ip.getViewBox().sigRangeChanged.connect(self._place_text)
        self.iempty = pg.TextItem("", anchor=(0.5, 0.5), color="#555555")
        ip.addItem(self.iempty, ignoreBounds=True)
        self.ilam = float("nan")
        self.iexp = self.iobs = self.iids = np.zeros(0)
        self.istat = self.idf = np.zeros(0)
        self.ihover: NearestPoint | None = None

    def clear(self) -> None:
        """Nothing of the last result left: points, λ, titles and the info line."""
        self.result = None
        self.lam = float("nan")
        self.n_tested = 0
        self.exp = self.obs = self.ids = np.zeros(0)
        self.iexp = self.iobs = self.iids = np.zeros(0)
        self.plot.setTitle("QQ plot of the single-locus test")
        self.iplot.setTitle("QQ plot of the interaction test")
        self.readout.setText(" ")
        self.points.clear()
        self.diagonal.setData([], [])
        self.lambda_text.setText("")
        self.hover_index = None
        self.ipoints.clear()
        self.idiagonal.setData([], [])
        self.ilambda_text.setText("")
        self.iempty.setText("")
        self.ihover = None
        self.ilam = float("nan")

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
        self.set_calibration(getattr(result, "calibration", None))
        self.reset_view()

    def set_calibration(self, calib) -> None:
        """Draw the interaction test's QQ plot from a :class:`gboost.stats.calibration.Calibration`."""
        self.ipoints.clear()
        self.idiagonal.setData([], [])
        self.ihover = None
        if calib is None or not len(calib.p):
            self.ilam = float("nan")
            self.iexp = self.iobs = self.iids = np.zeros(0)
            self.ilambda_text.setText("")
            self.iplot.setTitle("QQ plot of the interaction test")
            self.iempty.setText("No calibration sample in this result\n(the scan ran without one)")
            self.iempty.setPos(0.5, 0.5)
            return
        self.iempty.setText("")
        self.istat, self.idf = np.asarray(calib.stat), np.asarray(calib.df)
        y = _neglog10(calib.p, calib.stat, calib.df)
        self.iexp, self.iobs, self.iids = qq_points(y, np.arange(len(y)))
        self.ipoints.setData(x=self.iexp, y=self.iobs)
        top = float(self.iexp.max()) if self.iexp.size else 1.0
        self.idiagonal.setData([0.0, top], [0.0, top])
        self.ilam = float(calib.lam)
        n = len(calib.p)
        self.ilambda_text.setText(f"λ = {self.ilam:.3f}   (exact test of {n:,} random pairs)")
        # (the sample size is in the text inside the plot: with it the title was cut off at 1366x768)
        self.iplot.setTitle(f"QQ plot of the interaction test: λ = {self.ilam:.3f}")
        self.ihover = NearestPoint(self.iexp, self.iobs, self.iids)

    def reset_view(self) -> None:
        for plot, exp, obs in ((self.plot, self.exp, self.obs), (self.iplot, self.iexp, self.iobs)):
            if not exp.size:
                continue
            ymax = max(float(np.nanmax(obs)), float(exp.max())) * 1.05 + 0.1
            plot.setXRange(0, float(exp.max()) * 1.05 + 0.05, padding=0)
            plot.setYRange(0, ymax, padding=0)

    def _place_text(self, *_):
        for plot, text in ((self.plot, self.lambda_text), (self.iplot, self.ilambda_text)):
            (x0, _x1), (_y0, y1) = plot.getViewBox().viewRange()
            text.setPos(x0, y1)

    def _on_mouse_moved(self, args) -> None:
        vb = self.iplot.getViewBox()
        if not vb.sceneBoundingRect().contains(args[0]):
            super()._on_mouse_moved(args)
            return
        p = vb.mapSceneToView(args[0])
        px, py = vb.viewPixelSize()
        hit = self.ihover.nearest(p.x(), p.y(), px, py) if self.ihover is not None else None
        text = self.describe_interaction_point(hit) if hit is not None else " "
        self.readout.setText(text)
        if hit is not None:
            self.hovered.emit(text)

    def describe_interaction_point(self, k) -> str:
        k = int(k)
        where = np.flatnonzero(self.iids == k)
        exp = self.iexp[where[0]] if where.size else float("nan")
        obs = self.iobs[where[0]] if where.size else float("nan")
        return (f"Random pair {k + 1:,} of the calibration sample: STAT = {self.istat[k]:.4g}, DF = {int(self.idf[k])}, "
                f"−log10 P = {obs:.3g} (expected {exp:.3g})")

    def describe_point(self, k) -> str:
        v = self.result.study.variants
        k = int(k)
        return f"{v.snp[k]}   chr{v.chrom[k]}:{int(v.bp[k]):,}   P = {self.result.marginal_p[k]:.3g}"
