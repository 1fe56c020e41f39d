"""The background encode of a .bed (gboost/data/load.py ``load_with_encoder``): a counting
pass decides QC and the monomorphic skips from counts alone, the Study comes back with its planes
still being encoded on a thread that a PlaneSource owns (gboost/data/planes.py; the Study holds no
thread), and the screen reads the rows each tile needs through it. Everything must be what the one-pass load gives, and the scan's files byte for byte
what they are without it."""
from __future__ import annotations

import json
import threading
import time

import numpy as np
import pytest

import gboost.data.load as load_mod
from gboost.data.encode import decode_planes, genotype_counts
from gboost.errors import InputError, ScanCancelled
from gboost.readers.plink_bed import open_bfile
from gboost.data.load import load_study, load_with_encoder
from gboost.data.planes import PlaneSource
from gboost.data.study import QCOptions
from tests.helpers import QC_CASES, bed_rows, write_ld_study

FILES = ("pairs.tsv", "pairs.epi.cc", "pairs.epi.cc.summary", "marginal.tsv")


def _qc(tmp, case):
    qc = QC_CASES[case][1]
    if qc.extract:
        qc = QCOptions(extract=str(tmp / qc.extract), exclude=str(tmp / qc.exclude), geno=qc.geno)
    return qc


def assert_same_study(got, want, planes=None):
    if planes is not None:
        planes.wait()
    assert (got.counts == want.counts).all() and got.counts.dtype == want.counts.dtype
    assert got.planes.shape == want.planes.shape and (got.planes == want.planes).all()
    assert list(got.variants.snp) == list(want.variants.snp)
    assert list(got.samples.iid) == list(want.samples.iid)
    assert got.qc.as_dict() == want.qc.as_dict()
    assert got.snp_col_width == want.snp_col_width


@pytest.fixture(autouse=True)
def small_steps(monkeypatch):
    """Watermark steps of a few rows, so that test-sized studies take many of them."""
    monkeypatch.setattr(load_mod, "ENCODE_STEP_ROWS", 37)


@pytest.mark.parametrize("case", sorted(QC_CASES))
@pytest.mark.parametrize("block_snps", [64, None])
def test_counting_pass_gives_the_encoders_counts_and_verdicts(qc_fileset, case, block_snps):
    """Every QC filter, X/Y/XY/MT/0, unknown sex, rare alleles, monomorphic, all-het, all-missing,
    non-founders and missing phenotypes (tests/conftest.py's qc_fileset): the counting pass keeps
    the same SNPs with the same counts, and the planes encoded after it are the one-pass load's."""
    tmp, prefix = qc_fileset
    qc = _qc(tmp, case)
    want = load_study(open_bfile(prefix), qc, block_snps=block_snps)
    got, planes = load_with_encoder(open_bfile(prefix), qc, block_snps=block_snps)
    with planes:
        assert planes.background
        assert_same_study(got, want, planes)
        assert planes.done() and planes.seconds > 0
    geno, is_case = decode_planes(got.planes, got.layout)
    assert (got.counts == genotype_counts(geno, is_case)).all()


def test_ld_rich_study_with_missing_calls(tmp_path):
    """LD blocks with r^2 near 1, 1 % missing calls, X with hemizygous males, unknown sex, rare
    alleles (tests/helpers.py, ld_study), with and without filters."""
    prefix = write_ld_study(str(tmp_path / "ld"), n_snps=1500, n_cases=300, n_controls=260)
    for qc in (QCOptions(), QCOptions(maf=0.02, geno=0.05, hwe=1e-6, mind=0.2)):
        want = load_study(open_bfile(prefix), qc)
        got, planes = load_with_encoder(open_bfile(prefix), qc)
        with planes:
            assert planes.background
            assert_same_study(got, want, planes)
        assert want.qc.snps_non_autosomal > 0


def test_passes_fed_by_the_reader_leave_its_threads_their_cores(tmp_path, monkeypatch):
    """The compiled passes over blocks the .bed's readers deliver (--mind's, the counting pass, the
    encoder before returning and beside the screen) run on the cores the readers leave
    (``fed_threads``); the caller's numba thread count is restored after, and the study is the
    same."""
    import numba as nb

    from gboost.data import encode
    from gboost.readers import plink_bed

    prefix = write_ld_study(str(tmp_path / "ld"), n_snps=1500, n_cases=80, n_controls=70)
    want = load_study(open_bfile(prefix), QCOptions(mind=0.2))
    monkeypatch.setattr(plink_bed.os, "cpu_count", lambda: 8)  # 2 readers of their own on 8 cores
    monkeypatch.setattr(plink_bed, "BED_READERS", 2)
    monkeypatch.setattr(nb.config, "NUMBA_NUM_THREADS", 8)
    assert plink_bed.fed_threads() == 6 and plink_bed.fed_threads(spare=1) == 5
    monkeypatch.setattr(plink_bed.os, "cpu_count", lambda: 2)  # below four cores: none of their own
    assert plink_bed.fed_threads() == 8
    monkeypatch.setattr(plink_bed.os, "cpu_count", lambda: 8)
    monkeypatch.setattr(nb.config, "NUMBA_NUM_THREADS", nb.get_num_threads())
    if nb.get_num_threads() < 3:  # this machine: fed_threads must differ from the default to be seen
        monkeypatch.setattr(plink_bed, "fed_threads", lambda spare=0: 1)
        monkeypatch.setattr(load_mod, "fed_threads", lambda spare=0: 1)
    fed = load_mod.fed_threads()
    default = nb.get_num_threads()
    assert fed < default
    seen = {}

    def spy(name, real):
        def call(*a, **k):
            seen.setdefault(name, set()).add(nb.get_num_threads())
            return real(*a, **k)
        return call

    for name in ("bed_missing_counts", "bed_class_counts", "bed_encode"):
        monkeypatch.setattr(load_mod, name, spy(name, getattr(encode, name)))
    got = load_study(open_bfile(prefix), QCOptions(mind=0.2))
    assert seen == {"bed_missing_counts": {fed}, "bed_encode": {fed}}
    assert nb.get_num_threads() == default
    assert_same_study(got, want)
    seen.clear()
    got, planes = load_with_encoder(open_bfile(prefix), QCOptions(mind=0.2))
    with planes:
        planes.wait()
    assert seen["bed_missing_counts"] == {fed} and seen["bed_class_counts"] == {fed}
    assert seen["bed_encode"] == {load_mod.fed_threads(spare=1)}  # on the encoder's own thread
    assert nb.get_num_threads() == default
    assert_same_study(got, want)


def test_counting_pass_is_the_only_pass_before_the_study_returns(tmp_path, monkeypatch):
    """The Study is returned while its planes are still being encoded: the watermark moves after."""
    prefix = write_ld_study(str(tmp_path / "ld"), n_snps=1500, n_cases=100, n_controls=100)
    gate, held = threading.Event(), threading.Event()
    seen = []

    def hook(rows):  # the encoder holds its first run of rows until the test has looked
        seen.append(rows)
        held.set()
        assert gate.wait(120), "the test never let the encoder go on"

    monkeypatch.setattr(load_mod, "_ENCODE_HOOK", hook)
    study, ready = load_with_encoder(open_bfile(prefix))
    assert held.wait(120)
    assert not ready.done() and ready.rows == 0 and seen == [37]
    assert study.has_missing.shape == (study.n_snps,)  # from the counts: no wait
    gate.set()
    ready.wait()
    ready.close()
    assert ready.done() and seen == sorted(seen) and seen[-1] == study.n_snps
    want = load_study(open_bfile(prefix))
    assert_same_study(study, want)


def _threads_within(obj, seen=None) -> list:
    """The threads (and thread pools) an object holds, in its attributes and containers, any depth."""
    from concurrent.futures import Executor

    seen = set() if seen is None else seen
    if id(obj) in seen or obj is None or isinstance(obj, (str, bytes, int, float, bool, np.ndarray, type)):
        return []
    seen.add(id(obj))
    if isinstance(obj, (threading.Thread, Executor)):
        return [obj]
    if isinstance(obj, dict):
        items = list(obj.values())
    elif isinstance(obj, (list, tuple, set)):
        items = list(obj)
    else:
        items = list(getattr(obj, "__dict__", {}).values())
    return [t for x in items for t in _threads_within(x, seen)]


def test_a_study_loaded_with_its_encoder_running_holds_no_thread(tmp_path, monkeypatch):
    """The Study is a plain record while its planes are still being encoded: the encoder's thread
    belongs to the PlaneSource returned beside it, which the readers read the planes through."""
    prefix = write_ld_study(str(tmp_path / "ld"), n_snps=1500, n_cases=100, n_controls=100)
    gate = threading.Event()
    monkeypatch.setattr(load_mod, "_ENCODE_HOOK", lambda rows: gate.wait(120))
    study, planes = load_with_encoder(open_bfile(prefix))
    try:
        assert planes.background and not planes.done()
        assert _threads_within(study) == []
        assert not any(isinstance(v, PlaneSource) for v in vars(study).values())
        assert [t.name for t in _threads_within(planes)] == ["gboost-encode"]
    finally:
        gate.set()
        planes.close()
    assert not planes._thread.is_alive()


def test_reading_planes_through_the_source_waits_for_the_rows(tmp_path, monkeypatch):
    """``PlaneSource.read(rows)`` returns only once SNPs [0, rows) are written: a reader beside a
    held encoder waits (it never sees the unwritten rows) and then reads the one-pass load's planes."""
    prefix = write_ld_study(str(tmp_path / "ld"), n_snps=1500, n_cases=100, n_controls=100)
    want = load_study(open_bfile(prefix))
    gate = threading.Event()
    monkeypatch.setattr(load_mod, "_ENCODE_HOOK", lambda rows: rows <= 37 or gate.wait(120))
    study, planes = load_with_encoder(open_bfile(prefix))
    with planes:
        got = []
        reader = threading.Thread(target=lambda: got.append(planes.read(500)[:500].copy()))
        reader.start()
        reader.join(0.3)
        assert reader.is_alive() and not got and planes.rows < 500  # held: the reader waits
        np.testing.assert_array_equal(planes.read(37)[:37], want.planes[:37])  # the rows written: at once
        gate.set()
        reader.join(120)
        np.testing.assert_array_equal(got[0], want.planes[:500])
        assert planes.read() is study.planes
        np.testing.assert_array_equal(study.planes, want.planes)


def test_a_study_whose_planes_are_still_encoded_is_refused_without_its_source(tmp_path, monkeypatch):
    """run_pipeline given a study from load_with_encoder but not its PlaneSource refuses it (it would
    read the unwritten rows as zeros); given the source it scans; once every row is written the
    study alone is accepted."""
    from gboost import ScanParams
    from gboost.pipeline.scan import run_pipeline

    prefix = write_ld_study(str(tmp_path / "ld"), n_snps=1500, n_cases=60, n_controls=60)
    gate = threading.Event()
    monkeypatch.setattr(load_mod, "_ENCODE_HOOK", lambda rows: rows <= 37 or gate.wait(120))
    study, planes = load_with_encoder(open_bfile(prefix))
    with planes:
        with pytest.raises(ValueError, match="still being encoded: pass planes="):
            run_pipeline(study, ScanParams(device="cpu"))
        gate.set()
        got = run_pipeline(study, ScanParams(device="cpu"), planes=planes)
        planes.wait()
        again = run_pipeline(study, ScanParams(device="cpu"))
    assert got.n_valid == again.n_valid > 0 and len(got.screened) == len(again.screened)


def test_encoder_error_is_raised_where_planes_are_waited_for(tmp_path, monkeypatch):
    prefix = write_ld_study(str(tmp_path / "ld"), n_snps=1500, n_cases=100, n_controls=100)

    def hook(rows):
        if rows > 100:
            raise InputError(prefix + ".bed", "injected")

    monkeypatch.setattr(load_mod, "_ENCODE_HOOK", hook)
    study, planes = load_with_encoder(open_bfile(prefix))
    with planes:
        planes.wait(74)  # rows before the failure stay good
        with pytest.raises(InputError, match="injected"):
            planes.read()


def test_a_bed_that_changes_between_the_passes_is_refused(tmp_path, monkeypatch):
    prefix = write_ld_study(str(tmp_path / "ld"), n_snps=1500, n_cases=100, n_controls=100)
    source = open_bfile(prefix)
    real = type(source).iter_bed_rows
    calls = []

    def second_read_differs(self, block_snps, keep=None):
        calls.append(1)
        for start, data in real(self, block_snps, keep):
            if len(calls) > 1:
                data = data.copy()
                data[:, 0] ^= 0b11  # sample 1's calls change
            yield start, data

    monkeypatch.setattr(type(source), "iter_bed_rows", second_read_differs)
    study, planes = load_with_encoder(source)
    with planes, pytest.raises(InputError, match="changed while it was read"):
        planes.wait()


def test_cancel_stops_the_encoder(tmp_path, monkeypatch):
    prefix = write_ld_study(str(tmp_path / "ld"), n_snps=1500, n_cases=100, n_controls=100)
    made = []

    def hook(rows):  # the encoder holds its first run of rows until the cancel has been asked
        deadline = time.monotonic() + 120
        while not (made and made[-1].stopping) and time.monotonic() < deadline:
            time.sleep(0.001)

    monkeypatch.setattr(load_mod, "_ENCODE_HOOK", hook)
    study, ready = load_with_encoder(open_bfile(prefix))
    made.append(ready)
    ready.cancel()
    assert not ready._thread.is_alive() and not ready.done()
    with pytest.raises(ScanCancelled):
        ready.wait()


def test_workqueue_layer_encodes_before_returning(tmp_path, monkeypatch):
    """Where two threads may not run parallel kernels at once, the planes are complete on return."""
    prefix = write_ld_study(str(tmp_path / "ld"), n_snps=1500, n_cases=100, n_controls=100)
    monkeypatch.setattr(load_mod, "_threads_may_overlap", lambda: False)
    study, planes = load_with_encoder(open_bfile(prefix))
    assert not planes.background and planes.done()
    assert_same_study(study, load_study(open_bfile(prefix)))


def test_watermark_wait_and_stop():
    ready = PlaneSource(np.zeros((10, 3, 1), np.uint64), 0)
    ready.advance(4)
    ready.wait(4)
    with pytest.raises(ScanCancelled):
        ready.wait(5, stop=lambda: True)
    threading.Timer(0.05, ready.advance, args=(10,)).start()
    ready.wait()
    assert ready.done()
    failed = PlaneSource(np.zeros((10, 3, 1), np.uint64), 0)
    failed.check()  # no error yet: returns at once, without waiting for rows
    failed.fail(InputError("x.bed", "injected"))
    with pytest.raises(InputError, match="injected"):
        failed.check()


# ---------------------------------------------------------------------------------------------
# The scan command: the same files with the planes encoded beside the screen


@pytest.fixture(scope="module")
def scan_study(tmp_path_factory):
    return write_ld_study(str(tmp_path_factory.mktemp("streamscan") / "ld"), n_snps=1500, n_cases=250,
                          n_controls=250)


def scan(study, out, *extra, background=True, monkeypatch=None):
    from gboost.cli import main

    monkeypatch.setenv("GBOOST_BACKGROUND_ENCODE", "1" if background else "0")
    return main(["scan", "--bfile", study, "--out", str(out), "--device", "cpu", "--quiet", "--epi1", "1e-3",
                 "--tile", "64", *extra])


def same_files(a, b):
    for name in FILES:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


@pytest.fixture(scope="module")
def reference(scan_study, tmp_path_factory):
    """The scan with the planes encoded before the screen (the one-pass load)."""
    mp = pytest.MonkeyPatch()
    try:
        out = tmp_path_factory.mktemp("ref") / "out"
        assert scan(scan_study, out, background=False, monkeypatch=mp) == 0
    finally:
        mp.undo()
    return out


def test_scan_files_are_the_same_with_the_planes_encoded_beside_the_screen(scan_study, reference, tmp_path,
                                                                           monkeypatch):
    """A slowed encoder makes tiles wait for their SNPs: the screen takes them out of plan order
    (gboost.pipeline.scan.stream_order), and the files are still byte for byte the one-pass scan's."""
    from gboost.engines.cpu import CpuEngine

    monkeypatch.setattr(load_mod, "_ENCODE_HOOK", lambda rows: time.sleep(0.02))
    seen = []  # (tile index, j1, rows encoded when the tile was taken)
    real = CpuEngine.run_tile

    def run_tile(self, tile):
        seen.append((tile.index, tile.j1, self.planes.rows))
        return real(self, tile)

    monkeypatch.setattr(CpuEngine, "run_tile", run_tile)
    out = tmp_path / "out"
    assert scan(scan_study, out, monkeypatch=monkeypatch) == 0
    same_files(out, reference)
    order = [k for k, _, _ in seen]
    assert sorted(order) == list(range(len(order))) and order != sorted(order)  # every tile once, not in plan order
    assert any(j1 > rows for _, j1, rows in seen)  # some tile had to wait for the encoder
    run = json.loads((out / "run.json").read_text())
    assert run["command_s"]["background"]["encode"] > 0


def test_resume_after_an_interrupted_streamed_scan(scan_study, reference, tmp_path, monkeypatch):
    from gboost.pipeline.checkpoint import Ledger
    from gboost.engines.cpu import CpuEngine

    monkeypatch.setattr(load_mod, "_ENCODE_HOOK", lambda rows: time.sleep(0.01))
    real = CpuEngine.run_tile
    done = []

    def interrupted(self, tile):
        if len(done) == 60:
            raise KeyboardInterrupt
        done.append(tile.index)
        return real(self, tile)

    monkeypatch.setattr(CpuEngine, "run_tile", interrupted)
    out = tmp_path / "out"
    assert scan(scan_study, out, monkeypatch=monkeypatch) != 0
    assert Ledger.exists(out) and not (out / "pairs.tsv").exists()
    assert not [t for t in threading.enumerate() if t.name == "gboost-encode"]  # the encoder stopped with the scan
    monkeypatch.setattr(CpuEngine, "run_tile", real)
    assert scan(scan_study, out, "--resume", monkeypatch=monkeypatch) == 0
    same_files(out, reference)


def test_an_encoder_error_is_one_line_and_exit_2(scan_study, tmp_path, monkeypatch, capsys):
    def hook(rows):
        if rows > 400:
            raise InputError(scan_study + ".bed", "injected read error")

    monkeypatch.setattr(load_mod, "_ENCODE_HOOK", hook)
    out = tmp_path / "out"
    assert scan(scan_study, out, monkeypatch=monkeypatch) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"gboost: error: {scan_study}.bed: injected read error"]
    assert not any((out / name).exists() for name in FILES + ("run.json",))
    assert not out.exists() or not any(out.iterdir())  # no checkpoint left to block a rerun


@pytest.mark.parametrize("damage", ["truncated", "longer"])
def test_a_bad_bed_is_one_line_and_exit_2_nothing_written(scan_study, tmp_path, monkeypatch, capsys, damage):
    import shutil

    prefix = str(tmp_path / "bad")
    for ext in (".bim", ".fam"):
        shutil.copy(scan_study + ext, prefix + ext)
    data = open(scan_study + ".bed", "rb").read()
    open(prefix + ".bed", "wb").write(data[:-5] if damage == "truncated" else data + b"\0" * 7)
    out = tmp_path / "out"
    assert scan(prefix, out, monkeypatch=monkeypatch) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"gboost: error: {prefix}.bed")
    assert not out.exists() or not any(out.iterdir())


@pytest.mark.gpu
@pytest.mark.parametrize("planes", ["resident", "streamed"])
def test_gpu_engine_with_the_planes_encoded_beside_the_screen(tmp_path, monkeypatch, planes):
    """The GPU engine waits for the encoder (per tile taken, and per chunk of its resident upload;
    the streamed path, planes over the GPU budget, copies each tile's rows from the host): with a
    slowed encoder, the same files as the CPU engine's scan with the planes encoded first."""
    from gboost.cli import main
    from gboost.data.simulate import simulate_study
    from tests.helpers import gpu_skip_reason

    reason = gpu_skip_reason()
    if reason:
        pytest.skip(reason)
    prefix = str(tmp_path / "s")
    simulate_study(4000, 1000, 1000, seed=7, chromosomes=2, missing_rate=0.01, ld_block=20).write(prefix)
    common = ["--bfile", prefix, "--quiet", "--epi1", "1e-3", "--calibration-pairs", "2000"]
    monkeypatch.setenv("GBOOST_BACKGROUND_ENCODE", "0")
    assert main(["scan", *common, "--out", str(tmp_path / "cpu"), "--device", "cpu"]) == 0
    if planes == "streamed":  # as tests/gpu/test_biobank.py forces it: the planes stay on the host
        monkeypatch.setenv("GBOOST_GPU_MEMORY_LIMIT", str(int(1.5 * 4000 * 3 * 32 * 8)))
    monkeypatch.setenv("GBOOST_BACKGROUND_ENCODE", "1")
    monkeypatch.setattr(load_mod, "ENCODE_STEP_ROWS", 97)
    monkeypatch.setattr(load_mod, "_ENCODE_HOOK", lambda rows: time.sleep(0.01))
    out = tmp_path / "gpu"
    assert main(["scan", *common, "--out", str(out), "--device", "gpu", "--tile", "512"]) == 0
    same_files(out, tmp_path / "cpu")
    run = json.loads((out / "run.json").read_text())
    assert run["command_s"]["background"]["encode"] > 0.01 * (4000 // 97) * 0.5  # the slowed encoder ran beside
    if planes == "streamed":  # blocks the encoder had not reached were decoded on the GPU (decode.py)
        assert run["engine_info"]["decoded_bytes"] > 0


@pytest.mark.gpu
@pytest.mark.parametrize("build", ["mma", "cuda-core"])
@pytest.mark.parametrize("n, rows", [(1237, 301), (5, 3), (64, 1), (4099, 40)])
def test_gpu_decode_kernel_equals_the_numpy_reference(build, n, rows):
    """gb_decode_bed (the GPU's decode of streamed blocks, in both kernel modules) gives what
    encode.decode_bed_rows gives on NumPy (itself equal to bed_encode,
    test_decoded_rows_equal_the_encoders): planes and counts, exactly, on row lengths and class
    mixes with padding in both classes, samples left out, and a chunk cut anywhere."""
    from gboost.data.encode import bed_columns, bed_gather, bed_plan, decode_bed_rows
    from gboost.engines.gpu.compile import kernels
    from gboost.engines.gpu.config import KernelConfig, MmaConfig
    from gboost.engines.gpu.decode import decode_columns, decode_rows
    from tests.helpers import gpu_skip_reason

    reason = gpu_skip_reason()
    if reason:
        pytest.skip(reason)
    import cupy as cp

    rng = np.random.default_rng(n)
    codes = rng.choice(4, (rows, n), p=[0.4, 0.02, 0.38, 0.2]).astype(np.uint8)
    raw = bed_rows(codes)
    cols = np.flatnonzero(rng.random(n) < 0.9)
    is_case = rng.random(len(cols)) < 0.45
    plan = bed_plan(np.r_[cols[~is_case], cols[is_case]], np.r_[np.zeros((~is_case).sum(), bool),
                                                                np.ones(is_case.sum(), bool)], n)
    columns = bed_columns(plan)
    want_planes, want_counts = decode_bed_rows(np, raw, *bed_gather(np, columns), plan.layout.w_ctrl)
    kernel = kernels(0, MmaConfig() if build == "mma" else KernelConfig())["gb_decode_bed"]
    cols_t, n_words = decode_columns(cp, columns), len(columns) // 64
    planes = cp.full((rows, 3, n_words), 0xAAAA, dtype=np.uint64)  # every word written over
    counts = cp.full((rows + 1, 3, 2), 7, dtype=np.int64)
    decode_rows(kernel, cp.asarray(raw), cols_t, n_words, plan.layout.w_ctrl, planes, counts[:rows])
    np.testing.assert_array_equal(cp.asnumpy(planes), want_planes)
    np.testing.assert_array_equal(cp.asnumpy(counts[:rows]), want_counts)
    assert (cp.asnumpy(counts[rows]) == 7).all()  # nothing past the rows given
    if rows > 2:  # two chunks into one block's arrays, as BedDecoder cuts them
        cut = rows // 3
        got = cp.zeros((rows, 3, n_words), dtype=np.uint64)
        cnt = cp.zeros((rows, 3, 2), dtype=np.int64)
        for a, b in ((0, cut), (cut, rows)):
            decode_rows(kernel, cp.asarray(raw[a:b]), cols_t, n_words, plan.layout.w_ctrl, got[a:b], cnt[a:b])
        np.testing.assert_array_equal(cp.asnumpy(got), want_planes)
        np.testing.assert_array_equal(cp.asnumpy(cnt), want_counts)


@pytest.mark.gpu
def test_gpu_decode_refuses_a_bed_changed_since_the_counting_pass(tmp_path, monkeypatch, capsys):
    """A streamed block decoded on the GPU from a .bed whose rows changed since the counting pass:
    one line naming the .bed, exit 2, no output files (as the host encoder refuses it)."""
    from gboost.cli import main
    from gboost.data.simulate import simulate_study
    from tests.helpers import gpu_skip_reason

    reason = gpu_skip_reason()
    if reason:
        pytest.skip(reason)
    prefix = str(tmp_path / "s")
    simulate_study(2000, 600, 600, seed=11, missing_rate=0.01).write(prefix)
    monkeypatch.setenv("GBOOST_GPU_MEMORY_LIMIT", str(int(1.5 * 2000 * 3 * 20 * 8)))
    monkeypatch.setattr(load_mod, "_ENCODE_HOOK", lambda rows: time.sleep(0.2))
    real = load_mod.BedRows.read

    def changed(self, a, b, out, pool=None):
        real(self, a, b, out, pool)
        out[:, 0] ^= 0b11  # the first sample's call in every row, as if rewritten meanwhile

    monkeypatch.setattr(load_mod.BedRows, "read", changed)
    out = tmp_path / "gpu"
    assert main(["scan", "--bfile", prefix, "--quiet", "--out", str(out), "--device", "gpu", "--tile", "512"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"gboost: error: {prefix}.bed") and "changed while it was read" in err[0]
    assert not out.exists() or not any(p.name.startswith("pairs") for p in out.iterdir())


@pytest.mark.gpu
def test_gpu_decoding_runners_stop_at_the_next_tile_when_the_encoder_fails(tmp_path, monkeypatch, capsys):
    """Runners that decode the .bed themselves do not wait for the encoder, but a failed encode
    still stops the scan at the next tile taken (not after every tile is screened): one line naming
    the .bed, exit 2, no output files."""
    from gboost.cli import main
    from gboost.engines.gpu.device import DeviceRunner
    from gboost.data.simulate import simulate_study
    from tests.helpers import gpu_skip_reason

    reason = gpu_skip_reason()
    if reason:
        pytest.skip(reason)
    prefix = str(tmp_path / "s")
    simulate_study(4000, 600, 600, seed=13, missing_rate=0.01).write(prefix)
    monkeypatch.setenv("GBOOST_GPU_MEMORY_LIMIT", str(int(1.5 * 4000 * 3 * 20 * 8)))  # streamed: decodes
    monkeypatch.setenv("GBOOST_BACKGROUND_ENCODE", "1")
    monkeypatch.setattr(load_mod, "ENCODE_STEP_ROWS", 97)
    failed = threading.Event()

    def hook(rows):
        if rows > 200:
            failed.set()
            raise InputError(prefix + ".bed", "injected read error")

    monkeypatch.setattr(load_mod, "_ENCODE_HOOK", hook)
    screened = []
    real = DeviceRunner.finish

    def finish(self, pending):
        res = real(self, pending)
        screened.append(failed.is_set())
        failed.wait(5)  # every later tile is taken after the encoder failed
        return res

    monkeypatch.setattr(DeviceRunner, "finish", finish)
    out = tmp_path / "gpu"
    assert main(["scan", "--bfile", prefix, "--quiet", "--out", str(out), "--device", "gpu", "--tile", "256"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"gboost: error: {prefix}.bed: injected read error"]
    n_tiles = (4000 // 256 + 1) * (4000 // 256 + 2) // 2
    assert len(screened) <= 4 < n_tiles  # the tiles in flight when it failed, then none
    assert not out.exists() or not any(p.name.startswith("pairs") for p in out.iterdir())


@pytest.mark.parametrize("n", [1, 3, 4, 5, 31, 32, 33, 63, 64, 65, 127, 128, 129, 257, 700])
@pytest.mark.parametrize("pattern", ["interleaved", "one class first", "some left out"])
def test_class_counts_from_the_codes_equal_the_encoders(n, pattern):
    """bed_class_counts (the counting pass's kernel: popcounts of the 2-bit codes in place) gives
    bed_encode's counts, and the counts of the decoded calls, on every row length and class mix."""
    from gboost.data.encode import bed_class_counts, bed_encode, bed_plan, monomorphic

    rng = np.random.default_rng(n)
    codes = rng.integers(0, 4, (23, n)).astype(np.uint8)
    codes[3] = 1  # all missing
    codes[4] = 0
    raw = bed_rows(codes)
    geno = np.array([2, -1, 1, 0], np.int8)[codes]
    member = rng.random(n) < 0.8 if pattern == "some left out" and n > 1 else np.ones(n, bool)
    cols = np.flatnonzero(member)
    is_case = (rng.random(len(cols)) < 0.5) if pattern != "one class first" else (np.arange(len(cols)) >= len(cols) // 2)
    order = np.r_[cols[~is_case], cols[is_case]]
    plan = bed_plan(order, np.r_[np.zeros((~is_case).sum(), bool), np.ones(is_case.sum(), bool)], n)
    rows = np.array([5, 0, 3, 4, 22, 7])
    for quantitative in (False, True):
        got, mono = bed_class_counts(raw, rows, plan, quantitative)
        want = np.empty((len(rows), 3, 2), np.int64)
        _, want_mono = bed_encode(raw, plan, rows, np.empty((len(rows), 3, plan.layout.n_words), np.uint64), want,
                                  quantitative)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(mono, want_mono)
        np.testing.assert_array_equal(mono, monomorphic(want, quantitative))
    assert mono[[2, 3]].all()  # rows 3 (all missing) and 4 (one homozygote)
    by_calls = np.stack([[[(geno[r, order][cls] == t).sum() for cls in (~np.sort(is_case), np.sort(is_case))]
                          for t in range(3)] for r in rows])
    np.testing.assert_array_equal(got, by_calls)


@pytest.mark.parametrize("n", [1, 3, 4, 5, 31, 32, 33, 63, 64, 65, 127, 128, 129, 257, 700])
@pytest.mark.parametrize("pattern", ["interleaved", "one class first", "some left out"])
def test_decoded_rows_equal_the_encoders(n, pattern):
    """decode_bed_rows (the GPU's decode of SNP blocks, as array operations; here on NumPy) gives
    bed_encode's planes, padding included, and its counts, on every row length and class mix."""
    from gboost.data.encode import bed_columns, bed_encode, bed_gather, bed_plan, decode_bed_rows

    rng = np.random.default_rng(1000 + n)
    codes = rng.integers(0, 4, (23, n)).astype(np.uint8)
    codes[3] = 1  # all missing
    codes[6, :] = rng.choice([0, 1], n, p=[0.99, 0.01])  # a rare call beside many homozygotes
    raw = bed_rows(codes)
    member = rng.random(n) < 0.8 if pattern == "some left out" and n > 1 else np.ones(n, bool)
    cols = np.flatnonzero(member)
    is_case = (rng.random(len(cols)) < 0.5) if pattern != "one class first" else (np.arange(len(cols)) >= len(cols) // 2)
    order = np.r_[cols[~is_case], cols[is_case]]
    plan = bed_plan(order, np.r_[np.zeros((~is_case).sum(), bool), np.ones(is_case.sum(), bool)], n)
    rows = np.array([5, 0, 3, 4, 22, 7, 6])
    want = np.full((len(rows), 3, plan.layout.n_words), 0xDEADBEEF, np.uint64)  # every word must be written
    want_counts = np.empty((len(rows), 3, 2), np.int64)
    bed_encode(raw, plan, rows, want, want_counts)
    planes, counts = decode_bed_rows(np, raw[rows], *bed_gather(np, bed_columns(plan)), plan.layout.w_ctrl)
    assert planes.dtype == np.uint64 and counts.dtype == np.int64
    np.testing.assert_array_equal(planes, want)
    np.testing.assert_array_equal(counts, want_counts)


@pytest.mark.parametrize("readers", [1, 3])
def test_bed_rows_read_the_kept_snps_rows(tmp_path, monkeypatch, readers):
    """BedRows.read (what the GPU decodes a streamed block from): the .bed rows of the study's SNPs
    [a, b), kept rows scattered through the file, by one or several readers."""
    from concurrent.futures import ThreadPoolExecutor

    from gboost.readers import plink_bed

    prefix = write_ld_study(str(tmp_path / "ld"), n_snps=1500, n_cases=90, n_controls=80)
    monkeypatch.setattr(plink_bed, "BED_READERS", readers)
    monkeypatch.setattr(plink_bed, "MIN_READ_BYTES", 1)
    src = open_bfile(prefix)
    study, planes = load_with_encoder(src, QCOptions(maf=0.05))
    with planes:
        planes.wait()
    rows = planes.bed_rows
    assert len(rows.kept) == study.n_snps < len(src.variants)  # some SNPs left out: the rows are scattered
    whole = np.fromfile(prefix + ".bed", np.uint8, offset=3).reshape(len(src.variants), rows.row_bytes)
    with ThreadPoolExecutor(readers) as pool:
        for a, b in [(0, study.n_snps), (5, 6), (17, 400), (study.n_snps - 3, study.n_snps)]:
            out = np.zeros((b - a, rows.row_bytes), np.uint8)
            rows.read(a, b, out, pool if a % 2 else None)
            np.testing.assert_array_equal(out, whole[rows.kept[a:b]])
    rows.check(3, study.counts[3:9])  # the counting pass's own counts pass
    bad = study.counts[3:9].copy()
    bad[2, 0, 1] += 1
    with pytest.raises(InputError, match="changed while it was read"):
        rows.check(3, bad)


class _Edge:
    """A watermark that stands still (what stream_order reads of gboost.data.planes.PlaneSource)."""

    def __init__(self, rows, total):
        self.rows, self.total = rows, total

    def done(self):
        return self.rows >= self.total


def test_stream_order_takes_encoded_tiles_in_plan_order_then_the_least_waiting():
    from gboost.pipeline.scan import stream_order
    from gboost.pipeline.tiles import plan_tiles

    tiles = plan_tiles(100, 10)
    # Nothing encoded: column-block order (by j1, then i0); every tile once.
    got = list(stream_order(tiles, _Edge(0, 100)))
    assert [t.index for t in got] == [t.index for t in sorted(tiles, key=lambda t: (t.j1, t.i0))]
    # Everything encoded: plan order.
    assert list(stream_order(tiles, _Edge(100, 100))) == tiles
    # Half encoded: first every tile within the encoded SNPs, in plan order, then the rest by (j1, i0).
    got = list(stream_order(tiles, _Edge(50, 100)))
    inside = [t for t in tiles if t.j1 <= 50]
    assert got[: len(inside)] == inside
    assert got[len(inside):] == sorted((t for t in tiles if t.j1 > 50), key=lambda t: (t.j1, t.i0))
    # The watermark moving as tiles are taken: each tile is taken once its columns are encoded
    # whenever one such tile is left.
    edge = _Edge(0, 100)
    taken = []
    for t in stream_order(tiles, edge):
        left = [u for u in tiles if u not in taken]
        assert t.j1 <= edge.rows or all(u.j1 > edge.rows for u in left)
        taken.append(t)
        edge.rows = min(100, edge.rows + 7)
    assert sorted(t.index for t in taken) == list(range(len(tiles)))
    # A resumed plan (some tiles done) and a --part's rows.
    part = [t for t in plan_tiles(100, 10, (30, 70)) if t.index % 3]
    assert sorted(stream_order(part, _Edge(20, 100)), key=lambda t: t.index) == part


# ---------------------------------------------------------------------------------------------
# The GPU engine's tile queue against the planes' source (host side only: stand-in runners, no CuPy)


class _StandInRunner:
    """What GpuEngine.run_tiles asks of a DeviceRunner; records the watermark at each tile taken."""

    def __init__(self, source, decodes, on_tile=None):
        self.source, self.decodes, self.device_id, self.slots = source, decodes, 0, (0, 1)
        self.taken, self.on_tile = [], on_tile

    def try_submit(self, tile, slot):
        self.taken.append((tile.j1, self.source.rows))
        if self.on_tile is not None:
            self.on_tile(len(self.taken))
        return tile

    def finish(self, tile):
        return tile


def _stand_in_engine(monkeypatch, source, decodes, on_tile=None):
    from types import SimpleNamespace

    import gboost.engines.gpu.engine as gpu_engine

    errors = SimpleNamespace(CUDARuntimeError=type("E1", (Exception,), {}), CUDADriverError=type("E2", (Exception,), {}))
    monkeypatch.setattr(gpu_engine, "cupy", lambda: SimpleNamespace(cuda=SimpleNamespace(runtime=errors, driver=errors)))
    eng = gpu_engine.GpuEngine()
    runner = _StandInRunner(source, decodes, on_tile)
    eng._runners, eng.plane_source = [runner], source
    return eng, runner


def test_the_gpu_tile_queue_takes_a_tile_once_the_source_has_its_rows(monkeypatch):
    """A runner that does not decode the .bed takes each tile only once the encoder has written
    its SNPs (the planes' source's watermark, raised here on a timer)."""
    from gboost.pipeline.tiles import plan_tiles

    source = PlaneSource(np.zeros((100, 3, 1), np.uint64), 0)
    eng, runner = _stand_in_engine(monkeypatch, source, decodes=False)
    timers = [threading.Timer(0.02 * k, source.advance, args=(10 * k,)) for k in range(1, 11)]
    for t in timers:
        t.start()
    tiles = plan_tiles(100, 10)
    got = list(eng.run_tiles(tiles))
    assert sorted(t.index for t in got) == [t.index for t in tiles]
    assert all(j1 <= rows for j1, rows in runner.taken) and runner.taken[0][1] < 100  # some had to wait


def test_a_decoding_gpu_runner_never_waits_and_stops_at_the_encoders_error(monkeypatch):
    """Runners that decode the .bed take tiles whatever the watermark; a failed encode still stops
    the scan, at the next tile taken, with the encoder's own error."""
    from gboost.pipeline.tiles import plan_tiles

    tiles = plan_tiles(100, 10)
    source = PlaneSource(np.zeros((100, 3, 1), np.uint64), 0)
    eng, runner = _stand_in_engine(monkeypatch, source, decodes=True)
    assert len(list(eng.run_tiles(tiles))) == len(tiles) and {rows for _, rows in runner.taken} == {0}
    failed = PlaneSource(np.zeros((100, 3, 1), np.uint64), 0)
    fail_at_3 = lambda k: k == 3 and failed.fail(InputError("x.bed", "injected"))  # noqa: E731
    eng, runner = _stand_in_engine(monkeypatch, failed, decodes=True, on_tile=fail_at_3)
    with pytest.raises(InputError, match="injected"):
        list(eng.run_tiles(tiles))
    assert len(runner.taken) == 3  # (the encoder failed during the third: no tile taken after it)
