"""PLINK 2 filesets (.pgen/.pvar/.psam), read through pgenlib (optional; LGPL-3).

What is read, and how it maps onto gboost's data model (docs/FORMATS.md has the user's view):

* ``.pvar`` (or ``.pvar.zst``): ``##`` lines skipped, then a ``#CHROM POS ID REF ALT ...`` header
  naming the columns (``CM`` optional), or no header and the six .bim columns. The counted allele
  A1 is ALT and A2 is REF, as ``plink2 --pfile X --make-bed`` writes them, so a scan of the
  .pgen equals the scan of that .bed. A variant with several ALT alleles is refused (one line
  naming it and the plink2 command that drops such variants).
* ``.psam``: a ``#FID``/``#IID`` header naming the columns (FID absent: ``0``, as plink2 writes
  it to a .fam; SID ignored; PAT/MAT absent: founders; SEX 1/M male, 2/F female, else unknown),
  the first other column is the phenotype; or no header and the six .fam columns. Phenotypes are
  decoded as a .fam's (PLINK 1.9's rules): case/control (1 control, 2 case, 0/-9/NA missing) when
  every value allows it, else a quantitative trait (-9 and non-numbers such as plink2's NA missing),
  and, as for a .bed, those of samples of unknown sex are ignored unless ``--allow-no-sex`` (a .psam without a
  SEX column keeps them all, as a VCF does; the log says so).
* ``.pgen``: hard calls through pgenlib, ALT counts with -9 missing (made -1). A .pgen that
  stores dosages (imputed data) is refused: its hard calls are a threshold's choice that
  gboost cannot see, so the user makes them explicit with plink2 (the message gives the command).
"""
from __future__ import annotations

import os

import numpy as np

from gboost.errors import InputError
from gboost.readers.optional import require
from gboost.readers.pheno import (apply_pheno, as_text, check_regular_file, decode_phenotype, drop_phenotypes_without_sex,
                             read_input_bytes, read_rows, read_table)
from gboost.readers.plink_bed import _check_unique, _parse_numbers, read_bim
from gboost.readers.streamed import StreamedSource, canonical_chrom
from gboost.data.study import SampleTable, VariantTable

PGEN_MAGIC = b"\x6c\x1b"
# Storage modes (.pgen byte 2): 0x01 a .bed's layout, 0x02 fixed-width hard calls, 0x03/0x04
# fixed-width with dosages, 0x10 variable-width, whose header control byte (byte 11) says in its
# low 4 bits whether records carry 4-bit types (hard calls only) or 8-bit ones (phase/dosage
# possible). Checked on plink2 v2.00a3.5 output: --make-pgen from a .bed gives 0x80, from
# --import-dosage 0x84.
_DOSAGE_MODES = (0x03, 0x04)
_VARIABLE_WIDTH = 0x10


class PgenSource(StreamedSource):
    """A PLINK 2 fileset; genotypes decoded by pgenlib in SNP blocks."""

    pvar_path: str = ""
    psam_path: str = ""
    may_hold_dosages: bool = False

    def blocks(self, block_snps: int):
        pgenlib = require("pgenlib", self.path)
        n, p = len(self.samples), len(self.variants)
        try:
            reader = pgenlib.PgenReader(self.path.encode(), raw_sample_ct=n, variant_ct=p)
        except RuntimeError as exc:
            raise InputError(self.path, f"cannot read the .pgen: {_first_line(exc)}") from None
        with reader:
            for start in range(0, p, block_snps):
                stop = min(start + block_snps, p)
                out = np.empty((stop - start, n), dtype=np.int8)
                try:
                    reader.read_range(start, stop, out)
                    if self.may_hold_dosages:
                        self._refuse_dosages(reader, start, stop, out)
                except RuntimeError as exc:
                    raise InputError(self.path, f"cannot read the .pgen: {_first_line(exc)}") from None
                np.maximum(out, -1, out=out)  # pgenlib's -9 (missing) -> -1
                yield start, out

    def _refuse_dosages(self, reader, start: int, stop: int, hard: np.ndarray) -> None:
        """A dosage that is not the hard call (a fraction, or one beside a missing call) means
        imputed data: refuse it (see the module notes)."""
        dos = np.empty(hard.shape, dtype=np.float32)
        reader.read_dosages_range(start, stop, dos)
        same = np.where(hard < 0, dos == -9, dos == hard)
        if not same.all():
            k = int(np.flatnonzero(~same.all(axis=1))[0])
            raise InputError(self.path, f"variant {self.variants.snp[start + k]} carries dosages (imputed data); gboost "
                                        "scans hard calls: write them with `plink2 --pfile PREFIX --hard-call-threshold "
                                        "0.1 --make-bed --out NEW` and scan --bfile NEW")


def _first_line(exc: Exception) -> str:
    """pgenlib's message, one line (it may come as the repr of bytes), with a hint."""
    text = str(exc).strip()
    if text.startswith(("b'", 'b"')):
        text = text[2:-1].replace("\\n", "\n")
    line = (text.splitlines() or ["unknown error"])[0].removeprefix("Error: ").strip()
    return f"{line} (is the .pgen truncated or damaged?)" if "corrupt" not in line and "failure" not in line else line


def open_pfile(prefix: str | os.PathLike, pheno: str | None = None, *, allow_no_sex: bool = False,
               pheno_column: str | int | None = None) -> PgenSource:
    """Open a PLINK 2 fileset ``prefix.pgen/.pvar[.zst]/.psam``.

    Parameters
    ----------
    prefix
        Path without extension (as plink2's ``--pfile``); a trailing ``.pgen``, ``.pvar`` or
        ``.psam`` is tolerated.
    pheno
        Optional ``--pheno`` file (``FID IID value``) overriding the .psam's phenotype.
    allow_no_sex
        PLINK's ``--allow-no-sex``: keep phenotypes of samples of unknown sex.

    Raises
    ------
    InputError
        pgenlib missing, a missing or malformed file (named), a multi-allelic variant, counts
        that do not match between the three files, or dosages.
    """
    pgenlib = require("pgenlib", os.fspath(prefix) + ".pgen")
    prefix = _strip_extension(os.fspath(prefix))
    pgen, psam = prefix + ".pgen", prefix + ".psam"
    pvar = prefix + ".pvar" if os.path.exists(prefix + ".pvar") or not os.path.exists(prefix + ".pvar.zst") \
        else prefix + ".pvar.zst"
    variants = read_pvar(pvar)
    samples, founder, has_sex, raw_pheno, lines = read_psam(psam)
    mode = _check_header(pgen, len(variants), len(samples), pvar, psam)
    try:  # pgenlib checks the whole header (and the sizes we gave) when it opens the file
        pgenlib.PgenReader(pgen.encode(), raw_sample_ct=len(samples), variant_ct=len(variants)).close()
    except RuntimeError as exc:
        raise InputError(pgen, f"cannot read the .pgen: {_first_line(exc)}") from None
    source = PgenSource(pgen, variants, samples, founder, [pgen, pvar, psam], sex_rule=has_sex and not allow_no_sex)
    source.pvar_path, source.psam_path = pvar, psam
    source.may_hold_dosages = mode
    if pheno is not None:
        apply_pheno(source, pheno, pheno_column)
    else:
        if raw_pheno is not None:  # case/control, or a quantitative trait, by PLINK 1.9's rule (as a .fam's)
            samples.status, samples.trait = decode_phenotype(raw_pheno, lines, psam)
        else:
            samples.status = np.zeros(len(samples), dtype=np.int8)
        if source.sex_rule:
            source.pheno_without_sex = drop_phenotypes_without_sex(samples)
    if not has_sex:
        source.notes.append(f"{os.path.basename(psam)} has no SEX column: every sample's phenotype is kept, as PLINK 2 "
                            "does (PLINK 1.9 would ignore phenotypes of samples of unknown sex)")
    return source


def _strip_extension(prefix: str) -> str:
    for ext in (".pgen", ".pvar.zst", ".pvar", ".psam"):
        if prefix.endswith(ext) and not os.path.exists(prefix + ".pgen"):
            return prefix[: -len(ext)]
    return prefix


def _check_header(path: str, n_variants: int, n_samples: int, pvar: str, psam: str) -> bool:
    """Check the .pgen's magic bytes and counts; returns whether it may hold dosages."""
    check_regular_file(path, ".pgen")
    try:
        with open(path, "rb") as fh:
            head = fh.read(12)
    except OSError as exc:
        raise InputError(path, f"cannot read the .pgen file: {exc.strerror or exc}") from None
    if len(head) < 3 or head[:2] != PGEN_MAGIC:
        raise InputError(path, f"not a PLINK 2 .pgen file: it starts with bytes {head[:3].hex(' ') or '(none)'}, "
                               "expected 6c 1b then a storage mode")
    if head[2] == _VARIABLE_WIDTH and len(head) == 12:
        m, n = int.from_bytes(head[3:7], "little"), int.from_bytes(head[7:11], "little")
        if (m, n) != (n_variants, n_samples):
            raise InputError(path, f"the .pgen holds {m} variants x {n} samples but {os.path.basename(pvar)} lists "
                                   f"{n_variants} and {os.path.basename(psam)} {n_samples}; the files do not belong together")
        return (head[11] & 15) >= 4
    return head[2] in _DOSAGE_MODES


def _pvar_bytes(path: str) -> bytes:
    if not path.endswith(".zst"):
        return read_input_bytes(path, ".pvar")
    zstandard = _zstandard(path)
    check_regular_file(path, ".pvar.zst")
    try:
        with open(path, "rb") as fh:
            return zstandard.ZstdDecompressor().stream_reader(fh).read()
    except OSError as exc:
        raise InputError(path, f"cannot read the .pvar.zst file: {exc.strerror or exc}") from None
    except zstandard.ZstdError as exc:
        raise InputError(path, f"not a Zstandard-compressed .pvar: {exc}") from None


def _zstandard(path: str):
    try:
        import zstandard
    except ImportError:
        raise InputError(path, "reading a .pvar.zst needs the optional package zstandard: pip install "
                               "'gboost[formats]' (or pip install zstandard), or decompress it with `zstd -d`") from None
    return zstandard


def read_pvar(path: str) -> VariantTable:
    """Parse a .pvar (see the module notes); refuse multi-allelic variants. A variant ID may
    repeat, as in a .bim (``read_bim``)."""
    data = _pvar_bytes(path)
    header = None
    for raw in data.split(b"\n", 4096):  # the header is among the first lines, after the ## ones
        if raw.startswith(b"##"):
            continue
        if raw.startswith(b"#"):
            header = raw[1:].decode("utf-8", "replace").split()
        break
    if header is None:  # no header: the .bim's six columns (ALT first, as plink2 reads a .bim)
        return read_bim(path) if not path.endswith(".zst") else _bim_from_bytes(path, data)
    need = ("CHROM", "POS", "ID", "REF", "ALT")
    missing = [c for c in need if c not in header]
    if missing:
        raise InputError(path, f"the .pvar header lacks column(s) {', '.join(missing)}: expected #CHROM POS ID REF ALT")
    columns, lines = read_table(path, len(header), ".pvar", " ".join(header), data=data)
    if len(lines) == 0:
        raise InputError(path, "the .pvar lists no variants")
    col = dict(zip(header, columns))
    alt = col["ALT"]
    multi = np.flatnonzero(np.char.find(alt, b",") >= 0)
    if len(multi):
        k = int(multi[0])
        raise InputError(path, f"line {lines[k]}: variant {col['ID'][k].decode()} has {alt[k].count(b',') + 1} ALT alleles "
                               f"({alt[k].decode()}); gboost scans biallelic variants: drop the others with `plink2 --pfile "
                               "PREFIX --max-alleles 2 --make-pgen --out NEW` (or split them first with `bcftools norm -m-`)")
    variants = VariantTable(
        canonical_chrom(as_text(col["CHROM"])),
        as_text(col["ID"]),
        _parse_numbers(col["CM"], lines, path, "cM position", np.float64) if "CM" in col else np.zeros(len(lines)),
        _parse_numbers(col["POS"], lines, path, "base-pair position", np.int64),
        as_text(alt),
        as_text(col["REF"]),
    )
    return variants


def _bim_from_bytes(path: str, data: bytes) -> VariantTable:
    (chrom, snp, cm, bp, a1, a2), lines = read_table(path, 6, ".pvar", "chrom, ID, cM, bp, ALT, REF", data=data)
    if len(lines) == 0:
        raise InputError(path, "the .pvar lists no variants")
    variants = VariantTable(canonical_chrom(as_text(chrom)), as_text(snp),
                            _parse_numbers(cm, lines, path, "cM position", np.float64),
                            _parse_numbers(bp, lines, path, "base-pair position", np.int64), as_text(a1), as_text(a2))
    return variants


_SEX = {"1": 1, "M": 1, "m": 1, "2": 2, "F": 2, "f": 2}


def read_psam(path: str):
    """Parse a .psam: ``(samples, founder, has_sex, raw phenotype tokens or None, line numbers)``."""
    rows = read_rows(path, ".psam") if not _has_header(path) else None
    if rows is not None:  # a .fam's six columns
        header, body = ["FID", "IID", "PAT", "MAT", "SEX", "PHENO1"], rows
    else:
        text_rows = [(n, line.split()) for n, line in enumerate(_read_text(path).splitlines(), start=1) if line.strip()]
        head = [r for r in text_rows if r[1][0].startswith("#")]
        header = [t.lstrip("#") for t in head[-1][1]] if head else []
        body = [r for r in text_rows if not r[1][0].startswith("#")]
    if "IID" not in header:
        raise InputError(path, "the .psam header has no IID column: expected #FID IID ... or #IID ...")
    if not body:
        raise InputError(path, "the .psam lists no samples")
    for line, tokens in body:
        if len(tokens) != len(header):
            raise InputError(path, f"line {line}: expected {len(header)} columns ({' '.join(header)}), found {len(tokens)}")
    get = {name: [t[k] for _, t in body] for k, name in enumerate(header)}
    lines = [n for n, _ in body]
    n = len(body)
    fid = np.array(get.get("FID", ["0"] * n), dtype=str)
    iid = np.array(get["IID"], dtype=str)
    _check_unique(np.char.add(np.char.add(fid, "\t"), iid), np.array(lines), path, "sample FID+IID")
    pat, mat = get.get("PAT", ["0"] * n), get.get("MAT", ["0"] * n)
    founder = np.array([p == "0" and m == "0" for p, m in zip(pat, mat)], dtype=bool)
    has_sex = "SEX" in get
    sex = np.array([_SEX.get(s, 0) for s in get.get("SEX", ["0"] * n)], dtype=np.int8)
    standard = {"FID", "IID", "SID", "PAT", "MAT", "SEX"}
    pheno_cols = [h for h in header if h not in standard]
    raw = get[pheno_cols[0]] if pheno_cols else None
    samples = SampleTable(fid, iid, sex, np.zeros(n, dtype=np.int8))
    return samples, founder, has_sex, raw, lines


def _has_header(path: str) -> bool:
    text = _read_text(path)
    first = next((line for line in text.splitlines() if line.strip()), "")
    return first.startswith("#FID") or first.startswith("#IID")


def _read_text(path: str) -> str:
    from gboost.readers.pheno import read_text

    return read_text(path, ".psam")
