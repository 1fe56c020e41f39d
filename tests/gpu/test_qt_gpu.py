"""The QT scan's GPU engine (gboost/engines/qt_gpu.py) against the CPU engine, its oracle
(docs/qt_epistasis.md §4): the tile math on numpy here, the same on CuPy on the GPU machine.

* the products' integer moments are the CPU's integers, exactly;
* the margin bounds |STAT_gpu - STAT_cpu| for every pair it calls decided, and the pass/fail
  decisions it calls decided are the CPU's (traits of several scales, one where nothing is decided);
* the fused kernel (gboost/engines/qt_fused.py) is the array code's transcription, bit for bit
  (host C here; the device kernel against CuPy's array code there);
* whole scans: ``pairs.epi.qt``, ``pairs.epi.qt.summary``, ``pairs.tsv`` and ``marginal.tsv`` byte
  for byte the CPU engine's, on studies with missing calls, LD, rare alleles, flipped A1, a duplicate
  and an all-het SNP, n not a multiple of 64 and tiles that do not divide p, at thresholds that sit
  exactly on pairs' STATs.

Tests marked ``gpu`` run the same on CuPy (``python -m pytest tests/gpu/test_qt_gpu.py`` on the GPU
machine); they skip, with the reason, where there is none.
"""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from gboost.engines.qt_cpu import QTCPUEngine, exact_stats, pair_moments, qt_planes
from gboost.engines import qt_gpu
from gboost.engines.qt_gpu import (QTDeviceRunner, QTGPUEngine, TraitSumErrors, dosages, linear_screen,
                                     tile_moments)
from gboost.data.inputs import open_input
from gboost.outputs.qt_results import render_qt_outputs
from gboost.data.load import load_study
from gboost.pipeline.qt_scan import QTParams, run_qt_scan
from gboost.data.simulate import simulate_qt_study, write_bfile
from gboost.stats.qt import qt_thresholds
from tests.helpers import gpu_unavailable

# p never a multiple of the tile, n never a multiple of 64.
STUDIES = {
    "missing-ld": dict(n_snps=150, n=203, tile=40, kw=dict(missing_rate=0.03, ld_block=8, ld_rho=0.95,
                                                           effects=[(2, 7, 0.5), (40, 90, 0.4)])),
    "rare-alleles": dict(n_snps=97, n=333, tile=64, kw=dict(missing_rate=0.01, maf_range=(0.004, 0.06),
                                                            effects=[(3, 50, 0.6)])),
    "flips-duplicates": dict(n_snps=120, n=517, tile=50, flips=True,
                             kw=dict(missing_rate=0.02, ld_block=5, ld_rho=0.9, effects=[(1, 9, 0.4)])),
    # mean / sd = 10^5: PLINK's sums cancel, the margins are wide and many pairs go to the CPU
    "large-mean": dict(n_snps=60, n=150, tile=25, kw=dict(missing_rate=0.02, mean=1e5)),
}
FILES = ("pairs.epi.qt", "pairs.epi.qt.summary", "pairs.tsv", "marginal.tsv")


def make_study(path, n_snps, n, kw, flips=False, seed=22):
    st = simulate_qt_study(n_snps, n, seed=seed, **kw)
    g, v = st.genotypes.copy(), st.variants
    if flips:
        flip = np.random.default_rng(seed).random(len(g)) < 0.5  # the .bim's A1 the major allele
        g[flip] = np.where(g[flip] >= 0, 2 - g[flip], -1)
        v.a1, v.a2 = np.where(flip, v.a2, v.a1), np.where(flip, v.a1, v.a2)
        g[11] = g[10]  # a duplicate: every pair of the two fails (r > 0.999)
        g[20] = np.where(g[20] >= 0, 1, -1)  # all het: every pair with it fails
    prefix = str(path / "qt")
    write_bfile(prefix, g, v, st.samples)
    return load_study(open_input(bfile=prefix))


@pytest.fixture(scope="module", params=sorted(STUDIES))
def case(request, tmp_path_factory):
    spec = STUDIES[request.param]
    study = make_study(tmp_path_factory.mktemp(request.param), spec["n_snps"], spec["n"], spec["kw"],
                       spec.get("flips", False))
    return request.param, study, spec["tile"]


def outputs(study, engine, epi1, epi2):
    # (--genotypic at --epi1 1 would F-test the all-het SNP's pairs, whose additive model is
    # singular: genotypic_f_test raises there, whichever engine; so only below 1)
    res = run_qt_scan(study, QTParams(epi1=epi1, epi2=epi2, genotypic=epi1 < 1.0), engine=engine)
    files = render_qt_outputs(res)
    return {name: files[name] for name in FILES}, res


def all_pairs_exact(study):
    qp = qt_planes(study)
    p = study.n_snps
    i, j = np.triu_indices(p, 1)
    ok = np.zeros(len(i), bool)
    stat = np.full(len(i), np.nan)
    exact_stats(*qp.scan_args(), i.astype(np.int64), j.astype(np.int64), ok, stat)
    return i, j, ok, stat


def assert_engines_agree(study, xp, tile, epi1, epi2, fused=True):
    want, _ = outputs(study, QTCPUEngine(), epi1, epi2)
    engine = QTGPUEngine(tile=tile, xp=xp, fused=fused)
    got, res = outputs(study, engine, epi1, epi2)
    for name in FILES:
        assert got[name] == want[name], f"{name} differs from the CPU engine's (epi1 {epi1}, epi2 {epi2})"
    return engine


def assert_moments_exact(study, xp):
    qp = qt_planes(study)
    d = xp.asarray(dosages(study))
    y = xp.asarray(np.asarray(study.trait, np.float64))
    p = study.n_snps
    mom = [np.asarray(m.get() if hasattr(m, "get") else m) for m in tile_moments(xp, d[: p // 2], d, y)]
    for i in range(0, p // 2, 3):
        for j in range(i + 1, p, 2):
            want = pair_moments(*qp.scan_args(), i, j)
            got = [m[i, j] for m in mom]
            assert got[:9] == [float(w) for w in want[:9]], (i, j)  # integers, exactly
            np.testing.assert_allclose(got[9:], want[9:], rtol=1e-9, atol=1e-6 * float(np.abs(study.trait).max()))


def assert_margin_holds(study, xp):
    """Every pair the screen calls decided: the CPU's pass/fail, and its STAT within the margin."""
    d = xp.asarray(dosages(study))
    y = xp.asarray(np.asarray(study.trait, np.float64))
    with np.errstate(all="ignore"):
        out = linear_screen(xp, tile_moments(xp, d, d, y), TraitSumErrors.of(study.trait))
    stat, ok, margin, unsure = (np.asarray(a.get() if hasattr(a, "get") else a) for a in out)
    i, j, eok, est = all_pairs_exact(study)
    sure = ~unsure[i, j]
    np.testing.assert_array_equal(ok[i, j][sure], eok[sure])
    both = sure & eok
    assert np.all(np.abs(stat[i, j][both] - est[both]) <= margin[i, j][both])
    return sure.mean()


# --- numpy: the tile math on this machine -------------------------------------------------------

def test_product_moments_are_the_cpus_integers_exactly(case):
    assert_moments_exact(case[1], np)


def test_margin_bounds_the_cpu_statistic_and_decisions(case):
    name, study, _ = case
    share = assert_margin_holds(study, np)
    if name == "large-mean":
        assert share < 1.0, "a trait whose sums cancel leaves pairs undecided"
    else:
        assert share == 1.0


@pytest.mark.parametrize("epi1,epi2", [(1e-4, 0.01), (0.05, 0.3), (1.0, 0.01)])
def test_numpy_path_writes_the_cpu_engines_files(case, epi1, epi2):
    _, study, tile = case
    assert_engines_agree(study, np, tile, epi1, epi2)


def test_thresholds_on_a_pairs_statistic_are_decided_by_the_cpu(case):
    """alpha1 and alpha2 set to the CPU's own STAT of some pairs: the GPU's STAT sits within its
    last bits of the threshold, so only the exact re-test can put the pair on the right side."""
    _, study, tile = case
    _, _, ok, stat = all_pairs_exact(study)
    vals = np.sort(stat[ok])
    a1, a2 = float(vals[-5]), float(vals[len(vals) // 2])
    cpu, _ = QTCPUEngine().scan(study, a1, a2)
    eng = QTGPUEngine(tile=tile, xp=np)
    gpu, _ = eng.scan(study, a1, a2)
    for f in ("i", "j", "n_sig", "n_fail", "best", "best_partner"):
        np.testing.assert_array_equal(getattr(gpu, f), getattr(cpu, f), err_msg=f)
    assert gpu.n_valid == cpu.n_valid
    assert len(cpu.i) >= 5


def test_progress_counts_every_pair_once_and_cancel_stops_between_tiles(case):
    from gboost.errors import ScanCancelled

    _, study, tile = case
    seen = []
    QTGPUEngine(tile=tile, xp=np).scan(study, 20.0, 6.0, progress=lambda done, total: seen.append((done, total)))
    p = study.n_snps
    assert seen[-1] == (p * (p - 1) // 2, p * (p - 1) // 2)
    assert len(seen) == sum(1 for i0 in range(0, p, tile) for _ in range(i0, p, tile))
    calls = []
    with pytest.raises(ScanCancelled):
        QTGPUEngine(tile=tile, xp=np).scan(study, 20.0, 6.0, cancel=lambda: calls.append(1) or len(calls) > 2)
    assert len(calls) == 3


def _host_kernel(tmp_path):
    """The fused kernel's transcription as host C (plain operators, no contraction), loaded."""
    import ctypes
    import shutil
    import subprocess

    from gboost.engines.qt_fused import host_source

    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler to build the host flavour of the fused kernel")
    (tmp_path / "k.c").write_text(host_source())
    subprocess.run([cc, "-O2", "-ffp-contract=off", "-fno-fast-math", "-shared", "-fPIC", "-o",
                    str(tmp_path / "k.so"), str(tmp_path / "k.c"), "-lm"], check=True)
    return ctypes.CDLL(str(tmp_path / "k.so"))


def _bits(a):
    a = np.ascontiguousarray(a).ravel()
    return a.view(np.uint8) if a.dtype == np.bool_ else a.view(np.uint64)


def test_fused_kernel_transcribes_the_array_code_bit_for_bit(case, tmp_path):
    """gboost/engines/qt_fused.py traces linear_screen into C, one operation a line: compiled for
    the host it gives numpy's doubles exactly (the device flavour differs only in spelling each
    operation as a round-to-nearest intrinsic)."""
    import ctypes

    lib = _host_kernel(tmp_path)
    study = case[1]
    d = dosages(study)
    y = np.asarray(study.trait, np.float64)
    mom = [np.ascontiguousarray(m) for m in tile_moments(np, d, d, y)]
    errs = TraitSumErrors.of(y)
    with np.errstate(all="ignore"):
        want = linear_screen(np, mom, errs)
    m = mom[0].size
    got = (np.empty(m), np.empty(m, np.bool_), np.empty(m), np.empty(m, np.bool_))
    lib.gb_qt_screen(ctypes.c_long(m), (ctypes.c_void_p * 14)(*[x.ctypes.data for x in mom]),
                     ctypes.c_double(errs.y), ctypes.c_double(errs.ay), ctypes.c_double(errs.yy),
                     *[ctypes.c_void_p(g.ctypes.data) for g in got])
    for g, w in zip(got, want):
        np.testing.assert_array_equal(_bits(g), _bits(w))


def test_device_gpu_without_a_gpu_is_refused_in_one_line(tmp_path, capsys):
    if gpu_unavailable() is None:
        pytest.skip("a GPU is present: --device gpu runs (test_cli_device_gpu_equals_cpu)")
    from gboost.cli import main as gboost_main

    st = simulate_qt_study(12, 80, seed=1, missing_rate=0.01)
    st.write(str(tmp_path / "q"))
    out = tmp_path / "o"
    assert gboost_main(["scan", "--bfile", str(tmp_path / "q"), "--out", str(out), "--quiet", "--device", "gpu"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--device gpu" in err[0] and "quantitative trait" in err[0]
    assert not out.exists() or not any(p.name != ".gboost.lock" for p in out.iterdir())


# --- several devices, one shared tile queue (simulated on numpy) ---------------------------------

class SlowRunner(QTDeviceRunner):
    """A simulated device that screens its tiles late (device 1 here), so that the other takes
    more of the queue and tiles finish out of order. Device 0 holds its first tile until another
    device has taken one: on a loaded machine device 1's thread could otherwise start after device
    0 had emptied a short queue (CI saw {0: 3, 1: 0} on 2026-11-26), and the test would not
    exercise two devices at all."""

    started = threading.Event()

    def screen(self, tile, alpha1, alpha2):
        if self.device_id == 0:
            assert SlowRunner.started.wait(120), "no other device took a tile"
        else:
            SlowRunner.started.set()
            if self.device_id == 1:
                time.sleep(0.003)
        return super().screen(tile, alpha1, alpha2)


@pytest.mark.parametrize("epi1,epi2", [(1e-4, 0.01), (0.05, 0.3), (1.0, 0.01)])
def test_two_devices_write_the_files_of_one(case, epi1, epi2, monkeypatch):
    """The shared queue and the merge of the devices' counts: byte for byte one device's files
    (and so the CPU engine's), also with the dosages loaded through several small host blocks."""
    _, study, tile = case
    monkeypatch.setattr(qt_gpu, "DECODE_ROWS", 17)
    one, _ = outputs(study, QTGPUEngine(tile=tile, xp=np), epi1, epi2)
    SlowRunner.started.clear()
    engine = QTGPUEngine(tile=tile, xp=np, gpus=[0, 1], runner=SlowRunner)
    two, res = outputs(study, engine, epi1, epi2)
    for name in FILES:
        assert two[name] == one[name], f"{name}: two devices differ from one (epi1 {epi1}, epi2 {epi2})"
    tiles = engine.tiles_per_device
    assert set(tiles) == {0, 1} and min(tiles.values()) > 0, tiles
    p = study.n_snps
    assert sum(tiles.values()) == len(qt_gpu.plan_qt_tiles(p, tile))
    assert res.engine_counts["tiles_per_device"] == {"0": tiles[0], "1": tiles[1]}


def test_thresholds_on_a_pairs_statistic_are_decided_by_the_cpu_on_three_devices(case):
    """As the one-device test above, on three simulated devices: the same survivors and summary."""
    _, study, tile = case
    _, _, ok, stat = all_pairs_exact(study)
    vals = np.sort(stat[ok])
    a1, a2 = float(vals[-5]), float(vals[len(vals) // 2])
    cpu, _ = QTCPUEngine().scan(study, a1, a2)
    SlowRunner.started.clear()
    gpu, _ = QTGPUEngine(tile=tile, xp=np, gpus=[0, 1, 2], runner=SlowRunner).scan(study, a1, a2)
    for f in ("i", "j", "n_sig", "n_fail", "best", "best_partner"):
        np.testing.assert_array_equal(getattr(gpu, f), getattr(cpu, f), err_msg=f)
    assert gpu.n_valid == cpu.n_valid


def test_a_failing_device_stops_the_scan_with_its_error(tmp_path):
    study = make_study(tmp_path, 40, 150, dict(missing_rate=0.02))
    failed = threading.Event()

    class Broken(QTDeviceRunner):
        def screen(self, tile, alpha1, alpha2):
            if self.device_id == 1:
                failed.set()
                raise RuntimeError("GPU 1: an illegal memory access")
            # Device 0 holds its first tile until device 1 has one: on a loaded 2-core VM device 0
            # could otherwise screen every tile first and the failing device never get one (CI saw it).
            assert failed.wait(120), "device 1 never took a tile"
            return super().screen(tile, alpha1, alpha2)

    engine = QTGPUEngine(tile=8, xp=np, gpus=[0, 1], runner=Broken)
    with pytest.raises(RuntimeError, match="GPU 1: an illegal memory access"):
        engine.scan(study, 20.0, 6.0)
    assert not [t for t in threading.enumerate() if t.name.startswith("gboost-qt")]  # no worker left behind


def test_cancel_stops_every_device_between_tiles(tmp_path):
    from gboost.errors import ScanCancelled

    study = make_study(tmp_path, 40, 150, dict(missing_rate=0.02))
    screened = []
    # A device begins a tile only on a turn: one each to start, one more each time the caller looks
    # at a result (cancel), two at the cancel (for the tiles the devices may have begun). So the
    # caller always keeps up with the devices, whatever the machine's load; and devices that did
    # not stop would wait for a turn in vain, then screen the rest of the study.
    turns = threading.Semaphore(2)
    overran = threading.Event()

    class Paced(QTDeviceRunner):
        def screen(self, tile, alpha1, alpha2):
            if not overran.is_set() and not turns.acquire(timeout=60):
                overran.set()
            screened.append(tile)
            return super().screen(tile, alpha1, alpha2)

    calls = []

    def cancel():
        calls.append(1)
        turns.release(2 if len(calls) > 3 else 1)
        return len(calls) > 3

    engine = QTGPUEngine(tile=8, xp=np, gpus=[0, 1], runner=Paced)
    with pytest.raises(ScanCancelled):
        engine.scan(study, 20.0, 6.0, cancel=cancel)
    assert len(calls) == 4  # before the first tile, then after each of three
    # the two devices stop after the tile each had begun: far from the 15 tiles of the study
    assert len(screened) <= 3 + 2 + 2, len(screened)
    assert not [t for t in threading.enumerate() if t.name.startswith("gboost-qt")]


# --- the device policy (gboost/engines/devices.py: choose_gpu), shared with case-control --------

def test_qt_auto_falls_back_to_the_cpu_and_says_why_when_the_gpu_engine_cannot_start(monkeypatch, caplog):
    import gboost.engines.devices as devices
    from gboost.engines.qt_cpu import QTCPUEngine
    from gboost.errors import InputError
    from gboost.engines import make_engine

    class NoProbe(QTGPUEngine):
        def __init__(self, threads=None, tile=None, gpus=None):
            super().__init__(threads, tile=tile, xp=np, gpus=gpus)

        def probe(self):
            raise RuntimeError("nvrtc: error: invalid value for --gpu-architecture")

    monkeypatch.setattr(devices, "gpu_available", lambda: (True, "1 x Some GPU"))
    monkeypatch.setattr(qt_gpu, "QTGPUEngine", NoProbe)
    with caplog.at_level("WARNING", logger="gboost"):
        eng = make_engine("auto", threads=1, test="linear")
    assert isinstance(eng, QTCPUEngine)
    assert "using the CPU engine for the QT scan; the GPU engine failed to start (nvrtc" in caplog.text
    with pytest.raises(InputError, match="--device gpu: the GPU engine of the quantitative trait scan failed to "
                                         r"start \(nvrtc"):
        make_engine("gpu", test="linear")
    # the engine's construction failing (here: CuPy missing) counts as a failure to start too
    monkeypatch.setattr(qt_gpu, "QTGPUEngine", lambda *a, **k: (_ for _ in ()).throw(ImportError("no cupy")))
    assert isinstance(make_engine("auto", threads=1, test="linear"), QTCPUEngine)
    with pytest.raises(InputError, match="failed to start \\(no cupy\\)"):
        make_engine("gpu", test="linear")


def test_qt_auto_says_why_when_cupy_sees_no_usable_device(monkeypatch, caplog):
    import gboost.engines.devices as devices
    from gboost.engines.qt_cpu import QTCPUEngine
    from gboost.errors import InputError
    from gboost.engines import make_engine

    monkeypatch.setattr(devices, "gpu_available", lambda: (False, "no CUDA device (cudaErrorNoDevice)"))
    monkeypatch.setattr(devices, "_cupy_installed", lambda: True)
    with caplog.at_level("WARNING", logger="gboost"):
        assert isinstance(make_engine("auto", test="linear"), QTCPUEngine)
    assert "using the CPU engine for the QT scan; no CUDA device (cudaErrorNoDevice)" in caplog.text
    with pytest.raises(InputError, match=r"--device gpu: no GPU for the quantitative trait scan \(no CUDA device"):
        make_engine("gpu", test="linear")
    caplog.clear()
    monkeypatch.setattr(devices, "_cupy_installed", lambda: False)  # a plain CPU machine: nothing to say
    with caplog.at_level("WARNING", logger="gboost"):
        assert isinstance(make_engine("auto", test="linear"), QTCPUEngine)
    assert caplog.text == ""
    with pytest.raises(ValueError, match="--device must be auto, cpu or gpu"):
        make_engine("tpu", test="linear")


# --- CuPy: the same on the GPU machine ----------------------------------------------------------

@pytest.mark.gpu
def test_gpu_product_moments_are_the_cpus_integers_exactly(case):
    import cupy

    assert_moments_exact(case[1], cupy)


@pytest.mark.gpu
def test_gpu_margin_bounds_the_cpu_statistic_and_decisions(case):
    import cupy

    assert_margin_holds(case[1], cupy)


@pytest.mark.gpu
@pytest.mark.parametrize("fused", [True, False], ids=["fused", "array"])
@pytest.mark.parametrize("epi1,epi2", [(1e-4, 0.01), (0.05, 0.3), (1.0, 0.01)])
def test_gpu_writes_the_cpu_engines_files(case, epi1, epi2, fused):
    import cupy

    _, study, tile = case
    assert_engines_agree(study, cupy, tile, epi1, epi2, fused=fused)


@pytest.mark.gpu
def test_gpu_fused_kernel_equals_the_cupy_array_code_bit_for_bit(case):
    import cupy

    from gboost.engines.qt_fused import fused_screen

    study = case[1]
    d = cupy.asarray(dosages(study))
    y = cupy.asarray(np.asarray(study.trait, np.float64))
    mom = tile_moments(cupy, d, d, y)
    errs = TraitSumErrors.of(study.trait)
    for g, w in zip(fused_screen(cupy, mom, errs), linear_screen(cupy, mom, errs)):
        np.testing.assert_array_equal(_bits(g.get()), _bits(w.get()))


@pytest.mark.gpu
def test_gpu_screen_equals_the_numpy_screen_bit_for_bit(case):
    """Checks 1-5 and the inverse use the integer moments only: the device's doubles are numpy's."""
    import cupy

    study = case[1]
    res = []
    for xp in (np, cupy):
        d = xp.asarray(dosages(study))
        y = xp.asarray(np.asarray(study.trait, np.float64))
        with np.errstate(all="ignore"):
            stat, ok, margin, unsure = linear_screen(xp, tile_moments(xp, d, d, y), TraitSumErrors.of(study.trait))
        res.append([np.asarray(a.get() if hasattr(a, "get") else a) for a in (ok, unsure)])
    np.testing.assert_array_equal(res[0][0] | res[0][1], res[1][0] | res[1][1])


@pytest.mark.gpu
def test_cli_device_gpu_equals_cpu(tmp_path):
    import json

    from gboost.cli import main as gboost_main

    st = simulate_qt_study(300, 1000, seed=5, missing_rate=0.01, ld_block=10, ld_rho=0.9, effects=[(3, 200, 0.3)])
    st.write(str(tmp_path / "q"))
    outs = {}
    for device in ("cpu", "gpu"):
        out = tmp_path / device
        assert gboost_main(["scan", "--bfile", str(tmp_path / "q"), "--out", str(out), "--quiet", "--device", device,
                            "--epi1", "0.001", "--tile", "128"]) == 0
        outs[device] = out
    for name in FILES:
        assert (outs["gpu"] / name).read_bytes() == (outs["cpu"] / name).read_bytes(), name
    run = json.loads((outs["gpu"] / "run.json").read_text())
    assert run["engine"] == "gpu"


def test_compiled_dosages_equal_the_numpy_decode():
    """The prepare step's decode (one compiled pass) against gboost.stats.qt_products.dosage_matrix:
    flipped A1s, missing calls, n not a multiple of 64, and a layout with two classes."""
    from gboost.stats.qt_products import dosage_matrix
    from gboost.data.study import study_from_genotypes

    rng = np.random.default_rng(8)
    for n, cases in ((257, 0), (130, 61)):
        g = rng.integers(-1, 3, size=(40, n)).astype(np.int8)
        st = study_from_genotypes(g, np.arange(n) < cases)
        st.a1_flip = rng.random(40) < 0.4
        assert np.array_equal(dosages(st), dosage_matrix(st, np.arange(40)))
        st.a1_flip = None
        assert np.array_equal(dosages(st), dosage_matrix(st, np.arange(40)))


@pytest.mark.gpu(devices=2)
@pytest.mark.parametrize("epi1,epi2", [(1e-4, 0.01), (0.05, 0.3)])
def test_gpu_two_devices_write_the_files_of_one(case, epi1, epi2):
    """Two GPUs of one host from the shared tile queue: byte for byte one GPU's files and the CPU's."""
    import cupy

    _, study, tile = case
    want, _ = outputs(study, QTCPUEngine(), epi1, epi2)
    one, _ = outputs(study, QTGPUEngine(tile=tile, xp=cupy, gpus=[0]), epi1, epi2)
    engine = QTGPUEngine(tile=tile, xp=cupy, gpus=[0, 1])
    two, _ = outputs(study, engine, epi1, epi2)
    for name in FILES:
        assert one[name] == want[name], name
        assert two[name] == want[name], name
    assert set(engine.tiles_per_device) == {0, 1} and min(engine.tiles_per_device.values()) > 0


@pytest.mark.gpu(devices=2)
def test_cli_gpus_0_1_equals_cpu_and_records_both_devices(tmp_path):
    import json

    from gboost.cli import main as gboost_main

    st = simulate_qt_study(600, 1000, seed=6, missing_rate=0.01, ld_block=10, ld_rho=0.9, effects=[(3, 400, 0.3)])
    st.write(str(tmp_path / "q"))
    outs = {}
    for name, flags in (("cpu", ["--device", "cpu"]), ("gpus", ["--device", "gpu", "--gpus", "0,1"])):
        out = tmp_path / name
        assert gboost_main(["scan", "--bfile", str(tmp_path / "q"), "--out", str(out), "--quiet", "--epi1", "0.001",
                            "--tile", "64", *flags]) == 0
        outs[name] = out
    for name in FILES:
        assert (outs["gpus"] / name).read_bytes() == (outs["cpu"] / name).read_bytes(), name
    run = json.loads((outs["gpus"] / "run.json").read_text())
    assert run["engine"] == "gpu" and run["device"].startswith("GPU (2 x ")
    assert set(run["counts"]["tiles_per_device"]) == {"0", "1"}


@pytest.mark.gpu
def test_gpus_naming_a_device_that_is_not_there_is_refused_in_one_line(tmp_path, capsys):
    import cupy

    from gboost.cli import main as gboost_main

    st = simulate_qt_study(12, 80, seed=1, missing_rate=0.01)
    st.write(str(tmp_path / "q"))
    absent = cupy.cuda.runtime.getDeviceCount()
    assert gboost_main(["scan", "--bfile", str(tmp_path / "q"), "--out", str(tmp_path / "o"), "--quiet",
                        "--device", "gpu", "--gpus", f"0,{absent}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"--gpus 0,{absent}" in err[0] and "CUDA device(s) visible" in err[0]


def test_one_chooser_makes_either_tests_engine():
    """make_engine is the one place an engine is made, for both tests (a QT scan on Dask: the CPU
    engine's tiles on the workers, no GPU workers)."""
    from gboost.engines import make_engine
    from gboost.engines.cpu import CpuEngine
    from gboost.engines.qt_cpu import QTCPUEngine

    assert isinstance(make_engine("cpu", threads=1), CpuEngine)
    assert isinstance(make_engine("cpu", threads=1, test="linear"), QTCPUEngine)
    pytest.importorskip("distributed", reason="Dask is not installed (pip install 'gboost[cluster]')")
    from gboost.engines.qt_distributed import QTDaskEngine

    eng = make_engine("cpu", dask="local:1", test="linear")
    assert isinstance(eng, QTDaskEngine) and eng.client is None  # (it connects on its first scan)
    with pytest.raises(ValueError, match="workers' CPUs"):
        make_engine("cpu", dask="local:gpus", test="linear")
