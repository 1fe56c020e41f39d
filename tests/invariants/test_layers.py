"""The code map of docs/DESIGN.md, checked from the imports (read statically, every import in a
module, in functions too): no cycles at module level, no import running back up a layer, and the
library never imports the GUI or Qt."""
from __future__ import annotations

import ast
import os

from tests.helpers import ROOT

# Layers, lowest first; a module may import its own layer and those below, never one above.
LAYERS = [
    ("errors", "numba_cache", "stages", "validate", "tiles", "progress", "stats", "compile_watch", "compile_guard",
     "engines.cupy_import"),  # leaves
    ("encode", "params", "io.fastnum", "io.plink_format", "io.outdir", "io.pheno", "io.plink_text", "study",
     "plink_skips"),
    ("io", "load", "inputs", "covariates", "simulate", "engines.base", "stats.qt_products",
     # the GPU engine's parts that know nothing of a study: knobs, NVRTC, CuPy, counting strategies, upload, page-locking,
     # the missing-call lists
     "engines.gpu.config", "engines.gpu.compile", "engines.gpu.cuda", "engines.gpu.counting", "engines.gpu.upload",
     "engines.gpu.pinning", "engines.gpu.missing_lists"),
    ("engines", "accumulate", "checkpoint", "calibration", "best_ties"),
    ("hostwork", "io.results", "io.qt_results"),
    ("scan", "qt_scan", "parts", "pathways"),
    ("cli", "cli_simulate", "cli_pathways", "cli_qt", "gboost"),
    ("warm", "doctor"),  # run the command itself (warm) and report on the install
]


def layer_of(module: str) -> int:
    name = module.removeprefix("gboost.") if module != "gboost" else "gboost"
    best = None
    for k, names in enumerate(LAYERS):
        for n in names:
            if name == n or name.startswith(n + "."):
                if best is None or len(n) > best[1]:
                    best = (k, len(n))
    assert best is not None, f"{module} is in no layer of docs/DESIGN.md's map"
    return best[0]


def imports() -> dict[str, list[tuple[str, bool]]]:
    """module -> [(imported module, at module level?)] for every module of gboost/."""
    mods = {}
    for dirpath, _, files in os.walk(os.path.join(ROOT, "gboost")):
        for f in files:
            if f.endswith(".py"):
                rel = os.path.relpath(os.path.join(dirpath, f), ROOT)[:-3].replace(os.sep, ".")
                mods[rel.removesuffix(".__init__")] = os.path.join(dirpath, f)
    out = {}
    for mod, path in mods.items():
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read())
        found = []

        def visit(node, top: bool) -> None:
            for ch in ast.iter_child_nodes(node):
                if isinstance(ch, ast.If) and getattr(ch.test, "id", None) == "TYPE_CHECKING":
                    continue
                if isinstance(ch, ast.Import):
                    found.extend((a.name, top) for a in ch.names)
                elif isinstance(ch, ast.ImportFrom) and ch.module and ch.level == 0:
                    found.extend((f"{ch.module}.{a.name}", top) for a in ch.names)
                else:
                    visit(ch, top and not isinstance(ch, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)))

        visit(tree, True)
        resolved = []
        for name, top in found:
            target = name
            while target and target not in mods and target.startswith("gboost"):
                target = target.rpartition(".")[0]
            if target.startswith(("gui", "PySide6")) or name.startswith(("gui.", "PySide6")):
                resolved.append((name, top))
            elif target and target in mods and target != mod:
                resolved.append((target, top))
        out[mod] = resolved
    return out


def test_the_library_never_imports_the_gui_or_qt():
    bad = [(m, t) for m, ts in imports().items() for t, _ in ts if t.split(".")[0] in ("gui", "PySide6")]
    assert not bad


def test_no_import_runs_back_up_a_layer():
    up = []
    for mod, targets in imports().items():
        for target, _ in targets:
            if target == "gboost" or (mod == "gboost.engines.distributed" and target == "gboost.engines"):
                continue  # the package itself; a Dask worker making its own engine (in a function)
            if layer_of(target) > layer_of(mod):
                up.append(f"{mod} -> {target}")
    assert not up, up


def test_no_cycles_among_module_level_imports():
    graph = {m: {t for t, top in ts if top and t != "gboost"} for m, ts in imports().items()}
    state: dict = {}

    def walk(m, path):
        if state.get(m) == "done":
            return
        assert state.get(m) != "open", " -> ".join(path + [m])
        state[m] = "open"
        for t in graph.get(m, ()):
            walk(t, path + [m])
        state[m] = "done"

    for m in graph:
        walk(m, [])
