"""the vectorised .bim/.fam parse gives what the general tokenizer (io.pheno.read_table,
NumPy's casts) gives, value for value and message for message, on adversarial files."""
from __future__ import annotations

import numpy as np
import pytest

from gboost.errors import InputError
from gboost.readers.pheno import as_text, read_table
from gboost.readers.plink_bed import _check_unique, _parse_numbers, _read_fam_columns, read_bim


def reference_bim(path):
    """read_bim as it was: read_table's tokens, NumPy's casts."""
    (chrom, snp, cm, bp, a1, a2), lines = read_table(path, 6, ".bim", "chrom, SNP ID, cM, bp, A1, A2")
    if len(lines) == 0:
        raise InputError(path, "the .bim file is empty: expected one line per SNP (chrom, ID, cM, bp, A1, A2)")
    out = (as_text(chrom), as_text(snp), _parse_numbers(cm, lines, path, "cM position", np.float64),
           _parse_numbers(bp, lines, path, "base-pair position", np.int64), as_text(a1), as_text(a2))
    return out  # (a repeated SNP ID is PLINK's too: accepted)


def reference_fam(path):
    columns, lines = read_table(path, 6, ".fam", "FID, IID, father, mother, sex, phenotype")
    if len(lines) == 0:
        raise InputError(path, "the .fam file is empty: expected one line per sample (FID, IID, father, mother, "
                               "sex, phenotype)")
    fid, iid, pat, mat, sex, pheno = (as_text(c) for c in columns)
    _check_unique(np.char.add(np.char.add(fid, "\t"), iid), lines, path, "sample FID+IID")
    founder = (pat == "0") & (mat == "0")
    sex_code = np.where(sex == "1", 1, np.where(sex == "2", 2, 0)).astype(np.int8)
    return fid, iid, founder, sex_code, pheno.tolist(), lines.tolist()


def outcome(fn, path):
    try:
        return fn(path)
    except InputError as exc:
        return ("error", str(exc))


def same(a, b):
    if isinstance(a, tuple) and len(a) == 2 and isinstance(a[0], str) and a[0] == "error":
        assert a == b
        return
    assert not (isinstance(b, tuple) and len(b) == 2 and isinstance(b[0], str) and b[0] == "error"), b
    a = tuple(getattr(a, f) for f in ("chrom", "snp", "cm", "bp", "a1", "a2")) if hasattr(a, "snp") else a
    assert len(a) == len(b)
    for x, y in zip(a, b):
        if isinstance(x, np.ndarray):
            # Same kind and values; a str column is as wide as its own longest value (the general
            # tokenizer made every column as wide as the file's longest token).
            assert x.dtype.kind == y.dtype.kind, (x.dtype, y.dtype)
            if x.dtype.kind == "f":  # bit for bit: -0.0 and 0.0 apart
                np.testing.assert_array_equal(x.view(np.int64), y.view(np.int64))
            else:
                np.testing.assert_array_equal(x, y)
        else:
            assert x == y


NUMBERS = ["0", "-0", "7", "007", "-12", "123456789012345678", "1234567890123456789", "99999999999999999999",
           "+5", "1e3", "0.5", ".5", "5.", "-.25", "0.1", "2.675", "-0.0", "1.000000000000001", "123456789.0123456",
           "12345678901234.5", "1_000", "nan", "inf", "-", ".", "1.2.3", "0x10", "١٢"]


def _bim_line(rng, k, numbers):
    cm = rng.choice(numbers) if rng.random() < 0.3 else ("0" if rng.random() < 0.5 else f"{rng.random():.6f}")
    bp = rng.choice(numbers) if rng.random() < 0.3 else str(int(rng.integers(0, 3e8)))
    sep = rng.choice([" ", "\t", "  ", " \t "])
    ident = rng.choice([f"rs{k}", f"snp_{k}", f"é{k}", f"{k}:A:G", f"x{'y' * int(rng.integers(0, 80))}{k}"])
    return sep.join([str(rng.choice(["1", "chr2", "X", "MT", "26"])), ident, cm, bp, str(rng.choice(["A", "CT", "-"])),
                     "G"])


@pytest.mark.parametrize("seed", range(40))
def test_bim_parse_equals_the_general_tokenizer(tmp_path, seed):
    rng = np.random.default_rng(seed)
    numbers = NUMBERS if seed % 2 else ["0", "-0", "7", "0.5", "-.25", "5.", "2.675", "123456789012345678"]
    lines = [_bim_line(rng, k, numbers) for k in range(int(rng.integers(1, 60)))]
    if seed % 5 == 0:
        lines.insert(int(rng.integers(0, len(lines))), "# a comment line")
        lines.insert(int(rng.integers(0, len(lines))), "   ")
    if seed % 7 == 0:
        lines.insert(int(rng.integers(0, len(lines))), "1 short 0 5 A")
    if seed % 9 == 0:
        lines.append(lines[0])  # a duplicate ID (accepted by both)
    text = ("\r\n" if seed % 3 == 0 else "\n").join(lines) + ("" if seed % 4 == 0 else "\n")
    data = text.encode()
    if seed % 8 == 1:
        data = b"\xef\xbb\xbf" + data
    path = tmp_path / "s.bim"
    path.write_bytes(data)
    same(outcome(read_bim, str(path)), outcome(reference_bim, str(path)))


def test_bim_parse_agrees_on_float_tokens_of_every_length(tmp_path):
    rng = np.random.default_rng(5)
    tokens = []
    for _ in range(3000):
        digits = "".join(rng.choice(list("0123456789"), int(rng.integers(1, 17))))
        cut = int(rng.integers(0, len(digits) + 1))
        tokens.append(("-" if rng.random() < 0.3 else "") + digits[:cut] + "." + digits[cut:])
    path = tmp_path / "f.bim"
    path.write_text("".join(f"1 s{k} {t} {k} A G\n" for k, t in enumerate(tokens)))
    same(read_bim(str(path)), reference_bim(str(path)))


@pytest.mark.parametrize("body", [b"", b"\n\n", b"# only a comment\n", b"1 a 0 1 A G\n\xff\xfe 2 0 1 A G\n",
                                  b"1 a 0 1 A G\n1 b 0 x A G\n", b"1 a 0 1 A G extra\n", b"1 a 0 1 A G\n2 a 0 2 A G\n",
                                  b"1\x0ba\x0c0 1\tA G\n", b"1 a 0 1 A G\r2 b 0 2 A G\n"])
def test_bim_edge_cases_and_messages_equal_the_general_tokenizer(tmp_path, body):
    path = tmp_path / "e.bim"
    path.write_bytes(body)
    same(outcome(read_bim, str(path)), outcome(reference_bim, str(path)))


@pytest.mark.parametrize("seed", range(12))
def test_fam_parse_equals_the_general_tokenizer(tmp_path, seed):
    rng = np.random.default_rng(seed)
    rows = []
    for k in range(int(rng.integers(1, 40))):
        fid = rng.choice([f"f{k}", "fam", f"ü{k % 3}"])
        iid = rng.choice([f"i{k}", f"i{k % 5}", f"ind_{k}"])
        rows.append(" ".join([str(fid), str(iid), str(rng.choice(["0", "p1"])), str(rng.choice(["0", "m1"])),
                              str(rng.choice(["1", "2", "0", "x"])), str(rng.choice(["1", "2", "-9", "0", "1.5"]))]))
    path = tmp_path / "s.fam"
    path.write_text("\n".join(rows) + "\n")
    same(outcome(_read_fam_columns, str(path)), outcome(reference_fam, str(path)))


def test_a_million_line_bim_parses_at_memory_speed(tmp_path):
    """Not a timing (SPEC §7): the fast path must be taken on an ordinary .bim (the general one
    would take seconds). Checked through what it returns: the same table as the reference."""
    p = 20000
    path = tmp_path / "big.bim"
    path.write_text("".join(f"{1 + k // 2000}\trs{k * 7}\t0\t{1000 + k * 10}\tA\tG\n" for k in range(p)))
    same(read_bim(str(path)), reference_bim(str(path)))


@pytest.mark.parametrize("kind", ["int", "float"])
def test_the_decimal_fast_paths_are_taken_and_exact(kind):
    """Plain decimals take the vectorised path (not None) and give NumPy's cast, bit for bit;
    anything else declines (None) so that the general path, with its messages, runs."""
    from gboost.readers.plink_bed import _decimal_floats, _decimal_ints, _token_bounds

    rng = np.random.default_rng(11)
    tokens = []
    for _ in range(5000):
        digits = "".join(rng.choice(list("0123456789"), int(rng.integers(1, 16 if kind == "float" else 19))))
        if kind == "float" and rng.random() < 0.8:
            cut = int(rng.integers(0, len(digits) + 1))
            digits = digits[:cut] + "." + digits[cut:]
        tokens.append(("-" if rng.random() < 0.3 else "") + digits)
    chunk = ("\n".join(tokens) + "\n").encode()
    b, starts, ends, _ = _token_bounds(chunk, 1, 1, "x", ".bim", "v")
    fast = (_decimal_ints if kind == "int" else _decimal_floats)(b, starts[:, 0], ends[:, 0])
    assert fast is not None
    want = np.array(tokens, dtype=bytes).astype(np.int64 if kind == "int" else np.float64)
    np.testing.assert_array_equal(fast.view(np.int64), want.view(np.int64))
    for bad in (["1", "+2"], ["1e3"], ["1.5"] if kind == "int" else ["1.2.3"], ["-"], ["."]):
        b, starts, ends, _ = _token_bounds(("\n".join(bad) + "\n").encode(), 1, 1, "x", ".bim", "v")
        assert (_decimal_ints if kind == "int" else _decimal_floats)(b, starts[:, 0], ends[:, 0]) is None, bad


def _numpy_path(monkeypatch, fn, path):
    import gboost.readers.plink_bed as P

    with monkeypatch.context() as m:
        m.setattr(P, "_read_columns_compiled", lambda *a: None)
        got = outcome(fn, path)
    return tuple(getattr(got, f) for f in ("chrom", "snp", "cm", "bp", "a1", "a2")) if hasattr(got, "snp") else got


@pytest.mark.parametrize("seed", range(30))
def test_the_compiled_parse_equals_the_numpy_passes(tmp_path, monkeypatch, seed):
    """The compiled passes (gboost/readers/plink_bed.py) give the NumPy passes' table, value
    for value and dtype for dtype; on files they cannot take (non-ASCII, a short line, a number
    outside the decimal fast paths) they decline, or hand that column to NumPy's cast."""
    rng = np.random.default_rng(100 + seed)
    numbers = NUMBERS if seed % 3 == 0 else ["0", "-0", "7", "0.5", "-.25", "5.", "2.675", "123456789012345678"]
    lines = [_bim_line(rng, k, numbers) for k in range(int(rng.integers(1, 80)))]
    if seed % 2:
        lines = [ln.replace("é", "e") for ln in lines]
    if seed % 5 == 0:
        lines.insert(int(rng.integers(0, len(lines))), "#comment \x01 with a control byte")
        lines.insert(int(rng.integers(0, len(lines))), " \t ")
    if seed % 7 == 3:
        lines.insert(int(rng.integers(0, len(lines))), "1 short 0 5 A")
    text = ("\r\n" if seed % 4 == 0 else "\n").join(lines) + ("" if seed % 6 == 0 else "\n")
    path = tmp_path / "s.bim"
    path.write_bytes(text.encode())
    same(outcome(read_bim, str(path)), _numpy_path(monkeypatch, read_bim, str(path)))
    fam = tmp_path / "s.fam"
    odd = "\x02" if seed % 9 == 1 else ""  # a control byte inside an ID: part of the token
    fam.write_text("".join(f"f{k % 4} i{k}{odd} 0 0 {k % 3} {rng.choice(['1', '2', '-9'])}\n"
                           for k in range(int(rng.integers(1, 30)))))
    same(outcome(_read_fam_columns, str(fam)), _numpy_path(monkeypatch, _read_fam_columns, str(fam)))


def test_the_compiled_parse_is_taken_on_an_ordinary_bim_and_declines_otherwise():
    from gboost.readers.plink_bed import _read_columns_compiled

    kinds, names = ("text", "text", "float", "int", "text", "text"), {2: "cM position", 3: "base-pair position"}
    ok = b"1\trs1\t0\t1000\tA\tG\n# note\n\n1 rs2 0.25 -5 AT G\r\n"
    table = _read_columns_compiled(ok, kinds, names, ((1,),), "x.bim")
    assert table is not None
    (chrom, snp, cm, bp, a1, a2), lines, (h,) = table
    assert snp.tolist() == ["rs1", "rs2"] and snp.dtype == np.dtype("U3") and lines.tolist() == [1, 4]
    assert cm.tolist() == [0.0, 0.25] and bp.tolist() == [1000, -5] and a1.tolist() == ["A", "AT"]
    assert h[0] != h[1]
    for bad in (b"1 r\xc3\xa91 0 1 A G\n", b"1 rs1 0 1 A\n", b"1 rs1 0 1 A G x\n", b"1 rs\x001 0 1 A G\n", b"", b"\n \n"):
        assert _read_columns_compiled(bad, kinds, names, ((1,),), "x.bim") is None, bad


def _random_table(rng, n_lines: int, n_columns: int) -> bytes:
    """Lines of ``n_columns`` tokens with blank lines, comments, stray spaces and CRs, now and then
    a line of another length or a byte the compiled pass leaves to NumPy."""
    lines = []
    for _ in range(n_lines):
        r = rng.random()
        if r < 0.08:
            lines.append("")
        elif r < 0.16:
            lines.append("# a comment line")
        elif r < 0.17:
            lines.append(" ".join(["x"] * (n_columns + 1)))
        elif r < 0.175:
            lines.append("t\u00e9 " * n_columns)
        else:
            lines.append(" ".join(f"t{rng.integers(0, 10 ** rng.integers(1, 6))}" for _ in range(n_columns))
                         + (" \r" if rng.random() < 0.1 else ""))
    return ("\n".join(lines) + ("\n" if rng.random() < 0.5 else "")).encode()


@pytest.mark.parametrize("seed", range(40))
def test_the_table_read_in_chunks_equals_the_one_pass_reading(seed):
    """_table_bounds reads a file in chunks of whole lines on every core: cut anywhere (1 to 9
    chunks, whatever this machine's cores), the bounds, line numbers and verdict equal one chunk's
    (the serial pass), with blank and comment lines across the cuts (the packed and the gapped
    rows), a last line with or without its newline, and a bad line in any chunk."""
    from gboost.readers.plink_bed import _line_cuts, _table_bounds_chunks

    rng = np.random.default_rng(seed)
    n_columns = int(rng.integers(1, 7))
    data = _random_table(rng, int(rng.integers(0, 60)), n_columns)
    if seed % 4 == 0:  # no blank or comment line: the chunks' rows come out packed
        data = b"\n".join(x for x in data.split(b"\n") if x and not x.startswith(b"#") and b"x" not in x
                          and len(x.split()) == n_columns) + b"\n"
    b = np.frombuffer(data, dtype=np.uint8)
    one = _table_bounds_chunks(b, n_columns, np.array([0, len(b)], dtype=np.int64))
    for want in range(1, 10):
        cuts = _line_cuts(b, want)
        assert cuts[0] == 0 and cuts[-1] == len(b) and np.all(np.diff(cuts) > 0) | (len(b) == 0)
        assert all(b[c - 1] == 10 for c in cuts[1:-1])
        got = _table_bounds_chunks(b, n_columns, cuts)
        assert got[0] == one[0], (want, data)
        if one[0]:
            for x, y in zip(got[1:], one[1:]):
                assert np.array_equal(x, y), (want, data)
