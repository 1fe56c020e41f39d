"""Helpers shared by test modules (test modules import from here, never from each other or from
conftest): random studies, the PLINK oracle's runs and comparisons, GPU availability and the GPU
engine's comparisons with the CPU engine.

GPU tests carry one marker, ``@pytest.mark.gpu`` (``mma=True``: binary tensor cores needed;
``devices=2``: two GPUs): tests/conftest.py skips them, with the reason, where that is missing.
"""
from __future__ import annotations

import math
import os
import shutil
import subprocess

import numpy as np

from gboost.io.results import format_epi_cc, format_summary
from gboost.study import study_from_genotypes

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


# --- PLINK 1.9, the oracle ---------------------------------------------------------------------

PLINK = shutil.which("plink1.9") or shutil.which("plink")
NO_PLINK = "plink1.9 not on PATH (apt-get install plink1.9; .ci/run installs it)"


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
