"""--perm on a quantitative trait (gboost/pipeline/permute.py, gboost/pipeline/qt_scan.py): the
permuted trait, each permutation's maximum against a brute-force reference (every pair's statistic
of a study built anew with the permuted trait) on the CPU engine and on the GPU engine's tile math
(numpy), EMP2, --within strata, the refusal with covariates, and the permutations' checkpoint."""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from gboost.engines.qt_cpu import QTCPUEngine, pair_linear_test, qt_planes
from gboost.engines.qt_gpu import QTGPUEngine
from gboost.errors import InputError, ScanCancelled
from gboost.pipeline.checkpoint import PERM_LEDGER
from gboost.pipeline.permute import (permutation_order, permuted_labels, permuted_trait, run_permutations,
                                     trait_maximum)
from gboost.pipeline.qt_scan import PERM_WITH_COVARIATES, QTParams, run_qt_scan
from gboost.stats.qt import linear_pair_test
from tests.helpers import qt_study_of


def _genotypes(rng, p=18, n=157, missing=0.03):
    """LD pairs, missing calls, n not a multiple of 64, and SNPs whose pairs fail: a copy of SNP 3
    (r > 0.999 with it), a monomorphic SNP and a SNP never called."""
    maf = rng.uniform(0.08, 0.5, p)
    g = rng.binomial(2, maf[:, None], size=(p, n)).astype(np.int8)
    g[1::4] = np.where(rng.random((len(g[1::4]), n)) < 0.8, g[0::4][: len(g[1::4])], g[1::4])  # LD
    g[rng.random((p, n)) < missing] = -1
    if p >= 15:
        g[7] = g[3]
        g[11] = np.where(g[11] < 0, -1, 1)
        g[14] = -1
    return g


@pytest.fixture(scope="module")
def qt():
    rng = np.random.default_rng(12)
    g = _genotypes(rng)
    y = 20 + rng.standard_normal(g.shape[1]) + 1.2 * np.clip(g[2], 0, 2) * np.clip(g[9], 0, 2)
    st, dose = qt_study_of(g, y, flip=rng.random(len(g)) < 0.4)
    return st, dose, y


def _brute(st, dose, trait):
    """Every pair's STAT of a study built anew with ``trait`` (PLINK's order of sums, pair by pair):
    (max, i, j) of the first pair in (i, j) order on ties; and the same maximum from the pairs' 3x3
    tables (an independent route to the statistic, equal to ~1e-9)."""
    s2, _ = qt_study_of(st_genotypes(dose), trait)  # (PLINK's A1 dosages: nothing flipped)
    qp = qt_planes(s2)
    best, at, table_best = -math.inf, (-1, -1), -math.inf
    for i in range(st.n_snps):
        for j in range(i + 1, st.n_snps):
            ok, _, stat, _ = pair_linear_test(qp.h1, qp.h2, qp.miss, qp.pg, qp.sa, qp.saa, qp.y, qp.n, qp.y_sum,
                                              qp.y2_sum, i, j)
            if ok and stat > best:
                best, at = stat, (i, j)
            a, b = dose[i], dose[j]
            called = (a >= 0) & (b >= 0)
            n = np.zeros((3, 3), np.int64)
            s = np.zeros((3, 3))
            np.add.at(n, (a[called], b[called]), 1)
            np.add.at(s, (a[called], b[called]), trait[called])
            ok2, _, stat2, _ = linear_pair_test(n, s, float((trait[called] ** 2).sum()))
            if ok2:
                table_best = max(table_best, stat2)
    if at == (-1, -1):
        return math.nan, -1, -1
    assert table_best == pytest.approx(best, rel=1e-9)
    return float(best), at[0], at[1]


def st_genotypes(dose):
    """The dosages of PLINK's A1 as genotypes (-1 missing), for a study built anew."""
    return np.where(dose >= 0, dose, -1).astype(np.int8)


def test_the_trait_moves_by_the_order_labels_move_by():
    rng = np.random.default_rng(3)
    n = 301
    y = rng.standard_normal(n)
    strata = rng.integers(0, 5, n)
    for k in range(20):
        order = permutation_order(n, 9, k, strata)
        assert np.array_equal(np.sort(order), np.arange(n))  # a permutation of the samples
        assert np.array_equal(strata[order], strata)  # every sample's value comes from its stratum
        t = permuted_trait(y, 9, k, strata)
        assert np.array_equal(t, y[order])
        for s in range(5):
            assert np.array_equal(np.sort(t[strata == s]), np.sort(y[strata == s]))
        is_case = y > 0.3
        assert np.array_equal(permuted_labels(is_case, 9, k, strata), is_case[order])
    assert not np.array_equal(permuted_trait(y, 9, 0), permuted_trait(y, 9, 1))
    assert np.array_equal(permuted_trait(y, 9, 4), permuted_trait(y, 9, 4))
    assert not np.array_equal(permuted_trait(y, 9, 4), permuted_trait(y, 10, 4))


@pytest.mark.parametrize("engine", ["cpu", "gpu-numpy"])
def test_each_permutation_maximum_is_the_brute_force_maximum(qt, engine):
    st, dose, y = qt
    eng = QTCPUEngine(threads=2) if engine == "cpu" else QTGPUEngine(xp=np, tile=5)
    strata = np.arange(st.n_samples) % 3
    res = run_permutations(st, eng, 6, 41, strata=strata)
    assert [m.k for m in res.maxima] == list(range(6)) and res.trait == "quantitative"
    for m in res.maxima:
        want = _brute(st, dose, permuted_trait(y, 41, m.k, strata))
        assert (m.stat, m.i, m.j, m.df) == (*want, 1)  # the same double, the same pair


def test_ties_take_the_first_pair():
    # Four SNPs, each twice (k and k + 4): a pair of distinct SNPs has three twins of its table,
    # so every maximum is tied and the first pair in (i, j) order must be named.
    rng = np.random.default_rng(8)
    g = _genotypes(rng, p=4, n=90, missing=0.02)[:4]
    g = np.concatenate([g, g])
    y = rng.standard_normal(90)
    st, dose = qt_study_of(g, y)
    for k in range(6):
        tr = permuted_trait(y, 5, k)
        m = trait_maximum(QTCPUEngine(threads=1), st, tr, k)
        assert (m.stat, m.i, m.j) == _brute(st, dose, tr)
        assert (m.i, m.j) not in {(a, a + 4) for a in range(4)}  # (a SNP and its copy fail)


def test_the_qt_scans_emp2_is_the_brute_force_emp2(qt):
    st, dose, y = qt
    res = run_qt_scan(st, QTParams(epi1=0.2, device="cpu", perm=9, perm_seed=2))
    plain = np.array([_brute(st, dose, permuted_trait(y, 2, k))[0] for k in range(9)])
    assert np.array_equal(res.perm.stats, plain)
    rep = res.reported
    assert len(rep) >= 3
    assert np.array_equal(rep.emp2, np.array([(1 + (plain >= s).sum()) / 10 for s in rep.stat]))
    assert rep.emp2[0] == pytest.approx(0.1)  # the planted pair (STAT ~ 22) beats every permutation
    sc = res.screened  # with --epi1 1 the failed pairs are rows too: their EMP2 is NaN
    every = run_qt_scan(st, QTParams(epi1=1.0, device="cpu", perm=3, perm_seed=2))
    assert np.isnan(every.screened.emp2[~every.screened.ok]).all() and (~every.screened.ok).any()
    assert np.isfinite(sc.emp2[sc.ok]).all()
    assert res.timings["permutations"] > 0 and res.perm.as_dict()["maxima_quantile_95_p_by_df"].keys() == {"1"}


def test_a_within_of_constant_trait_clusters_changes_no_maximum():
    """Clusters of samples that share their trait value: a permutation within clusters moves no
    value, so every permutation's maximum is the real scan's (one moved across clusters would not be)."""
    rng = np.random.default_rng(4)
    g = _genotypes(rng, p=10, n=120)
    strata = rng.integers(0, 4, 120)
    y = np.array([1.0, 2.5, 4.0, 7.0])[strata]
    st, dose = qt_study_of(g, y)
    res = run_permutations(st, QTCPUEngine(threads=1), 5, 0, strata=strata)
    real = _brute(st, dose, y)
    assert all((m.stat, m.i, m.j) == real for m in res.maxima)
    moved = run_permutations(st, QTCPUEngine(threads=1), 5, 0)  # without strata the values move
    assert any(m.stat != real[0] for m in moved.maxima)


def test_covariates_are_refused_with_the_reason(qt):
    st = qt[0]
    with pytest.raises(ValueError) as err:
        run_qt_scan(st, QTParams(device="cpu", perm=3), covariates=(np.zeros((st.n_samples, 1)), ["c"]))
    assert str(err.value) == PERM_WITH_COVARIATES and "not exchangeable" in str(err.value)


def test_qt_params_check_perm_as_the_case_control_params_do():
    with pytest.raises(ValueError, match="no --perm was given"):
        QTParams(within="c.txt")
    with pytest.raises(ValueError, match="run --perm without --part"):
        QTParams(perm=3, part=(1, 2))
    assert QTParams(perm=4, perm_seed=2).checkpoint_settings()[1]["perm"] == {"n": 4, "seed": 2,
                                                                              "within_sha256": None}
    assert "perm" not in QTParams().checkpoint_settings()[1]  # (a plain scan's checkpoint as before)


def test_a_resumed_run_continues_the_same_permutations(qt, tmp_path):
    st = qt[0]
    whole = run_permutations(st, QTCPUEngine(threads=1), 7, 21)
    calls = {"n": 0}

    def cancel():
        calls["n"] += 1
        return calls["n"] > 4  # (asked before each permutation and each row block of its scan)

    with pytest.raises(ScanCancelled):
        run_permutations(st, QTCPUEngine(threads=1), 7, 21, checkpoint_dir=tmp_path, cancel=cancel)
    done = len((tmp_path / PERM_LEDGER).read_bytes().splitlines())
    assert 0 < done < 7
    again = run_permutations(st, QTCPUEngine(threads=1), 7, 21, checkpoint_dir=tmp_path)
    assert again.resumed == done
    assert [(m.stat, m.i, m.j, m.df) for m in again.maxima] == [(m.stat, m.i, m.j, m.df) for m in whole.maxima]


def test_progress_counts_permutations(qt):
    events = []
    run_permutations(qt[0], QTCPUEngine(threads=1), 3, 0, progress=events.append)
    assert [(e.tiles_done, e.tiles_total, e.unit) for e in events] == [(k, 3, "permutations") for k in (1, 2, 3)]


def test_a_study_without_a_valid_pair_has_nan_maxima():
    g = np.zeros((3, 40), np.int8)  # monomorphic: every pair fails
    st, _ = qt_study_of(g, np.random.default_rng(0).standard_normal(40))
    res = run_permutations(st, QTCPUEngine(threads=1), 2, 0)
    assert all(math.isnan(m.stat) and (m.i, m.j, m.df) == (-1, -1, 0) for m in res.maxima)


@pytest.mark.parametrize("engine", ["cpu", "gpu-numpy"])
def test_a_candidate_set_scans_maximum_is_over_the_rectangles_pairs(engine):
    """set-by-all: each permutation's maximum over the rectangle's pairs only (a row beside its own
    column is no pair), named as (row, column) of the rectangle study."""
    from gboost.data.candidates import CandidateSets, rectangle_study

    rng = np.random.default_rng(2)
    g = _genotypes(rng, p=16, n=100)
    y = rng.standard_normal(100)
    st, _ = qt_study_of(g, y)
    rect = rectangle_study(st, CandidateSets("sets.txt", "set", (("A", tuple(st.variants.snp[[2, 5, 9]])),)),
                           "set-by-all")
    own = rect.rect.self_columns()
    eng = QTCPUEngine(threads=1) if engine == "cpu" else QTGPUEngine(xp=np, tile=4)
    res = run_permutations(rect, eng, 5, 3)
    for m in res.maxima:
        qp = qt_planes(replace(rect, trait=permuted_trait(y, 3, m.k)))
        best, at = -math.inf, None
        for r in range(rect.rect.n_rows):
            for c in range(rect.rect.n_rows, rect.n_snps):
                if c == own[r]:
                    continue
                ok, _, stat, _ = pair_linear_test(qp.h1, qp.h2, qp.miss, qp.pg, qp.sa, qp.saa, qp.y, qp.n,
                                                  qp.y_sum, qp.y2_sum, r, c)
                if ok and stat > best:
                    best, at = stat, (r, c)
        assert (m.stat, m.i, m.j) == (best, *at)


def test_a_bad_within_file_is_refused_before_the_qt_scan_runs(tmp_path, qt):
    st = qt[0]
    path = tmp_path / "clusters.txt"
    path.write_text("a b\n")
    calls = []

    class Counting(QTCPUEngine):
        def scan(self, *a, **kw):
            calls.append(1)
            return super().scan(*a, **kw)

    with pytest.raises(InputError, match="expected FID IID CLUSTER"):
        run_qt_scan(st, QTParams(device="cpu", perm=2, within=str(path)), engine=Counting(threads=1))
    assert calls == []


def test_the_gpu_engine_uploads_the_dosages_once_for_every_permutation_and_closes_once(qt):
    """The GPU QT engine (its tile math on numpy) keeps its runners, and so the dosages on the
    devices, from one scan to the next of the same genotypes: each permutation sends only the trait.
    A study of other genotypes gets new runners (its own dosages), and the run closes the engine."""
    from gboost.engines.qt_gpu import QTDeviceRunner

    made = []

    class Counting(QTDeviceRunner):
        def __init__(self, *a, **k):
            self.loads = 0
            super().__init__(*a, **k)
            made.append(self)

        def load(self, r0, block):
            self.loads += 1
            super().load(r0, block)

    st, dose, y = qt
    eng = QTGPUEngine(xp=np, tile=5, gpus=[0, 1], runner=Counting)
    closed = []
    real_close = eng.close
    eng.close = lambda: (closed.append(1), real_close())[1]
    res = run_permutations(st, eng, 5, 41)
    assert len(made) == 2 and all(r.loads == 1 for r in made)  # one upload a device for five scans
    assert closed == [1] and eng._held is None
    fresh = run_permutations(st, QTGPUEngine(xp=np, tile=5), 5, 41)
    assert [(m.stat, m.i, m.j) for m in res.maxima] == [(m.stat, m.i, m.j) for m in fresh.maxima]
    # other genotypes (a copy of the planes with one SNP's calls moved): new runners, their own answer
    other_planes = st.planes.copy()
    other_planes[2] = st.planes[5]
    other = replace(st, planes=other_planes)
    eng.close = real_close
    first = trait_maximum(eng, st, y, 0)
    assert len(made) == 4  # (closed above: this scan uploads again)
    second = trait_maximum(eng, other, y, 0)
    assert len(made) == 6
    assert (second.stat, second.i, second.j) == _tuple(trait_maximum(QTCPUEngine(threads=1), other, y, 0))
    assert (first.stat, first.i, first.j) == _tuple(trait_maximum(QTCPUEngine(threads=1), st, y, 0))
    eng.close()


def _tuple(m):
    return m.stat, m.i, m.j
