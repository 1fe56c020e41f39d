"""Manhattan plot: the single-locus (marginal) test above, each SNP's strongest interaction below.

The top track is −log10 P of the single-locus test by genomic position, drawn as soon as a study
is open (before any scan: :meth:`ManhattanPlot.set_single_locus`); SNPs with a reported
interaction partner are ringed (past 5 % of the SNPs, or 200, those of the strongest interactions only). The bottom track, x-linked to it, is the epistasis result: each
SNP's largest −log10 P over its reported pairs (:func:`gui.resultdata.best_interaction`), with the
Bonferroni line of the scan's valid tests and, after a scan with --perm, the permutations'
empirical family-wise 0.05 line (:func:`gui.resultdata.permutation_threshold`). A click in either
track selects the SNP.

One ``ScatterPlotItem`` per chromosome colour (two: alternating), one shared pen and brush each,
pixel-mode symbols: fast at 1e6 SNPs. Each item keeps the SNP index of its points in a NumPy
array (``group_snps``) instead of pyqtgraph's per-point ``data=`` object array.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal

from gui.plots.base import (CHROM_COLOURS, GENOME_WIDE, HIGHLIGHT, SELECTED, SUGGESTIVE, NearestPoint, PlotPanel,
                            PositionAxis, UniformScatter, position_label)
from gui.plots.genome import GenomeLayout, genome_layout
from gui.resultdata import (best_interaction, marginal_neglog10, permutation_threshold, single_neglog10,
                             test_name)

GENOME_WIDE_P = 5e-8
SUGGESTIVE_P = 1e-5
INTERACTION = "#009e73"  # the epistasis track and the rings of interacting SNPs (Okabe-Ito bluish green)
BONFERRONI = "#7b3294"
PERMUTATION = "#b35806"  # --perm's family-wise line: dark orange, apart from Bonferroni's purple
RINGS_OVER = 0.05  # the largest share of SNPs ringed: past it, only the strongest interactions are
RINGS_MIN, RINGS_MAX = 20, 200  # (but at least 20, in a small study, and at most 200: 1,166 rings of
# a 23,000-SNP study at 1e-3 were a carpet again)
# The share of a track's height kept above its highest captioned line for the caption (drawn
# above the line): in a 1366x768 window the tracks are ~195 and ~110 pixels tall, a caption 22.
CAPTION_ROOM = {"top": 0.14, "pair": 0.25}


def caption_top(top: float, lo: float, line: float, room: float) -> float:
    """An axis top at least ``top`` that leaves ``room`` of the axis (from ``lo``) above ``line``."""
    return max(top, (line - room * lo) / (1.0 - room))



def _level_line(colour, where: float, anchor: tuple, label: str = "", *, pos: float = 0.0, width: float = 1.2,
                style=Qt.PenStyle.DashLine) -> pg.InfiniteLine:
    """A horizontal significance level, its caption at ``where`` along it (0: left, 1: right)."""
    return pg.InfiniteLine(pos=pos, angle=0, movable=False, pen=pg.mkPen(colour, width=width, style=style),
                           label=label, labelOpts={"position": where, "color": colour, "anchors": [anchor, anchor]})

class ManhattanPlot(PlotPanel):
    """−log10 P of the marginal test by genomic position, each SNP's best interaction below it;
    click a SNP to see its partners."""

    snpClicked = Signal(int)
    snpDoubleClicked = Signal(int)  # after a scan: the regional view of the SNP
    ringed = np.zeros(0, np.int64)  # the SNPs ringed in the top track
    name = "Manhattan plot"

    def __init__(self, parent=None):
        super().__init__(parent, axisItems={"bottom": PositionAxis("bottom")})
        self.result = None
        self.study = None
        self.marginal_p = np.zeros(0)
        self.layout_: GenomeLayout | None = None
        self.x = self.y = np.zeros(0)
        self.best = np.zeros(0)  # per SNP: largest −log10 P of its reported pairs (NaN: none)
        self.best_partner = np.zeros(0, np.int64)
        self.group_items: list[UniformScatter] = []
        self.group_snps: list[np.ndarray] = []
        self.partner_count = np.zeros(0, np.int64)
        self.selected: int | None = None
        self.partners = np.zeros(0, np.int64)

        pp = self.pair_plot = self.plot_widget.addPlot(row=1, col=0, axisItems={"bottom": PositionAxis("bottom")})
        pp.showGrid(x=False, y=True, alpha=0.15)
        pp.setMenuEnabled(False)
        pp.setXLink(self.plot)
        pp.getAxis("left").setWidth(52)
        self.plot.getAxis("left").setWidth(52)  # the two tracks' x axes line up
        lay = self.plot_widget.ci.layout
        lay.setRowStretchFactor(0, 3)
        lay.setRowStretchFactor(1, 2)
        self.pair_hover: NearestPoint | None = None

        for colour in CHROM_COLOURS:
            item = UniformScatter(size=5, pen=None, brush=pg.mkBrush(colour), pxMode=True, symbol="o")
            self.plot.addItem(item)
            self.group_items.append(item)
        self.interacting_item = UniformScatter(size=9, pen=pg.mkPen(INTERACTION, width=1.4), brush=None, pxMode=True)
        self.interacting_item.setZValue(5)  # over the points; under them when many (set_result)
        self.plot.addItem(self.interacting_item)
        self.pair_item = UniformScatter(size=6, pen=None, brush=pg.mkBrush(INTERACTION), pxMode=True, symbol="t1")
        pp.addItem(self.pair_item)
        self.arcs = pg.PlotCurveItem(pen=pg.mkPen(HIGHLIGHT, width=1.5))
        self.partner_item = UniformScatter(size=10, pen=pg.mkPen("#5a2300", width=1), brush=pg.mkBrush(HIGHLIGHT), pxMode=True)
        self.selected_item = UniformScatter(size=14, pen=pg.mkPen("k", width=1.5), brush=pg.mkBrush(SELECTED), pxMode=True,
                                            symbol="o")
        self.pair_partner_item = UniformScatter(size=10, pen=pg.mkPen("#5a2300", width=1), brush=pg.mkBrush(HIGHLIGHT),
                                                pxMode=True, symbol="t1")
        self.pair_selected_item = UniformScatter(size=13, pen=pg.mkPen("k", width=1.5), brush=pg.mkBrush(SELECTED),
                                                 pxMode=True, symbol="t1")
        for it in (self.arcs, self.partner_item, self.selected_item):
            it.setZValue(10)
            self.plot.addItem(it)
        for it in (self.pair_partner_item, self.pair_selected_item):
            it.setZValue(10)
            pp.addItem(it)
        self.lines = []
        # Both captions above their lines (below the suggestive one lie most of the study's points),
        # at opposite ends: on a tall axis the two lines are a few pixels apart.
        for p, colour, label, where, anchor in ((GENOME_WIDE_P, GENOME_WIDE, "genome-wide 5e-8", 0.98, (1, 1)),
                                                (SUGGESTIVE_P, SUGGESTIVE, "suggestive 1e-5", 0.02, (0, 1))):
            line = _level_line(colour, where, anchor, label, pos=-np.log10(p))
            self.plot.addItem(line)
            self.lines.append(line)
        self.bonferroni_line = _level_line(BONFERRONI, 0.98, (1, 1))
        self.bonferroni_line.setVisible(False)
        pp.addItem(self.bonferroni_line)
        # The permutations' line: its caption at the other end from Bonferroni's, the two lines
        # being often a few pixels apart (both are genome-wide 0.05 levels).
        self.perm_line = _level_line(PERMUTATION, 0.02, (0, 1), width=1.4, style=Qt.PenStyle.DashDotLine)
        self.perm_line.setVisible(False)
        pp.addItem(self.perm_line)
        self.pair_text = pg.TextItem("", anchor=(0.5, 0.5), color="#555555")
        pp.addItem(self.pair_text, ignoreBounds=True)
        self._label_empty()

    def _label_empty(self) -> None:
        self.plot.setLabel("left", "−log10 P (single-locus test)")
        self.plot.setTitle("Manhattan plot")
        self.pair_plot.setLabel("left", "best pair −log10 P")
        for plot in (self.plot, self.pair_plot):
            plot.setLabel("bottom", "Chromosome")
            plot.getAxis("bottom").set_layout(None)
        self.plot.getAxis("bottom").showLabel(False)  # the lower track's axis names the positions
        self.bonferroni_line.setVisible(False)
        self.perm_line.setVisible(False)
        self.pair_text.setText("")

    # -- data -----------------------------------------------------------------------------------
    def clear(self) -> None:
        """Nothing of the last study or result left: points, partners, title, axes and the info line."""
        self.result = None
        self.study = None
        self.marginal_p = np.zeros(0)
        self.layout_ = None
        for item in self.group_items:
            item.clear()
        for item in (self.interacting_item, self.pair_item):
            item.clear()
        self.ringed = np.zeros(0, np.int64)
        self.group_snps = []
        self.hover_index = self.pair_hover = None
        self.x = self.y = self.best = np.zeros(0)
        self.best_partner = np.zeros(0, np.int64)
        self.partner_count = np.zeros(0, np.int64)
        self.clear_selection()
        self._label_empty()
        self.readout.setText(" ")
        self.reset_view()

    def set_single_locus(self, study, single) -> None:
        """Before a scan: the single-locus test of ``study`` (``single``:
        :func:`gui.resultdata.single_locus`); the interaction track waits for the scan."""
        self.clear()
        self._draw_study(study, single.p, single_neglog10(single), single.test)
        self.plot.setTitle(f"Manhattan plot: single-locus test of {study.n_snps:,} SNPs (no scan yet)")
        self.pair_text.setText("Run a scan: each SNP's strongest interaction is drawn here")
        self.reset_view()

    def set_result(self, result, reported=None) -> None:
        """Plot every SNP of ``result.study`` that has a marginal P, and each SNP's strongest pair
        of ``reported`` (default ``result.reported``) in the lower track."""
        self.result = result
        study = result.study
        if getattr(result, "qt", None) is not None:
            test = test_name(study, False)
        else:
            test = test_name(study, result.params.allelic)
        self._draw_study(study, result.marginal_p, marginal_neglog10(result), test)
        rep = result.reported if reported is None else reported
        self.partner_count = np.bincount(np.concatenate([rep.i, rep.j]).astype(np.int64), minlength=study.n_snps)
        self.best, self.best_partner = best_interaction(rep, study.n_snps)
        has = np.flatnonzero(np.isfinite(self.best))
        ringed = has[np.isfinite(self.y[has])]
        # Rings mark the SNPs to look at: at a loose --epi1 nearly every SNP is in a reported pair
        # (23,297 of 23,335 at 1e-3), and rings round all of them marked nothing, so past 5 % of
        # the SNPs only those of the strongest interactions are ringed, drawn over the points.
        cap = min(RINGS_MAX, max(RINGS_MIN, int(RINGS_OVER * study.n_snps)))
        if len(ringed) > cap:
            ringed = ringed[np.argsort(-self.best[ringed], kind="stable")[:cap]]
        self.ringed = ringed
        self.interacting_item.setData(x=self.x[ringed], y=self.y[ringed])
        self.interacting_item.setZValue(5)
        self.pair_item.setData(x=self.x[has], y=self.best[has])
        self.pair_hover = NearestPoint(self.x[has], self.best[has], has)
        n_valid = int(getattr(result, "n_valid", 0) or 0)
        if n_valid:
            bonf = -np.log10(0.05 / n_valid)
            self.bonferroni_line.setValue(bonf)
            caption = f"Bonferroni 0.05 / {n_valid:,} tests"
            self.bonferroni_line.label.setFormat(caption)
            self.bonferroni_line.label.setText(caption)  # (setFormat redraws only on a value change)
            self.bonferroni_line.setVisible(True)
        self._draw_permutation_line(getattr(result, "perm", None))
        self.pair_text.setText("" if len(has) else f"No pair reached P ≤ {result.params.epi1:g}")
        # (short enough for the plot's width in a 1366-pixel window: the longer title was cut off)
        rings = (f"ringed: {len(has):,} in a reported pair" if len(ringed) == len(has) else
                 f"ringed: {len(ringed):,} strongest of {len(has):,} paired")
        self.plot.setTitle(f"Single-locus test of {study.n_snps:,} SNPs ({rings}); below: each SNP's strongest interaction")
        self.clear_selection()
        self.reset_view()

    def _draw_permutation_line(self, perm) -> None:
        """--perm's empirical family-wise 0.05 threshold on the interaction track: at the −log10 P
        of its STAT at 4 df (the df of nearly every pair), captioned with the STAT itself."""
        thr = permutation_threshold(perm)
        self.perm_line.setVisible(thr is not None)
        perm_higher = False
        if thr is not None:
            self.perm_line.setValue(thr.neglog10)
            caption = f"family-wise 0.05, {perm.n:,} permutations (STAT > {thr.stat:.4g})"
            self.perm_line.label.setFormat(caption)
            self.perm_line.label.setText(caption)
            perm_higher = not self.bonferroni_line.isVisible() or thr.neglog10 >= self.bonferroni_line.value()
        # The upper line's caption above it, the lower's below (Bonferroni's above it when alone):
        # the lines a few pixels apart, a caption above the lower one was struck through by the upper.
        for line, above in ((self.perm_line, perm_higher), (self.bonferroni_line, not perm_higher)):
            x = line.label.anchors[0][0]
            line.label.anchors = [(x, 1 if above else 0)] * 2
            line.label.updatePosition()

    def _draw_study(self, study, p, y, test: str) -> None:
        self.study = study
        self.marginal_p = np.asarray(p, np.float64)
        self.layout_ = genome_layout(study.variants)
        self.x = self.layout_.x
        self.y = np.asarray(y, np.float64)
        self.best = np.full(study.n_snps, np.nan)
        self.best_partner = np.full(study.n_snps, -1, np.int64)
        self.partner_count = np.zeros(study.n_snps, np.int64)
        ok = np.isfinite(self.y)
        self.group_snps = []
        for g, item in enumerate(self.group_items):
            snps = np.flatnonzero(ok & (self.layout_.chrom_of % 2 == g))
            item.setData(x=self.x[snps], y=self.y[snps])
            self.group_snps.append(snps)
        self.hover_index = NearestPoint(self.x, self.y, np.arange(study.n_snps))
        label = position_label(self.layout_)
        for plot in (self.plot, self.pair_plot):
            plot.getAxis("bottom").set_layout(self.layout_)
            plot.setLabel("bottom", label)
        self.plot.getAxis("bottom").showLabel(False)
        self.plot.setLabel("left", f"−log10 P ({test})")
        self.pair_plot.setLabel("left", "best pair −log10 P")

    def reset_view(self) -> None:
        if not len(self.x):
            self.plot.setXRange(0, 1, padding=0)
            self.plot.setYRange(0, -np.log10(GENOME_WIDE_P) * 1.08, padding=0)
            self.pair_plot.setYRange(0, 10, padding=0)
            self.pair_text.setPos(0.5, 5)
            return
        top = np.nanmax(self.y[np.isfinite(self.y)]) if np.isfinite(self.y).any() else 0.0
        ymax = max(top, -np.log10(GENOME_WIDE_P)) * 1.08 + 0.2
        ymax = caption_top(ymax, -0.015 * ymax, -np.log10(GENOME_WIDE_P), CAPTION_ROOM["top"])
        span = self.x.max() - self.x.min() if len(self.x) > 1 else 1.0
        x0, x1 = self.x.min() - 0.01 * span, self.x.max() + 0.01 * span
        self.plot.setXRange(x0, x1, padding=0)
        self.plot.setYRange(-0.015 * ymax, ymax, padding=0)  # points at P = 1 drawn whole
        best = self.best[np.isfinite(self.best)]
        lo = float(best.min()) if best.size else 0.0
        hi = float(best.max()) if best.size else 10.0
        for line in (self.bonferroni_line, self.perm_line):
            if line.isVisible():
                hi = max(hi, float(line.value()))
        if self.perm_line.isVisible() and best.size:  # (a strict --epi1 may report pairs above it only)
            lo = min(lo, float(self.perm_line.value()))
        lo = max(0.0, lo - 0.1 * (hi - lo + 1.0))  # the reported pairs start at --epi1: no empty floor
        ptop = hi * 1.08 + 0.2
        for line in (self.bonferroni_line, self.perm_line):
            if line.isVisible():  # its caption inside the track, not cut off at the top
                ptop = caption_top(ptop, lo, float(line.value()), CAPTION_ROOM["pair"])
        self.pair_plot.setYRange(lo, ptop, padding=0)
        self.pair_text.setPos(0.5 * (x0 + x1), 0.5 * (lo + ptop))

    def plotted_snps(self) -> np.ndarray:
        """SNP indices of every point drawn (all colour groups), sorted."""
        return np.sort(np.concatenate(self.group_snps)) if self.group_snps else np.zeros(0, np.int64)

    def interaction_track(self) -> tuple[np.ndarray, np.ndarray]:
        """(SNP indices, −log10 P) of the lower track's points: each SNP's strongest reported pair."""
        snps = np.flatnonzero(np.isfinite(self.best))
        return snps, self.best[snps]

    # -- interaction ----------------------------------------------------------------------------
    def describe_point(self, k) -> str:
        v = self.study.variants
        k = int(k)
        p = self.marginal_p[k]
        text = f"{v.snp[k]}   chr{v.chrom[k]}:{int(v.bp[k]):,}   P = {p:.3g}   (−log10 P = {self.y[k]:.2f})"
        if self.result is None:
            return text
        n = int(self.partner_count[k]) if k < len(self.partner_count) else 0
        text += f"   {n} reported interaction partner{'s' if n != 1 else ''}"
        if n and k < len(self.best_partner) and self.best_partner[k] >= 0:
            text += f" (strongest: {v.snp[self.best_partner[k]]}, −log10 P = {self.best[k]:.2f})"
        return text

    def point_clicked(self, k) -> None:
        if self.result is not None:  # before a scan there are no partners to show
            self.snpClicked.emit(int(k))

    def pair_point_at(self, x: float, y: float, radius: float = 6.0):
        """The SNP of the lower track's point within ``radius`` pixels of (x, y), or ``None``."""
        if self.pair_hover is None:
            return None
        px, py = self.pair_plot.getViewBox().viewPixelSize()
        return self.pair_hover.nearest(x, y, px, py, radius)

    def _on_mouse_moved(self, args) -> None:
        vb = self.pair_plot.getViewBox()
        if not vb.sceneBoundingRect().contains(args[0]):
            super()._on_mouse_moved(args)
            return
        p = vb.mapSceneToView(args[0])
        hit = self.pair_point_at(p.x(), p.y())
        text = self.describe_point(hit) if hit is not None else " "
        self.readout.setText(text)
        if hit is not None:
            self.hovered.emit(text)

    def _on_scene_clicked(self, ev) -> None:
        if ev.button() == Qt.MouseButton.LeftButton and ev.double():
            self.double_click_at_scene(ev.scenePos())
            return
        vb = self.pair_plot.getViewBox()
        if ev.button() == Qt.MouseButton.LeftButton and not ev.double() and vb.sceneBoundingRect().contains(ev.scenePos()):
            p = vb.mapSceneToView(ev.scenePos())
            hit = self.pair_point_at(p.x(), p.y())
            if hit is not None:
                self.point_clicked(hit)
            return
        super()._on_scene_clicked(ev)

    def double_click_at_scene(self, pos) -> None:
        """A double click at scene position ``pos``: the regional view of the SNP under it (either
        track), after a scan."""
        if self.result is None:
            return
        for plot, find in ((self.plot, self.point_at), (self.pair_plot, self.pair_point_at)):
            vb = plot.getViewBox()
            if vb.sceneBoundingRect().contains(pos):
                p = vb.mapSceneToView(pos)
                hit = find(p.x(), p.y())
                if hit is not None:
                    self.snpDoubleClicked.emit(int(hit))
                return

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
        if np.isfinite(self.best[k]):
            self.pair_selected_item.setData(x=[self.x[k]], y=[self.best[k]])
        else:
            self.pair_selected_item.clear()
        shown = part[np.isfinite(self.best[part])]
        self.pair_partner_item.setData(x=self.x[shown], y=self.best[shown])

    def clear_selection(self) -> None:
        self.selected = None
        self.partners = np.zeros(0, np.int64)
        for item in (self.selected_item, self.partner_item, self.pair_selected_item, self.pair_partner_item):
            item.clear()
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
