"""PLINK 1.9's --fast-epistasis skip of SNPs with "fewer than two genotypes", to the bit
(gboost/data/plink_skips.py): hets and A1 homozygotes whose A1 homozygotes all lie in the first word of 32
scanned samples that holds a call are skipped by PLINK. Found by bench/parity_sweep.py --more-flags,
seed 506 (--mind left 32 samples: two such SNPs scanned by gboost, skipped by PLINK)."""
from __future__ import annotations

import subprocess

import numpy as np
import pytest

from gboost.data import plink_skips
from tests.helpers import NO_PLINK, PLINK, read

# .bed codes: 0 = A1/A1 (the .bim's column 5), 1 = missing, 2 = het, 3 = A2/A2
HOM1, MISS, HET, HOM2 = 0, 1, 2, 3
N = 70  # two whole words of 32 and a partial one of 6


def _quirky_snps(rng):
    """Code rows (name, codes, PLINK skips it) around the rule."""
    def het_row(first_call=0):
        row = np.full(N, HET)
        row[:first_call] = MISS
        return row

    rows = []
    r = het_row(); r[[3, 10]] = HOM1; r[20] = MISS
    rows.append(("hom1_in_word0", r, True))
    r = het_row(); r[[3, 40]] = HOM1
    rows.append(("hom1_in_word1_too", r, False))
    r = het_row(); r[[3]] = HOM1; r[66] = HOM1
    rows.append(("hom1_in_partial_word_too", r, False))
    r = het_row(40); r[[45, 50]] = HOM1
    rows.append(("first_call_in_word1", r, True))
    r = het_row(64); r[66] = HOM1
    rows.append(("calls_in_partial_word_only", r, False))
    r = het_row(); r[[3, 10]] = HOM2
    rows.append(("hom2_in_word0", r, False))
    r = het_row(); r[:32] = np.where(np.arange(32) % 3 == 0, HOM1, MISS)
    rows.append(("word0_hom1_only", r, False))
    r = het_row(); r[[3]] = HOM1; r[[0, 1, 2]] = MISS
    rows.append(("hom1_after_missing_in_word0", r, True))
    r = het_row(5); r[5] = HOM1
    rows.append(("hom1_before_het", r, True))
    r = het_row(5); r[5:32] = np.where(np.arange(5, 32) == 5, HOM1, MISS)
    rows.append(("word0_one_hom1", r, False))
    for k in range(6):  # ordinary SNPs, for pairs
        rows.append((f"plain{k}", rng.choice([HOM1, HET, HOM2], N, p=[0.3, 0.45, 0.25]), False))
    return rows


def _write_bed(prefix, rows):
    with open(prefix + ".bed", "wb") as f:
        f.write(bytes([0x6C, 0x1B, 0x01]))
        for _, codes, _ in rows:
            padded = np.concatenate([codes, np.zeros(-len(codes) % 4, dtype=int)]).reshape(-1, 4)
            f.write(bytes((padded * np.array([1, 4, 16, 64])).sum(axis=1).astype(np.uint8)))
    with open(prefix + ".bim", "w") as f:
        f.writelines(f"1\t{name}\t0\t{1000 * (k + 1)}\tA\tG\n" for k, (name, _, _) in enumerate(rows))
    with open(prefix + ".fam", "w") as f:
        f.writelines(f"f{k} i{k} 0 0 {1 + k % 2} {1 + (k // 2) % 2}\n" for k in range(N))


def _types(rows):
    return np.array([np.array([2, -1, 1, 0])[codes] for _, codes, _ in rows], dtype=np.int8)


def test_the_rule_on_each_shape():
    rows = _quirky_snps(np.random.default_rng(3))
    types = _types(rows)
    counts = np.stack([np.stack([(t == g).sum() * np.array([1, 0]) for g in range(3)]) for t in types])
    cand = plink_skips.candidates(counts)
    want = np.array([skip for _, _, skip in rows])
    got = np.zeros(len(rows), dtype=bool)
    got[cand] = plink_skips.skipped(types[cand])
    assert got.tolist() == want.tolist()
    assert plink_skips.skipped(types[cand][:, :31]).sum() == 0  # one partial word: counted exactly


def test_types_from_bed_rows(tmp_path):
    rows = _quirky_snps(np.random.default_rng(3))
    prefix = str(tmp_path / "q")
    _write_bed(prefix, rows)
    raw = np.fromfile(prefix + ".bed", dtype=np.uint8)[3:].reshape(len(rows), -1)
    cols = np.array([0, 3, 10, 40, 66, 69])
    assert np.array_equal(plink_skips.types_from_bed_rows(raw, np.arange(len(rows)), cols), _types(rows)[:, cols])


@pytest.mark.plink
@pytest.mark.skipif(PLINK is None, reason=NO_PLINK)
@pytest.mark.parametrize("source", ["bfile", "file"])
def test_skips_and_files_match_plink(tmp_path, source):
    from gboost.cli import main

    rows = _quirky_snps(np.random.default_rng(3))
    prefix = str(tmp_path / "q")
    _write_bed(prefix, rows)
    flag = ["--bfile", prefix]
    if source == "file":  # the calls path (a .ped), not the .bed's own bytes
        subprocess.run([PLINK, "--bfile", prefix, "--recode", "--keep-allele-order", "--out", prefix, "--silent"],
                       check=True)
        flag = ["--file", prefix]
    out = tmp_path / "g"
    assert main(["scan", *flag, "--out", str(out), "--device", "cpu", "--quiet", "--epi1", "0.5"]) == 0
    subprocess.run([PLINK, *flag, "--fast-epistasis", "boost", "--epi1", "0.5", "--out", str(tmp_path / "p"),
                    "--silent", "--threads", "2"], check=True)
    summary = read(tmp_path / "p.epi.cc.summary")
    scanned = {line.split()[1] for line in summary.splitlines()[1:]}
    # PLINK's codes for a .ped count the allele rarer over all samples: the homozygote beside hets is
    # then the other one (code 11), which PLINK judges right, so there the quirk never skips
    assert scanned == {name for name, _, skip in rows if not skip or source == "file"}
    assert read(out / "pairs.epi.cc.summary") == summary
    assert read(out / "pairs.epi.cc") == read(tmp_path / "p.epi.cc")


@pytest.mark.parametrize("background", [False, True])
def test_each_bed_path_skips_them(tmp_path, background):
    """The .bed's two passes (encode as it counts; count first, encode in the background) both skip
    what PLINK skips; so does the calls path (a source of int8 calls: the .bed read as a .ped would be)."""
    from gboost.readers.plink_bed import open_bfile
    from gboost.data.load import load_study, load_with_encoder

    rows = _quirky_snps(np.random.default_rng(3))
    prefix = str(tmp_path / "q")
    _write_bed(prefix, rows)
    if background:
        study, planes = load_with_encoder(open_bfile(prefix))
        with planes:
            planes.wait()
    else:
        study = load_study(open_bfile(prefix))
    assert set(study.variants.snp) == {name for name, _, skip in rows if not skip}
    assert study.qc.snps_monomorphic == sum(skip for _, _, skip in rows)


def test_the_calls_path_skips_them(tmp_path):
    from gboost.readers.ped import ArraySource
    from gboost.readers.plink_bed import open_bfile
    from gboost.data.load import load_study

    rows = _quirky_snps(np.random.default_rng(3))
    prefix = str(tmp_path / "q")
    _write_bed(prefix, rows)
    bed = open_bfile(prefix)
    calls = np.where(_types(rows) >= 0, _types(rows), -1).astype(np.int8)  # types are copies of the .bim's A1
    study = load_study(ArraySource(prefix, bed.variants, bed.samples, calls))
    assert set(study.variants.snp) == {name for name, _, skip in rows if not skip}


def test_candidates_stop_at_a_word_of_code00_homozygotes():
    """The skip needs every code-00 homozygote in one word of 32 samples: a SNP with 33 is no
    candidate (a fileset whose A1 is the major allele must not send its common SNPs through the
    per-sample look), one with 32 still is, and the look agrees where it is given the 33."""
    def counts(t0, t1, t2):
        return np.array([[t0, 0], [t1, 0], [t2, 0]], dtype=np.int64)

    c = np.stack([counts(0, 5, 32), counts(0, 5, 33), counts(1, 5, 3), counts(0, 0, 40)])
    assert plink_skips.candidates(c).tolist() == [0]
    types = np.full((1, 96), 1, dtype=np.int8)
    types[0, :33] = 2  # 33 code-00 homozygotes cannot share a word of 32
    assert not plink_skips.skipped(types)[0]
    types[0, 0] = types[0, 32] = 1  # now 31, all in the first word, beside a het: skipped
    assert plink_skips.skipped(types)[0]
