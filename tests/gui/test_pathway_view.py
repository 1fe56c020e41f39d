"""The Pathways tab: the core's graph drawn by pathway circle; labels, score, selection colours,
edge threshold, selection shared with the table and the Manhattan plot, hover, annotation
files (good and bad), exports, and a graph of thousands of nodes."""
import time

import networkx as nx
import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QImage
from PySide6.QtWidgets import QMessageBox

from gboost.pathways import (UNKNOWN, build_graph, bundled_annotation, bundled_gene_sets, graph_from_result,
                             group_circle_layout, node_groups, read_annotation, read_gmt, split_list)
from gui.pathway_data import LAYOUT_GAP, PathwaySources
from gui.plots.base import SELECTED
from gui.plots.pathways import EDGE_HIGHLIGHT, NEIGHBOUR, NODE_KNOWN, NODE_UNKNOWN
from gui.plots.render import render_image


def rgb(img: QImage) -> np.ndarray:
    img = img.convertToFormat(QImage.Format.Format_RGB32)
    arr = np.frombuffer(img.constBits(), np.uint8).reshape(img.height(), img.bytesPerLine() // 4, 4)[:, : img.width(), :3]
    return arr[..., ::-1].astype(int)  # BGRA in memory -> RGB


def pixels_near(img: QImage, colour: str, tol: int = 30) -> int:
    c = QColor(colour)
    return int((np.abs(rgb(img) - np.array([c.red(), c.green(), c.blue()])).max(axis=2) <= tol).sum())


# -- annotation written for the test study ---------------------------------------------------------
N_PATHWAYS_OF_HUB = 10


@pytest.fixture
def annotated(qtbot, scanned, tmp_path):
    """The scanned window with a hand-made annotation: the SNPs of the first three reported pairs
    lie in genes; pair 0's genes share pathway P_ALPHA, pair 1's share P_BETA, pair 0's first SNP
    is also in P_BETA and eight more (a SNP in many pathways), pair 2's genes are in no set."""
    res, rep = scanned.result, scanned.reported
    v = res.study.variants
    lines, genes = ["# genome_build=test"], {}
    for k in range(3):
        for snp in (int(rep.i[k]), int(rep.j[k])):
            name = f"GENE{snp}"
            genes[snp] = name
            bp = int(v.bp[snp])
            lines.append(f"{v.chrom[snp]}\t{bp - 100}\t{bp + 100}\t{name}")
    bed = tmp_path / "genes.bed"
    bed.write_text("\n".join(lines) + "\n")
    a0, b0, a1, b1 = (genes[int(x)] for x in (rep.i[0], rep.j[0], rep.i[1], rep.j[1]))
    sets = [f"P_ALPHA\tfirst\t{a0}\t{b0}", f"P_BETA\tsecond\t{a1}\t{b1}\t{a0}"]
    sets += [f"P_EXTRA{k}\textra\t{a0}" for k in range(N_PATHWAYS_OF_HUB - 2)]
    gmt = tmp_path / "sets.gmt"
    gmt.write_text("\n".join(sets) + "\n")
    sources = PathwaySources(str(bed), str(gmt), 0.0)
    with qtbot.waitSignal(scanned.pathwaySourcesChanged, timeout=30000):
        assert scanned.set_pathway_sources(sources)
    scanned.annotation_files = (bed, gmt)
    return scanned


def expected_graph(win, bed, gmt, window_kb=0.0):
    return graph_from_result(win.result, annotation=read_annotation(bed), gene_sets=read_gmt(gmt), window_kb=window_kb)


def test_the_view_draws_the_cores_graph_on_pathway_circles(annotated):
    win = annotated
    g = expected_graph(win, *win.annotation_files)
    assert set(win.graph.nodes) == set(g.nodes) and set(map(frozenset, win.graph.edges)) == set(map(frozenset, g.edges))
    a = win.pathways.arrays
    assert len(a) == g.number_of_nodes() == len(win.pathways.nodes.data)  # one scatter item holds every node
    # Positions: the known pathways by the core's group-circle layout, each group's nodes on one
    # circle; the SNPs of no known pathway in a disc apart, right of them.
    groups = node_groups(g)
    known = {name: m for name, m in groups.items() if name != UNKNOWN}
    pos = group_circle_layout(g, known, spacing=1.0, gap=LAYOUT_GAP)
    for k, node in enumerate(a.nodes):
        if node in pos:
            assert (a.x[k], a.y[k]) == pytest.approx(pos[node])
    assert list(groups)[-1] == UNKNOWN and {"P_ALPHA", "P_BETA"} <= set(groups)
    for gi, name in enumerate(a.groups):
        members = np.flatnonzero(a.group_of == gi)
        assert {a.nodes[m] for m in members} == set(groups[name])
        if name == UNKNOWN:
            assert a.x[members].min() > max(x for x, _ in pos.values())
            continue
        d = np.hypot(a.x[members] - a.centre[gi, 0], a.y[members] - a.centre[gi, 1])
        assert np.allclose(d, d[0])  # on one circle
    rep = win.reported
    v = win.result.study.variants
    assert g.nodes[str(v.snp[rep.i[0]])]["group"] == "P_ALPHA" == g.nodes[str(v.snp[rep.j[0]])]["group"]
    # Edges: every pair once, as a line segment between its two nodes.
    assert win.pathways.edge_segment_count() == g.number_of_edges()  # under the edge budget: all drawn
    # Unknown-pathway SNPs grey, the rest blue, in the default "size" mode.
    colours = win.pathways.node_brush_colours()
    for k, grp in enumerate(a.label_group):
        assert colours[k] == (NODE_UNKNOWN if grp == UNKNOWN else NODE_KNOWN).lower()


def test_labels_switch_between_snp_pathway_score_and_none(annotated):
    view = annotated.pathways
    a = view.arrays
    g = annotated.graph
    expected = {
        "snp": [g.nodes[n]["snp"] for n in a.nodes],
        "pathway": ["(unknown)" if g.nodes[n]["group"] == UNKNOWN else g.nodes[n]["group"] for n in a.nodes],
        "score": [f"{g.nodes[n]['score']:.2f}" for n in a.nodes],
        "none": ["" for _ in a.nodes],
    }
    seen = {}
    for mode, texts in expected.items():
        view.label_mode.setCurrentIndex(view.label_mode.findData(mode))
        assert view.label_texts() == texts
        assert view.labels.texts[: len(a)] == texts  # what the label layer paints
        render_image(view.plot_widget, (1400, 900))
        seen[mode] = set(view.labels.drawn)
    snps, scores = set(expected["snp"]), set(expected["score"])
    assert len(seen["snp"] & snps) >= 5 and not seen["snp"] & scores
    assert len(seen["score"] & scores) >= 5 and not seen["score"] & snps
    assert {"P_ALPHA", "P_BETA"} <= seen["pathway"] and not seen["pathway"] & snps
    assert not seen["none"] & (snps | scores)
    assert any("P_ALPHA" in t for t in seen["none"])  # circles keep their captions


def test_score_drives_node_size_or_colour(annotated):
    view = annotated.pathways
    a = view.arrays
    strongest, weakest = int(np.nanargmax(a.score)), int(np.nanargmin(a.score))
    view.score_mode.setCurrentIndex(view.score_mode.findData("size"))
    sizes = np.asarray(view.nodes.data["size"], float)
    assert sizes[strongest] > sizes[weakest]
    order = np.argsort(a.score)
    assert np.all(np.diff(sizes[order]) >= 0)  # never smaller for a higher score
    view.score_mode.setCurrentIndex(view.score_mode.findData("colour"))
    assert len(set(np.asarray(view.nodes.data["size"], float))) == 1
    lum = [QColor(c).lightness() for c in view.node_brush_colours()]
    assert lum[strongest] < lum[weakest]  # darker for a stronger SNP
    assert view.colorbar.scene() is not None  # the colour key is shown in colour mode only
    view.score_mode.setCurrentIndex(view.score_mode.findData("size"))
    assert view.colorbar.scene() is None


@pytest.mark.slow
def test_selected_node_is_yellow_and_its_neighbours_green(qtbot, annotated):
    win, view = annotated, annotated.pathways
    g, a = win.graph, view.arrays
    hub = max(a.nodes, key=lambda n: (g.degree[n], n))
    k = int(g.nodes[hub]["index"])
    view.plot_widget.resize(1200, 800)
    view.reset_view()
    qtbot.wait(50)
    p = view.node_position(k)
    with qtbot.waitSignal(view.nodeClicked, timeout=5000) as blocker:
        qtbot.mouseClick(view.plot_widget.viewport(), Qt.MouseButton.LeftButton, pos=view.view_to_widget(p.x(), p.y()))
    assert blocker.args == [k]
    assert view.selected_snp == k
    assert view.selected_item.opts["brush"].color().name() == QColor(SELECTED).name()
    assert view.neighbour_item.opts["brush"].color().name() == QColor(NEIGHBOUR).name()
    sx, sy = view.selected_item.getData()
    assert (sx[0], sy[0]) == (p.x(), p.y())
    nb = sorted(int(g.nodes[m]["index"]) for m in g.neighbors(hub))
    assert view.neighbour_snps == nb and len(nb) >= 1
    nx_, ny_ = view.neighbour_item.getData()
    expected = sorted((view.node_position(m).x(), view.node_position(m).y()) for m in nb)
    np.testing.assert_allclose(np.array(sorted(zip(nx_, ny_)), float).reshape(-1, 2),
                               np.array(expected, float).reshape(-1, 2), rtol=1e-9)
    # And on screen: the node's own pixel is yellow, a neighbour's green; clearing the
    # selection takes both colours away (but for the key's sample dots).
    img = render_image(view.plot_widget, (1200, 800))

    def colour_at(pt):
        w = view.view_to_widget(pt.x(), pt.y())
        return rgb(img)[int(round(w.y())), int(round(w.x()))]

    def near(c, colour, tol=30):
        q = QColor(colour)
        return np.abs(c - [q.red(), q.green(), q.blue()]).max() <= tol

    assert near(colour_at(p), SELECTED)
    assert near(colour_at(view.node_position(nb[0])), NEIGHBOUR)
    selected_px, neighbour_px = pixels_near(img, SELECTED), pixels_near(img, NEIGHBOUR)
    win.clear_selection()
    img = render_image(view.plot_widget, (1200, 800))
    assert not near(colour_at(p), SELECTED)
    assert pixels_near(img, SELECTED) < selected_px - 20 and pixels_near(img, NEIGHBOUR) < neighbour_px - 20


@pytest.mark.slow
def test_threshold_highlights_exactly_the_edges_above_it(qtbot, annotated):
    view, g = annotated.pathways, annotated.graph
    stats = sorted(d["stat"] for _, _, d in g.edges(data=True))
    assert len(stats) > 10
    for t in (stats[len(stats) // 2], stats[-3], stats[0] - 1.0, stats[-1]):
        view.threshold_edit.setText(repr(t))
        view.threshold_edit.editingFinished.emit()
        above = {frozenset((g.nodes[a]["snp"], g.nodes[b]["snp"])) for a, b, d in g.edges(data=True) if d["stat"] > t}
        assert view.highlighted_edges() == above
        # The highlight line item draws those segments and no others.
        hx, hy = view.hi_edges.getData()
        if not above:
            assert hx is None or len(hx) == 0
            continue
        drawn = {frozenset({(hx[2 * m], hy[2 * m]), (hx[2 * m + 1], hy[2 * m + 1])}) for m in range(len(hx) // 2)}
        a = view.arrays
        where = {s: (a.x[k], a.y[k]) for k, s in enumerate(a.snp)}
        assert drawn == {frozenset(where[s] for s in e) for e in above}
        assert view.threshold_count.text().startswith(f"{len(above):,} of {len(stats):,}")
    assert len(view.highlighted_edges()) == 0  # at the largest χ², nothing is above it
    view.threshold_edit.setText("")
    view.threshold_edit.editingFinished.emit()
    assert view.threshold is None and not view.highlighted_edges()


@pytest.mark.slow
def test_threshold_defaults_to_the_bonferroni_chi2_and_is_drawn_orange(annotated):
    from gboost.stats.pvalues import chi2_isf

    view, res = annotated.pathways, annotated.result
    assert float(view.threshold_edit.text()) == pytest.approx(chi2_isf(res.bonferroni, 4), rel=1e-3)
    view.set_threshold(0.0)
    img = render_image(view.plot_widget, (1200, 800))
    assert pixels_near(img, EDGE_HIGHLIGHT, tol=25) > 100


@pytest.mark.slow
def test_selection_is_shared_with_the_table_and_the_manhattan_plot(annotated):
    win, view = annotated, annotated.pathways
    rep, g = win.reported, win.graph
    counts = np.bincount(np.concatenate([rep.i, rep.j]))
    k = int(np.argmax(counts))
    # node -> table and Manhattan
    view.point_clicked(int(np.flatnonzero(view.arrays.index == k)[0]))
    assert win.selected_snp == k and win.manhattan.selected == k
    proxy = win.pairs.proxy
    snp = str(win.result.study.variants.snp[k])
    rows = [(proxy.index(r, 1).data(), proxy.index(r, 4).data()) for r in range(proxy.rowCount())]
    assert len(rows) == counts[k] and all(snp in r for r in rows)
    # Manhattan -> node
    other = int(rep.j[-1]) if int(rep.j[-1]) != k else int(rep.i[-1])
    win.manhattan.snpClicked.emit(other)
    partners = sorted(int(b) if a == other else int(a) for a, b in zip(rep.i, rep.j) if other in (a, b))
    assert view.selected_snp == other and view.neighbour_snps == partners
    # table row -> its pair: first SNP yellow, second green
    win.clear_selection()
    assert view.selected_snp is None
    win.pairs.table.selectRow(2)
    assert view.selected_snp == int(rep.i[2]) and view.neighbour_snps == [int(rep.j[2])]
    assert str(g.nodes[str(win.result.study.variants.snp[rep.i[2]])]["index"]) == str(int(rep.i[2]))


@pytest.mark.slow
def test_hover_names_snp_genes_and_all_pathways_cut_when_long(annotated):
    win, view = annotated, annotated.pathways
    rep = win.reported
    v = win.result.study.variants
    hub = int(rep.i[0])  # in P_ALPHA, P_BETA and eight more
    pos = view.node_position(hub)
    hit = view.point_at(pos.x(), pos.y())
    text = view.describe_point(hit)
    assert str(v.snp[hub]) in text and f"GENE{hub}" in text
    assert f"pathways ({N_PATHWAYS_OF_HUB})" in text and "P_ALPHA" in text
    assert f"(+{N_PATHWAYS_OF_HUB - 6} more)" in text and "drawn in: P_ALPHA" in text
    # Moving the mouse over it: the read-out line and a tooltip of one item per line.
    view.plot_widget.resize(1200, 800)
    view.reset_view()
    scene_pos = view.plot.getViewBox().mapViewToScene(view.node_position(hub))
    view._on_mouse_moved((scene_pos,))
    assert view.readout.text() == text
    tip = view.plot_widget.toolTip().splitlines()
    assert tip[0].startswith(str(v.snp[hub])) and tip[-1].startswith(f"pathways ({N_PATHWAYS_OF_HUB})")
    lone = int(rep.i[5])
    pos = view.node_position(lone)
    assert "no pathway" in view.describe_point(view.point_at(pos.x(), pos.y()))


@pytest.mark.slow
@pytest.mark.parametrize("kind,content,where", [
    ("gmt", "P_OK\tdesc\tGENE1\nP_BAD\tno genes here\n", "line 2"),
    ("annotation", "1\t100\t50\tBACKWARDS\n", "line 1"),
])
def test_bad_annotation_files_give_a_dialog_and_change_nothing(qtbot, annotated, tmp_path, kind, content, where):
    win = annotated
    before, graph_before = win.pathway_sources, win.graph
    bad = tmp_path / f"bad.{'gmt' if kind == 'gmt' else 'bed'}"
    bad.write_text(content)
    sources = PathwaySources(**{**before.__dict__, kind: str(bad)})
    with qtbot.waitSignal(win.taskFailed, timeout=30000) as blocker:
        win.set_pathway_sources(sources)
    title, message = blocker.args
    assert title == "Problem with the input" and str(bad) in message and where in message
    assert "Traceback" not in message
    qtbot.waitUntil(lambda: not win.busy)
    assert win.pathway_sources == before and win.graph is graph_before
    box = win.findChild(QMessageBox, "errorBox")
    assert box is not None and box.isVisible() and str(bad) in box.text()


@pytest.mark.slow
def test_annotation_window_and_files_are_remembered(qtbot, annotated):
    from gui.main_window import MainWindow

    bed, gmt = annotated.annotation_files
    again = MainWindow()
    qtbot.addWidget(again)
    assert again.pathway_sources == PathwaySources(str(bed), str(gmt), 0.0)
    with qtbot.waitSignal(annotated.pathwaySourcesChanged, timeout=60000):
        annotated.use_bundled_pathway_files()
    assert annotated.pathway_sources == PathwaySources(None, None, 10.0)
    g = graph_from_result(annotated.result, annotation=bundled_annotation(), gene_sets=bundled_gene_sets(), window_kb=10)
    assert {n: d["pathways"] for n, d in annotated.graph.nodes(data=True)} == {n: d["pathways"] for n, d in g.nodes(data=True)}


@pytest.mark.slow
def test_graph_export_writes_what_gboost_pathways_writes(qtbot, annotated, cli_dir, tmp_path):
    from gboost.cli import main

    bed, gmt = annotated.annotation_files
    out = tmp_path / "graph"
    with qtbot.waitSignal(annotated.exportFinished, timeout=30000):
        assert annotated.export_graph(str(out))
    cli_out = tmp_path / "cli_graph"
    assert main(["pathways", "--pairs", str(cli_dir), "--annotation", str(bed), "--gmt", str(gmt), "--window-kb", "0",
                 "--out", str(cli_out), "--quiet"]) == 0
    assert (out / "edges.tsv").read_bytes() == (cli_out / "edges.tsv").read_bytes()
    # nodes.tsv: the same rows; the CLI's marginal numbers come from marginal.tsv's 6 digits.
    mine_rows = [ln.split("\t") for ln in (out / "nodes.tsv").read_text().splitlines()]
    cli_rows = [ln.split("\t") for ln in (cli_out / "nodes.tsv").read_text().splitlines()]
    header = cli_rows[0]
    assert mine_rows[0] == header and len(mine_rows) == len(cli_rows) == annotated.graph.number_of_nodes() + 1
    numeric = {header.index(c) for c in ("MARGINAL_STAT", "MARGINAL_P", "SCORE")}
    for a, b in zip(mine_rows[1:], cli_rows[1:]):
        assert [x for k, x in enumerate(a) if k not in numeric] == [x for k, x in enumerate(b) if k not in numeric]
        assert [float(a[k]) for k in sorted(numeric)] == pytest.approx([float(b[k]) for k in sorted(numeric)], rel=1e-5, abs=1e-5)
    mine, cli = nx.read_graphml(out / "graph.graphml"), nx.read_graphml(cli_out / "graph.graphml")
    assert dict(mine.nodes(data=True)).keys() == dict(cli.nodes(data=True)).keys()
    for n in cli.nodes:
        for attr in ("snp", "genes", "pathways", "group"):
            assert mine.nodes[n][attr] == cli.nodes[n][attr]


@pytest.mark.slow
def test_pathway_view_exports_png_and_svg(annotated, tmp_path):
    from guihelpers import non_white_fraction

    annotated.export_plot("pathways", str(tmp_path / "p.png"))
    img = QImage(str(tmp_path / "p.png"))
    assert not img.isNull() and 0.005 < non_white_fraction(img) < 0.6
    assert pixels_near(img, NODE_KNOWN) > 50
    annotated.export_plot("pathways", str(tmp_path / "p.svg"))
    text = (tmp_path / "p.svg").read_text()
    assert "<svg" in text and "P_ALPHA" in text  # captions are vector text


@pytest.mark.slow
def test_thousands_of_nodes_use_a_fixed_number_of_graphics_items(qtbot):
    """No per-node QGraphicsItems: a 3,000-node graph puts as many items in the scene as a
    20-node one, and draws in well under a few seconds."""
    from gui.plots.pathways import PathwayView

    def graph(n_snps, n_pairs, seed):
        rng = np.random.default_rng(seed)
        i = rng.integers(0, n_snps - 1, n_pairs)
        j = np.minimum(i + 1 + rng.integers(0, n_snps, n_pairs), n_snps - 1)
        keep = i < j
        i, j = i[keep], j[keep]
        snps = {"snp": np.array([f"rs{k}" for k in range(n_snps)], dtype=object),
                "chrom": np.array([str(1 + k % 22) for k in range(n_snps)], dtype=object),
                "bp": np.arange(n_snps) * 1000 + 1, "marginal_stat": rng.chisquare(2, n_snps),
                "marginal_p": rng.uniform(1e-9, 1, n_snps)}
        pathways = {f"rs{k}": [f"PATH{rng.integers(0, n_snps // 6)}"] for k in range(n_snps) if rng.uniform() < 0.8}
        stat = rng.chisquare(4, len(i)) + 30
        pairs = {"i": i, "j": j, "stat": stat, "df": np.full(len(i), 4), "p": np.exp(-stat / 2), "ksa": stat + 1}
        return build_graph(pairs, snps, snp_pathways=pathways)

    view = PathwayView()
    qtbot.addWidget(view)
    view.resize(1200, 800)
    view.show()
    def items():
        """Scene items outside the legend (whose few rows depend on the selection and edge tiers)."""
        legend = view.legend_item
        return [it for it in view.plot_widget.scene().items() if it is not legend and not legend.isAncestorOf(it)]

    view.set_graph(graph(30, 12, 1))
    small = len(items())
    big = graph(6000, 3000, 2)
    assert big.number_of_nodes() > 3000
    t0 = time.perf_counter()
    view.set_graph(big)
    view.set_threshold(35.0)
    view.select_snp(int(view.arrays.index[0]))
    img = render_image(view.plot_widget, (1400, 900))
    elapsed = time.perf_counter() - t0
    assert len(items()) == small
    assert len(view.legend_item.items) <= 12
    assert len(view.nodes.data) == big.number_of_nodes()
    assert 0 < len(view.labels.drawn) <= view.labels.max_labels  # overlapping labels left out
    assert non_blank(img) and elapsed < 10.0


def non_blank(img: QImage) -> bool:
    return bool((rgb(img).min(axis=2) < 200).mean() > 0.01)


@pytest.mark.slow
def test_groups_list_a_snp_once_with_all_its_pathways(annotated):
    g = annotated.graph
    v = annotated.result.study.variants
    hub = str(v.snp[annotated.reported.i[0]])
    assert len(split_list(g.nodes[hub]["pathways"])) == N_PATHWAYS_OF_HUB
    assert sum(1 for n in annotated.pathways.arrays.nodes if n == hub) == 1
