"""SNP -> gene -> pathway and the interaction graph (gboost.pathways, `gboost pathways`)."""
from __future__ import annotations

import gzip
import math
import os
import subprocess
import sys

import numpy as np
import pytest

nx = pytest.importorskip("networkx")

from gboost.cli import main  # noqa: E402
from gboost.errors import InputError  # noqa: E402
from gboost.readers.plink_bed import open_bfile  # noqa: E402
from gboost.pathways import (  # noqa: E402
    UNKNOWN,
    build_graph,
    bundled_annotation,
    bundled_gene_sets,
    graph_from_output_dir,
    graph_from_result,
    group_circle_layout,
    map_snps_to_genes,
    node_groups,
    read_annotation,
    read_gmt,
    read_snp_pathways,
    split_list,
    write_graph_files,
    write_graphml,
)
from gboost.pathways.annotation import GeneAnnotation  # noqa: E402

from tests.helpers import ROOT

# Hand-made genes, 0-based half-open: A covers 1-based positions 5001..6000, B 5501..9000
# (overlapping A), C 20001..20100 on chr1; D on chrX.
GENES = [("chr1", 5000, 6000, "A"), ("chr1", 5500, 9000, "B"), ("chr1", 20000, 20100, "C"), ("chrX", 100, 200, "D")]


def write_bed(path, genes=GENES, header="# genome_build=GRCh38\n"):
    path.write_text(header + "track name=test\n" + "".join(f"{c}\t{s}\t{e}\t{n}\t0\t+\n" for c, s, e, n in genes))
    return path


def write_gtf(path, genes=GENES):
    lines = ["#!genome-build GRCh38.p14\n"]
    for c, s, e, n in genes:  # GTF: 1-based closed; a transcript line that must be skipped
        lines.append(f'{c}\ttest\tgene\t{s + 1}\t{e}\t.\t+\t.\tgene_id "ID{n}"; gene_name "{n}";\n')
        lines.append(f'{c}\ttest\ttranscript\t{s + 1}\t{e + 50000}\t.\t+\t.\tgene_id "ID{n}"; gene_name "{n}";\n')
    path.write_text("".join(lines))
    return path


def genes_of(chrom, bp, annotation, window_kb):
    return map_snps_to_genes(chrom, bp, annotation, window_kb).genes_per_snp()


# --- annotation -----------------------------------------------------------------------------------


def test_window_edges_are_inclusive_on_both_sides(tmp_path):
    ann = read_annotation(write_bed(tmp_path / "g.bed"))
    # Gene C covers 20001..20100; with 1 kb: 19001..21100.
    bp = [20000, 20001, 20100, 20101, 19000, 19001, 21100, 21101]
    got = genes_of(["1"] * len(bp), bp, ann, 0) + genes_of(["1"] * len(bp), bp, ann, 1)
    assert got[:8] == [(), ("C",), ("C",), (), (), (), (), ()]
    assert got[8:] == [("C",), ("C",), ("C",), ("C",), (), ("C",), ("C",), ()]


def test_overlapping_genes_both_map_in_position_order_and_intergenic_snps_map_to_none(tmp_path):
    ann = read_annotation(write_bed(tmp_path / "g.bed"))
    got = genes_of(["1", "1", "1", "1", "2", "1"], [5600, 5400, 7000, 15000, 5600, 5000], ann, 0)
    assert got == [("A", "B"), ("A",), ("B",), (), (), ()]


def test_chromosome_names_are_normalised_like_plink(tmp_path):
    ann = read_annotation(write_bed(tmp_path / "g.bed"))
    assert set(ann.chrom) == {"1", "23"}
    assert genes_of(["X", "23", "chrX", "chr1", "01"], [150, 150, 150, 5600, 5600], ann, 0) == [
        ("D",), ("D",), ("D",), ("A", "B"), ("A", "B")]


def test_bed_and_gtf_give_the_same_genes_coordinates_and_build(tmp_path):
    bed = read_annotation(write_bed(tmp_path / "g.bed"))
    gtf = read_annotation(write_gtf(tmp_path / "g.gtf"))
    for field in ("chrom", "start", "end", "name"):
        assert getattr(bed, field).tolist() == getattr(gtf, field).tolist()
    assert bed.build == "GRCh38" and gtf.build == "GRCh38.p14"
    rng = np.random.default_rng(1)
    bp = rng.integers(1, 30000, 500)
    for w in (0, 2.5):
        assert genes_of(["1"] * 500, bp, bed, w) == genes_of(["1"] * 500, bp, gtf, w)


def test_gzipped_annotation_reads_like_the_plain_file(tmp_path):
    plain = write_bed(tmp_path / "g.bed")
    with gzip.open(tmp_path / "g.bed.gz", "wt") as f:
        f.write(plain.read_text())
    assert read_annotation(tmp_path / "g.bed.gz").name.tolist() == read_annotation(plain).name.tolist()


@pytest.mark.parametrize("line, message", [
    ("1\t100\n", "line 3: expected chrom, start, end and gene name"),
    ("1\tx\t200\tG\n", "line 3: start and end must be integers"),
    ("1\t300\t200\tG\n", "line 3: expected 0 <= start < end"),
])
def test_bad_bed_lines_raise_input_error_naming_the_line(tmp_path, line, message):
    path = tmp_path / "bad.bed"
    path.write_text("# genome_build=GRCh38\n1\t1\t2\tOK\n" + line)
    with pytest.raises(InputError, match=message) as err:
        read_annotation(path)
    assert str(path) in str(err.value)


def test_mapping_equals_a_brute_force_check_with_genes_of_very_different_lengths():
    rng = np.random.default_rng(7)
    n_genes = 400
    chrom = rng.choice(["1", "2", "3"], n_genes)
    start = rng.integers(0, 3_000_000, n_genes)
    length = np.where(rng.random(n_genes) < 0.05, rng.integers(500_000, 2_000_000, n_genes), rng.integers(1, 50_000, n_genes))
    ann = GeneAnnotation(chrom.astype(object), start, start + length, np.array([f"g{k}" for k in range(n_genes)], dtype=object))
    snp_chrom = rng.choice(["1", "2", "3", "4"], 3000)
    bp = rng.integers(1, 5_000_000, 3000)
    for w in (0, 10, 123.4):
        m = map_snps_to_genes(snp_chrom, bp, ann, w, chunk=997)  # small chunks: exercises the batching
        got = set(zip(m.snp.tolist(), m.gene.tolist()))
        wb = round(w * 1000)
        hit = (snp_chrom[:, None] == chrom[None, :]) & (start[None, :] - wb < bp[:, None]) & (bp[:, None] <= (start + length)[None, :] + wb)
        assert got == set(zip(*np.nonzero(hit)))
        assert (np.diff(m.snp) >= 0).all()


def test_negative_window_is_refused(tmp_path):
    with pytest.raises(ValueError, match="window_kb"):
        map_snps_to_genes(["1"], [1], read_annotation(write_bed(tmp_path / "g.bed")), -1)


# --- gene sets ------------------------------------------------------------------------------------


def test_gmt_is_parsed_with_trailing_tabs_comments_and_repeated_genes(tmp_path):
    path = tmp_path / "s.gmt"
    path.write_text("# comment\nP1\tfirst\tA\tB\tA\t\t\n\nP2\tsecond\tB\tC\n")
    sets = read_gmt(path)
    assert sets.sets == {"P1": ("first", ("A", "B")), "P2": ("second", ("B", "C"))}
    assert sets.pathways_of("B") == ("P1", "P2") and sets.pathways_of("Z") == ()
    assert sets.size("P1") == 2 and sets.genes == {"A", "B", "C"}


@pytest.mark.parametrize("bad, message", [
    ("P3 A B C", "line 3: expected NAME<TAB>DESCRIPTION<TAB>GENE"),
    ("P3\tonly description", "line 3: expected NAME<TAB>DESCRIPTION<TAB>GENE"),
    ("\tdesc\tA", "line 3: empty gene-set name"),
    ("P3\tdesc\t\t", "line 3: gene set 'P3' lists no genes"),
    ("P1\tagain\tA", "line 3: gene set 'P1' already defined on line 1"),
])
def test_malformed_gmt_lines_raise_input_error_naming_file_and_line(tmp_path, bad, message):
    path = tmp_path / "bad.gmt"
    path.write_text(f"P1\td\tA\tB\nP2\td\tC\n{bad}\n")
    with pytest.raises(InputError, match=message) as err:
        read_gmt(path)
    assert err.value.path == str(path)


def test_snp_pathway_table_reads_headers_tabs_and_repeated_snps(tmp_path):
    path = tmp_path / "sp.tsv"
    path.write_text("SNP\tPATHWAY\nrs1\tinsulin signalling\nrs2 wnt\nrs1\tglycolysis\nrs1\tglycolysis\n")
    assert read_snp_pathways(path) == {"rs1": ("insulin signalling", "glycolysis"), "rs2": ("wnt",)}
    path.write_text("rs1\tP\nrs2\n")
    with pytest.raises(InputError, match="line 2: expected 2 columns"):
        read_snp_pathways(path)


# --- graph ----------------------------------------------------------------------------------------

# A small result: 8 SNPs, 5 reported pairs. Genes (window 0): s0 in A; s1 in B; s2 in C; s3 in A and
# B (overlap); s4 in D; s5 and s6 in no gene; s7 not in any pair.
SNPS = {
    "snp": np.array([f"s{k}" for k in range(8)], dtype=object),
    "chrom": np.array(["1", "1", "1", "1", "X", "2", "2", "1"], dtype=object),
    "bp": np.array([5200, 8000, 20050, 5600, 150, 100, 200, 5300]),
    "marginal_stat": np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]),
    "marginal_p": np.array([0.5, 0.1, 1e-3, 1.0, 1e-320, 0.2, 0.3, 0.4]),
}
PAIRS = {"i": np.array([0, 0, 2, 4, 5]), "j": np.array([1, 2, 6, 5, 6]),
         "stat": np.array([40.0, 35.0, 33.0, 31.0, 30.0]), "df": np.array([4, 4, 4, 2, 4]),
         "p": np.array([1e-8, 1e-7, 2e-7, 3e-7, 4e-7]), "ksa": np.array([41.0, 36.0, 34.0, 31.5, 30.5])}
# Gene sets: A and B share P_small (2 genes) and P_big (3 genes); C is only in P_big; D in P_d.
GMT = "P_big\tbig\tA\tB\tC\nP_small\tsmall\tA\tB\nP_d\td\tD\n"


@pytest.fixture
def sources(tmp_path):
    gmt = tmp_path / "s.gmt"
    gmt.write_text(GMT)
    return {"annotation": read_annotation(write_bed(tmp_path / "g.bed")), "gene_sets": read_gmt(gmt), "window_kb": 0}


def test_graph_nodes_edges_and_attributes_are_those_of_the_pairs(sources):
    g = build_graph(PAIRS, SNPS, **sources)
    assert sorted(g.nodes) == ["s0", "s1", "s2", "s4", "s5", "s6"]  # s3 and s7 are in no pair
    assert {frozenset(e) for e in g.edges} == {frozenset(p) for p in [("s0", "s1"), ("s0", "s2"), ("s2", "s6"),
                                                                       ("s4", "s5"), ("s5", "s6")]}
    assert g.edges["s0", "s1"] == {"stat": 40.0, "df": 4, "p": 1e-8, "ksa": 41.0}
    assert g.edges["s4", "s5"]["df"] == 2
    s0 = g.nodes["s0"]
    assert (s0["snp"], s0["chrom"], s0["bp"], s0["index"], s0["genes"]) == ("s0", "1", 5200, 0, "A")
    assert split_list(s0["pathways"]) == ["P_big", "P_small"] and s0["n_pathways"] == 2
    assert s0["score"] == pytest.approx(-math.log10(0.5)) and s0["marginal_stat"] == 1.0
    assert g.nodes["s4"]["score"] == 300.0  # P below 1e-300 is floored
    assert g.nodes["s5"]["genes"] == "" and split_list(g.nodes["s5"]["pathways"]) == []
    assert g.graph["genome_build"] == "GRCh38" and g.graph["window_kb"] == 0.0


def test_groups_prefer_pathways_shared_with_partners_then_the_most_snps_then_the_smaller_set(sources):
    g = build_graph(PAIRS, SNPS, **sources)
    group = dict(g.nodes(data="group"))
    # s0 (A) shares P_big and P_small with s1 (B) and P_big with s2 (C): P_big, 2 partners.
    # s1 shares P_big and P_small with s0 alone: the tie goes to the smaller set, P_small.
    # s2 shares P_big with s0. s4 (D) shares nothing with s5: its only pathway, P_d.
    assert group == {"s0": "P_big", "s1": "P_small", "s2": "P_big", "s4": "P_d", "s5": UNKNOWN, "s6": UNKNOWN}
    assert node_groups(g) == {"P_big": ["s0", "s2"], "P_d": ["s4"], "P_small": ["s1"], UNKNOWN: ["s5", "s6"]}


def test_without_partners_in_common_the_pathway_with_most_graph_snps_wins(tmp_path, sources):
    pairs = {k: v[:1] for k, v in PAIRS.items()}  # s0 x s1 only
    gmt = tmp_path / "t.gmt"
    gmt.write_text("P_a\t\tA\tX\tY\nP_b\t\tB\nP_ab\t\tA\tB\tZ\tW\n")
    sources = dict(sources, gene_sets=read_gmt(gmt))
    assert dict(build_graph(pairs, SNPS, **sources).nodes(data="group")) == {"s0": "P_ab", "s1": "P_ab"}
    gmt.write_text("P_a\t\tA\tX\tY\nP_b\t\tB\tX\nP_c\t\tA\tX\n")  # nothing shared: most SNPs (1 each), smaller set
    sources = dict(sources, gene_sets=read_gmt(gmt))
    assert dict(build_graph(pairs, SNPS, **sources).nodes(data="group")) == {"s0": "P_c", "s1": "P_b"}


def test_a_direct_snp_pathway_table_adds_to_the_gene_sets(tmp_path, sources):
    table = tmp_path / "sp.tsv"
    table.write_text("s5\tP_direct\ns6\tP_direct\ns0\tP_direct\n")
    g = build_graph(PAIRS, SNPS, **sources, snp_pathways=read_snp_pathways(table))
    assert split_list(g.nodes["s0"]["pathways"]) == ["P_big", "P_small", "P_direct"]
    assert g.nodes["s5"]["group"] == g.nodes["s6"]["group"] == "P_direct"
    only = build_graph(PAIRS, SNPS, snp_pathways=read_snp_pathways(table))
    assert only.nodes["s1"]["group"] == UNKNOWN and only.nodes["s0"]["group"] == "P_direct"


def test_graphml_round_trip_keeps_every_node_and_edge_attribute(sources, tmp_path):
    g = build_graph(PAIRS, SNPS, **sources)
    write_graphml(g, tmp_path / "g.graphml")
    back = nx.read_graphml(tmp_path / "g.graphml")
    assert dict(back.nodes(data=True)) == dict(g.nodes(data=True))
    assert {frozenset((a, b)): d for a, b, d in back.edges(data=True)} == {frozenset((a, b)): d for a, b, d in g.edges(data=True)}
    assert {k: v for k, v in back.graph.items() if k not in ("node_default", "edge_default")} == g.graph


def test_graph_files_are_written_together_and_not_over_other_files(sources, tmp_path):
    g = build_graph(PAIRS, SNPS, **sources)
    out = write_graph_files(g, tmp_path / "out")
    assert sorted(os.listdir(out)) == ["edges.tsv", "graph.graphml", "nodes.tsv"]
    nodes = [line.split("\t") for line in (out / "nodes.tsv").read_text().splitlines()]
    assert nodes[0][:5] == ["SNP", "CHR", "BP", "INDEX", "GROUP"] and nodes[0][-1] == "DEGREE"
    assert [r[0] for r in nodes[1:]] == ["s0", "s2", "s4", "s1", "s5", "s6"]  # node_groups order
    assert nodes[1][nodes[0].index("DEGREE")] == "2"
    edges = [line.split("\t") for line in (out / "edges.tsv").read_text().splitlines()]
    assert edges[0] == ["SNP1", "CHR1", "BP1", "GROUP1", "SNP2", "CHR2", "BP2", "GROUP2", "STAT", "DF", "P", "KSA"]
    assert [(r[0], r[4], r[8]) for r in edges[1:3]] == [("s0", "s1", "40"), ("s0", "s2", "35")]
    with pytest.raises(InputError, match="--overwrite"):
        write_graph_files(g, out)
    write_graph_files(g, out, overwrite=True)
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".out")]  # no staging left behind


def test_layout_puts_each_group_on_its_own_circle_deterministically(sources):
    g = build_graph(PAIRS, SNPS, **sources)
    groups = node_groups(g)
    pos = group_circle_layout(g, groups, spacing=1.0, gap=1.0)
    assert pos == group_circle_layout(g, groups, spacing=1.0, gap=1.0) and set(pos) == set(g.nodes)
    centre, radius = {}, {}
    for name, members in groups.items():
        pts = np.array([pos[n] for n in members])
        centre[name] = pts.mean(axis=0)
        dist = np.linalg.norm(pts - centre[name], axis=1)
        assert np.allclose(dist, dist[0])  # on one circle
        radius[name] = max(dist[0], 0.5)
    names = list(groups)
    for a in range(len(names)):
        for b in range(a + 1, len(names)):
            gap = np.linalg.norm(centre[names[a]] - centre[names[b]]) - radius[names[a]] - radius[names[b]]
            assert gap >= 1.0 - 1e-9  # circles never overlap
    assert pos["s0"][1] > 0 and abs(pos["s0"][0]) < 1e-9 + radius["P_big"]  # first group at the top
    one = group_circle_layout(g, {"all": list(g.nodes)})
    assert np.allclose(np.mean(list(one.values()), axis=0), 0.0)


def test_layout_keeps_a_large_and_many_small_groups_apart():
    g = nx.Graph()
    g.add_nodes_from(range(600))
    groups = {"big": list(range(500)), **{f"g{k}": [500 + 2 * k, 501 + 2 * k] for k in range(50)}}
    pos = group_circle_layout(g, groups, spacing=0.5, gap=0.3)
    centres = {k: np.mean([pos[n] for n in v], axis=0) for k, v in groups.items()}
    radii = {k: max(np.linalg.norm(np.array(pos[v[0]]) - centres[k]), 0.25) for k, v in groups.items()}
    keys = list(groups)
    for a in range(len(keys)):
        for b in range(a + 1, len(keys)):
            d = np.linalg.norm(centres[keys[a]] - centres[keys[b]])
            assert d >= radii[keys[a]] + radii[keys[b]] + 0.3 - 1e-9


# --- from a real scan, and the CLI ----------------------------------------------------------------


@pytest.fixture(scope="module")
def scanned(tmp_path_factory):
    """A small simulated study on gene coordinates, scanned with the CPU engine."""
    from gboost.pipeline.scan import ScanParams, run_scan
    from gboost.data.simulate import PlantedPair, simulate_study
    from gboost.outputs.results import write_outputs
    from gboost.data.load import load_study

    ann = bundled_annotation()
    chr1 = np.flatnonzero(ann.chrom == "1")[:60]
    bp = np.sort(np.unique(ann.start[chr1] + 1))[:60]
    sim = simulate_study(len(bp), 200, 200, seed=11, positions=(["1"] * len(bp), bp),
                         planted=[PlantedPair(3, 40, "threshold", 10.0, 0.3, 0.3)])
    study = load_study(sim.source())
    result = run_scan(study, ScanParams(epi1=1e-3, device="cpu"))
    out = tmp_path_factory.mktemp("scan") / "res"
    write_outputs(result, out)
    prefix = str(out.parent / "study")
    sim.write(prefix)
    return result, out


def test_graph_from_a_result_equals_the_graph_from_its_output_files(scanned):
    result, out = scanned
    kw = {"annotation": bundled_annotation(), "gene_sets": bundled_gene_sets()}
    a, b = graph_from_result(result, **kw), graph_from_output_dir(out, **kw)
    assert len(result.reported) >= 1 and a.number_of_edges() == len(result.reported)
    assert set(a.nodes) == set(b.nodes) and set(map(frozenset, a.edges)) == set(map(frozenset, b.edges))
    for n in a.nodes:
        da, db = a.nodes[n], b.nodes[n]
        assert {k: da[k] for k in ("chrom", "bp", "index", "genes", "pathways", "group")} == \
               {k: db[k] for k in ("chrom", "bp", "index", "genes", "pathways", "group")}
        assert da["marginal_p"] == pytest.approx(db["marginal_p"], rel=1e-5)
    for u, v, d in a.edges(data=True):
        assert d["stat"] == pytest.approx(b.edges[u, v]["stat"], rel=1e-9) and d["df"] == b.edges[u, v]["df"]
    assert any(d["genes"] for _, d in a.nodes(data=True))  # SNPs were placed at gene starts


def test_cli_writes_the_three_files_with_the_bundled_annotation(scanned, tmp_path, capsys):
    _, out = scanned
    assert main(["pathways", "--pairs", str(out), "--out", str(tmp_path / "g")]) == 0
    assert sorted(os.listdir(tmp_path / "g")) == ["edges.tsv", "graph.graphml", "nodes.tsv"]
    g = nx.read_graphml(tmp_path / "g" / "graph.graphml")
    assert g.graph["genome_build"] == "GRCh38" and g.graph["window_kb"] == 10.0
    assert "wrote" in capsys.readouterr().err


def test_cli_with_user_files_and_window(scanned, tmp_path):
    _, out = scanned
    bed = write_bed(tmp_path / "g.bed", [("1", 0, 300_000_000, "EVERYTHING")])
    gmt = tmp_path / "s.gmt"
    gmt.write_text("ALL\tall\tEVERYTHING\n")
    assert main(["pathways", "--pairs", str(out), "--annotation", str(bed), "--gmt", str(gmt), "--window-kb", "0",
                 "--out", str(tmp_path / "g"), "--quiet"]) == 0
    g = nx.read_graphml(tmp_path / "g" / "graph.graphml")
    assert {d["group"] for _, d in g.nodes(data=True)} == {"ALL"}


def test_cli_exits_2_on_a_bad_gmt_naming_the_line_and_writes_nothing(scanned, tmp_path):
    _, out = scanned
    gmt = tmp_path / "bad.gmt"
    gmt.write_text("OK\td\tA\nBROKEN LINE WITHOUT TABS\n")
    r = subprocess.run([sys.executable, "-m", "gboost.cli", "pathways", "--pairs", str(out), "--gmt", str(gmt),
                        "--out", str(tmp_path / "g")], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2, r.stderr
    assert f"{gmt}: line 2: expected NAME<TAB>DESCRIPTION<TAB>GENE" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "g").exists()


def write_scan_dir(d, pairs_rows, header="CHR1\tSNP1\tBP1\tCHR2\tSNP2\tBP2\tKSA\tSTAT\tDF\tP"):
    d.mkdir()
    (d / "marginal.tsv").write_text("CHR\tSNP\tBP\tA1\tA2\tMAF\tSTAT\tP\n1\ta\t5200\tA\tC\t0.1\t2.5\t0.3\n"
                                    "1\tb\t8000\tA\tC\t0.2\tNA\tNA\n")
    (d / "pairs.tsv").write_text(header + "\n" + "".join(r + "\n" for r in pairs_rows))
    return d


def test_output_dir_reading_checks_columns_and_snps_and_accepts_extra_columns(tmp_path):
    ok = write_scan_dir(tmp_path / "ok", ["1\ta\t5200\t1\tb\t8000\t31\t30.5\t4\t1e-6\t0.01"],
                        header="CHR1\tSNP1\tBP1\tCHR2\tSNP2\tBP2\tKSA\tSTAT\tDF\tP\tQ")
    g = graph_from_output_dir(ok)
    assert g.edges["a", "b"] == {"stat": 30.5, "df": 4, "p": 1e-6, "ksa": 31.0}
    assert g.nodes["b"]["index"] == 1 and math.isnan(g.nodes["b"]["marginal_p"]) and g.nodes["b"]["group"] == UNKNOWN
    bad = write_scan_dir(tmp_path / "bad", ["1\ta\t5200\t1\tzz\t8000\t31\t30.5\t4\t1e-6"])
    with pytest.raises(InputError, match="line 2: SNP 'zz' is not in marginal.tsv"):
        graph_from_output_dir(bad)
    cols = write_scan_dir(tmp_path / "cols", [], header="SNP1\tSNP2\tP")
    with pytest.raises(InputError, match="missing KSA STAT DF"):
        graph_from_output_dir(cols)
    (bad / "marginal.tsv").unlink()
    with pytest.raises(InputError, match="marginal.tsv: not found"):
        graph_from_output_dir(bad)


def test_cli_writes_an_empty_graph_when_no_pair_was_reported(tmp_path):
    empty = write_scan_dir(tmp_path / "empty", [])
    assert main(["pathways", "--pairs", str(empty), "--out", str(tmp_path / "g"), "--quiet"]) == 0
    g = nx.read_graphml(tmp_path / "g" / "graph.graphml")
    assert g.number_of_nodes() == 0
    assert (tmp_path / "g" / "nodes.tsv").read_text().count("\n") == 1


@pytest.mark.parametrize("args, message", [
    (["--pairs", "missing_dir"], "not a directory"),
    (["--build", "GRCh37"], "genes are on build GRCh38, the SNPs on GRCh37"),
])
def test_cli_refuses_bad_requests_with_exit_2(scanned, tmp_path, capsys, args, message):
    _, out = scanned
    argv = ["pathways", "--pairs", str(out), "--out", str(tmp_path / "g"), *args]
    if args[0] == "--pairs":
        argv = ["pathways", *args, "--out", str(tmp_path / "g")]
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_cli_refuses_a_gmt_sharing_no_gene_with_the_annotation(scanned, tmp_path, capsys):
    _, out = scanned
    gmt = tmp_path / "entrez.gmt"
    gmt.write_text("P\td\t348\t5443\n")  # Entrez IDs against a symbol annotation
    assert main(["pathways", "--pairs", str(out), "--gmt", str(gmt), "--out", str(tmp_path / "g")]) == 2
    assert "same gene IDs" in capsys.readouterr().err


# --- bundled files and the sample study -----------------------------------------------------------


def test_bundled_files_load_and_are_grch38():
    ann, sets = bundled_annotation(), bundled_gene_sets()
    assert ann.build == "GRCh38" and len(ann.genes) > 19000
    for gene, locus in (("OR4F5", ("1", 69090, 70008)), ("APOE", ("19", 44905795, 44909395))):
        k = int(np.flatnonzero(ann.name == gene)[0])  # NCBI Gene, GRCh38: 1:69,091-70,008; 19:44,905,796-...
        assert (ann.chrom[k], int(ann.start[k]), int(ann.end[k])) == locus
    assert 5000 < len(sets) < 8000 and all(10 <= sets.size(n) <= 300 for n in sets.sets)
    assert "insulin-like growth factor receptor signaling pathway" in sets.pathways_of("IRS1")
    assert len(sets.genes & ann.genes) / len(sets.genes) > 0.99
    size = sum(os.path.getsize(os.path.join(ROOT, "gboost", "pathways", "data", f)) for f in os.listdir(
        os.path.join(ROOT, "gboost", "pathways", "data")))
    assert size < 3_000_000


# make_sample.sh's planted pairs: (SNP, gene), (SNP, gene), pathway both genes share.
SAMPLE_PLANTED = [
    (("snp1706", "DRD3"), ("snp2962", "DRD1"), "adenylate cyclase-activating dopamine receptor signaling pathway"),
    (("snp1332", "IRS1"), ("snp2625", "PIK3R1"), "insulin-like growth factor receptor signaling pathway"),
    (("snp208", "PCSK9"), ("snp758", "APOB"), "low-density lipoprotein particle clearance"),
]


def test_the_sample_studys_planted_snps_lie_in_the_named_genes_and_group_by_the_named_pathways():
    v = open_bfile(os.path.join(ROOT, "sample_data", "sample")).variants
    ann, sets = bundled_annotation(), bundled_gene_sets()
    row = {s: k for k, s in enumerate(v.snp)}
    planted = [(row[a], row[b]) for (a, _), (b, _), _ in SAMPLE_PLANTED]
    genes = map_snps_to_genes(v.chrom, v.bp, ann, 10).genes_per_snp()
    for ((a, gene_a), (b, gene_b), pathway), (i, j) in zip(SAMPLE_PLANTED, planted):
        assert genes[i] == (gene_a,) and genes[j] == (gene_b,)
        assert pathway in sets.pathways_of(gene_a) and pathway in sets.pathways_of(gene_b)
    pairs = {"i": np.array([i for i, _ in planted]), "j": np.array([j for _, j in planted]),
             "stat": np.array([80.0, 78.0, 55.0]), "df": np.array([4, 4, 4]), "p": np.array([1e-16, 1e-16, 1e-11]),
             "ksa": np.array([80.0, 78.0, 55.0])}
    snps = {"snp": v.snp, "chrom": v.chrom, "bp": v.bp, "marginal_stat": np.zeros(len(v)), "marginal_p": np.ones(len(v))}
    g = build_graph(pairs, snps, annotation=ann, gene_sets=sets)
    assert {name: sorted(m) for name, m in node_groups(g).items()} == {
        pathway: sorted([a, b]) for (a, _), (b, _), pathway in SAMPLE_PLANTED}


def test_the_pathways_package_and_command_import_no_qt():
    code = ("import sys, gboost.pathways, gboost.cli.pathways; "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('PySide6', 'pyqtgraph', 'cupy')]; "
            "sys.exit(1 if bad else 0)")
    assert subprocess.run([sys.executable, "-c", code], cwd=ROOT).returncode == 0
