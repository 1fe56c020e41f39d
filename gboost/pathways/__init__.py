"""SNP -> gene -> pathway, and the interaction graph of reported pairs (docs/DESIGN.md §3.7, GBOOST §4.1).

No Qt and no network: annotations are read from files (a BED or GTF gene annotation and ``.gmt``
gene sets, or the GRCh38 files bundled in ``data/``), the graph is a :mod:`networkx` graph.

Typical use::

    from gboost.pathways import bundled_annotation, bundled_gene_sets, graph_from_output_dir
    g = graph_from_output_dir("results/sample", annotation=bundled_annotation(),
                              gene_sets=bundled_gene_sets(), window_kb=10)
    pos = group_circle_layout(g)
"""
from gboost.pathways.annotation import (
    BUNDLED_BUILD,
    DEFAULT_WINDOW_KB,
    GeneAnnotation,
    SnpGeneMap,
    bundled_annotation,
    bundled_annotation_path,
    map_snps_to_genes,
    read_annotation,
    read_bed,
    read_gtf,
)
from gboost.pathways.gmt import GeneSets, bundled_gene_sets, bundled_gmt_path, read_gmt, read_snp_pathways
from gboost.pathways.graph import (
    UNKNOWN,
    annotate_snps,
    build_graph,
    graph_from_output_dir,
    graph_from_result,
    group_circle_layout,
    node_groups,
    primary_groups,
    split_list,
    write_graph_files,
    write_graphml,
)

__all__ = [
    "BUNDLED_BUILD", "DEFAULT_WINDOW_KB", "GeneAnnotation", "SnpGeneMap", "bundled_annotation",
    "bundled_annotation_path", "map_snps_to_genes", "read_annotation", "read_bed", "read_gtf",
    "GeneSets", "bundled_gene_sets", "bundled_gmt_path", "read_gmt", "read_snp_pathways",
    "UNKNOWN", "annotate_snps", "build_graph", "graph_from_output_dir", "graph_from_result",
    "group_circle_layout", "node_groups", "primary_groups", "split_list", "write_graph_files",
    "write_graphml",
]
