"""A quantitative trait's scan on a Dask cluster (gboost/engines/qt_distributed.py) gives the CPU
engine's files byte for byte: the whole triangle, a --part share, covariates in every pair, a
candidate-set rectangle, --perm on one cluster, a checkpoint of the CPU engine resumed on the
cluster, and the command's --dask."""
import numpy as np
import pytest

pytest.importorskip("distributed", reason="Dask is not installed (pip install 'gboost[cluster]')")

from gboost.cli import main as gboost_main  # noqa: E402
from gboost.data.simulate import simulate_qt_study  # noqa: E402
from gboost.engines.qt_cpu import QTCPUEngine  # noqa: E402
from gboost.engines.qt_distributed import QTDaskEngine  # noqa: E402
from gboost.errors import ScanCancelled  # noqa: E402
from gboost.outputs.qt_results import render_qt_outputs  # noqa: E402
from gboost.pipeline.qt_scan import QTParams, run_qt_scan  # noqa: E402

pytestmark = pytest.mark.slow  # a local cluster's worker processes
FILES = ("pairs.tsv", "pairs.epi.qt", "pairs.epi.qt.summary", "marginal.tsv")


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """LD blocks, 2 % missing calls, a planted pair: 260 SNPs, so that the CPU engine's plan has
    several row tiles (QTCPUEngine.plan's buffers hold few rows of this width only when told to)."""
    sim = simulate_qt_study(260, 230, seed=21, chromosomes=2, missing_rate=0.02, ld_block=8,
                            effects=[(5, 200, 0.7)])
    prefix = str(tmp_path_factory.mktemp("qtdask") / "qt")
    sim.write(prefix)
    from gboost.data.inputs import open_input
    from gboost.data.load import load_study

    return load_study(open_input(bfile=prefix)), prefix


@pytest.fixture(scope="module")
def cluster():
    eng = QTDaskEngine("local:2")
    yield eng
    eng.close()


@pytest.fixture
def small_tiles(monkeypatch):
    """Row tiles of 7 rows (the plan's buffers otherwise hold every row of so small a study)."""
    monkeypatch.setattr(QTCPUEngine, "_block", staticmethod(lambda p: 7))


def files(result) -> dict:
    texts = render_qt_outputs(result)
    return {k: texts[k] for k in FILES}


def covariates_of(study):
    rng = np.random.default_rng(5)
    m = np.column_stack([rng.standard_normal(study.n_samples), rng.integers(0, 2, study.n_samples)]).astype(float)
    m[rng.random(study.n_samples) < 0.03, 0] = np.nan
    return m, ["age", "sex"]


@pytest.mark.parametrize("kw", [dict(epi1=0.05), dict(epi1=1.0), dict(epi1=0.05, part=(2, 3))],
                         ids=["triangle", "every-pair", "part"])
def test_the_cluster_writes_the_cpu_engines_files(study, cluster, small_tiles, kw):
    st, _ = study
    params = QTParams(device="cpu", **kw)
    want = run_qt_scan(st, params, engine=QTCPUEngine(threads=1))
    got = run_qt_scan(st, params, engine=cluster)
    assert files(got) == files(want)
    assert got.n_valid == want.n_valid and got.engine == "dask"
    assert len(cluster.client.nthreads()) == 2


def test_covariates_adjust_every_pair_on_the_cluster(study, cluster, small_tiles):
    st, _ = study
    cov = covariates_of(st)
    params = QTParams(device="cpu", epi1=0.05)
    want = run_qt_scan(st, params, covariates=cov, engine=QTCPUEngine(threads=1))
    got = run_qt_scan(st, params, covariates=cov, engine=cluster)
    assert files(got) == files(want)
    assert got.test == "linear+covariates" and len(got.screened) > 0
    for a, b in zip(got.screened.adj, want.screened.adj):
        np.testing.assert_array_equal(a, b)


def test_a_candidate_set_rectangle_on_the_cluster(study, cluster):
    from gboost.data.candidates import CandidateSets, rectangle_study

    st, _ = study
    snps = list(st.variants.snp)
    sets = CandidateSets("hits.set", "set", (("HITS", tuple(snps[3:40:3])),))
    rect = rectangle_study(st, sets, "set-by-all")
    params = QTParams(device="cpu", epi1=0.1)
    want = run_qt_scan(rect, params, engine=QTCPUEngine(threads=1))
    got = run_qt_scan(rect, params, engine=cluster)
    assert files(got) == files(want)
    assert got.n_valid == want.n_valid > 0


def test_permutations_run_on_one_cluster_with_the_cpu_engines_maxima(study, small_tiles):
    st, _ = study
    params = QTParams(device="cpu", epi1=0.05, perm=4, perm_seed=9)
    want = run_qt_scan(st, params, engine=QTCPUEngine(threads=1))
    eng = QTDaskEngine("local:2")
    connects = []
    real = eng._connect
    eng._connect = lambda: (connects.append(1), real())[1]
    got = run_qt_scan(st, params, engine=eng)
    assert connects == [1] and eng.client is None  # one cluster for the scan and its 4 permutations, closed after
    assert [(m.stat, m.i, m.j) for m in got.perm.maxima] == [(m.stat, m.i, m.j) for m in want.perm.maxima]
    assert files(got) == files(want)


def test_a_cpu_checkpoint_resumes_on_the_cluster(study, cluster, small_tiles, tmp_path):
    """The cluster's tiles are the CPU engine's plan: an interrupted CPU scan's checkpoint is taken
    up by the cluster, which scans only the tiles not done, to the uninterrupted run's files."""
    st, _ = study
    params = QTParams(device="cpu", epi1=0.05)
    want = run_qt_scan(st, params, engine=QTCPUEngine(threads=1))
    calls = []

    def cancel():
        calls.append(1)
        return len(calls) > 12  # some row blocks in

    with pytest.raises(ScanCancelled):
        run_qt_scan(st, params, engine=QTCPUEngine(threads=1), checkpoint_dir=tmp_path, cancel=cancel)
    seen = []
    got = run_qt_scan(st, params, engine=cluster, checkpoint_dir=tmp_path, resume=True,
                      progress=lambda done, total: seen.append((done, total)))
    assert files(got) == files(want)
    assert seen and 0 < seen[0][0] < seen[0][1]  # it started from the finished tiles


def test_the_command_with_dask_writes_the_cpu_commands_files(study, tmp_path):
    _, prefix = study
    for name, extra in (("cpu", ["--device", "cpu"]), ("dask", ["--dask", "local:2"])):
        assert gboost_main(["scan", "--bfile", prefix, "--out", str(tmp_path / name), "--epi1", "0.01", "--quiet",
                            *extra]) == 0
    for f in ("pairs.epi.qt", "pairs.epi.qt.summary", "pairs.tsv", "marginal.tsv"):
        assert (tmp_path / "dask" / f).read_bytes() == (tmp_path / "cpu" / f).read_bytes(), f
    import json

    run = json.loads((tmp_path / "dask" / "run.json").read_text())
    assert "Dask cluster local:2" in json.dumps(run)


def test_a_worker_killed_mid_scan_loses_nothing_and_counts_nothing_twice(study, small_tiles):
    import os
    import signal

    st, _ = study
    params = QTParams(device="cpu", epi1=0.05)
    want = run_qt_scan(st, params, engine=QTCPUEngine(threads=1))
    eng = QTDaskEngine("local:2")
    killed = []

    def progress(done, total):
        if done > total // 4 and not killed:
            pids = eng.client.run(os.getpid)
            victim = sorted(pids.values())[0]
            os.kill(victim, signal.SIGKILL)
            killed.append(victim)

    try:
        got = run_qt_scan(st, params, engine=eng, progress=progress)
    finally:
        eng.close()
    assert killed
    assert files(got) == files(want) and got.n_valid == want.n_valid


def test_a_cancelled_cluster_scan_keeps_its_tiles_for_a_resume_here(study, cluster, small_tiles, tmp_path):
    """Cancel on the cluster: the scan stops with ScanCancelled, the checkpoint holds the tiles that
    came back, and a resume on this machine's CPU engine scans only the rest, to the files of one
    uninterrupted run."""
    st, _ = study
    params = QTParams(device="cpu", epi1=0.05)
    want = run_qt_scan(st, params, engine=QTCPUEngine(threads=1))
    got_tiles = []

    def progress(done, total):
        got_tiles.append(done)

    with pytest.raises(ScanCancelled):
        run_qt_scan(st, params, engine=cluster, checkpoint_dir=tmp_path, progress=progress,
                    cancel=lambda: len(got_tiles) >= 3)
    assert len(got_tiles) >= 3
    seen = []
    got = run_qt_scan(st, params, engine=QTCPUEngine(threads=1), checkpoint_dir=tmp_path, resume=True,
                      progress=lambda done, total: seen.append((done, total)))
    assert files(got) == files(want)
    assert seen and seen[0][0] >= got_tiles[2] > 0  # it went on from the cluster's tiles


def test_covariate_parts_on_the_cluster_merge_to_the_whole_cpu_scan(study, tmp_path):
    """The seams together: a QT scan with --covar in two --part shares, each on a Dask cluster,
    joined by `gboost merge`, gives the files of one whole scan on this machine's CPU engine."""
    st, prefix = study
    rng = np.random.default_rng(2)
    with open(prefix + ".fam") as f:
        ids = [line.split()[:2] for line in f]
    cov = tmp_path / "cov.txt"
    cov.write_text("FID IID age\n" + "".join(f"{a} {b} {rng.normal():.4f}\n" for a, b in ids))
    base = ["scan", "--bfile", prefix, "--covar", str(cov), "--quiet", "--epi1", "0.01"]
    for k in (1, 2):
        assert gboost_main([*base, "--dask", "local:2", "--part", f"{k}/2", "--out", str(tmp_path / f"p{k}")]) == 0
    assert gboost_main(["merge", str(tmp_path / "p1"), str(tmp_path / "p2"), "--out", str(tmp_path / "m")]) == 0
    assert gboost_main([*base, "--device", "cpu", "--out", str(tmp_path / "whole")]) == 0
    for f in ("pairs.epi.qt", "pairs.epi.qt.summary", "pairs.tsv"):
        assert (tmp_path / "m" / f).read_bytes() == (tmp_path / "whole" / f).read_bytes(), f
    assert "STAT_ADJ" in (tmp_path / "m" / "pairs.tsv").read_text().splitlines()[0]
