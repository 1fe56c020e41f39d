"""The compiled .epi.cc/.summary writer (gboost/readers/plink_text.py) equals the per-row Python one
(gboost/outputs/results.py *_rowwise, the reference that the PLINK parity tests pinned down) byte for
byte, on adversarial numbers: rounding ties, the 1e-4 and 1e6 switches to exponents, subnormals,
negatives, NaN, inf, and non-ASCII IDs (PLINK pads by bytes)."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gboost.outputs import results as R
from gboost.data.study import plink_snp_width

AWKWARD = [0.0, -0.0, 1.0, 7 / 320, 1 / 64, 3 / 64, 0.021875, 9.9995e-5, 9.99949999e-5, 1e-4, 0.99995, 0.999995,
           0.9999995, 999999.5, 999999.4999, 1e6, 9999.5, 99999.95, 123456.5, 5e-324, 2.2e-308, 1e-300, 1e300,
           1.7976931348623157e308, -6.66134e-15, -1e-9, 29.9999995, 29.95, float("nan"), float("inf"), 0.5, 2.5,
           1.25e-5, 3.14159265358979, 1e-5, 1e-6, 0.0001234565, 12.34565, 1461.93, 1537.0]


def fake(stats, dfs, ids, chroms, best, n_sig, n_tot, partner):
    p = len(ids)
    m = len(stats)
    rng = np.random.default_rng(m)
    i = rng.integers(0, p, m)
    j = rng.integers(0, p, m)
    study = SimpleNamespace(snp_id_width=plink_snp_width(ids), n_snps=p,
                            variants=SimpleNamespace(chrom=np.array(chroms, dtype=object), snp=np.array(ids, dtype=object)))
    screened = SimpleNamespace(i=i, j=j, stat=np.array(stats, float), df=np.array(dfs, np.int64), p=np.zeros(m))
    summary = SimpleNamespace(n_sig=np.array(n_sig, np.int64), n_tot=np.array(n_tot, np.int64),
                              best=np.array(best, float), best_partner=np.array(partner, np.int64))
    return SimpleNamespace(study=study, screened=screened, summary=summary)


def check(res):
    assert R.format_epi_cc(res) == R.format_epi_cc_rowwise(res)
    assert R.format_summary(res) == R.format_summary_rowwise(res)


def test_awkward_values_and_ids():
    m = len(AWKWARD)
    ids = ["rs1", "snp_ünïcode", "a" * 30, "x", "rs_β2", "kgp123456789", "s", "S2"]
    chroms = ["1", "23", "chrUn_gl000220", "25", "X", "2", "10", "26"]
    dfs = [4, 2, 1, 0, 4, 4, 2, 1] * (m // 8 + 1)
    n_tot = [0, 1, 320, 64, 3, 1000000, 7, 2]
    n_sig = [0, 1, 7, 1, 3, 21875, 0, 1]
    best = [0.0, 31.25, -1.0, float("nan"), 1e-300, 999999.5, 29.95, 0.021875]
    partner = [-1, 3, 0, 5, -1, 7, 1, 2]
    check(fake(AWKWARD, dfs[:m], ids, chroms, best, n_sig, n_tot, partner))


finite = st.floats(min_value=-1e-6, max_value=1e12, allow_nan=False, allow_infinity=False)
anyf = st.one_of(finite, st.floats(min_value=1e-320, max_value=1e-3), st.sampled_from(AWKWARD))


@settings(max_examples=60, deadline=None)
@given(st.lists(anyf, min_size=1, max_size=200), st.lists(anyf, min_size=8, max_size=8),
       st.lists(st.integers(0, 10**7), min_size=8, max_size=8))
def test_random_values_match_the_reference(stats, best, counts):
    ids = [f"snp{k}" for k in range(8)]
    dfs = [(4, 2, 1, 0)[k % 4] for k in range(len(stats))]
    n_tot = [c for c in counts]
    n_sig = [c // 3 for c in counts]
    check(fake(stats, dfs, ids, ["1"] * 4 + ["2"] * 4, best, n_sig, n_tot, [(k + 1) % 8 for k in range(8)]))


def _near(x: float, steps: int) -> float:
    """``x`` moved ``steps`` ulps (negative: down)."""
    for _ in range(abs(steps)):
        x = float(np.nextafter(x, np.inf if steps > 0 else -np.inf))
    return x


# Adversarial values for PLINK's rounding: decimal ties q.5 at 4 and 6 significant digits (where
# PLINK's tolerant banker's rule and printf part ways) and the switches between notations and
# decades (1e-4 -> exponent, 10^d -> exponent, 9.9995 -> 10.00), each with its ulp neighbours.
tie = st.sampled_from([4, 6]).flatmap(lambda d: st.builds(
    lambda q, e, u: _near((q + 0.5) * 10.0 ** e, u), st.integers(10 ** (d - 1), 10 ** d - 1),
    st.integers(-330, 300), st.integers(-2, 2)))
switch = st.builds(lambda base, k, u: _near(base * 10.0 ** k, u),
                   st.sampled_from([1.0, 0.99995, 0.9999995, 0.99994999999999, 0.99999949999999, 9.9995, 5.0]),
                   st.integers(-12, 12), st.integers(-3, 3))


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(tie, switch, anyf), min_size=8, max_size=120))
def test_ties_and_notation_switches_match_the_reference(values):
    """Every value is printed as STAT (6 digits), as P (4 digits, through the same path as the
    rows), and as BEST_CHISQ and PROP (4 digits) by the compiled writer and the row-wise oracle."""
    ids = [f"s{k}" for k in range(8)]
    dfs = [(4, 2, 1)[k % 3] for k in range(len(values))]
    best = (values * 2)[:8]
    check(fake(values, dfs, ids, ["1"] * 8, best, [1, 2, 3, 7, 0, 5, 21, 9],
               [3, 7, 320, 64, 1, 10, 960, 9], [(k + 3) % 8 for k in range(8)]))


def test_ties_print_plinks_digits():
    """The oracle itself on the ties documented from plink1.9 output (gboost/readers/plink_format.py,
    docs/plink_boost_notes.md §5), so the comparisons above compare against PLINK's digits."""
    from gboost.readers.plink_format import plink_g

    assert plink_g(7 / 320, 4) == "0.02188"  # printf's %.4g gives 0.02187
    assert plink_g(1 / 64, 4) == "0.01562" and plink_g(3 / 64, 4) == "0.04688"


# ---- gboost.readers.fastnum: Python's %g for whole columns ------------------------------------------
from gboost.readers.fastnum import format_g  # noqa: E402

TIES = [0.5, 1.5, 2.5, 0.125, 1e-5, 1e-4, 9.9999999995e-5, 99999.99995, 0.00012345678905, 1234567890.5,
        12345678905.0, 9999999999.5, 1e10, 1e16, 1e22, 1e23, 1.7976931348623157e308, 5e-324, 2.2250738585072014e-308,
        1e-300, 123456789012345678.0, 0.1, 0.2, 0.3, 1 / 3, 2 / 3, 1e-7, 4.35e-17, -0.0, 0.0, -1.5, -1e-320,
        float("nan"), float("inf"), float("-inf"), 7 / 320, 0.021875, 1.0000000005, 0.99999999995]


def test_format_g_equals_python_on_ties_and_extremes():
    for d in (4, 6, 8, 10):
        assert format_g(TIES, d) == [format(x, f".{d}g") for x in TIES], d
    assert format_g([float("nan"), 1.0], 6, na="NA") == ["NA", "1"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.floats(allow_nan=False), st.floats(min_value=1e-12, max_value=1e12),
                          st.integers(-10**12, 10**12).map(float)), min_size=1, max_size=300),
       st.sampled_from([4, 6, 8, 10]))
def test_format_g_equals_python_on_random_values(values, d):
    assert format_g(values, d) == [format(x, f".{d}g") for x in values]


def test_pairs_and_marginal_tables_equal_the_row_wise_writers():
    from gboost.engines.cpu import CpuEngine
    from gboost.pipeline.scan import ScanParams, run_scan
    from gboost.data.simulate import simulate_study
    from gboost.data.load import load_study
    from gboost.data.study import QCOptions

    sim = simulate_study(300, 150, 150, seed=24, chromosomes=["1", "2"], missing_rate=0.02, ld_block=10)
    sim.variants.snp = sim.variants.snp.astype(object)
    sim.variants.snp[7] = "rs_ünï"  # non-ASCII IDs take the UTF-8 path
    study = load_study(sim.source(), QCOptions())
    res = run_scan(study, ScanParams(epi1=0.2, epi2=0.5), engine=CpuEngine())
    pr = res.reported
    assert len(pr) > 100
    assert R.format_pairs(study.variants, pr) == R.format_pairs_rowwise(study.variants, pr)
    pieces = R.pairs_pieces(study.variants, pr, R.snp_texts(study.variants), 7, min_rows=7)
    assert len(pieces) == 7  # runs formatted apart join to the same file
    assert R.pairs_header(pr) + b"".join(f() for f in pieces) == R.format_pairs_rowwise(study.variants, pr).encode()
    pr.adj = (np.where(np.arange(len(pr)) % 5 == 0, np.nan, pr.stat * 0.93), np.full(len(pr), 4), pr.p * 1.7)
    assert R.format_pairs(study.variants, pr) == R.format_pairs_rowwise(study.variants, pr)
    assert R.format_marginal_tsv(res) == R.format_marginal_tsv_rowwise(res)


def test_rows_formatted_by_row_block_beside_the_screen_join_to_the_writers_files():
    """gboost/pipeline/hostwork.py formats each row block's .epi.cc rows and pairs.tsv rows (without Q)
    while the screen runs; the writer joins them and splices each reported row's Q in. Blocks cut
    anywhere, rows in STAT order, awkward q values: the same bytes as the row-wise writers."""
    from gboost.engines.cpu import CpuEngine
    from gboost.readers.fastnum import pairs_rows_array, splice_q
    from gboost.data.load import load_study
    from gboost.pipeline.scan import ScanParams, run_scan
    from gboost.data.simulate import simulate_study
    from gboost.stats.multiple import r2_at
    from gboost.data.study import QCOptions

    sim = simulate_study(300, 150, 150, seed=25, chromosomes=["1", "2"], missing_rate=0.02, ld_block=10)
    sim.variants.snp = sim.variants.snp.astype(object)
    sim.variants.snp[9] = "rs_ünï"
    study = load_study(sim.source(), QCOptions())
    res = run_scan(study, ScanParams(epi1=0.05, epi2=0.5), engine=CpuEngine())
    sc = res.screened
    kept = sc.p <= res.params.epi1
    assert len(sc) > 300 and 100 < kept.sum() < len(sc)  # some screened pairs not reported
    texts = R.SnpTexts(study).ready()
    fields = [sc.i, sc.j, sc.ksa, sc.stat, sc.df, sc.p, sc.converged, sc.tables]
    cuts = [0, 1, 1, 57, len(sc) // 2, len(sc)]  # an empty block, a one-pair block
    blocks = [R.format_block(texts, tuple(f[a:b] for f in fields), res.params.epi1) for a, b in zip(cuts, cuts[1:])]
    assert [b.pairs for b in blocks] == [1, 0, 56, len(sc) // 2 - 57, len(sc) - len(sc) // 2]
    body = R.format_epi_cc_rowwise(res).encode().split(b"\n", 1)[1]
    assert b"".join(bytes(b.epi_cc) for b in blocks) == body
    holed, rank = R._join_holed(blocks, kept)
    rows, q = res.reported_rows
    want = R.format_pairs_rowwise(study.variants, res.reported).encode()
    assert R.pairs_header(sc) + bytes(splice_q(rank[rows], holed, q)) == want
    joined = SimpleNamespace(result=lambda: ((holed, rank), 0.0, 0.0))
    pieces = R.spliced_pieces(joined, rows, q, 5, min_rows=3)
    assert len(pieces) == 5 and R.pairs_header(sc) + b"".join(bytes(f()) for f in pieces) == want
    # Q's hole takes any value as the full row's writer formats it (6 digits, NA, exponents).
    k = np.flatnonzero(kept)
    awkward = np.resize(np.array(AWKWARD), len(k))
    floats = [(sc.ksa[k], 10, None), (sc.stat[k], 10, None), (sc.p[k], 10, None), (awkward, 6, "NA"),
              (r2_at(sc.tables, k), 4, "NA")]
    full = pairs_rows_array(sc.i[k], sc.j[k], texts.pairs, sc.df[k], floats)
    assert bytes(splice_q(np.arange(len(k)), holed, awkward)) == bytes(full)
    order = np.random.default_rng(2).permutation(len(k))
    lines = bytes(full).splitlines(keepends=True)
    assert bytes(splice_q(order, holed, awkward[order])) == b"".join(lines[x] for x in order)
    assert bytes(splice_q(order[:0], holed, awkward[:0])) == b""


def test_runs_of_rows_join_to_the_whole_file():
    """The PLINK files are formatted in runs of rows on several threads: any split joins to the
    single-piece body, which the row-wise oracle pins down above."""
    from gboost.readers.plink_text import epi_cc_pieces, padded, summary_pieces

    rng = np.random.default_rng(5)
    p, m = 50, 333
    ids = [f"rs{k}" if k % 7 else f"snp_ü{k}" for k in range(p)]
    w = plink_snp_width(ids)
    chrom, snp = padded([str(1 + k % 3) for k in range(p)], 4), padded(ids, w)
    i, j = rng.integers(0, p, m), rng.integers(0, p, m)
    stat, df = rng.exponential(10, m), rng.choice([0, 1, 2, 4], m)
    sig, tot = rng.integers(0, 5, p), rng.integers(0, 50, p)
    best, partner = rng.exponential(10, p), rng.integers(-1, p, p)
    whole_cc = b"".join(f() for f in epi_cc_pieces(i, j, stat, df, chrom, snp, 1))
    whole_sum = b"".join(f() for f in summary_pieces(chrom, snp, w, sig, tot, best, partner, 1))
    assert whole_cc.count(b"\n") == (df > 0).sum() and whole_sum.count(b"\n") == p
    for k in (2, 3, 8, 1000):
        assert b"".join(f() for f in epi_cc_pieces(i, j, stat, df, chrom, snp, k)) == whole_cc
        assert b"".join(f() for f in summary_pieces(chrom, snp, w, sig, tot, best, partner, k)) == whole_sum
    assert b"".join(f() for f in epi_cc_pieces(i[:0], j[:0], stat[:0], df[:0], chrom, snp, 4)) == b""


def test_text_and_integer_columns_equal_str():
    from gboost.readers.fastnum import int_bytes, ragged, text_bytes

    values = np.array(["1", "rs_ü", "", "X", 23, b"kgp9"], dtype=object)
    mat, lengths = text_bytes(values)
    got = [bytes(mat[k, :lengths[k]]).decode() for k in range(len(values))]
    assert got == ["1", "rs_ü", "", "X", "23", "kgp9"]
    ints = np.array([0, -1, 7, 10, -10, 123456789012, -(2**62)], np.int64)
    mat, lengths = int_bytes(ints)
    assert [bytes(mat[k, :lengths[k]]).decode() for k in range(len(ints))] == [str(x) for x in ints.tolist()]
    with pytest.raises(ValueError, match="newline"):
        ragged(["a", "b\nc"])
