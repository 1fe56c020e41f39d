"""Small whitespace tables (.fam, .bim, .map, --pheno) and PLINK 1.9's case/control phenotype rules.

PLINK 1.9 decides per phenotype column whether it is case/control or quantitative, token by
token (checked against plink1.9 v1.90b6.26):

* a token is *case/control-compatible* when it is exactly ``0``, ``1`` or ``2``, when it has no
  numeric prefix at all (``abc``, ``NA``: C ``strtod`` parses nothing), or when its numeric prefix
  equals the missing phenotype ``-9`` (``-9``, ``-9.0``, ``-09``, ``-9abc``);
* if every token of the column is compatible the column is case/control: ``1`` control,
  ``2`` case, everything else missing;
* otherwise the whole column is quantitative (``1.0``, ``2.0``, ``3``, ``nan``, ``inf``, ``01``,
  ``2x`` all make it so). A quantitative value is the number C's ``strtod`` reads from the start of
  the token; a token with no numeric prefix, or whose value equals ``-9``, is missing (``0`` is a
  value). Such a column switches the scan to the linear (QT) epistasis test (docs/qt_epistasis.md);
  :func:`decode_phenotype` returns it as floats. PLINK would carry a ``nan`` or ``inf`` value into
  its sums (every statistic NaN); we refuse it with an :class:`InputError` naming the line.

``--pheno FILE``: ``FID IID value`` rows (extra columns ignored: PLINK takes the first phenotype
column unless ``--mpheno N`` or ``--pheno-name NAME`` picks another), whitespace-separated, an optional first line starting ``FID IID``, blank lines skipped;
samples missing from the file get a missing phenotype, rows for unknown samples are ignored, and a
later row for the same sample overrides an earlier one; a row with fewer than 3 tokens is an error.
"""
from __future__ import annotations

import os
import re

import numpy as np

from gboost.errors import InputError

MISSING_PHENO = -9.0

# The longest numeric prefix C's strtod() would accept (decimal, hex, inf, nan).
_STRTOD_PREFIX = re.compile(
    r"""[+-]?(?:
        0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)(?:[pP][+-]?\d+)?
      | (?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?
      | inf(?:inity)?
      | nan(?:\([0-9A-Za-z_]*\))?
    )""",
    re.X | re.I,
)


def read_rows(path: str | os.PathLike, what: str) -> list[tuple[int, list[str]]]:
    """Read a small whitespace-separated text table.

    Parameters
    ----------
    path
        The file.
    what
        What the file is, for messages (e.g. ``".fam"``).

    Returns
    -------
    list of ``(line_number, tokens)``, 1-based line numbers; blank lines and lines starting with
    ``#`` are skipped, as PLINK 1.9 does for .fam/.bim/.map.

    Raises
    ------
    InputError
        When the file cannot be read or is not UTF-8 text.
    """
    text = read_text(path, what)
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        tokens = line.split()
        if tokens and not tokens[0].startswith("#"):
            rows.append((number, tokens))
    return rows


def read_table(path: str | os.PathLike, n_columns: int, what: str, columns: str,
               data: bytes | None = None) -> tuple[list[np.ndarray], np.ndarray]:
    """Read a large whitespace table with exactly ``n_columns`` tokens per line, vectorised.

    Built for .bim files of millions of lines: the file is split in chunks at line ends and each
    chunk tokenised by NumPy, so memory stays near the size of the resulting arrays.

    Parameters
    ----------
    path
        The file.
    n_columns
        Tokens every data line must have.
    what, columns
        For messages: the file kind (``".bim"``) and the expected columns (``"chrom, SNP ID, ..."``).
    data
        The file's bytes when already in hand (a decompressed ``.pvar.zst``); read from ``path``
        otherwise.

    Returns
    -------
    columns
        One bytes (``S``) array per column.
    lines
        1-based line number of each row. Blank lines and lines starting with ``#`` are skipped.

    Raises
    ------
    InputError
        Unreadable or non-UTF-8 file, or a line with another number of tokens (naming it).
    """
    data = read_input_bytes(path, what) if data is None else data
    parts, lines, first_line = [], [], 1
    for chunk in _line_chunks(data):
        _check_utf8(chunk, first_line, path, what)
        tokens, numbers = _tokenise(chunk, first_line, n_columns, path, what, columns)
        parts.append(tokens)
        lines.append(numbers)
        first_line += chunk.count(b"\n")
    table = np.concatenate(parts) if parts else np.zeros((0, n_columns), dtype="S1")
    return [table[:, k] for k in range(n_columns)], np.concatenate(lines) if lines else np.zeros(0, np.int64)


def _line_chunks(data: bytes, size: int = 1 << 23):
    """Pieces of ``data`` of about ``size`` bytes, each ending at a line end (or the file end)."""
    start = 0
    while start < len(data):
        stop = data.find(b"\n", start + size)
        stop = len(data) if stop < 0 else stop + 1
        yield data[start:stop]
        start = stop


def _check_utf8(chunk: bytes, first_line: int, path, what: str) -> None:
    try:
        chunk.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = first_line + chunk[: exc.start].count(b"\n")
        raise InputError(
            path, f"line {line}: byte 0x{chunk[exc.start]:02x} is not UTF-8 text; is this really a {what} file?"
        ) from None


_WHITESPACE = np.zeros(256, dtype=bool)
_WHITESPACE[[9, 10, 11, 12, 13, 32]] = True  # what bytes.split() splits on


def _tokenise(chunk: bytes, first_line: int, n_columns: int, path, what: str, columns: str):
    """Tokens ``(rows, n_columns)`` of a chunk of whole lines, and each row's line number."""
    b = np.frombuffer(chunk, dtype=np.uint8)
    space = _WHITESPACE[b]
    starts = np.flatnonzero(~space & np.r_[True, space[:-1]])
    if len(starts) == 0:
        return np.zeros((0, n_columns), dtype="S1"), np.zeros(0, dtype=np.int64)
    line_of = np.cumsum(b == 10)[starts]  # 0-based line of each token (newlines before it)
    counts = np.bincount(line_of, minlength=chunk.count(b"\n") + 1)
    first_token = np.r_[True, line_of[1:] != line_of[:-1]]
    comment = np.zeros(len(counts), dtype=bool)
    comment[line_of[first_token]] = b[starts[first_token]] == ord("#")
    data_line = (counts > 0) & ~comment
    bad = np.flatnonzero(data_line & (counts != n_columns))
    if len(bad):
        k = int(bad[0])
        raise InputError(path, f"line {first_line + k}: expected {n_columns} columns ({columns}), found {int(counts[k])}")
    tokens = np.array(chunk.split(), dtype=bytes)
    tokens = tokens[data_line[line_of]] if comment.any() else tokens
    return tokens.reshape(-1, n_columns), first_line + np.flatnonzero(data_line)


def as_text(column: np.ndarray) -> np.ndarray:
    """A bytes column as a str array (UTF-8)."""
    try:
        return column.astype(str)
    except UnicodeDecodeError:  # non-ASCII IDs: numpy's cast decodes ASCII only
        return np.char.decode(column, "utf-8")


UTF8_BOM = b"\xef\xbb\xbf"


def check_regular_file(path: str | os.PathLike, what: str) -> None:
    """Refuse a FIFO, a device or a folder as an input (reading one blocks or never ends)."""
    import stat

    try:
        st = os.stat(path)
    except OSError as exc:
        raise InputError(path, f"cannot read the {what} file: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        kind = "a folder" if stat.S_ISDIR(st.st_mode) else "a pipe or device, not a regular file"
        raise InputError(path, f"the {what} file is {kind}")


def read_input_bytes(path: str | os.PathLike, what: str) -> bytes:
    """A text input's bytes, a leading UTF-8 byte-order mark removed (spreadsheet exports add one;
    kept, it became part of the first ID or chromosome code)."""
    check_regular_file(path, what)
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise InputError(path, f"cannot read the {what} file: {exc.strerror or exc}") from None
    return data[len(UTF8_BOM):] if data.startswith(UTF8_BOM) else data


def input_lines(path: str, what: str, name: str | None = None):
    """The lines of a text input (bytes, numbered from 1, a leading UTF-8 byte-order mark removed as
    :func:`read_input_bytes` removes it), read one at a time; refused in one line as that function
    refuses (``name``: what the open's refusal calls it, default "the WHAT file")."""
    check_regular_file(path, what)
    try:
        fh = open(path, "rb")
    except OSError as exc:
        raise InputError(path, f"cannot read the {name or what + ' file'}: {exc.strerror or exc}") from None
    with fh:
        for number, raw in enumerate(fh, start=1):
            if number == 1 and raw.startswith(UTF8_BOM):
                raw = raw[len(UTF8_BOM):]
            yield number, raw


def read_text(path: str | os.PathLike, what: str) -> str:
    """Whole file as text (BOM removed), with an :class:`InputError` for unreadable or non-UTF-8 files."""
    data = read_input_bytes(path, what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputError(
            path, f"line {line}: byte 0x{data[exc.start]:02x} is not UTF-8 text; is this really a {what} file?"
        ) from None


def strtod_prefix(token: str) -> float | None:
    """The value C's ``strtod`` reads from the start of ``token``, or ``None`` if it reads nothing."""
    m = _STRTOD_PREFIX.match(token)
    if m is None:
        return None
    text = m.group(0)
    body = text.lstrip("+-")
    if body[:2].lower() == "0x":
        value = float.fromhex(body)
        return -value if text.startswith("-") else value
    return float(text)


def is_case_control_token(token: str) -> bool:
    """PLINK 1.9's test of whether a phenotype token is compatible with a case/control column."""
    if token in ("0", "1", "2"):
        return True
    value = strtod_prefix(token)
    return value is None or value == MISSING_PHENO


def case_control_code(token: str) -> int:
    """1 control, 2 case, 0 missing, for a token already known to be case/control-compatible."""
    return {"1": 1, "2": 2}.get(token, 0)


def decode_case_control(tokens: list[str], lines: list[int], path: str | os.PathLike) -> np.ndarray:
    """Decode a phenotype column the way PLINK 1.9 does, insisting on case/control.

    Parameters
    ----------
    tokens
        The raw phenotype tokens, one per sample.
    lines
        The line number of each token, for messages.
    path
        The file they come from.

    Returns
    -------
    int8 array: 1 control, 2 case, 0 missing.

    Raises
    ------
    InputError
        When PLINK would read the column as a quantitative trait.
    """
    ok = {t: is_case_control_token(t) for t in dict.fromkeys(tokens)}  # each distinct token judged once
    if not all(ok.values()):
        token, line = next((t, ln) for t, ln in zip(tokens, lines) if not ok[t])  # the first, for its line
        raise InputError(
            path,
            f"line {line}: phenotype {token!r} is not case/control (expected 1 = control, "
            "2 = case; 0, -9 or non-numeric = missing); PLINK 1.9 would read this column as a "
            "quantitative trait, and an epistasis scan needs cases and controls",
        )
    return _case_control_codes(tokens, ok)


def _case_control_codes(tokens, distinct) -> np.ndarray:
    """int8 codes of case/control-compatible ``tokens``, from a dict keyed by their distinct
    values: a cohort's column holds a handful, so the per-token work is a C-level map (per token
    in Python, a biobank's samples take long enough to notice, on the path before the scan's first
    tile)."""
    code = {t: case_control_code(t) for t in distinct}
    return np.fromiter(map(code.__getitem__, tokens), dtype=np.int8, count=len(tokens))


def decode_quantitative(tokens: list[str], lines: list[int], path: str | os.PathLike) -> np.ndarray:
    """A quantitative phenotype column as float64, NaN where PLINK 1.9 reads it as missing.

    Raises
    ------
    InputError
        For a value PLINK would read as NaN or infinite (``nan``, ``inf``, ``1e999``).
    """
    value, bad = {}, set()  # per distinct token (a C-level map per token below, as _case_control_codes)
    for token in dict.fromkeys(tokens):
        v = strtod_prefix(token)
        if v is None or v == MISSING_PHENO:
            value[token] = np.nan
        elif np.isfinite(v):
            value[token] = v
        else:
            bad.add(token)
    if bad:
        token, line = next((t, ln) for t, ln in zip(tokens, lines) if t in bad)  # the first, for its line
        raise InputError(path, f"line {line}: phenotype {token!r} is not a finite number; a quantitative trait "
                               "needs numbers (-9 or a non-numeric token for missing)")
    return np.fromiter(map(value.__getitem__, tokens), dtype=np.float64, count=len(tokens))


def decode_phenotype(tokens: list[str], lines: list[int], path: str | os.PathLike) -> tuple[np.ndarray, np.ndarray | None]:
    """PLINK 1.9's reading of a phenotype column: case/control when every token is compatible
    with it, quantitative otherwise.

    Returns
    -------
    status
        int8: 1 control, 2 case, 0 missing; for a quantitative column 1 where the trait has a
        value (the sample is phenotyped) and 0 where it is missing.
    trait
        ``None`` for a case/control column, else float64 values with NaN for missing.
    """
    distinct = dict.fromkeys(tokens)  # each distinct token judged once (_case_control_codes)
    if all(is_case_control_token(t) for t in distinct):
        return _case_control_codes(tokens, distinct), None
    trait = decode_quantitative(tokens, lines, path)
    return np.where(np.isnan(trait), 0, 1).astype(np.int8), trait


def read_pheno_file(path: str | os.PathLike, fid: np.ndarray, iid: np.ndarray,
                    column: str | int | None = None) -> np.ndarray:
    """Read a ``--pheno`` file (``FID IID value``) with PLINK 1.9's semantics.

    Parameters
    ----------
    path
        The phenotype file.
    fid, iid
        The samples' IDs, in .fam order.

    Returns
    -------
    int8 status per sample (1 control, 2 case, 0 missing); samples absent from the file are 0.

    Raises
    ------
    InputError
        For a row with fewer than 3 tokens or a quantitative value.
    """
    values = _pheno_values(path, fid, iid, column)
    status = np.zeros(len(iid), dtype=np.int8)
    if values:
        keys = sorted(values)
        decoded = decode_case_control([values[k][0] for k in keys], [values[k][1] for k in keys], path)
        status[keys] = decoded
    return status


def pheno_column_index(path, column: str | int | None, header: list[str] | None) -> int:
    """The token index of the phenotype a --pheno file's rows give: the first phenotype column
    (``None``), the N-th (``--mpheno N``, an int from 1) or the one the header line names
    (``--pheno-name NAME``, which needs the header: plink1.9 refuses it otherwise, "--pheno-name
    requires the --pheno file to have a header line")."""
    if column is None:
        return 2
    if isinstance(column, str):
        if header is None:
            raise InputError(path, f"--pheno-name {column}: the file has no header line (FID IID NAME1 NAME2 ...) naming "
                                   "its columns, as PLINK 1.9 requires; choose the column by number with --mpheno N")
        names = header[2:]
        if column not in names:
            raise InputError(path, f"--pheno-name {column}: no such column (plink1.9: \"--pheno-name column not "
                                   f"found\"); the header names {', '.join(names) or 'no phenotype column'}")
        return 2 + names.index(column)
    return 1 + int(column)


def _pheno_values(path, fid: np.ndarray, iid: np.ndarray, column: str | int | None = None) -> dict[int, tuple[str, int]]:
    """A --pheno file's value token (of ``column``: :func:`pheno_column_index`) and line number per
    sample it names (by .fam index)."""
    index = {(f, i): k for k, (f, i) in enumerate(zip(fid.tolist(), iid.tolist()))}
    values: dict[int, tuple[str, int]] = {}
    rows, header = _pheno_rows_and_header(path)
    at = pheno_column_index(path, column, header)
    for line, tokens in rows:
        if len(tokens) <= at:
            if column is None:
                raise InputError(path, f"line {line}: expected FID IID value, found {len(tokens)} column(s)")
            raise InputError(path, f"line {line}: phenotype column {at - 1} (token {at + 1}) is not there, found "
                                   f"{len(tokens)} column(s) (plink1.9: \"Line {line} of --pheno file has fewer tokens "
                                   "than expected\")")
        k = index.get((tokens[0], tokens[1]))
        if k is not None:
            values[k] = (tokens[at], line)  # a later row for the same sample wins, as in PLINK
    return values


def _no_entry_matches(path, fid: np.ndarray, iid: np.ndarray) -> str:
    """The message for a --pheno file none of whose entries names a loaded sample: the cause is
    the IDs, not the phenotype coding (as plink2 says: "No entries in FILE correspond to loaded
    sample IDs"; plink1.9 goes on to "requires at least two cases and two controls")."""
    first = next(iter(_pheno_rows(path)), None)
    theirs = f"its first is {' '.join(first[1][:2])!r} (line {first[0]})" if first else "it has no entries"
    return (f"no entry of the --pheno file matches a loaded sample ID (FID IID): {theirs}, the first loaded sample is "
            f"{fid[0] + ' ' + iid[0]!r}; check the IDs (for a VCF/BGEN: --double-id, --const-fid, --id-delim)")


def read_pheno_values(path: str | os.PathLike, fid: np.ndarray, iid: np.ndarray,
                      column: str | int | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    """Read a ``--pheno`` file like :func:`read_pheno_file`, case/control or quantitative.

    The column's kind is decided over the values of the samples it names (as for .fam columns,
    :func:`decode_phenotype`); samples absent from the file are missing.

    Returns
    -------
    status, trait
        As :func:`decode_phenotype`, one entry per sample in .fam order.
    """
    values = _pheno_values(path, fid, iid, column)
    if not values and len(iid):
        raise InputError(path, _no_entry_matches(path, fid, iid))
    status = np.zeros(len(iid), dtype=np.int8)
    keys = sorted(values)
    st, trait_part = decode_phenotype([values[k][0] for k in keys], [values[k][1] for k in keys], path)
    status[keys] = st
    if trait_part is None:
        return status, None
    trait = np.full(len(iid), np.nan)
    trait[keys] = trait_part
    return status, trait


def apply_pheno(source, path: str | os.PathLike, column: str | int | None = None) -> None:
    """Override a genotype source's phenotypes with a ``--pheno`` file, in place (PLINK semantics).

    The file is added to the source's input files (for run.json) and remembered as
    ``source.pheno_path`` so that "no cases" errors name it. PLINK's rule for samples of unknown
    sex is applied again afterwards (see :func:`drop_phenotypes_without_sex`) unless the source
    says it does not hold (``source.sex_rule`` False, e.g. the BOOST matrix, which has no sex).
    """
    path = os.fspath(path)
    source.samples.status, source.samples.trait = read_pheno_values(path, source.samples.fid, source.samples.iid,
                                                                    column)
    source.pheno_path = path
    if getattr(source, "sex_rule", True):
        source.pheno_without_sex = drop_phenotypes_without_sex(source.samples)
    files = getattr(source, "files", None)
    if isinstance(files, list) and path not in files:
        files.append(path)


def drop_phenotypes_without_sex(samples) -> int:
    """Set missing the phenotype of samples whose sex is unknown; returns how many had one.

    PLINK 1.9 does this at load time, before any QC, unless ``--allow-no-sex`` is given ("Warning:
    Ignoring phenotypes of missing-sex samples"; checked with plink1.9: such samples leave the
    --hwe control set and the scan, and a SNP polymorphic only through them is skipped).
    """
    affected = (samples.sex != 1) & (samples.sex != 2) & (samples.status > 0)
    samples.status = np.where(affected, 0, samples.status).astype(np.int8)
    trait = getattr(samples, "trait", None)
    if trait is not None:  # PLINK clears every phenotype of such samples, quantitative ones too
        samples.trait = np.where(affected, np.nan, trait)
    return int(affected.sum())


def _pheno_rows(path: str | os.PathLike) -> list[tuple[int, list[str]]]:
    """Rows of a --pheno file without its optional ``FID IID ...`` header (blank lines skipped)."""
    return _pheno_rows_and_header(path)[0]


def _pheno_rows_and_header(path: str | os.PathLike) -> tuple[list[tuple[int, list[str]]], list[str] | None]:
    """:func:`_pheno_rows` and the header line's tokens (None without one)."""
    text = read_text(path, "--pheno")
    rows = [(n, line.split()) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
    if rows and rows[0][1][:2] == ["FID", "IID"]:
        return rows[1:], rows[0][1]
    return rows, None
