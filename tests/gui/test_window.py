"""Opening studies, the summary, settings, recent files, drag and drop, errors, About."""
import pytest
from PySide6.QtCore import QMimeData, QPoint, Qt, QUrl
from PySide6.QtGui import QDropEvent

from guihelpers import N_CASES, N_CONTROLS, N_SNPS, load
from gboost.data.inputs import open_input
from gboost.data.load import load_study
from gboost.data.study import QCOptions
from gui import app, settings
from gui.loading import canonical


@pytest.mark.slow
def test_open_shows_the_study_summary(qtbot, window, study_prefix):
    study = load(qtbot, window, study_prefix)
    f = window.summary.fields
    assert study.n_snps == N_SNPS and study.n_samples == N_CASES + N_CONTROLS
    assert f["SNPs"].text() == f"{N_SNPS:,}"
    assert f["Samples"].text() == f"{N_CASES + N_CONTROLS:,}"
    assert f["Cases / controls"].text() == f"{N_CASES:,} / {N_CONTROLS:,}"
    assert f["Chromosomes"].text().startswith("1–3")
    assert f["Missing calls"].text() == f"{100 * study.missing_rate:.3f} % of genotypes"
    assert 0.2 < 100 * study.missing_rate < 1.0  # the simulation set 0.5 % missing
    assert f["Pairs to test"].text() == f"{N_SNPS * (N_SNPS - 1) // 2:,}"
    assert f["QC removed"].text() == "nothing"
    assert window.windowTitle() == "gboost: study"


@pytest.mark.slow
def test_qc_settings_are_applied_and_what_they_removed_is_shown(qtbot, window, study_prefix):
    rp = window.run_panel
    rp.qc_checks["maf"].setChecked(True)
    rp.qc_edits["maf"].setText("0.2")
    study = load(qtbot, window, study_prefix)
    expected = load_study(open_input(bfile=study_prefix), QCOptions(maf=0.2))
    assert study.n_snps == expected.n_snps < N_SNPS
    removed = N_SNPS - study.n_snps
    assert f"{removed:,} SNPs below --maf" in window.summary.fields["QC removed"].text()
    assert window.study_qc == QCOptions(maf=0.2)


@pytest.mark.slow
def test_changing_qc_reloads_the_study_before_the_scan(qtbot, window, study_prefix):
    load(qtbot, window, study_prefix)
    window.run_panel.qc_checks["maf"].setChecked(True)
    window.run_panel.qc_edits["maf"].setText("0.2")
    with qtbot.waitSignal(window.scanFinished, timeout=60000) as blocker:
        window.start_scan()
    assert blocker.args[0].study.n_snps < N_SNPS
    assert window.study is blocker.args[0].study
    assert window.summary.fields["SNPs"].text().startswith(f"{window.study.n_snps:,} of {N_SNPS:,}")


@pytest.mark.slow
def test_recent_files_and_run_settings_persist(qtbot, window, study_prefix):
    load(qtbot, window, study_prefix)
    assert settings.recent_files()[0] == canonical(study_prefix)
    window._fill_recent()
    assert "study" in [a.text() for a in window.recent_menu.actions()]
    window.run_panel.epi1.setText("1e-4")
    window.close()

    from gui.main_window import MainWindow

    again = MainWindow()
    qtbot.addWidget(again)
    assert again.run_panel.epi1.text() == "1e-4"
    assert again.run_panel.scan_params().epi1 == 1e-4


def test_first_start_opens_the_sample_then_the_most_recent(tmp_path, monkeypatch, study_prefix):
    monkeypatch.setenv("GBOOST_SAMPLE", study_prefix)
    assert app.initial_study(None) == study_prefix  # first start: the bundled sample
    other = str(tmp_path / "other")
    for ext in (".bed", ".bim", ".fam"):
        open(other + ext, "w").close()
    settings.add_recent(other)
    assert app.initial_study(None) == other  # later starts: the most recent study
    assert app.initial_study("given") == "given"


def test_the_bundled_sample_study_opens(qtbot, window, monkeypatch):
    monkeypatch.delenv("GBOOST_SAMPLE", raising=False)
    sample = app.sample_study()
    if sample is None:
        pytest.skip("sample_data/sample.bed is not in this checkout")
    study = load(qtbot, window, sample)
    assert study.n_snps > 0 and study.layout.n_case > 0 and study.layout.n_ctrl > 0


def test_drop_of_a_bed_file_opens_its_fileset(qtbot, window, study_prefix):
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(study_prefix + ".bim")])
    ev = QDropEvent(QPoint(10, 10), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                    Qt.KeyboardModifier.NoModifier)
    with qtbot.waitSignal(window.studyLoaded, timeout=30000):
        window.dropEvent(ev)
    assert window.path.endswith("study.bim")
    assert window.study.n_snps == N_SNPS


def test_bad_input_gives_a_message_naming_the_file_not_a_traceback(qtbot, window, tmp_path):
    bad = tmp_path / "broken"
    (tmp_path / "broken.bed").write_bytes(b"\x00\x00\x00garbage")
    (tmp_path / "broken.bim").write_text("1 rs1 0 100 A G\n")
    (tmp_path / "broken.fam").write_text("f1 i1 0 0 1 2\n")
    with qtbot.waitSignal(window.taskFailed, timeout=30000) as blocker:
        window.open_path(str(bad))
    title, message = blocker.args
    assert title == "Problem with the input"
    assert "broken" in message and "Traceback" not in message
    assert window.study is None and not window.busy


def test_invalid_threshold_is_refused_before_any_work(qtbot, window, study_prefix):
    load(qtbot, window, study_prefix)
    window.run_panel.epi1.setText("2")
    assert not window.start_scan()
    assert window.last_error[0] == "Invalid setting" and "--epi1" in window.last_error[1]
    assert window.task is None and window.result is None


def test_engine_choice_lists_the_gpu_found_and_the_status_bar_names_the_engine(qtbot, window):
    rp = window.run_panel
    rp.set_gpu_info(True, "1 x NVIDIA H100 80GB HBM3")
    gpu = rp.engine.findData("gpu")
    assert rp.engine.model().item(gpu).isEnabled()
    assert "NVIDIA H100" in rp.engine.itemText(gpu)
    rp.set_gpu_info(False, "no CUDA device")
    assert not rp.engine.model().item(rp.engine.findData("gpu")).isEnabled()
    rp.engine.setCurrentIndex(rp.engine.findData("cpu"))
    assert window.engine_label.text().startswith("Engine: CPU (numba,")


def test_about_names_version_and_engine(qtbot, window):
    import gboost
    from gui.dialogs import about_text

    text = about_text(window.engine_description())
    assert f"gboost {gboost.__version__}" in text and "CPU (numba," in text


def test_menus_have_the_usual_entries(window):
    titles = {a.text().replace("&", ""): a.menu() for a in window.menuBar().actions()}
    assert {"File", "View", "Help"} <= set(titles)
    file_items = [a.text().replace("&", "") for a in titles["File"].actions() if a.text()]
    for item in ("Open…", "Open Recent", "Export…", "Quit"):
        assert item in file_items
    view_items = [a.text() for a in titles["View"].actions()]
    assert "Pairs" in view_items and "Study" in view_items  # dock toggles


def test_pyside_is_not_the_release_that_drops_references_to_none():
    """pyproject excludes PySide6 6.12.0: on CPython < 3.12 its slots and signals drain None's
    reference count until the interpreter aborts. An environment that has it anyway must fail here."""
    import sys

    import PySide6

    assert not (PySide6.__version__ == "6.12.0" and sys.version_info < (3, 12))


def test_size_option_sets_the_window_size_for_screenshots():
    assert app.parse_args(["--size", "1366x768"]).size == (1366, 768)
    assert app.parse_args([]).size is None
    for bad in ("1366", "0x768", "axb", "1366x"):
        with pytest.raises(SystemExit):
            app.parse_args(["--size", bad])
