"""The study summary: what was loaded, what QC removed, and what the last scan found."""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFormLayout, QGroupBox, QLabel, QVBoxLayout, QWidget

from gui.plots.genome import chrom_sort_key

QC_LINES = (  # QCReport field, how to say it
    ("samples_missing_pheno", "samples without a case/control phenotype"),
    ("samples_mind", "samples above the --mind missing-call rate"),
    ("snps_chr_filter", "SNPs outside --chr/--extract/--exclude"),
    ("snps_non_autosomal", "SNPs off the autosomes (X, Y, MT, …)"),
    ("snps_geno", "SNPs above the --geno missing-call rate"),
    ("snps_hwe", "SNPs failing --hwe (controls)"),
    ("snps_maf", "SNPs below --maf"),
    ("snps_monomorphic", "monomorphic SNPs"),
)


def describe_chromosomes(codes) -> str:
    """'1–22 (22 chromosomes)'; runs of consecutive numbers collapsed."""
    names = sorted({str(c) for c in codes}, key=chrom_sort_key)
    parts: list[str] = []
    run: list[int] = []

    def flush():
        if run:
            parts.append(str(run[0]) if len(run) == 1 else f"{run[0]}–{run[-1]}")
            run.clear()

    for n in names:
        if n.isdigit() and (not run or int(n) == run[-1] + 1):
            run.append(int(n))
            continue
        flush()
        if n.isdigit():
            run.append(int(n))
        else:
            parts.append(n)
    flush()
    count = len(names)
    return f"{', '.join(parts)}  ({count} chromosome{'s' if count != 1 else ''})" if names else "none"


def describe_qc(qc) -> list[str]:
    lines = [f"{getattr(qc, field):,} {text}" for field, text in QC_LINES if getattr(qc, field, 0)]
    return lines or ["nothing"]


def _value_label() -> QLabel:
    lab = QLabel("–")
    lab.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    lab.setWordWrap(True)
    return lab


class SummaryPanel(QWidget):
    """Form of the study's numbers; ``fields`` maps a row name to its value label (for tests)."""

    STUDY_ROWS = ("File", "SNPs", "Samples", "Cases / controls", "Missing calls", "Chromosomes", "Pairs to test",
                  "QC removed")
    RESULT_ROWS = ("Engine", "Valid tests", "Bonferroni 0.05", "Passed screen", "Reported pairs", "Permutations",
                   "λ (single-locus)", "λ (interaction)", "Scan time")

    def __init__(self, parent=None):
        super().__init__(parent)
        self.fields: dict[str, QLabel] = {}
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        for title, rows in (("Data and QC", self.STUDY_ROWS), ("Last scan", self.RESULT_ROWS)):
            box = QGroupBox(title)
            form = QFormLayout(box)
            form.setLabelAlignment(Qt.AlignmentFlag.AlignLeft)
            form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
            for name in rows:
                self.fields[name] = _value_label()
                form.addRow(name + ":", self.fields[name])
            lay.addWidget(box)
        lay.addStretch(1)

    def set_study(self, study, path: str = "") -> None:
        f = self.fields
        qc = study.qc
        f["File"].setText(path.rsplit("/", 1)[-1] if path else "(in memory)")
        f["File"].setToolTip(path)
        snps_in = qc.snps_in or study.n_snps
        f["SNPs"].setText(f"{study.n_snps:,}" + (f" of {snps_in:,} in the file" if snps_in != study.n_snps else ""))
        samples_in = qc.samples_in or study.n_samples
        f["Samples"].setText(f"{study.n_samples:,}" + (f" of {samples_in:,} in the file" if samples_in != study.n_samples else ""))
        if getattr(study, "quantitative", False):  # a quantitative trait: PLINK's linear test
            y = study.trait
            # short enough for one line of a narrow dock (at 1280 x 720 the longer text was cut)
            f["Cases / controls"].setText(f"QT: mean {np.mean(y):.4g}, SD {np.std(y, ddof=1):.4g}")
            f["Cases / controls"].setToolTip("a quantitative trait (PLINK's rule): the scan runs PLINK's linear "
                                             "--epistasis test instead of BOOST")
        else:
            f["Cases / controls"].setText(f"{study.layout.n_case:,} / {study.layout.n_ctrl:,}")
            f["Cases / controls"].setToolTip("")
        f["Missing calls"].setText(f"{100 * study.missing_rate:.3f} % of genotypes")
        f["Chromosomes"].setText(describe_chromosomes(np.unique(np.asarray(study.variants.chrom).astype(str))))
        f["Pairs to test"].setText(f"{study.n_snps * (study.n_snps - 1) // 2:,}")
        f["QC removed"].setText("\n".join(describe_qc(qc)))
        f["QC removed"].setToolTip("\n".join(qc.messages) if qc.messages else "")

    def clear_result(self) -> None:
        for name in self.RESULT_ROWS:
            self.fields[name].setText("–")

    def set_result(self, result, n_reported: int, lam: float | None = None) -> None:
        f = self.fields
        f["Engine"].setText(result.device)
        f["Valid tests"].setText(f"{result.n_valid:,}")
        f["Bonferroni 0.05"].setText(f"P ≤ {result.bonferroni:.3g}")
        screen = "linear test" if getattr(result, "qt", None) is not None else "KSA"
        f["Passed screen"].setText(f"{len(result.screened):,}  ({screen} above the --epi1 threshold)")
        f["Reported pairs"].setText(f"{n_reported:,}  (P ≤ {result.params.epi1:g})")
        perm = getattr(result, "perm", None)
        if perm is None:
            f["Permutations"].setText("none (--perm off)")
            f["Permutations"].setToolTip("")
        else:
            from gui.resultdata import permutation_summary

            f["Permutations"].setText(permutation_summary(perm, getattr(result, "reported", None)))
            within = f", within the {perm.n_strata:,} clusters of {perm.within}" if perm.within else ""
            f["Permutations"].setToolTip(
                f"--perm {perm.n} --perm-seed {perm.seed}{within}: the case/control labels permuted {perm.n:,} times, "
                f"each permutation's largest STAT over all pairs (PLINK's max(T)); {perm.rescans} rescans, "
                f"{perm.seconds:.2f} s" + (f", {perm.resumed:,} resumed from the checkpoint" if perm.resumed else ""))
        f["λ (single-locus)"].setText("–" if lam is None or not np.isfinite(lam) else f"{lam:.3f}")
        calib = getattr(result, "calibration", None)
        if calib is not None and np.isfinite(calib.lam):
            f["λ (interaction)"].setText(f"{calib.lam:.3f}  (random pairs)")
            f["λ (interaction)"].setToolTip(f"From the exact interaction test of {len(calib.p):,} pairs drawn at "
                                            "random (gboost.stats.calibration): median χ² / 3.357, the χ²₄ median")
        else:
            f["λ (interaction)"].setText("–")
        f["Scan time"].setText(f"{result.timings.get('total', float('nan')):.2f} s")
