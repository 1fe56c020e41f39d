"""PLINK's BEST_SNP where partners tie (gboost/pipeline/best_ties.py): SNPs alike up to their genotypes'
names (duplicated probes, swapped alleles) give partners whose statistics are equal as numbers and
differ in their last bits as PLINK computes them; the summary must pick the partner PLINK picks,
in a single run, in a merge of --part outputs and on the GPU.

Without the repair the duplicated study below differs from plink1.9's summary in several rows
(checked by test_the_repair_changes_what_the_engines_chose)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from gboost.pipeline.best_ties import equivalence_classes
from gboost.data.encode import encode_block
from gboost.data.simulate import simulate_study
from gboost.stats.boost import ipf_stat, ksa_stat, plink_df
from gboost.stats.plink_order import plink_counts, plink_z
from tests.helpers import NO_PLINK, PLINK, assert_parity, run_both

# A realistic study with an eighth of its SNPs duplicated (half with the alleles swapped), LD
# blocks, 1 % missing calls and samples of unknown sex (their phenotype ignored by default, so
# the founders PLINK orders alleles by are not the scanned samples).
STUDY = dict(n_snps=300, n_cases=500, n_controls=500, seed=5, missing_rate=0.01, chromosomes=["1", "2"],
             ld_block=10, ld_rho=0.95, unknown_sex=0.1, duplicates=0.12)


@pytest.fixture(scope="module")
def dup_prefix(tmp_path_factory):
    prefix = str(tmp_path_factory.mktemp("dup") / "dup")
    simulate_study(**{k: v for k, v in STUDY.items() if k not in ("n_snps", "n_cases", "n_controls")},
                   n_snps=STUDY["n_snps"], n_cases=STUDY["n_cases"], n_controls=STUDY["n_controls"]).write(prefix)
    return prefix


def _summary_partners(prefix, tmp_path, name, *extra, epi1="0.05"):
    from gboost.cli import main

    out = tmp_path / name
    assert main(["scan", "--bfile", prefix, "--out", str(out), "--device", "cpu", "--quiet", "--epi1", epi1,
                 *extra]) == 0
    return out


@pytest.mark.plink
@pytest.mark.skipif(PLINK is None, reason=NO_PLINK)
@pytest.mark.parametrize("epi1,extra", [(1e-3, []), (0.05, []), (0.05, ["--allow-no-sex"])])
def test_duplicated_snps_summary_matches_plink(dup_prefix, tmp_path, epi1, extra):
    out, plink = run_both(dup_prefix, tmp_path, epi1, extra)
    assert_parity(out, plink, epi1, min_rows=5)


def test_the_repair_changes_what_the_engines_chose(dup_prefix, tmp_path, monkeypatch):
    """The study exercises the repair: without it, several SNPs keep another partner (which is
    how plink1.9's summary differed before; test_duplicated_snps_summary_matches_plink). At
    --epi1 1e-3, where most SNPs' best partner is below the screen (z is the KSA); above it z is
    the exact statistic, already PLINK's double (gboost/stats/plink_order.py)."""
    import gboost.pipeline.best_ties as bt

    fixed = _summary_partners(dup_prefix, tmp_path, "fixed", epi1="1e-3")
    monkeypatch.setattr(bt, "repair_best", lambda *a, **k: np.zeros(0, np.int64))
    raw = _summary_partners(dup_prefix, tmp_path, "raw", epi1="1e-3")
    a = (fixed / "pairs.epi.cc.summary").read_text().splitlines()
    b = (raw / "pairs.epi.cc.summary").read_text().splitlines()
    changed = [(x, y) for x, y in zip(a, b) if x != y]
    assert len(a) == len(b) and len(changed) >= 3, changed
    assert all(x.split()[:6] == y.split()[:6] for x, y in changed)  # only BEST_CHR / BEST_SNP moved


def _assert_parts_merge_to_the_single_run(prefix, tmp_path):
    """Three --part runs and their merge write what one run writes (the ties each part re-chose compete
    in the merge: gboost.pipeline.best_ties.apply_part_ties)."""
    from gboost.cli import main

    single = _summary_partners(prefix, tmp_path, "single")
    parts = []
    for k in (1, 2, 3):
        parts.append(str(tmp_path / f"part{k}"))
        assert main(["scan", "--bfile", prefix, "--out", parts[-1], "--device", "cpu", "--quiet", "--epi1", "0.05",
                     "--part", f"{k}/3"]) == 0
    assert main(["merge", *parts, "--out", str(tmp_path / "merged"), "--quiet"]) == 0
    for name in ("pairs.epi.cc", "pairs.epi.cc.summary", "pairs.tsv", "marginal.tsv"):
        assert (tmp_path / "merged" / name).read_bytes() == (single / name).read_bytes(), name


def test_parts_merged_equal_a_single_run_on_ties(dup_prefix, tmp_path):
    _assert_parts_merge_to_the_single_run(dup_prefix, tmp_path)


def test_another_reader_orders_alleles_as_the_bed_does(dup_prefix):
    """The other readers count the founders as the calls are read (gboost.data.load), the .bed path
    reads those rows again: the same study, the same summary."""
    from gboost.readers.plink_bed import open_bfile
    from gboost.readers.ped import ArraySource
    from gboost.outputs.results import format_summary
    from gboost.data.load import load_study, load_with_encoder
    from gboost.pipeline.scan import ScanParams, run_scan

    bed = open_bfile(dup_prefix)
    calls = np.concatenate([blk for _, blk in bed.iter_blocks(np.arange(len(bed.samples)), 4096)])
    array = ArraySource("<array>", bed.variants, bed.samples, calls)
    params = ScanParams(epi1=0.05, device="cpu")
    study, planes = load_with_encoder(bed)
    with planes:
        a = run_scan(study, params, planes=planes)
    b = run_scan(load_study(array), params)
    assert (bed.samples.status == 0).sum() > 50  # founders left out of the scan: both paths count them
    assert format_summary(b) == format_summary(a)


def test_founder_counts_from_the_bed_and_from_the_calls_agree(dup_prefix):
    """Study.founder_counts, by both ways (the .bed's rows read again; counted as another reader's
    calls are read), against a count by hand of every founder, the unscanned ones included."""
    from gboost.readers.ped import ArraySource
    from gboost.readers.plink_bed import open_bfile
    from gboost.data.load import load_study, load_with_encoder

    src = open_bfile(dup_prefix)
    g = np.concatenate([blk for _, blk in src.iter_blocks(np.arange(len(src.samples)), 4096)])
    for study in (load_with_encoder(src)[0], load_study(src),
                  load_study(ArraySource("<array>", src.variants, src.samples, g))):
        rows = np.arange(0, study.n_snps, 7)[::-1]  # (any order)
        kept = np.flatnonzero(np.isin(src.variants.snp, study.variants.snp))
        want = np.stack([(g[kept[rows]] == t).sum(axis=1) for t in range(3)], axis=1)
        assert np.array_equal(study.founder_counts()[rows], want)
        assert not np.array_equal(study.counts[rows].sum(axis=2), want)  # (the scanned samples alone differ)


@pytest.fixture(scope="module")
def few_apart_prefix(tmp_path_factory):
    """A realistic study whose founders are a few samples away from the scanned ones, as in a
    real cohort: 2 % of unknown sex (founders, not scanned) and a few scanned samples with a
    parent in the .fam (scanned, no founders)."""
    prefix = str(tmp_path_factory.mktemp("few") / "few")
    simulate_study(n_snps=200, n_cases=400, n_controls=400, seed=11, missing_rate=0.01, chromosomes=["1", "2"],
                   ld_block=10, ld_rho=0.95, unknown_sex=0.02, duplicates=0.1, maf_range=(0.01, 0.5)).write(prefix)
    fam = open(prefix + ".fam").read().splitlines()
    for k in (3, 50, 333, 700):  # their father: the sample before them
        f = fam[k].split()
        f[2] = fam[k - 1].split()[1]
        fam[k] = " ".join(f)
    open(prefix + ".fam", "w").write("\n".join(fam) + "\n")
    return prefix


def test_founders_a_few_samples_apart_are_counted_in_the_counting_pass(few_apart_prefix, monkeypatch):
    """Study.founder_counts from the counting pass (the scanned samples' counts plus the codes of
    the few samples that differ), not from a second pass over the .bed (its bed_set_counts made to
    fail): equal to a count by hand of every founder."""
    import gboost.data.load as ld
    from gboost.readers.plink_bed import open_bfile

    src = open_bfile(few_apart_prefix)
    g = np.concatenate([blk for _, blk in src.iter_blocks(np.arange(len(src.samples)), 4096)])
    assert (~src.founder).sum() == 4 and 0 < (src.samples.sex == 0).sum() <= len(src.samples) // 32
    monkeypatch.setattr(ld, "bed_set_counts", lambda *a, **k: (_ for _ in ()).throw(AssertionError("a .bed pass")))
    study, planes = ld.load_with_encoder(src)
    planes.close()  # (the founders' counts come from the counting pass, not the planes)
    kept = np.flatnonzero(np.isin(src.variants.snp, study.variants.snp))
    want = np.stack([(g[kept][:, src.founder] == t).sum(axis=1) for t in range(3)], axis=1)
    assert np.array_equal(study.founder_counts(), want)
    assert not np.array_equal(study.counts.sum(axis=2), want)


@pytest.mark.plink
@pytest.mark.skipif(PLINK is None, reason=NO_PLINK)
@pytest.mark.parametrize("epi1", [1e-3, 0.05])
def test_founders_a_few_samples_apart_order_alleles_as_plink(few_apart_prefix, tmp_path, epi1):
    out, plink = run_both(few_apart_prefix, tmp_path, epi1)
    assert_parity(out, plink, epi1, min_rows=3)


# A study of 18 samples (a cohort cut down by --mind, a candidate-gene study): unrelated partners of a
# SNP often give tables of the same statistic, a coincidental tie that the alike classes do not see.
# Seeds 3 and 9 of this shape: with the alike classes alone, BEST_SNP differed from plink1.9's.
TINY = dict(n_snps=150, n_cases=9, n_controls=9, missing_rate=0.05, chromosomes=["1"], ld_block=10, ld_rho=0.95)


@pytest.fixture(scope="module", params=[3, 9])
def tiny_prefix(request, tmp_path_factory):
    prefix = str(tmp_path_factory.mktemp(f"tiny{request.param}") / "tiny")
    simulate_study(seed=request.param, **TINY).write(prefix)
    return prefix


@pytest.mark.plink
@pytest.mark.skipif(PLINK is None, reason=NO_PLINK)
def test_coincidental_ties_in_a_tiny_study_match_plink(tiny_prefix, tmp_path):
    out, plink = run_both(tiny_prefix, tmp_path, 0.05)
    assert_parity(out, plink, 0.05)


def test_a_tiny_study_re_chooses_among_every_partner(tiny_prefix, tmp_path, monkeypatch):
    """The study needs every partner: with the alike classes alone (as a study past the bound gets),
    some SNPs keep another partner of the same printed statistic (the summary plink1.9 did not write)."""
    import gboost.pipeline.best_ties as bt

    every = _summary_partners(tiny_prefix, tmp_path, "every")
    monkeypatch.setattr(bt, "tie_classes", lambda planes, counts: bt.equivalence_classes(planes, counts))
    alike = _summary_partners(tiny_prefix, tmp_path, "alike")
    a = (every / "pairs.epi.cc.summary").read_text().splitlines()
    b = (alike / "pairs.epi.cc.summary").read_text().splitlines()
    changed = [(x, y) for x, y in zip(a, b) if x != y]
    assert len(a) == len(b) and changed
    assert all(x.split()[:6] == y.split()[:6] for x, y in changed)  # only BEST_CHR / BEST_SNP moved


def test_a_tiny_study_in_parts_merges_to_the_single_run(tiny_prefix, tmp_path):
    _assert_parts_merge_to_the_single_run(tiny_prefix, tmp_path)


def test_tie_classes_take_every_partner_only_below_the_bound():
    from gboost.pipeline.best_ties import ALL_PARTNERS_WORK, tie_classes

    rng = np.random.default_rng(4)
    for p, words in ((40, 2), (500, 16), (700, 2), (2000, 80)):
        planes = rng.integers(0, 2**63, size=(p, 3, words), dtype=np.uint64)
        counts = rng.integers(0, 50, size=(p, 3, 2)).astype(np.int64)
        got = tie_classes(planes, counts)
        if p * (p - 1) * (words + 20) <= ALL_PARTNERS_WORK:
            assert np.array_equal(got, np.zeros(p, np.int64)), (p, words)
        else:
            assert np.array_equal(got, equivalence_classes(planes, counts)), (p, words)
    assert (40 * 39 * 22 <= ALL_PARTNERS_WORK) and (2000 * 1999 * 100 > ALL_PARTNERS_WORK)  # both branches ran


# ---- The pieces ------------------------------------------------------------------------------


def _random_tables(rng, k, n_max):
    out = []
    for _ in range(k):
        n = int(rng.integers(4, n_max))
        t = rng.multinomial(n, rng.dirichlet(np.full(18, 0.5))).reshape(3, 3, 2)
        out.append(t.astype(np.int64))
    return out


def test_plink_z_is_the_ksa_or_the_raised_exact_statistic():
    """PLINK's doubles equal gboost's statistics to rounding: the KSA below the screen, the exact
    statistic (at least the threshold) above it, NaN exactly where PLINK's DF rule fails a pair."""
    rng = np.random.default_rng(3)
    alpha1 = np.array([0.0, 7.0, 9.0, 0.0, 12.0])
    c = np.zeros(18, np.int64)
    for t in _random_tables(rng, 3000, 60):
        for rev_i in (False, True):
            plink_counts(t, rev_i, not rev_i, c)
            z = plink_z(c, alpha1)
            df = plink_df(t)
            if df == 0:
                assert math.isnan(z)
                continue
            ksa = ksa_stat(t)
            if ksa > alpha1[df] * (1 + 1e-12):
                exact, _ = ipf_stat(t)
                assert z == pytest.approx(max(exact, alpha1[df]), rel=1e-6, abs=1e-6)  # (IPF's own stop)
            elif ksa < alpha1[df] * (1 - 1e-12):
                assert z == pytest.approx(ksa, rel=1e-9, abs=1e-9)


def test_plink_z_differs_with_the_orientation_where_plink_picked_by_it():
    """Two tables seen in the sweep (bench/parity_sweep.py, a study left with 10 samples): equal
    KSA as numbers; PLINK's doubles of them differ, which is what its BEST_SNP followed."""
    a = np.zeros((3, 3, 2), np.int64)
    a[0, 0, 0], a[1, 0, 0], a[0, 0, 1], a[1, 1, 1] = 4, 1, 4, 1
    b = np.zeros((3, 3, 2), np.int64)
    b[0, 1, 0], b[0, 2, 0], b[0, 0, 1], b[0, 1, 1], b[1, 2, 1] = 4, 1, 3, 1, 1
    c = np.zeros(18, np.int64)
    alpha1 = np.full(5, 30.0)
    plink_counts(a, False, False, c)
    za = plink_z(c, alpha1)
    plink_counts(b, False, False, c)
    zb = plink_z(c, alpha1)
    assert za == pytest.approx(zb, rel=1e-13) and za > zb  # PLINK took a's partner over b's


def _planes(g, is_case):
    from gboost.data.encode import ClassLayout

    order = np.argsort(is_case, kind="stable")
    g, is_case = g[:, order], is_case[order]
    return encode_block(g, is_case), ClassLayout.from_status(is_case)


def test_alike_classes_are_renamings_of_the_same_split():
    rng = np.random.default_rng(8)
    n = 150
    base = rng.integers(0, 3, (6, n)).astype(np.int8)
    base[rng.random(base.shape) < 0.05] = -1
    g = [base[0], base[0].copy(), np.where(base[0] >= 0, 2 - base[0], -1), base[1]]
    near = base[0].copy()
    near[int(np.flatnonzero(near == 0)[0])] = 1  # one sample moved: not alike
    other_missing = base[0].copy()
    other_missing[int(np.flatnonzero(other_missing >= 0)[0])] = -1  # one more missing call: not alike
    relabel = np.choose(np.where(base[2] >= 0, base[2], 0), [1, 2, 0]).astype(np.int8)
    relabel[base[2] < 0] = -1  # 0 -> 1, 1 -> 2, 2 -> 0: alike to base[2]
    g += [near, other_missing, base[2], relabel, base[3]]
    g = np.array(g, dtype=np.int8)
    is_case = rng.random(n) < 0.5
    planes, layout = _planes(g, is_case)
    from gboost.data.encode import plane_counts

    cls = equivalence_classes(planes, plane_counts(planes, layout))
    assert cls.tolist() == [0, 0, 0, -1, -1, -1, 6, 6, -1]


def test_alike_classes_match_a_brute_force_grouping():
    """Tiny samples, so that many SNPs split them alike: the classes are exactly the groups of
    SNPs whose calls are equal after renaming the genotypes (checked by canonical relabelling)."""
    rng = np.random.default_rng(11)
    g = rng.choice(np.array([-1, 0, 1, 2], np.int8), size=(400, 7), p=[0.05, 0.7, 0.2, 0.05])
    is_case = np.array([0, 1, 0, 1, 0, 1, 1], bool)
    planes, layout = _planes(g, is_case)
    from gboost.data.encode import plane_counts

    cls = equivalence_classes(planes, plane_counts(planes, layout))
    order = np.argsort(is_case, kind="stable")

    def canonical(row):
        names, out = {}, []
        for v in row[order].tolist():
            out.append(-1 if v < 0 else names.setdefault(v, len(names)))
        return tuple(out)

    first = {}
    want = []
    for s in range(len(g)):
        want.append(first.setdefault(canonical(g[s]), s))
    want = np.array(want)
    solo = np.bincount(want, minlength=len(g))[want] == 1
    want[solo] = -1
    assert np.array_equal(cls, want)
    assert (cls >= 0).sum() > 50  # the case is exercised


@pytest.mark.gpu
def test_the_gpu_summary_equals_the_cpu_one_on_ties(dup_prefix, tmp_path):
    from gboost.cli import main

    cpu = _summary_partners(dup_prefix, tmp_path, "cpu")
    assert main(["scan", "--bfile", dup_prefix, "--out", str(tmp_path / "gpu"), "--device", "gpu", "--quiet",
                 "--epi1", "0.05"]) == 0
    for name in ("pairs.epi.cc", "pairs.epi.cc.summary", "pairs.tsv"):
        assert (tmp_path / "gpu" / name).read_bytes() == (cpu / name).read_bytes(), name
