"""Exports: the CLI's result files byte for byte, the table as shown, and plots.

Result files are rendered by the core (:mod:`gboost.outputs.results`) so they are the same bytes as
``gboost scan`` writes; this module only chooses which text goes to which path and writes it
atomically (a temporary file in the same folder, then a rename), as the core does.
"""
from __future__ import annotations

import csv
import io
import os
import tempfile
from pathlib import Path

from gboost.outputs import results as res
from gui.models import COLUMNS, format_rows

# kind: (menu text, default file name, file-dialog filter)
RESULT_FILES = {
    "pairs_tsv": ("Pairs (TSV, pairs.tsv)…", "pairs.tsv", "Tab-separated (*.tsv *.txt)"),
    "pairs_csv": ("Pairs (CSV)…", "pairs.csv", "Comma-separated (*.csv)"),
    "epi_cc": ("Pairs as PLINK .epi.cc…", "pairs.epi.cc", "PLINK epistasis (*.epi.cc)"),
    "epi_summary": ("PLINK .epi.cc.summary…", "pairs.epi.cc.summary", "PLINK summary (*.summary)"),
    "marginal": ("Single-locus table (marginal.tsv)…", "marginal.tsv", "Tab-separated (*.tsv *.txt)"),
    "run_json": ("Run record (run.json)…", "run.json", "JSON (*.json)"),
}

IMAGES = ("regional.png",)  # the views Export all writes beside the result files, when they show something


def render(result, kind: str) -> str:
    """The text of one result file, as the CLI writes it (a QT scan's own files where it has them:
    .epi.qt and .epi.qt.summary for the .epi.cc pair)."""
    qt = getattr(result, "qt", None)
    if qt is not None:
        from gboost.outputs import qt_results as qres

        texts = qres.render_qt_outputs(qt)
        name = {"pairs_tsv": "pairs.tsv", "pairs_csv": "pairs.tsv", "epi_cc": "pairs.epi.qt",
                "epi_summary": "pairs.epi.qt.summary", "marginal": "marginal.tsv", "run_json": "run.json"}[kind]
        text = texts[name]() if callable(texts[name]) else texts[name]
        return tsv_to_csv(text) if kind == "pairs_csv" else text
    if kind == "pairs_tsv":
        return res.format_pairs_tsv(result)
    if kind == "pairs_csv":
        return tsv_to_csv(res.format_pairs_tsv(result))
    if kind == "epi_cc":
        return res.format_epi_cc(result)
    if kind == "epi_summary":
        return res.format_summary(result)
    if kind == "marginal":
        return res.format_marginal_tsv(result)
    if kind == "run_json":
        # The core renders run.json only together with the other files; take it from there so the
        # bytes are the CLI's (a format_run_json in the core would spare formatting the rest).
        return res.render_outputs(result)["run.json"]
    raise ValueError(f"unknown export {kind!r}")


def tsv_to_csv(tsv: str) -> str:
    """The same table as comma-separated values (RFC 4180 quoting where a field needs it)."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    for line in tsv.splitlines():
        w.writerow(line.split("\t"))
    return out.getvalue()


def table_text(model, sep: str = "\t") -> str:
    """The pair table as currently shown (filtered, sorted), in pairs.tsv's format (or as CSV)."""
    if model.pairs is None:
        return "\t".join(COLUMNS) + "\n" if sep == "\t" else ",".join(COLUMNS) + "\n"
    tsv = format_rows(model.variants, model.pairs, model.view)
    return tsv if sep == "\t" else tsv_to_csv(tsv)


def write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` atomically: UTF-8, '\\n' line ends (as the core's writers)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def export_result_file(result, kind: str, path: str | os.PathLike) -> Path:
    return write_text(path, render(result, kind))


def export_all(result, out_dir: str | os.PathLike, overwrite: bool = False, log_text: str | None = None,
               images: dict[str, bytes] | None = None) -> Path:
    """Every file of ``gboost scan --out DIR`` (the core's ``write_outputs``; a QT scan's files
    for a quantitative trait), with ``gboost.log`` holding ``log_text`` (the window's Log, whose
    "Settings:" line is the command that reproduces the scan) as the command's holds what it printed,
    and ``images`` (name: PNG bytes, e.g. the regional view's ``regional.png``) in the same set. An
    image of :data:`IMAGES` not given goes from the folder with the old set: it showed an earlier
    scan (or study), never this one's."""
    from gboost.cli.console import LOG_FILE

    extra_files = {} if log_text is None else {LOG_FILE: lambda: (log_text.rstrip("\n") + "\n").encode("utf-8")}
    images = images or {}
    for name, data in images.items():
        if name not in IMAGES:
            raise ValueError(f"not an image of Export all: {name!r}")
        extra_files[name] = lambda data=data: data
    stale = tuple(name for name in IMAGES if name not in images)
    qt = getattr(result, "qt", None)
    if qt is not None:
        from gboost.outputs.qt_results import write_qt_outputs

        return write_qt_outputs(qt, out_dir, overwrite=overwrite, extra_files=extra_files, also_remove=stale)
    return res.write_outputs(result, out_dir, overwrite=overwrite, extra_files=extra_files, also_remove=stale)
