"""Pathway graph (GBOOST §4.1): the SNPs of the reported pairs grouped by pathway, pairs as edges.

The graph is the core's (:mod:`gboost.pathways`); this view draws it with a fixed number of
graphics items whatever its size: one scatter item for the nodes (per-point size and brush, from
a few shared brushes), one line item each for all edges, the edges above the χ² threshold and
the selected node's edges, one for the group circles and two label layers. Each pathway group
sits on its own circle (the core's :func:`~gboost.pathways.group_circle_layout`); the SNPs of no
known pathway, often most of the graph, are packed in a disc apart, right of the ring
(:func:`gui.pathway_data.graph_arrays`), so the known groups keep the figure. Labels never cover
a node.
"""
from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, Signal
from PySide6.QtGui import QDoubleValidator
from PySide6.QtWidgets import QCheckBox, QComboBox, QHBoxLayout, QLabel, QLineEdit, QPushButton, QSizePolicy, QVBoxLayout, QWidget

from gboost.pathways import UNKNOWN
from gui.pathway_data import GraphArrays, describe_node, graph_arrays, shorten
from gui.plots.base import SELECTED, NearestPoint, PlotPanel
from gui.plots.labels import LabelLayer

NEIGHBOUR = "#22a033"  # partners of the selected SNP: green (GBOOST's convention, with yellow)
EDGE_HIGHLIGHT = "#d55e00"  # edges above the threshold (vermillion)
NODE_KNOWN = "#1f4e9c"
NODE_UNKNOWN = "#9a9a9a"
N_COLOUR_BINS = 8
SCORE_CAP = -math.log10(5e-8)  # node size and colour saturate at genome-wide significance
LABEL_MODES = {"gene": "Gene (else SNP)", "snp": "SNP name", "pathway": "Pathway name", "score": "Score",
               "none": "No labels"}
# Node labels drawn at the default zoom; zooming in by a factor z allows z² times as many (the
# same density of text on screen), the strongest SNPs first.
LABEL_BUDGET = 40
CAPTION_BUDGET = 24  # pathway captions at the default zoom, largest groups first
LABEL_BUDGET_MAX = 800
# Pairs drawn as edges: the strongest EDGE_BUDGET (a few thousand grey lines are only a blot);
# the title says how many were left out. Three widths by strength tier.
EDGE_BUDGET = 600
EDGE_TIERS = ((0.6, 60), (1.3, 120), (2.6, 200))  # (width px, alpha) weakest to strongest third
EDGE_GREY = (90, 90, 90)
SCORE_MODES = {"size": "Size", "colour": "Colour", "both": "Size and colour"}
LABEL_CHARS = 32
LEGEND = ("Each circle is one pathway (a GO biological process with the bundled files); grey nodes in "
          "the disc apart on the right: the SNPs of no known pathway. A SNP in several pathways is drawn once, on the "
          "circle of its primary pathway: the one it shares with most of its interaction partners, else the "
          "one holding most SNPs of the graph; hover over it to list all its pathways. Node size or colour: "
          "the SNP's single-locus score, −log10 P of the marginal test, up to genome-wide significance "
          "(7.3, P = 5e-8; stronger SNPs look the same). Edges: the reported pairs, wider and darker for a "
          f"larger interaction χ² (three steps on a log scale); beyond {EDGE_BUDGET} pairs only the strongest are "
          "drawn. Thick orange: pairs whose interaction χ² is above the threshold. Labels: gene symbols where "
          f"the SNP lies in a gene, else its ID; the {LABEL_BUDGET} strongest SNPs at first, more as you zoom in. "
          "Untick 'Unknown pathway' to hide the SNPs of no known pathway. Click a SNP: it turns yellow, its partners green, and the "
          "pair table and the Manhattan plot show its pairs.")


class PathwayView(PlotPanel):
    """The pathway graph; emits ``nodeClicked(study row)`` when a SNP is clicked."""

    nodeClicked = Signal(int)
    sourcesRequested = Signal()
    exportRequested = Signal()
    name = "Pathway graph"

    def __init__(self, parent=None):
        super().__init__(parent)
        self.graph = None
        self.arrays: GraphArrays | None = None
        self.sources_text = ""
        self.threshold: float | None = None
        self._auto_threshold: str | None = None
        self.selected: int | None = None  # node position in `arrays`
        self.neighbours = np.zeros(0, np.int64)
        self.sizes = np.zeros(0)
        self._pos_of_index: dict[int, int] = {}
        # Hover texts are long: the read-out line must not widen the window; the tooltip has it all.
        self.readout.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.cmap = pg.ColorMap(pos=[0.0, 1.0], color=[(170, 205, 232), (8, 48, 107)])  # light to dark blue
        self._build_controls()
        self._build_items()

    # -- construction ---------------------------------------------------------------------------
    def _build_controls(self) -> None:
        bar = QHBoxLayout()
        bar.setContentsMargins(4, 2, 4, 0)
        self.label_mode = QComboBox()
        for key, text in LABEL_MODES.items():
            self.label_mode.addItem(text, key)
        self.label_mode.setToolTip("Text beside each SNP: its ID, its primary pathway, or its single-locus "
                                   "score (−log10 P). Labels that would overlap are left out; zoom in to see them.")
        self.score_mode = QComboBox()
        for key, text in SCORE_MODES.items():
            self.score_mode.addItem(text, key)
        self.score_mode.setToolTip("How the SNP's single-locus score (−log10 P of the marginal test) is shown")
        self.threshold_edit = QLineEdit()
        self.threshold_edit.setValidator(QDoubleValidator(0.0, 1e12, 6))
        self.threshold_edit.setMaximumWidth(80)
        self.threshold_edit.setPlaceholderText("off")
        self.threshold_edit.setToolTip("Edges whose interaction χ² (STAT) is above this value are drawn thick and "
                                       "orange. After a scan it is set to the χ² (4 df) at the Bonferroni level "
                                       "(P = 0.05 / valid tests); clear it to turn highlighting off.")
        self.threshold_count = QLabel("")
        self.show_unknown = QCheckBox("Unknown pathway")
        self.show_unknown.setChecked(True)
        self.show_unknown.setToolTip("Show the SNPs of no known pathway (one more circle). Hide them to give "
                                     "the pathway groups the whole figure.")
        self.sources_button = QPushButton("Annotation…")
        self.sources_button.setToolTip("Gene annotation (BED/GTF), gene sets (.gmt) and the SNP-to-gene window")
        self.export_button = QPushButton("Export graph…")
        self.export_button.setToolTip("Write graph.graphml, nodes.tsv and edges.tsv into a folder")
        self.export_button.setEnabled(False)
        info = QPushButton("What is shown?")
        info.setToolTip(f"<p>{LEGEND}</p>")
        info.clicked.connect(self._explain)
        self.info = info
        bar.addWidget(QLabel("Label:"))
        bar.addWidget(self.label_mode)
        bar.addSpacing(8)
        bar.addWidget(QLabel("Score as:"))
        bar.addWidget(self.score_mode)
        bar.addSpacing(8)
        bar.addWidget(QLabel("Highlight edges with χ² >"))
        bar.addWidget(self.threshold_edit)
        bar.addWidget(self.threshold_count)
        bar.addStretch(1)
        # A second row: one row of every control is wider than the plot area of a 1280-pixel window.
        bar2 = QHBoxLayout()
        bar2.setContentsMargins(4, 0, 4, 0)
        bar2.addWidget(self.show_unknown)
        bar2.addStretch(1)
        bar2.addWidget(info)
        bar2.addWidget(self.sources_button)
        bar2.addWidget(self.export_button)
        holder = QWidget()
        rows = QVBoxLayout(holder)
        rows.setContentsMargins(0, 0, 0, 0)
        rows.setSpacing(2)
        rows.addLayout(bar)
        rows.addLayout(bar2)
        self.layout().insertWidget(0, holder)

        self.label_mode.currentIndexChanged.connect(lambda _i: self._draw_labels())
        self.score_mode.currentIndexChanged.connect(lambda _i: self._draw_nodes())
        self.threshold_edit.editingFinished.connect(self._threshold_edited)
        self.show_unknown.toggled.connect(lambda _on: self._redraw_graph())
        self.sources_button.clicked.connect(self.sourcesRequested)
        self.export_button.clicked.connect(self.exportRequested)

    def _explain(self) -> None:
        from PySide6.QtWidgets import QMessageBox

        box = QMessageBox(QMessageBox.Icon.Information, "The pathway graph", LEGEND, QMessageBox.StandardButton.Ok, self)
        box.open()

    def _build_items(self) -> None:
        p = self.plot
        p.setAspectLocked(True)
        p.hideAxis("left")
        p.hideAxis("bottom")
        p.showGrid(x=False, y=False)
        p.setTitle("Pathway graph")
        self.circles = pg.PlotCurveItem(pen=pg.mkPen((170, 170, 170), width=1, style=pg.QtCore.Qt.PenStyle.DotLine),
                                        connect="finite")
        self.edge_tiers = [pg.PlotCurveItem(pen=pg.mkPen((*EDGE_GREY, alpha), width=w), connect="pairs")
                           for w, alpha in EDGE_TIERS]
        self.edges = self.edge_tiers[0]  # the weakest tier (kept under this name for the tests)
        self.hi_edges = pg.PlotCurveItem(pen=pg.mkPen(EDGE_HIGHLIGHT, width=2.5), connect="pairs")
        self.sel_edges = pg.PlotCurveItem(pen=pg.mkPen(NEIGHBOUR, width=2.5), connect="pairs")
        self.nodes = pg.ScatterPlotItem(pxMode=True, symbol="o")
        self.neighbour_item = pg.ScatterPlotItem(pxMode=True, symbol="o", pen=pg.mkPen("#0b4a16", width=1.2),
                                                 brush=pg.mkBrush(NEIGHBOUR))
        self.selected_item = pg.ScatterPlotItem(pxMode=True, symbol="o", pen=pg.mkPen("k", width=1.5),
                                                brush=pg.mkBrush(SELECTED))
        # Node labels (style 0) and pathway captions (style 1) in one layer, so that neither is
        # drawn over the other.
        self.labels = LabelLayer(styles=(("#202020", 11, False), ("#606060", 10, True)))
        # Highlighted edges over the nodes: an edge inside a small pathway circle is shorter than
        # its two nodes are wide and would vanish under them.
        for z, item in enumerate((self.circles, *self.edge_tiers, self.sel_edges, self.nodes, self.hi_edges,
                                  self.neighbour_item, self.selected_item)):
            item.setZValue(z)
            p.addItem(item)
        self.labels.setZValue(20)
        self.labels.budgets = {0: LABEL_BUDGET, 1: CAPTION_BUDGET}
        p.addItem(self.labels, ignoreBounds=True)
        self._default_size: tuple[float, float] | None = None
        p.getViewBox().sigRangeChanged.connect(self._update_label_budget)
        self.colorbar = pg.ColorBarItem(values=(0, SCORE_CAP), colorMap=self.cmap,
                                        label=f"single-locus −log10 P (darkest from {SCORE_CAP:.1f}: P ≤ 5e-8)",
                                        interactive=False, width=14, pen="k")
        self._colorbar_shown = False
        self.empty_text = pg.TextItem("", anchor=(0.5, 0.5), color="#555555")
        p.addItem(self.empty_text, ignoreBounds=True)
        self._brushes = [pg.mkBrush(self.cmap.map((b + 0.5) / N_COLOUR_BINS, mode="qcolor")) for b in range(N_COLOUR_BINS)]
        self._known_brush, self._unknown_brush = pg.mkBrush(NODE_KNOWN), pg.mkBrush(NODE_UNKNOWN)
        self._node_pen = pg.mkPen((30, 30, 30, 200), width=0.8)
        self._build_legend()
        self._update_colorbar()

    def _build_legend(self) -> None:
        """A key in the corner (exported with the view), drawn with sample items of its own."""
        # Below the graph, one row: never over the graph's captions, whatever the view's shape.
        self.legend_item = pg.LegendItem(labelTextSize="8pt", colCount=4)
        self.plot_widget.addItem(self.legend_item, row=1, col=0)

        def dot(colour, pen=self._node_pen):
            return pg.ScatterPlotItem(symbol="o", size=10, pen=pen, brush=pg.mkBrush(colour))

        self._legend_nodes = [(dot(NODE_KNOWN), "SNP in a known pathway"), (dot(NODE_UNKNOWN), "SNP of no known pathway")]
        def sized(size):
            return pg.ScatterPlotItem(symbol="o", size=size, pen=self._node_pen, brush=pg.mkBrush(NODE_KNOWN))

        self._legend_sizes = [(sized(6), "single-locus P ≈ 1"), (sized(18), f"P ≤ 5e-8 (size: −log10 P)")]
        self._legend_rest = [(dot(SELECTED, pg.mkPen("k", width=1.5)), "selected SNP"),
                             (dot(NEIGHBOUR, pg.mkPen("#0b4a16", width=1.2)), "its partners"),
                             (pg.PlotDataItem(pen=pg.mkPen(EDGE_HIGHLIGHT, width=2.5)), "pair with χ² above the threshold")]
        self._legend_edges = [pg.PlotDataItem(pen=pg.mkPen((*EDGE_GREY, alpha), width=w)) for w, alpha in EDGE_TIERS]
        self._edge_tier_text = ["", "", ""]
        self.legend_item.setVisible(False)

    def _update_legend(self) -> None:
        """Node colours in the key only when they mean the pathway kind (else the colour bar is the key)."""
        self.legend_item.clear()
        mode = self.score_mode.currentData()
        # Rows of four: what a node's colour and size say; edge widths and the threshold; selection.
        has_unknown = self.arrays is not None and UNKNOWN in self.arrays.groups
        nodes = self._legend_nodes if has_unknown else self._legend_nodes[:1]
        rows = (([] if mode in ("colour", "both") else nodes)
                + (self._legend_sizes if mode in ("size", "both") else [])
                + [(item, text) for item, text in zip(self._legend_edges, self._edge_tier_text) if text]
                + self._legend_rest[2:])
        if self.selected is not None:  # the selection colours only while something is selected
            rows += self._legend_rest[:2]
        for item, text in rows:
            self.legend_item.addItem(item, text)
        self.legend_item.setVisible(self.arrays is not None)

    # -- data -----------------------------------------------------------------------------------
    def clear(self, message: str = "") -> None:
        self.graph = self.arrays = None
        self.hover_index = None
        self._pos_of_index = {}
        for item in (self.circles, *self.edge_tiers, self.hi_edges, self.sel_edges):
            item.setData([], [])
        for item in (self.nodes, self.neighbour_item, self.selected_item):
            item.clear()
        self.labels.clear()
        self.selected, self.neighbours = None, np.zeros(0, np.int64)
        self.threshold_count.setText("")
        self.export_button.setEnabled(False)
        self.legend_item.setVisible(False)
        self.plot.setTitle("Pathway graph")
        self.plot.titleLabel.setToolTip("")
        self.empty_text.setText(message)
        self.empty_text.setPos(0, 0)

    def set_graph(self, graph, sources_text: str = "", bonferroni_chi2: float | None = None) -> None:
        """Draw ``graph`` (the core's interaction graph); ``bonferroni_chi2`` fills the threshold
        field unless the user typed a value of their own."""
        self.graph, self.sources_text = graph, sources_text
        self._bonferroni_chi2 = bonferroni_chi2
        self.selected, self.neighbours = None, np.zeros(0, np.int64)  # of the graph before: the window selects anew
        self.readout.setText(" ")
        self._redraw_graph()

    def _redraw_graph(self) -> None:
        graph, sources_text, bonferroni_chi2 = self.graph, self.sources_text, getattr(self, "_bonferroni_chi2", None)
        keep = self.selected_snp if self.arrays is not None else None  # the selection survives a redraw
        self.clear()
        self.graph = graph
        if graph is None or graph.number_of_nodes() == 0:
            self.clear("No reported pairs: nothing to draw" if graph is not None else "")
            self.graph = graph
            return
        a = self.arrays = graph_arrays(graph, hide_unknown=not self.show_unknown.isChecked())
        if not len(a):
            self.clear("Every SNP of the reported pairs is of unknown pathway: tick 'Unknown pathway' to see them")
            self.graph = graph
            return
        self._pos_of_index = {int(k): n for n, k in enumerate(a.index)}
        ring = np.linspace(0, 2 * np.pi, 73)
        cx, cy = [], []
        for (x0, y0), r in zip(a.centre, a.radius):
            if r > 0:
                cx.extend(np.r_[x0 + r * np.sin(ring), np.nan])
                cy.extend(np.r_[y0 + r * np.cos(ring), np.nan])
        self.circles.setData(np.array(cx), np.array(cy), connect="finite")
        drawn = self._draw_edges()
        self.hover_index = NearestPoint(a.x, a.y, np.arange(len(a)))
        self._draw_nodes()
        text = self.threshold_edit.text().strip()
        if bonferroni_chi2 is not None and (not text or text == self._auto_threshold):
            self._auto_threshold = f"{bonferroni_chi2:.4g}"
            self.threshold_edit.setText(self._auto_threshold)
        self._threshold_edited()
        n_groups = sum(1 for g in a.groups if g != UNKNOWN)
        hidden = graph.number_of_nodes() - len(a)
        # Short enough for a 1280-pixel window; the annotation files are named in the tooltip.
        self.plot.setTitle(f"{len(a):,} SNPs in {len(a.edges):,} pairs, "
                           f"{n_groups:,} pathway group{'s' if n_groups != 1 else ''}"
                           + (f"; strongest {drawn:,} pairs drawn" if drawn < len(a.edges) else "")
                           + (f"; {hidden:,} SNPs of unknown pathway hidden" if hidden else ""), size="10pt")
        self.plot.titleLabel.setToolTip(f"Annotation: {sources_text}" if sources_text else "")
        self.sources_button.setToolTip("Gene annotation (BED/GTF), gene sets (.gmt) and the SNP-to-gene window"
                                       + (f"; now: {sources_text}" if sources_text else ""))
        self.export_button.setEnabled(True)
        if keep is not None:
            self.select_snp(keep)
        self.reset_view()

    def _draw_edges(self) -> int:
        """The strongest :data:`EDGE_BUDGET` pairs in three widths by strength; returns how many."""
        a = self.arrays
        order = np.argsort(-a.edge_stat, kind="stable")[:EDGE_BUDGET]
        self.drawn_edges = order
        # Tiers on a log scale of χ² between the weakest and the strongest pair drawn: the many
        # pairs near the reporting threshold stay thin and faint, the few strong ones stand out.
        st = a.edge_stat[order]
        tier = np.zeros(len(order), np.int64)
        # The top of the scale is the 98th percentile: one pair at χ² 300 must not leave every
        # other pair in the thinnest tier.
        top = float(np.quantile(st, 0.98)) if len(st) else 0.0
        if len(order) and top > st.min() > 0:
            cuts = st.min() * (top / st.min()) ** (np.arange(1, len(self.edge_tiers)) / len(self.edge_tiers))
            tier = np.searchsorted(cuts, st, side="right")
        tiers = [order[tier == t] for t in range(len(self.edge_tiers))]
        self._edge_tier_text = []
        for item, rows in zip(self.edge_tiers, tiers):
            item.setData(*self._segments(a.edges[rows]), connect="pairs")
            if len(rows):
                lo, hi = a.edge_stat[rows].min(), a.edge_stat[rows].max()
                self._edge_tier_text.append(f"pair χ² {lo:.0f}–{hi:.0f}" if hi - lo >= 1 else f"pair χ² {lo:.0f}")
            else:
                self._edge_tier_text.append("")
        self._update_legend()
        return len(order)

    def edge_segment_count(self) -> int:
        """Edges drawn (all strength tiers together)."""
        return sum(len(item.getData()[0] if item.getData()[0] is not None else []) for item in self.edge_tiers) // 2

    def _update_label_budget(self, *_args) -> None:
        """More node labels as the user zooms in: the budget grows with the zoom's area."""
        if self._default_size is None:
            return
        rect = self.plot.getViewBox().viewRect()
        zoom = max(1.0, self._default_size[0] / max(rect.width(), 1e-12), self._default_size[1] / max(rect.height(), 1e-12))
        grow = zoom * zoom
        self.labels.budgets = {0: int(min(LABEL_BUDGET_MAX, LABEL_BUDGET * grow)),
                               1: int(min(LABEL_BUDGET_MAX, CAPTION_BUDGET * grow))}
        self.labels.update()

    def _segments(self, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        a = self.arrays
        if not len(edges):
            return np.zeros(0), np.zeros(0)
        return np.column_stack([a.x[edges[:, 0]], a.x[edges[:, 1]]]).ravel(), \
            np.column_stack([a.y[edges[:, 0]], a.y[edges[:, 1]]]).ravel()

    # -- nodes and labels -----------------------------------------------------------------------
    def _draw_nodes(self) -> None:
        self._update_colorbar()
        a = self.arrays
        if a is None:
            return
        mode = self.score_mode.currentData()
        # Scores saturate at the genome-wide level: one SNP at P = 1e-50 must not wash the rest out.
        frac = np.clip(np.nan_to_num(a.score, nan=0.0) / SCORE_CAP, 0.0, 1.0)
        if mode in ("size", "both"):
            # Area grows with the score; 9 sizes only, so pyqtgraph's symbol atlas stays small.
            self.sizes = 6.0 + 1.5 * np.round(np.sqrt(frac) * 8.0)
        else:
            self.sizes = np.full(len(a), 10.0)
        if mode in ("colour", "both"):
            bins = np.minimum((frac * N_COLOUR_BINS).astype(np.int64), N_COLOUR_BINS - 1)
            brushes = [self._brushes[b] for b in bins]
        else:
            unknown = [g == UNKNOWN for g in a.groups]
            brushes = [self._unknown_brush if unknown[g] else self._known_brush for g in a.group_of]
        self.nodes.setData(x=a.x, y=a.y, size=self.sizes, brush=brushes, pen=self._node_pen)
        self._draw_labels()
        self._draw_selection()

    def node_brush_colours(self) -> list[str]:
        """The fill colour of each node as drawn (``#rrggbb``), in ``arrays`` order."""
        return [b.color().name() for b in self.nodes.data["brush"]]

    def _update_colorbar(self) -> None:
        # In the layout only while it is the key (a hidden item keeps its stale layout when shown again).
        show = self.score_mode.currentData() in ("colour", "both") and self.arrays is not None
        if show != self._colorbar_shown:
            if show:
                self.plot_widget.addItem(self.colorbar, row=0, col=1)
            else:
                self.plot_widget.removeItem(self.colorbar)
            self._colorbar_shown = show
        self._update_legend()

    def label_texts(self) -> list[str]:
        """The label of each node for the current label mode, in ``arrays`` order."""
        a = self.arrays
        if a is None:
            return []
        mode = self.label_mode.currentData()
        if mode == "gene":
            # A gene is named once per group, at its strongest SNP: the SNPs of one gene (an LD
            # block in it) otherwise ringed their circle with the same name eight times over.
            score = np.nan_to_num(np.asarray(a.score, np.float64), nan=-np.inf)
            best: dict[tuple[int, str], int] = {}
            for k, (grp, g) in enumerate(zip(a.group_of.tolist(), a.gene)):
                if g and ((grp, g) not in best or score[k] > score[best[(grp, g)]]):
                    best[(grp, g)] = k
            named = set(best.values())
            return [(g if k in named else "") if g else s for k, (g, s) in enumerate(zip(a.gene, a.snp))]
        if mode == "snp":
            return list(a.snp)
        if mode == "pathway":
            return [shorten("(unknown)" if g == UNKNOWN else g, LABEL_CHARS) for g in a.label_group]
        if mode == "score":
            return ["NA" if not math.isfinite(s) else f"{s:.2f}" for s in a.score]
        return ["" for _ in a.snp]

    def _draw_labels(self) -> None:
        a = self.arrays
        if a is None:
            self.labels.clear()
            return
        # Node labels point away from the centre of their circle (to the right for a lone SNP).
        d = np.column_stack([a.x, a.y]) - a.centre[a.group_of]
        norm = np.hypot(d[:, 0], d[:, 1])
        lone = norm < 1e-12
        safe = np.where(lone, 1.0, norm)
        direction = np.column_stack([np.where(lone, 1.0, d[:, 0] / safe), np.where(lone, 0.0, -d[:, 1] / safe)])
        texts = self.label_texts()
        offset = self.sizes / 2 + 3
        score = np.nan_to_num(a.score, nan=0.0)
        priority = score
        style = np.zeros(len(a), np.int64)
        x, y = a.x, a.y
        if self.label_mode.currentData() != "pathway":  # pathway labels already name the circles
            cx, cy, cdir, ctexts = self._captions()
            # Beyond the node labels on the circle's outer side: their longest reach along the
            # caption's direction (text width sideways, one line up or down), in pixels.
            fm = self.labels.styles[0][2]
            widest = np.zeros(len(a.groups))
            for g, t, size in zip(a.group_of, texts, self.sizes):
                w = fm.horizontalAdvance(t) if t else 0.0
                reach = abs(cdir[g, 0]) * w + abs(cdir[g, 1]) * fm.height() + size / 2
                widest[g] = max(widest[g], reach)
            x, y = np.r_[x, cx], np.r_[y, cy]
            direction = np.vstack([direction, cdir])
            texts = texts + ctexts
            offset = np.r_[offset, widest + 8.0]
            counts = np.bincount(a.group_of, minlength=len(a.groups))
            priority = np.r_[priority, score.max(initial=0.0) + 1.0 + counts]  # captions first, largest groups first
            style = np.r_[style, np.ones(len(cx), np.int64)]
        self.labels.setData(x, y, texts, direction=direction, offset=offset, priority=priority, style=style)
        self.labels.setObstacles(a.x, a.y, self.sizes)  # no label over a node

    def _captions(self):
        """Pathway names beside their circles, on the side away from the centre of the ring."""
        a = self.arrays
        mid = a.centre.mean(axis=0)
        d = a.centre - mid
        norm = np.hypot(d[:, 0], d[:, 1])
        flat = norm < 1e-12
        safe = np.where(flat, 1.0, norm)
        dirx, diry = np.where(flat, 0.0, d[:, 0] / safe), np.where(flat, 1.0, d[:, 1] / safe)
        x, y = a.centre[:, 0] + a.radius * dirx, a.centre[:, 1] + a.radius * diry  # on the circle's edge
        counts = np.bincount(a.group_of, minlength=len(a.groups))
        texts = [shorten("unknown pathway" if g == UNKNOWN else g, 40) + f" ({n})" for g, n in zip(a.groups, counts)]
        return x, y, np.column_stack([dirx, -diry]), texts

    # -- threshold ------------------------------------------------------------------------------
    def _threshold_edited(self) -> None:
        text = self.threshold_edit.text().strip()
        try:
            value = float(text) if text else None
        except ValueError:
            value = None
        self.set_threshold(value, _from_field=True)

    def set_threshold(self, value: float | None, _from_field: bool = False) -> None:
        """Highlight the edges whose interaction χ² is above ``value`` (``None``: none)."""
        if not _from_field:
            self.threshold_edit.setText("" if value is None else f"{value:g}")
        self.threshold = value
        a = self.arrays
        if a is None:
            self.hi_edges.setData([], [])
            self.threshold_count.setText("")
            return
        rows = self.highlighted_rows()
        self.hi_edges.setData(*self._segments(a.edges[rows]), connect="pairs")
        self.threshold_count.setText("" if value is None else f"{len(rows):,} of {len(a.edges):,} edges")

    def highlighted_rows(self) -> np.ndarray:
        """Rows of ``arrays.edges`` drawn highlighted: interaction χ² above the threshold."""
        if self.arrays is None or self.threshold is None:
            return np.zeros(0, np.int64)
        return np.flatnonzero(self.arrays.edge_stat > self.threshold)

    def highlighted_edges(self) -> set[frozenset]:
        """The highlighted edges as sets of their two SNP IDs."""
        a = self.arrays
        return {frozenset((a.snp[e[0]], a.snp[e[1]])) for e in a.edges[self.highlighted_rows()]} if a else set()

    # -- selection ------------------------------------------------------------------------------
    def select_snp(self, k: int | None, partners=None) -> bool:
        """Mark SNP ``k`` (study row) yellow and its partners green: ``partners`` (study rows)
        if given, else its neighbours in the graph. False (and nothing marked) when ``k`` is not
        in the graph."""
        a = self.arrays
        node = self._pos_of_index.get(int(k)) if (a is not None and k is not None) else None
        if node is None:
            self.clear_selection()
            return False
        if partners is None:
            nb = a.neighbours[node]
        else:
            nb = [self._pos_of_index[int(p)] for p in np.atleast_1d(partners) if int(p) in self._pos_of_index]
        self.selected, self.neighbours = node, np.array(sorted(set(nb)), np.int64)
        self._draw_selection()
        return True

    def clear_selection(self) -> None:
        self.selected, self.neighbours = None, np.zeros(0, np.int64)
        self._draw_selection()

    def _draw_selection(self) -> None:
        self._update_legend()
        a = self.arrays
        if a is None or self.selected is None:
            self.selected_item.clear()
            self.neighbour_item.clear()
            self.sel_edges.setData([], [])
            return
        k, nb = self.selected, self.neighbours
        self.selected_item.setData(x=[a.x[k]], y=[a.y[k]], size=[self.sizes[k] + 6])
        self.neighbour_item.setData(x=a.x[nb], y=a.y[nb], size=self.sizes[nb] + 4)
        e = a.edges
        mine = ((e[:, 0] == k) & np.isin(e[:, 1], nb)) | ((e[:, 1] == k) & np.isin(e[:, 0], nb))
        self.sel_edges.setData(*self._segments(e[mine]), connect="pairs")

    @property
    def selected_snp(self) -> int | None:
        """Study row of the selected node, or ``None``."""
        return None if self.selected is None else int(self.arrays.index[self.selected])

    @property
    def neighbour_snps(self) -> list[int]:
        return sorted(int(self.arrays.index[n]) for n in self.neighbours) if self.arrays is not None else []

    # -- hover / click / view -------------------------------------------------------------------
    def point_at(self, x: float, y: float, radius: float | None = None):
        big = float(self.sizes.max()) / 2 + 2 if len(self.sizes) else 6.0
        return super().point_at(x, y, max(6.0, big) if radius is None else radius)

    def describe_point(self, k) -> str:
        return describe_node(self.graph, self.arrays.nodes[int(k)])

    def _on_mouse_moved(self, args) -> None:
        super()._on_mouse_moved(args)
        # The full text, a line per item, as the plot's tooltip (the read-out line is cut to fit).
        vb = self.plot.getViewBox()
        hit = None
        if self.arrays is not None and vb.sceneBoundingRect().contains(args[0]):
            p = vb.mapSceneToView(args[0])
            hit = self.point_at(p.x(), p.y())
        self.plot_widget.setToolTip(describe_node(self.graph, self.arrays.nodes[int(hit)], multiline=True)
                                    if hit is not None else "")

    def point_clicked(self, k) -> None:
        self.nodeClicked.emit(int(self.arrays.index[int(k)]))

    def node_position(self, k: int) -> QPointF:
        """Data position of SNP ``k`` (study row); for tests and tooltips."""
        n = self._pos_of_index[int(k)]
        return QPointF(float(self.arrays.x[n]), float(self.arrays.y[n]))

    def reset_view(self) -> None:
        a = self.arrays
        if a is None or not len(a):
            self.plot.setRange(xRange=(-1, 1), yRange=(-1, 1))
            return
        pad = max(1.0, 0.15 * max(np.ptp(a.x), np.ptp(a.y)))  # room for the captions outside the ring
        self.plot.setRange(xRange=(float(a.x.min() - pad), float(a.x.max() + pad)),
                           yRange=(float(a.y.min() - pad), float(a.y.max() + pad)), padding=0)
        # The range asked for; with the aspect locked the view widens one side, never both.
        self._default_size = (float(np.ptp(a.x) + 2 * pad), float(np.ptp(a.y) + 2 * pad))
        self.labels.budgets = {0: LABEL_BUDGET, 1: CAPTION_BUDGET}
