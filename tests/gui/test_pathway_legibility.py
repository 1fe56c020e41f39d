"""The pathway graph at 300-3,000 pairs: label budget growing on zoom-in, gene symbols as labels,
the unknown group hideable, edges by strength under a budget, hover with the pair's χ², print
PNG and valid SVG."""
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from PySide6.QtGui import QImage

from gboost.pathways import UNKNOWN, build_graph
from gui.plots.pathways import EDGE_BUDGET, LABEL_BUDGET, PathwayView
from gui.plots.render import render_image


def big_graph(n_snps=6000, n_pairs=3000, seed=2, gene_every=3):
    """A graph of a few thousand pairs: 80 % of SNPs in one of n/6 pathways; every
    ``gene_every``-th SNP in a gene named GENE<k>."""
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
    g = build_graph(pairs, snps, snp_pathways=pathways)
    for n, d in g.nodes(data=True):  # genes as the core's annotation would set them
        k = int(n[2:])
        d["genes"] = f"GENE{k}" if k % gene_every == 0 else ""
    return g


@pytest.fixture
def view(qtbot):
    v = PathwayView()
    qtbot.addWidget(v)
    v.resize(1400, 900)
    v.show()
    return v


def node_labels(view):
    return [t for t in view.labels.drawn if t.startswith(("rs", "GENE"))]


@pytest.mark.slow
def test_label_budget_at_default_zoom_and_more_labels_on_zoom_in(view):
    view.set_graph(big_graph())
    render_image(view.plot_widget, (1400, 900))
    at_default = node_labels(view)
    default_all = list(view.labels.drawn)
    assert 0 < len(at_default) <= LABEL_BUDGET
    vb = view.plot.getViewBox()
    rect = vb.viewRect()
    cx, cy = view.arrays.x[0], view.arrays.y[0]  # on the largest group's circle (the ring's centre is empty)
    vb.setRange(xRange=(cx - rect.width() / 12, cx + rect.width() / 12),
                yRange=(cy - rect.height() / 12, cy + rect.height() / 12), padding=0)
    assert view.labels.budgets[0] > LABEL_BUDGET
    render_image(view.plot_widget, (1400, 900))
    # more text in view (node labels and captions; labels are never drawn over nodes, so in the
    # packed ring the node labels alone need not outnumber the default view's budget)
    assert len(view.labels.drawn) > len(default_all)
    view.reset_view()
    render_image(view.plot_widget, (1400, 900))
    assert len(node_labels(view)) <= LABEL_BUDGET


def test_labels_are_gene_symbols_where_the_snp_lies_in_a_gene(view):
    g = big_graph(600, 400, seed=5)
    view.set_graph(g)
    a = view.arrays
    texts = view.label_texts()
    for k, node in enumerate(a.nodes):
        gene = g.nodes[node]["genes"]
        assert texts[k] == (gene if gene else g.nodes[node]["snp"])
    render_image(view.plot_widget, (1400, 900))
    assert any(t.startswith("GENE") for t in view.labels.drawn)


def test_unknown_group_can_be_hidden(view):
    g = big_graph(1200, 600, seed=3)
    unknown = {n for n, d in g.nodes(data=True) if d["group"] == UNKNOWN}
    assert unknown
    view.set_graph(g)
    assert UNKNOWN in view.arrays.groups
    view.show_unknown.setChecked(False)
    a = view.arrays
    assert UNKNOWN not in a.groups and not (set(a.nodes) & unknown)
    assert len(a) == g.number_of_nodes() - len(unknown)
    assert "hidden" in view.plot.titleLabel.text
    kept_edges = sum(1 for u, v in g.edges if u not in unknown and v not in unknown)
    assert len(a.edges) == kept_edges
    view.show_unknown.setChecked(True)
    assert len(view.arrays) == g.number_of_nodes()


def test_edges_by_strength_weakest_dropped_beyond_the_budget(view):
    g = big_graph()
    assert g.number_of_edges() > EDGE_BUDGET
    view.set_graph(g)
    assert view.edge_segment_count() == EDGE_BUDGET
    stats = view.arrays.edge_stat
    drawn = set(view.drawn_edges.tolist())
    weakest_drawn = stats[list(drawn)].min()
    left_out = [k for k in range(len(stats)) if k not in drawn]
    assert stats[left_out].max() <= weakest_drawn
    widths = [item.opts["pen"].widthF() for item in view.edge_tiers]
    assert widths == sorted(widths) and widths[0] < widths[-1]
    # The widest tier holds the strongest pairs.
    tiers = [item.getData()[0] for item in view.edge_tiers]
    assert all(len(t) for t in tiers)
    assert "strongest" in view.plot.titleLabel.text
    legend = [label.text for _, label in view.legend_item.items]
    assert any("pair χ²" in t for t in legend) and any("5e-8" in t for t in legend)


def test_hover_text_has_gene_pathway_marginal_p_and_the_pairs_chi2(view):
    from gui.pathway_data import describe_node

    g = big_graph(600, 400, seed=5)
    node = max(g.nodes, key=lambda n: g.degree[n] if g.nodes[n]["genes"] else -1)
    text = describe_node(g, node, multiline=True)
    best = max(g.edges(node, data=True), key=lambda e: e[2]["stat"])
    d = g.nodes[node]
    assert f"gene {d['genes']}" in text and "marginal P =" in text
    assert f"χ² = {best[2]['stat']:.2f}" in text and g.nodes[best[1]]["snp"] in text
    assert (d["group"] in text) or "unknown pathway" in text


@pytest.mark.slow
def test_print_png_has_the_resolution_and_svg_is_valid(view, tmp_path):
    view.set_graph(big_graph(600, 400, seed=5))
    png = tmp_path / "g.png"
    view.export_png(str(png), size=(1000, 700), dpi=300)
    img = QImage(str(png))
    assert img.width() == round(1000 * 300 / 96) and round(img.dotsPerMeterX() * 0.0254) == 300
    svg = tmp_path / "g.svg"
    view.export_svg(str(svg), size=(1000, 700))
    root = ET.parse(svg).getroot()  # well-formed XML
    assert root.tag.endswith("svg")
    ns = "{http://www.w3.org/2000/svg}"
    assert root.findall(f".//{ns}text") and (root.findall(f".//{ns}path") or root.findall(f".//{ns}polyline"))


@pytest.mark.parametrize("n_pairs", [300, 3000])
def test_the_graph_reads_at_default_zoom_unknown_apart_and_no_label_over_a_node(view, n_pairs):
    view.set_graph(big_graph(n_snps=2 * n_pairs, n_pairs=n_pairs))
    render_image(view.plot_widget, (1000, 560))  # the plot area of a 1366x768 window
    a = view.arrays
    u = a.groups.index(UNKNOWN)
    unknown, known = a.group_of == u, a.group_of != u
    n_u = int(unknown.sum())
    assert n_u > 20 and known.any()
    # The SNPs of no known pathway apart from the pathways (right of them), packed in a disc
    # about as wide as their number asks, not a ring around or beside the figure.
    assert a.x[unknown].min() > a.x[known].max()
    width = max(np.ptp(a.x[unknown]), np.ptp(a.y[unknown]))
    assert width <= 2 * np.sqrt(n_u / np.pi) + 1.5
    assert np.ptp(a.x[known]) > 0.5 * (a.x.max() - a.x.min())  # the pathways keep most of the figure
    # Labels drawn beside nodes, none over one (each node's disc is clear of every label box).
    assert node_labels(view)
    tr = view.labels.last_transform
    px = tr.m11() * a.x + tr.m21() * a.y + tr.dx()
    py = tr.m12() * a.x + tr.m22() * a.y + tr.dy()
    r = view.sizes / 2
    for box in view.labels.drawn_boxes:
        near_x = np.clip(px, box.left(), box.right())
        near_y = np.clip(py, box.top(), box.bottom())
        assert not np.any(np.hypot(px - near_x, py - near_y) < r - 0.5), "a label covers a node"


@pytest.mark.parametrize("n_pairs", [300, 3000])
def test_labels_keep_a_gap_between_them(view, n_pairs):
    """Two labels side by side with no space read as one word ("IGSF11long-term synaptic
    potentiation"): every two drawn labels are at least the layer's gap apart."""
    from gui.plots.labels import LabelLayer

    view.set_graph(big_graph(n_snps=2 * n_pairs, n_pairs=n_pairs))
    render_image(view.plot_widget, (1000, 560))
    boxes = view.labels.drawn_boxes
    assert len(boxes) > 20
    gx, gy = LabelLayer.GAP
    for n, a in enumerate(boxes):
        for b in boxes[n + 1:]:
            apart_x = max(b.left() - a.right(), a.left() - b.right())
            apart_y = max(b.top() - a.bottom(), a.top() - b.bottom())
            assert apart_x >= gx - 1e-6 or apart_y >= gy - 1e-6, (view.labels.drawn[n], a, b)


def test_a_gene_is_named_once_per_group_at_its_strongest_snp(view):
    """Several SNPs of one gene (an LD block in it) ringed their circle with the same name."""
    g = big_graph(600, 400, seed=5)
    groups: dict = {}
    for node, d in g.nodes(data=True):
        groups.setdefault(d["group"], []).append(node)
    group, members = max(groups.items(), key=lambda kv: len(kv[1]))
    shared = members[:6]
    for node in shared:
        g.nodes[node]["genes"] = "SHAREDGENE"
    view.set_graph(g)
    a, texts = view.arrays, view.label_texts()
    rows = [k for k, node in enumerate(a.nodes) if node in set(shared)]
    named = [k for k in rows if texts[k] == "SHAREDGENE"]
    assert len(rows) == 6 and len(named) == 1
    assert a.score[named[0]] == max(a.score[k] for k in rows)
    assert all(texts[k] == "" for k in rows if k != named[0])
