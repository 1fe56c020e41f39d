"""Would reading the inputs in a second process let the first tile go sooner? (issue 24)

The command's way to its first tile is held by work that needs the GIL: the imports of NumPy, numba
and CuPy, the loads of numba's cached functions and the Python between the compiled passes of the
.fam/.bim parse and the .bed counting pass. Threads only interleave that work (docs/PERFORMANCE.md,
issue 24: every start-path change on threads measured at or below 0.05 s). A second process has a
GIL of its own. This probe measures, from the process's start, when both the study's counts and the
GPU (driver, context, CuPy, kernels) are ready, in two arrangements:

* ``inproc`` — as `gboost scan` does it: NumPy's and numba's imports, then the GPU's thread (driver
  and context through ctypes, CuPy once signalled), and on the main thread the parse and the
  counting pass (``open_input``, ``load_study`` with the background encode, whose encoder is then
  cancelled).
* ``fork`` — after NumPy's import the process forks; the child imports gboost's loader (numba), parses
  and counts, and sends the parent what a Study holds besides its planes (the variants' and samples'
  columns, the counts, the QC report's fields) as one pickle of plain arrays; the parent meanwhile
  starts the driver and imports CuPy on its thread at once (nothing else holds its GIL; without
  gboost.engines, whose package imports numba), then reads the pickle. The planes' encoding and the
  kernels' load are left out of this mode: a design built on it must place both (the child encoding
  into shared memory; GPU modules importable without numba).

* ``fork2`` — two children after NumPy's import: one parses the .fam/.bim (``open_input``), the other
  reads the .fam's classes and counts every .bed row's genotypes per class in one compiled pass (no
  .bim: a design built on it applies the SNP filters to the counts afterwards); each imports numba on
  its own GIL. Marks ``a_*`` and ``b_*`` are the children's; ``counted_total`` (every mode) is the sum of
  the counts, equal between modes when every SNP is kept and every sample has a case/control status.

    python bench/probe_split_read.py --bfile PREFIX --mode inproc|fork|fork2 [--runs N]

Each run is a fresh process (this script re-executed); a line per run gives the marks in seconds from
the process's start, and the last line each mode's medians. The fork mode's ``c_*`` marks are the
child's: forked, gboost's loader imported (numba with it), the .fam/.bim parsed, the counting pass done,
the arrays gathered for the pickle; ``piped`` is when the parent has read the last byte. Without a GPU (the VM), the GPU's thread
imports CuPy when it is installed and stops there: the GIL contention is the same, the driver's
start and the kernels' load are absent.
"""
from __future__ import annotations

import os
import sys
import time

T0 = time.perf_counter()


def _age() -> float:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from gboost.stages import process_age

    return process_age()


def _light_gpu_start(marks: dict) -> None:
    """The driver's start and CuPy's import without gboost.engines (whose package imports numba):
    the fork mode's parent must not import numba before its first tile. The kernels' load is left
    out (gboost.engines.gpu imports numba): the parent's GPU is "ready" when CuPy is imported."""
    import ctypes
    import importlib.util

    try:
        cuda = ctypes.CDLL("libcuda.so.1")
        dev, ctx = ctypes.c_int(), ctypes.c_void_p()
        if cuda.cuInit(0) == 0 and cuda.cuDeviceGet(ctypes.byref(dev), 0) == 0:
            cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev)
    except OSError:
        pass
    marks["driver"] = time.perf_counter()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    spec = importlib.util.spec_from_file_location("_cupy_import", os.path.join(root, "gboost", "engines", "cupy_import.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    try:
        cp = mod.import_cupy()
        marks["cupy"] = time.perf_counter()
        cp.zeros(1)  # CuPy's runtime on the context (absent without a GPU)
    except Exception:  # noqa: BLE001
        pass
    marks["gpu"] = time.perf_counter()


def _gpu_thread(marks: dict, go=None, light: bool = False):
    import threading

    def run():
        if light:
            _light_gpu_start(marks)
            return
        from gboost.engines.early import _driver_contexts

        _driver_contexts()
        marks["driver"] = time.perf_counter()
        if go is not None:
            go.wait(2.0)
        try:
            from gboost.engines import gpu_available

            ok, _ = gpu_available()
            marks["cupy"] = time.perf_counter()
            if ok:
                from gboost.engines.gpu.compile import kernels
                from gboost.engines.gpu.config import MmaConfig
                from gboost.engines.gpu.cuda import compute_capability, cupy

                if compute_capability(cupy(), 0) >= 80:
                    kernels(0, MmaConfig())
        except Exception:  # noqa: BLE001 - a probe: the marks say how far it got
            pass
        marks["gpu"] = time.perf_counter()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def _read(bfile: str, marks: dict | None = None):
    """The parse and the counting pass; ``marks`` (when given) gets the child's steps: gboost's loader
    imported (numba with it), the .fam/.bim parsed, the counting pass done."""
    marks = {} if marks is None else marks
    from gboost.inputs import open_input
    from gboost.load import load_study

    marks["c_imports"] = time.perf_counter()
    source = open_input(bfile=bfile)
    marks["c_parsed"] = time.perf_counter()
    study = load_study(source, background_encode=True)
    marks["c_counted"] = time.perf_counter()
    if study.planes_ready is not None:
        study.planes_ready.cancel()
    return study


def run_inproc(bfile: str) -> dict:
    import threading

    import numpy  # noqa: F401

    marks = {"numpy": time.perf_counter()}
    import gboost.engines  # noqa: F401  (numba, as the CLI's start-up)
    from gboost.numba_cache import start_target

    marks["numba"] = time.perf_counter()
    go = threading.Event()
    t = _gpu_thread(marks, go)
    start_target()
    go.set()
    study = _read(bfile)
    marks["data"] = time.perf_counter()
    t.join()
    marks["snps"] = study.n_snps
    marks["counted_total"] = int(study.counts.sum())
    return marks


def run_fork(bfile: str) -> dict:
    import pickle

    import numpy  # noqa: F401

    marks = {"numpy": time.perf_counter()}
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: read, send, leave without the interpreter's teardown
        os.close(r)
        child = {"c_forked": time.perf_counter()}
        try:
            study = _read(bfile, child)
            # Plain arrays only: unpickling gboost's classes would import their modules, and numba with them.
            v, sm = study.variants, study.samples
            lite = ({f: getattr(v, f) for f in ("chrom", "snp", "cm", "bp", "a1", "a2")},
                    {f: getattr(sm, f) for f in ("fid", "iid", "sex", "status")}, study.counts,
                    vars(study.qc), study.snp_col_width)
            child["c_pickled"] = time.perf_counter()
            data = pickle.dumps((child, lite), protocol=pickle.HIGHEST_PROTOCOL)
        except BaseException as exc:  # noqa: BLE001
            data = pickle.dumps(exc)
        with os.fdopen(w, "wb") as f:
            f.write(data)
        os._exit(0)
    os.close(w)
    t = _gpu_thread(marks, light=True)
    with os.fdopen(r, "rb") as f:
        data = f.read()  # (the read releases the GIL while it waits)
    marks["piped"] = time.perf_counter()
    loaded = pickle.loads(data)
    if isinstance(loaded, BaseException):
        raise loaded
    child, lite = loaded
    marks["data"] = time.perf_counter()
    marks.update(child)  # (the same clock: the child is a fork of this process)
    os.waitpid(pid, 0)
    t.join()
    marks["snps"] = len(lite[2])
    marks["bytes"] = len(data)
    return marks


def _count_child(bfile: str, marks: dict) -> np.ndarray:
    """What a counting process of a split reader would do: the .fam's classes, then every .bed row's
    called genotypes per class in one compiled pass over the whole file (no .bim: a design built on
    this applies the SNP filters to the counts afterwards)."""
    import numpy as np

    from gboost.encode import bed_class_counts, bed_plan

    marks["b_imports"] = time.perf_counter()
    status = np.array([line.split()[5] for line in open(bfile + ".fam")])
    n = len(status)
    case, ctrl = np.flatnonzero(status == "2"), np.flatnonzero(status == "1")
    plan = bed_plan(np.r_[ctrl, case], np.r_[np.zeros(len(ctrl), bool), np.ones(len(case), bool)], n)
    row = (n + 3) // 4
    p = (os.path.getsize(bfile + ".bed") - 3) // row
    step = max(1, (32 << 20) // row)  # the product's READ_BLOCK_BYTES, into one reused buffer
    buf = np.empty((step, row), dtype=np.uint8)
    out, read_s = [], 0.0
    fd = os.open(bfile + ".bed", os.O_RDONLY)
    try:
        for a in range(0, p, step):
            k = min(step, p - a)
            t = time.perf_counter()
            got = os.preadv(fd, [memoryview(buf[:k]).cast("B")], 3 + a * row)
            read_s += time.perf_counter() - t
            assert got == k * row
            out.append(bed_class_counts(buf[:k], np.arange(k), plan)[0])
    finally:
        os.close(fd)
    marks["b_counted"] = time.perf_counter()
    marks["b_read_ms"] = round(read_s * 1000)  # (an int: not a time mark)
    return np.concatenate(out)


def _child(fn, w: int) -> None:
    """Run ``fn(marks)`` in a forked child, send (marks, value) through the pipe end ``w``, leave."""
    import pickle

    marks = {}
    try:
        data = pickle.dumps((marks, fn(marks)), protocol=pickle.HIGHEST_PROTOCOL)
    except BaseException as exc:  # noqa: BLE001
        data = pickle.dumps(exc)
    with os.fdopen(w, "wb") as f:
        f.write(data)
    os._exit(0)


def run_fork2(bfile: str) -> dict:
    """Two children: one parses the .fam/.bim (``open_input``), one counts the .bed; each imports numba
    on its own GIL, beside the other and beside the parent's GPU start."""
    import pickle

    import numpy  # noqa: F401

    marks = {"numpy": time.perf_counter()}
    pipes = []
    for name, fn in (("a", lambda m: _parse_child(bfile, m)), ("b", lambda m: _count_child(bfile, m))):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            _child(fn, w)
        os.close(w)
        pipes.append((name, r, pid))
    t = _gpu_thread(marks, light=True)
    for name, r, pid in pipes:  # (each read releases the GIL while it waits)
        with os.fdopen(r, "rb") as f:
            data = f.read()
        loaded = pickle.loads(data)
        if isinstance(loaded, BaseException):
            raise loaded
        child, value = loaded
        marks.update(child)
        marks[f"{name}_data"] = time.perf_counter()
        os.waitpid(pid, 0)
        if name == "b":
            marks["counted_total"] = int(value.sum())
    marks["data"] = max(marks["a_data"], marks["b_data"])
    t.join()
    return marks


def _parse_child(bfile: str, marks: dict):
    from gboost.inputs import open_input

    marks["a_imports"] = time.perf_counter()
    source = open_input(bfile=bfile)
    marks["a_parsed"] = time.perf_counter()
    v, sm = source.variants, source.samples
    return ({f: getattr(v, f) for f in ("chrom", "snp", "cm", "bp", "a1", "a2")},
            {f: getattr(sm, f) for f in ("fid", "iid", "sex", "status")})


def main() -> None:
    import argparse
    import json
    import subprocess
    import statistics

    ap = argparse.ArgumentParser()
    ap.add_argument("--bfile", required=True)
    ap.add_argument("--mode", default="inproc,fork")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        origin = T0 - _age()
        marks = {"inproc": run_inproc, "fork": run_fork, "fork2": run_fork2}[a.mode](a.bfile)
        print(json.dumps({k: (round(v - origin, 4) if isinstance(v, float) else v) for k, v in marks.items()}))
        sys.stdout.flush()
        os._exit(0)
    modes = a.mode.split(",")
    got: dict = {m: [] for m in modes}
    for k in range(a.runs):
        for m in modes:  # alternating
            out = subprocess.run([sys.executable, __file__, "--bfile", a.bfile, "--mode", m, "--one"],
                                 capture_output=True, text=True, check=True)
            marks = json.loads(out.stdout.strip().splitlines()[-1])
            marks["ready"] = max(marks["data"], marks["gpu"])
            got[m].append(marks)
            print(m, marks, flush=True)
    for m in modes:
        keys = [k for k in got[m][0] if isinstance(got[m][0][k], float)]
        print(m, "medians:", " ".join(f"{k} {statistics.median(r[k] for r in got[m]):.3f}" for k in keys))


if __name__ == "__main__":
    main()
