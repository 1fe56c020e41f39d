#!/usr/bin/env python3
"""Build the gene annotation and gene sets bundled in ``gboost/pathways/data/``.

Source: Debian's ``r-bioc-org.hs.eg.db`` (Bioconductor org.Hs.eg.db, Artistic-2.0) for gene
coordinates and GO annotations, and ``r-bioc-go.db`` (GO.db, Artistic-2.0) for GO term names. Both
ship SQLite files, read here with :mod:`sqlite3` (no R)::

    apt-get install -y r-bioc-org.hs.eg.db r-bioc-go.db
    python scripts/build_annotation.py            # rewrites gboost/pathways/data/*.gz

Outputs (gzip, byte-for-byte reproducible from the same packages):

``genes_GRCh38.bed.gz``
    Protein-coding genes on chromosomes 1-22, X, Y, MT: ``chrom start end symbol 0 strand``
    (BED6, 0-based half-open), one line per gene locus. A gene's locus is the union of its
    transcripts' spans (the package's ``chromosome_locations`` table, UCSC's gene models); a gene
    whose transcripts fall in disjoint places of one chromosome gets one line per place.
``go_bp.gmt.gz``
    GO biological-process gene sets with 10-300 genes, annotations propagated to ancestor terms
    (the package's ``go_bp_all`` table, every evidence code; protein-coding genes only, counted
    after that restriction), named by the GO term name with the
    GO ID as description; genes as symbols, sorted.

The build is checked, not assumed: the package's metadata names UCSC as the source of positions
but no genome build, so the script requires chromosome lengths of GRCh38 (chr1 = 248,956,422 bp)
in the package's ``chrlengths`` table and fails otherwise.
"""
from __future__ import annotations

import argparse
import gzip
import io
import os
import sqlite3
import sys
from collections import defaultdict

ORG_DB = "/usr/lib/R/site-library/org.Hs.eg.db/extdata/org.Hs.eg.sqlite"
GO_DB = "/usr/lib/R/site-library/GO.db/extdata/GO.sqlite"
OUT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "gboost", "pathways", "data")

PRIMARY = [str(c) for c in range(1, 23)] + ["X", "Y", "MT"]
GRCH38_CHR1 = 248_956_422
MIN_GENES, MAX_GENES = 10, 300


def _metadata(db: sqlite3.Connection) -> dict[str, str]:
    return dict(db.execute("SELECT name, value FROM metadata"))


def check_build(org: sqlite3.Connection) -> str:
    (chr1,) = org.execute("SELECT length FROM chrlengths WHERE chromosome = '1'").fetchone()
    if chr1 != GRCH38_CHR1:
        sys.exit(f"build_annotation: chr1 is {chr1} bp in {ORG_DB}; expected GRCh38's {GRCH38_CHR1}")
    return "GRCh38"


def gene_loci(org: sqlite3.Connection) -> list[tuple[str, int, int, str, str]]:
    """(chrom, start, end, symbol, strand) per locus of every located protein-coding gene."""
    coding = {i for (i,) in org.execute("SELECT _id FROM genetype WHERE gene_type = 'protein-coding'")}
    symbol = dict(org.execute("SELECT _id, symbol FROM gene_info"))
    spans: dict[tuple[int, str], list[tuple[int, int, str]]] = defaultdict(list)
    for gid, seq, start, end in org.execute("SELECT _id, seqname, start_location, end_location FROM chromosome_locations"):
        if gid in coding and seq in PRIMARY:
            # Antisense genes carry negative positions; both ends are UCSC's 0-based txStart/txEnd.
            spans[(gid, seq)].append((abs(start), abs(end), "-" if start < 0 else "+"))
    rows = []
    for (gid, seq), tx in spans.items():
        tx.sort()
        cluster = [list(tx[0])]
        for s, e, strand in tx[1:]:
            last = cluster[-1]
            if s <= last[1]:  # overlapping transcripts: one locus
                last[1] = max(last[1], e)
                last[2] = last[2] if last[2] == strand else "."
            else:
                cluster.append([s, e, strand])
        rows.extend((seq, s, e, symbol[gid], strand) for s, e, strand in cluster)
    order = {c: k for k, c in enumerate(PRIMARY)}
    rows.sort(key=lambda r: (order[r[0]], r[1], r[2], r[3]))
    return rows


def go_sets(org: sqlite3.Connection, go: sqlite3.Connection) -> list[tuple[str, str, list[str]]]:
    """(term name, GO ID, sorted symbols) of every BP term with MIN_GENES..MAX_GENES genes."""
    coding = {i for (i,) in org.execute("SELECT _id FROM genetype WHERE gene_type = 'protein-coding'")}
    symbol = dict(org.execute("SELECT _id, symbol FROM gene_info"))
    members: dict[str, set[int]] = defaultdict(set)
    for term, gid in org.execute("SELECT go_id, _id FROM go_bp_all"):
        if gid in coding:  # the genes the bundled BED can place
            members[term].add(gid)
    names = dict(go.execute("SELECT go_id, term FROM go_term WHERE ontology = 'BP'"))
    out = []
    for term in sorted(members):
        genes = members[term]
        if MIN_GENES <= len(genes) <= MAX_GENES and term in names:
            name = names[term]
            if "\t" in name or ";" in name:  # ';' joins lists in the graph files
                sys.exit(f"build_annotation: GO term {term} has a tab or ';' in its name: {name!r}")
            out.append((name, term, sorted({symbol[g] for g in genes})))
    if len({name for name, _, _ in out}) != len(out):
        sys.exit("build_annotation: two selected GO terms share a name")
    return out


def _write_gz(path: str, text: str) -> int:
    raw = io.BytesIO()
    # mtime=0 and no file name in the header: the same input gives the same bytes.
    with gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=9, mtime=0) as gz:
        gz.write(text.encode("utf-8"))
    data = raw.getvalue()
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)
    return len(data)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--org-db", default=ORG_DB)
    ap.add_argument("--go-db", default=GO_DB)
    ap.add_argument("--out", default=OUT, help="output folder (default gboost/pathways/data)")
    args = ap.parse_args(argv)
    for path in (args.org_db, args.go_db):
        if not os.path.exists(path):
            sys.exit(f"build_annotation: {path} not found (apt-get install -y r-bioc-org.hs.eg.db r-bioc-go.db)")
    org, go = sqlite3.connect(args.org_db), sqlite3.connect(args.go_db)
    meta, go_meta = _metadata(org), _metadata(go)
    build = check_build(org)
    pos_date = dict((r[0], r[3]) for r in org.execute("SELECT * FROM map_metadata"))["CHRLOC"]
    source = (f"org.Hs.eg.db (Bioconductor, Artistic-2.0): Entrez Gene {meta['EGSOURCEDATE']}, "
              f"positions UCSC {pos_date}")

    loci = gene_loci(org)
    bed = ["# gboost bundled gene annotation: protein-coding genes, one line per locus\n",
           f"# genome_build={build}\n",
           f"# source: {source}\n",
           "# columns: chrom start end symbol score strand (BED6, 0-based half-open)\n"]
    bed += [f"{c}\t{s}\t{e}\t{name}\t0\t{strand}\n" for c, s, e, name, strand in loci]
    os.makedirs(args.out, exist_ok=True)
    bed_size = _write_gz(os.path.join(args.out, f"genes_{build}.bed.gz"), "".join(bed))

    sets = go_sets(org, go)
    gmt = [f"{name}\t{term}\t" + "\t".join(genes) + "\n" for name, term, genes in sets]
    gmt_size = _write_gz(os.path.join(args.out, "go_bp.gmt.gz"), "".join(gmt))

    print(f"genes_{build}.bed.gz: {len(loci)} loci of {len({r[3] for r in loci})} genes, {bed_size} bytes")
    print(f"go_bp.gmt.gz: {len(sets)} GO BP terms ({MIN_GENES}-{MAX_GENES} genes, GO {go_meta['GOSOURCEDATE']}, "
          f"annotations {meta['GOEGSOURCEDATE']}), {sum(len(g) for _, _, g in sets)} memberships, {gmt_size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
