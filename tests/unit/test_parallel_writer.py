"""The writer formats the four files in runs of rows on a pool of threads (gboost/outputs/results.py
render_lazily): whatever the thread count and wherever the runs are cut, the bytes equal those of
the one-row-at-a-time reference writers (format_*_rowwise, which the PLINK parity tests pin down),
on awkward values: rounding ties of PLINK's and Python's %g, the switches to exponents, tiny and
huge numbers, subnormals, NaN, inf, negative STAT, equal STATs (pairs.tsv's order), non-ASCII IDs,
chromosome names PLINK recodes (chr1, X, 01, MT)."""
from __future__ import annotations

import numpy as np
import pytest

from gboost.data.encode import ClassLayout
from gboost.outputs import results as R
from gboost.pipeline.scan import Pairs, ScanParams, ScanResult
from gboost.stats.marginal import marginal_tests
from gboost.data.study import QCReport, SampleTable, Study, VariantTable, plink_snp_width
from gboost.pipeline.tiles import Summary

AWKWARD = [0.0, -0.0, 1.0, 7 / 320, 1 / 64, 3 / 64, 0.021875, 9.9995e-5, 9.99949999e-5, 1e-4, 0.99995, 0.999995,
           0.9999995, 999999.5, 999999.4999, 1e6, 9999.5, 99999.95, 123456.5, 5e-324, 2.2e-308, 1e-300, 1e300,
           1.7976931348623157e308, -6.66134e-15, -1e-9, 29.9999995, 29.95, float("nan"), float("inf"), 0.5, 2.5,
           1.25e-5, 3.14159265358979, 1e-5, 1e-6, 0.0001234565, 12.34565, 1461.93, 1537.0, 1234567890.5,
           9999999999.5, 0.00012345678905, 4.35e-17, 99999.99995]


def awkward_result(p: int = 61, m: int = 997, seed: int = 7) -> ScanResult:
    """A ScanResult whose every number column draws from AWKWARD and random values, with ties in
    STAT, and IDs and chromosome names of every kind the writers treat apart."""
    rng = np.random.default_rng(seed)
    pick = lambda k: np.where(rng.random(k) < 0.5, rng.choice(AWKWARD, k), rng.exponential(40.0, k))  # noqa: E731
    chroms = np.array([("chr1", "X", "01", "MT", "2", "chrUn_gl000220", "25", "1")[k % 8] for k in range(p)], dtype=object)
    ids = np.array([f"rs{k}" if k % 5 else f"snp_ü{k}_{'x' * (k % 13)}" for k in range(p)], dtype=object)
    variants = VariantTable(chroms, ids, np.zeros(p), rng.integers(1, 10**9, p),
                            np.array(["A", "C", "ÄT", "G"] * p, dtype=object)[:p], np.full(p, "T", dtype=object))
    n = 40
    sids = np.array([f"s{k}" for k in range(n)], dtype=object)
    samples = SampleTable(sids, sids, np.ones(n, np.int8), np.r_[np.ones(20), np.full(20, 2)].astype(np.int8))
    counts = rng.integers(0, 8, (p, 3, 2)).astype(np.int64)
    counts[3] = 0  # no calls: MAF NaN
    study = Study(variants, samples, ClassLayout(20, 20), np.zeros((p, 3, 1), np.uint64), counts, QCReport(),
                  snp_col_width=plink_snp_width(ids))
    i = np.sort(rng.integers(0, p - 1, m))
    j = np.minimum(p - 1, i + 1 + rng.integers(0, p, m) % (p - 1 - i))
    stat = pick(m)
    stat[::17] = 31.5  # ties in STAT: pairs.tsv keeps them in file order
    df = rng.choice(np.array([4, 2, 1, 0]), m).astype(np.int64)
    pv = np.where(rng.random(m) < 0.9, rng.choice([1e-7, 5e-6, 3e-6, 1e-300, 0.0, 4.9999999e-6], m), pick(m))
    tables = rng.integers(0, 9, (m, 3, 3, 2)).astype(np.int64)
    tables[5] = 0
    screened = Pairs(i, j, pick(m), stat, df, pv, np.ones(m, bool), tables)
    n_tot = rng.integers(0, 400, p)
    n_tot[::7] = 0
    summary = Summary(np.minimum(n_tot, rng.integers(0, 30, p)), n_tot, pick(p), rng.integers(-1, p, p))
    mstat, mp, mdf = marginal_tests(counts)
    mstat[::9], mp[::11] = pick(len(mstat[::9])), pick(len(mp[::11]))
    params = ScanParams(epi1=5e-6)
    return ScanResult(study, params, "cpu", "test", screened, summary, mstat, mp, mdf, p * (p - 1) // 2,
                      params.thresholds())


def reference(res: ScanResult) -> dict[str, bytes]:
    v = res.study.variants
    return {"pairs.tsv": R.format_pairs_rowwise(v, res.reported).encode(),
            "pairs.epi.cc": R.format_epi_cc_rowwise(res).encode(),
            "pairs.epi.cc.summary": R.format_summary_rowwise(res).encode(),
            "marginal.tsv": R.format_marginal_tsv_rowwise(res).encode()}


def written(res: ScanResult, threads: int) -> dict[str, bytes]:
    res.__dict__.pop("reported_rows", None)  # (cached: made again on the pool)
    out = R.render_lazily(res, threads=threads)
    return {k: b"".join(v) for k, v in out.items() if k != "run.json"}


@pytest.mark.parametrize("piece_rows", [1, 7, 64, 8192])
@pytest.mark.parametrize("threads", [1, 2, 3, 8])
def test_any_thread_count_and_any_cut_give_the_reference_bytes(monkeypatch, threads, piece_rows):
    res = awkward_result()
    ref = reference(res)
    assert len(res.reported) > 50 and ref["pairs.tsv"].count(b"\n") == len(res.reported) + 1
    monkeypatch.setattr(R, "_PIECE_ROWS", piece_rows)  # runs of 1, 7, 64 rows, or the whole file
    got = written(res, threads)
    for name in ref:
        assert got[name] == ref[name], (name, threads, piece_rows)


def test_covariate_columns_and_filters_follow_the_reported_rows(monkeypatch):
    """STAT_ADJ/DF_ADJ/P_ADJ gathered by the reported rows, and --min-distance/--max-r2 applied to
    them, equal the reference writer on ScanResult.reported."""
    res = awkward_result(seed=11)
    m = len(res.screened)
    res.screened.adj = (np.where(np.arange(m) % 5 == 0, np.nan, res.screened.stat * 0.93),
                        np.full(m, 4), np.minimum(res.screened.p, 1e300) * 1.7)
    res.params = ScanParams(epi1=5e-6, min_distance_kb=1.0, max_r2=0.2)
    monkeypatch.setattr(R, "_PIECE_ROWS", 5)
    got = written(res, 3)
    rep = res.reported
    assert len(rep) < (res.screened.p <= 5e-6).sum()  # the filters took rows out
    assert got["pairs.tsv"] == R.format_pairs_rowwise(res.study.variants, rep).encode()


def test_prepared_outputs_give_the_same_bytes():
    """What a GPU screen prepares in the background (SNP texts, marginal.tsv) is what the pool makes."""
    from concurrent.futures import Future

    res = awkward_result(seed=3)
    ref = reference(res)
    fut = Future()
    fut.set_result(R.prepare_outputs(res.study, (res.marginal_stat, res.marginal_p, res.marginal_df)))
    res.prepared = {"outputs": fut}
    assert written(res, 2) == ref


def test_files_written_side_by_side_are_whole(tmp_path):
    """write_outputs writes the four data files on threads, each from its list of runs: each file
    on disk is the reference, run.json last with each file's write seconds."""
    import json

    res = awkward_result(seed=5)
    ref = reference(res)
    R.write_outputs(res, tmp_path / "out", threads=4)
    for name, data in ref.items():
        assert (tmp_path / "out" / name).read_bytes() == data
    assert json.loads((tmp_path / "out" / "run.json").read_text())["counts"]["reported_pairs"] == len(res.reported)


@pytest.mark.parametrize("cap", [3, 4096])
def test_chromosome_numbers_match_names(monkeypatch, cap):
    """pairs.tsv's DIST compares chromosome numbers (gboost/readers/fastnum.py pair_texts): equal
    exactly where the names are, in runs or scattered, past the compiled path's cap too."""
    from gboost.readers import fastnum as F

    monkeypatch.setattr(F, "_ID_CAP", cap)
    names = ["1", "1", "2", "chr1", "1", "X", "ü", "2", "", "X", "10", "1"]
    _, _, ids, _ = F.pair_texts(F.ragged(names), F.ragged([f"s{k}" for k in range(len(names))]), np.arange(len(names)))
    for a in range(len(names)):
        for b in range(len(names)):
            assert (ids[a] == ids[b]) == (names[a] == names[b])


def test_a_file_written_while_its_runs_are_formatted_is_whole(tmp_path, monkeypatch):
    """write_outputs streams each file (render_lazily(stream=True)): write_files takes an iterator
    that waits for each run; the file is whole, its write seconds leave the waits out, and an
    iterator that fails leaves the previous files as they were and no temporary file."""
    import time
    from types import SimpleNamespace

    from gboost.outputs import outdir
    from gboost.outputs.outdir import _TMP, write_files

    waited = [0.0]  # moved on by the iterator's wait: write_files' clock, a real one plus the waits
    monkeypatch.setattr(outdir, "time", SimpleNamespace(perf_counter=lambda: time.perf_counter() + waited[0]))

    def slow():
        yield b"head\n"
        waited[0] += 1000.0  # a run still being formatted: 1000 s on that clock, without a sleep
        yield b"x" * (9 << 20)  # past _WRITEBACK_BYTES: handed to the kernel's writeback
        yield b"tail\n"

    times: dict = {}
    write_files(tmp_path / "o", {"pairs.tsv": slow(), "marginal.tsv": [b"m\n"]}, write_times=times)
    assert (tmp_path / "o" / "pairs.tsv").read_bytes() == b"head\n" + b"x" * (9 << 20) + b"tail\n"
    assert times["pairs.tsv"] < 1000.0 and (tmp_path / "o" / "marginal.tsv").read_bytes() == b"m\n"

    def broken():
        yield b"a"
        raise RuntimeError("a run failed")

    write_files(tmp_path / "p", {"pairs.tsv": [b"old\n"]})
    with pytest.raises(RuntimeError):
        write_files(tmp_path / "p", {"pairs.tsv": broken(), "marginal.tsv": [b"m"]}, overwrite=True)
    assert (tmp_path / "p" / "pairs.tsv").read_bytes() == b"old\n"
    assert not [p.name for p in (tmp_path / "p").iterdir() if p.name.startswith(_TMP) or p.name == "marginal.tsv"]
