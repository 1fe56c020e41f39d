"""The window on a quantitative-trait study: it loads, scans with PLINK's linear test,
shows the reported pairs and plots like a case-control scan, and exports the CLI's QT files."""
import numpy as np
import pytest

from gboost.data.simulate import simulate_qt_study

from guihelpers import load, scan


@pytest.fixture(scope="module")
def qt_prefix(tmp_path_factory):
    st = simulate_qt_study(60, 400, seed=12, chromosomes=2, missing_rate=0.01, effects=[(3, 40, 0.6)])
    prefix = str(tmp_path_factory.mktemp("qt") / "qt")
    st.write(prefix)
    return prefix


@pytest.fixture(scope="module")
def qt_cli_dir(qt_prefix, tmp_path_factory):
    from gboost.cli import main

    out = tmp_path_factory.mktemp("qtcli") / "out"
    assert main(["scan", "--bfile", qt_prefix, "--out", str(out), "--epi1", "0.001", "--quiet"]) == 0
    return out


@pytest.mark.slow
def test_a_qt_scan_fills_the_table_and_plots(qtbot, window, qt_prefix, qt_cli_dir):
    study = load(qtbot, window, qt_prefix)
    assert study.quantitative
    assert window.summary.fields["Cases / controls"].text().startswith("QT: mean ")
    assert "quantitative trait" in window.summary.fields["Cases / controls"].toolTip()
    window.run_panel.epi1.setText("0.001")
    result = scan(qtbot, window)
    assert result.qt is not None and result.qt.test == "linear"
    tsv = [line.split("\t") for line in (qt_cli_dir / "pairs.tsv").read_text().splitlines()[1:]]
    # the window's reported pairs are the CLI's pairs.tsv rows, STAT descending
    assert [(study.variants.snp[i], study.variants.snp[j]) for i, j in zip(result.reported.i, result.reported.j)] \
        == [(r[1], r[4]) for r in tsv]
    np.testing.assert_allclose(result.reported.stat, [float(r[8]) for r in tsv], rtol=1e-5)
    assert ("snp4", "snp41") in {(r[1], r[4]) for r in tsv}
    assert window.result is result
    assert window.pairs.model.rowCount() == len(tsv)
    # the Manhattan plot shows the marginal linear test of marginal.tsv (-log10 P per SNP)
    marg = [line.split("\t") for line in (qt_cli_dir / "marginal.tsv").read_text().splitlines()[1:]]
    np.testing.assert_allclose(window.manhattan.y, [-np.log10(float(r[8])) for r in marg], rtol=1e-5, atol=1e-5)
    # ... and says which test it is; the table has no KSA column (no BOOST screen in a QT scan)
    assert "additive linear test" in window.manhattan.plot.getAxis("left").labelText
    from gui.models import COLUMNS

    assert window.pairs.table.isColumnHidden(COLUMNS.index("KSA"))


@pytest.mark.slow
@pytest.mark.parametrize("kind,name", [("pairs_tsv", "pairs.tsv"), ("epi_cc", "pairs.epi.qt"),
                                       ("epi_summary", "pairs.epi.qt.summary"), ("marginal", "marginal.tsv")])
def test_qt_exports_are_the_cli_bytes(qtbot, window, qt_prefix, qt_cli_dir, tmp_path, kind, name):
    load(qtbot, window, qt_prefix)
    window.run_panel.epi1.setText("0.001")
    scan(qtbot, window)
    out = tmp_path / name
    with qtbot.waitSignal(window.exportFinished, timeout=30000):
        assert window.export_file(kind, str(out))
    assert out.read_bytes() == (qt_cli_dir / name).read_bytes()


def test_epi1_follows_plinks_default_for_the_loaded_test(qtbot, window, qt_prefix, study_prefix):
    assert window.run_panel.epi1.text() == "5e-6"
    load(qtbot, window, qt_prefix)
    assert window.run_panel.epi1.text() == "1e-4"  # PLINK's --epistasis default
    load(qtbot, window, study_prefix)
    assert window.run_panel.epi1.text() == "5e-6"  # boost's again
    window.run_panel.epi1.setText("0.001")  # a value the user typed stays
    load(qtbot, window, qt_prefix)
    assert window.run_panel.epi1.text() == "0.001"


def test_covariates_of_the_run_panel_adjust_a_qt_scan(qtbot, window, qt_prefix, tmp_path):
    with open(qt_prefix + ".fam") as f:
        fam = [line.split() for line in f]
    covar = tmp_path / "covar.txt"
    covar.write_text("FID IID age\n" + "".join(f"{r[0]} {r[1]} {20 + k % 50}\n" for k, r in enumerate(fam)))
    load(qtbot, window, qt_prefix)
    window.run_panel.file_edits["covar"].setText(str(covar))
    window.run_panel.epi1.setText("0.001")
    result = scan(qtbot, window)
    assert result.qt.covariate_names == ["age"]
    out = tmp_path / "pairs.tsv"
    with qtbot.waitSignal(window.exportFinished, timeout=30000):
        assert window.export_file("pairs_tsv", str(out))
    header = out.read_text().splitlines()[0].split("\t")
    assert header[-6:] == ["BETA_ADJ", "SE_ADJ", "STAT_ADJ", "P_ADJ", "N_ADJ", "DF_ADJ"]


def test_a_cancelled_qt_scan_keeps_its_checkpoint_and_resumes_to_the_cli_bytes(qtbot, window, qt_prefix, qt_cli_dir,
                                                                                tmp_path, monkeypatch):
    """The QT scan checkpoints in the GUI as a case-control one does (the same ledger): Cancel
    keeps the finished tiles, Run resumes them, and the files are one CLI run's."""
    from gboost.engines import qt_cpu
    from gui import checkpoints

    monkeypatch.setattr(qt_cpu, "_ZBUF_BYTES", 8 * 60 * 4)  # row tiles of 4 SNPs: 15 tiles
    real = qt_cpu._stat_block
    calls, cancelled = [], []

    def stat_block(*a):
        calls.append(1)
        real(*a)
        if len(calls) == 3 and not cancelled:
            cancelled.append(1)
            window.task.cancel()  # asked before the 4th tile: three are recorded

    monkeypatch.setattr(qt_cpu, "_stat_block", stat_block)
    load(qtbot, window, qt_prefix)
    window.run_panel.epi1.setText("0.001")
    with qtbot.waitSignal(window.scanCancelled, timeout=60000):
        assert window.start_scan()
    qtbot.waitUntil(lambda: not window.busy)
    ckpt = checkpoints.directory_for(window.path, window.run_panel.qc_options(), window.run_panel.scan_params())
    found = checkpoints.interrupted(ckpt)
    assert found is not None and (found.done, found.total) == (3, 15)
    calls.clear()
    with qtbot.waitSignal(window.scanFinished, timeout=60000):
        assert window.start_scan(resume=True)
    assert len(calls) == 15 - 3  # only the missing tiles
    assert not ckpt.exists()  # a finished scan leaves no checkpoint
    out = tmp_path / "pairs.epi.qt"
    with qtbot.waitSignal(window.exportFinished, timeout=30000):
        assert window.export_file("epi_cc", str(out))
    assert out.read_bytes() == (qt_cli_dir / "pairs.epi.qt").read_bytes()


@pytest.fixture(scope="module")
def qt_covar(qt_prefix, tmp_path_factory):
    path = tmp_path_factory.mktemp("qtcovar") / "covar.txt"
    rows = [line.split() for line in open(qt_prefix + ".fam")]
    rng = np.random.default_rng(9)
    path.write_text("FID IID age pc1\n" + "".join(f"{r[0]} {r[1]} {20 + k % 50} {rng.normal():.4f}\n"
                                                for k, r in enumerate(rows)))
    return str(path)


@pytest.mark.slow
def test_a_qt_covariate_scan_shows_the_adjusted_columns_as_pairs_tsv(qtbot, window, qt_prefix, qt_covar,
                                                                     tmp_path_factory):
    from PySide6.QtCore import Qt

    from gboost.cli import main
    from gui.models import FULL_TEXT_ROLE, QT_ADJ_COLUMNS

    out = tmp_path_factory.mktemp("qtcovcli") / "out"
    assert main(["scan", "--bfile", qt_prefix, "--covar", qt_covar, "--out", str(out), "--epi1", "0.001",
                 "--device", "cpu", "--quiet"]) == 0
    lines = (out / "pairs.tsv").read_text().splitlines()
    header = lines[0].split("\t")
    cli = {(r[1], r[4]): r for r in (line.split("\t") for line in lines[1:])}
    load(qtbot, window, qt_prefix)
    window.run_panel.epi1.setText("0.001")
    window.run_panel.file_edits["covar"].setText(qt_covar)
    scan(qtbot, window)
    model = window.pairs.model
    assert model.columns[-6:] == QT_ADJ_COLUMNS and len(cli) == model.rowCount() > 0
    v = window.study.variants
    for r in range(model.rowCount()):
        row = model.pair_row(r)
        key = (str(v.snp[model.pairs.i[row]]), str(v.snp[model.pairs.j[row]]))
        for name in QT_ADJ_COLUMNS:
            text = model.index(r, model.columns.index(name)).data(FULL_TEXT_ROLE)
            assert text == cli[key][header.index(name)], (key, name)
    # sorted by P_ADJ, ascending: the adjusted test's order
    c = model.columns.index("P_ADJ")
    window.pairs.proxy.sort(c, Qt.SortOrder.AscendingOrder)
    proxy = window.pairs.proxy
    ps = [float(proxy.index(r, c).data(FULL_TEXT_ROLE)) for r in range(proxy.rowCount())]
    assert ps == sorted(ps)
    assert "linear model" in model.headerData(model.columns.index("BETA_ADJ"), Qt.Orientation.Horizontal,
                                              Qt.ItemDataRole.ToolTipRole)


@pytest.mark.slow
def test_the_regional_view_of_a_qt_scan_has_the_summary_heights_of_the_cli(qtbot, window, qt_prefix, qt_cli_dir):
    """Heights from .epi.qt.summary's BEST_CHISQ (the linear test's 1 df); the strongest pair's
    SNPs stand at that pair's own P."""
    from gboost.stats.pvalues import neglog10_p

    study = load(qtbot, window, qt_prefix)
    window.run_panel.epi1.setText("0.001")
    scan(qtbot, window)
    # 60 SNPs on two chromosomes: a region of 100 Mb to hold several
    assert window.state.show_region(pair=0, half_width_bp=100_000_000)
    summary = {r.split()[1]: float(r.split()[5]) for r in (qt_cli_dir / "pairs.epi.qt.summary").read_text().splitlines()[1:]}
    reg = window.regional.regions[0]
    assert len(reg) > 1
    want = neglog10_p(np.array([summary[str(study.variants.snp[k])] for k in reg.snps]), np.ones(len(reg)))
    np.testing.assert_allclose(reg.best, want, rtol=2e-3)  # (the file prints BEST_CHISQ to 4 digits)
    tsv = (qt_cli_dir / "pairs.tsv").read_text().splitlines()
    p0 = float(tsv[1].split("\t")[tsv[0].split("\t").index("P")])
    centre = int(np.flatnonzero(reg.snps == reg.centre)[0])
    assert reg.best[centre] == pytest.approx(-np.log10(p0), rel=1e-4)
    assert "additive linear test" not in window.regional.plot.getAxis("left").labelText  # (best interaction shown)
    window.regional.set_y("single")
    assert "additive linear test" in window.regional.plot.getAxis("left").labelText


@pytest.mark.slow
def test_a_qt_candidate_set_scan_gives_the_clis_pairs(qtbot, window, qt_prefix, tmp_path):
    """A QT study with --set --set-by-all from the Run panel scans the rectangle the CLI scans and
    shows the same pairs.tsv rows."""
    from gboost.cli import main

    with open(qt_prefix + ".bim") as f:
        snps = [line.split()[1] for line in f]
    sets = tmp_path / "sets.txt"
    sets.write_text("A\n" + "\n".join(snps[2:8]) + "\nEND\n")
    out = tmp_path / "cli"
    assert main(["scan", "--bfile", qt_prefix, "--out", str(out), "--epi1", "0.05", "--quiet",
                 "--set", str(sets), "--set-by-all"]) == 0
    tsv = [line.split("\t") for line in (out / "pairs.tsv").read_text().splitlines()[1:]]
    assert tsv and all(r[1] in snps[2:8] or r[4] in snps[2:8] for r in tsv)
    study = load(qtbot, window, qt_prefix)
    rp = window.run_panel
    rp.epi1.setText("0.05")
    rp.file_edits["set"].setText(str(sets))
    rp.set_mode.setCurrentIndex(rp.set_mode.findData("set-by-all"))
    result = scan(qtbot, window)
    assert window.last_error is None
    assert result.study.rect is not None and result.qt is not None
    got = [(result.study.variants.snp[i], result.study.variants.snp[j]) for i, j in zip(result.reported.i, result.reported.j)]
    assert got == [(r[1], r[4]) for r in tsv]
    assert study.quantitative


@pytest.mark.slow
def test_a_qt_perm_scan_counts_its_permutations_and_exports_the_clis_files(qtbot, window, qt_prefix, tmp_path):
    """--perm on a quantitative trait from the Run panel: the permutations of the trait are logged,
    their progress is shown on the permutations' bar, and Export all writes the CLI's files (EMP2 in
    pairs.tsv, each permutation's maximum in perm.tsv)."""
    from gboost.cli import main

    out = tmp_path / "cli"
    assert main(["scan", "--bfile", qt_prefix, "--out", str(out), "--epi1", "0.001", "--quiet",
                 "--perm", "19", "--perm-seed", "4"]) == 0
    load(qtbot, window, qt_prefix)
    rp = window.run_panel
    rp.epi1.setText("0.001")
    rp.perm.setValue(19)
    rp.perm_seed.setValue(4)
    events = []
    window.scanProgress.connect(lambda ev: events.append((getattr(ev, "unit", "pairs"), ev.pairs_done)))
    result = scan(qtbot, window, timeout=120000)
    assert window.last_error is None and result.qt is not None
    perms = [done for unit, done in events if unit == "permutations"]
    assert perms and perms[-1] == 19 and perms == sorted(perms)
    assert "Then 19 permutations of the trait values among the samples (seed 4)" in window.log_view.toPlainText()
    assert "EMP2" in window.pairs.model.columns
    export = tmp_path / "gui"
    with qtbot.waitSignal(window.exportFinished, timeout=30000):
        assert window.export_all(str(export))
    for name in ("pairs.tsv", "perm.tsv", "pairs.epi.qt", "pairs.epi.qt.summary"):
        assert (export / name).read_bytes() == (out / name).read_bytes(), name
    # the threshold's P is the linear test's (1 df, run.json's), in the summary and on the Manhattan
    import json

    run = json.loads((out / "run.json").read_text())["permutations"]
    t05, p05 = run["threshold_0.05"], run["threshold_0.05_p"]
    text = window.summary.fields["Permutations"].text()
    assert f"STAT > {t05:.4g} (P < {p05:.3g} at 1 df)" in text, text
    assert window.manhattan.perm_line.value() == pytest.approx(-np.log10(p05), rel=1e-9)
    assert window.summary.fields["Passed screen"].text().endswith("(linear test above the --epi1 threshold)")


@pytest.mark.slow
def test_a_qt_scan_runs_on_dask_from_the_run_panel(qtbot, window, qt_prefix, qt_cli_dir, tmp_path):
    """The Run panel's Dask address reaches a QT scan too (gboost.pipeline.qt_scan.qt_engine, as
    --dask does): its tiles run on a local cluster and Export gives the CPU command's files."""
    pytest.importorskip("distributed", reason="Dask is not installed (pip install 'gboost[cluster]')")
    rp = window.run_panel
    rp.engine.setCurrentIndex(rp.engine.findData("cpu"))
    rp.threads.setValue(1)
    rp.dask.setText("local:1")
    load(qtbot, window, qt_prefix)
    rp.epi1.setText("0.001")
    result = scan(qtbot, window, timeout=180000)
    assert window.last_error is None and result.qt is not None and result.engine == "dask"
    assert "Dask cluster local:1" in window.summary.fields["Engine"].text()
    for kind, name in (("epi_cc", "pairs.epi.qt"), ("epi_summary", "pairs.epi.qt.summary"), ("pairs_tsv", "pairs.tsv")):
        out = tmp_path / name
        with qtbot.waitSignal(window.exportFinished, timeout=30000):
            assert window.export_file(kind, str(out))
        assert out.read_bytes() == (qt_cli_dir / name).read_bytes(), name
