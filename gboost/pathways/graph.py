"""The interaction graph: SNPs of reported pairs grouped by pathway (GBOOST §4.1).

Nodes are the SNPs of the reported pairs, keyed by SNP ID; edges are the pairs. Attributes are
GraphML scalars (lists joined with ``";"``, see :func:`split_list`), so the graph writes as is:

node
    ``snp``, ``chrom``, ``bp``, ``index`` (row in the study / ``marginal.tsv``), ``genes``,
    ``pathways``, ``n_pathways``, ``group``, ``marginal_stat``, ``marginal_p``, ``score``
    (``-log10`` of the marginal P, P floored at 1e-300 so the score stays finite).
edge
    ``stat`` (the pair's interaction chi-square), ``df``, ``p``, ``ksa``.

**Groups.** Each SNP is drawn in one group, its *primary pathway*, chosen among the pathways it
belongs to (all of them stay listed in ``pathways``):

1. the pathway it shares with the most of its interaction partners, so that a pair of SNPs whose
   genes share a pathway lands in that pathway's group together;
2. when it shares none with its partners, the pathway holding the most SNPs of the graph.

Ties go to the smaller gene set (the more specific pathway), then to the name in alphabetical
order. SNPs in no pathway form the group :data:`UNKNOWN`. The size of a pathway that only the
direct SNP -> pathway table names is its number of SNPs in that table.

**Pathway membership** comes from genes (a SNP's genes, by position and window, see
:mod:`gboost.pathways.annotation`, and their ``.gmt`` sets) and/or a direct SNP -> pathway table;
when both are given a SNP's pathways are the union, the gene-derived ones first.
"""
from __future__ import annotations

import math
import os
import re
from collections import Counter
from pathlib import Path
from typing import Mapping, Sequence

import networkx as nx
import numpy as np

from gboost.errors import InputError
from gboost.pathways.annotation import DEFAULT_WINDOW_KB, GeneAnnotation, map_snps_to_genes, open_text
from gboost.pathways.gmt import GeneSets

UNKNOWN = "(unknown pathway)"
LIST_SEP = ";"
SCORE_P_FLOOR = 1e-300
# Columns read from gboost scan's outputs (others, e.g. pairs.tsv's Q, R2, DIST, are ignored).
PAIRS_COLUMNS = ["SNP1", "SNP2", "KSA", "STAT", "DF", "P"]
MARGINAL_COLUMNS = ["CHR", "SNP", "BP", "STAT", "P"]
NODE_COLUMNS = [("SNP", "snp"), ("CHR", "chrom"), ("BP", "bp"), ("INDEX", "index"), ("GROUP", "group"),
                ("GENES", "genes"), ("PATHWAYS", "pathways"), ("N_PATHWAYS", "n_pathways"),
                ("MARGINAL_STAT", "marginal_stat"), ("MARGINAL_P", "marginal_p"), ("SCORE", "score")]
EDGE_COLUMNS = [("STAT", "stat"), ("DF", "df"), ("P", "p"), ("KSA", "ksa")]
GRAPH_FILES = ("graph.graphml", "nodes.tsv", "edges.tsv")


def split_list(value: str) -> list[str]:
    """A ``;``-joined attribute (``genes``, ``pathways``) as a list; ``""`` gives ``[]``."""
    return value.split(LIST_SEP) if value else []


def annotate_snps(chrom: Sequence[str], bp: Sequence[int], snp: Sequence[str], *,
                  annotation: GeneAnnotation | None = None, gene_sets: GeneSets | None = None,
                  snp_pathways: Mapping[str, Sequence[str]] | None = None,
                  window_kb: float = DEFAULT_WINDOW_KB) -> tuple[list[tuple[str, ...]], list[tuple[str, ...]]]:
    """Genes and pathways of each SNP (see the module notes); both lists of tuples, one per SNP."""
    n = len(snp)
    genes: list[tuple[str, ...]] = [()] * n
    if annotation is not None:
        genes = map_snps_to_genes(chrom, bp, annotation, window_kb).genes_per_snp()
    pathways: list[tuple[str, ...]] = []
    for k in range(n):
        found: dict[str, None] = {}
        if gene_sets is not None:
            for g in genes[k]:
                found.update(dict.fromkeys(gene_sets.pathways_of(g)))
        if snp_pathways is not None:
            found.update(dict.fromkeys(snp_pathways.get(str(snp[k]), ())))
        pathways.append(tuple(found))
    return genes, pathways


def build_graph(pairs: Mapping[str, np.ndarray], snps: Mapping[str, np.ndarray], *,
                annotation: GeneAnnotation | None = None, gene_sets: GeneSets | None = None,
                snp_pathways: Mapping[str, Sequence[str]] | None = None,
                window_kb: float = DEFAULT_WINDOW_KB) -> nx.Graph:
    """The interaction graph of ``pairs`` over the SNP table ``snps``.

    Parameters
    ----------
    pairs
        Arrays ``i``, ``j`` (rows of ``snps``), ``stat``, ``df``, ``p`` and ``ksa``, one entry a pair.
    snps
        Arrays ``snp``, ``chrom``, ``bp``, ``marginal_stat``, ``marginal_p``, one entry a SNP of the
        study (all of them, or at least every one that ``pairs`` names).
    annotation, gene_sets, snp_pathways, window_kb
        Where pathway membership comes from (any may be ``None``).
    """
    i, j = np.asarray(pairs["i"], np.int64), np.asarray(pairs["j"], np.int64)
    nodes = np.unique(np.concatenate([i, j]))
    ids = [str(snps["snp"][k]) for k in nodes]
    dup = [s for s, c in Counter(ids).items() if c > 1]
    if dup:
        raise InputError(None, f"SNP ID {dup[0]!r} names two different SNPs of the reported pairs; IDs must be unique")
    chrom = [str(snps["chrom"][k]) for k in nodes]
    bp = [int(snps["bp"][k]) for k in nodes]
    genes, pathways = annotate_snps(chrom, bp, ids, annotation=annotation, gene_sets=gene_sets,
                                    snp_pathways=snp_pathways, window_kb=window_kb)
    position = {int(idx): k for k, idx in enumerate(nodes)}
    partners: list[list[int]] = [[] for _ in ids]
    for a, b in zip(i.tolist(), j.tolist()):
        partners[position[a]].append(position[b])
        partners[position[b]].append(position[a])
    groups = primary_groups(pathways, _set_sizes(gene_sets, snp_pathways), partners)

    g = nx.Graph()
    g.graph.update(
        window_kb=float(window_kb),
        genome_build=(annotation.build or "") if annotation is not None else "",
        annotation=(annotation.path or "") if annotation is not None else "",
        gene_sets=(gene_sets.path or "") if gene_sets is not None else "",
        unknown_group=UNKNOWN,
    )
    for k, idx in enumerate(nodes):
        mp = float(snps["marginal_p"][idx])
        g.add_node(ids[k], snp=ids[k], chrom=chrom[k], bp=bp[k], index=int(idx),
                   genes=LIST_SEP.join(genes[k]), pathways=LIST_SEP.join(pathways[k]),
                   n_pathways=len(pathways[k]), group=groups[k],
                   marginal_stat=float(snps["marginal_stat"][idx]), marginal_p=mp, score=marginal_score(mp))
    key = dict(zip(nodes.tolist(), ids))
    for a, b, st, df, p, ksa in zip(i.tolist(), j.tolist(), pairs["stat"], pairs["df"], pairs["p"], pairs["ksa"]):
        g.add_edge(key[a], key[b], stat=float(st), df=int(df), p=float(p), ksa=float(ksa))
    return g


def marginal_score(p: float) -> float:
    """``-log10 P``, P floored at :data:`SCORE_P_FLOOR`; NaN stays NaN."""
    if math.isnan(p):
        return p
    return -math.log10(max(p, SCORE_P_FLOOR)) + 0.0  # + 0.0: P = 1 gives 0.0, not -0.0


def _set_sizes(gene_sets: GeneSets | None, snp_pathways: Mapping[str, Sequence[str]] | None) -> dict[str, int]:
    sizes: dict[str, int] = {}
    if snp_pathways is not None:
        sizes.update(Counter(p for ps in snp_pathways.values() for p in set(ps)))
    if gene_sets is not None:  # a .gmt set's size is its number of genes
        sizes.update({name: gene_sets.size(name) for name in gene_sets.sets})
    return sizes


def primary_groups(pathways: Sequence[Sequence[str]], set_size: Mapping[str, int] | None = None,
                   partners: Sequence[Sequence[int]] | None = None) -> list[str]:
    """The primary pathway of each SNP (see the module notes); :data:`UNKNOWN` for none.

    ``pathways[k]`` are SNP k's pathways, ``partners[k]`` the positions (in ``pathways``) of the
    SNPs it interacts with, ``set_size`` the pathways' gene-set sizes.
    """
    count = Counter(p for ps in pathways for p in set(ps))
    size = set_size or {}
    sets = [set(ps) for ps in pathways]
    out = []
    for k, ps in enumerate(pathways):
        if not ps:
            out.append(UNKNOWN)
            continue
        shared = Counter(p for m in (partners[k] if partners is not None else ()) for p in sets[m] & sets[k])
        if shared:
            out.append(min(shared, key=lambda p: (-shared[p], size.get(p, 0), p)))
        else:
            out.append(min(ps, key=lambda p: (-count[p], size.get(p, 0), p)))
    return out


def graph_from_result(result, **sources) -> nx.Graph:
    """The graph of a :class:`gboost.pipeline.scan.ScanResult`'s reported pairs (``sources``: as
    :func:`build_graph`)."""
    v, pr = result.study.variants, result.reported
    pairs = {"i": pr.i, "j": pr.j, "stat": pr.stat, "df": pr.df, "p": pr.p, "ksa": pr.ksa}
    snps = {"snp": v.snp, "chrom": v.chrom, "bp": v.bp, "marginal_stat": result.marginal_stat,
            "marginal_p": result.marginal_p}
    return build_graph(pairs, snps, **sources)


def graph_from_output_dir(path: str | os.PathLike, **sources) -> nx.Graph:
    """The graph of a ``gboost scan`` output directory (its ``pairs.tsv`` and ``marginal.tsv``)."""
    d = Path(path)
    if not d.is_dir():
        raise InputError(d, "not a directory (expected the output directory of gboost scan)")
    snps = read_marginal_tsv(d / "marginal.tsv")
    row = {s: k for k, s in enumerate(snps["snp"])}
    pairs = read_pairs_tsv(d / "pairs.tsv", row)
    return build_graph(pairs, snps, **sources)


def _tsv_rows(path: Path, required: list[str]):
    """Rows of a gboost TSV as ``(line number, {column: text})``; columns are found by name, so
    files with more columns (newer versions of gboost) read the same."""
    if not path.exists():
        raise InputError(path, "not found (expected an output of gboost scan)")
    lines = open_text(path)
    first = next(lines, None)
    header = first.split("\t") if first is not None else []
    missing = [c for c in required if c not in header]
    if missing:
        raise InputError(path, f"line 1: expected a header with the columns {' '.join(required)} "
                               f"(missing {' '.join(missing)})")
    for n, line in enumerate(lines, 2):
        if not line:
            continue
        f = line.split("\t")
        if len(f) != len(header):
            raise InputError(path, f"line {n}: expected {len(header)} tab-separated columns, found {len(f)}")
        yield n, dict(zip(header, f))


def _float(path: Path, n: int, name: str, text: str) -> float:
    try:
        return float(text)
    except ValueError:
        if text == "NA":
            return math.nan
        raise InputError(path, f"line {n}: {name} must be a number, got {text!r}") from None


def _int(path: Path, n: int, name: str, text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise InputError(path, f"line {n}: {name} must be an integer, got {text!r}") from None


def read_marginal_tsv(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """``marginal.tsv`` as arrays ``snp``, ``chrom``, ``bp``, ``marginal_stat``, ``marginal_p``."""
    path = Path(path)
    cols: dict[str, list] = {"snp": [], "chrom": [], "bp": [], "marginal_stat": [], "marginal_p": []}
    for n, f in _tsv_rows(path, MARGINAL_COLUMNS):
        cols["chrom"].append(f["CHR"])
        cols["snp"].append(f["SNP"])
        cols["bp"].append(_int(path, n, "BP", f["BP"]))
        cols["marginal_stat"].append(_float(path, n, "STAT", f["STAT"]))
        cols["marginal_p"].append(_float(path, n, "P", f["P"]))
    return {"snp": np.array(cols["snp"], dtype=object), "chrom": np.array(cols["chrom"], dtype=object),
            "bp": np.array(cols["bp"], np.int64), "marginal_stat": np.array(cols["marginal_stat"]),
            "marginal_p": np.array(cols["marginal_p"])}


def read_pairs_tsv(path: str | os.PathLike, row: Mapping[str, int]) -> dict[str, np.ndarray]:
    """``pairs.tsv`` as arrays ``i``, ``j``, ``stat``, ``df``, ``p``, ``ksa``; ``row`` maps SNP IDs
    to their rows in the SNP table (from ``marginal.tsv``)."""
    path = Path(path)
    cols: dict[str, list] = {k: [] for k in ("i", "j", "stat", "df", "p", "ksa")}
    for n, f in _tsv_rows(path, PAIRS_COLUMNS):
        for key, snp in (("i", f["SNP1"]), ("j", f["SNP2"])):
            if snp not in row:
                raise InputError(path, f"line {n}: SNP {snp!r} is not in marginal.tsv")
            cols[key].append(row[snp])
        cols["ksa"].append(_float(path, n, "KSA", f["KSA"]))
        cols["stat"].append(_float(path, n, "STAT", f["STAT"]))
        cols["df"].append(_int(path, n, "DF", f["DF"]))
        cols["p"].append(_float(path, n, "P", f["P"]))
    return {"i": np.array(cols["i"], np.int64), "j": np.array(cols["j"], np.int64), "stat": np.array(cols["stat"]),
            "df": np.array(cols["df"], np.int64), "p": np.array(cols["p"]), "ksa": np.array(cols["ksa"])}


def _chrom_key(c: str) -> tuple[int, str]:
    return (int(c), "") if c.isdigit() else (10**6, c)


def node_groups(graph: nx.Graph) -> dict[str, list]:
    """Nodes by ``group``: known groups by size (largest first) then name, :data:`UNKNOWN` last;
    within a group, nodes in genome order (chromosome, position, SNP ID)."""
    members: dict[str, list] = {}
    for node, data in graph.nodes(data=True):
        members.setdefault(data.get("group", UNKNOWN), []).append(node)

    def genome_order(node):
        d = graph.nodes[node]
        return (_chrom_key(str(d.get("chrom", ""))), int(d.get("bp", 0)), str(node))

    order = sorted(members, key=lambda grp: (grp == UNKNOWN, -len(members[grp]), grp))
    return {grp: sorted(members[grp], key=genome_order) for grp in order}


def group_circle_layout(graph: nx.Graph, groups: Mapping[str, Sequence] | None = None, *,
                        spacing: float = 1.0, gap: float = 1.0) -> dict:
    """Positions ``{node: (x, y)}``: each group on its own circle, the circles on a larger ring.

    Deterministic (no randomness): groups in the order given (default :func:`node_groups`), the
    first at the top of the ring and the others counter-clockwise; nodes of a group evenly spaced
    on its circle in the order given, the first at the top. A circle's circumference is
    ``spacing`` per node (a lone node sits at its circle's centre); each group takes a share of the
    ring proportional to its diameter plus ``gap``, and the ring's radius (a quarter of the summed
    shares) keeps every two circles at least ``gap`` apart. A single group is centred at (0, 0).
    Nodes of ``graph`` in no group are not placed.
    """
    groups = node_groups(graph) if groups is None else groups
    names = [grp for grp in groups if len(groups[grp])]
    if not names:
        return {}
    radius = np.array([spacing * len(groups[grp]) / (2 * math.pi) if len(groups[grp]) > 1 else 0.0 for grp in names])
    reach = np.maximum(radius, spacing / 2)  # a circle's footprint, a lone node's included
    share = 2 * reach + gap
    total = float(share.sum())
    # Chord >= (2/pi) x arc for arcs up to a half turn, and any two circles are at least
    # (reach_a + reach_b + gap) of arc apart, so a ring of radius total/4 separates them all.
    ring = total / 4 if len(names) > 1 else 0.0
    mid = (np.cumsum(share) - share / 2) / total * 2 * math.pi
    pos = {}
    for grp, r, theta in zip(names, radius, mid):
        cx, cy = ring * -math.sin(theta - mid[0]), ring * math.cos(theta - mid[0])
        members = list(groups[grp])
        for k, node in enumerate(members):
            phi = 2 * math.pi * k / len(members)
            pos[node] = (cx - r * math.sin(phi), cy + r * math.cos(phi))
    return pos


def _fmt(x) -> str:
    if isinstance(x, float):
        return "NA" if math.isnan(x) else f"{x:.10g}"
    return str(x)


def format_node_table(graph: nx.Graph) -> str:
    """``nodes.tsv``: one row per SNP, by group (as :func:`node_groups`), with its DEGREE."""
    lines = ["\t".join([c for c, _ in NODE_COLUMNS] + ["DEGREE"]) + "\n"]
    for nodes in node_groups(graph).values():
        for node in nodes:
            d = graph.nodes[node]
            lines.append("\t".join([_fmt(d[a]) for _, a in NODE_COLUMNS] + [str(graph.degree[node])]) + "\n")
    return "".join(lines)


def format_edge_table(graph: nx.Graph) -> str:
    """``edges.tsv``: one row per pair, by STAT descending, with both SNPs' position and group."""
    lines = ["SNP1\tCHR1\tBP1\tGROUP1\tSNP2\tCHR2\tBP2\tGROUP2\t" + "\t".join(c for c, _ in EDGE_COLUMNS) + "\n"]
    edges = sorted(graph.edges(data=True), key=lambda e: -e[2]["stat"])
    for a, b, d in edges:
        na, nb = graph.nodes[a], graph.nodes[b]
        lines.append("\t".join([na["snp"], na["chrom"], str(na["bp"]), na["group"],
                                nb["snp"], nb["chrom"], str(nb["bp"]), nb["group"]]
                               + [_fmt(d[a_]) for _, a_ in EDGE_COLUMNS]) + "\n")
    return "".join(lines)


# Characters XML 1.0 cannot hold at all, not even as a character reference: C0 controls other than
# tab, LF and CR, lone surrogates, U+FFFE and U+FFFF. networkx writes them raw, and the file is then
# not well-formed XML (every reader refuses it).
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_text(value):
    """``value`` as GraphML can hold it: a string's characters XML 1.0 forbids written as their
    Python escapes (``\\x1b``: readable, and the rest of the name kept); other values unchanged."""
    if isinstance(value, str) and _NOT_XML.search(value):
        return _NOT_XML.sub(lambda m: ascii(m.group())[1:-1], value)
    return value


def write_graphml(graph: nx.Graph, path: str | os.PathLike) -> None:
    """``graph.graphml``, well-formed XML whatever the names read from the user's files hold
    (``xml_text``; nodes.tsv and edges.tsv keep the names as read). A graph without such names is
    written as it is (a copy could list its edges in another order)."""
    texts = [*graph.graph.values(), *(x for n, d in graph.nodes(data=True) for x in (n, *d.values())),
             *(v for _, _, d in graph.edges(data=True) for v in d.values())]
    if not any(isinstance(t, str) and _NOT_XML.search(t) for t in texts):
        nx.write_graphml(graph, os.fspath(path), encoding="utf-8", prettyprint=True)
        return
    safe = graph.__class__()
    safe.graph.update({k: xml_text(v) for k, v in graph.graph.items()})
    safe.add_nodes_from((xml_text(n), {k: xml_text(v) for k, v in d.items()}) for n, d in graph.nodes(data=True))
    safe.add_edges_from((xml_text(a), xml_text(b), {k: xml_text(v) for k, v in d.items()})
                        for a, b, d in graph.edges(data=True))
    nx.write_graphml(safe, os.fspath(path), encoding="utf-8", prettyprint=True)


def write_graph_files(graph: nx.Graph, out_dir: str | os.PathLike, *, overwrite: bool = False) -> Path:
    """Write ``graph.graphml``, ``nodes.tsv`` and ``edges.tsv`` into ``out_dir``, all or nothing.

    Through :func:`gboost.outputs.results.atomic_directory`: an error never leaves half the files, nor
    destroys a previous set before the new one is complete.
    """
    from gboost.outputs.results import atomic_directory

    def fill(staging: Path) -> None:
        write_graphml(graph, staging / "graph.graphml")
        for name, text in (("nodes.tsv", format_node_table(graph)), ("edges.tsv", format_edge_table(graph))):
            with open(staging / name, "w", encoding="utf-8", newline="\n") as f:
                f.write(text)

    return atomic_directory(out_dir, fill, overwrite=overwrite)
