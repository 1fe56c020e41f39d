"""--perm (gboost/pipeline/permute.py): the labels, the permuted planes, each permutation's maximum
against a brute-force reference (every pair's exact statistic), EMP2, and the permutations' checkpoint."""
from __future__ import annotations

import math

import numpy as np
import pytest

from gboost.data.encode import decode_planes
from gboost.data.study import study_from_genotypes
from gboost.engines.cpu import CpuEngine, tables_of
from gboost.errors import InputError, ScanCancelled
from gboost.pipeline.checkpoint import PERM_LEDGER
from gboost.pipeline.permute import (PermLedger, permutation_maximum, permuted_labels, permuted_study, read_within,
                                     run_permutations)
from gboost.stats.exact import exact_tests
from gboost.data.simulate import simulate_study


def _ld_study(seed=5, p=36, n_case=90, n_ctrl=110):
    """LD blocks, rare alleles, missing calls, and SNPs that make ties, NaNs and invalid pairs: a
    copy of SNP 3 (its pairs tie with SNP 3's), a monomorphic SNP and a SNP never called."""
    sim = simulate_study(p, n_case, n_ctrl, seed=seed, missing_rate=0.03, maf_range=(0.02, 0.5), ld_block=6,
                         ld_rho=0.95)
    g = sim.genotypes.copy()
    g[7] = g[3]
    g[11] = np.where(g[11] < 0, -1, 1)
    g[20] = -1
    return study_from_genotypes(g, sim.samples.status == 2)


def _brute_maximum(study, labels):
    """Every pair's exact statistic of ``study`` with the labels ``labels`` (plane order), from a
    study built anew from its genotypes: (max, i, j) of the first pair in (i, j) order on ties."""
    geno, _ = decode_planes(study.planes, study.layout)
    s = study_from_genotypes(geno, labels)
    i, j = np.triu_indices(study.n_snps, 1)
    rev = study.plink_reversed()
    stat, df, _, _ = exact_tests(tables_of(s, i, j), rev[i], rev[j])
    ok = (df > 0) & ~np.isnan(stat)
    if not ok.any():
        return math.nan, -1, -1
    top = stat[ok].max()
    k = np.flatnonzero(ok & (stat == top))[0]  # triu_indices is in (i, j) order
    return float(top), int(i[k]), int(j[k])


@pytest.fixture(scope="module")
def study():
    return _ld_study()


def _is_case(study):
    return np.arange(study.n_samples) >= study.layout.n_ctrl


def test_labels_are_a_permutation_seeded_by_seed_and_index(study):
    y = _is_case(study)
    a = permuted_labels(y, 7, 3)
    assert a.sum() == y.sum() and not np.array_equal(a, y)
    assert np.array_equal(a, permuted_labels(y, 7, 3))
    assert not np.array_equal(a, permuted_labels(y, 7, 4))
    assert not np.array_equal(a, permuted_labels(y, 8, 3))


def test_labels_never_leave_their_stratum():
    rng = np.random.default_rng(0)
    n = 500
    y = rng.random(n) < 0.4
    strata = rng.integers(0, 7, n)
    moved = 0
    for k in range(50):
        a = permuted_labels(y, 11, k, strata)
        for s in range(7):
            m = strata == s
            assert a[m].sum() == y[m].sum()  # each stratum keeps its cases' count
        moved += int((a != y).sum())
    assert moved > 0
    # A stratum of cases alone and one of controls alone: nothing can move.
    strata = y.astype(int)
    assert all(np.array_equal(permuted_labels(y, 11, k, strata), y) for k in range(5))


def test_permuted_study_is_the_study_encoded_with_the_new_labels(study):
    y = permuted_labels(_is_case(study), 1, 0)
    ps = permuted_study(study, y)
    geno, _ = decode_planes(study.planes, study.layout)
    ref = study_from_genotypes(geno, y)
    assert np.array_equal(ps.planes, ref.planes) and np.array_equal(ps.counts, ref.counts)
    assert np.array_equal(ps.counts.sum(axis=2), study.counts.sum(axis=2))  # the pooled genotypes
    assert np.array_equal(ps.plink_reversed(), study.plink_reversed())


def test_permuted_study_on_host_threads_is_the_same(study):
    """SNPs shared among a pool's threads (ranges of 256 SNPs: a study of 700), and the next
    permutation's study made ahead on a thread of its own, give the planes and counts of one thread."""
    from concurrent.futures import ThreadPoolExecutor

    from gboost.pipeline.permute import Relabeller

    big = study_from_genotypes(simulate_study(700, 60, 70, seed=3, missing_rate=0.05).genotypes,
                               np.arange(130) >= 70)
    y = _is_case(big)
    with ThreadPoolExecutor(3) as pool:
        for k in range(3):
            one, many = permuted_study(big, permuted_labels(y, 4, k)), permuted_study(big, permuted_labels(y, 4, k), pool)
            assert np.array_equal(one.planes, many.planes) and np.array_equal(one.counts, many.counts)
    ahead = Relabeller(big, lambda k: permuted_labels(y, 4, k), 5, threads=3, ahead=True)
    try:
        for k in (0, 1, 2, 4, 3):  # out of order too: a study not made ahead is made on the spot
            got = ahead.study_for(k)
            want = permuted_study(big, permuted_labels(y, 4, k))
            assert np.array_equal(got.planes, want.planes) and np.array_equal(got.counts, want.counts)
    finally:
        ahead.close()


class _OverlappingCpu(CpuEngine):
    """The CPU engine declared to leave the host's cores idle: the permutations then make the next
    permuted study ahead, on threads of their own, beside its parallel kernels."""

    overlaps_host_work = True


class _CountingCpu(CpuEngine):
    """The CPU engine counting its prepares and closes, and whether a prepare came while prepared."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.prepares = self.closes = self.reprepares = 0
        self.open = False

    def prepare(self, study, thresholds, planes=None):
        self.prepares += 1
        self.reprepares += self.open
        self.open = True
        super().prepare(study, thresholds, planes)

    def close(self):
        self.closes += 1
        self.open = False
        super().close()


def test_the_engine_stays_prepared_between_permutations_and_is_closed_once(study, tmp_path):
    # Each permutation's prepare takes the place of the last one's (a GPU keeps its buffers and plane
    # array, Dask its cluster), and the run closes the engine once at its end: also when cancelled.
    eng = _CountingCpu(threads=1)
    res = run_permutations(study, eng, 6, 3)
    assert eng.prepares == 6 + res.rescans and eng.reprepares == eng.prepares - 1
    assert eng.closes == 1 and not eng.open
    calls = {"n": 0}

    def cancel():
        calls["n"] += 1
        return calls["n"] > 3

    eng = _CountingCpu(threads=1, tile=1000)
    with pytest.raises(ScanCancelled):
        run_permutations(study, eng, 6, 3, checkpoint_dir=tmp_path, cancel=cancel)
    assert eng.prepares >= 1 and eng.closes == 1 and not eng.open
    got = run_permutations(study, CpuEngine(threads=1), 6, 3, checkpoint_dir=tmp_path)
    assert [(m.stat, m.i, m.j) for m in got.maxima] == [(m.stat, m.i, m.j) for m in res.maxima]


def test_making_the_next_study_ahead_changes_no_maximum(study, tmp_path):
    import threading

    plain = run_permutations(study, CpuEngine(threads=2), 10, 17)
    ahead = run_permutations(study, _OverlappingCpu(threads=2), 10, 17)
    assert [(m.stat, m.i, m.j, m.df) for m in ahead.maxima] == [(m.stat, m.i, m.j, m.df) for m in plain.maxima]
    assert set(ahead.steps) == {"relabel", "prepare", "screen", "exact"}
    calls = {"n": 0}

    def cancel():
        calls["n"] += 1
        return calls["n"] > 4

    with pytest.raises(ScanCancelled):
        run_permutations(study, _OverlappingCpu(threads=2, tile=1000), 10, 17, checkpoint_dir=tmp_path, cancel=cancel)
    assert not [t for t in threading.enumerate() if t.name.startswith("gboost-relabel")]  # none left running
    again = run_permutations(study, _OverlappingCpu(threads=2), 10, 17, checkpoint_dir=tmp_path)
    assert 0 < again.resumed < 10
    assert [(m.stat, m.i, m.j) for m in again.maxima] == [(m.stat, m.i, m.j) for m in plain.maxima]


@pytest.mark.parametrize("tile", [None, 7, 16])
def test_each_permutation_maximum_is_the_brute_force_maximum(study, tile):
    res = run_permutations(study, CpuEngine(threads=1, tile=tile), 12, 99)
    y = _is_case(study)
    for m in res.maxima:
        want = _brute_maximum(study, permuted_labels(y, 99, m.k))
        assert (m.stat, m.i, m.j) == want  # exactly: the same doubles, the same pair
    assert res.maxima[0].k == 0 and [m.k for m in res.maxima] == list(range(12))


def test_the_pipelines_emp2_is_the_brute_force_emp2(study):
    """run_pipeline with --perm: every screened pair's EMP2 from brute-force maxima, labels
    permuted within strata."""
    from gboost.pipeline.scan import ScanParams, run_pipeline

    strata = np.arange(study.n_samples) % 3
    res = run_pipeline(study, ScanParams(device="cpu", threads=1, epi1=0.05, calibration_pairs=0, perm=15,
                                         perm_seed=2), progress=None)
    y = _is_case(study)
    plain = np.array([_brute_maximum(study, permuted_labels(y, 2, k))[0] for k in range(15)])
    assert np.array_equal(res.perm.stats, plain)
    sc = res.screened
    assert len(sc) and np.array_equal(sc.emp2, np.array([(1 + (plain >= s).sum()) / 16 for s in sc.stat]))
    # within strata (the library's run_permutations, as the pipeline calls it)
    res2 = run_permutations(study, CpuEngine(threads=1), 6, 2, strata=strata)
    want = [_brute_maximum(study, permuted_labels(y, 2, k, strata))[0] for k in range(6)]
    assert list(res2.stats) == want


def test_a_screen_above_the_maximum_rescans_and_one_below_does_not(study):
    y = permuted_labels(_is_case(study), 4, 2)
    want = _brute_maximum(study, y)
    high = permutation_maximum(CpuEngine(threads=1), study, y, 1e6, 2)
    low = permutation_maximum(CpuEngine(threads=1), study, y, -math.inf, 2)
    assert (high.stat, high.i, high.j) == (low.stat, low.i, low.j) == want
    assert high.rescans >= 1 and low.rescans == 0


def test_ties_take_the_first_pair():
    # Four SNPs, each twice (k and k + 4): every pair of distinct SNPs has three twins with its
    # table, so every maximum is tied and the first pair in (i, j) order must be the one named.
    sim = simulate_study(4, 60, 70, seed=2, missing_rate=0.03, ld_block=2, ld_rho=0.8)
    s = study_from_genotypes(np.concatenate([sim.genotypes, sim.genotypes]), sim.samples.status == 2)
    y = _is_case(s)
    for k in range(10):
        lab = permuted_labels(y, 5, k)
        m = permutation_maximum(CpuEngine(threads=1, tile=3), s, lab, -math.inf, k)
        assert (m.stat, m.i, m.j) == _brute_maximum(s, lab)


def test_emp2_counts_the_maxima_at_or_above(study):
    res = run_permutations(study, CpuEngine(threads=1), 9, 3)
    mx = res.stats
    stats = np.r_[mx, mx + 1e-9, mx - 1e-9, [0.0, 1e9, np.nan]]
    want = [(1 + (mx >= s).sum()) / 10 for s in stats[:-1]] + [np.nan]
    assert np.array_equal(res.emp2(stats), np.array(want), equal_nan=True)
    t = res.threshold(0.05)
    assert t is None  # 9 permutations: no EMP2 reaches 0.05 ((1 + 0) / 10)
    big = run_permutations(study, CpuEngine(threads=1), 39, 3)
    t = big.threshold(0.05)
    assert big.emp2([t])[0] > 0.05 and big.emp2([np.nextafter(t, np.inf)])[0] <= 0.05


def test_a_study_without_a_valid_pair_has_nan_maxima():
    g = np.zeros((3, 40), np.int8)
    y = np.arange(40) < 20
    s = study_from_genotypes(g, y)
    res = run_permutations(s, CpuEngine(threads=1), 3, 0)
    assert all(math.isnan(m.stat) for m in res.maxima)
    assert np.isnan(res.emp2([np.nan]))[0] and res.emp2([1.0])[0] == 1 / 4


def test_a_resumed_run_continues_the_same_permutations(study, tmp_path):
    whole = run_permutations(study, CpuEngine(threads=1), 8, 21)
    calls = {"n": 0}

    def cancel():
        calls["n"] += 1
        return calls["n"] > 3  # (checked before each permutation and each tile)

    with pytest.raises(ScanCancelled):
        run_permutations(study, CpuEngine(threads=1, tile=1000), 8, 21, checkpoint_dir=tmp_path, cancel=cancel)
    done = len((tmp_path / PERM_LEDGER).read_bytes().splitlines())
    assert 0 < done < 8
    with open(tmp_path / PERM_LEDGER, "ab") as fh:  # a torn last line (a kill mid-write)
        fh.write(b"7\t0x1.0p+3\t1")
    again = run_permutations(study, CpuEngine(threads=1), 8, 21, checkpoint_dir=tmp_path)
    assert again.resumed == done
    assert [(m.stat, m.i, m.j) for m in again.maxima] == [(m.stat, m.i, m.j) for m in whole.maxima]
    assert len((tmp_path / PERM_LEDGER).read_bytes().splitlines()) == 8


def test_an_edited_permutation_record_is_refused(study, tmp_path):
    run_permutations(study, CpuEngine(threads=1), 2, 1, checkpoint_dir=tmp_path)
    lines = (tmp_path / PERM_LEDGER).read_bytes().splitlines()
    import zlib

    body = lines[1].rpartition(b"\t")[0].split(b"\t")
    body[2], body[3] = b"5", b"999"  # a pair outside the study, with a true CRC
    body = b"\t".join(body)
    (tmp_path / PERM_LEDGER).write_bytes(lines[0] + b"\n" + body + b"\t" + format(zlib.crc32(body), "08x").encode()
                                         + b"\n")
    with pytest.raises(InputError, match="not a record"):
        PermLedger(tmp_path, study).replay(2)


def test_within_file(tmp_path, study):
    s = study.samples
    path = tmp_path / "clusters.txt"
    lines = [f"{s.fid[k]} {s.iid[k]} {'A' if k % 3 else 'B'}" for k in range(study.n_samples)]
    path.write_text("\n".join(lines + ["extra sample C"]) + "\n")
    codes = read_within(path, study)
    assert len(set(codes.tolist())) == 2 and (codes[::3] == codes[0]).all()
    path.write_text("\n".join(lines[1:]) + "\n")
    with pytest.raises(InputError, match="has no cluster"):
        read_within(path, study)
    path.write_text("\n".join(lines + [lines[0]]) + "\n")
    with pytest.raises(InputError, match="again"):
        read_within(path, study)
    path.write_text("a b\n")
    with pytest.raises(InputError, match="expected FID IID CLUSTER"):
        read_within(path, study)
    with pytest.raises(InputError):
        read_within(tmp_path / "absent.txt", study)


def test_progress_counts_permutations(study):
    events = []
    run_permutations(study, CpuEngine(threads=1), 4, 0, progress=events.append)
    assert [(e.tiles_done, e.tiles_total, e.pairs_done, e.pairs_total, e.unit) for e in events] == \
        [(k, 4, k, 4, "permutations") for k in range(1, 5)]
    assert events[-1].eta == 0.0 and events[1].eta is not None


def test_a_bad_within_file_is_refused_before_the_scan_runs_a_tile(tmp_path, study):
    """run_pipeline reads the --within file first: a library caller whose file misses a sample learns
    it in one line before the screen, not after a whole scan."""
    from gboost.pipeline.params import ScanParams
    from gboost.pipeline.scan import run_pipeline

    s = study.samples
    path = tmp_path / "clusters.txt"
    path.write_text("".join(f"{s.fid[k]} {s.iid[k]} A\n" for k in range(1, study.n_samples)))  # sample 0 left out
    tiles = []

    class Counting(CpuEngine):
        def run_tile(self, tile):
            tiles.append(tile)
            return super().run_tile(tile)

    with pytest.raises(InputError, match="has no cluster"):
        run_pipeline(study, ScanParams(device="cpu", perm=2, within=str(path)), engine=Counting(threads=1))
    assert tiles == []


def test_perms_recorded_stops_at_a_torn_line(tmp_path):
    """What a resume keeps, counted without opening the ledger to append (the GUI's Resume offer)."""
    from gboost.pipeline.permute import Maximum, perms_recorded

    lines = [PermLedger._line(Maximum(k, 20.0 + k, 0, 1, 4, 15.0)) for k in range(3)]
    (tmp_path / "checkpoint.perm").write_bytes(b"".join(lines) + lines[0][:9])
    assert perms_recorded(tmp_path) == 3
    (tmp_path / "checkpoint.perm").write_bytes(lines[0] + lines[1].replace(b"\t0\t", b"\t7\t", 1) + lines[2])
    assert perms_recorded(tmp_path) == 1  # a line whose CRC fails ends the count
    assert perms_recorded(tmp_path / "none") == 0
