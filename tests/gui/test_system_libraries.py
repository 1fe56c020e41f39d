"""`gboost doctor` on the desktop app's system libraries: which libraries Qt's xcb platform plugin
lacks, the Debian/Ubuntu packages that hold them and the apt-get command (a fresh Debian or Ubuntu
desktop lacks libxcb-icccm4 and libxcb-keysyms1, and Qt's own error names neither)."""
import json
import subprocess
import sys

from gboost.cli import doctor

LDD = """\
\tlinux-vdso.so.1 (0x00007ffd)
\tlibQt6XcbQpa.so.6 => /venv/PySide6/Qt/lib/libQt6XcbQpa.so.6 (0x00007f1)
\tlibxcb-cursor.so.0 => not found
\tlibxcb-icccm.so.4 => not found
\tlibxcb-keysyms.so.1 => not found
\tlibxcb-icccm.so.4 => not found
\tlibxcb.so.1 => /lib/x86_64-linux-gnu/libxcb.so.1 (0x00007f2)
"""


def test_missing_xcb_libraries_are_named_with_their_packages_and_the_apt_get_command(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "platform", "linux")
    sec = doctor.qt_libraries_section(plugin=tmp_path / "libqxcb.so", ldd_text=LDD, find_library=lambda name: None)
    assert sec["missing"] == ["libxcb-cursor.so.0", "libxcb-icccm.so.4", "libxcb-keysyms.so.1"]
    assert sec["packages"] == ["libxcb-cursor0", "libxcb-icccm4", "libxcb-keysyms1"]
    assert sec["install"].endswith("apt-get install -y libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1")
    assert "will not open" in sec["state"]


def test_a_library_loaded_at_run_time_is_looked_up_beside_ldd(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "platform", "linux")
    found = "\tlibxcb.so.1 => /lib/libxcb.so.1 (0x1)\n"
    sec = doctor.qt_libraries_section(plugin=tmp_path / "p.so", ldd_text=found, find_library=lambda name: None)
    assert sec["missing"] == ["libxcb-cursor.so.0"] and sec["packages"] == ["libxcb-cursor0"]
    ok = doctor.qt_libraries_section(plugin=tmp_path / "p.so", ldd_text=found, find_library=lambda n: f"lib{n}.so.0")
    assert ok["missing"] == [] and "install" not in ok and "found" in ok["state"]


def test_doctor_reports_this_systems_qt_libraries():
    """On this machine, the report's section agrees with ldd on PySide6's own xcb plugin."""
    rep = doctor.report()
    sec = rep["desktop"]
    plugin = doctor._xcb_plugin()
    assert plugin is not None and sec["xcb_plugin"] == str(plugin)
    ldd = subprocess.run(["ldd", str(plugin)], capture_output=True, text=True).stdout
    for name in doctor.missing_from_ldd(ldd):
        assert name in sec["missing"]
    text = doctor.format_report(rep)
    assert "desktop   Qt's system libraries:" in text
    if sec["packages"]:
        assert f"install them with: {sec['install']}" in text
    json.dumps(rep)  # --json prints it
