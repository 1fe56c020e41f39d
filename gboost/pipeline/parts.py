"""--part k/n and `gboost merge`: one scan split over many jobs (SLURM arrays), joined exactly,
for both tests: one container (``part.npz`` + ``run.json``), one reader (:func:`read_part`), one
check of the set (:func:`check_part_set`) and one merge (:func:`merge_parts`), which joins the
parts by the test their meta records (:func:`part_test`), never a mix of the two.

A case-control part screens the SNP1 rows of its share of the triangle (balanced by pair count) and writes
``part.npz``: its :class:`gboost.pipeline.accumulate.Accumulator` (survivors with their tables, per-SNP summary
partials, valid-test count) and the study's metadata (SNPs, genotype counts, class sizes, QC).
``merge`` checks that the parts belong to one scan and cover it exactly once, absorbs them (every
piece merges order-independently) and finalizes as a single run would: same pairs, summary,
marginal tests and counts.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from gboost.data.encode import ClassLayout
from gboost.errors import InputError
from gboost.pipeline.accumulate import Accumulator
from gboost.pipeline.params import ScanParams, results_key
from gboost.pipeline.scan import ScreenResult, finalize, scan_rows
from gboost.data.study import QCReport, SampleTable, Study, VariantTable

PART_FILE = "part.npz"
_VARIANT_FIELDS = ("chrom", "snp", "cm", "bp", "a1", "a2")
QT_PHENOTYPE = "quantitative"  # meta["phenotype"] of a QT part: its test is "linear"
_TEST_NAMES = {"boost": "case-control", "linear": "quantitative trait"}


def part_test(meta: dict) -> str:
    """The test a part's meta records: "linear" for a quantitative trait's (``phenotype``), else
    "boost" (case-control parts record no phenotype)."""
    return "linear" if meta.get("phenotype") == QT_PHENOTYPE else "boost"


def write_part(out_dir: str | os.PathLike, study: Study, params: ScanParams, screened: ScreenResult, *,
               covariates: tuple | None = None, overwrite: bool = False, log: bytes | None = None) -> Path:
    """Write one part's screen (``part.npz`` + ``run.json``, and ``gboost.log`` where the command
    gives its ``log``) atomically into ``out_dir``.

    ``covariates`` = (matrix aligned with study.samples, names): the adjusted tests of the part's
    pairs with P <= epi1, which need the genotypes the merge does not have, are made here and
    carried (``adj_*``); the merge attaches them as a single run's finalize would."""
    from gboost.stats.covariates import covariates_key
    from gboost.outputs.results import atomic_directory

    arrays = screened.acc.to_arrays()
    arrays.update(_part_host_work(study, params, screened, covariates))
    for f in _VARIANT_FIELDS:
        col = np.asarray(getattr(study.variants, f))
        arrays[f"var_{f}"] = col if f in ("cm", "bp") else col.astype(str)
    arrays["counts"] = study.counts
    arrays["plink_reversed"] = study.plink_reversed()  # PLINK's orientation for the merge's exact tests
    arrays["layout"] = np.array([study.layout.n_ctrl, study.layout.n_case], np.int64)
    arrays["snp_col_width"] = np.int64(study.snp_id_width)
    meta = {"part": list(params.part), "params": {k: v for k, v in params.__dict__.items() if k != "part"},
            "engine": screened.engine, "device": screened.device, "qc": study.qc.as_dict(),
            "source_files": list(study.source_files), "timings_s": screened.timings,
            "covariates": covariates_key(covariates), "sets": _sets_meta(study)}
    if study.rect is not None:  # the rectangle, rebuilt by the merge (its rows, columns and summary)
        arrays["rect_origin"] = np.ascontiguousarray(study.rect.origin, np.int64)
    arrays["meta"] = np.array(json.dumps(meta))

    def fill(staging: Path) -> None:
        with open(staging / PART_FILE, "wb") as f:
            np.savez(f, **arrays)
        (staging / "run.json").write_text(json.dumps(meta, indent=2, default=str) + "\n")
        if log is not None:
            (staging / "gboost.log").write_bytes(log)

    return atomic_directory(out_dir, fill, overwrite=overwrite)


def _sets_meta(study: Study) -> dict | None:
    """A candidate-set scan's rectangle as its part records it: the checkpoint's fingerprint of it
    (mode, rows, which SNPs: gboost/data/candidates.py Rectangle.key) and the sets' names; None for
    a plain scan."""
    rect = study.rect
    return None if rect is None else {**rect.key(), "names": list(rect.names)}


def _check_sets(loaded: list) -> None:
    """Refuse, in one line naming the part, parts of different candidate sets, or a set scan's parts
    with a plain scan's: their rows and columns are other pairs, whatever else they share."""
    first, _, m0 = loaded[0]
    ref = m0.get("sets")
    for path, _, meta in loaded[1:]:
        got = meta.get("sets")
        if got == ref:
            continue
        if ref is None or got is None:
            this, that = ("a plain scan's", "a candidate-set scan's") if got is None else \
                ("a candidate-set scan's", "a plain scan's")
            raise InputError(path, f"{this} part, and {first} is {that}: parts of one scan only")
        raise InputError(path, f"part of a {got['mode']} scan of other sets ({', '.join(got['names'])}) than {first}'s "
                               f"{ref['mode']} ({', '.join(ref['names'])}): parts of one scan only")


def _part_host_work(study: Study, params: ScanParams, screened: ScreenResult, covariates: tuple | None) -> dict:
    """What the merge needs that it cannot work out without the genotypes, from this part's
    survivors exact-tested (as the merge will test them):

    - for PLINK's BEST_SNP on ties (gboost/pipeline/best_ties.py): the SNPs alike up to their genotypes'
      names (``alike``), and per SNP whose best partner in this part has alike SNPs, the partner
      and PLINK's z chosen among this part's pairs (``tie_q``, ``tie_z``);
    - with ``covariates``: the adjusted tests of the pairs with P <= epi1 (``adj_i``, ``adj_j``,
      ``adj_stat``, ``adj_df``, ``adj_p``)."""
    from gboost.pipeline.best_ties import repair_best
    from gboost.pipeline.hostwork import HostWork
    out: dict = {}
    host = HostWork(study, params, background=False)
    try:
        alike = host.alike.result()
        if alike is None and covariates is None:
            return out
        acc = screened.acc
        host.feed(acc, final=True)
        for f in host.blocks:
            f.result()
        if covariates is not None:
            from gboost.stats.covariates import adjusted_tests

            i, j, _ksa, _stat, _df, p, *_ = host.results(acc)
            sel = np.flatnonzero(p <= params.epi1)
            out["adj_i"], out["adj_j"] = i[sel], j[sel]
            out["adj_stat"], out["adj_df"], out["adj_p"] = adjusted_tests(study, i[sel], j[sel], covariates[0])
        if alike is None:
            return out
        local = acc.summary.copy()
        local.merge_partial(host.folded)
    finally:
        host.close()
    tie_q = np.full(study.n_snps, -1, np.int64)
    tie_z = np.full(study.n_snps, np.nan)
    done = repair_best(study, local, params.thresholds().screen, alike, rows=scan_rows(study, params))
    tie_q[done], tie_z[done] = local.best_partner[done], local.best[done]
    out.update(alike=alike, tie_q=tie_q, tie_z=tie_z)
    return out


def read_part(path, *, meta_only: bool = False):
    """(arrays, meta) of a part directory's part file, case-control or QT; with ``meta_only`` just
    the meta (an .npz is read member by member, so the arrays are not read at all)."""
    f = Path(path) / PART_FILE
    if not f.exists():
        raise InputError(path, f"no {PART_FILE} here: not the output of `gboost scan --part k/n`")
    try:
        with np.load(f, allow_pickle=False) as z:
            meta = json.loads(str(z["meta"]))
            d = None if meta_only else {k: z[k] for k in z.files}
    except Exception as exc:  # a truncated or foreign file
        raise InputError(f, f"unreadable part file ({exc})") from None
    return meta if meta_only else (d, meta)


def check_part_set(loaded: list, science, arrays: tuple[str, ...]) -> None:
    """Refuse, in one line naming the part, a set of parts (``[(path, arrays, meta)]``, the first
    the reference) that mixes scans (``science(meta)`` or the part count differ), data (any of
    ``arrays`` differs), gives a part twice or misses one. Both tests' merges call it."""
    first, d0, m0 = loaded[0]
    n = m0["part"][1]
    ref = science(m0)
    seen = {}
    for path, d, meta in loaded:
        if meta["part"][1] != n or science(meta) != ref:
            raise InputError(path, f"part of a different scan than {first} (parts or parameters differ)")
        if not all(np.array_equal(d[a], d0[a]) for a in arrays):
            raise InputError(path, f"part of a scan of other data than {first}")
        k = meta["part"][0]
        if k in seen:
            raise InputError(path, f"part {k}/{n} given twice (also {seen[k]})")
        seen[k] = path
    missing = sorted(set(range(1, n + 1)) - set(seen))
    if missing:
        raise InputError(None, f"parts {', '.join(f'{k}/{n}' for k in missing)} are missing")


def merge_parts(dirs: list[str | os.PathLike]):
    """Join part directories into the result a single run gives: a
    :class:`gboost.pipeline.scan.ScanResult` for case-control parts, a :class:`gboost.pipeline.qt_scan.QTScanResult`
    for a quantitative trait's, by the test each part's meta records; parts of both are refused in
    one line naming the first of the other test."""
    if not dirs:
        raise InputError(None, "merge needs at least one part directory")
    loaded = [(Path(p), *read_part(p)) for p in dirs]
    first, _, m0 = loaded[0]
    test = part_test(m0)
    for path, _, meta in loaded[1:]:
        if part_test(meta) != test:
            raise InputError(path, f"a {_TEST_NAMES[part_test(meta)]} part, and {first} is a {_TEST_NAMES[test]} "
                                   "scan's: parts of one scan only")
    return _merge_qt(loaded) if test == "linear" else _merge_case_control(loaded)


def _merge_case_control(loaded: list):
    """The case-control parts ``[(path, arrays, meta)]`` joined into one run's ScanResult."""
    _, d0, m0 = loaded[0]
    accs = []
    for path, d, meta in loaded:  # each part whole before anything is merged: one line naming a foreign one
        try:
            accs.append(Accumulator.from_arrays(d))
            _science(meta["params"]), meta["part"][1], meta["engine"], meta["device"], meta["timings_s"]
            _study_from_part(d, meta)
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise InputError(path / PART_FILE, f"a part file of another version of gboost ({type(exc).__name__}: "
                                               f"{exc}); rescan this part with this version") from None
    _check_sets(loaded)
    check_part_set(loaded, lambda m: {**_science(m["params"]), "covariates": m.get("covariates")},
                   ("var_snp", "counts"))
    acc = accs[0]
    for other in accs[1:]:
        acc.absorb(other)
    study = _study_from_part(d0, m0)
    params = ScanParams(**_science(m0["params"]))
    engines = sorted({(meta["engine"], meta["device"]) for _, _, meta in loaded})
    desc = (engines[0][0], "; ".join(dev for _, dev in engines)) if len(engines) > 1 else engines[0]
    timings = {"screen": sum(meta["timings_s"].get("screen", 0.0) for _, _, meta in loaded)}
    ties = None
    if all("alike" in d for _, d, _ in loaded):  # (parts written before it: the engines' order stands)
        ties = (d0["alike"], [(d["tie_z"], d["tie_q"]) for _, d, _ in loaded])
    covariates = None
    if m0.get("covariates") is not None:  # the adjusted tests the parts made, looked up by pair
        from gboost.stats.covariates import AdjustedTable

        table = AdjustedTable.joined([AdjustedTable.of(d["adj_i"], d["adj_j"], (d["adj_stat"], d["adj_df"], d["adj_p"]))
                                      for _, d, _ in loaded])
        covariates = (table, m0["covariates"]["names"])
    return finalize(study, params, ScreenResult(acc, params.thresholds(), timings, *desc), covariates=covariates,
                    part_ties=ties)


def _science(params: dict) -> dict:
    """The parameters that change results (engine, threads and tile size do not)."""
    return results_key(params)


def _study_from_part(d, meta) -> Study:
    """A Study carrying everything the writers need (no genotype planes)."""
    variants = VariantTable(*(d[f"var_{f}"].astype(object) if f not in ("cm", "bp") else d[f"var_{f}"]
                              for f in _VARIANT_FIELDS))
    n_ctrl, n_case = (int(x) for x in d["layout"])
    empty = np.zeros(0, dtype=object)
    samples = SampleTable(empty, empty, np.zeros(0, np.int8), np.zeros(0, np.int8))
    qc = QCReport(**{k: v for k, v in meta["qc"].items()})
    p = len(variants)
    study = Study(variants, samples, ClassLayout(n_ctrl, n_case), np.zeros((p, 3, 0), np.uint64), d["counts"], qc,
                  list(meta["source_files"]), int(d["snp_col_width"]))
    if "plink_reversed" in d:  # (parts written before it: every SNP as in its .bim)
        study.reversed_alleles = np.asarray(d["plink_reversed"], dtype=bool)
    rect = _rect_of(d, meta)
    if rect is not None:
        from dataclasses import replace

        study = replace(study, rect=rect)
    return study


def _rect_of(d, meta):
    """A candidate-set scan's rectangle (gboost/data/candidates.py Rectangle) as its part carried it,
    checked against its fingerprint; None for a plain scan's part."""
    sets = meta.get("sets")
    if sets is None:
        return None
    from gboost.data.candidates import Rectangle

    rect = Rectangle(sets["mode"], tuple(sets["names"]), int(sets["rows"]), np.asarray(d["rect_origin"], np.int64))
    if rect.key() != {k: sets[k] for k in ("mode", "rows", "origin_sha256")}:
        raise ValueError("its rectangle's SNPs do not match its fingerprint")
    return rect


# --- a quantitative trait scan's parts ------------------------------------------------------------

_QT_PAIR_FIELDS = ("i", "j", "tables", "sums", "sumsq", "ok", "beta", "se", "stat", "f", "f_df1", "f_df2", "f_p")
_QT_SCIENCE = ("epi1", "epi2", "genotypic")  # the parameters that change the files (engine options do not)
_QT_ADJ_FIELDS = ("beta", "se", "stat", "p", "n", "df")  # the adjusted test's columns (QTPairs.adj)


def write_qt_part(out_dir, result, *, overwrite: bool = False, log: bytes | None = None):
    """One part's share of a QT scan (``part.npz`` + ``run.json``, and ``gboost.log`` where the
    command gives its ``log``), atomically: its .epi.qt rows with
    their re-tests, its per-SNP counts and best partners (-1 where none beat 0: merge merges them by
    tiles.better as one scan's tiles are), the marginal tests and what the writers need of the study; with
    covariates, the adjusted test of its rows (``pair_adj_*``; its counts and partners are that test's)
    and the covariates' key, which every part of the merge must share."""
    import json

    from gboost.outputs.outdir import staged_files

    s, core = result.study, result.core
    arrays = {f"var_{f}": (np.asarray(getattr(s.variants, f)) if f in ("cm", "bp")
                           else np.asarray(getattr(s.variants, f)).astype(str)) for f in _VARIANT_FIELDS}
    arrays.update(counts=s.counts, layout=np.array([s.layout.n_ctrl, s.layout.n_case], np.int64),
                  snp_col_width=np.int64(s.snp_id_width), trait=np.asarray(s.trait, np.float64),
                  a1_flip=(np.asarray(s.a1_flip, bool) if s.a1_flip is not None else np.zeros(s.n_snps, bool)),
                  n_sig=core.n_sig, n_fail=core.n_fail, marginal_beta=result.marginal_beta,
                  marginal_stat=result.marginal_stat, marginal_p=result.marginal_p)
    arrays.update(best=core.partial.best, best_partner=core.partial.best_partner)  # (-inf / -1: none beat 0)
    for f in _QT_PAIR_FIELDS:
        v = getattr(result.screened, f)
        if v is not None:
            arrays[f"pair_{f}"] = v
    if result.screened.adj is not None:
        arrays.update({f"pair_adj_{k}": v for k, v in zip(_QT_ADJ_FIELDS, result.screened.adj)})
    params = {k: v for k, v in result.params.__dict__.items() if k != "part"}
    meta = {"phenotype": QT_PHENOTYPE, "covariates": result.covariates_key, "part": list(result.params.part), "params": params, "test": result.test,
            "engine": result.engine, "device": result.device, "qc": s.qc.as_dict(),
            "source_files": list(s.source_files), "timings_s": result.timings,
            "counts": {"pairs": _part_pairs(result), "epi_qt_rows": len(result.screened), **result.engine_counts},
            "sets": _sets_meta(s)}
    if s.rect is not None:  # the rectangle, rebuilt by the merge (its rows, columns and summary)
        arrays["rect_origin"] = np.ascontiguousarray(s.rect.origin, np.int64)
    arrays["meta"] = np.array(json.dumps(meta, default=str))

    def fill(staging):
        with open(staging / PART_FILE, "wb") as f:
            np.savez(f, **arrays)
        (staging / "run.json").write_text(json.dumps(meta, indent=2, default=str) + "\n")
        if log is not None:
            (staging / "gboost.log").write_bytes(log)

    from gboost.pipeline.checkpoint import LEDGER, MANIFEST

    out = staged_files(out_dir, fill, overwrite=overwrite)
    for name in (LEDGER, MANIFEST, MANIFEST + ".tmp"):  # the part's checkpoint, now done with
        (out / name).unlink(missing_ok=True)
    return out


def _part_pairs(result) -> int:
    """The pairs of a QT part's share: of its rows of the triangle or of a candidate-set scan's rectangle."""
    from gboost.pipeline.qt_scan import qt_rows

    s = result.study
    r0, r1 = qt_rows(s, result.params)
    if s.rect is not None:
        return int(s.rect.row_pairs((r0, r1)).sum())
    return int(sum(s.n_snps - 1 - i for i in range(r0, r1)))


def _merge_qt(loaded: list):
    """Join the parts of one QT scan (``[(path, arrays, meta)]``, read by :func:`merge_parts`) into
    the result one run gives (the same files byte for byte): counts summed; each SNP's best
    partner merged over the parts by PLINK's rule (tiles.better, as one scan merges its tiles); the
    rows of every part, in (i, j) order. Refuses parts of another scan, of other data, given twice
    or missing."""
    from gboost.engines.qt_cpu import plink_best
    from gboost.pipeline.qt_scan import QTPairs, QTParams, QTScanResult, QTSummary
    from gboost.stats.qt import qt_thresholds
    from gboost.pipeline.tiles import Summary

    for path, d, meta in loaded:  # each part whole before anything is merged: one line naming a foreign one
        missing = [k for k in ("n_sig", "n_fail", "best", "best_partner", "var_snp", "counts", "trait", "a1_flip",
                               "pair_i", "pair_j", "marginal_p") if k not in d]
        try:
            meta["params"]["epi1"], meta["part"][1], meta["engine"], meta["device"], meta["timings_s"], meta["qc"]
        except (KeyError, IndexError, TypeError) as exc:
            missing.append(f"{type(exc).__name__}: {exc}")
        if missing:
            raise InputError(path / PART_FILE, f"a part file of another version of gboost (no {', '.join(missing)}); "
                                               "rescan this part with this version")
    _, d0, m0 = loaded[0]
    _check_sets(loaded)
    check_part_set(loaded, lambda m: {**{k: m["params"].get(k) for k in _QT_SCIENCE}, "covariates": m.get("covariates")},
                   ("var_snp", "counts", "trait", "a1_flip"))
    loaded = sorted(loaded, key=lambda x: x[2]["part"][0])  # (the rows' order: the meta's engines, timings)
    p = len(d0["var_snp"])
    n_sig = np.zeros(p, np.int64)
    n_fail = np.zeros(p, np.int64)
    partners = Summary.empty(p)
    for _, d, _ in loaded:
        n_sig += d["n_sig"]
        n_fail += d["n_fail"]
        partners.merge(0, np.zeros(p, np.int64), np.zeros(p, np.int64), d["best"], d["best_partner"])
    try:
        rect = _rect_of(d0, m0)
    except (KeyError, ValueError) as exc:
        raise InputError(loaded[0][0] / PART_FILE, f"a candidate-set scan's part file that does not hold its "
                                                   f"rectangle ({exc}); rescan this part with this version") from None
    best, partner = plink_best(partners, 0 if rect is None else rect.n_rows)
    fields = {}
    for f in _QT_PAIR_FIELDS:
        if f"pair_{f}" in d0:
            fields[f] = np.concatenate([d[f"pair_{f}"] for _, d, _ in loaded])
    order = np.lexsort((fields["j"], fields["i"]))
    screened = QTPairs(**{f: v[order] for f, v in fields.items()})
    if m0.get("covariates") is not None:  # every part's rows carry their adjusted test
        missing = [path for path, d, _ in loaded if "pair_adj_stat" not in d]
        if missing:
            raise InputError(missing[0] / PART_FILE, "a part of a covariate-adjusted scan without its adjusted tests (a part of "
                                         "another version of gboost); rescan this part with this version")
        screened.adj = tuple(np.concatenate([d[f"pair_adj_{k}"] for _, d, _ in loaded])[order]
                             for k in _QT_ADJ_FIELDS)
    params = QTParams(**{k: v for k, v in m0["params"].items() if k in QTParams.__dataclass_fields__})
    alpha1, alpha2 = qt_thresholds(params.epi1, params.epi2)
    variants = VariantTable(*(d0[f"var_{f}"].astype(object) if f not in ("cm", "bp") else d0[f"var_{f}"]
                              for f in _VARIANT_FIELDS))
    empty = np.zeros(0, dtype=object)
    samples = SampleTable(empty, empty, np.zeros(0, np.int8), np.zeros(0, np.int8))
    n_ctrl, n_case = (int(x) for x in d0["layout"])
    study = Study(variants, samples, ClassLayout(n_ctrl, n_case), np.zeros((p, 3, 0), np.uint64), d0["counts"],
                  QCReport(**m0["qc"]), list(m0["source_files"]), int(d0["snp_col_width"]), trait=d0["trait"],
                  a1_flip=d0["a1_flip"], rect=rect)
    engines = sorted({(meta["engine"], meta["device"]) for _, _, meta in loaded})
    engine = "+".join(sorted({e for e, _ in engines}))
    device = "; ".join(dev for _, dev in engines)
    timings = {"screen": sum(meta["timings_s"].get("screen", 0.0) for _, _, meta in loaded)}
    if rect is None:
        summary = QTSummary(n_sig, (p - 1) - n_fail, best, partner)
        n_valid = p * (p - 1) // 2 - int(n_fail.sum()) // 2
    else:  # a rectangle's rows (each pair counted at its row only)
        summary = QTSummary(n_sig, rect.row_pairs() - n_fail, best, partner)
        n_valid = rect.n_pairs() - int(n_fail[:rect.n_rows].sum())
    res = QTScanResult(study, params, engine, device, screened, summary, n_valid, alpha1, alpha2,
                       d0["marginal_beta"], d0["marginal_stat"], d0["marginal_p"], timings, m0["test"])
    if m0.get("covariates") is not None:
        res.covariate_names = list(m0["covariates"]["names"])
        res.covariates_key = m0["covariates"]
    return res
