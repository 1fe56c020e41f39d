"""Candidate-set scans: PLINK's ``--set`` / ``--make-set`` files and the rectangle of pairs that
``--fast-epistasis boost set-by-all`` / ``set-by-set`` test (docs/DESIGN.md §2, "Candidate sets").

plink1.9's rules, read in its source (1.9/plink_set.c: define_sets, load_range_list; 1.9/plink_ld.c:
epistasis_report, fast_epi_thread) and checked against plink1.9 itself
(tests/parity/test_plink_sets.py):

- A ``--set`` file is whitespace-separated tokens: a set's name, its SNP IDs, ``END``; sets in file
  order. IDs not in the .bim are ignored without a word; a stray ``END`` or a last set without one
  is an error. A ``--make-set`` file has lines ``CHR START END NAME`` (bp, both ends inclusive);
  lines of one name form one set; sets in PLINK's natural order of their names.
- ``set-by-all`` needs exactly one set: each of its SNPs (rows) against every SNP of the scan
  (columns). ``set-by-set`` takes one or two sets: with one, every pair within it (the usual
  triangle of those SNPs); with two, each SNP of the first against each of the second.
- A rectangle is not a triangle: a pair of two SNPs that are both rows and both columns is tested
  twice, once for each as SNP1 (its .epi.cc row and its own orientation of the table); a SNP is
  never paired with itself. The summary has one row per row SNP, counting only its own row's
  tests, and its best partner is the first column of the largest value (the first column SNP
  where none is above 0).
- The sets are taken after QC: SNPs that QC or the scan's skips removed are not in them, and a set
  left with none is an error (plink1.9's "Each --fast-epistasis set must contain at least one ...").

A rectangle is scanned as the tiles of an ordinary scan of a *rectangle study*
(:func:`rectangle_study`): the row SNPs' records first, then the column SNPs', so that every pair
(row, column) is a pair i < j of that study with the row SNP as SNP1, and a column block's partners
come in file order: PLINK's orientation and PLINK's order of partners, on every engine, with
nothing new for an engine to honour. The tiles leave out each row's own column
(:func:`gboost.pipeline.tiles.plan_rect_tiles`), and only the row SNPs' summary is written.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass

import numpy as np

from gboost.errors import InputError
from gboost.readers.plink_format import chrom_number

MODES = ("set-by-all", "set-by-set")


@dataclass(frozen=True)
class CandidateSets:
    """The sets a file defines, in PLINK's order: (name, members), members as SNP IDs (a --set
    file) or as (chromosome, first bp, last bp) ranges (a --make-set file)."""

    path: str
    kind: str  # "set" or "make-set"
    sets: tuple

    def __len__(self) -> int:
        return len(self.sets)

    @property
    def names(self) -> list[str]:
        return [name for name, _ in self.sets]


def _read_text(path) -> str:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise InputError(path, f"cannot read the set file: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(path, "is not a text file (not UTF-8)") from None


def read_set_file(path: str | os.PathLike) -> CandidateSets:
    """A PLINK ``--set`` file: tokens NAME ID... END, repeated (sets in file order)."""
    path = os.fspath(path)
    sets: list = []
    name, members = None, []
    for tok in _read_text(path).split():
        if tok == "END":
            if name is None:
                raise InputError(path, "an 'END' with no set open (PLINK: \"Extra 'END' token in --set file\")")
            sets.append((name, tuple(members)))
            name, members = None, []
        elif name is None:
            name = tok
        else:
            members.append(tok)
    if name is not None:
        raise InputError(path, f"set {name!r} has no 'END' (PLINK: \"Last token in --set file isn't 'END'\")")
    if not sets:
        raise InputError(path, "defines no set (expected a set's name, its SNP IDs, then END)")
    return CandidateSets(path, "set", tuple(sets))


def natural_key(name: str) -> tuple:
    """PLINK's natural order of names (strcmp_natural): runs of digits compare as numbers."""
    return tuple((0, int(part), part) if part.isdigit() else (1, 0, part) for part in re.findall(r"\d+|\D+", name))


def read_make_set(path: str | os.PathLike) -> CandidateSets:
    """A PLINK ``--make-set`` file: lines CHR START END NAME (bp, inclusive), one set per NAME, the sets
    in PLINK's natural order of their names."""
    path = os.fspath(path)
    by_name: dict = {}
    for n, line in enumerate(_read_text(path).splitlines(), 1):
        tok = line.split()
        if not tok:
            continue
        if len(tok) < 4:
            raise InputError(path, f"line {n}: expected CHR START END NAME, found {len(tok)} column"
                                   f"{'' if len(tok) == 1 else 's'}")
        chrom, start, end, name = tok[:4]
        try:
            lo, hi = int(start), int(end)
        except ValueError:
            bad = "start" if not start.lstrip("+").isdigit() else "end"
            raise InputError(path, f"line {n}: invalid range {bad} position "
                                   f"{start if bad == 'start' else end!r}") from None
        if lo < 0 or hi < 0:
            raise InputError(path, f"line {n}: invalid range {'start' if lo < 0 else 'end'} position")
        if hi < lo:
            raise InputError(path, f"line {n}: range end {hi} is smaller than its start {lo}")
        by_name.setdefault(name, []).append((chrom, lo, hi))
    if not by_name:
        raise InputError(path, "defines no set (expected lines CHR START END NAME)")
    order = sorted(by_name, key=natural_key)
    return CandidateSets(path, "make-set", tuple((k, tuple(by_name[k])) for k in order))


def _chrom_key(code) -> str:
    number = chrom_number(str(code))
    return str(code) if number is None else str(number)


def members_of(sets: CandidateSets, variants) -> list[np.ndarray]:
    """Each set's SNPs among ``variants`` (a study's, after QC), as sorted indices."""
    if sets.kind == "set":
        index: dict = {}
        for k, s in enumerate(np.asarray(variants.snp).tolist()):
            index.setdefault(s, []).append(k)
        out = []
        for _name, ids in sets.sets:
            ks = [k for s in dict.fromkeys(ids) for k in index.get(s, ())]
            out.append(np.unique(np.array(ks, np.int64)))
        return out
    chrom = np.array([_chrom_key(c) for c in np.asarray(variants.chrom).tolist()], dtype=object)
    bp = np.asarray(variants.bp, np.int64)
    out = []
    for _name, ranges in sets.sets:
        keep = np.zeros(len(bp), bool)
        for c, lo, hi in ranges:
            keep |= (chrom == _chrom_key(c)) & (bp >= lo) & (bp <= hi)
        out.append(np.flatnonzero(keep).astype(np.int64))
    return out


@dataclass(frozen=True)
class Rectangle:
    """What makes a study a rectangle study (:func:`rectangle_study`): its first ``n_rows`` SNPs are
    the rows, the rest the columns; ``origin`` maps each to its SNP of the scanned study, so a row's
    own column (never paired) is where the origins agree."""

    mode: str
    names: tuple
    n_rows: int
    origin: np.ndarray  # int64, one per SNP of the rectangle study

    @property
    def n_cols(self) -> int:
        return len(self.origin) - self.n_rows

    def self_columns(self) -> np.ndarray:
        """Per row, the index (in the rectangle study) of its own column, or -1."""
        cols = self.origin[self.n_rows:]
        pos = {int(o): self.n_rows + k for k, o in enumerate(cols.tolist())}
        return np.array([pos.get(int(o), -1) for o in self.origin[:self.n_rows].tolist()], np.int64)

    def distinct(self) -> np.ndarray:
        """Each scanned SNP of the rectangle once, in the scanned study's (file) order: its first
        index in the rectangle study. A SNP both row and column is there twice; the per-SNP files
        (marginal.tsv) list it once, as a plain scan of those SNPs does."""
        return np.unique(self.origin, return_index=True)[1].astype(np.int64)

    def n_pairs(self) -> int:
        return self.n_rows * self.n_cols - int((self.self_columns() >= 0).sum())

    def row_pairs(self, rows: tuple[int, int] | None = None) -> np.ndarray:
        """Per SNP of the rectangle study, its pairs as SNP1 (the columns but its own) for the rows
        of ``rows`` (default all); 0 for the columns: a rectangle's summary counts its rows only."""
        r0, r1 = rows if rows is not None else (0, self.n_rows)
        out = np.zeros(len(self.origin), np.int64)
        out[r0:r1] = self.n_cols - (self.self_columns()[r0:r1] >= 0)
        return out

    def describe(self) -> str:
        return f"{self.mode} ({', '.join(self.names)}): {self.n_rows} x {self.n_cols} SNPs"

    def key(self) -> dict:
        """What a checkpoint or a part pins of it (gboost/pipeline/checkpoint.py)."""
        import hashlib

        return {"mode": self.mode, "rows": int(self.n_rows),
                "origin_sha256": hashlib.sha256(np.ascontiguousarray(self.origin, np.int64).tobytes()).hexdigest()}


def choose_sets(sets: CandidateSets, mode: str) -> None:
    """plink1.9's rule of how many sets each mode takes; InputError naming the file otherwise."""
    if mode == "set-by-all" and len(sets) != 1:
        raise InputError(sets.path, f"set-by-all needs exactly one set; the file defines {len(sets)} "
                                    f"({', '.join(sets.names[:5])}{', ...' if len(sets) > 5 else ''})")
    if mode == "set-by-set" and len(sets) > 2:
        raise InputError(sets.path, f"set-by-set needs one or two sets; the file defines {len(sets)}")


def rectangle_study(study, sets: CandidateSets, mode: str, log=None):
    """The study a candidate-set scan screens: for set-by-set of one set, ``study`` restricted to
    the set's SNPs (the triangle within it, ``rect`` None: an ordinary scan); otherwise the row
    SNPs then the column SNPs, with :class:`Rectangle` as its ``rect``. ``study``'s planes complete
    (load_study: this gathers them)."""
    from dataclasses import replace

    from gboost.data.study import Study

    if mode not in MODES:
        raise ValueError(f"set mode must be one of {', '.join(MODES)}, got {mode!r}")
    choose_sets(sets, mode)
    members = members_of(sets, study.variants)
    for (name, _), m in zip(sets.sets, members):
        if len(m) == 0:
            raise InputError(sets.path, f"set {name!r} has no SNP left in the scan (after QC and the skipped "
                                        "SNPs); plink1.9: each set must hold at least one scanned SNP")
        if log is not None:
            log(f"set {name}: {len(m)} SNP{'s' if len(m) != 1 else ''} in the scan")
    if mode == "set-by-set" and len(members) == 1:
        if len(members[0]) < 2:
            raise InputError(sets.path, f"set {sets.names[0]!r} has one SNP left in the scan: set-by-set of one "
                                        "set scans the pairs within it, and needs two")
        origin = members[0]
        rect = None
    else:
        rows = members[0]
        cols = np.arange(study.n_snps, dtype=np.int64) if mode == "set-by-all" else members[1]
        origin = np.concatenate([rows, cols])
        rect = Rectangle(mode, tuple(sets.names), len(rows), origin)
    rev = study.reversed_alleles if study.reversed_alleles is not None else study.plink_reversed()
    # A quantitative trait's study keeps its trait (per sample) and each SNP's A1 orientation.
    flip = None if study.a1_flip is None else np.ascontiguousarray(study.a1_flip[origin])
    out = Study(study.variants.take(origin), study.samples, study.layout, np.ascontiguousarray(study.planes[origin]),
                np.ascontiguousarray(study.counts[origin]), study.qc, list(study.source_files), study.snp_col_width,
                study.trait, flip, None, None, np.ascontiguousarray(rev[origin]))
    return replace(out, rect=rect)
