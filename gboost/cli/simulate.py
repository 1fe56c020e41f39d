"""``gboost simulate``: write a seeded case-control PLINK fileset with planted interactions.

Wired into ``gboost.cli`` as a subcommand through :func:`add_arguments` and :func:`run`.
"""
from __future__ import annotations

import argparse
import sys

# (gboost.data.simulate, which loads numba, is imported when the command runs: building the parser of
# every `gboost ...` command stays light; tests/unit/test_simulate.py keeps this list equal to its MODELS)
MODELS = ("xor", "additive", "threshold")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``simulate`` options to ``parser``."""
    parser.add_argument("--out", required=True, metavar="PREFIX", help="write PREFIX.bed/.bim/.fam")
    parser.add_argument("--snps", type=int, required=True, metavar="N", help="number of SNPs")
    parser.add_argument("--cases", type=int, metavar="N", help="number of cases (case-control study)")
    parser.add_argument("--controls", type=int, metavar="N", help="number of controls (case-control study)")
    parser.add_argument("--qt", type=int, metavar="N",
                        help="simulate a quantitative trait of N samples instead of cases and controls "
                             "(planted effects with --qt-effect)")
    parser.add_argument("--qt-effect", action="append", default=[], metavar="I:J:BETA", type=parse_qt_effect,
                        help="with --qt: trait += BETA x (dosage I x dosage J - its mean), SNPs 1-based; repeatable")
    parser.add_argument("--missing-trait", type=float, default=0.0, metavar="F",
                        help="with --qt: share of samples whose trait is missing (-9; default 0)")
    parser.add_argument("--seed", type=int, required=True, metavar="S", help="random seed (same seed, same files)")
    parser.add_argument("--missing", type=float, default=0.0, metavar="R", help="missing-call rate (default 0)")
    parser.add_argument("--chromosomes", type=parse_chromosomes, default=1, metavar="K|LIST",
                        help="spread SNPs over autosomes 1..K, or over a list such as 1,2,3,X, in proportion to "
                             "their length (default 1); on X males carry one haplotype")
    parser.add_argument("--ld-block", type=int, default=0, metavar="B",
                        help="haplotype blocks of B SNPs in linkage disequilibrium (default 0: independent SNPs)")
    parser.add_argument("--ld-rho", type=float, default=0.95, metavar="R",
                        help="within a block, the chance a haplotype keeps its latent allele from one SNP to the next "
                             "(default 0.95; near 1 gives r^2 near 1 between neighbours of similar MAF)")
    parser.add_argument("--unknown-sex", type=float, default=0.0, metavar="F",
                        help="share of samples written with sex 0 (unknown; default 0)")
    parser.add_argument("--duplicates", type=float, default=0.0, metavar="F",
                        help="share of SNPs that copy another SNP of their chromosome, half with the alleles swapped, "
                             "as real arrays probe some variants twice (default 0)")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing PREFIX.bed/.bim/.fam")
    parser.add_argument("--maf-min", type=float, default=0.05, metavar="F", help="lowest MAF (default 0.05)")
    parser.add_argument("--maf-max", type=float, default=0.5, metavar="F", help="highest MAF (default 0.5)")
    parser.add_argument("--prevalence", type=float, default=0.1, metavar="K", help="population prevalence (default 0.1)")
    parser.add_argument(
        "--plant", action="append", default=[], metavar="I:J:MODEL:STRENGTH[:MAF]", type=parse_plant,
        help=f"plant an interaction between SNPs I and J (1-based: snpI, snpJ); MODEL one of {', '.join(MODELS)} "
             "(xor, additive: no marginal effects; threshold: with marginal effects); STRENGTH = largest / smallest "
             "risk factor; optional MAF for both SNPs. Repeatable; pairs must not share SNPs.",
    )


def parse_chromosomes(text: str):
    """``K`` (autosomes 1..K) or a comma-separated list of chromosome codes."""
    if text.strip().isdigit():
        k = int(text)
        if k < 1:
            raise argparse.ArgumentTypeError("--chromosomes needs at least 1")
        return k
    codes = [c.strip() for c in text.split(",") if c.strip()]
    if not codes:
        raise argparse.ArgumentTypeError(f"--chromosomes {text!r}: expected K or a list such as 1,2,X")
    return codes


def parse_plant(text: str):
    """Parse ``I:J:MODEL:STRENGTH[:MAF]`` (I, J 1-based) into a :class:`gboost.data.simulate.PlantedPair`."""
    from gboost.data.simulate import PlantedPair

    parts = text.split(":")
    if len(parts) not in (4, 5):
        raise argparse.ArgumentTypeError(f"--plant {text!r}: expected I:J:MODEL:STRENGTH[:MAF]")
    try:
        i, j = int(parts[0]), int(parts[1])
        strength = float(parts[3])
        maf = float(parts[4]) if len(parts) == 5 else None
        if i < 1 or j < 1:
            raise ValueError("SNP numbers start at 1")
        return PlantedPair(i - 1, j - 1, parts[2], strength, maf, maf)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"--plant {text!r}: {exc}") from None


def parse_qt_effect(text: str) -> tuple[int, int, float]:
    """``I:J:BETA`` (1-based SNPs) into ``(i, j, beta)`` with 0-based SNPs."""
    try:
        i, j, beta = text.split(":")
        i, j, beta = int(i) - 1, int(j) - 1, float(beta)
        if i < 0 or j < 0 or i == j:
            raise ValueError("two different SNPs, numbered from 1")
        return i, j, beta
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"--qt-effect {text!r}: expected I:J:BETA ({exc})") from None


def _run_qt(args: argparse.Namespace) -> int:
    from gboost.data.simulate import simulate_qt_study

    try:
        study = simulate_qt_study(
            args.snps, args.qt, seed=args.seed, chromosomes=args.chromosomes, maf_range=(args.maf_min, args.maf_max),
            missing_rate=args.missing, effects=args.qt_effect, ld_block=args.ld_block, ld_rho=args.ld_rho,
            unknown_sex=args.unknown_sex, missing_trait=args.missing_trait,
        )
    except (ValueError, IndexError) as exc:
        print(f"gboost simulate: {exc}", file=sys.stderr)
        return 2
    paths = study.write(args.out)
    v = study.variants
    print(f"{len(v)} SNPs, {args.qt} samples with a quantitative trait (seed {study.seed})")
    for i, j, beta in study.effects:
        print(f"planted effect: {v.snp[i]} x {v.snp[j]}, beta {beta:g} per unit of the dosage product")
    print("wrote " + ", ".join(paths))
    return 0


def run(args: argparse.Namespace) -> int:
    """Simulate and write the fileset; print what was planted. Returns the exit code."""
    import os

    if (args.qt is None) == (args.cases is None or args.controls is None):
        print("gboost simulate: give --cases and --controls (case-control) or --qt N (quantitative trait)",
              file=sys.stderr)
        return 2

    existing = [args.out + ext for ext in (".bed", ".bim", ".fam") if os.path.lexists(args.out + ext)]
    if existing and not getattr(args, "overwrite", False):  # never replace a user's fileset by accident
        print(f"gboost simulate: {existing[0]} exists; choose another --out or add --overwrite", file=sys.stderr)
        return 2
    n = args.qt if args.qt is not None else (args.cases or 0) + (args.controls or 0)
    too_big = _memory_problem(max(args.snps, 0), max(n, 0))
    if too_big is not None:
        print(f"gboost simulate: {too_big}", file=sys.stderr)
        return 2
    if args.qt is not None:
        return _run_qt(args)
    from gboost.data.simulate import simulate_study

    try:
        study = simulate_study(
            args.snps, args.cases, args.controls, seed=args.seed, chromosomes=args.chromosomes,
            maf_range=(args.maf_min, args.maf_max), missing_rate=args.missing, planted=args.plant,
            prevalence=args.prevalence, ld_block=args.ld_block, ld_rho=args.ld_rho, unknown_sex=args.unknown_sex,
            duplicates=args.duplicates,
        )
    except ValueError as exc:
        print(f"gboost simulate: {exc}", file=sys.stderr)
        return 2
    paths = study.write(args.out)
    print(describe(study))
    print("wrote " + ", ".join(paths))
    return 0


# What a simulation holds at its peak per genotype call (the int8 calls, the float draws of a block
# of them and the .bed bytes: 10.1-10.8 bytes measured by peak RSS at 4M-32M calls) and in all.
SIM_BYTES_PER_CALL = 12
SIM_BYTES_FIXED = 256 << 20


def _memory_problem(snps: int, samples: int) -> str | None:
    """Why a simulation of this size would not fit in the memory this machine can spare (one line),
    or None: refused before anything is drawn, not left to the kernel's OOM killer on a shared machine."""
    from gboost.data.load import MEMORY_SHARE, available_memory

    have = available_memory()
    need = snps * samples * SIM_BYTES_PER_CALL + SIM_BYTES_FIXED
    if have is None or need <= MEMORY_SHARE * have:
        return None
    spare = MEMORY_SHARE * have
    fits = max(0, int((spare - SIM_BYTES_FIXED) // (SIM_BYTES_PER_CALL * max(samples, 1))))
    return (f"{snps:,} SNPs x {samples:,} samples need about {need / 2**30:.1f} GiB of memory, more than the "
            f"{spare / 2**30:.1f} GiB this machine can spare; about {fits:,} SNPs of {samples:,} samples fit "
            "(simulate chromosomes apart with --snps and another --seed, or on a machine with more memory)")


def describe(study) -> str:
    """Human-readable account of the simulation: size, baseline and every planted pair."""
    v = study.variants
    lines = [
        f"{len(v)} SNPs on chromosome(s) {', '.join(dict.fromkeys(v.chrom.tolist()))}; "
        f"{int((study.samples.status == 2).sum())} cases, {int((study.samples.status == 1).sum())} controls "
        f"(seed {study.seed}; {study.draws} individuals drawn); baseline penetrance {study.baseline:.4g}",
    ]
    for k, p in enumerate(study.planted):
        i, j = p.snp_i, p.snp_j
        lines.append(
            f"planted pair {k + 1}: {v.snp[i]} (chr {v.chrom[i]}:{v.bp[i]}, MAF {study.maf[i]:.3f}) x "
            f"{v.snp[j]} (chr {v.chrom[j]}:{v.bp[j]}, MAF {study.maf[j]:.3f}), model {p.model}, strength {p.strength:g}"
        )
        lines.append("  penetrance (rows: copies of A1 at " + v.snp[i] + ", columns: at " + v.snp[j] + "):")
        for a, row in enumerate(study.penetrance(k)):
            lines.append(f"    {a}: " + "  ".join(f"{x:.4f}" for x in row))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Stand-alone entry point (``python -m gboost.cli.simulate``)."""
    parser = argparse.ArgumentParser(prog="gboost simulate", description=__doc__.splitlines()[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
