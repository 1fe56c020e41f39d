"""Writers for the outputs of SPEC §5, all written atomically.

``pairs.epi.cc`` and ``pairs.epi.cc.summary`` reproduce PLINK 1.9's files byte for byte: the same
rows, column widths and number formats (6 significant digits for STAT, 4 for P, PROP and
BEST_CHISQ; SNP columns as wide as PLINK makes them from the longest SNP ID of the input).
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import platform
import struct
import time
from pathlib import Path

import numpy as np

import gboost
from gboost.errors import InputError
from gboost.io.plink_format import plink_g
from gboost.stats.marginal import minor_allele_frequency
from gboost.stats.pvalues import chi2_sf

_CHROM_CODES = {"X": "23", "Y": "24", "XY": "25", "MT": "26", "M": "26"}


def ipf_cap_hits(result) -> int:
    """Screened pairs whose exact test stopped at the IPF safety cap instead of PLINK's rule."""
    return int((~result.screened.converged & (result.screened.df > 0)).sum())


def plink_chrom(code: str) -> str:
    """Chromosome as PLINK 1.9 prints it: numeric, 'chr' prefix dropped, X/Y/XY/MT as 23-26."""
    c = str(code)
    if c.lower().startswith("chr"):
        c = c[3:]
    c = _CHROM_CODES.get(c.upper(), c)
    return c.lstrip("0") or "0" if c.isdigit() else c


def clear_low_bits(x: float) -> float:
    """PLINK keeps a pair's DF in the 2 low mantissa bits of STAT and clears them before printing
    STAT and computing its P; we do the same so the printed digits agree even on rounding ties."""
    if not math.isfinite(x):
        return x
    bits = struct.unpack("<q", struct.pack("<d", x))[0] & ~3
    return struct.unpack("<d", struct.pack("<q", bits))[0]


def plink_p(stat: float, df: int) -> float:
    """P as PLINK prints it: from the cleared STAT; a negative STAT (round-off below 0) makes
    DCDFLIB fail and PLINK print 0 (our pairs.tsv keeps the correct P = 1 for such pairs)."""
    s = clear_low_bits(stat)
    if s < 0:
        return 0.0
    return chi2_sf(s, int(df))


def _g(x: float, digits: int) -> str:
    """PLINK's %g-style numbers; non-finite values as PLINK writes them."""
    if x is None or math.isnan(x):
        return "NA"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:.{digits}g}"


def format_epi_cc(result) -> str:
    s = result.study
    w = s.snp_id_width
    chrom = [plink_chrom(c) for c in s.variants.chrom]
    snp = s.variants.snp
    pr = result.screened
    lines = [f"{'CHR1':>4} {'SNP1':>{w}} {'CHR2':>4} {'SNP2':>{w}} {'STAT':>12} {'DF':>4} {'P':>12} \n"]
    for a, b, st, df, p in zip(pr.i, pr.j, pr.stat, pr.df, pr.p):
        if df <= 0:
            continue
        st_print = clear_low_bits(float(st))
        lines.append(f"{chrom[a]:>4} {snp[a]:>{w}} {chrom[b]:>4} {snp[b]:>{w}} {plink_g(st_print, 6):>12} {int(df):>4} "
                     f"{plink_g(plink_p(float(st), int(df)), 4):>12} \n")
    return "".join(lines)


def format_summary(result) -> str:
    s = result.study
    w = s.snp_id_width
    chrom = [plink_chrom(c) for c in s.variants.chrom]
    snp = s.variants.snp
    sm = result.summary
    lines = [f"{'CHR':>4} {'SNP':>{w}} {'N_SIG':>12} {'N_TOT':>12} {'PROP':>12} {'BEST_CHISQ':>12} "
             f"{'BEST_CHR':>4} {'BEST_SNP':>{w}} \n"]
    for k in range(s.n_snps):
        n_tot = int(sm.n_tot[k])
        # PLINK multiplies by a reciprocal; on halfway cases (7/320) that rounds differently.
        prop = sm.n_sig[k] * (1.0 / n_tot) if n_tot else math.nan
        b, z = int(sm.best_partner[k]), float(sm.best[k])
        if n_tot == 0:
            best = f"{'NA':>12} {'NA':>4} {'NA':>{w}}"
        else:
            if b < 0 or z <= 0.0:
                # PLINK starts from BEST = 0 at the first scanned SNP and only accepts z > 0.
                b, z = 0, 0.0
            best = f"{plink_g(z, 4):>12} {chrom[b]:>4} {snp[b]:>{w}}"
        lines.append(f"{chrom[k]:>4} {snp[k]:>{w}} {int(sm.n_sig[k]):>12} {n_tot:>12} {plink_g(prop, 4):>12} {best} \n")
    return "".join(lines)


PAIRS_COLUMNS = ("CHR1", "SNP1", "BP1", "CHR2", "SNP2", "BP2", "KSA", "STAT", "DF", "P", "Q", "R2", "DIST")


def format_pairs_tsv(result) -> str:
    """pairs.tsv: SPEC §5's columns, then Q (Benjamini-Hochberg), R2 (genotypic r^2 of the two
    SNPs) and DIST (bp apart; NA across chromosomes), so pairs in LD can be set apart."""
    return format_pairs(result.study.variants, result.reported)


def format_pairs(v, pr) -> str:
    """pairs.tsv text (header included) for any :class:`gboost.scan.Pairs` over variants ``v``
    (the GUI formats the rows it shows with it)."""
    q = pr.q if pr.q is not None else np.full(len(pr), np.nan)
    r2 = pr.r2
    adj = pr.adj
    lines = ["\t".join(PAIRS_COLUMNS + (("STAT_ADJ", "DF_ADJ", "P_ADJ") if adj is not None else ())) + "\n"]
    for n, (a, b, k, st, df, p) in enumerate(zip(pr.i, pr.j, pr.ksa, pr.stat, pr.df, pr.p)):
        dist = str(abs(int(v.bp[b]) - int(v.bp[a]))) if v.chrom[a] == v.chrom[b] else "NA"
        extra = f"\t{_g(adj[0][n], 8)}\t{int(adj[1][n])}\t{_g(adj[2][n], 6)}" if adj is not None else ""
        lines.append(f"{v.chrom[a]}\t{v.snp[a]}\t{v.bp[a]}\t{v.chrom[b]}\t{v.snp[b]}\t{v.bp[b]}\t"
                     f"{k:.10g}\t{st:.10g}\t{int(df)}\t{p:.10g}\t{_g(q[n], 6)}\t{_g(r2[n], 4)}\t{dist}{extra}\n")
    return "".join(lines)


def format_marginal_tsv(result) -> str:
    s = result.study
    v = s.variants
    maf = minor_allele_frequency(s.counts)
    lines = ["CHR\tSNP\tBP\tA1\tA2\tMAF\tSTAT\tP\n"]
    for k in range(s.n_snps):
        lines.append(f"{v.chrom[k]}\t{v.snp[k]}\t{v.bp[k]}\t{v.a1[k]}\t{v.a2[k]}\t{_g(maf[k], 6)}\t"
                     f"{_g(result.marginal_stat[k], 8)}\t{_g(result.marginal_p[k], 6)}\n")
    return "".join(lines)


def _sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 22), b""):
            h.update(chunk)
    return h.hexdigest()


def run_record(result, extra: dict | None = None) -> dict:
    """Provenance for run.json: what ran, on what, with which inputs and parameters, and counts."""
    s = result.study
    params = {k: v for k, v in result.params.__dict__.items()}
    return {
        "gboost_version": gboost.__version__,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "python": platform.python_version(),
        "host": platform.node(),
        "engine": result.engine,
        "device": result.device,
        "parameters": params,
        "thresholds": {
            "screen_chisq_by_df": {str(d): float(result.thresholds.screen[d]) for d in (1, 2, 4)},
            "summary_chisq_by_df": {str(d): float(result.thresholds.summary[d]) for d in (1, 2, 4)},
        },
        "inputs": {os.path.abspath(f): _sha256(f) for f in s.source_files if os.path.isfile(f)},
        "counts": {
            "snps": s.n_snps,
            "samples": s.n_samples,
            "cases": s.layout.n_case,
            "controls": s.layout.n_ctrl,
            "pairs": s.n_snps * (s.n_snps - 1) // 2,
            "valid_tests": int(result.n_valid),
            "screened_survivors": int(len(result.screened)),
            "reported_pairs": int(len(result.reported)),
            # pairs whose IPF reached the safety cap (gboost.stats.boost.IPF_MAX_SWEEPS); 0 on every study seen
            "ipf_safety_cap_hits": ipf_cap_hits(result),
        },
        "bonferroni_0.05": result.bonferroni,
        "calibration": result.calibration.as_dict() if result.calibration is not None else None,
        "covariates": result.covariate_names,
        "qc": s.qc.as_dict(),
        "timings_s": {k: round(v, 6) for k, v in result.timings.items()},
        **(extra or {}),
    }


OUTPUT_FILES = ("pairs.tsv", "pairs.epi.cc", "pairs.epi.cc.summary", "marginal.tsv", "run.json")


def render_outputs(result, extra: dict | None = None) -> dict[str, str]:
    return {
        "pairs.tsv": format_pairs_tsv(result),
        "pairs.epi.cc": format_epi_cc(result),
        "pairs.epi.cc.summary": format_summary(result),
        "marginal.tsv": format_marginal_tsv(result),
        "run.json": format_run_json(result, extra),
    }


def format_run_json(result, extra: dict | None = None) -> str:
    return json.dumps(run_record(result, extra), indent=2, default=_json_default) + "\n"


def _json_default(o):
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    return str(o)


def atomic_directory(out_dir: str | os.PathLike, fill, *, overwrite: bool = False) -> Path:
    """``fill(staging)`` writes gboost-named files; they go into ``out_dir`` whole, replacing only
    files of the same names (gboost/io/outdir.py: nothing else in the folder is ever touched)."""
    from gboost.io.outdir import staged_files

    return staged_files(out_dir, fill, overwrite=overwrite)


def write_outputs(result, out_dir: str | os.PathLike, *, overwrite: bool = False, extra: dict | None = None) -> Path:
    """Write the scan's five outputs into ``out_dir`` (each whole, run.json last) and drop the
    finished scan's checkpoint; nothing else in the folder is touched (gboost/io/outdir.py)."""
    from gboost.checkpoint import LEDGER, MANIFEST
    from gboost.io.outdir import write_files

    return write_files(out_dir, render_outputs(result, extra), overwrite=overwrite,
                       remove=(LEDGER, MANIFEST, MANIFEST + ".tmp"))
