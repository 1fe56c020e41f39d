"""What the readers of PLINK 2, VCF/BCF and BGEN files share.

Each reads its metadata when opened and its genotypes in SNP blocks on demand, decoded by the
format's own library into int8 counts of the counted allele (PLINK 2's ALT, written A1, as
``plink2 --make-bed`` would) for every sample of the file; :class:`StreamedSource` picks the
requested samples out of each block. Nothing but one block is held, so a study larger than
memory streams as a .bed does.
"""
from __future__ import annotations

import contextlib
import os
import tempfile
from dataclasses import dataclass, field
from typing import Iterator

import numba as nb
import numpy as np

from gboost.runtime.numba_cache import cached_njit
from gboost.data.study import SampleTable, VariantTable


@dataclass
class StreamedSource:
    """Base of the readers of .pgen, VCF/BCF and BGEN files; implements
    :class:`gboost.data.study.GenotypeSource`."""

    path: str
    variants: VariantTable
    samples: SampleTable
    founder: np.ndarray | None = None
    files: list[str] = field(default_factory=list)
    pheno_path: str | None = None
    # PLINK 1.9's "phenotype of unknown-sex samples ignored" applies to a --pheno file (the .psam
    # has sexes like a .fam; VCF and BGEN keep every phenotype, as PLINK 2 does)
    sex_rule: bool = True
    pheno_without_sex: int = 0
    notes: list[str] = field(default_factory=list)  # said in the log and run.json's QC messages

    def blocks(self, block_snps: int) -> Iterator[tuple[int, np.ndarray]]:
        """Yield ``(first_snp, int8 (snps, all samples))``: counted-allele copies, -1 missing,
        reading the file once from its start (a format's reader keeps one file handle open)."""
        raise NotImplementedError

    def iter_blocks(self, sample_index: np.ndarray, block_snps: int) -> Iterator[tuple[int, np.ndarray]]:
        """Yield ``(first_snp, int8 (snps, len(sample_index)))`` over all SNPs in order."""
        sample_index = np.asarray(sample_index, dtype=np.intp)
        every = len(sample_index) == len(self.samples) and bool((sample_index == np.arange(len(sample_index))).all())
        for start, block in self.blocks(block_snps):
            yield start, block if every else gather_columns(block, sample_index)

    def input_files(self) -> list[str]:
        return list(self.files) or [self.path]


@cached_njit(parallel=True)
def _gather(block, index, out):
    for r in nb.prange(block.shape[0]):
        row = block[r]
        for j in range(index.shape[0]):
            out[r, j] = row[index[j]]


def gather_columns(block: np.ndarray, index: np.ndarray) -> np.ndarray:
    """``block[:, index]``, C-contiguous: the samples in the loader's order (plane order). NumPy's
    fancy indexing along the second axis was most of a .pgen's loading time (bench/bench_load.py
    --formats); rows in parallel, one pass each, take a fraction of it."""
    out = np.empty((block.shape[0], len(index)), dtype=block.dtype)
    if block.shape[0] and len(index):
        _gather(np.ascontiguousarray(block), np.ascontiguousarray(index, dtype=np.intp), out)
    return out


def canonical_chrom(codes) -> np.ndarray:
    """Chromosome names as PLINK 2 imports them: numeric codes without leading zeros (a BGEN
    writer may store ``01``), everything else unchanged."""
    out = [str(int(c)) if c.isdigit() else c for c in (str(x) for x in codes)]
    return np.array(out, dtype=str)


@contextlib.contextmanager
def c_stderr_captured(into: list[str]):
    """Collect what C libraries (htslib, the BGEN library) print to file descriptor 2 while the
    block runs, instead of letting it reach the terminal: a bad file must give one line, and the
    library's own words go into that line. Python's own stderr writes are not made here."""
    try:
        saved = os.dup(2)
    except OSError:  # no fd 2 (a GUI without a console): nothing to capture
        yield
        return
    with tempfile.TemporaryFile() as tmp:
        try:
            os.dup2(tmp.fileno(), 2)
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            text = tmp.read().decode("utf-8", "replace")
            into.extend(line.strip() for line in text.splitlines() if line.strip())


def library_words(lines: list[str], fallback: str) -> str:
    """The C library's first error (or warning) line for a message, else ``fallback``."""
    for line in lines:
        if "[E::" in line or "error" in line.lower():
            return line
    return lines[0] if lines else fallback

