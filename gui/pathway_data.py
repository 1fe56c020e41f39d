"""Where the pathway graph's annotation comes from, and the graph's drawing arrays (no Qt).

The graph itself is the core's (:func:`gboost.pathways.graph_from_result`); this module only
remembers which files the user chose, reads each file once (the bundled ones are read once per
process: about a second for the gene annotation), and turns the graph into NumPy arrays that
the view draws with one scatter item and a few line items.
"""
from __future__ import annotations

import math
import os
import threading
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from gboost.pathways import (DEFAULT_WINDOW_KB, UNKNOWN, bundled_annotation, bundled_gene_sets, graph_from_result,
                             group_circle_layout, node_groups, read_annotation, read_gmt, split_list)

_lock = threading.Lock()  # the files are read in worker threads; one reader at a time


@dataclass(frozen=True)
class PathwaySources:
    """The user's choice: ``None`` for a file means the bundled one (GRCh38 genes, GO BP sets)."""

    annotation: str | None = None
    gmt: str | None = None
    window_kb: float = DEFAULT_WINDOW_KB

    def describe(self) -> str:
        genes = os.path.basename(self.annotation) if self.annotation else "bundled GRCh38 genes"
        sets = os.path.basename(self.gmt) if self.gmt else "bundled GO biological processes"
        return f"{genes} · {sets} · ±{self.window_kb:g} kb"


def _stamp(path: str) -> tuple[int, int]:
    st = os.stat(path)
    return st.st_mtime_ns, st.st_size


@lru_cache(maxsize=4)
def _annotation(path: str | None, _stamp_: tuple | None):
    return bundled_annotation() if path is None else read_annotation(path)


@lru_cache(maxsize=4)
def _gene_sets(path: str | None, _stamp_: tuple | None):
    return bundled_gene_sets() if path is None else read_gmt(path)


def load(sources: PathwaySources):
    """(annotation, gene sets) of ``sources``; each file read once until it changes on disk.

    Raises :class:`gboost.errors.InputError` (naming the file and line) for a bad file and
    ``OSError`` for one that cannot be read.
    """
    with _lock:
        ann = _annotation(sources.annotation, _stamp(sources.annotation) if sources.annotation else None)
        sets = _gene_sets(sources.gmt, _stamp(sources.gmt) if sources.gmt else None)
    return ann, sets


def check_sources(sources: PathwaySources):
    """Read the files of ``sources`` and check that they fit together; returns (annotation, sets)."""
    from gboost.errors import InputError

    if not (sources.window_kb >= 0 and math.isfinite(sources.window_kb)):
        raise InputError(None, f"the SNP-to-gene window must be a number of kb >= 0, got {sources.window_kb}")
    ann, sets = load(sources)
    if not (sets.genes & ann.genes):
        raise InputError(sets.path, f"no gene of this .gmt is in the annotation {ann.path}; do both use the same "
                                    "gene IDs (symbols vs Entrez IDs)?")
    return ann, sets


def build_graph(result, reported, sources: PathwaySources):
    """The interaction graph of ``reported`` (the result's reported pairs, computed once by the window)."""
    ann, sets = check_sources(sources)
    view = _ResultView(result, reported)
    return graph_from_result(view, annotation=ann, gene_sets=sets, window_kb=sources.window_kb)


class _ResultView:
    """A ScanResult whose ``reported`` is the array already computed (the core recomputes it per access)."""

    def __init__(self, result, reported):
        self._result, self.reported = result, reported

    def __getattr__(self, name):
        return getattr(self._result, name)


@dataclass
class GraphArrays:
    """The graph as arrays in drawing order (node k of the arrays is ``nodes[k]``).

    ``group_of`` indexes ``groups``; ``centre`` and ``radius`` are each group's circle;
    ``edges`` holds node positions (a, b) per edge, ``edge_stat`` its interaction chi-square.
    """

    nodes: list
    index: np.ndarray  # study row of each node (the SNP index of the table and the Manhattan plot)
    x: np.ndarray
    y: np.ndarray
    score: np.ndarray
    group_of: np.ndarray
    groups: list
    centre: np.ndarray  # (n_groups, 2)
    radius: np.ndarray
    edges: np.ndarray  # (m, 2) node positions
    edge_stat: np.ndarray
    snp: list
    gene: list  # the SNP's first gene ("" outside every gene window)
    label_group: list
    neighbours: list  # node positions adjacent to each node

    def __len__(self) -> int:
        return len(self.nodes)


LAYOUT_GAP = 1.0  # one node spacing between circles: groups stay apart, their captions have room


def graph_arrays(graph, hide_unknown: bool = False) -> GraphArrays:
    """Lay ``graph`` out by pathway (the core's :func:`group_circle_layout`) as drawing arrays;
    ``hide_unknown`` leaves the SNPs of no known pathway (and their pairs) out, so that the known
    groups get the whole ring."""
    if hide_unknown:
        graph = graph.subgraph([n for n, d in graph.nodes(data=True) if d.get("group") != UNKNOWN])
    groups = node_groups(graph)
    known = {name: members for name, members in groups.items() if name != UNKNOWN}
    pos = group_circle_layout(graph, known, spacing=1.0, gap=LAYOUT_GAP)
    if groups.get(UNKNOWN):
        pos.update(unknown_disc(groups[UNKNOWN], pos))
    nodes = [n for members in groups.values() for n in members]
    where = {n: k for k, n in enumerate(nodes)}
    names = list(groups)
    rank = {name: g for g, name in enumerate(names)}
    group_of = np.array([rank[graph.nodes[n]["group"]] for n in nodes], np.int64).reshape(-1)
    xy = np.array([pos[n] for n in nodes], np.float64).reshape(-1, 2)
    centre = np.zeros((len(names), 2))
    radius = np.zeros(len(names))
    for g, name in enumerate(names):
        pts = xy[group_of == g]
        centre[g] = pts.mean(axis=0)
        radius[g] = float(np.max(np.hypot(*(pts - centre[g]).T))) if len(pts) > 1 else 0.0
    edge_list = list(graph.edges(data=True))
    edges = np.array([(where[a], where[b]) for a, b, _ in edge_list], np.int64).reshape(-1, 2)
    stat = np.array([d["stat"] for _, _, d in edge_list], np.float64)
    neighbours = [[where[m] for m in graph.neighbors(n)] for n in nodes]
    return GraphArrays(nodes=nodes, index=np.array([graph.nodes[n]["index"] for n in nodes], np.int64),
                       x=xy[:, 0].copy(), y=xy[:, 1].copy(),
                       score=np.array([graph.nodes[n]["score"] for n in nodes], np.float64),
                       group_of=group_of, groups=names, centre=centre, radius=radius, edges=edges, edge_stat=stat,
                       snp=[str(graph.nodes[n]["snp"]) for n in nodes],
                       gene=[(split_list(graph.nodes[n]["genes"]) or [""])[0] for n in nodes],
                       label_group=[str(graph.nodes[n]["group"]) for n in nodes], neighbours=neighbours)


GOLDEN_ANGLE = math.pi * (3.0 - math.sqrt(5.0))


def unknown_disc(members, placed: dict) -> dict:
    """Positions of the SNPs of no known pathway: a disc packed at one node per unit of area
    (a sunflower spiral, the first node at its centre), right of the known groups' ring with a
    clear gap. On a circle of their own, at one node spacing each, a thousand such SNPs made a ring
    far wider than all known pathways together, which were then squashed into its rim."""
    n = len(members)
    k = np.arange(n)
    r = np.sqrt((k + 0.5) / math.pi)
    radius = float(r[-1]) if n else 0.0
    if placed:
        xy = np.array(list(placed.values()), np.float64).reshape(-1, 2)
        span = float(max(np.ptp(xy[:, 0]), np.ptp(xy[:, 1]), 1.0))
        cx = float(xy[:, 0].max()) + max(3.0 * LAYOUT_GAP, 0.15 * span) + radius
        cy = 0.5 * float(xy[:, 1].min() + xy[:, 1].max())
    else:
        cx = cy = 0.0
    theta = k * GOLDEN_ANGLE
    return {node: (cx + float(rr * math.sin(t)), cy + float(rr * math.cos(t))) for node, rr, t in zip(members, r, theta)}


def shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def list_text(items: list[str], limit: int = 6) -> str:
    """'a; b; c; … (+12 more)': a long list cut to ``limit`` items."""
    if len(items) <= limit:
        return "; ".join(items)
    return "; ".join(items[:limit]) + f"; … (+{len(items) - limit} more)"


def describe_node(graph, node, multiline: bool = False) -> str:
    """Hover text of a node: SNP, position, genes, marginal score, the circle it is drawn on and
    all its pathways (long lists cut); one line for the read-out, or several for a tooltip."""
    d = graph.nodes[node]
    genes = split_list(d["genes"])
    pathways = split_list(d["pathways"])
    gene_text = ("gene " if len(genes) == 1 else "genes ") + list_text(genes, 4) if genes else "no gene within the window"
    deg = graph.degree[node]
    where = "unknown pathway" if d["group"] == UNKNOWN else f"drawn in: {d['group']}"
    path_text = f"pathways ({len(pathways)}): {list_text(pathways)}" if pathways else "no pathway"
    best = max(graph.edges(node, data=True), key=lambda e: e[2]["stat"], default=None)
    pair_text = (f"strongest pair: with {graph.nodes[best[1]]['snp']}, interaction χ² = {best[2]['stat']:.2f} "
                 f"(df {best[2]['df']}, P = {best[2]['p']:.3g})" if best is not None else "no pair")
    parts = [f"{d['snp']}   chr{d['chrom']}:{int(d['bp']):,}", gene_text,
             f"marginal P = {d['marginal_p']:.3g} (score {d['score']:.2f})   {deg} partner{'s' if deg != 1 else ''}",
             pair_text, where, path_text]
    return "\n".join(parts) if multiline else "   ".join(parts)
