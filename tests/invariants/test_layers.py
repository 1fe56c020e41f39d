"""The code map of docs/DESIGN.md, checked from the imports (read statically: every import of a
module, at module level, in functions and under TYPE_CHECKING, and the modules imported by name):
no import circle of any kind, no import running back up a layer, every module in the lowest layer
its imports allow, and the library never imports the GUI or Qt."""
from __future__ import annotations

import ast
import os
import re

from tests.helpers import ROOT

# Layers, lowest first, as the imports draw them: a module's layer is one above the highest module it
# imports (every import: module level, in functions, TYPE_CHECKING), so a leaf imports no gboost
# module and each layer holds exactly the modules whose tallest chain of imports below is that long.
# The tallest chain (18 modules): __main__ -> cli -> cli.doctor -> cli.warm -> gboost -> pipeline.scan
# -> engines -> engines.distributed -> engines.local -> engines.gpu -> engines.gpu.engine ->
# engines.devices -> engines.cpu -> engines.base -> data.study -> data.encode -> stats.table ->
# runtime.numba_cache.
LAYERS = [
    ("data", "data.plink_skips", "engines.cupy_import", "engines.gpu.config", "engines.gpu.kernel_args",
     "engines.gpu.missing_lists", "engines.gpu.pinning", "errors", "outputs", "pipeline",
     "pipeline.progress", "pipeline.stages", "pipeline.validate", "readers", "readers.plink_format",
     "runtime", "runtime.compile_guard", "runtime.numba_cache", "stats", "stats.f32screen", "stats.qt_covar",
     "version"),  # 0: leaves
    ("cli.console", "data.planes", "engines.dask_cluster", "engines.gpu.cuda", "engines.gpu.upload", "outputs.outdir", "pipeline.tiles", "readers.fastnum",
     "readers.optional", "readers.pheno", "readers.sample_ids", "runtime.compile_watch",
     "runtime.process", "stats.boost", "stats.fastksa", "stats.hwe", "stats.multiple", "stats.pvalues",
     "stats.qt", "stats.table"),  # 1
    ("data.encode", "engines.gpu.compile", "engines.qt_screen", "pipeline.accumulate", "pipeline.params",
     "readers.id_lists", "readers.plink_text", "stats.marginal", "stats.plink_order"),  # 2
    ("data.study", "engines.gpu.counting", "engines.qt_fused", "pipeline.best_ties", "stats.exact"),  # 3
    ("data.candidates", "engines.base", "engines.qt_cpu", "readers.ped", "readers.plink_bed", "readers.streamed",
     "stats.covariates", "stats.qt_products"),  # 4
    ("data.load", "data.simulate", "engines.cpu", "engines.gpu.decode", "engines.qt_covar", "engines.qt_distributed",
     "readers.boost_matrix", "readers.pgen", "readers.vcf"),  # 5
    ("cli.simulate", "engines.devices", "engines.gpu.device", "pipeline.checkpoint", "readers.bgen",
     "stats.calibration"),  # 6
    ("data.inputs", "engines.early", "engines.gpu.engine", "engines.qt_gpu", "outputs.results",
     "pipeline.permute"),  # 7
    ("engines.gpu", "outputs.qt_results", "pathways.annotation", "pipeline.hostwork"),  # 8
    ("engines.local", "pathways.gmt", "pipeline.workers"),  # 9
    ("engines.distributed", "pathways.graph"),  # 10
    ("cli.pathways", "engines", "pathways"),  # 11
    ("pipeline.scan",),  # 12
    ("gboost", "pipeline.qt_scan"),  # 13
    ("cli.warm", "pipeline.parts"),  # 14
    ("cli.doctor", "cli.qt"),  # 15
    ("cli",),  # 16: the command line
    ("__main__", "cli.__main__"),  # 17: python -m gboost, python -m gboost.cli
]


def layer_of(module: str) -> int | None:
    """The module's layer in LAYERS (each module is named there itself, a package's too)."""
    name = module.removeprefix("gboost.") if module != "gboost" else "gboost"
    return next((k for k, names in enumerate(LAYERS) if name in names), None)


# Where an import sits: at module level, inside a function or class body, or under ``if TYPE_CHECKING:``.
# Every kind counts: a function-level import is a dependency that runs later, and a TYPE_CHECKING one
# is a dependency of the module's meaning that the type checker follows.
TOP, INNER, TYPING = "module level", "in a function", "TYPE_CHECKING"
# A string's module name, unlike an import's, is not resolved to the package holding it: a file name
# such as "gboost.log" names no module and imports nothing.
_BY_NAME = "by name: "
_MODULE_NAME = re.compile(r"gboost(\.[A-Za-z_][A-Za-z0-9_]*)+")


def modules() -> dict[str, str]:
    """gboost's modules (dotted, a package by its own name) -> source path."""
    mods = {}
    for dirpath, _, files in os.walk(os.path.join(ROOT, "gboost")):
        for f in files:
            if f.endswith(".py"):
                rel = os.path.relpath(os.path.join(dirpath, f), ROOT)[:-3].replace(os.sep, ".")
                mods[rel.removesuffix(".__init__")] = os.path.join(dirpath, f)
    return mods


def _found_imports(tree: ast.Module, mod: str, is_package: bool) -> list[tuple[str, str]]:
    """(dotted name, where) of every import statement in the tree, relative ones resolved, and every
    module named by a string that the code imports by name (importlib.import_module, find_spec, the
    command line's table of subcommand modules): a string exactly naming a gboost module is an import
    unless it only locates package data (importlib.resources.files)."""
    found = []
    package = mod if is_package else mod.rpartition(".")[0]

    def absolute(level: int, name: str | None) -> str:
        if not level:
            return name or ""
        base = package.split(".")
        base = base[: len(base) - (level - 1)]
        return ".".join(base + ([name] if name else []))

    def visit(node, where: str) -> None:
        for ch in ast.iter_child_nodes(node):
            inner = where
            if isinstance(ch, ast.If) and _is_main_guard(ch.test):
                continue  # run as a program (python -m), the module is __main__, above everything it imports
            if isinstance(ch, ast.If) and _is_type_checking(ch.test):
                for sub in ch.body:
                    visit_one(sub, TYPING)
                for sub in ch.orelse:
                    visit_one(sub, where)
                continue
            visit_one(ch, inner)

    def visit_one(ch, where: str) -> None:
        if isinstance(ch, ast.Import):
            found.extend((a.name, where) for a in ch.names)
        elif isinstance(ch, ast.ImportFrom):
            base = absolute(ch.level, ch.module)
            found.extend((f"{base}.{a.name}", where) for a in ch.names)
        elif isinstance(ch, ast.Call) and _called_name(ch.func) == "files":
            return  # importlib.resources.files("gboost.x"): package data, nothing imported
        elif isinstance(ch, ast.Constant) and isinstance(ch.value, str) and _MODULE_NAME.fullmatch(ch.value):
            found.append((ch.value, _BY_NAME + where))  # kept only where it names a module (imports())
        if not isinstance(ch, (ast.Import, ast.ImportFrom)):
            deeper = INNER if isinstance(ch, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)) \
                and where == TOP else where
            visit(ch, deeper)

    visit(tree, TOP)
    return found


def _is_main_guard(test) -> bool:
    return (isinstance(test, ast.Compare) and getattr(test.left, "id", None) == "__name__"
            and any(getattr(c, "value", None) == "__main__" for c in test.comparators))


def _is_type_checking(test) -> bool:
    return getattr(test, "id", None) == "TYPE_CHECKING" or getattr(test, "attr", None) == "TYPE_CHECKING"


def _called_name(func) -> str | None:
    return getattr(func, "attr", None) or getattr(func, "id", None)


def imports() -> dict[str, list[tuple[str, str]]]:
    """module -> [(imported module, where)] for every module of gboost/; a GUI or Qt name is kept as
    written, a name inside gboost is resolved to the module that holds it."""
    mods = modules()
    out = {}
    for mod, path in mods.items():
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read())
        resolved = []
        for name, where in _found_imports(tree, mod, path.endswith("__init__.py")):
            if where.startswith(_BY_NAME):
                where = where[len(_BY_NAME):]
                if name not in mods:
                    continue
            target = name
            while target and target not in mods and target.startswith("gboost"):
                target = target.rpartition(".")[0]
            if target.startswith(("gui", "PySide6")) or name.startswith(("gui.", "PySide6")):
                resolved.append((name, where))
            elif target and target in mods and target != mod:
                resolved.append((target, where))
        out[mod] = resolved
    return out


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles of the graph: for each module on one, the shortest way back to it."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    groups = []

    def strong(v):  # Tarjan
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(set(group))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    cycles = []
    for group in groups:  # the shortest way back to each module of the group, each circle once
        for start in sorted(group):
            paths = {start: [start]}
            frontier = [start]
            found = None
            while frontier and found is None:
                nxt = []
                for v in frontier:
                    for w in sorted(graph[v] & group):
                        if w == start:
                            found = paths[v] + [start]
                            break
                        if w not in paths:
                            paths[w] = paths[v] + [w]
                            nxt.append(w)
                    if found:
                        break
                frontier = nxt
            ring = found[:-1]
            first = ring.index(min(ring))
            found = ring[first:] + ring[:first] + [ring[first]]
            if found not in cycles:
                cycles.append(found)
    return cycles


def test_the_library_never_imports_the_gui_or_qt():
    bad = [(m, t) for m, ts in imports().items() for t, _ in ts if t.split(".")[0] in ("gui", "PySide6")]
    assert not bad


def test_every_module_is_in_a_layer():
    missing = [m for m in modules() if layer_of(m) is None]
    assert not missing, missing


def test_no_import_runs_back_up_a_layer():
    up = [f"{mod} -> {target} ({where})" for mod, targets in imports().items() for target, where in targets
          if layer_of(target) > layer_of(mod)]
    assert not up, up


def test_each_module_sits_in_the_lowest_layer_its_imports_allow():
    """LAYERS equal what the imports draw: a module one layer above the highest module it imports
    (a leaf in layer 0), none placed higher than it needs, so the layer count is the map's height."""
    found = imports()
    listed = {n for names in LAYERS for n in names}
    gone = sorted(n for n in listed if ("gboost" if n == "gboost" else f"gboost.{n}") not in found)
    assert not gone, f"LAYERS names modules that are not there: {gone}"
    wrong = []
    for mod, targets in found.items():
        need = 1 + max((layer_of(t) for t, _ in targets if t in found), default=-1)
        if layer_of(mod) is not None and layer_of(mod) != need:
            wrong.append(f"{mod}: layer {layer_of(mod)}, its imports put it in {need}")
    assert not wrong, wrong


def test_no_import_cycles_of_any_kind():
    found = imports()
    graph = {m: {t for t, _ in ts if t in found} for m, ts in found.items()}
    cycles = _cycles(graph)
    assert not cycles, [" -> ".join(c) for c in cycles]
