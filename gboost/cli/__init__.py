"""The ``gboost`` command: the same pipeline as the GUI, headless.

Bad input never produces a traceback: :class:`gboost.errors.InputError` becomes one line on
stderr naming the file and the problem, and exit code 2.
"""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys

import gboost
from gboost.pipeline import validate as V
from gboost.errors import InputError, ScanCancelled


def _add_input_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("input (one of)")
    g.add_argument("--bfile", metavar="PREFIX", help="PLINK binary fileset PREFIX.bed/.bim/.fam")
    g.add_argument("--file", metavar="PREFIX", help="PLINK text fileset PREFIX.ped/.map")
    g.add_argument("--ped", metavar="FILE", help="PLINK .ped (with --map)")
    g.add_argument("--map", metavar="FILE", dest="map_file", help="PLINK .map (with --ped)")
    g.add_argument("--boost-matrix", metavar="FILE", help="BOOST/GBOOST text matrix: label 0/1 then genotypes 0/1/2")
    g.add_argument("--pfile", metavar="PREFIX", help="PLINK 2 fileset PREFIX.pgen/.pvar[.zst]/.psam (needs pgenlib)")
    g.add_argument("--vcf", metavar="FILE", help="VCF or BCF file (.vcf, .vcf.gz, .bcf; GT hard calls; needs cyvcf2 "
                                                 "and --pheno)")
    g.add_argument("--bgen", metavar=("FILE", "MODE"), nargs="+", action=_BgenAction,
                   help="BGEN file, optionally with plink2's REF/ALT mode ref-first, ref-last or ref-unknown "
                        "(default ref-unknown: the first allele is counted); needs cbgen")
    g.add_argument("--sample", metavar="FILE", help="the BGEN's Oxford .sample file")
    g.add_argument("--hard-call-threshold", type=V.flag_type("hard_call_threshold"), default=0.1,
                   metavar="T", help="BGEN: a dosage within T of an integer is called, the rest missing (PLINK 2's "
                                     "meaning; default 0.1)")
    g.add_argument("--double-id", action="store_true", help="VCF/BGEN sample IDs: FID = IID = the file's ID")
    g.add_argument("--const-fid", nargs="?", const="0", metavar="ID",
                   help="VCF/BGEN sample IDs: FID = ID (default 0), IID = the file's ID (PLINK 2's default)")
    g.add_argument("--id-delim", nargs="?", const="_", metavar="D",
                   help="VCF/BGEN sample IDs: split FID<D>IID at the delimiter D (default _)")
    g.add_argument("--pheno", metavar="FILE", help="phenotype file (FID IID value), overrides the .fam's column 6")
    g.add_argument("--pheno-name", metavar="NAME",
                   help="the --pheno file's column of this name (its header line: FID IID NAME1 NAME2 ...)")
    g.add_argument("--mpheno", type=V.at_least("--mpheno", 1, int), metavar="N",
                   help="the N-th phenotype column of the --pheno file (default 1: its third column)")
    g.add_argument("--covar", metavar="FILE", help="covariates (FID IID c1 c2 ...): case-control: STAT_ADJ/P_ADJ of a logistic refit "
                   "of the reported pairs; quantitative trait: every pair's test adjusted (CPU engine)")
    g.add_argument("--covar-name", metavar="NAMES", help="comma-separated covariate columns to use (default: all)")
    g.add_argument("--covar-number", type=V.number_list_type("--covar-number"), metavar="LIST",
                   help="covariates to use by number, PLINK's 1-based list: 1-3,5 (covariate 1 is the file's "
                        "third column)")
    g.add_argument("--allow-no-sex", action="store_true",
                   help="keep the phenotypes of samples with unknown sex (PLINK ignores them by default)")


class _BgenAction(argparse.Action):
    """``--bgen FILE [MODE]``: plink2's spelling, MODE one of ref-first, ref-last, ref-unknown."""

    def __call__(self, parser, namespace, values, option_string=None):
        from gboost.readers.bgen import REF_MODES

        if len(values) > 2 or (len(values) == 2 and values[1] not in REF_MODES):
            parser.error(f"--bgen takes FILE and optionally one of {', '.join(REF_MODES)}; got {' '.join(values)}")
        setattr(namespace, "bgen", values[0])
        setattr(namespace, "bgen_ref", values[1] if len(values) == 2 else "ref-unknown")


def _add_qc_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("QC (PLINK's flags and meanings; all off by default, as in PLINK 1.9)")
    g.add_argument("--maf", type=V.flag_type("maf"), help="drop SNPs with minor allele frequency below this")
    g.add_argument("--geno", type=V.flag_type("geno"), help="drop SNPs with missing-call rate above this")
    g.add_argument("--mind", type=V.flag_type("mind"), help="drop samples with missing-call rate above this")
    g.add_argument("--hwe", type=V.flag_type("hwe"), help="drop SNPs with HWE exact test p below this (controls)")
    g.add_argument("--keep", metavar="FILE", help="keep only the samples listed in FILE (FID IID per line, or IID alone)")
    g.add_argument("--remove", metavar="FILE", help="drop the samples listed in FILE (FID IID per line, or IID alone)")
    g.add_argument("--keep-fam", metavar="FILE", help="keep only the families listed in FILE (one FID per line)")
    g.add_argument("--remove-fam", metavar="FILE", help="drop the families listed in FILE (one FID per line)")
    g.add_argument("--keep-allele-order", action="store_true",
                   help="A1 is the .bim's first allele, not the founders' minor allele (PLINK's flag): the allele a "
                        "quantitative trait's test counts (BETA_INT's sign, marginal.tsv's A1)")
    g.add_argument("--extract", metavar="FILE", help="keep only the SNP IDs listed in FILE")
    g.add_argument("--exclude", metavar="FILE", help="drop the SNP IDs listed in FILE")
    g.add_argument("--chr", dest="chrom", metavar="CHR", nargs="+",
                   help="keep only these chromosomes, e.g. 1-4,22 or 2 3 (PLINK's spellings)")
    g.add_argument("--allow-extra-chr", action="store_true",
                   help="accept chromosome names PLINK does not know (HLA, chrUn_gl000220, ...): scanned and "
                        "printed whole, as plink1.9 --allow-extra-chr does; refused without it, as by PLINK")


def _parse_chr(spec: str | list[str] | None, allow_extra_chr: bool = True) -> list[str] | None:
    """A ``--chr`` list (one string, or PLINK's space-separated words) as ``study.chr_list`` reads
    it: ranges expanded, names as given; the names themselves are checked again by QCOptions
    against --allow-extra-chr."""
    if not spec:
        return None
    from gboost.data.study import chr_list

    try:
        return chr_list([spec] if isinstance(spec, str) else spec, allow_extra_chr)
    except ValueError as exc:
        raise InputError(None, str(exc)) from None


def _parse_part(text: str) -> tuple[int, int]:
    try:
        k, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--part {text!r}: expected K/N, e.g. 3/10") from None
    if not 1 <= k <= n:
        raise argparse.ArgumentTypeError(f"--part {text!r}: need 1 <= K <= N")
    return k, n


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gboost", description="Exhaustive SNP x SNP epistasis scans (BOOST) on GPUs and CPUs.")
    parser.add_argument("--version", action="version", version=f"gboost {gboost.__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    scan = sub.add_parser("scan", help="test every SNP pair of a study (PLINK --fast-epistasis boost)")
    _add_input_args(scan)
    _add_qc_args(scan)
    g = scan.add_argument_group("scan")
    g.add_argument("--out", required=True, metavar="DIR", help="output directory (pairs.tsv, pairs.epi.cc, ...)")
    g.add_argument("--overwrite", action="store_true", help="replace the outputs of an earlier run in DIR")
    g.add_argument("--resume", action="store_true",
                   help="continue the interrupted scan checkpointed in DIR (same data and thresholds)")
    g.add_argument("--part", metavar="K/N", type=_parse_part,
                   help="scan only the K-th of N equal shares of the pairs (SLURM arrays); join with `gboost merge`")
    g.add_argument("--parallel", metavar=("K", "N"), nargs=2, type=int,
                   help="PLINK's spelling of --part K/N (two numbers): the same share, the same files")
    c = scan.add_argument_group("candidate sets (plink1.9's --fast-epistasis boost set-by-all / set-by-set; on a "
                                "quantitative trait its --epistasis set-by-all / set-by-set)")
    c.add_argument("--set", dest="set_file", metavar="FILE",
                   help="PLINK set file: a set's name, its SNP IDs, END (sets in file order)")
    c.add_argument("--make-set", dest="make_set", metavar="FILE",
                   help="PLINK range file: CHR START END NAME per line (bp inclusive; one set per NAME)")
    c.add_argument("--set-by-all", action="store_true",
                   help="every SNP of the (one) set against every SNP of the scan")
    c.add_argument("--set-by-set", action="store_true",
                   help="every SNP of the first set against every SNP of the second (one set: the pairs within it)")
    c.add_argument("--fast-epistasis", dest="fast_epistasis", nargs="*", metavar="MODIFIER",
                   help="PLINK's spelling: --fast-epistasis boost set-by-all (or set-by-set); boost is the only test")
    g.add_argument("--epi1", type=V.in_range("--epi1", 0, 1, lo_open=True), default=None,
                   help="screening/reporting p threshold (default 5e-6, PLINK's for boost; 1e-4 for a quantitative "
                        "trait, PLINK's for --epistasis, where 1 writes every pair)")
    g.add_argument("--epi2", type=V.in_range("--epi2", 0, 1, lo_open=True, hi_open=True), default=None, help="p threshold counted in the .summary's N_SIG (default 0.01)")
    g.add_argument("--device", choices=("auto", "cpu", "gpu"), default="auto", help="engine (auto: GPU when CuPy sees one)")
    g.add_argument("--threads", type=V.flag_type("threads", int), help="CPU threads (default: all cores)")
    g.add_argument("--gpus", type=V.gpu_list, help="GPU ids to use, e.g. 0,1 (default: all)")
    g.add_argument("--dask", metavar="ADDRESS", type=V.dask_address,
                   help="run tiles on a Dask cluster: scheduler address (tcp://host:8786), local:N for N local workers, or local:gpus for one worker per GPU of this host")
    g.add_argument("--tile", type=V.flag_type("tile", int), help="tile edge in SNPs (default: chosen by the engine)")
    g.add_argument("--min-distance", type=V.flag_type("min_distance_kb"), metavar="KB",
                   help="pairs.tsv: leave out pairs of SNPs closer than KB kilobases on one chromosome")
    g.add_argument("--max-r2", type=V.flag_type("max_r2"), metavar="R2", help="pairs.tsv: leave out pairs whose genotypic r^2 exceeds R2")
    g.add_argument("--allelic", action="store_true", help="marginal test: PLINK's 1-df allelic chi-square instead of BOOST's 2-df LR")
    g.add_argument("--calibration-pairs", type=V.at_least("--calibration-pairs", 0, int), default=None, metavar="N",
                   help="exact tests of N random pairs for the interaction test's inflation lambda in run.json "
                        "(default 200000; 0: none, which saves their time on small or quick scans)")
    g.add_argument("--perm", type=V.flag_type("perm", int), default=None, metavar="N",
                   help="N permutations of the phenotype after the scan (the case/control labels, or a quantitative "
                        "trait's values): pairs.tsv's EMP2 (family-wise, max(T); max |T| of the linear test on a "
                        "quantitative trait), perm.tsv and run.json's genome-wide threshold; each costs about one scan")
    g.add_argument("--perm-seed", type=V.flag_type("perm_seed", int), default=None, metavar="S",
                   help="seed of the --perm permutations (default 0: the same permutations every run)")
    g.add_argument("--within", metavar="FILE",
                   help="PLINK cluster file (FID IID CLUSTER): --perm permutes the phenotype only within each cluster")
    g.add_argument("--genotypic", action="store_true",
                   help="quantitative trait: also the 4-df genotypic interaction F-test of the reported pairs")
    g.add_argument("--quiet", action="store_true", help="no progress bar or log lines")

    merge = sub.add_parser("merge", help="join the outputs of `gboost scan --part k/n` runs into one scan's outputs")
    merge.add_argument("parts", nargs="+", metavar="DIR", help="output directories of the parts")
    merge.add_argument("--out", required=True, metavar="DIR")
    merge.add_argument("--overwrite", action="store_true")
    merge.add_argument("--quiet", action="store_true")

    for name, module, help_text in _SUBCOMMANDS:
        sp = sub.add_parser(name, help=help_text)
        importlib.import_module(module).add_arguments(sp)
        sp.set_defaults(run_command=main)  # a subcommand that runs others (warm's scans) runs them through main
    return parser


# Subcommands that live in their own modules: (name, module with add_arguments/run, help).
_SUBCOMMANDS = [
    ("simulate", "gboost.cli.simulate", "write a simulated case-control study with planted interactions"),
    ("doctor", "gboost.cli.doctor", "what this install found: engine, GPU, CuPy/CUDA, threads, compile caches, readers, PLINK"),
    ("warm", "gboost.cli.warm", "compile everything a scan uses now (numba, and NVRTC on a GPU), so the first scan compiles nothing"),
]
if importlib.util.find_spec("gboost.cli.pathways") is not None:
    _SUBCOMMANDS.append(("pathways", "gboost.cli.pathways", "group reported pairs by pathway: GraphML and node/edge tables"))


def _log(args, msg: str) -> None:
    console = getattr(args, "console", None)  # OUT/gboost.log (gboost/cli/console.py), --quiet or not
    if console is not None:
        console.add(msg)
    if not getattr(args, "quiet", False):
        print(msg, file=sys.stderr)


def _check_out_dir(out, args) -> bool:
    """Refuse to clobber earlier work; returns True when an interrupted scan is to be resumed."""
    from gboost.pipeline.checkpoint import Ledger
    from gboost.outputs.outdir import LOCK, clear_leftovers

    if not out.exists():
        return False
    if not out.is_dir():
        raise InputError(out, "exists and is not a directory")
    clear_leftovers(out)
    if Ledger.exists(out):
        if args.resume:
            return True
        if not args.overwrite:
            raise InputError(out, "holds an interrupted scan: use --resume to continue it or --overwrite to start over")
        return False
    contents = [p for p in out.iterdir() if p.name != LOCK]
    if args.resume and not args.overwrite:
        # --resume names the cause the user is asking about: whether there is a scan to continue.
        if (out / "run.json").is_file():
            raise InputError(out, "holds a finished scan (run.json), not an interrupted one: there is nothing to "
                                  "resume, its outputs are complete (use --overwrite to scan again)")
        if contents:
            raise InputError(out, "holds no interrupted scan of gboost's to resume (no checkpoint in it; use "
                                  "another --out, or --overwrite to replace gboost's files in it)")
        return False
    if contents and not args.overwrite:
        raise InputError(out, "output directory exists and is not empty (use --overwrite to replace gboost's "
                              "files in it; nothing else there is touched)")
    return False


def _input_paths(args) -> list[str]:
    """Every input file the command line names (an --out among them is refused)."""
    paths = []
    if getattr(args, "bfile", None):
        paths += [args.bfile + ext for ext in (".bed", ".bim", ".fam")]
    if getattr(args, "file", None):
        paths += [args.file + ".ped", args.file + ".map"]
    if getattr(args, "pfile", None):
        paths += [args.pfile + ext for ext in (".pgen", ".pvar", ".pvar.zst", ".psam")]
    for name in ("ped", "map_file", "boost_matrix", "vcf", "bgen", "sample", "pheno", "covar", "extract", "exclude",
                 "keep", "remove", "keep_fam", "remove_fam", "set_file", "make_set"):
        if getattr(args, name, None):
            paths.append(getattr(args, name))
    return paths


def _id_mode(args):
    """How VCF/BGEN sample IDs become FID/IID (PLINK 2's flags; gboost.readers.sample_ids)."""
    from gboost.readers.sample_ids import IdMode

    mode = IdMode(double_id=args.double_id, const_fid=args.const_fid, id_delim=args.id_delim)
    mode.check()
    return mode


def cmd_scan(args) -> int:
    from pathlib import Path

    from gboost.outputs.outdir import OutLock, refuse_unsafe_out

    try:  # before OUT/ is touched: a flag without the file it needs
        V.check_covar_names(args.covar_name, args.covar)
        V.check_covar_numbers(args.covar_number, args.covar_name, args.covar)
        V.check_pheno_column(args.pheno, args.pheno_name, args.mpheno)
        _parallel_is_part(args)
        args.set_mode = _set_mode(args)
    except ValueError as exc:
        raise InputError(None, str(exc)) from None
    out = Path(args.out)
    refuse_unsafe_out(out, _input_paths(args))
    with OutLock(out):
        return _scan_locked(args, out)


def _set_mode(args) -> str | None:
    """The candidate-set mode the flags ask for (gboost/data/candidates.py), or None: --set-by-all /
    --set-by-set, or PLINK's modifiers of --fast-epistasis; refused where they disagree, where a mode
    has no set file or a set file no mode (plink1.9 would scan every pair and ignore the set)."""
    words = list(getattr(args, "fast_epistasis", None) or [])
    bad = [w for w in words if w not in ("boost", "set-by-all", "set-by-set")]
    if bad:
        raise ValueError(f"--fast-epistasis {' '.join(words)}: gboost runs PLINK's boost test; the modifiers it "
                         "takes are set-by-all and set-by-set")
    modes = {m for m in ("set-by-all", "set-by-set") if m in words}
    if getattr(args, "set_by_all", False):
        modes.add("set-by-all")
    if getattr(args, "set_by_set", False):
        modes.add("set-by-set")
    if len(modes) > 1:
        raise ValueError("set-by-all and set-by-set both given: choose one")
    files = [f for f in (getattr(args, "set_file", None), getattr(args, "make_set", None)) if f]
    if len(files) > 1:
        raise ValueError("--set and --make-set both given: give one set file")
    mode = next(iter(modes), None)
    if mode and not files:
        raise ValueError(f"{mode} needs the sets: --set FILE or --make-set FILE")
    if files and not mode:
        raise ValueError(f"{files[0]}: a set file needs --set-by-all or --set-by-set (plink1.9's --fast-epistasis "
                         "boost set-by-all / set-by-set); without one plink1.9 ignores the set")
    return mode


def _read_sets(args):
    from gboost.data.candidates import read_make_set, read_set_file

    return read_set_file(args.set_file) if args.set_file else read_make_set(args.make_set)


def _parallel_is_part(args) -> None:
    """``--parallel K N`` (PLINK's two numbers) becomes ``--part K/N``: one share, one behaviour."""
    if args.parallel is None:
        return
    k, n = args.parallel
    if not 1 <= k <= n:
        raise ValueError(f"--parallel {k} {n}: need 1 <= K <= N")
    if args.part is not None and tuple(args.part) != (k, n):
        raise ValueError(f"--parallel {k} {n} and --part {args.part[0]}/{args.part[1]} name different shares; give one")
    args.part = (k, n)


def _scan_locked(args, out) -> int:
    import threading

    from gboost.pipeline.stages import StageClock, process_age

    clock = StageClock(process_age())  # run.json's command_s (gboost/pipeline/stages.py)
    # The GPU thread starts once gboost.engines is imported, which imports numba (gboost.engines.base):
    # the driver's start and the first GPU's context release the GIL and run beside the rest of the
    # start-up and the read. Starting it before NumPy's and numba's imports does not shorten the
    # command: the GPU is then never waited for, but the read slows by as much (bench/bench_start.py
    # prints each step's time from the process's start).
    gpu_go = threading.Event()  # set below, once numba's target is up: CuPy's import may then start
    if not args.dask:  # CuPy, the CUDA context and the kernels on a thread while the inputs are read
        from gboost.engines.early import start_gpu_early

        start_gpu_early(args.device, gpu_go)
    try:
        return _scan_read(args, out, clock, gpu_go)
    finally:
        gpu_go.set()  # never left waiting (an error before the read)


def _scan_read(args, out, clock, gpu_go) -> int:
    from gboost.data.inputs import open_input
    from gboost.data.load import load_study, load_with_encoder
    from gboost.data.planes import PlaneSource
    from gboost.runtime.numba_cache import start_target
    from gboost.pipeline.scan import ScanParams
    from gboost.data.study import QCOptions

    clock.lap("startup")  # these imports (numba's among them) are the command's start-up, as before
    resume = _check_out_dir(out, args)
    ped = args.ped or (args.file + ".ped" if args.file else None)
    map_file = args.map_file or (args.file + ".map" if args.file else None)
    clock.lap("setup")
    # What numba's first load needs first (its runtime; not its whole target: gboost/runtime/numba_cache.py),
    # then CuPy's import on the GPU thread while this one parses and counts in
    # compiled code: the two imports hold the GIL and would otherwise interleave, slowing both
    # (gboost/engines/early.py). Waiting further, until the parse is done, is slower still: CuPy's
    # import then slows the counting pass, whose reading loop holds the GIL too (bench/bench_start.py's
    # variants "cli" and "cupy-late" are the two orders).
    start_target()
    gpu_go.set()
    source = open_input(bfile=args.bfile, ped=ped, map_file=map_file, boost_matrix=args.boost_matrix, pheno=args.pheno,
                        allow_no_sex=args.allow_no_sex, pfile=args.pfile, vcf=args.vcf, bgen=args.bgen,
                        sample=args.sample, hard_call_threshold=args.hard_call_threshold,
                        bgen_ref=getattr(args, "bgen_ref", "ref-unknown"), ids=_id_mode(args),
                        pheno_name=args.pheno_name, mpheno=args.mpheno)
    try:  # (argparse has checked the values; the library checks them again, in the same words)
        qc = QCOptions(maf=args.maf, geno=args.geno, mind=args.mind, hwe=args.hwe, extract=args.extract,
                       exclude=args.exclude, chrom=_parse_chr(args.chrom, args.allow_extra_chr), allow_extra_chr=args.allow_extra_chr,
                       keep=args.keep, remove=args.remove, keep_fam=args.keep_fam, remove_fam=args.remove_fam,
                       keep_allele_order=args.keep_allele_order)
    except ValueError as exc:
        raise InputError(None, str(exc)) from None
    sets = _read_sets(args) if args.set_mode else None  # a bad set file: refused before the read
    if getattr(source.samples, "trait", None) is not None:  # a quantitative phenotype: the linear test
        from gboost.cli.qt import scan_qt

        return scan_qt(args, out, source, qc, clock, lambda m: _log(args, m), sets=sets)
    try:
        params = ScanParams(**V.given(args, epi1="epi1", epi2="epi2", device="device", threads="threads", tile="tile",
                                      gpus="gpus", allelic="allelic", part="part", dask="dask",
                                      min_distance_kb="min_distance", max_r2="max_r2",
                                      calibration_pairs="calibration_pairs", perm="perm", perm_seed="perm_seed",
                                      within="within"))
    except ValueError as exc:
        raise InputError(None, str(exc)) from None
    if params.perm and args.covar:
        from gboost.pipeline.scan import PERM_WITH_COVARIATES

        raise InputError(args.covar, PERM_WITH_COVARIATES)
    if args.perm_seed is not None and not params.perm:
        from gboost.pipeline.params import seed_without_perm

        raise InputError(None, seed_without_perm(args.perm_seed))
    load_timings: dict = {}
    # A .bed's planes are encoded on a thread beside the screen (gboost/data/load.py), so that neither the
    # GPU's first tile nor the command waits for the whole encode:
    # the "encode" stage is then its counting pass and the encoder's seconds are background work.
    # Not with Dask: its tasks carry planes to the workers without waiting for them.
    # GBOOST_BACKGROUND_ENCODE=0 encodes before the screen, as before (comparisons, benchmarks).
    import os

    # (a candidate-set scan gathers its SNPs' planes into a study of its own: after the whole encode)
    background = not args.dask and not sets and os.environ.get("GBOOST_BACKGROUND_ENCODE", "1") != "0"
    if background:
        study, planes = load_with_encoder(source, qc, log=(lambda m: _log(args, m)), timings=load_timings)
    else:
        study = load_study(source, qc, log=(lambda m: _log(args, m)), timings=load_timings)
        if sets is not None:
            from gboost.data.candidates import rectangle_study

            study = rectangle_study(study, sets, args.set_mode, log=lambda m: _log(args, m))
        planes = PlaneSource.complete(study.planes)
    with planes:  # its end: a failed or interrupted scan leaves no encoder thread behind
        return _scan_study(args, out, study, planes, params, clock, load_timings, resume)


def _scan_study(args, out, study, planes, params, clock, load_timings, resume) -> int:
    from gboost.pipeline.checkpoint import Ledger
    from gboost.engines import make_engine
    from gboost.outputs.results import start_hashing, write_outputs
    from gboost.pipeline.progress import TextProgress
    from gboost.pipeline.scan import run_pipeline

    start_hashing(study.source_files)  # run.json's checksums, on a thread while the scan runs
    clock.lap("read")
    clock.split("read", "encode", load_timings.get("encode", 0.0))
    covariates = None
    if args.covar:
        from gboost.stats.covariates import read_covariates

        covariates = read_covariates(args.covar, study, args.covar_name.split(",") if args.covar_name else None,
                                     args.covar_number)
        _log(args, f"covariates for the adjusted tests: {', '.join(covariates[1])}")
        clock.lap("covariates")
    if study.rect is not None:
        _log(args, f"{study.rect.describe()} x {study.n_samples} samples ({study.layout.n_case} cases, "
                   f"{study.layout.n_ctrl} controls) enter the scan: {study.rect.n_pairs()} pairs")
    else:
        _log(args, f"{study.n_snps} SNPs x {study.n_samples} samples ({study.layout.n_case} cases, "
                   f"{study.layout.n_ctrl} controls) enter the scan: {study.n_snps * (study.n_snps - 1) // 2} pairs"
                   + (f"; this is part {args.part[0]}/{args.part[1]}" if args.part else ""))
    # The GPU was started on a thread at the top (gboost/engines/early.py), so engine_start is only
    # what that thread has left to do, usually nothing; the reading is a little slower beside it, by
    # less than the start it hides (run.json's stages engine_start and read show both).
    try:
        engine = make_engine(params.engine)
    except RuntimeError as exc:
        raise InputError(None, str(exc)) from None
    _log(args, f"engine: {engine.describe()}")
    clock.lap("engine_start")
    # The GPUs' contexts are ended by the command, not by the driver after the process's last
    # instruction (time that no stage of run.json would hold), and on a thread as soon as the screen
    # is done (the engine is closed by then and nothing after it uses CUDA), so that it passes beside
    # the formatting; run.json's stage gpu_end is the wait for it.
    end_gpu = getattr(args, "ends_process", False) and hasattr(engine, "end_contexts")
    if params.within is not None:  # a bad --within file: refused before anything is written
        from gboost.pipeline.permute import read_within

        strata = read_within(params.within, study)
        _log(args, f"--perm permutes labels within {len(set(strata.tolist()))} clusters of {params.within}")
    ledger = Ledger(out, study, params, resume=resume, planes=planes)
    # The finished screen's last ledger records, sync and close run on the ledger's writer thread
    # while the outputs are formatted (they replace the ledger; a kill meanwhile leaves a ledger
    # that --resume completes, as during the screen). A --part keeps its ledger: waited for.
    ledger.finish_in_background = not args.part
    if resume:
        _log(args, f"resuming the interrupted scan in {out}/")

    def screened(sr) -> None:  # the ledger is closed by now
        clock.lap("screen")
        clock.split("screen", "upload", sr.timings.get("prepare", 0.0))  # the engine's prepare: planes to the device
        clock.split("screen", "checkpoint", ledger.seconds)  # this thread's time in the ledger (its writer runs apart)
        # The writer may still be ending the ledger (finish_in_background): its seconds once done.
        clock.background["checkpoint_writer"] = lambda: (ledger.join(), ledger.writer_seconds)[1]
        if planes.background:
            planes.wait()  # (at once: the screen needed every SNP's planes)
            clock.background["encode"] = planes.seconds
        if end_gpu and not params.perm:  # (--perm's permutations screen on the same GPUs next)
            clock.end_beside("gpu_end", engine.end_contexts)

    try:
        result = run_pipeline(study, params, engine=engine, checkpoint=ledger, covariates=covariates,
                              progress=TextProgress(n_samples=study.n_samples) if not args.quiet else None,
                              on_screened=screened, planes=planes)
    except InputError:
        if not resume and planes.background:
            # The .bed failed to encode beside the screen (read error, changed under us): a new
            # ledger of a study that could not be read holds nothing to resume; the command
            # leaves nothing behind, as a bad input found before the screen does.
            from gboost.pipeline.checkpoint import LEDGER, MANIFEST, PERM_LEDGER

            try:
                ledger.close()
            except Exception:  # noqa: BLE001 - the file goes anyway; the InputError is what is reported
                pass
            for name in (LEDGER, MANIFEST, PERM_LEDGER):
                (out / name).unlink(missing_ok=True)
        raise
    if end_gpu and params.perm:  # the permutations were the GPUs' last work
        clock.end_beside("gpu_end", engine.end_contexts)
    if args.part:
        from gboost.pipeline.parts import write_part

        line = (f"part {args.part[0]}/{args.part[1]}: {result.acc.pairs_done} pairs, {result.acc.n_valid} valid "
                "tests; join the parts with `gboost merge DIR... --out DIR`")
        write_part(out, study, params, result, covariates=covariates, overwrite=True, log=_log_text(args, [line]))
        _report(args, [], [line])
        return 0
    clock.lap("exact")  # what finalize still waited for, split below
    for part in ("marginal", "calibration", "adjusted_tests", "permutations"):
        clock.split("exact", part, result.timings.get(part, 0.0))
    if "host_overlapped" in result.timings:
        clock.background["host_work"] = result.timings["host_overlapped"]
    result.command_clock = clock  # run.json adds formatting, writing and hashing
    from gboost.cli.console import log_files

    warnings, lines = _closing(result, out)
    # replaces the checkpoint too: the scan is complete; gboost.log holds the lines printed after it
    write_outputs(result, out, overwrite=True, extra_files=log_files(args, warnings + lines))
    ledger.join()  # (done by now; a write error of the ledger the outputs replaced no longer matters)
    _report(args, warnings, lines)
    return 0


def _exit_now(rc: int) -> None:
    """End a finished `gboost scan` run from the command line without the interpreter's teardown
    (unloading numba and LLVM after the last output is on disk, a wait with nothing left to do).
    Every output is written, flushed and renamed by now and the host threads are joined; a Dask
    cluster is never skipped this way (its shutdown runs at exit)."""
    import os

    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(rc)


def _log_text(args, closing) -> bytes | None:
    """gboost.log's bytes with the ``closing`` lines (printed after the write), None without a log."""
    console = getattr(args, "console", None)
    return console.text(closing) if console is not None else None


def _closing(result, out) -> tuple[list[str], list[str]]:
    """What a finished case-control scan prints once its outputs are written: warnings (printed
    even with --quiet) and its summary lines; gboost.log holds both, so they are made before."""
    from gboost.outputs.results import ipf_cap_hits
    from gboost.stats.boost import IPF_MAX_SWEEPS

    hits = ipf_cap_hits(result)
    warnings = []
    if hits:  # never seen on real or simulated data; said loudly when it happens
        warnings.append(f"gboost: warning: {hits} pair(s) stopped at the IPF safety cap of {IPF_MAX_SWEEPS} sweeps "
                        "before PLINK's convergence rule held; their STAT may differ from PLINK's")
    lines = [f"{result.n_valid} valid tests (Bonferroni 0.05: p < {result.bonferroni:.3g}); "
             f"{len(result.screened)} pairs passed the screen; {result.n_reported} with P <= {result.params.epi1:g}"]
    perm = getattr(result, "perm", None)
    if perm is not None:
        t05 = perm.threshold(0.05)
        lines.append(f"{perm.n} permutations ({perm.seconds:.2f} s, {perm.rescans} rescans): "
                     + (f"family-wise 0.05 threshold STAT > {t05:.6g} (EMP2 in pairs.tsv, maxima in perm.tsv)"
                        if t05 is not None else "too few for an EMP2 of 0.05 (need 19 or more); EMP2 in pairs.tsv"))
    total = result.timings.get("total")
    lines.append(f"outputs in {out}/" + (f" ({total:.2f} s)" if total is not None else ""))
    return warnings, lines


def _report(args, warnings: list[str], lines: list[str]) -> None:
    """Print :func:`_closing`'s lines (already in gboost.log)."""
    for w in warnings:
        print(w, file=sys.stderr)
    if not getattr(args, "quiet", False):
        for line in lines:
            print(line, file=sys.stderr)


def cmd_merge(args) -> int:
    from pathlib import Path

    from gboost.outputs.outdir import OutLock, refuse_unsafe_out
    from gboost.outputs.results import write_outputs
    from gboost.pipeline.parts import PART_FILE, merge_parts

    out = Path(args.out)
    refuse_unsafe_out(out, [str(Path(p) / PART_FILE) for p in args.parts])
    if out.exists() and any(out.iterdir()) and not args.overwrite:
        raise InputError(out, "output directory exists and is not empty (use --overwrite to replace gboost's "
                              "files in it; nothing else there is touched)")
    with OutLock(out):
        result = merge_parts(args.parts)  # either test's parts, by the test they record
        from gboost.pipeline.qt_scan import QTScanResult

        if isinstance(result, QTScanResult):
            from gboost.cli.qt import write_merged_qt

            write_merged_qt(result, args, out, lambda m: _log(args, m))
            return 0
        from gboost.cli.console import log_files

        warnings, lines = _closing(result, out)
        write_outputs(result, out, overwrite=True, extra={"merged_parts": [str(p) for p in args.parts]},
                      extra_files=log_files(args, warnings + lines))
    _report(args, warnings, lines)
    return 0


def _interrupts_in_finalizers_end_the_command() -> None:
    """A Ctrl-C that lands while Python runs an object's finalizer (numba's LLVM handles are freed
    that way while it loads or compiles) is a KeyboardInterrupt Python cannot raise: it prints
    "Exception ignored ... Traceback" and goes on, so the command would finish as if never
    interrupted. Such an interrupt ends the command here with one line and exit 130, as anywhere
    else (what is on disk is what a kill leaves: outputs are renamed in whole, the checkpoint drops
    a torn tail on --resume)."""
    previous = sys.unraisablehook

    def hook(unraisable) -> None:
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            sys.stderr.write("\ngboost: interrupted; finished tiles, if any, are checkpointed: "
                             "rerun with --resume to continue\n")
            _exit_now(130)
        previous(unraisable)

    sys.unraisablehook = hook


def main(argv: list[str] | None = None) -> int:
    import signal

    if argv is None:  # the process is this command (a caller handing argv keeps its process as it is)
        from gboost.runtime.process import prepare_process

        prepare_process()  # before numba's import: gboost/runtime/process.py says what and why
        from gboost.runtime.process import address_limit_problem

        problem = address_limit_problem()
        if problem is not None:
            print(f"gboost: error: {problem}", file=sys.stderr)
            return 2
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command in ("scan", "merge"):  # their output sets hold gboost.log (gboost/cli/console.py)
        from gboost.cli.console import ConsoleLog

        args.console = ConsoleLog(list(sys.argv[1:] if argv is None else argv))
    try:
        if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
            try:  # from here Ctrl-C is a KeyboardInterrupt that the handlers below turn into one line
                signal.signal(signal.SIGINT, signal.default_int_handler)
            except ValueError:  # not the main thread (a test calling main() from a worker)
                pass
        if argv is None:
            _interrupts_in_finalizers_end_the_command()
        if args.command == "scan":
            args.ends_process = argv is None and not args.dask  # then _exit_now follows the scan
            rc = cmd_scan(args)
            if args.ends_process:
                _exit_now(rc)
            return rc
        if args.command == "merge":
            return cmd_merge(args)
        for name, module, _ in _SUBCOMMANDS:
            if args.command == name:
                return importlib.import_module(module).run(args)
    except InputError as exc:
        print(_error_line(exc), file=sys.stderr)
        return _failed(args)
    except (ScanCancelled, KeyboardInterrupt):
        if argv is None:  # a second Ctrl-C must not turn the clean stop into a traceback
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        print("\ngboost: interrupted; finished tiles are checkpointed: rerun with --resume to continue",
              file=sys.stderr)
        if argv is None:
            # End here: an interrupt that lands again in the interpreter's shutdown (joining a
            # background thread) would end the process by SIGINT instead of exit code 130.
            _exit_now(130)
        return 130
    except OSError as exc:  # disk full, permission denied: name the file, no traceback
        print(_error_line(exc), file=sys.stderr)
        return _failed(args)
    except MemoryError as exc:  # an address-space or cgroup limit met mid-scan: nothing was written
        print(f"gboost: error: out of memory ({exc or 'an allocation failed'}){_memory_hint()}", file=sys.stderr)
        return _failed(args)
    return 1


def _memory_hint() -> str:
    from gboost.runtime.process import address_limit

    limit = address_limit()
    if limit is None:
        return "; this study needs more memory than the machine has free (see GBOOST_MEMORY_LIMIT in the README)"
    return f"; the address-space limit (ulimit -v) is {limit >> 20} MB: raise it or ask the scheduler for more memory"


def _error_line(exc: BaseException) -> str:
    """The one line a failed command prints: an InputError as it reads, an OSError (disk full,
    permission denied) with the file it names."""
    if isinstance(exc, OSError):
        where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        return f"gboost: error: {where}{exc.strerror or exc}"
    return f"gboost: error: {exc}"


def _failed(args) -> int:
    """Exit code 2 of a failed command, returned. A scan that failed after the GPU's driver files
    were released beside the formatting (an output's write: a full disk) ends here instead, as a
    finished scan does: after its other threads (the checkpoint's writer), by os._exit, without the
    driver library's teardown, which would run on /dev/null."""
    if getattr(args, "ends_process", False) and _driver_released():
        import threading

        for t in threading.enumerate():
            if t is not threading.current_thread() and not t.daemon:
                t.join()
        _exit_now(2)
    return 2


def _driver_released() -> bool:
    from gboost.engines.gpu.cuda import driver_released

    return driver_released()


if __name__ == "__main__":
    sys.exit(main())
