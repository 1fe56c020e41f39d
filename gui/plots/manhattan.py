"""Manhattan plot of the single-locus (marginal) test, with the selected SNP's interactions.

One ``ScatterPlotItem`` per chromosome colour (two: alternating), one shared pen and brush each,
pixel-mode symbols: fast at 1e6 SNPs. Each item keeps the SNP index of its points in a NumPy
array (``group_snps``) instead of pyqtgraph's per-point ``data=`` object array.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Signal

from gui.plots.base import (CHROM_COLOURS, GENOME_WIDE, HIGHLIGHT, SELECTED, SUGGESTIVE, NearestPoint, PlotPanel,
                             UniformScatter)
from gui.plots.genome import GenomeLayout, genome_layout
from gui.resultdata import marginal_neglog10

GENOME_WIDE_P = 5e-8
SUGGESTIVE_P = 1e-5


class ManhattanPlot(PlotPanel):
    """−log10 P of the marginal test by genomic position; click a SNP to see its partners."""

    snpClicked = Signal(int)
    name = "Manhattan plot"

    def __init__(self, parent=None):
        super().__init__(parent)
        self.result = None
        self.layout_: GenomeLayout | None = None
        self.x = self.y = np.zeros(0)
        self.group_items: list[UniformScatter] = []
        self.group_snps: list[np.ndarray] = []
        self.partner_count = np.zeros(0, np.int64)
        self.selected: int | None = None
        self.partners = np.zeros(0, np.int64)

        self._label_empty()
        self.plot.getAxis("bottom").enableAutoSIPrefix(False)
        for colour in CHROM_COLOURS:
            item = UniformScatter(size=5, pen=None, brush=pg.mkBrush(colour), pxMode=True, symbol="o")
            self.plot.addItem(item)
            self.group_items.append(item)
        self.arcs = pg.PlotCurveItem(pen=pg.mkPen(HIGHLIGHT, width=1.5))
        self.partner_item = UniformScatter(size=10, pen=pg.mkPen("#5a2300", width=1), brush=pg.mkBrush(HIGHLIGHT), pxMode=True)
        self.selected_item = UniformScatter(size=14, pen=pg.mkPen("k", width=1.5), brush=pg.mkBrush(SELECTED), pxMode=True,
                                                symbol="o")
        for it in (self.arcs, self.partner_item, self.selected_item):
            it.setZValue(10)
            self.plot.addItem(it)
        self.lines = []
        # Genome-wide caption above its line, suggestive below its own: on a tall axis the two
        # lines are a few pixels apart and captions on the same side would overlap.
        for p, colour, label, anchor in ((GENOME_WIDE_P, GENOME_WIDE, "genome-wide 5e-8", (1, 1)),
                                         (SUGGESTIVE_P, SUGGESTIVE, "suggestive 1e-5", (1, 0))):
            line = pg.InfiniteLine(pos=-np.log10(p), angle=0, movable=False,
                                   pen=pg.mkPen(colour, width=1.2, style=pg.QtCore.Qt.PenStyle.DashLine),
                                   label=label, labelOpts={"position": 0.98, "color": colour, "anchors": [anchor, anchor]})
            self.plot.addItem(line)
            self.lines.append(line)

    def _label_empty(self) -> None:
        self.plot.setLabel("left", "−log10 P (single-locus test)")
        self.plot.setLabel("bottom", "Chromosome")
        self.plot.setTitle("Manhattan plot")
        self.plot.getAxis("bottom").setTicks(None)

    # -- data -----------------------------------------------------------------------------------
    def clear(self) -> None:
        """Nothing of the last result left: points, partners, title, axes and the info line."""
        self.result = None
        self.layout_ = None
        for item in self.group_items:
            item.clear()
        self.group_snps = []
        self.hover_index = None
        self.x = self.y = np.zeros(0)
        self.partner_count = np.zeros(0, np.int64)
        self.clear_selection()
        self._label_empty()
        self.readout.setText(" ")
        self.reset_view()

    def set_result(self, result, reported=None) -> None:
        """Plot every SNP of ``result.study`` that has a marginal P; count partners in ``reported``."""
        self.result = result
        study = result.study
        self.layout_ = genome_layout(study.variants)
        self.x = self.layout_.x
        self.y = marginal_neglog10(result)
        ok = np.isfinite(self.y)
        self.group_snps = []
        for g, item in enumerate(self.group_items):
            snps = np.flatnonzero(ok & (self.layout_.chrom_of % 2 == g))
            item.setData(x=self.x[snps], y=self.y[snps])
            self.group_snps.append(snps)
        rep = result.reported if reported is None else reported
        self.partner_count = np.bincount(np.concatenate([rep.i, rep.j]).astype(np.int64), minlength=study.n_snps)
        self.hover_index = NearestPoint(self.x, self.y, np.arange(study.n_snps))
        axis = self.plot.getAxis("bottom")
        if len(self.layout_.chroms) > 1:
            axis.setTicks([self.layout_.ticks()])
            self.plot.setLabel("bottom", "Chromosome")
        else:
            axis.setTicks(None)
            name = self.layout_.chroms[0] if self.layout_.chroms else ""
            self.plot.setLabel("bottom", f"Position on chromosome {name} (bp from first SNP)")
        if getattr(result, "qt", None) is not None:  # a quantitative trait: the additive linear test
            test = "additive linear test, 1 df"
        else:
            test = "allelic χ², 1 df" if result.params.allelic else "genotype likelihood ratio, 2 df"
        self.plot.setLabel("left", f"−log10 P ({test})")
        self.plot.setTitle(f"Manhattan plot: single-locus test of {study.n_snps:,} SNPs")
        self.clear_selection()
        self.reset_view()

    def reset_view(self) -> None:
        if not len(self.x):
            self.plot.setXRange(0, 1, padding=0)
            self.plot.setYRange(0, -np.log10(GENOME_WIDE_P) * 1.08, padding=0)
            return
        top = np.nanmax(self.y[np.isfinite(self.y)]) if np.isfinite(self.y).any() else 0.0
        ymax = max(top, -np.log10(GENOME_WIDE_P)) * 1.08 + 0.2
        span = self.x.max() - self.x.min() if len(self.x) > 1 else 1.0
        self.plot.setXRange(self.x.min() - 0.01 * span, self.x.max() + 0.01 * span, padding=0)
        self.plot.setYRange(-0.015 * ymax, ymax, padding=0)  # points at P = 1 drawn whole

    def plotted_snps(self) -> np.ndarray:
        """SNP indices of every point drawn (all colour groups), sorted."""
        return np.sort(np.concatenate(self.group_snps)) if self.group_snps else np.zeros(0, np.int64)

    # -- interaction ----------------------------------------------------------------------------
    def describe_point(self, k) -> str:
        v = self.result.study.variants
        k = int(k)
        p = self.result.marginal_p[k]
        n = int(self.partner_count[k]) if k < len(self.partner_count) else 0
        partners = f"{n} reported interaction partner{'s' if n != 1 else ''}"
        return (f"{v.snp[k]}   chr{v.chrom[k]}:{int(v.bp[k]):,}   P = {p:.3g}   (−log10 P = {self.y[k]:.2f})   {partners}")

    def point_clicked(self, k) -> None:
        self.snpClicked.emit(int(k))

    def select_snp(self, k: int | None, partners: np.ndarray | None = None) -> None:
        """Mark SNP ``k``, its partners and the arcs between them (``None`` clears)."""
        self.selected = None if k is None else int(k)
        self.partners = np.zeros(0, np.int64) if partners is None else np.asarray(partners, np.int64)
        if self.selected is None or not len(self.x):
            self.clear_selection()
            return
        k = self.selected
        self.selected_item.setData(x=[self.x[k]], y=[self.y[k]])
        part = self.partners
        self.partner_item.setData(x=self.x[part], y=self.y[part])
        self.arcs.setData(*self._arcs(k, part), connect="finite")

    def clear_selection(self) -> None:
        self.selected = None
        self.partners = np.zeros(0, np.int64)
        self.selected_item.clear()
        self.partner_item.clear()
        self.arcs.setData([], [])

    def _arcs(self, k: int, partners: np.ndarray, n: int = 48) -> tuple[np.ndarray, np.ndarray]:
        """Quadratic Bézier arcs from SNP k to each partner, higher for distant partners."""
        if not len(partners):
            return np.zeros(0), np.zeros(0)
        x0, y0 = self.x[k], self.y[k]
        x1, y1 = self.x[partners], self.y[partners]
        xspan = max(np.ptp(self.x), 1.0)
        yspan = max(np.nanmax(self.y), -np.log10(GENOME_WIDE_P))
        cx = 0.5 * (x0 + x1)
        cy = np.maximum(y0, y1) + yspan * (0.08 + 0.35 * np.abs(x1 - x0) / xspan)
        t = np.linspace(0.0, 1.0, n)[None, :]
        bx = (1 - t) ** 2 * x0 + 2 * (1 - t) * t * cx[:, None] + t ** 2 * x1[:, None]
        by = (1 - t) ** 2 * y0 + 2 * (1 - t) * t * cy[:, None] + t ** 2 * y1[:, None]
        nan = np.full((len(partners), 1), np.nan)
        return np.hstack([bx, nan]).ravel(), np.hstack([by, nan]).ravel()
