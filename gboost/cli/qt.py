"""``gboost scan`` on a quantitative phenotype: PLINK 1.9's ``--epistasis`` linear test.

Called by :mod:`gboost.cli` once the inputs are open and the phenotype turned out quantitative
(PLINK's rule, gboost/readers/pheno.py). Options the QT scan does not have yet are refused with one
line, before any genotype is read.
"""
from __future__ import annotations

import sys

from gboost.errors import InputError


def _refuse_unsupported(args) -> None:
    unsupported = [("--allelic", args.allelic)]
    named = [flag for flag, value in unsupported if value]
    if named:
        raise InputError(None, f"{', '.join(named)}: not available for a quantitative trait yet (the phenotype is "
                               "quantitative, so the scan is PLINK's linear --epistasis test)")


def scan_qt(args, out, source, qc, clock, log, sets=None) -> int:
    """Load, scan and write a QT study; the exit code. ``sets``: a candidate-set scan's sets
    (gboost/data/candidates.py; its mode ``args.set_mode``)."""
    from gboost.outputs.qt_results import write_qt_outputs
    from gboost.outputs.results import start_hashing
    from gboost.data.load import load_study
    from gboost.pipeline.qt_scan import QTParams, run_qt_scan

    _refuse_unsupported(args)
    if args.covar and getattr(args, "device", None) == "gpu":  # before any genotype is read
        from gboost.pipeline.qt_scan import COVAR_NEEDS_CPU

        raise InputError(None, COVAR_NEEDS_CPU)
    try:
        from gboost.pipeline.validate import given

        params = QTParams(**given(args, epi1="epi1", epi2="epi2", threads="threads", genotypic="genotypic",
                                  device="device", tile="tile", gpus="gpus", dask="dask",
                                  min_distance_kb="min_distance", max_r2="max_r2", part="part", perm="perm",
                                  perm_seed="perm_seed", within="within"))
    except ValueError as exc:
        raise InputError(None, str(exc)) from None
    if params.perm and args.covar:
        from gboost.pipeline.qt_scan import PERM_WITH_COVARIATES

        raise InputError(args.covar, PERM_WITH_COVARIATES)
    if args.perm_seed is not None and not params.perm:
        from gboost.pipeline.params import seed_without_perm

        raise InputError(None, seed_without_perm(args.perm_seed))
    log("quantitative phenotype: the scan is PLINK 1.9's linear --epistasis test (y ~ a + b + a*b, "
        "Wald test of a*b)")
    load_timings: dict = {}
    study = load_study(source, qc, log=log, timings=load_timings)
    if sets is not None:
        from gboost.data.candidates import rectangle_study

        study = rectangle_study(study, sets, args.set_mode, log=log)
    start_hashing(study.source_files)
    clock.lap("read")
    clock.split("read", "encode", load_timings.get("encode", 0.0))
    p = study.n_snps
    if study.rect is not None:
        log(f"{study.rect.describe()} x {study.n_samples} samples with a quantitative phenotype enter the scan: "
            f"{study.rect.n_pairs()} pairs")
    else:
        log(f"{p} SNPs x {study.n_samples} samples with a quantitative phenotype enter the scan: "
            f"{p * (p - 1) // 2} pairs")
    bar = None
    if not args.quiet:
        def bar(done, total):
            print(f"\r{100.0 * done / max(total, 1):5.1f}% of {total} pairs", end="", file=sys.stderr, flush=True)
    covariates = None
    if args.covar:
        from gboost.stats.covariates import read_covariates
        from gboost.stats.qt_covar import model_formula

        covariates = read_covariates(args.covar, study, args.covar_name.split(",") if args.covar_name else None,
                                     args.covar_number)
        log(f"covariates: every pair is tested in {model_formula(covariates[1])} over its complete cases "
            "(Wald test of a*b, t distribution)")
        if params.device == "auto":
            log("covariates: the adjusted scan runs on the CPU engine (the GPU engine has no covariates yet)")
        clock.lap("covariates")
    if params.within is not None:  # a bad --within file: refused before anything is written
        from gboost.pipeline.permute import read_within

        strata = read_within(params.within, study)
        log(f"--perm permutes the trait within {len(set(strata.tolist()))} clusters of {params.within}")
    if params.dask is not None:
        log(f"--dask {params.dask}: the tiles run as Dask tasks, the CPU engine on each worker")
    from gboost.pipeline.checkpoint import MANIFEST

    resume = bool(args.resume) and (out / MANIFEST).exists()
    if resume:
        log("--resume: taking up the interrupted scan's finished work from its checkpoint")
    perm_bar = _PermBar(bar, study.n_samples) if params.perm and not args.quiet else None
    result = run_qt_scan(study, params, progress=bar, covariates=covariates, checkpoint_dir=out, resume=resume,
                         perm_progress=perm_bar)
    if bar is not None and not (perm_bar is not None and perm_bar.started):
        print(file=sys.stderr)
    clock.lap("screen")
    clock.split("screen", "permutations", result.timings.get("permutations", 0.0))  # (run.json's command_s)
    if args.part:
        from gboost.pipeline.parts import write_qt_part

        k, n = args.part
        line = (f"part {k}/{n}: {result.core.n_valid} valid tests, {len(result.screened)} rows of pairs.epi.qt; join "
                "the parts with `gboost merge DIR... --out DIR`")
        console = getattr(args, "console", None)
        write_qt_part(out, result, overwrite=True, log=console.text([line]) if console is not None else None)
        _print(args, [line])
        return 0
    result.command_clock = clock
    from gboost.cli.console import log_files

    lines = [f"{result.n_valid} valid tests (Bonferroni 0.05: p < {result.bonferroni:.3g}); {len(result.screened)} rows "
             f"in pairs.epi.qt; {len(result.reported)} pairs with P <= {params.epi1:g} in pairs.tsv",
             *_perm_lines(result),
             f"outputs in {out}/ ({result.timings['total']:.2f} s)"]
    write_qt_outputs(result, out, overwrite=True, extra_files=log_files(args, lines))  # gboost.log: these lines too
    _print(args, lines)
    return 0


class _PermBar:
    """The permutations' bar (gboost.pipeline.progress.Progress events, counting permutations),
    begun on a line of its own below the scan's (whose line it ends)."""

    def __init__(self, scan_bar, n_samples: int):
        from gboost.pipeline.progress import TextProgress

        self.scan_bar, self.started = scan_bar, False
        self.text = TextProgress(n_samples=n_samples)

    def __call__(self, ev) -> None:
        if not self.started and self.scan_bar is not None:
            print(file=sys.stderr)
        self.started = True
        self.text(ev)


def _perm_lines(result) -> list[str]:
    """The closing line of --perm's permutations (none without them)."""
    perm = result.perm
    if perm is None:
        return []
    t05 = perm.threshold(0.05)
    return [f"{perm.n} permutations of the trait ({perm.seconds:.2f} s): "
            + (f"family-wise 0.05 threshold STAT > {t05:.6g} (P < {perm.p_value(t05, 1):.3g}; EMP2 in pairs.tsv, "
               "maxima in perm.tsv)" if t05 is not None else
               "too few for an EMP2 of 0.05 (need 19 or more); EMP2 in pairs.tsv")]


def _print(args, lines) -> None:
    """Lines already in gboost.log, on the console too (unless --quiet)."""
    if not args.quiet:
        for line in lines:
            print(line, file=sys.stderr)


def write_merged_qt(result, args, out, log) -> None:
    """The outputs of ``gboost merge`` of a quantitative trait scan's parts (merged by
    :func:`gboost.pipeline.parts.merge_parts`). Called by :mod:`gboost.cli` with the output folder locked."""
    from gboost.outputs.qt_results import write_qt_outputs

    from gboost.cli.console import log_files

    lines = [f"{result.n_valid} valid tests (Bonferroni 0.05: p < {result.bonferroni:.3g}); {len(result.screened)} rows "
             f"in pairs.epi.qt; {len(result.reported)} pairs with P <= {result.params.epi1:g} in pairs.tsv",
             f"outputs in {out}/"]
    write_qt_outputs(result, out, overwrite=True, extra={"merged_parts": [str(p) for p in args.parts]},
                     extra_files=log_files(args, lines))
    _print(args, lines)
