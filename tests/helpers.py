"""Helpers shared by test modules (test modules import from here, never from each other or from
conftest): random studies and the named studies several folders use (the LD-rich study, the
formats study, the QC fileset), the PLINK oracle's runs and comparisons, a stand-in CuPy, GPU
availability and the GPU engine's comparisons with the CPU engine.

GPU tests carry one marker, ``@pytest.mark.gpu`` (``mma=True``: binary tensor cores needed;
``devices=2``: two GPUs): tests/conftest.py skips them, with the reason, where that is missing.
"""
from __future__ import annotations

import math
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from gboost.engines.base import Thresholds, TileResult
from gboost.outputs.results import format_epi_cc, format_summary
from gboost.data.simulate import PlantedPair, simulate_study, write_bfile
from gboost.stats.pvalues import thresholds_by_df
from gboost.data.study import QCOptions, study_from_genotypes

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def random_genotypes(rng: np.random.Generator, p: int, n: int, *, missing: float = 0.02,
                     case_frac: float = 0.5, monomorphic: int = 0):
    """Random HWE genotypes with MAFs 0.05-0.5, a missing-call rate, and some monomorphic SNPs."""
    maf = rng.uniform(0.05, 0.5, p)
    g = rng.binomial(2, maf[:, None], (p, n)).astype(np.int8)
    if monomorphic:
        idx = rng.choice(p, monomorphic, replace=False)
        g[idx] = rng.integers(0, 3, monomorphic)[:, None]
    g[rng.random((p, n)) < missing] = -1
    is_case = rng.random(n) < case_frac
    is_case[0], is_case[-1] = True, False  # both classes present
    return g, is_case



# --- named studies ------------------------------------------------------------------------------

# An LD-rich study, shaped like a real chip: haplotype blocks with r^2 up to ~1, rare alleles, 1 %
# missing calls, chromosome X with males hemizygous, a few samples of unknown sex, and a planted pair
# (the PLINK parity tests, the GPU tests, the background encode's and the overlap's tests).
LD_ARGS = dict(chromosomes=["1", "2", "X"], missing_rate=0.01, maf_range=(0.01, 0.5), ld_block=20, ld_rho=0.97,
               unknown_sex=0.02, planted=[PlantedPair(9, 1499, "xor", 4.0)])


def ld_study(n_snps: int = 3000, n_cases: int = 600, n_controls: int = 600, seed: int = 3):
    return simulate_study(n_snps, n_cases, n_controls, seed=seed, **LD_ARGS)


def flip_every_other_snp(genotypes: np.ndarray) -> np.ndarray:
    """The same study with A1 the major allele at every other SNP (0 <-> 2 copies; missing kept)."""
    g = genotypes.copy()
    odd = g[1::2]
    g[1::2] = np.where(odd < 0, odd, 2 - odd)
    return g


def write_ld_study(prefix: str, *, flipped: bool = False, **kw) -> str:
    sim = ld_study(**kw)
    g = flip_every_other_snp(sim.genotypes) if flipped else sim.genotypes
    write_bfile(prefix, g, sim.variants, sim.samples)
    return prefix


# A small study in every format gboost reads, for the readers' tests: one simulated PLINK 1 fileset
# (chromosomes 1, 2 and X, 3 % missing calls, LD blocks, 10 % of samples of unknown sex) converted by
# plink2 itself: ``--make-pgen`` (also with a zstd .pvar), ``--export vcf``, ``vcf bgz``, ``bcf`` and
# ``bgen-1.2``. A reader that equals the .bed path on these equals ``plink2 --make-bed`` of the same file.
PLINK2 = shutil.which("plink2")
needs_plink2 = pytest.mark.skipif(PLINK2 is None, reason="plink2 not on PATH (apt-get install plink2; scripts/setup.sh "
                                                          "installs it)")


def plink2(*args: str) -> None:
    subprocess.run([PLINK2, *args, "--silent"], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def make_formats_study(folder) -> str:
    """Write ``folder/s.*`` and its conversions; returns the prefix ``folder/s``."""
    prefix = os.path.join(folder, "s")
    simulate_study(120, 70, 70, seed=19, chromosomes=["1", "2", "X"], missing_rate=0.03, ld_block=6,
                   unknown_sex=0.1, planted=[PlantedPair(3, 50, "xor", 4.0)]).write(prefix)
    plink2("--bfile", prefix, "--make-pgen", "--out", prefix)
    plink2("--bfile", prefix, "--make-pgen", "vzs", "--out", prefix + "_zst")
    plink2("--bfile", prefix, "--export", "vcf", "--out", prefix)
    plink2("--bfile", prefix, "--export", "vcf", "bgz", "--out", prefix + "_bgz")
    plink2("--bfile", prefix, "--export", "bcf", "--out", prefix)
    plink2("--bfile", prefix, "--export", "bgen-1.2", "--out", prefix)
    plink2("--bfile", prefix, "--export", "bgen-1.3", "--out", prefix + "_13")  # zstd-compressed
    plink2("--bfile", prefix, "--export", "bgen-1.1", "--out", prefix + "_11")  # layout 1: refused
    # The same .bed without sexes: what a VCF holds (see tests/parity/test_formats.py)
    for ext in (".bed", ".bim"):
        shutil.copy(prefix + ext, prefix + "_nosex" + ext)
    with open(prefix + ".fam") as src, open(prefix + "_nosex.fam", "w") as dst:
        for line in src:
            f = line.split()
            f[4] = "0"
            dst.write(" ".join(f) + "\n")
    # --pheno files naming the samples as a VCF reader does: FID 0 and IID FID_IID (plink2's
    # export pastes FID_IID; PLINK 2's import keeps the whole ID as IID), or FID/IID split at '_'
    with open(prefix + ".fam") as src, open(prefix + "_vcf.pheno", "w") as a, open(prefix + ".pheno", "w") as b:
        for line in src:
            f = line.split()
            a.write(f"0 {f[0]}_{f[1]} {f[5]}\n")
            b.write(f"{f[0]} {f[1]} {f[5]}\n")
    return prefix


def write_qc_fileset(tmp: Path) -> tuple[Path, str]:
    """Missing calls varying by SNP and sample, HWE departures (X too), sex chromosomes, XY/MT/0,
    monomorphic SNPs of every kind, missing phenotypes and non-founders, in ``tmp`` with an --extract
    and an --exclude list; returns ``(tmp, prefix)`` (the ``qc_fileset`` fixture of tests/conftest.py)."""
    chroms = ["1", "2", "0", "X", "Y", "XY", "MT"]
    sim = simulate_study(700, 160, 150, seed=21, chromosomes=chroms, maf_range=(0.004, 0.5))
    rng = np.random.default_rng(4)
    g, chrom = sim.genotypes, sim.variants.chrom
    g[rng.random(g.shape) < rng.uniform(0, 0.12, len(g))[:, None]] = -1
    g[:, :8][rng.random((len(g), 8)) < 0.25] = -1  # a few samples with many missing calls
    auto = np.flatnonzero(np.isin(chrom, ["1", "2"]))
    g[auto[:6]] = np.where(rng.random((6, g.shape[1])) < 0.5, 0, 2)  # no heterozygotes
    females = sim.samples.sex == 2
    x = np.flatnonzero(chrom == "X")[:3]
    g[np.ix_(x, np.flatnonzero(females))] = np.where(rng.random((3, int(females.sum()))) < 0.5, 0, 2)
    sim.samples.status[10:25] = 0  # missing phenotypes
    pheno_missing = np.flatnonzero(sim.samples.status == 0)
    g[auto[10]] = 0                      # monomorphic
    g[auto[11]] = 1                      # all heterozygous: one genotype class
    g[auto[12]] = 2
    g[auto[12], ::9] = -1                # one class plus missing calls
    g[auto[13]] = 0
    g[auto[13], pheno_missing] = 2       # polymorphic only through samples without phenotype
    g[auto[14]] = 0
    g[auto[14], 30] = 1                  # a single het: polymorphic
    g[auto[15]] = -1                     # all missing
    prefix = str(tmp / "qc")
    sim.write(prefix)
    fam = (tmp / "qc.fam").read_text().splitlines()
    for k in range(30, 45):  # non-founders: their calls do not count in --maf/--hwe
        t = fam[k].split()
        t[2] = "someone"
        fam[k] = " ".join(t)
    (tmp / "qc.fam").write_text("\n".join(fam) + "\n")
    snps = sim.variants.snp
    (tmp / "extract.txt").write_text(" ".join(snps[::2]) + "\n" + "\n".join(snps[1:300:3]) + "\nnot_a_snp\n")
    (tmp / "exclude.txt").write_text("\n".join(snps[::7]) + "\n")
    return tmp, prefix


# --- QC flags and the QCOptions they give (the QC fileset's cases)
QC_CASES = {
    "none": ([], QCOptions()),
    "maf": (["--maf", "0.05"], QCOptions(maf=0.05)),
    "geno": (["--geno", "0.06"], QCOptions(geno=0.06)),
    "mind": (["--mind", "0.1"], QCOptions(mind=0.1)),
    "hwe": (["--hwe", "1e-4"], QCOptions(hwe=1e-4)),
    "all": (["--mind", "0.08", "--geno", "0.07", "--hwe", "1e-3", "--maf", "0.02"],
            QCOptions(mind=0.08, geno=0.07, hwe=1e-3, maf=0.02)),
    "chr": (["--chr", "1,XY,26", "--maf", "0.1"], QCOptions(chrom=["1", "XY", "26"], maf=0.1)),
    "extract-exclude": (["--extract", "extract.txt", "--exclude", "exclude.txt", "--geno", "0.05"],
                        QCOptions(extract="extract.txt", exclude="exclude.txt", geno=0.05)),
}


def bed_rows(codes: np.ndarray) -> np.ndarray:
    """2-bit .bed codes ``(b, n)`` packed as a .bed stores them: 4 samples a byte, low bits first."""
    b, n = codes.shape
    padded = np.zeros((b, -(-n // 4) * 4), np.uint8)
    padded[:, :n] = codes
    q = padded.reshape(b, -1, 4)
    return (q[:, :, 0] | (q[:, :, 1] << 2) | (q[:, :, 2] << 4) | (q[:, :, 3] << 6)).astype(np.uint8)


def qt_study_of(g: np.ndarray, y: np.ndarray, flip: np.ndarray | None = None):
    """A quantitative-trait study of genotypes ``g`` ((p, n) copies of the .bim's A1, -1 missing) and
    trait ``y``, the SNPs ``flip`` counting the .bim's A2 (PLINK's A1 there), and the dosages of
    PLINK's A1 each SNP's test counts: (study, dosages)."""
    p, n = g.shape
    st = study_from_genotypes(g, np.zeros(n, bool))
    st.trait = y
    st.a1_flip = np.zeros(p, bool) if flip is None else flip
    dose = g.astype(np.int64)
    if flip is not None:
        dose[flip] = np.where(g[flip] >= 0, 2 - g[flip], -1)
    return st, dose


def write_set_files(folder, prefix: str, ten_extra: tuple = ()) -> dict:
    """The candidate-set files the set-scan parity tests share (case-control and QT), written into
    ``folder`` for the fileset ``prefix``: one SNP, ten (and ``ten_extra``: more SNPs by index),
    many (one absent from the .bim, two of the skipped X chromosome), two overlapping sets, two
    identical ones, one set to scan within, and --make-set ranges; {name: path}."""
    bim = [line.split() for line in open(prefix + ".bim", encoding="utf-8")]
    snps, chroms, bp = [b[1] for b in bim], [b[0] for b in bim], [b[3] for b in bim]
    x = [s for s, c in zip(snps, chroms) if c == "X"]
    files = {
        "one": f"S1\n{snps[9]}\nEND\n",
        "ten": "TEN\n" + " ".join([snps[k] for k in range(3, 120, 12)] + [snps[k] for k in ten_extra]) + "\nEND\n",
        "many": "MANY\n" + "\n".join(snps[k] for k in range(0, 100, 2)) + f"\nnot_a_snp\n{x[0]}\n{x[1]}\nEND\n",
        "overlap": ("A\n" + " ".join(snps[k] for k in range(5, 40, 3)) + "\nEND\n"
                    "B\n" + " ".join(snps[k] for k in range(20, 80, 4)) + f" {snps[5]} missing_id\nEND\n"),
        "identical": ("A\n" + " ".join(snps[k] for k in range(10, 50, 5)) + "\nEND\n"
                      "A2\n" + " ".join(snps[k] for k in range(10, 50, 5)) + "\nEND\n"),
        "within": "W\n" + " ".join(snps[k] for k in range(0, 90, 3)) + "\nEND\n",
        # ranges: names out of natural order (PLINK sorts them: g2 before g10), a point range
        "ranges": (f"{chroms[0]} {bp[0]} {bp[14]} g10\n{chroms[60]} {bp[60]} {bp[75]} g2\n"
                   f"{chroms[3]} {bp[3]} {bp[3]} g10\n"),
    }
    paths = {}
    for name, text in files.items():
        path = Path(folder) / f"{name}.txt"
        path.write_text(text)
        paths[name] = str(path)
    return paths


def assert_foreign_set_parts_refused(two_parts, paths: dict, folder, capsys) -> None:
    """``gboost merge`` refuses, in one line saying why, a set scan's part beside a part of other sets
    or of a plain scan (case-control and QT): ``two_parts(folder, *flags)`` scans the two parts."""
    from gboost.cli import main

    a = two_parts(folder / "a", "--set", paths["ten"], "--set-by-all")
    b = two_parts(folder / "b", "--set", paths["one"], "--set-by-all")
    plain = two_parts(folder / "plain")
    for dirs, words in (([a[0], b[1]], "other sets"), ([a[0], plain[1]], "plain scan's part"),
                        ([plain[0], a[1]], "candidate-set scan's part")):
        capsys.readouterr()
        assert main(["merge", *dirs, "--out", str(folder / "m"), "--quiet"]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and words in err, err


# --- PLINK 1.9, the oracle ---------------------------------------------------------------------

PLINK = shutil.which("plink1.9") or shutil.which("plink")
NO_PLINK = "plink1.9 not on PATH (apt-get install plink1.9; .ci/run installs it)"
needs_plink = pytest.mark.skipif(PLINK is None, reason=NO_PLINK)


def plink(*args: str, cwd) -> str:
    """Run PLINK 1.9 in ``cwd`` and return its log; fail the test with the log on a non-zero exit."""
    proc = subprocess.run([PLINK, *args], cwd=cwd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def run_both(prefix: str, tmp_path, epi1: float | None = None, extra: list[str] | None = None):
    out = tmp_path / f"gboost_{epi1}"
    args = ["scan", "--bfile", prefix, "--out", str(out), "--device", "cpu", "--quiet", *(extra or [])]
    plink = [PLINK, "--bfile", prefix, "--fast-epistasis", "boost", "--out", str(tmp_path / f"plink_{epi1}"),
             "--threads", "2", "--silent", *(extra or [])]
    if epi1 is not None:
        args += ["--epi1", str(epi1)]
        plink += ["--epi1", str(epi1)]
    from gboost.cli import main as gboost_main

    assert gboost_main(args) == 0
    subprocess.run(plink, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return out, tmp_path / f"plink_{epi1}"


def read_tsv(path) -> tuple[list[dict], list[str]]:
    """A tab-separated output (pairs.tsv, perm.tsv) as its rows (dicts of text by column) and header."""
    lines = open(path).read().splitlines()
    head = lines[0].split("\t")
    return [dict(zip(head, line.split("\t"))) for line in lines[1:]], head


def read(path) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


def assert_parity(out, plink, epi1: float, min_rows: int = 1):
    ours_cc, theirs_cc = read(out / "pairs.epi.cc"), read(f"{plink}.epi.cc")
    assert ours_cc == theirs_cc, _first_diff(ours_cc, theirs_cc)
    ours_sum, theirs_sum = read(out / "pairs.epi.cc.summary"), read(f"{plink}.epi.cc.summary")
    assert ours_sum == theirs_sum, _first_diff(ours_sum, theirs_sum)
    rows = [line.split() for line in theirs_cc.splitlines()[1:]]
    assert len(rows) >= min_rows
    # A screened pair whose exact STAT sits just under the threshold prints P as epi1 itself
    # ("0.01") although its P is above it: at PLINK's printed precision the row is ambiguous, so
    # those rows are checked against our own P instead.
    boundary = f"{epi1:.4g}"
    expected = {(r[1], r[3]): (r[4], r[5], r[6]) for r in rows
                if r[6] != "NA" and float(r[6]) <= epi1 and r[6] != boundary}
    ambiguous = {(r[1], r[3]) for r in rows if r[6] == boundary}
    tsv = [line.split("\t") for line in read(out / "pairs.tsv").splitlines()]
    assert tsv[0][:10] == ["CHR1", "SNP1", "BP1", "CHR2", "SNP2", "BP2", "KSA", "STAT", "DF", "P"]
    got = {(r[1], r[4]): r for r in tsv[1:]}
    assert set(got) - ambiguous == set(expected)
    assert all(float(got[k][9]) <= epi1 for k in set(got) & ambiguous)
    for key, (stat, df, p) in expected.items():
        r = got[key]
        assert r[8] == df
        # pairs.tsv carries 10 digits; they must round to PLINK's printed 6 (STAT) and 4 (P).
        assert abs(float(r[7]) - float(stat)) <= 0.51 * 10 ** (math.floor(math.log10(float(stat))) - 5), (key, r[7], stat)
        assert abs(float(r[9]) - float(p)) <= 0.51 * 10 ** (math.floor(math.log10(float(p))) - 3), (key, r[9], p)
    stats = [float(r[7]) for r in tsv[1:]]
    assert stats == sorted(stats, reverse=True)
    return len(rows), len(expected)


def _first_diff(a: str, b: str) -> str:
    for n, (x, y) in enumerate(zip(a.splitlines(), b.splitlines())):
        if x != y:
            return f"first difference at line {n + 1}:\n gboost {x!r}\n plink  {y!r}"
    return f"line counts differ: gboost {len(a.splitlines())}, plink {len(b.splitlines())}"



# --- a stand-in CuPy ----------------------------------------------------------------------------
# For tests of what gboost reports about a GPU on machines without one (gboost doctor, setup.sh's
# detection, gboost warm, the early GPU start): enough of cupy.cuda.runtime, nvrtc and Device for
# gboost.engines.gpu_available, gboost.cli.doctor and gboost.cli.warm, nothing that builds or runs a kernel
# (the GPU engine fails on it as on a GPU whose driver or NVRTC is broken).

FAKE_CUPY_RUNTIME = '''
DEVICES = {devices}
def getDeviceCount():
    return DEVICES
def getDeviceProperties(d):
    return {{"name": b"Fake GPU X100", "major": 9, "minor": 0, "totalGlobalMem": 80 * 2**30}}
def runtimeGetVersion():
    return 13000
def driverGetVersion():
    return 13010
'''


def write_fake_cupy(folder: Path, *, devices: int = 1, broken: bool = False) -> str:
    """Write a package ``cupy`` under ``folder`` (put it on PYTHONPATH); returns ``folder``.

    ``devices``: how many GPUs it says it sees; ``broken``: importing it fails as a CuPy built for
    another CUDA does."""
    pkg = folder / "cupy"
    (pkg / "cuda").mkdir(parents=True, exist_ok=True)
    if broken:
        (pkg / "__init__.py").write_text("raise ImportError('libnvrtc.so.13: cannot open shared object file')\n")
        return str(folder)
    (pkg / "__init__.py").write_text("__version__ = '99.0.0'\nfrom cupy import cuda\n")
    (pkg / "cuda" / "__init__.py").write_text(
        "from cupy.cuda import runtime, nvrtc\n\n\nclass Device:\n    compute_capability = '90'\n\n"
        "    def __init__(self, device_id=0):\n        self.id = device_id\n")
    (pkg / "cuda" / "runtime.py").write_text(FAKE_CUPY_RUNTIME.format(devices=devices))
    (pkg / "cuda" / "nvrtc.py").write_text("def getVersion():\n    return (13, 0)\n")
    return str(folder)


# --- the GPU engine ----------------------------------------------------------------------------

def gpu_unavailable() -> str | None:
    """None when CuPy imports and sees a GPU; else why not."""
    try:
        import cupy
    except Exception as exc:  # ImportError, or a CUDA library error at import
        return f"CuPy is not importable ({type(exc).__name__}: {exc})"
    try:
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        return f"CuPy sees no CUDA device ({type(exc).__name__}: {exc})"
    return None if n > 0 else "CuPy sees no CUDA device"


def gpu_count() -> int:
    if gpu_unavailable() is not None:
        return 0
    import cupy

    return cupy.cuda.runtime.getDeviceCount()


def mma_unavailable() -> str | None:
    """None when device 0 has binary mma (compute capability 8.0+); else why not."""
    why = gpu_unavailable()
    if why is not None:
        return why
    import cupy

    props = cupy.cuda.runtime.getDeviceProperties(0)
    cc = 10 * int(props["major"]) + int(props["minor"])
    return None if cc >= 80 else f"binary mma needs compute capability 8.0+, device 0 has {cc / 10:.1f}"


def gpu_skip_reason(*, mma: bool = False, devices: int = 1) -> str | None:
    """Why a test marked ``gpu(mma=..., devices=...)`` cannot run here (None: it can)."""
    why = gpu_unavailable()
    if why is not None:
        return f"needs a GPU with binary mma: {why}" if mma else f"needs an NVIDIA GPU with CuPy: {why}"
    if mma and mma_unavailable() is not None:
        return mma_unavailable()
    if devices > 1 and gpu_count() < devices:
        return f"needs {devices} GPUs ({gpu_count()} visible)"
    return None


def gpu_study(p, n, n_case, *, missing=0.02, seed=0, fully_called=0, monomorphic=(), all_missing=(), maf=(0.03, 0.5)):
    """Random genotypes; the first ``fully_called`` SNPs without missing calls (so tiles mix the
    kernel's counting modes), some SNPs monomorphic or never called."""
    rng = np.random.default_rng(seed)
    f = rng.uniform(*maf, p)
    g = rng.binomial(2, f[:, None], (p, n)).astype(np.int8)
    miss = rng.random((p, n)) < missing
    miss[:fully_called] = False
    g[miss] = -1
    for k in monomorphic:
        g[k] = np.where(g[k] < 0, -1, 2)
    for k in all_missing:
        g[k] = -1
    is_case = np.zeros(n, bool)
    is_case[rng.choice(n, n_case, replace=False)] = True
    return study_from_genotypes(g, is_case)


def gpu_engine(**kw):
    """A GPU engine on device 0 alone unless ``gpus`` says otherwise: these tests look at one
    device's behaviour (its back-offs, its faults, its upload); test_two_gpus_* covers several."""
    from gboost.engines.gpu import GpuEngine

    return GpuEngine(**{"gpus": [0], **kw})


def assert_scan_equal(got, want) -> None:
    a, b = got.screened, want.screened
    assert len(b) > 0
    np.testing.assert_array_equal(a.i, b.i)
    np.testing.assert_array_equal(a.j, b.j)
    np.testing.assert_array_equal(a.df, b.df)
    np.testing.assert_array_equal(a.tables, b.tables)
    np.testing.assert_allclose(a.stat, b.stat, rtol=1e-6)
    np.testing.assert_allclose(a.ksa, b.ksa, rtol=1e-10)
    assert got.n_valid == want.n_valid
    for f in ("n_sig", "n_tot", "best_partner"):
        np.testing.assert_array_equal(getattr(got.summary, f), getattr(want.summary, f))
    np.testing.assert_allclose(got.summary.best, want.summary.best, rtol=1e-10)
    assert format_epi_cc(got) == format_epi_cc(want)
    assert format_summary(got) == format_summary(want)


LOOSE = Thresholds(thresholds_by_df(0.05), thresholds_by_df(0.2))  # plenty of survivors and non-survivors


# A study whose planes stream from the host under a small memory limit
STREAMED = dict(p=300, n=700, n_case=330, missing=0.02, fully_called=150, seed=5)


def assert_tile_equal(got: TileResult, want: TileResult) -> None:
    assert got.tile == want.tile
    np.testing.assert_array_equal(got.surv_i, want.surv_i)
    np.testing.assert_array_equal(got.surv_j, want.surv_j)
    np.testing.assert_array_equal(got.surv_tables, want.surv_tables)
    np.testing.assert_allclose(got.surv_ksa, want.surv_ksa, rtol=1e-10, atol=1e-10)
    assert got.n_valid == want.n_valid
    for g, w in ((got.rows, want.rows), (got.cols, want.cols)):
        assert g.start == w.start
        np.testing.assert_array_equal(g.n_sig, w.n_sig)
        np.testing.assert_array_equal(g.n_tot, w.n_tot)
        np.testing.assert_array_equal(g.best_partner, w.best_partner)
        np.testing.assert_array_equal(np.isneginf(g.best), np.isneginf(w.best))
        fin = np.isfinite(w.best)
        np.testing.assert_allclose(g.best[fin], w.best[fin], rtol=1e-10, atol=1e-10)


def tiles_of(engine, study, thresholds, tiles):
    engine.prepare(study, thresholds)
    try:
        return [engine.run_tile(t) for t in tiles]
    finally:
        engine.close()


def pool_baseline() -> int:
    """The bytes CuPy's pool holds for live arrays, after a collection: arrays of earlier tests kept
    only by reference cycles would otherwise be freed later, by whichever collection comes, and a
    memory limit set from this baseline would then leave the engine that much more room than meant."""
    import gc

    import cupy

    gc.collect()
    pool = cupy.get_default_memory_pool()
    pool.free_all_blocks()
    return pool.used_bytes()


def two_rate_study(p=192, n=1200, n_case=600, rates=(0.005, 0.08), heavy_every=8, seed=21):
    """Random genotypes, every ``heavy_every``-th SNP missing calls at rates[1], the others at rates[0]."""
    rng = np.random.default_rng(seed)
    g = rng.binomial(2, rng.uniform(0.03, 0.5, p)[:, None], (p, n)).astype(np.int8)
    rate = np.where(np.arange(p) % heavy_every == 0, rates[1], rates[0])
    g[rng.random((p, n)) < rate[:, None]] = -1
    is_case = np.zeros(n, bool)
    is_case[rng.choice(n, n_case, replace=False)] = True
    return study_from_genotypes(g, is_case)


def missing_lists_of(study, chunk=64, *, any_rate=False):
    """gt and the lists of ``study``, chunk by chunk as the upload lands them (chunks of whole groups);
    ``any_rate``: listed whatever the study's average missing-call rate (for the arithmetic's tests)."""
    from gboost.engines.gpu import missing_lists as ml

    lay = study.layout
    p, W = study.n_snps, lay.n_words
    low = ml.RATE_BREAK_EVEN
    try:
        if any_rate:
            ml.RATE_BREAK_EVEN = 1.0
        plan = ml.plan_lists(study.counts, lay.n_ctrl, lay.n_case, study.has_missing)
    finally:
        ml.RATE_BREAK_EVEN = low
    S = 64 * W
    gt = np.full(ml.groups(p) * 3 * S, 0xDEADBEEF, dtype=np.uint32)  # every word must be written
    lst = np.full(p * 2 * max(plan.width, 1), 0xFFFF, dtype=np.uint16)
    planes = np.ascontiguousarray(study.planes, dtype=np.uint64)
    for o in range(0, p, chunk):
        x = planes[o:o + chunk]
        ml.transpose_ref(x, len(x), W, o // 32, S, gt)
        if plan.listed:
            ml.lists_ref(x, len(x), W, lay.w_ctrl, lay.n_ctrl, lay.n_case, o, plan.flags, plan.width, lst)
    return plan, gt, lst, S
