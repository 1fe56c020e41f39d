"""In the GUI: pairs in LD tinted or hidden, P / Q / Bonferroni filters, and the QQ plot
of the interaction test from the scan's calibration sample."""
import json

import numpy as np
import pytest
from PySide6.QtCore import Qt

from gboost.stats.pvalues import chi2_isf
from gui.models import COLUMNS, FULL_TEXT_ROLE, LD_COLOUR


def table_rows(view) -> list[list[str]]:
    m = view.proxy
    return [[m.index(r, c).data(FULL_TEXT_ROLE) for c in range(m.columnCount())] for r in range(m.rowCount())]


def tinted(view) -> list[bool]:
    m = view.proxy
    out = []
    for r in range(m.rowCount()):
        brush = m.index(r, 0).data(Qt.ItemDataRole.BackgroundRole)
        out.append(brush is not None and brush.color().name() == LD_COLOUR)
    return out


def file_rows(cli_dir) -> list[list[str]]:
    return [ln.split("\t") for ln in (cli_dir / "pairs.tsv").read_text().splitlines()[1:]]


def test_pairs_with_r2_above_the_cutoff_are_tinted_and_can_be_hidden(scanned):
    view = scanned.pairs
    r2 = scanned.reported.r2
    cut = round(float(np.median(r2)), 3)  # about half the pairs above it; the field has 3 decimals
    view.set_ld_rule(cut, 0.0, hide=False)
    assert view.ld_r2.value() == cut and view.model.ld_rule == (cut, None)
    rows, tint = table_rows(view), tinted(view)
    assert len(rows) == len(r2)
    expected = [bool(x > cut) for x in scanned.pairs.model.r2[view.model.view]]
    assert tint == expected and 0 < sum(tint) < len(tint)
    # The R2 column the user sees agrees with the tint (4 significant digits shown).
    r2_col = COLUMNS.index("R2")
    for row, t in zip(rows, tint):
        assert (float(row[r2_col]) >= cut - 1e-4) if t else (float(row[r2_col]) <= cut + 1e-4)
    tip = view.proxy.index(tint.index(True), 0).data(Qt.ItemDataRole.ToolTipRole)
    assert "In LD" in tip and "r²" in tip
    assert view.proxy.index(tint.index(False), 0).data(Qt.ItemDataRole.ToolTipRole) is None
    assert view.ld_count.text() == f"{sum(tint):,} in LD"

    view.hide_ld.setChecked(True)
    shown = table_rows(view)
    assert len(shown) == len(rows) - sum(tint) and not any(tinted(view))
    kept = {(r[1], r[4]) for r, t in zip(rows, tint) if not t}
    assert {(r[1], r[4]) for r in shown} == kept
    assert view.count.text() == f"{len(shown):,} of {len(rows):,} pairs"
    view.hide_ld.setChecked(False)
    assert len(table_rows(view)) == len(rows)


@pytest.mark.slow
def test_same_chromosome_pairs_closer_than_the_distance_are_tinted(scanned, cli_dir):
    view = scanned.pairs
    dist = [int(r[COLUMNS.index("DIST")]) for r in file_rows(cli_dir) if r[COLUMNS.index("DIST")] != "NA"]
    assert len(dist) >= 3
    kb = float(np.median(dist)) / 1000 + 0.5
    view.set_ld_rule(1.0, kb, hide=False)  # r² never above 1: the distance rule alone
    rows, tint = table_rows(view), tinted(view)
    d_col = COLUMNS.index("DIST")
    expected = [r[d_col] != "NA" and int(r[d_col]) < kb * 1000 for r in rows]
    assert tint == expected and 0 < sum(tint) < len([r for r in rows if r[d_col] != "NA"])
    assert all(r[0] == r[3] for r, t in zip(rows, tint) if t)  # only pairs on one chromosome


@pytest.mark.slow
def test_ld_settings_persist(qtbot, scanned):
    from gui.main_window import MainWindow

    scanned.pairs.set_ld_rule(0.35, 250.0, hide=True)
    again = MainWindow()
    qtbot.addWidget(again)
    p = again.pairs
    assert (p.ld_r2.value(), p.ld_kb.value(), p.hide_ld.isChecked()) == (0.35, 250.0, True)


@pytest.mark.slow
@pytest.mark.parametrize("mode,value", [("q", 0.3), ("q", 0.05), ("bonferroni", 0.05), ("p", 1e-4), ("all", None)])
def test_significance_filters_keep_the_rows_of_pairs_tsv_that_pass(scanned, cli_dir, mode, value):
    lines = file_rows(cli_dir)
    n_valid = json.loads((cli_dir / "run.json").read_text())["counts"]["valid_tests"]
    assert scanned.result.n_valid == n_valid
    p_col, q_col = COLUMNS.index("P"), COLUMNS.index("Q")
    if mode == "q":
        expected = [r for r in lines if float(r[q_col]) <= value]
    elif mode == "bonferroni":
        expected = [r for r in lines if float(r[p_col]) <= value / n_valid]
    elif mode == "p":
        expected = [r for r in lines if float(r[p_col]) <= value]
    else:
        expected = lines
    scanned.pairs.set_significance(mode, value)
    shown = table_rows(scanned.pairs)
    assert shown == expected
    if mode != "all":
        assert 0 < len(shown) < len(lines)
        assert scanned.pairs.count.text() == f"{len(shown):,} of {len(lines):,} pairs"
    # Q and Bonferroni select differently from P at the same number: each measure is used.
    if mode == "q" and value == 0.3:
        assert len([r for r in lines if float(r[p_col]) <= value]) == len(lines) > len(shown)


def test_significance_and_ld_filters_combine_with_the_partner_filter(scanned):
    rep = scanned.reported
    k = int(rep.i[0])
    scanned.select_snp(k)
    scanned.pairs.set_significance("bonferroni", 0.05)
    keep = ((rep.i == k) | (rep.j == k)) & (rep.p <= 0.05 / scanned.result.n_valid)
    assert scanned.pairs.proxy.rowCount() == int(keep.sum()) >= 1
    scanned.pairs.set_significance("all")
    assert scanned.pairs.proxy.rowCount() == int(((rep.i == k) | (rep.j == k)).sum())


@pytest.mark.slow
def test_interaction_qq_plots_the_calibration_sample_with_its_lambda(scanned):
    q = scanned.qq
    cal = scanned.result.calibration
    assert cal is not None and len(cal.p) > 1000
    assert q.ilam == cal.lam
    x, y = q.ipoints.getData()
    assert len(x) == len(cal.p)
    np.testing.assert_allclose(np.sort(y)[::-1], np.sort(-np.log10(cal.p))[::-1], rtol=1e-9)
    n = len(cal.p)
    np.testing.assert_allclose(x, -np.log10((np.arange(1, n + 1) - 0.5) / n))
    # λ is the core's: median of the DF-4 statistics over the χ²₄ median.
    four = cal.stat[cal.df == 4]
    assert cal.lam == pytest.approx(np.median(four) / chi2_isf(0.5, 4))
    assert f"λ = {cal.lam:.3f}" in q.ilambda_text.toPlainText()
    assert f"{len(cal.p):,} random pairs" in q.ilambda_text.toPlainText()  # the sample, inside the plot
    title = q.iplot.titleLabel.text
    assert "interaction test" in title and f"λ = {cal.lam:.3f}" in title
    assert "single-locus" in q.plot.titleLabel.text  # the marginal QQ stays beside it
    assert scanned.summary.fields["λ (interaction)"].text().startswith(f"{cal.lam:.3f}")


@pytest.mark.slow
def test_interaction_qq_says_when_the_scan_had_no_calibration(scanned):
    from dataclasses import replace

    res = replace(scanned.result, calibration=None)
    scanned.qq.set_result(res)
    assert len(scanned.qq.ipoints.data) == 0 and "No calibration" in scanned.qq.iempty.toPlainText()
    assert scanned.qq.ilambda_text.toPlainText() == ""
