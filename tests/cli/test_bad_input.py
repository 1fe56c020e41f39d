"""Every kind of bad input: exit code 2, one line naming the file and the problem,
no traceback, nothing written."""
import os
import shutil

import pytest

from gboost.cli import main
from gboost.data.simulate import simulate_study


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    prefix = str(tmp_path_factory.mktemp("bad") / "s")
    simulate_study(20, 10, 10, seed=9, chromosomes=2, missing_rate=0.02).write(prefix)
    return prefix


def lines(path):
    return open(path).read().splitlines(True)


def edit(path, fn):
    with open(path) as f:
        rows = f.read().splitlines(True)
    with open(path, "w") as f:
        f.writelines(fn(rows))


def set_col(rows, col, value, which=slice(None)):
    out = list(rows)
    for k in range(len(out))[which]:
        parts = out[k].split()
        parts[col] = value
        out[k] = " ".join(parts) + "\n"
    return out


def b(prefix, ext, data: bytes):
    with open(prefix + ext, "wb") as f:
        f.write(data)


CASES = {
    "wrong magic": (lambda p: b(p, ".bed", b"\x00\x00\x01" + open(p + ".bed", "rb").read()[3:]), ".bed", "6c 1b 01"),
    "individual-major": (lambda p: b(p, ".bed", b"\x6c\x1b\x00" + open(p + ".bed", "rb").read()[3:]), ".bed", "individual-major"),
    "truncated bed": (lambda p: b(p, ".bed", open(p + ".bed", "rb").read()[:-3]), ".bed", "bytes"),
    "bim shorter than bed": (lambda p: edit(p + ".bim", lambda r: r[:-1]), ".bed", "bytes"),
    "fam longer than bed": (lambda p: edit(p + ".fam", lambda r: r + ["Z Z 0 0 1 2\n"]), ".bed", "bytes"),
    "duplicate sample ID": (lambda p: edit(p + ".fam", lambda r: set_col(set_col(r, 0, "F", slice(0, 2)), 1, "I", slice(0, 2))), ".fam", "duplicate"),
    # (a value such as 3.7 makes the column a quantitative trait: the QT scan; nan cannot be one)
    "non-finite quantitative phenotype": (lambda p: edit(p + ".fam", lambda r: set_col(r, 5, "nan", slice(0, 1))), ".fam", "line 1"),
    "constant quantitative phenotype": (lambda p: edit(p + ".fam", lambda r: set_col(r, 5, "3.7")), ".fam", "3.7 for all"),
    "no cases": (lambda p: edit(p + ".fam", lambda r: set_col(r, 5, "1")), "", "case"),
    "no controls": (lambda p: edit(p + ".fam", lambda r: set_col(r, 5, "2")), "", "control"),
    "empty bim": (lambda p: open(p + ".bim", "w").close(), ".bim", "empty"),
    "empty fam": (lambda p: open(p + ".fam", "w").close(), ".fam", "empty"),
    "non-UTF-8 bim": (lambda p: b(p, ".bim", open(p + ".bim", "rb").read().replace(b"snp1\t", b"snp\xff\xfe1\t", 1)), ".bim", "utf-8"),
    "wrong column count in bim": (lambda p: edit(p + ".bim", lambda r: [r[0].rstrip("\n") + " extra\n"] + r[1:]), ".bim", "line 1"),
    "missing fam": (lambda p: os.remove(p + ".fam"), ".fam", ""),
}


@pytest.mark.parametrize("name", list(CASES))
def test_bad_fileset(clean, tmp_path, capsys, name):
    damage, ext, words = CASES[name]
    prefix = str(tmp_path / "s")
    for e in (".bed", ".bim", ".fam"):
        shutil.copy(clean + e, prefix + e)
    damage(prefix)
    out = tmp_path / "out"
    rc = main(["scan", "--bfile", prefix, "--out", str(out), "--device", "cpu", "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2
    assert len(err) == 1 and err[0].startswith("gboost: error:") and "Traceback" not in err[0]
    assert ("s" + ext) in err[0] if ext else "s" in err[0]
    assert words.lower() in err[0].lower(), err[0]
    assert not out.exists()


def test_every_snp_filtered_and_single_snp(clean, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["scan", "--bfile", clean, "--out", str(out), "--maf", "0.6", "--quiet"]) == 2
    assert "at least 2" in capsys.readouterr().err
    (tmp_path / "one.txt").write_text("snp1\n")
    assert main(["scan", "--bfile", clean, "--out", str(out), "--extract", str(tmp_path / "one.txt"), "--quiet"]) == 2
    assert "only 1 SNP" in capsys.readouterr().err
    assert not out.exists()


def test_malformed_pheno_and_ped(clean, tmp_path, capsys):
    pheno = tmp_path / "p.txt"
    pheno.write_text("F1\n")
    assert main(["scan", "--bfile", clean, "--pheno", str(pheno), "--out", str(tmp_path / "o"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "p.txt" in err and "line 1" in err
    (tmp_path / "x.ped").write_text("F1 I1 0 0 1 2 A A C\n")
    (tmp_path / "x.map").write_text("1 snp1 0 100\n1 snp2 0 200\n")
    assert main(["scan", "--ped", str(tmp_path / "x.ped"), "--map", str(tmp_path / "x.map"), "--out", str(tmp_path / "o"),
                 "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "x.ped" in err and "line 1" in err


def test_output_directory_that_exists_is_refused(clean, tmp_path, capsys):
    out = tmp_path / "o"
    out.mkdir()
    (out / "precious.txt").write_text("keep")
    assert main(["scan", "--bfile", clean, "--out", str(out), "--quiet"]) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert (out / "precious.txt").read_text() == "keep"


def test_disk_full_while_writing_keeps_previous_outputs(clean, tmp_path, capsys, monkeypatch):
    import errno

    import gboost.outputs.outdir as outdir

    out = tmp_path / "o"
    assert main(["scan", "--bfile", clean, "--out", str(out), "--quiet", "--device", "cpu"]) == 0
    before = {f: (out / f).read_bytes() for f in os.listdir(out)}
    real_open = os.open
    written = []

    def full_disk_open(path, flags, *a, **k):
        if flags & os.O_WRONLY and ".gboost-tmp-" in str(path):
            written.append(path)
            if len(written) == 3:  # the third output file hits a full disk (write() names no file)
                raise OSError(errno.ENOSPC, "No space left on device")
        return real_open(path, flags, *a, **k)

    monkeypatch.setattr(outdir.os, "open", full_disk_open)
    rc = main(["scan", "--bfile", clean, "--out", str(out), "--quiet", "--device", "cpu", "--overwrite", "--epi1", "0.01"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "No space left on device" in err[0]
    assert str(out) in err[0]  # the error names the file
    assert {f: (out / f).read_bytes() for f in before} == before
    assert not [p for p in os.listdir(out) if p.startswith(".gboost-tmp-")]  # temporaries cleaned up
    # The finished screen is checkpointed beside them: once space is freed, --resume writes the outputs.
    monkeypatch.undo()
    assert main(["scan", "--bfile", clean, "--out", str(out), "--quiet", "--device", "cpu", "--resume", "--epi1", "0.01"]) == 0
    assert sorted(os.listdir(out)) == sorted(before)


@pytest.mark.parametrize("cut, holds", [
    (1, "its size holds 19 whole SNPs of 20 samples and 4 bytes of another"),
    (5, "its size holds exactly 19 SNPs of 20 samples"),
])
def test_a_short_bed_says_how_many_whole_snps_it_holds(clean, tmp_path, capsys, cut, holds):
    """A .bed one byte short was said to fit as many SNPs as the .bim lists (the count rounded):
    the message gives the whole SNPs and the bytes left over."""
    prefix = str(tmp_path / "short")
    for ext in (".bim", ".fam"):
        shutil.copy(clean + ext, prefix + ext)
    data = open(clean + ".bed", "rb").read()
    open(prefix + ".bed", "wb").write(data[:-cut])
    assert main(["scan", "--bfile", prefix, "--out", str(tmp_path / "o"), "--quiet"]) == 2
    line = capsys.readouterr().err.strip()
    assert line.count("\n") == 0 and line.endswith(f"({holds})"), line
    assert not (tmp_path / "o").exists()
