"""The main window's actions, menus (File, Scan, View, Pathways, Help) and toolbar."""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence

from gui import export, help_menu


def build_menus_and_toolbar(win) -> None:
    """Create ``win.act_*`` actions, the menu bar and the toolbar of a MainWindow."""
    A = win._action
    win.act_open = A("&Open…", win.open_dialog, QKeySequence.StandardKey.Open, "Open a PLINK fileset (.bed/.bim/.fam), .ped/.map or BOOST matrix")
    win.act_export = A("&Export…", win.export_all_dialog, "Ctrl+E", "Write every result file of the CLI (pairs.tsv, pairs.epi.cc, …, run.json) into a folder")
    win.act_quit = A("&Quit", win.close, QKeySequence.StandardKey.Quit)
    win.act_run = A("&Run scan", win.start_scan, "Ctrl+R", "Test every SNP pair with the settings of the Run panel")
    win.act_cancel = A("&Cancel scan", win.cancel_scan, None, "Stop the scan; the previous results stay")
    win.act_reset_zoom = A("Reset &zoom", win.reset_zoom, "Ctrl+0", "Show the whole plot again")
    win.act_region = A("Re&gional view of the selection", win.show_region_of_selection, "Ctrl+L",
                       "The region around the selected pair's two SNPs (or the selected SNP), coloured by LD with it")
    win.act_clear_sel = A("Clear &selection", win.clear_selection, "Esc", "Show the pairs of every SNP again")
    win.act_png = A("Plot as &PNG…", lambda: win.export_plot_dialog("png"), None, "Save the plot shown as a PNG image")
    win.act_svg = A("Plot as &SVG…", lambda: win.export_plot_dialog("svg"), None, "Save the plot shown as an SVG vector image")
    win.act_about = A("&About gboost", win.about)
    win.act_export_graph = A("Pathway &graph (GraphML + TSV)…", win.export_graph_dialog, None,
                             "Write graph.graphml, nodes.tsv and edges.tsv of the pathway graph into a folder")
    win.act_pathway_sources = A("Gene &annotation and gene sets…", win.pathway_sources_dialog, None,
                                "Choose the gene annotation (BED/GTF), the gene sets (.gmt) and the SNP-to-gene window")
    win.act_pathway_bundled = A("Use the &bundled files", win.use_bundled_pathway_files, None,
                                "Bundled GRCh38 protein-coding genes and GO biological-process sets, 10 kb window")

    mb = win.menuBar()
    m_file = mb.addMenu("&File")
    m_file.addAction(win.act_open)
    win.recent_menu = m_file.addMenu("Open &Recent")
    win.recent_menu.aboutToShow.connect(win._fill_recent)
    win._fill_recent()
    m_file.addSeparator()
    m_file.addAction(win.act_export)
    m_as = m_file.addMenu("Export &As")
    win.export_actions = {}
    for kind, (text, _, _) in export.RESULT_FILES.items():
        a = A(text, lambda k=kind: win.export_file_dialog(k))
        m_as.addAction(a)
        win.export_actions[kind] = a
    m_as.addSeparator()
    win.act_table_csv = A("Table as shown (CSV)…", lambda: win.export_table_dialog(","))
    win.act_table_tsv = A("Table as shown (TSV)…", lambda: win.export_table_dialog("\t"))
    for a in (win.act_table_csv, win.act_table_tsv, win.act_png, win.act_svg):
        m_as.addAction(a)
    m_as.addSeparator()
    m_as.addAction(win.act_export_graph)
    m_file.addSeparator()
    m_file.addAction(win.act_quit)

    m_scan = mb.addMenu("&Scan")
    m_scan.addAction(win.act_run)
    m_scan.addAction(win.act_cancel)

    m_view = mb.addMenu("&View")
    for i, title in enumerate(("Manhattan plot", "QQ plots", "Interaction map", "Pathway graph", "Regional view")):
        m_view.addAction(A(title, lambda i=i: win.tabs.setCurrentIndex(i), f"Ctrl+{i + 1}"))
    m_view.addSeparator()
    m_view.addAction(win.act_region)
    m_view.addAction(win.act_reset_zoom)
    m_view.addAction(win.act_clear_sel)
    m_view.addSeparator()
    for dock in win.docks.values():
        m_view.addAction(dock.toggleViewAction())

    m_path = mb.addMenu("&Pathways")
    m_path.addAction(A("Show the pathway graph", lambda: win.tabs.setCurrentWidget(win.pathways)))
    m_path.addSeparator()
    m_path.addAction(win.act_pathway_sources)
    m_path.addAction(win.act_pathway_bundled)
    m_path.addSeparator()
    m_path.addAction(win.act_export_graph)

    m_help = mb.addMenu("&Help")
    win.act_columns_help = A("What the &columns mean…", win.show_columns_help, "F1",
                             "KSA, STAT, Q, R2 and the adjusted columns of the pair table")
    m_help.addAction(win.act_columns_help)
    m_help.addSeparator()
    win.doc_actions = {}
    for text, rel in help_menu.DOCS:
        a = A(text, lambda rel=rel: win.open_doc(rel), None, f"Open {rel}")
        a.setEnabled(help_menu.doc_path(rel) is not None)  # not in an installed wheel
        m_help.addAction(a)
        win.doc_actions[rel] = a
    m_help.addSeparator()
    m_help.addAction(win.act_about)

    tb = win.addToolBar("Main")
    tb.setObjectName("toolbar_main")
    tb.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
    for a in (win.act_open, win.act_run, win.act_cancel, None, win.act_export, win.act_png, win.act_svg, None,
              win.act_reset_zoom, win.act_clear_sel):
        tb.addSeparator() if a is None else tb.addAction(a)

