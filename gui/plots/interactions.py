"""Interaction map: each reported pair at (SNP1 position, SNP2 position), chromosome by chromosome.

Colour encodes the pair's −log10 P in a few bins, one ``ScatterPlotItem`` per bin (shared brush),
so millions of pairs draw without per-point brush objects. Thousands of pairs drawn as points
cover the map in one colour, so the mode (``MODES``) decides what is drawn: by default every pair
while there are at most ``top_n``, beyond that the strongest ``top_n`` as points over the density
of all pairs (a grey 2-D histogram, log counts); or every pair; or the density alone.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt, Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel

from gui.plots.base import NearestPoint, PlotPanel, PositionAxis, UniformScatter, position_label
from gui.plots.genome import genome_layout
from gui.resultdata import pairs_neglog10

N_BINS = 8
# pairs drawn as points over the density: 2,000 8-pixel points covered a 1366x768 window's map
# (870 x 300 pixels) as a carpet at --epi1 1e-3; 500 leave the density between them
TOP_N = 500
DENSITY_BINS = 256  # the density's cells along each axis
MODES = {"auto": "Strongest pairs over the density", "all": "Every pair as a point", "density": "Density only"}


class InteractionMap(PlotPanel):
    """Reported pairs by genomic position; hover names the pair, click selects it."""

    pairClicked = Signal(int)  # row of the reported pairs
    name = "Interaction map"

    def __init__(self, parent=None):
        super().__init__(parent, axisItems={"bottom": PositionAxis("bottom"), "left": PositionAxis("left")})
        self.result = None
        self.reported = None
        self.top_n = TOP_N
        self.drawn = np.zeros(0, np.int64)  # rows of the reported pairs drawn as points
        self.mode = QComboBox()
        for key, text in MODES.items():
            self.mode.addItem(text, key)
        self.mode.setToolTip(f"Beyond {TOP_N:,} reported pairs, points cover the map in one colour: by default "
                             f"the strongest {TOP_N:,} are drawn as points over a grey density of all pairs "
                             "(darker: more pairs in the cell, log scale).")
        self.mode_note = QLabel("")
        bar = QHBoxLayout()
        bar.setContentsMargins(4, 2, 4, 0)
        bar.addWidget(QLabel("Show:"))
        bar.addWidget(self.mode)
        bar.addWidget(self.mode_note, 1)
        self.layout().insertLayout(0, bar)
        self.mode.currentIndexChanged.connect(lambda _i: self._draw_pairs())
        self.density = pg.ImageItem()
        self.density.setZValue(1)
        self.density.setLookupTable(pg.ColorMap(pos=[0.0, 1.0], color=[(255, 255, 255), (70, 70, 80)]).getLookupTable(nPts=256))
        self.density.setVisible(False)
        self.plot.addItem(self.density)
        self.density_counts = np.zeros((0, 0))
        # Orange (weakest reported) to dark purple (strongest): every bin stays visible on white.
        self.cmap = pg.ColorMap(pos=[0.0, 0.5, 1.0], color=[(245, 160, 60), (205, 30, 40), (55, 10, 85)])
        self.plot.setLabel("bottom", "SNP1 (chromosome)")
        self.plot.setLabel("left", "SNP2 (chromosome)")
        self.plot.setTitle("Interaction map of reported pairs")
        self.plot.showGrid(x=False, y=False)  # chromosome boundaries are the grid
        self.bins: list[UniformScatter] = []
        for b in range(N_BINS):
            colour = self.cmap.map((b + 0.5) / N_BINS, mode="qcolor")
            item = UniformScatter(size=8, pen=pg.mkPen((40, 40, 40, 160), width=0.6), brush=pg.mkBrush(colour), pxMode=True)
            item.setZValue(5)
            self.plot.addItem(item)
            self.bins.append(item)
        self.selected_item = UniformScatter(size=16, pen=pg.mkPen("#d55e00", width=2.5), brush=None, pxMode=True)
        self.selected_item.setZValue(10)
        self.plot.addItem(self.selected_item)
        self.grid_lines: list[pg.InfiniteLine] = []
        self.colorbar = pg.ColorBarItem(values=(0, 1), colorMap=self.cmap, label="−log10 P (interaction)",
                                        interactive=False, width=14, pen="k")
        self.plot_widget.addItem(self.colorbar, row=0, col=1)
        self.empty_text = pg.TextItem("", anchor=(0.5, 0.5), color="#555555")
        self.plot.addItem(self.empty_text, ignoreBounds=True)
        self.x1 = self.x2 = self.nlp = np.zeros(0)

    def clear(self) -> None:
        """Nothing of the last result left: pairs, the study's chromosome grid and ticks, the
        colour scale and the info line."""
        self.result = None
        self.reported = None
        for item in self.bins:
            item.clear()
        self.selected_item.clear()
        self.density.clear()
        self.density.setVisible(False)
        self.density_counts = np.zeros((0, 0))
        self.drawn = np.zeros(0, np.int64)
        self.mode_note.setText("")
        self.hover_index = None
        self.empty_text.setText("")
        for line in self.grid_lines:
            self.plot.removeItem(line)
        self.grid_lines = []
        for side in ("bottom", "left"):
            self.plot.getAxis(side).set_layout(None)
        self.plot.setLabel("bottom", "SNP1 (chromosome)")
        self.plot.setLabel("left", "SNP2 (chromosome)")
        self.x1 = self.x2 = self.nlp = np.zeros(0)
        self.colorbar.setLevels((0, 1))
        self.plot.setTitle("Interaction map of reported pairs")
        self.readout.setText(" ")
        self.plot.setXRange(0, 1, padding=0)
        self.plot.setYRange(0, 1, padding=0)

    def set_result(self, result, reported=None) -> None:
        """Draw ``reported`` (default ``result.reported``: the core recomputes it per access)."""
        self.result = result
        self.reported = pairs = result.reported if reported is None else reported
        study = result.study
        lay = genome_layout(study.variants)
        self.x1, self.x2 = lay.x[pairs.i], lay.x[pairs.j]
        self.nlp = pairs_neglog10(pairs)
        lo, hi = (float(np.nanmin(self.nlp)), float(np.nanmax(self.nlp))) if len(pairs) else (0.0, 1.0)
        if hi - lo < 1e-9:
            lo, hi = lo - 0.5, hi + 0.5
        self._levels = (lo, hi)
        self.colorbar.setLevels((lo, hi))
        self._draw_grid(lay)
        self.selected_item.clear()
        self.empty_text.setText("" if len(pairs) else f"No pair reached P ≤ {result.params.epi1:g}")
        lo_x, hi_x = float(lay.starts[0]) if len(lay.starts) else 0.0, float(lay.ends[-1]) if len(lay.ends) else 1.0
        self.empty_text.setPos(0.5 * (lo_x + hi_x), 0.5 * (lo_x + hi_x))
        self._full_range = (lo_x, hi_x)
        self.density_counts = np.zeros((0, 0))
        self._draw_pairs()
        self.reset_view()

    def set_top_n(self, n: int) -> None:
        """How many of the strongest pairs are drawn as points over the density."""
        self.top_n = max(1, int(n))
        self._draw_pairs()

    def drawn_mode(self) -> str:
        """What is drawn now: ``"all"`` (every pair as a point), ``"top"`` (the strongest
        ``top_n`` over the density) or ``"density"``."""
        mode = self.mode.currentData()
        if mode == "auto":
            return "all" if len(self.x1) <= self.top_n else "top"
        return mode

    def _draw_pairs(self) -> None:
        """Points and density as the mode asks (the pairs are the ones :meth:`set_result` placed)."""
        if self.result is None:
            return
        n = len(self.x1)
        mode = self.drawn_mode()
        if mode == "all":
            rows = np.arange(n)
        elif mode == "top":  # the strongest, the first listed on equal P
            rows = np.sort(np.argsort(-np.nan_to_num(self.nlp, nan=-np.inf), kind="stable")[: self.top_n])
        else:
            rows = np.zeros(0, np.int64)
        self.drawn = rows
        lo, hi = self._levels
        bin_of = np.clip(((self.nlp[rows] - lo) / (hi - lo) * N_BINS).astype(np.int64), 0, N_BINS - 1)
        for b, item in enumerate(self.bins):
            keep = rows[bin_of == b]
            item.setData(x=self.x1[keep], y=self.x2[keep])
        self.hover_index = NearestPoint(self.x1[rows], self.x2[rows], rows)
        show_density = mode != "all" and n > 0
        if show_density:
            self._draw_density()
        self.density.setVisible(show_density)
        self.mode_note.setText(
            "" if not n else f"all {n:,} pairs as points" if mode == "all"
            else f"density of {n:,} pairs; the strongest {len(rows):,} as points" if mode == "top"
            else f"density of {n:,} pairs (hover and click: switch to points)")

    def _draw_density(self) -> None:
        lo, hi = self._full_range
        if not self.density_counts.size:
            self.density_counts, _, _ = np.histogram2d(self.x1, self.x2, bins=DENSITY_BINS, range=[[lo, hi], [lo, hi]])
        img = np.log1p(self.density_counts)
        self.density.setImage(img, levels=(0.0, max(float(img.max()), 1e-9)), autoLevels=False)
        self.density.setRect(QRectF(lo, lo, hi - lo, hi - lo))

    def _draw_grid(self, lay) -> None:
        for line in self.grid_lines:
            self.plot.removeItem(line)
        self.grid_lines = []
        pen = pg.mkPen((150, 150, 150, 120), width=1)
        for pos in lay.boundaries():
            for angle in (90, 0):
                line = pg.InfiniteLine(pos=float(pos), angle=angle, pen=pen, movable=False)
                self.plot.addItem(line)
                self.grid_lines.append(line)
        for side, which in (("bottom", "SNP1"), ("left", "SNP2")):
            self.plot.getAxis(side).set_layout(lay)
            label = position_label(lay)
            self.plot.setLabel(side, f"{which}: {label[0].lower()}{label[1:]}" if len(lay.chroms) == 1 else f"{which} (chromosome)")
        diag = pg.PlotCurveItem([lay.starts[0], lay.ends[-1]], [lay.starts[0], lay.ends[-1]],
                                pen=pg.mkPen((150, 150, 150, 160), width=1, style=Qt.PenStyle.DotLine))
        self.plot.addItem(diag)
        self.grid_lines.append(diag)

    def reset_view(self) -> None:
        if self.result is None:
            return
        lo, hi = self._full_range
        pad = 0.01 * (hi - lo)
        self.plot.setXRange(lo - pad, hi + pad, padding=0)
        self.plot.setYRange(lo - pad, hi + pad, padding=0)

    def describe_point(self, row) -> str:
        r = self.result
        v = r.study.variants
        pr = self.reported
        row = int(row)
        a, b = int(pr.i[row]), int(pr.j[row])
        text = (f"{v.snp[a]} (chr{v.chrom[a]}:{int(v.bp[a]):,}) × {v.snp[b]} (chr{v.chrom[b]}:{int(v.bp[b]):,})   "
                f"STAT = {pr.stat[row]:.4g}   DF = {int(pr.df[row])}   P = {pr.p[row]:.3g}")
        if getattr(pr, "adj", None) is not None:  # the covariate-adjusted test (--covar)
            st, df, p = (a[row] for a in pr.adj)
            # P_ADJ first, the rest in brackets: the longer line ran to a 1366-pixel window's edge
            text += (f"   P_ADJ = {p:.3g} (STAT_ADJ = {st:.4g}, DF_ADJ = {int(df)})"
                     if np.isfinite(p) and np.isfinite(df) else "   P_ADJ = NA")
        emp2 = getattr(pr, "emp2", None)
        if emp2 is not None:  # --perm's family-wise P of the pair
            text += f"   EMP2 = {emp2[row]:.4g}" if np.isfinite(emp2[row]) else "   EMP2 = NA"
        return text

    def point_clicked(self, row) -> None:
        self.pairClicked.emit(int(row))

    def mark_pairs(self, rows: np.ndarray) -> None:
        """Ring the given rows of the reported pairs (the selected SNP's pairs)."""
        rows = np.asarray(rows, dtype=np.int64)
        if self.result is None or not rows.size:
            self.selected_item.clear()
            return
        self.selected_item.setData(x=self.x1[rows], y=self.x2[rows])
