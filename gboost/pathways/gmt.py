"""Gene sets (``.gmt``) and direct SNP -> pathway tables.

A ``.gmt`` line is ``NAME<TAB>DESCRIPTION<TAB>GENE<TAB>GENE...`` (MSigDB, GO, Reactome and
WikiPathways exports all use it). Gene names are matched exactly (case-sensitive) against the gene
annotation's names, so both files must use the same kind of ID (symbols with symbols, Entrez IDs
with Entrez IDs).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from importlib import resources

from gboost.errors import InputError
from gboost.pathways.annotation import open_text


@dataclass
class GeneSets:
    """Named gene sets in file order: ``sets[name] = (description, genes)``."""

    sets: dict[str, tuple[str, tuple[str, ...]]]
    path: str | None = None
    _by_gene: dict[str, tuple[str, ...]] | None = field(default=None, repr=False)

    def __len__(self) -> int:
        return len(self.sets)

    def size(self, name: str) -> int:
        return len(self.sets[name][1])

    @property
    def genes(self) -> set[str]:
        return {g for _, genes in self.sets.values() for g in genes}

    def pathways_of(self, gene: str) -> tuple[str, ...]:
        """The sets containing ``gene``, in file order (empty tuple if none)."""
        if self._by_gene is None:
            by_gene: dict[str, list[str]] = {}
            for name, (_, genes) in self.sets.items():
                for g in genes:
                    by_gene.setdefault(g, []).append(name)
            self._by_gene = {g: tuple(v) for g, v in by_gene.items()}
        return self._by_gene.get(gene, ())


def read_gmt(path: str | os.PathLike) -> GeneSets:
    """Read a ``.gmt`` file (plain or gzip).

    Blank lines and ``#`` comments are skipped, empty fields (trailing tabs) ignored and repeated
    genes within a set kept once. A line with fewer than three fields, an empty name, a set without
    genes or a name used twice raises :class:`InputError` naming the line.
    """
    sets: dict[str, tuple[str, tuple[str, ...]]] = {}
    first_line: dict[str, int] = {}
    for n, line in enumerate(open_text(path), 1):
        if not line.strip() or line.startswith("#"):
            continue
        f = line.split("\t")
        if len(f) < 3:
            raise InputError(path, f"line {n}: expected NAME<TAB>DESCRIPTION<TAB>GENE... (tab-separated), "
                                   f"found {len(f)} field(s)")
        name = f[0].strip()
        genes = tuple(dict.fromkeys(g.strip() for g in f[2:] if g.strip()))
        if not name:
            raise InputError(path, f"line {n}: empty gene-set name")
        if not genes:
            raise InputError(path, f"line {n}: gene set {name!r} lists no genes")
        if name in sets:
            raise InputError(path, f"line {n}: gene set {name!r} already defined on line {first_line[name]}")
        sets[name] = (f[1].strip(), genes)
        first_line[name] = n
    if not sets:
        raise InputError(path, "no gene sets found")
    return GeneSets(sets, os.fspath(path))


def bundled_gmt_path() -> str:
    """The gene sets shipped with gboost (GO biological process, 10-300 genes; see data/README.md)."""
    return str(resources.files("gboost.pathways") / "data" / "go_bp.gmt.gz")


def bundled_gene_sets() -> GeneSets:
    return read_gmt(bundled_gmt_path())


def read_snp_pathways(path: str | os.PathLike) -> dict[str, tuple[str, ...]]:
    """Read a direct SNP -> pathway table: two columns, ``SNP PATHWAY``.

    Columns are tab-separated (pathway names may then contain spaces), or whitespace-separated
    when a line has no tab. A SNP in several pathways has several lines. A first line
    ``SNP<sep>PATHWAY`` (any case) is a header; blank lines and ``#`` comments are skipped.
    Returns ``{snp: pathways in file order}``.
    """
    out: dict[str, list[str]] = {}
    seen_data = False
    for n, line in enumerate(open_text(path), 1):
        if not line.strip() or line.startswith("#"):
            continue
        f = [x.strip() for x in (line.split("\t") if "\t" in line else line.split(None, 1))]
        f = [x for x in f if x]
        if len(f) != 2:
            raise InputError(path, f"line {n}: expected 2 columns, SNP and PATHWAY, found {len(f)}")
        snp, pathway = f
        if not seen_data and snp.upper() == "SNP" and pathway.upper() == "PATHWAY":
            seen_data = True
            continue
        seen_data = True
        pathways = out.setdefault(snp, [])
        if pathway not in pathways:
            pathways.append(pathway)
    if not out:
        raise InputError(path, "no SNP -> pathway rows found")
    return {snp: tuple(p) for snp, p in out.items()}
