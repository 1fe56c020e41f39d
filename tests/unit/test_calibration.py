"""Calibration of the interaction test on null studies: lambda near 1, reported count as expected."""
import numpy as np
import pytest
from scipy import stats as sps

from gboost.stats.calibration import CHI2_4_MEDIAN, calibrate, sample_pairs
from gboost.pipeline.scan import ScanParams, run_scan
from gboost.data.simulate import simulate_study
from gboost.data.study import study_from_genotypes


def test_sampled_pairs_are_uniform_over_the_triangle():
    p, k = 1001, 400_000
    i, j = sample_pairs(p, k, np.random.default_rng(1))
    assert ((0 <= i) & (i < j) & (j < p)).all()
    rows = np.bincount(i, minlength=p)[:-1]
    expected = (p - 1 - np.arange(p - 1)) / (p * (p - 1) / 2) * k
    chi2 = ((rows - expected) ** 2 / expected).sum()
    assert sps.chi2.sf(chi2, p - 2) > 1e-4
    i, j = sample_pairs(10, 10**6, np.random.default_rng(1))  # small: every pair once
    assert len(i) == 45 and len(set(zip(i.tolist(), j.tolist()))) == 45


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2])
def test_null_study_lambda_near_one_and_reported_count_as_expected(seed):
    sim = simulate_study(600, 1000, 1000, seed=seed, chromosomes=3, maf_range=(0.1, 0.5), missing_rate=0.01)
    study = study_from_genotypes(sim.genotypes, sim.samples.status == 2, variants=sim.variants)
    res = run_scan(study, ScanParams(device="cpu", epi1=1e-3, calibration_pairs=200_000))
    cal = res.calibration
    assert cal.n_pairs == 600 * 599 // 2  # small enough to test every pair exactly
    assert abs(cal.lam - 1.0) < 0.05, cal.lam
    # Reported pairs at epi1 under the null: Binomial(n_valid, epi1) (pairs are nearly independent).
    expected = res.n_valid * 1e-3
    assert abs(len(res.reported) - expected) < 5 * np.sqrt(expected), (len(res.reported), expected)


def test_lambda_is_median_over_chi2_4_median(rng):
    from tests.helpers import random_genotypes

    g, is_case = random_genotypes(rng, 60, 300, missing=0.0)
    cal = calibrate(study_from_genotypes(g, is_case), n_pairs=10_000)
    assert cal.lam == pytest.approx(np.median(cal.stat[cal.df == 4]) / CHI2_4_MEDIAN)


@pytest.mark.slow
def test_the_calibration_tables_leave_the_gil_to_the_threads_that_feed_the_gpu():
    """The calibration's tables are counted on the host-work thread beside a GPU screen, whose worker
    thread needs the GIL to queue each tile. Counted under the GIL (the 200,000 tables of a 200k-sample
    study, ~6 s), they left the H100 idle 3.7 s between two tiles. Here another thread
    counts tables while this one keeps ticking: no tick may wait for the whole count."""
    import threading
    import time

    from gboost.engines.cpu import _tables_of

    rng = np.random.default_rng(3)
    p, words = 64, 4096
    planes = rng.integers(0, 2**63, size=(p, 3, words), dtype=np.int64).view(np.uint64)
    counts = np.zeros((p, 3, 2), np.int64)
    has_missing = np.ones(p, bool)
    i, j = sample_pairs(p, 30_000, rng)
    i, j = np.repeat(i, 15), np.repeat(j, 15)  # ~30,000 x 15 tables of 4,096 words: about a second
    _tables_of(planes, counts, has_missing, words // 2, i[:2], j[:2])  # compiled or loaded before timing
    done = threading.Event()
    span = {}

    def count():
        t = time.perf_counter()
        _tables_of(planes, counts, has_missing, words // 2, i, j)
        span["s"] = time.perf_counter() - t
        done.set()

    worker = threading.Thread(target=count)
    longest, last = 0.0, time.perf_counter()
    worker.start()
    while not done.is_set():  # busy: a GIL held by the worker shows as one gap as long as its count
        now = time.perf_counter()
        longest, last = max(longest, now - last), now
    worker.join()
    assert span["s"] > 0.2, span  # long enough that a held GIL would show
    assert longest < 0.5 * span["s"], (longest, span)


def test_the_calibrations_tables_on_every_core_equal_each_pairs_own_table():
    """calibrate counts its pairs' tables in parallel (gboost.engines.cpu._tables_of_parallel): every table
    equals pair_table's for that pair, and the serial loop's, on a study with missing calls, fully called
    and monomorphic SNPs, pairs in any order and repeated."""
    from gboost.engines.cpu import tables_of
    from gboost.stats.table import pair_table

    sim = simulate_study(300, 400, 350, seed=5, chromosomes=2, maf_range=(0.01, 0.5), missing_rate=0.02)
    g = sim.genotypes.copy()
    g[:40] = np.where(g[:40] < 0, 0, g[:40])  # fully called SNPs
    g[50] = 1  # monomorphic
    study = study_from_genotypes(g, sim.samples.status == 2, variants=sim.variants)
    assert study.has_missing.any() and not study.has_missing.all()
    i, j = sample_pairs(study.n_snps, 5_000, np.random.default_rng(3))
    i, j = np.concatenate([i, i[:50]]), np.concatenate([j, j[:50]])
    got = tables_of(study, i, j, parallel=True)
    np.testing.assert_array_equal(got, tables_of(study, i, j))
    want = np.zeros((len(i), 3, 3, 2), np.int64)
    for m in range(0, len(i), 97):  # (every 97th against the reference: pair_table is the oracle)
        pair_table(study.planes, study.counts, np.ascontiguousarray(study.has_missing), study.layout.w_ctrl,
                   int(i[m]), int(j[m]), want[m])
        np.testing.assert_array_equal(got[m], want[m])
