"""The regional (LocusZoom-style) view: the region around each SNP of a selected pair (or one SNP).

One panel per SNP, side by side: x the position on its chromosome (Mb), y −log10 P of each SNP's
best interaction (the scan's per-SNP summary) or of the single-locus test, each point coloured by
its r² with the panel's SNP (:mod:`gui.regional`), that SNP a purple diamond. The half-width (kb)
and the y value are chosen above the plots; the r² legend is drawn in the plot so an exported PNG
carries it. No gene track: none of gboost's inputs carries genes for the study, and genes from
elsewhere drawn on its positions could be of another genome build.

The view draws from a :class:`gui.state.RegionRequest` and the result it was made for
(:meth:`RegionalPlot.set_region`), and :meth:`RegionalPlot.clear` leaves nothing of it.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QPushButton, QSpinBox

from gui.plots.base import NearestPoint, PlotPanel
from gui.regional import (BEST_INTERACTION, CENTRE, DEFAULT_HALF_WIDTH_KB, LD_BINS, NO_LD, SINGLE_LOCUS, ld_colours,
                          region)
from gui.resultdata import test_name

Y_LABELS = {BEST_INTERACTION: "best interaction −log10 P", SINGLE_LOCUS: "single-locus −log10 P"}
EMPTY_TEXT = ("Double-click a pair in the table (or right-click it ▸ Regional view),\n"
              "or select a SNP or pair and press “Show the selection”")


class MbAxis(pg.AxisItem):
    """Positions in bp read as Mb (pyqtgraph would print scientific-notation bp)."""

    def __init__(self, orientation: str = "bottom", **kwargs):
        super().__init__(orientation, **kwargs)
        self.enableAutoSIPrefix(False)

    def tickStrings(self, values, scale, spacing):
        mb = spacing / 1e6
        digits = max(0, int(np.ceil(-np.log10(mb)))) if mb > 0 else 0
        return [f"{v / 1e6:.{digits}f}" for v in values]


def legend_html() -> str:
    """The r² classes as coloured squares (a LabelItem's text, in the exported image too)."""
    parts = ["<span style='color:#333333'>r² with the marked SNP:</span>"]
    bounds = [lo for lo, _ in LD_BINS]
    for n, (lo, colour) in enumerate(LD_BINS):
        hi = 1.0 if n == 0 else bounds[n - 1]
        parts.append(f"<span style='color:{colour}'>■</span> {lo:.1f}–{hi:.1f}")
    parts.append(f"<span style='color:{NO_LD}'>■</span> none")
    parts.append(f"<span style='color:{CENTRE}'>◆</span> marked SNP")
    return "&nbsp;&nbsp;".join(parts)


class RegionalPlot(PlotPanel):
    """See the module docstring. ``widthChanged(bp)``: the user changed the half-width;
    ``showSelectionRequested()``: the "Show the selection" button."""

    widthChanged = Signal(int)
    showSelectionRequested = Signal()
    name = "Regional view"

    def __init__(self, parent=None):
        super().__init__(parent, axisItems={"bottom": MbAxis("bottom")})
        self.result = None
        self.request = None
        self.regions: list = []
        self.what = BEST_INTERACTION
        self._single = None  # −log10 P of the single-locus test of every SNP of ``result`` (computed once)
        pw = self.plot_widget
        # the legend on its own row above the panels (row 0), the panels below it
        pw.ci.removeItem(self.plot)
        self.legend = pg.LabelItem(legend_html(), size="9pt")
        pw.addItem(self.legend, row=0, col=0, colspan=2)
        pw.addItem(self.plot, row=1, col=0)
        self.plot2 = pw.addPlot(row=1, col=1, axisItems={"bottom": MbAxis("bottom")})
        self.plot2.showGrid(x=False, y=True, alpha=0.15)
        self.plot2.setMenuEnabled(False)
        self.panels = [self.plot, self.plot2]
        self.points, self.centres, self.hovers = [], [], [None, None]
        for plot in self.panels:
            plot.getAxis("left").setWidth(48)
            pts = pg.ScatterPlotItem(size=8, pen=pg.mkPen("#404040", width=0.6), pxMode=True, symbol="o")
            centre = pg.ScatterPlotItem(size=15, pen=pg.mkPen("k", width=1.2), brush=pg.mkBrush(CENTRE), pxMode=True,
                                        symbol="d")
            centre.setZValue(10)
            plot.addItem(pts)
            plot.addItem(centre)
            self.points.append(pts)
            self.centres.append(centre)
        self.empty_text = pg.TextItem(EMPTY_TEXT, anchor=(0.5, 0.5), color="#555555")
        self.plot.addItem(self.empty_text, ignoreBounds=True)

        self.width_box = QSpinBox()
        self.width_box.setRange(1, 10000)
        self.width_box.setSingleStep(50)
        self.width_box.setValue(DEFAULT_HALF_WIDTH_KB)
        self.width_box.setPrefix("± ")
        self.width_box.setSuffix(" kb")
        self.width_box.setToolTip("How far either side of each SNP the region reaches")
        self.width_box.setKeyboardTracking(False)  # one redraw per value typed, not per digit
        self.width_box.valueChanged.connect(lambda kb: self.widthChanged.emit(int(kb) * 1000))
        self.y_box = QComboBox()
        self.y_box.addItem("Best interaction (per-SNP summary)", BEST_INTERACTION)
        self.y_box.addItem("Single-locus test", SINGLE_LOCUS)
        self.y_box.setToolTip("Each SNP's height: −log10 P of its strongest interaction over all its partners "
                              "(the scan's .epi.cc.summary), or of its single-locus test (marginal.tsv)")
        self.y_box.currentIndexChanged.connect(lambda _i: self.set_y(self.y_box.currentData()))
        self.show_button = QPushButton("Show the selection")
        self.show_button.setToolTip("The region around the selected pair's two SNPs (or the selected SNP)")
        self.show_button.clicked.connect(self.showSelectionRequested)
        bar = QHBoxLayout()
        bar.setContentsMargins(4, 2, 4, 0)
        bar.addWidget(self.show_button)
        bar.addWidget(QLabel("Region:"))
        bar.addWidget(self.width_box)
        bar.addWidget(QLabel("Height:"))
        bar.addWidget(self.y_box)
        bar.addStretch(1)
        self.layout().insertLayout(0, bar)
        self._label_empty()

    # -- data -----------------------------------------------------------------------------------
    def _label_empty(self) -> None:
        self.plot.setTitle("Regional view")
        self.plot2.setTitle("")
        self.plot2.setVisible(False)
        for plot in self.panels:
            plot.setLabel("bottom", "Position (Mb)")
            plot.setLabel("left", Y_LABELS[self.what])
        self.empty_text.setText(EMPTY_TEXT)
        self.empty_text.setVisible(True)
        self.plot.setXRange(0, 1, padding=0)
        self.plot.setYRange(0, 1, padding=0)
        self.empty_text.setPos(0.5, 0.5)

    def clear(self) -> None:
        """Nothing of the last region, result or study left."""
        self.result = self.request = None
        self._single = None
        self.regions = []
        self.hover_index = None
        self.hovers = [None, None]
        for item in (*self.points, *self.centres):
            item.clear()
        self.readout.setText(" ")
        self._label_empty()

    def set_region(self, result, request, single=None) -> None:
        """Draw ``request`` (a :class:`gui.state.RegionRequest`) of ``result``; ``single``: the
        single-locus −log10 P of every SNP, if the caller has it."""
        self.clear()
        if result is None or request is None:
            return
        self.result, self.request = result, request
        if single is not None:
            self._single = np.asarray(single, np.float64)
        self.regions = [region(result, k, request.half_width_bp, self._single_all()) for k in request.snps]
        if self.width_box.value() * 1000 != request.half_width_bp:
            self.width_box.blockSignals(True)
            self.width_box.setValue(max(1, request.half_width_bp // 1000))
            self.width_box.blockSignals(False)
        self._draw()

    def _single_all(self) -> np.ndarray:
        if self._single is None:
            from gui.resultdata import marginal_neglog10

            self._single = marginal_neglog10(self.result)
        return self._single

    def set_y(self, what: str) -> None:
        if what not in Y_LABELS or what == self.what:
            return
        self.what = what
        if self.y_box.currentData() != what:
            self.y_box.setCurrentIndex(self.y_box.findData(what))
        if self.regions:
            self._draw()
        else:
            for plot in self.panels:
                plot.setLabel("left", Y_LABELS[what])

    def _draw(self) -> None:
        v = self.result.study.variants
        self.empty_text.setVisible(False)
        self.plot2.setVisible(len(self.regions) > 1)
        if self.what == SINGLE_LOCUS:
            allelic = bool(getattr(self.result.params, "allelic", False)) and getattr(self.result, "qt", None) is None
            ylabel = f"−log10 P ({test_name(self.result.study, allelic)})"
        else:
            ylabel = Y_LABELS[BEST_INTERACTION]
        for n, reg in enumerate(self.regions):
            plot, pts, centre = self.panels[n], self.points[n], self.centres[n]
            y = reg.y(self.what)
            ok = np.isfinite(y)
            # the SNPs in stronger LD drawn last, on top (as LocusZoom): in a dense region the few
            # that tag the SNP would otherwise hide under the many that do not
            others = np.flatnonzero(ok & (reg.snps != reg.centre))
            others = others[np.argsort(np.nan_to_num(reg.r2[others], nan=-1.0), kind="stable")]
            brushes = [pg.mkBrush(c) for c in ld_colours(reg.r2[others])]
            size = 8 if len(others) <= 300 else 6 if len(others) <= 2000 else 5
            pts.setData(x=reg.bp[others], y=y[others], brush=brushes, data=reg.snps[others], size=size)
            at = np.flatnonzero(reg.snps == reg.centre)
            yc = y[at] if len(at) else np.zeros(0)
            if len(at) and np.isfinite(yc[0]):
                centre.setData(x=reg.bp[at], y=yc)
            else:
                centre.clear()
            self.hovers[n] = NearestPoint(reg.bp.astype(np.float64), y, reg.snps)
            k = reg.centre
            plot.setTitle(f"{v.snp[k]}  (chr{v.chrom[k]}:{int(v.bp[k]):,}, ± {reg.half_width_bp / 1000:g} kb, "
                          f"{len(reg):,} SNP{'s' if len(reg) != 1 else ''})")
            plot.setLabel("bottom", f"Position on chromosome {v.chrom[k]} (Mb)")
            plot.setLabel("left", ylabel)
            x0, x1 = max(0.0, float(v.bp[k]) - reg.half_width_bp), float(v.bp[k]) + reg.half_width_bp
            plot.setXRange(x0, x1, padding=0.02)
            top = float(np.nanmax(y)) if ok.any() else 1.0
            plot.setYRange(0.0, max(top, 1.0) * 1.1, padding=0.02)
        self.hover_index = self.hovers[0]

    def reset_view(self) -> None:
        if self.regions:
            self._draw()
        else:
            self._label_empty()

    # -- what the panels show (for tests and the read-out) --------------------------------------
    def shown(self, n: int = 0) -> tuple[np.ndarray, np.ndarray, list[str]]:
        """Panel ``n``'s points: (SNP indices, x in bp, colours as '#rrggbb'), the marked SNP first."""
        pts, centre = self.points[n], self.centres[n]
        cx, _cy = centre.getData()
        reg = self.regions[n]
        snps = [reg.centre] * len(cx)
        xs = list(cx)
        colours = [CENTRE] * len(cx)
        x, _y = pts.getData()
        data = pts.data["data"]
        brushes = pts.data["brush"]
        snps += [int(s) for s in data]
        xs += list(x)
        colours += [b.color().name() for b in brushes]
        return np.asarray(snps, np.int64), np.asarray(xs, np.float64), colours

    def describe_point(self, k) -> str:
        k = int(k)
        v = self.result.study.variants
        for reg in self.regions:
            at = np.flatnonzero(reg.snps == k)
            if len(at):
                a = int(at[0])
                text = (f"{v.snp[k]}   chr{v.chrom[k]}:{int(v.bp[k]):,}   r² with {v.snp[reg.centre]} = "
                        f"{reg.r2[a]:.3f}   best interaction −log10 P = {reg.best[a]:.2f}")
                if reg.best_partner[a] >= 0:
                    text += f" (with {v.snp[reg.best_partner[a]]})"
                return text + f"   single-locus −log10 P = {reg.single[a]:.2f}"
        return f"{v.snp[k]}"

    def _on_mouse_moved(self, args) -> None:
        for n, plot in enumerate(self.panels):
            vb = plot.getViewBox()
            if plot.isVisible() and vb.sceneBoundingRect().contains(args[0]) and self.hovers[n] is not None:
                p = vb.mapSceneToView(args[0])
                px, py = vb.viewPixelSize()
                hit = self.hovers[n].nearest(p.x(), p.y(), px, py)
                text = self.describe_point(hit) if hit is not None else " "
                self.readout.setText(text)
                if hit is not None:
                    self.hovered.emit(text)
                return
