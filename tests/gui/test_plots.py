"""Manhattan, QQ and interaction map: what is drawn, hover, click-to-select."""
import math

import numpy as np
import pytest
from PySide6.QtCore import Qt

from gboost.stats.pvalues import chi2_isf
from gui.plots.genome import genome_layout


def marginal_p_from_file(cli_dir) -> dict[str, float]:
    rows = [line.split("\t") for line in (cli_dir / "marginal.tsv").read_text().splitlines()[1:]]
    return {r[1]: float(r[7]) for r in rows}


@pytest.mark.slow
def test_manhattan_draws_every_snp_tested_at_its_p(scanned, cli_dir):
    m = scanned.manhattan
    study = scanned.result.study
    np.testing.assert_array_equal(m.plotted_snps(), np.arange(study.n_snps))
    n_drawn = sum(len(item.data) for item in m.group_items)
    assert n_drawn == study.n_snps == len(marginal_p_from_file(cli_dir))
    p_file = marginal_p_from_file(cli_dir)
    for item, snps in zip(m.group_items, m.group_snps):
        x, y = item.getData()
        np.testing.assert_allclose(x, genome_layout(study.variants).x[snps])
        expected = np.array([-math.log10(p_file[s]) for s in study.variants.snp[snps]])
        np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-6)  # marginal.tsv prints 6 digits


def test_manhattan_alternates_two_colours_by_chromosome(scanned):
    m = scanned.manhattan
    lay = genome_layout(scanned.result.study.variants)
    brushes = [item.opts["brush"].color().name() for item in m.group_items]
    assert len(set(brushes)) == 2
    for g, snps in enumerate(m.group_snps):
        assert set(lay.chrom_of[snps] % 2) == {g}


@pytest.mark.slow
def test_manhattan_has_genome_wide_and_suggestive_lines(scanned):
    pos = sorted(line.value() for line in scanned.manhattan.lines)
    assert pos == pytest.approx([-math.log10(1e-5), -math.log10(5e-8)])


@pytest.mark.slow
def test_clicking_a_snp_filters_the_table_to_its_partners_and_draws_them(qtbot, scanned):
    res = scanned.result
    rep = res.reported
    counts = np.bincount(np.concatenate([rep.i, rep.j]))
    k = int(np.argmax(counts))  # the SNP with most partners
    m = scanned.manhattan
    m.plot_widget.resize(1000, 600)
    m.reset_view()
    qtbot.wait(50)
    pos = m.view_to_widget(m.x[k], m.y[k])
    with qtbot.waitSignal(m.snpClicked, timeout=5000) as blocker:
        qtbot.mouseClick(m.plot_widget.viewport(), Qt.MouseButton.LeftButton, pos=pos)
    assert blocker.args == [k]

    partners = sorted({int(b) if a == k else int(a) for a, b in zip(rep.i, rep.j) if k in (a, b)})
    assert len(partners) >= 3 and len(partners) < len(rep)
    proxy = scanned.pairs.proxy
    snp = str(res.study.variants.snp[k])
    shown = [(proxy.index(r, 1).data(), proxy.index(r, 4).data()) for r in range(proxy.rowCount())]
    assert len(shown) == len(partners) and all(snp in pair for pair in shown)
    assert sorted(m.partners.tolist()) == partners
    x, y = m.partner_item.getData()
    np.testing.assert_allclose(sorted(x), sorted(m.x[partners]))
    assert len(m.arcs.getData()[0]) > 0 and m.selected_item.getData()[0][0] == m.x[k]
    assert scanned.pairs.chip.isVisible() and snp in scanned.pairs.chip.text()

    scanned.clear_selection()
    assert proxy.rowCount() == len(rep) and len(m.partner_item.getData()[0]) == 0


@pytest.mark.slow
def test_clicking_empty_space_selects_nothing(qtbot, scanned):
    m = scanned.manhattan
    hits = []
    m.snpClicked.connect(hits.append)
    m.click_at(m.x.max() + 10 * np.ptp(m.x), 1e6)
    assert hits == [] and scanned.pairs.proxy.rowCount() == len(scanned.reported)


@pytest.mark.slow
def test_hover_names_the_snp_position_and_p(scanned):
    m = scanned.manhattan
    v = scanned.result.study.variants
    k = int(np.nanargmax(m.y))
    hit = m.point_at(m.x[k], m.y[k])
    assert hit == k
    text = m.describe_point(hit)
    assert str(v.snp[k]) in text and f"{int(v.bp[k]):,}" in text and f"{scanned.result.marginal_p[k]:.3g}" in text


@pytest.mark.slow
def test_qq_plot_shows_every_tested_snp_and_lambda(scanned):
    q = scanned.qq
    res = scanned.result
    p = res.marginal_p[np.isfinite(res.marginal_p)]
    assert len(q.points.data) == len(p)
    x, y = q.points.getData()
    n = len(p)
    np.testing.assert_allclose(np.sort(y)[::-1], np.sort(-np.log10(p))[::-1], rtol=1e-9)
    np.testing.assert_allclose(x, -np.log10((np.arange(1, n + 1) - 0.5) / n))
    lam = chi2_isf(float(np.median(p)), res.marginal_df) / chi2_isf(0.5, res.marginal_df)
    assert q.lam == pytest.approx(lam, rel=1e-9)
    assert 0.8 < q.lam < 1.25  # a simulation without stratification
    assert f"λ = {lam:.3f}" in q.lambda_text.toPlainText()


def test_interaction_map_places_each_reported_pair(scanned):
    im = scanned.interactions
    rep = scanned.reported
    lay = genome_layout(scanned.result.study.variants)
    pts = np.concatenate([np.column_stack(item.getData()) for item in im.bins if len(item.data)])
    expected = np.column_stack([lay.x[rep.i], lay.x[rep.j]])
    assert len(pts) == len(rep)
    np.testing.assert_allclose(pts[np.lexsort(pts.T)], expected[np.lexsort(expected.T)])
    row = 0
    assert im.point_at(lay.x[rep.i[row]], lay.x[rep.j[row]]) == row


def test_selecting_a_table_row_marks_the_pair_in_the_plots(scanned):
    rep = scanned.reported
    scanned.pairs.table.selectRow(1)
    m = scanned.manhattan
    assert m.selected == int(rep.i[1]) and m.partners.tolist() == [int(rep.j[1])]
    x, y = scanned.interactions.selected_item.getData()
    assert len(x) == 1


def test_manhattan_shows_the_single_locus_test_before_any_scan(qtbot, window, study_prefix, cli_dir):
    from guihelpers import load

    load(qtbot, window, study_prefix)
    m = window.manhattan
    study = window.study
    assert window.result is None
    np.testing.assert_array_equal(m.plotted_snps(), np.arange(study.n_snps))
    p_file = marginal_p_from_file(cli_dir)  # the scan's marginal.tsv: the same test, the same numbers
    expected = np.array([-math.log10(p_file[s]) for s in study.variants.snp])
    np.testing.assert_allclose(m.y, expected, rtol=1e-5, atol=1e-6)
    (x0, x1), _ = m.plot.getViewBox().viewRange()
    assert x1 - x0 > 1e6  # the genome, not an empty 0-1 frame
    assert "240 SNPs" in m.plot.titleLabel.text and "no scan yet" in m.plot.titleLabel.text
    assert not len(m.interaction_track()[0])


def test_manhattan_shows_each_snps_strongest_interaction_and_rings_interacting_snps(scanned):
    from gui.resultdata import pairs_neglog10

    m, rep = scanned.manhattan, scanned.reported
    nlp = pairs_neglog10(rep)
    best: dict[int, float] = {}
    for a, b, v in zip(rep.i.tolist(), rep.j.tolist(), nlp.tolist()):
        for k in (a, b):
            best[k] = max(best.get(k, -1.0), v)
    snps, y = m.interaction_track()
    assert sorted(best) == snps.tolist()
    np.testing.assert_allclose(y, [best[k] for k in snps.tolist()])
    px, py = m.pair_item.getData()
    np.testing.assert_allclose(np.sort(px), np.sort(m.x[snps]))
    rx, _ = m.interacting_item.getData()
    from gui.plots.manhattan import RINGS_MAX, RINGS_MIN, RINGS_OVER

    cap = min(RINGS_MAX, max(RINGS_MIN, int(RINGS_OVER * scanned.result.study.n_snps)))
    assert len(best) > cap  # (the loose test --epi1: more interacting SNPs than are ringed)
    strongest = sorted(best, key=lambda k: -best[k])[:cap]  # the SNPs of the strongest interactions
    assert sorted(m.ringed.tolist()) == sorted(strongest) and len(rx) == cap
    assert f"ringed: {cap:,} strongest of {len(best):,} paired" in m.plot.titleLabel.text
    assert m.bonferroni_line.isVisible()
    assert m.bonferroni_line.value() == pytest.approx(-math.log10(0.05 / scanned.result.n_valid))
    assert m.bonferroni_line.label.toPlainText() == f"Bonferroni 0.05 / {scanned.result.n_valid:,} tests"
    k = int(rep.i[0])
    scanned.select_snp(k)
    sx, sy = m.pair_selected_item.getData()
    assert sy[0] == pytest.approx(best[k])
    assert "strongest" in m.describe_point(k)


@pytest.fixture(scope="module")
def one_chrom_prefix(tmp_path_factory) -> str:
    from gboost.data.simulate import PlantedPair, simulate_study

    sim = simulate_study(50, 120, 120, seed=77, chromosomes=1, missing_rate=0.0, planted=[PlantedPair(3, 30, "xor", 5.0)])
    prefix = str(tmp_path_factory.mktemp("onechrom") / "onechrom")
    sim.write(prefix)
    return prefix


def test_one_chromosome_axis_reads_megabases(qtbot, window, one_chrom_prefix):
    from guihelpers import load

    load(qtbot, window, one_chrom_prefix)
    m = window.manhattan
    bp = np.asarray(window.study.variants.bp, np.float64)
    axis = m.pair_plot.getAxis("bottom")
    assert axis.labelText == "Position on chromosome 1 (Mb)"
    (x0, x1), _ = m.plot.getViewBox().viewRange()
    levels = axis.tickValues(x0, x1, 800)
    values = [v for _spacing, vals in levels for v in vals]
    spacing = levels[0][0]
    texts = axis.tickStrings(values, 1.0, spacing)
    assert texts and all("e" not in t for t in texts)
    for v, t in zip(values, texts):  # each label is the tick's position in Mb on the chromosome
        assert float(t) == pytest.approx((v + bp.min()) / 1e6, abs=spacing / 1e6 / 2)


def test_interaction_map_draws_the_strongest_pairs_over_the_density_of_all(scanned):
    from gui.resultdata import pairs_neglog10

    im, rep = scanned.interactions, scanned.reported
    assert im.drawn_mode() == "all" and not im.density.isVisible()  # ~40 pairs: every one a point
    im.set_top_n(10)  # as a study with more reported pairs than the map's budget
    nlp = pairs_neglog10(rep)
    strongest = np.sort(np.argsort(-nlp, kind="stable")[:10])
    assert im.drawn_mode() == "top"
    np.testing.assert_array_equal(im.drawn, strongest)
    assert sum(len(item.data) for item in im.bins) == 10
    assert im.density.isVisible() and im.density_counts.sum() == len(rep)  # every pair in the density
    weak = int(np.argmin(nlp))
    lay = genome_layout(scanned.result.study.variants)
    hit = im.point_at(lay.x[rep.i[weak]], lay.x[rep.j[weak]])
    assert hit is None or hit in strongest  # only the points drawn answer a hover
    im.mode.setCurrentIndex(im.mode.findData("density"))
    assert sum(len(item.data) for item in im.bins) == 0 and im.density.isVisible()
    im.mode.setCurrentIndex(im.mode.findData("all"))
    assert sum(len(item.data) for item in im.bins) == len(rep) and not im.density.isVisible()
    assert f"all {len(rep):,} pairs" in im.mode_note.text()


def test_the_line_captions_stay_inside_their_tracks(qtbot, scanned):
    """At a loose --epi1 no pair may reach Bonferroni: the line is then the track's top and its
    caption, drawn above it, was cut off by the track's edge in a 1366x768 window."""
    from PySide6.QtWidgets import QApplication

    win, m = scanned, scanned.manhattan
    win.resize(1366, 768)
    rep = win.reported
    weak = np.flatnonzero(rep.p > win.result.bonferroni * 100)
    m.set_result(win.result, rep.take(weak))
    win.tabs.setCurrentWidget(m)
    QApplication.processEvents()
    for plot, line in ((m.pair_plot, m.bonferroni_line), (m.plot, m.lines[0]), (m.plot, m.lines[1])):
        line.label.updatePosition()
        vb = plot.getViewBox().sceneBoundingRect()
        box = line.label.mapRectToScene(line.label.boundingRect())
        assert vb.top() <= box.top() and box.bottom() <= vb.bottom(), (line.label.toPlainText(), vb, box)
