"""``gboost warm`` (run by scripts/setup.sh) leaves nothing for a user's first scan to compile:
on a fresh install (an empty numba cache folder, and an empty CuPy kernel cache on a GPU), warm
runs, and then scans of other studies in fresh processes compile no numba function and build no
NVRTC module (issues 19 and 24: the first scan after install as fast as the second).

Compilation is seen through gboost.runtime.compile_watch (numba's compile event; CuPy's NVRTC entry),
not through timings."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from tests.helpers import ROOT, write_fake_cupy

from gboost.data.simulate import PlantedPair, simulate_study

pytestmark = pytest.mark.slow  # subprocess scans or PLINK runs throughout

SAMPLE = os.path.join(ROOT, "sample_data", "sample")

# Runs gboost's CLI in-process and prints what it compiled.
PROBE = r"""
import json, sys
from gboost.runtime.compile_watch import CompileWatch
from gboost.cli import main
with CompileWatch(watch_cupy=True) as w:
    rc = main(sys.argv[1:])
print(json.dumps({"rc": rc, "numba": w.numba, "nvrtc": w.nvrtc}))
"""


def _env(cache: str, kernels: str | None = None) -> dict:
    env = dict(os.environ, NUMBA_CACHE_DIR=cache)
    if kernels is not None:
        env["CUPY_CACHE_DIR"] = kernels
    return env


def gboost(env, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gboost.cli", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True)


def probe(env, *args) -> dict:
    r = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=ROOT, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["rc"] == 0
    return out


@pytest.fixture(scope="module")
def other_study(tmp_path_factory):
    """A study unlike warm's own: other sizes, three chromosomes, 1 % missing calls, 2 % of
    the samples of unknown sex (founders PLINK orders alleles by, not scanned)."""
    prefix = str(tmp_path_factory.mktemp("warm") / "other")
    simulate_study(700, 333, 290, seed=5, chromosomes=3, missing_rate=0.01, unknown_sex=0.02,
                   planted=[PlantedPair(10, 600, "xor", 6.0)]).write(prefix)
    return prefix


def _with_sets(prefix, folder, flags) -> list:
    """``flags`` with SET (one set of the study's SNPs) and SETS (two) as set files written in ``folder``."""
    snps = [line.split()[1] for line in open(prefix + ".bim")]
    files = {"SET": f"H\n{' '.join(snps[7:60:9])}\nEND\n",
             "SETS": f"A\n{' '.join(snps[3:50:4])}\nEND\nB\n{' '.join(snps[30:120:5])}\nEND\n"}
    out = []
    for f in flags:
        if f in files:
            path = folder / f"{f.lower()}.txt"
            path.write_text(files[f])
            f = str(path)
        out.append(f)
    return out


@pytest.fixture(scope="module")
def warmed(tmp_path_factory):
    """A fresh numba cache folder, filled by `gboost warm` (CPU engine)."""
    cache = str(tmp_path_factory.mktemp("numba-cache"))
    env = _env(cache)
    r = gboost(env, "warm", "--device", "cpu")
    assert r.returncode == 0, r.stderr
    return env, r.stdout


def test_warm_on_a_fresh_install_compiles_and_says_so(warmed):
    _, out = warmed
    assert out.startswith("gboost warm: ") and "numba functions compiled" in out


@pytest.mark.parametrize("flags", [
    [],
    ["--allelic"],
    ["--chr", "1-2", "--maf", "0.05", "--hwe", "1e-4"],
    ["--max-r2", "0.5", "--min-distance", "10", "--epi1", "1e-3"],
    ["--perm", "3"],
    ["--set", "SET", "--set-by-all"],
    ["--set", "SETS", "--set-by-set", "--epi1", "1e-3"],
], ids=["scan", "allelic", "qc", "filters", "perm", "set-by-all", "set-by-set"])
def test_after_warm_a_first_scan_compiles_nothing(warmed, other_study, tmp_path, flags):
    env, _ = warmed
    flags = _with_sets(other_study, tmp_path, flags)
    got = probe(env, "scan", "--bfile", other_study, "--device", "cpu", "--quiet", "--out", str(tmp_path / "o"), *flags)
    assert got["numba"] == [], f"compiled on the first scan after warm: {sorted(set(got['numba']))}"


def test_after_warm_the_sample_study_compiles_nothing(warmed, tmp_path):
    env, _ = warmed
    got = probe(env, "scan", "--bfile", SAMPLE, "--quiet", "--out", str(tmp_path / "o"))
    assert got["numba"] == [], f"compiled on the first scan after warm: {sorted(set(got['numba']))}"


def test_after_warm_a_first_pgen_scan_compiles_nothing(warmed, other_study, tmp_path):
    """The .pgen/VCF/BGEN readers' compiled helper is warmed too (a user's first .pgen compiled it;
    in the GUI, on the loading thread)."""
    import shutil

    pytest.importorskip("pgenlib")
    plink2 = shutil.which("plink2")
    if plink2 is None:
        pytest.skip("plink2 is not installed (apt-get install plink2)")
    pfile = str(tmp_path / "other")
    r = subprocess.run([plink2, "--bfile", other_study, "--make-pgen", "--out", pfile], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    env, _ = warmed
    got = probe(env, "scan", "--pfile", pfile, "--device", "cpu", "--quiet", "--out", str(tmp_path / "o"))
    assert got["numba"] == [], f"compiled on the first .pgen scan after warm: {sorted(set(got['numba']))}"


@pytest.fixture(scope="module")
def qt_study(tmp_path_factory):
    """A quantitative trait study unlike warm's own, with a covariate file."""
    from gboost.data.simulate import simulate_qt_study

    folder = tmp_path_factory.mktemp("warmqt")
    prefix = str(folder / "q")
    simulate_qt_study(130, 211, seed=6, missing_rate=0.015, effects=[(4, 90, 0.6)]).write(prefix)
    with open(folder / "cov.txt", "w") as f:
        f.write("FID IID age\n" + "".join(f"{r.split()[0]} {r.split()[1]} {20 + k % 50}\n"
                                          for k, r in enumerate(open(prefix + ".fam"))))
    return prefix, str(folder / "cov.txt")


@pytest.mark.parametrize("flags", [[], ["--genotypic", "--epi1", "1"], ["--covar", "COV"], ["--part", "2/3"],
                                   ["--set", "SET", "--set-by-all"], ["--set", "SETS", "--set-by-set", "--covar", "COV"]],
                         ids=["scan", "genotypic-every-pair", "covar", "part", "set-by-all", "set-by-set-covar"])
def test_after_warm_a_first_qt_scan_compiles_nothing(warmed, qt_study, tmp_path, flags):
    """A quantitative trait scan (PLINK's linear test: gboost/pipeline/qt_scan.py, engines/qt_cpu.py) runs
    other compiled code than a case-control one: warm scans a quantitative trait too."""
    import shutil

    env, _ = warmed
    cache = str(tmp_path / "numba")  # a copy of warm's cache each: what one test compiles, the next may not load
    shutil.copytree(env["NUMBA_CACHE_DIR"], cache)
    env = _env(cache)
    prefix, cov = qt_study
    flags = _with_sets(prefix, tmp_path, [cov if f == "COV" else f for f in flags])
    got = probe(env, "scan", "--bfile", prefix, "--device", "cpu", "--quiet", "--out", str(tmp_path / "o"), *flags)
    assert got["numba"] == [], f"compiled on the first QT scan after warm: {sorted(set(got['numba']))}"


def test_without_warm_the_first_qt_scan_does_compile(tmp_path, qt_study):
    """(the test above could not pass vacuously)"""
    got = probe(_env(str(tmp_path / "cold")), "scan", "--bfile", qt_study[0], "--device", "cpu", "--quiet", "--out",
                str(tmp_path / "o"))
    assert any(name.startswith("gboost.engines.qt_cpu.") for name in got["numba"]), got["numba"]


PROBE_SPLICE = r"""
import json
import numpy as np
from gboost.runtime.compile_watch import CompileWatch
from gboost.readers.fastnum import pair_texts, pairs_rows_array, ragged, splice_q
with CompileWatch() as w:
    texts = pair_texts(ragged(["1", "X"]), ragged(["rs1", "rs2"]), np.array([7, 70], dtype=np.int64))
    floats = [(np.full(2, 3.5), 10, None)] * 3 + [(np.full(2, 0.25), 4, "NA")]
    holed = pairs_rows_array(np.array([0, 0]), np.array([1, 1]), texts, np.array([4, 1]), floats, holed=True)
    splice_q(np.array([1, 0], dtype=np.int64), holed, np.array([0.5, np.nan]))
print(json.dumps(w.numba))
"""


def test_after_warm_the_splice_of_q_values_compiles_nothing(warmed):
    """A GPU or Dask screen formats pairs.tsv's rows beside it and the writer splices the q values
    in (gboost/readers/fastnum.py splice_q), which no CPU scan reaches: warm compiles it directly."""
    env, _ = warmed
    r = subprocess.run([sys.executable, "-c", PROBE_SPLICE], cwd=ROOT, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout.strip().splitlines()[-1]) == []


def test_a_second_warm_compiles_nothing(warmed):
    env, _ = warmed
    r = gboost(env, "warm", "--device", "cpu")
    assert r.returncode == 0, r.stderr
    assert "numba functions all loaded from the cache" in r.stdout


def test_without_warm_the_first_scan_does_compile(tmp_path, other_study):
    """The watch sees compilation when there is some: the tests above could not pass vacuously."""
    env = _env(str(tmp_path / "cold"))
    got = probe(env, "scan", "--bfile", other_study, "--device", "cpu", "--quiet", "--out", str(tmp_path / "o"),
                "--calibration-pairs", "0")
    assert "gboost.engines.cpu._screen_tile" in got["numba"]


def test_doctor_reports_the_cache_warm_after_warm(warmed):
    env, _ = warmed
    r = gboost(env, "doctor", "--json")
    assert r.returncode == 0, r.stderr
    state = json.loads(r.stdout)["caches"]["numba_cache_state"]
    assert state.startswith("warm ("), state


def test_a_warm_that_cannot_use_the_gpu_it_was_asked_for_is_one_line_and_exit_2(tmp_path):
    env = _env(str(tmp_path / "c"))
    env["CUDA_VISIBLE_DEVICES"] = ""  # no device for CuPy, where there is a CuPy
    r = gboost(env, "warm", "--device", "gpu")
    assert r.returncode == 2
    assert r.stderr.startswith("gboost: error: --device gpu:") and len(r.stderr.strip().splitlines()) == 1


def test_a_gpu_engine_that_fails_leaves_the_cpu_engine_warm_and_says_why(warmed, tmp_path):
    """--device auto falls back to the CPU engine when the GPU engine cannot start; so does warm."""
    env = dict(warmed[0], PYTHONPATH=os.pathsep.join([write_fake_cupy(tmp_path / "fake"), os.environ.get("PYTHONPATH", "")]))
    r = gboost(env, "warm")
    assert r.returncode == 0, r.stderr
    assert "numba functions all loaded from the cache; GPU engine not warmed: the GPU scan `gboost scan" in r.stdout
    r = gboost(env, "warm", "--device", "gpu")
    assert r.returncode == 2 and r.stderr.startswith("gboost: error: warming scan `gboost scan")
    assert len(r.stderr.strip().splitlines()) == 1


# -- on a GPU (skipped elsewhere; run on the device machine) -----------------------------------
def _gpu_unavailable() -> str | None:
    try:
        import cupy

        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # noqa: BLE001 - no CuPy, or no driver
        return f"{type(exc).__name__}: {exc}"
    return None if n > 0 else "CuPy sees no CUDA device"


_WHY = _gpu_unavailable()


@pytest.fixture(scope="module")
def gpu_warmed(tmp_path_factory):
    """Fresh numba and CuPy kernel cache folders, filled by one `gboost warm --device gpu` (a cold warm
    takes minutes on an H100: the GPU tests below share it, each scanning with copies of both)."""
    root = tmp_path_factory.mktemp("gpu-warm")
    env = _env(str(root / "numba"), str(root / "kernels"))
    r = gboost(env, "warm", "--device", "gpu")
    assert r.returncode == 0, r.stderr
    return env, r.stdout


def _gpu_caches(gpu_warmed, tmp_path) -> dict:
    """An environment with copies of warm's two caches: what one test compiles, the next may not load."""
    import shutil

    env, _ = gpu_warmed
    numba, kernels = str(tmp_path / "numba"), str(tmp_path / "kernels")
    shutil.copytree(env["NUMBA_CACHE_DIR"], numba)
    shutil.copytree(env["CUPY_CACHE_DIR"], kernels)
    return _env(numba, kernels)


@pytest.mark.gpu
@pytest.mark.skipif(_WHY is not None, reason=f"needs an NVIDIA GPU with CuPy: {_WHY}")
def test_after_warm_a_first_gpu_scan_builds_no_kernel(gpu_warmed, tmp_path, other_study):
    out = gpu_warmed[1]
    assert "NVRTC module" in out and " built for " in out, out  # it did build, for this GPU
    env = _gpu_caches(gpu_warmed, tmp_path)
    got = probe(env, "scan", "--bfile", other_study, "--device", "gpu", "--quiet", "--out", str(tmp_path / "o"))
    assert got["nvrtc"] == 0, "NVRTC compiled on the first GPU scan after warm"
    assert got["numba"] == [], f"compiled on the first GPU scan after warm: {sorted(set(got['numba']))}"
    # Wide studies take other builds of the tensor-core kernels (9.7 s of NVRTC on the first
    # 200k-sample scan before warm built them too): the pre-screen without its table (14,500 samples),
    # the float64 build (90,000), and with 16 row SNPs a warp (a class of 2^16 or more: 150,000).
    for n_case, n_ctrl in ((7_000, 7_500), (45_000, 45_000), (80_000, 70_000)):
        wide = str(tmp_path / f"wide{n_case}")
        simulate_study(30, n_case, n_ctrl, seed=8, chromosomes=1, missing_rate=0.01).write(wide)
        got = probe(env, "scan", "--bfile", wide, "--device", "gpu", "--quiet", "--out", str(tmp_path / f"w{n_case}"))
        assert got["nvrtc"] == 0, f"NVRTC compiled on the first GPU scan of {n_case + n_ctrl:,} samples after warm"
    doctor = json.loads(gboost(env, "doctor", "--json").stdout)
    assert doctor["caches"]["cupy_kernel_cache_state"].startswith("warm for "), doctor["caches"]


@pytest.mark.gpu
@pytest.mark.skipif(_WHY is not None, reason=f"needs an NVIDIA GPU with CuPy: {_WHY}")
def test_after_warm_a_first_qt_gpu_scan_builds_no_kernel(gpu_warmed, tmp_path, qt_study):
    """The QT scan's GPU engine (engines/qt_gpu.py: cuBLAS products, CuPy's elementwise kernels,
    the fused screen of engines/qt_fused.py) is warmed too: the first QT scan of a 7,589-SNP study
    on the H100 took 22.7 s after warm, the second 1.7 s."""
    env = _gpu_caches(gpu_warmed, tmp_path)
    prefix, _ = qt_study
    # (--covar on a QT scan adjusts every pair on the CPU engine, which the test above covers.)
    for k, flags in enumerate(([], ["--genotypic", "--epi1", "1"], ["--tile", "48"],
                               ["--part", "2/3"])):
        got = probe(env, "scan", "--bfile", prefix, "--device", "gpu", "--quiet", "--out", str(tmp_path / f"o{k}"),
                    *flags)
        assert got["nvrtc"] == 0, f"NVRTC compiled on the first QT GPU scan after warm ({flags})"
        assert got["numba"] == [], f"compiled on the first QT GPU scan after warm ({flags}): {sorted(set(got['numba']))}"
    # Tiles of other widths than warm's own studies take (CuPy builds a row reduction per width
    # class): 700 SNPs in one tile, and 2,300 in tiles of 2,048 and 252.
    from gboost.data.simulate import simulate_qt_study

    for p in (700, 2300):
        wide = str(tmp_path / f"qt{p}")
        simulate_qt_study(p, 50, seed=p, missing_rate=0.01).write(wide)
        got = probe(env, "scan", "--bfile", wide, "--device", "gpu", "--quiet", "--out", str(tmp_path / f"oq{p}"))
        assert got["nvrtc"] == 0, f"NVRTC compiled on the first QT GPU scan of {p} SNPs after warm"


def test_warm_writes_bytecode_even_where_python_would_not(tmp_path):
    """Under PYTHONDONTWRITEBYTECODE (set on the GPU device, and in many container images) every
    command compiled gboost's ~80 modules from source (0.5 s at 500k x 5k); warm writes
    the bytecode itself, and a fresh interpreter then imports from it."""
    from gboost.cli.warm import _compile_bytecode

    pkg = tmp_path / "pkg_warm_probe"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("X = 1\n")
    (pkg / "mod.py").write_text("Y = 2\n")
    _compile_bytecode(pkg)
    cached = sorted(p.name.split(".")[0] for p in (pkg / "__pycache__").glob("*.pyc"))
    assert cached == ["__init__", "mod"]
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": str(tmp_path)}
    code = "import importlib.util as u; s = u.find_spec('pkg_warm_probe.mod'); print(s.cached)"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert os.path.exists(out.strip())


def test_warm_compiles_the_bytecode_of_the_packages_a_scan_imports(tmp_path, monkeypatch):
    """NumPy installed without bytecode under PYTHONDONTWRITEBYTECODE (the GPU device's image)
    cost every command 0.27 s of compiling its modules: warm finds the installed folders
    of the packages a scan imports, without importing them, and compiles them where it may write;
    a folder it may not write to is left alone."""
    import numpy

    import gboost.cli.warm as w

    folders = w._dependency_folders()
    np_dir = os.path.dirname(numpy.__file__)
    assert (os.path.realpath(np_dir) in {os.path.realpath(f) for f in folders}) == os.access(np_dir, os.W_OK)
    assert all(os.access(f, os.W_OK) for f in folders)
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    assert w._dependency_folders() == []


# A scan in a fresh process after warm, with numba's target refresh counted; "light" prepares the
# process as the command does (its light loads), "full" leaves numba's own load, which refreshes the
# whole target before each load.
PROBE_LOADS = r"""
import json, sys
if sys.argv[1] == "light":  # the command's start-up (gboost/runtime/process.py); "full": numba's own loads
    from gboost.runtime.process import prepare_process
    prepare_process(interrupts=False, streams=False)
import numba.core.base as base
refreshes = []
real = base.BaseContext.refresh
def counted(self):
    refreshes.append(1)
    return real(self)
base.BaseContext.refresh = counted
from gboost.runtime.compile_watch import CompileWatch
from gboost.cli import main
with CompileWatch() as w:
    rc = main(sys.argv[2:])
print(json.dumps({"rc": rc, "numba": w.numba, "refreshes": len(refreshes)}))
"""


def test_after_warm_a_scan_loads_its_compiled_functions_without_numbas_whole_target(warmed, other_study, tmp_path):
    """numba refreshes its whole CPU target (~250 registries of typing and lowering rules, 0.15-0.24 s
    holding the GIL on the H100 host) before it loads any cached function; gboost's loads set up only
    what the loaded code needs (gboost/runtime/numba_cache.py). After warm, a scan of an LD-free
    study with missing calls, three chromosomes and a planted pair, in a fresh process, loads every
    function with no refresh at all, and its outputs are those of the same scan with numba's own
    loads, byte for byte."""
    env, _ = warmed
    outs = {}
    for how in ("light", "full"):
        out = tmp_path / how
        r = subprocess.run([sys.executable, "-c", PROBE_LOADS, how, "scan", "--bfile", other_study, "--device", "cpu",
                            "--epi1", "0.05", "--quiet", "--out", str(out)], cwd=ROOT, env=env, capture_output=True,
                           text=True)
        assert r.returncode == 0, r.stderr
        got = json.loads(r.stdout.strip().splitlines()[-1])
        assert got["rc"] == 0 and got["numba"] == [], got
        # (run.json and gboost.log hold the run's times)
        outs[how] = (got["refreshes"], {p.name: p.read_bytes() for p in out.iterdir()
                                        if p.name not in ("run.json", "gboost.log")})
    assert outs["light"][0] == 0, "a cached function's load refreshed numba's whole target"
    assert outs["full"][0] > 0  # the probe does see numba's own loads refresh it
    assert outs["light"][1].keys() == outs["full"][1].keys() and len(outs["light"][1]) >= 4
    for name, data in outs["full"][1].items():
        assert outs["light"][1][name] == data, name


def test_warm_scans_a_wide_study_for_each_build_of_the_tensor_core_kernels(tmp_path):
    """The GPU warm-up scans one study for each build the study's width selects (MmaCounting.build,
    MmaConfig.for_classes): the pre-screen without its table (~12.8k to 2^16 samples), the float64
    build (2^16 samples and more) and its 16 row SNPs a warp (a class of 2^16 or more)."""
    from gboost.engines.gpu.config import MmaConfig
    from gboost.engines.gpu.counting import MMA_TABLE_SMEM_MAX
    from gboost.cli.warm import _scan_commands, _write_studies

    a, b, m, wide, qt = _write_studies(tmp_path)
    scanned = {c[c.index("--bfile") + 1] for c in _scan_commands(a, b, m, wide, qt, tmp_path, "gpu") if "--bfile" in c}
    assert set(wide) <= scanned
    assert not set(wide) & {c[c.index("--bfile") + 1] for c in _scan_commands(a, b, m, wide, qt, tmp_path, "cpu")
                            if "--bfile" in c}
    builds = set()
    for w in wide:
        status = [line.split()[5] for line in open(w + ".fam")]
        n_case, n_ctrl = status.count("2"), status.count("1")
        n = n_case + n_ctrl
        builds.add(((n + 1) * 8 <= MMA_TABLE_SMEM_MAX, n < 1 << 16, MmaConfig().for_classes(n_ctrl, n_case).warp_rows))
    assert builds == {(False, True, 32), (False, False, 32), (False, False, 16)}
