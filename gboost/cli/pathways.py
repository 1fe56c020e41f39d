"""``gboost pathways``: the interaction graph of a scan's reported pairs, grouped by pathway.

Reads ``DIR/pairs.tsv`` and ``DIR/marginal.tsv`` of ``gboost scan``, maps SNPs to genes and genes
to pathways, and writes ``graph.graphml``, ``nodes.tsv`` and ``edges.tsv`` into ``--out``, all or
nothing. Wired into ``gboost.cli`` through :func:`add_arguments` and :func:`run`.
"""
from __future__ import annotations

import argparse
import sys

from gboost.pipeline import validate as V
from gboost.errors import InputError, printable


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``pathways`` options to ``parser``."""
    parser.add_argument("--pairs", required=True, metavar="DIR",
                        help="output directory of gboost scan (reads pairs.tsv and marginal.tsv)")
    parser.add_argument("--annotation", metavar="FILE",
                        help="gene annotation, BED (chrom start end name, 0-based) or GTF (gene lines, gene_name); "
                             ".gz accepted (default: the bundled protein-coding genes, GRCh38)")
    parser.add_argument("--gmt", metavar="FILE",
                        help="gene sets, .gmt (NAME DESCRIPTION GENE...); default: the bundled GO biological-process "
                             "sets, unless --snp-pathway is given")
    parser.add_argument("--snp-pathway", metavar="FILE",
                        help="direct SNP -> pathway table (2 columns: SNP PATHWAY); adds to the --gmt pathways")
    parser.add_argument("--window-kb", type=V.at_least("--window-kb", 0), default=None, metavar="K",
                        help="map a SNP to genes within K kb of either end (default 10)")
    parser.add_argument("--build", metavar="NAME",
                        help="genome build of the SNP positions; must match the annotation's when it states one")
    parser.add_argument("--out", required=True, metavar="OUTDIR", help="write graph.graphml, nodes.tsv, edges.tsv here")
    parser.add_argument("--overwrite", action="store_true", help="replace the files of an earlier run in OUTDIR")
    parser.add_argument("--quiet", action="store_true", help="no summary on stderr")


def _same_build(a: str, b: str) -> bool:
    alias = {"hg19": "grch37", "hg38": "grch38"}

    def norm(x: str) -> str:
        x = x.lower().split(".")[0]  # GRCh38.p14 -> grch38
        return alias.get(x, x)

    return norm(a) == norm(b)


def run(args: argparse.Namespace) -> int:
    """Build and write the graph. Returns the exit code (InputError is turned into 2 by gboost.cli)."""
    try:
        from gboost.pathways import annotation as ann, gmt
        from gboost.pathways.graph import graph_from_output_dir, node_groups, write_graph_files, UNKNOWN
    except ImportError as exc:  # networkx is the one extra dependency
        raise InputError(None, f"gboost pathways needs networkx ({exc}); pip install networkx") from None

    window = ann.DEFAULT_WINDOW_KB if args.window_kb is None else args.window_kb  # (>= 0: gboost.pipeline.validate)
    annotation = ann.read_annotation(args.annotation) if args.annotation else ann.bundled_annotation()
    if args.build and annotation.build and not _same_build(args.build, annotation.build):
        raise InputError(annotation.path, f"genes are on build {annotation.build}, the SNPs on {args.build} "
                                          "(use an annotation of the SNPs' build)")
    gene_sets = None
    if args.gmt:
        gene_sets = gmt.read_gmt(args.gmt)
    elif not args.snp_pathway:
        gene_sets = gmt.bundled_gene_sets()
    snp_pathways = gmt.read_snp_pathways(args.snp_pathway) if args.snp_pathway else None
    if gene_sets is not None and not (gene_sets.genes & annotation.genes):
        raise InputError(gene_sets.path, f"no gene of this .gmt is in the annotation {annotation.path}; "
                                         "do both use the same gene IDs (symbols vs Entrez IDs)?")

    graph = graph_from_output_dir(args.pairs, annotation=annotation, gene_sets=gene_sets,
                                  snp_pathways=snp_pathways, window_kb=window)
    from gboost.outputs.outdir import OutLock, refuse_unsafe_out

    # (--out may be the scan's own folder: only the graph's files are written there, the scan's kept)
    refuse_unsafe_out(args.out)
    with OutLock(args.out):
        out = write_graph_files(graph, args.out, overwrite=args.overwrite)
    if not args.quiet:
        groups = node_groups(graph)
        known = [g for g in groups if g != UNKNOWN]
        with_genes = sum(1 for _, d in graph.nodes(data=True) if d["genes"])
        build = f", build {annotation.build}" if annotation.build else ""
        print(f"{graph.number_of_nodes()} SNPs in {graph.number_of_edges()} pairs; {with_genes} in or within "
              f"{window:g} kb of a gene ({printable(str(annotation.path))}{printable(build)}); {len(known)} pathway group(s), "
              f"{len(groups.get(UNKNOWN, []))} SNP(s) of unknown pathway", file=sys.stderr)
        for name in known[:5]:
            print(f"  {printable(name)}: {len(groups[name])} SNP(s)", file=sys.stderr)  # (names from the .gmt)
        print(f"wrote {out}/graph.graphml, nodes.tsv, edges.tsv", file=sys.stderr)
    return 0
