"""``gboost warm``: build every compile cache a scan uses, so that a user's first scan compiles nothing.

A scan compiles about twenty numba functions (many seconds on a fresh install; they then load from
gboost's cache folder, gboost/runtime/numba_cache.py) and, on a GPU, the NVRTC modules of the GPU engine
(then kept in CuPy's kernel cache, ``$CUPY_CACHE_DIR`` or ``~/.cupy/kernel_cache``). Both caches
are keyed by what was compiled (gboost's sources; the CUDA source, options, architecture and
NVRTC version), so a warm install never recompiles until something changes (docs/PERFORMANCE.md,
"First run after install").

Warming runs the real command, in this process, on small generated studies in a temporary
folder: every path a scan takes (QC filters, the 2-df and the allelic marginal test, the
calibration, the exact tests, the output writers, ``--part`` and ``merge``) on the CPU engine
and, where CuPy sees a GPU, on the GPU engine. Calling the jitted functions one by one with
hand-written signatures would miss any signature that the pipeline's arrays take in practice.
scripts/setup.sh runs it; ``python -m gboost.cli.warm`` does the same.

The result is recorded in ``warm.json`` in the numba cache folder, which ``gboost doctor`` reads.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

MARKER = "warm.json"


@dataclass
class WarmResult:
    """What one ``gboost warm`` did: functions compiled, NVRTC modules built, the GPU warmed."""

    seconds: float
    numba_compiled: list[str]
    nvrtc_compiled: int | None
    gpu: dict | None  # name, compute capability, CuPy version, kernel cache folder; None: no GPU
    gpu_skipped: str | None  # why the GPU engine was not warmed
    numba: str = ""
    python: str = ""
    when: str = ""
    runs: list[str] = field(default_factory=list)

    def summary(self) -> str:
        n = len(self.numba_compiled)
        what = f"{n} numba function{'s' if n != 1 else ''} compiled" if n else "numba functions all loaded from the cache"
        if self.gpu is not None:
            k = self.nvrtc_compiled or 0
            what += (f"; {k} NVRTC module{'s' if k != 1 else ''} built for {self.gpu['name']}" if k
                     else f"; NVRTC modules for {self.gpu['name']} all loaded from CuPy's cache")
        elif self.gpu_skipped:
            what += f"; GPU engine not warmed: {self.gpu_skipped}"
        return f"gboost warm: {what} ({self.seconds:.1f} s)"


def _write_studies(folder: Path, wide: bool = True) -> tuple[str, str, str, tuple[str, ...], tuple[str, str, str]]:
    """Small studies: a .bed with missing calls on two chromosomes, a planted pair (so pairs
    survive the screen and get exact tests and output rows) and a few samples of unknown sex (so
    PLINK's founders are not the scanned samples: their counts are made in the counting pass), a .bed without missing calls and an
    odd sample count, a BOOST text matrix (text inputs reach the encoder as int8 genotypes, a .bed
    as its own bytes: two signatures), and three wide .beds of few SNPs, one for each other build
    of the tensor-core kernels (gboost/engines/gpu/counting.py, MmaCounting.build; each is an NVRTC
    compile of seconds that the first scan of such a study would otherwise wait for): 20,000 samples
    (from ~12.8k the float32 pre-screen has no room for its table and takes its brackets by shares),
    80,000 (from 2^16 the float64 build) and 140,000 with 70,000 a class (a class of 2^16 or more:
    16 row SNPs a warp, MmaConfig.for_classes), the widths of biobanks. ``wide``: False where no GPU
    is warmed (the CPU engine has no other code for them, and writing them is not free). Then the
    quantitative trait scan's (PLINK's linear test: another engine, other statistics and writers,
    CPU and GPU): a study with missing calls and one without, and a covariate file for the adjusted
    scan, and where a GPU is warmed a wider one (1,100 SNPs) whose tiles take every width class of
    the GPU engine's row reductions (below)."""
    import numpy as np

    from gboost.data.simulate import PlantedPair, simulate_study

    a = str(folder / "a")
    simulate_study(240, 101, 99, seed=19, chromosomes=2, missing_rate=0.02, unknown_sex=0.02,
                   planted=[PlantedPair(3, 200, "threshold", 8.0)]).write(a)
    b = str(folder / "b")
    sim = simulate_study(150, 70, 61, seed=24, chromosomes=1, missing_rate=0.0)
    sim.write(b)
    m = folder / "m.txt"
    label = (sim.samples.status == 2).astype(np.int8)
    m.write_text("\n".join(" ".join(map(str, row)) for row in np.column_stack([label, sim.genotypes.T])) + "\n")
    widths = (("w", (10_000, 10_000)), ("w80k", (40_000, 40_000)), ("w140k", (70_000, 70_000))) if wide else ()
    for name, (n_case, n_ctrl) in widths:
        simulate_study(12, n_case, n_ctrl, seed=21, chromosomes=1, missing_rate=0.01).write(str(folder / name))
    from gboost.data.simulate import simulate_qt_study

    q, q0 = str(folder / "q"), str(folder / "q0")
    simulate_qt_study(90, 150, seed=19, missing_rate=0.02, effects=[(3, 60, 0.7)]).write(q)
    simulate_qt_study(40, 77, seed=24, missing_rate=0.0).write(q0)
    if wide:
        simulate_qt_study(1100, 40, seed=27, missing_rate=0.01).write(str(folder / "qw"))
    cov = folder / "cov.txt"
    cov.write_text("FID IID c1\n" + "".join(f"{r.split()[0]} {r.split()[1]} {k % 9}\n"
                                           for k, r in enumerate(open(q + ".fam"))))
    # candidate sets of q (q.set: two sets; q.one.set the first, for set-by-all): a quantitative
    # trait's set scan screens its rectangle's tiles with kernels of their own (gboost/engines/qt_cpu.py;
    # a case-control one runs the triangle's, tests/cli/test_warm.py)
    snps = [line.split()[1] for line in open(q + ".bim")]
    Path(q + ".set").write_text(f"S1\n{' '.join(snps[:12:2])}\nEND\nS2\n{' '.join(snps[5:40:3])}\nEND\n")
    Path(q + ".one.set").write_text(f"S1\n{' '.join(snps[:12:2])}\nEND\n")
    return a, b, str(m), tuple(str(folder / name) for name, _ in widths), (q, q0, str(cov))


def _scan_commands(a: str, b: str, m: str, wide: tuple[str, ...], qt: tuple[str, str, str], out: Path,
                   device: str) -> list[list[str]]:
    common = ["--device", device, "--quiet", "--epi1", "1e-2", "--overwrite"]
    o = lambda name: ["--out", str(out / f"{device}-{name}")]  # noqa: E731
    qc = ["--maf", "0.01", "--geno", "0.5", "--mind", "0.5", "--hwe", "1e-8"]
    cmds = [
        ["scan", "--bfile", a, *common, *o("qc"), *qc, "--max-r2", "0.9", "--min-distance", "1"],
        ["scan", "--bfile", b, *common, *o("plain")],
        # SNPs left out of a block (--chr here, any filter elsewhere) give the encoder a copy of
        # the block's bytes, not the file's read-only map: another signature.
        ["scan", "--bfile", a, *common, *o("chr"), "--chr", "2"],
        ["scan", "--bfile", a, *common, *o("allelic"), "--allelic", "--calibration-pairs", "100"],
        ["scan", "--boost-matrix", m, *common, *o("matrix"), *qc],
        # --perm: the planes re-encoded for permuted labels, pairs.tsv's EMP2 column
        ["scan", "--bfile", b, *common, *o("perm"), "--perm", "2", "--calibration-pairs", "0"],
    ]
    if device == "gpu":  # the wide studies' kernels are other builds (on the CPU, no other code)
        cmds += [["scan", "--bfile", w, *common, *o(f"wide{k}")] for k, w in enumerate(wide)]
    if device == "cpu":  # --part and merge run the same engine code on either device
        cmds += [["scan", "--bfile", a, *common, *o("part1"), "--part", "1/2"],
                 ["scan", "--bfile", a, *common, *o("part2"), "--part", "2/2"],
                 ["merge", str(out / "cpu-part1"), str(out / "cpu-part2"), "--out", str(out / "merged"), "--quiet"]]
    # The quantitative trait scan (its default --epi1, every pair with --epi1 1, the genotypic
    # F-test, several tiles of the GPU engine, a part, candidate sets) on both devices; the
    # covariate-adjusted scan (every pair adjusted, the CPU engine only; also of sets) once, on the CPU.
    q, q0, cov = qt
    qt_common = ["--device", device, "--quiet", "--overwrite"]
    cmds += [["scan", "--bfile", q, *qt_common, *o("qt")],
             ["scan", "--bfile", q, *qt_common, *o("qt-every"), "--epi1", "1", "--genotypic"],
             ["scan", "--bfile", q0, *qt_common, *o("qt-plain"), "--epi1", "0.05"],
             ["scan", "--bfile", q, *qt_common, *o("qt-part1"), "--part", "1/2"],
             ["scan", "--bfile", q, *qt_common, *o("qt-part2"), "--part", "2/2"],
             ["merge", str(out / f"{device}-qt-part1"), str(out / f"{device}-qt-part2"), "--out",
              str(out / f"{device}-qt-merged"), "--quiet"],
             ["scan", "--bfile", q, *qt_common, *o("qt-set-by-all"), "--set", q + ".one.set", "--set-by-all"],
             ["scan", "--bfile", q, *qt_common, *o("qt-set-by-set"), "--set", q + ".set", "--set-by-set",
              "--epi1", "1"]]
    if device == "gpu":
        # The QT engine's tile screen sums and maxes each tile along its rows on the device: CuPy
        # builds such a reduction per power-of-two class of the row length (its CUB block of 32 to
        # 512 threads, four items a thread), so a study whose tiles are 130 SNPs wide built a module
        # that warm's 90-SNP study never needed. Tiles of 100, 200, 300, 400, 800 and 1,100 SNPs
        # take every class (up to 128, 256, 512, 1,024 and beyond).
        qw = str(Path(q).with_name("qw"))
        cmds += [["scan", "--bfile", qw, *qt_common, *o(f"qt-tile{t}"), *(["--tile", str(t)] if t else [])]
                 for t in (100, 200, 400, 800, 0)]
    if device == "cpu":
        cmds += [["scan", "--bfile", q, *qt_common, *o("qt-covar"), "--epi1", "0.05", "--covar", cov],
                 ["scan", "--bfile", q, *qt_common, *o("qt-covar-every"), "--epi1", "1", "--covar", cov],
                 ["scan", "--bfile", q, *qt_common, *o("qt-covar-set"), "--epi1", "0.05", "--covar", cov,
                  "--set", q + ".set", "--set-by-set"]]
    return cmds


def _gpu_state() -> tuple[dict | None, str | None]:
    """(the GPU to warm, None) or (None, why not)."""
    import importlib.util

    from gboost.engines import gpu_available

    if importlib.util.find_spec("cupy") is None:
        return None, "CuPy is not installed"
    ok, why = gpu_available()
    if not ok:
        return None, why
    from gboost.engines.cupy_import import import_cupy

    cupy = import_cupy()

    dev = cupy.cuda.Device(0)
    props = cupy.cuda.runtime.getDeviceProperties(0)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    return {"name": name, "compute_capability": str(dev.compute_capability), "cupy": cupy.__version__,
            "kernel_cache": kernel_cache_dir()}, None


def kernel_cache_dir() -> str:
    """The folder where CuPy keeps compiled CUDA modules (without importing CuPy where it can)."""
    if "cupy" in sys.modules:
        try:
            from cupy.cuda import compiler

            return str(compiler.get_cache_dir())
        except Exception:  # noqa: BLE001 - fall back on CuPy's documented default below
            pass
    return os.environ.get("CUPY_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cupy", "kernel_cache")


def warm(device: str = "auto", *, log=None, command) -> WarmResult:
    """Run the scans described in the module docstring; returns what they compiled.

    ``command``: runs one command line (argv without the program name) as ``gboost`` does and
    returns its exit status; the command line hands over its own ``main``, so that this module,
    one of its subcommands, does not import it back.

    ``device``: 'auto' warms the CPU engine and, when CuPy sees a GPU, the GPU engine; 'cpu' the
    CPU engine only; 'gpu' both, and fails when no GPU can be used. Raises RuntimeError when a
    warming scan fails (nothing the user has is touched: everything is in a temporary folder).
    """
    import numba

    import gboost
    from gboost.runtime import numba_cache
    from gboost.runtime.compile_watch import CompileWatch

    t0 = time.perf_counter()
    _compile_bytecode(Path(gboost.__file__).parent)
    for folder in _dependency_folders():
        _compile_bytecode(folder)
    gpu, skipped = (None, "--device cpu") if device == "cpu" else _gpu_state()
    if device == "gpu" and gpu is None:
        raise RuntimeError(f"--device gpu: {skipped}")
    devices = ["cpu"] + (["gpu"] if gpu is not None else [])
    runs = []
    with tempfile.TemporaryDirectory(prefix="gboost-warm-") as tmp, CompileWatch(watch_cupy=gpu is not None) as watch:
        studies = _write_studies(Path(tmp), wide=gpu is not None)
        for dev in devices:
            for cmd in _scan_commands(*studies, Path(tmp), dev):
                shown = " ".join(c.replace(tmp, "$TMP") for c in cmd)
                err = io.StringIO()
                try:
                    with contextlib.redirect_stderr(err):
                        rc = command(cmd)
                    failure = None if rc == 0 else f"exit {rc}: {err.getvalue().strip()}"
                except Exception as exc:  # noqa: BLE001 - a driver or NVRTC failure of the GPU engine, say
                    failure = f"{type(exc).__name__}: {exc}"
                if failure is not None:
                    if dev == "gpu" and device == "auto":
                        # The CPU engine is warm and --device auto falls back to it: say why, go on.
                        gpu, skipped = None, f"the GPU scan `gboost {shown}` failed ({failure})"
                        break
                    raise RuntimeError(f"warming scan `gboost {shown}` failed ({failure})")
                runs.append(shown)
                if log:
                    log(f"  gboost {shown}: done ({time.perf_counter() - t0:.1f} s)")
        _warm_readers()
        _warm_writers()
    result = WarmResult(seconds=time.perf_counter() - t0, numba_compiled=sorted(set(watch.numba)),
                        nvrtc_compiled=watch.nvrtc, gpu=gpu, gpu_skipped=skipped, numba=numba.__version__,
                        python=sys.version.split()[0], when=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                        runs=runs)
    folder = numba_cache.choose()
    if folder is not None:  # None: numba's cache is off for this run (gboost/runtime/numba_cache.py)
        _record(folder, result)
    return result


def _warm_readers() -> None:
    """The compiled helpers of the .pgen, VCF and BGEN readers (gboost/readers/streamed.py, vcf.py, bgen.py), which
    the .bed and text studies above never reach: without it a user's first .pgen compiled it, in
    the GUI on the loading thread, and the first CI run of 2026-11-26 aborted in a GUI test while a
    worker thread compiled a parallel function of this kind. Called directly, so no optional
    reader package is needed; the signature is the readers' (int8 block, intp index)."""
    import numpy as np

    from gboost.readers.streamed import gather_columns

    gather_columns(np.zeros((2, 3), dtype=np.int8), np.array([2, 0], dtype=np.intp))
    # The VCF and BGEN readers' call decoders, with the types cyvcf2 and the BGEN reader hand them
    # (int16 allele arrays; float64 probabilities): a later CI run segfaulted in the GUI while the
    # loading thread compiled the VCF one and the main thread collected garbage.
    from gboost.readers.bgen import _hard_calls
    from gboost.readers.vcf import _alt_counts

    _alt_counts(np.zeros((2, 3), dtype=np.int16), np.empty(2, dtype=np.int8))
    _hard_calls(np.zeros((2, 3), dtype=np.float64), np.full(2, 2, dtype=np.uint8), np.zeros(2, dtype=bool),
                False, False, 0, np.empty(2, dtype=np.int8))


def _warm_writers() -> None:
    """pairs.tsv's splice of q values into rows formatted beside the screen (gboost/readers/fastnum.py
    splice_q), which only a screen with background host work reaches (a GPU or Dask engine): the
    CPU scans above never do, so a first --dask scan on a CPU-only install compiled it."""
    import numpy as np

    from gboost.readers.fastnum import pair_texts, pairs_rows_array, ragged, splice_q

    texts = pair_texts(ragged(["1", "2"]), ragged(["a", "b"]), np.array([5, 9], dtype=np.int64))
    floats = [(np.ones(1), 10, None)] * 3 + [(np.ones(1), 4, "NA")]
    holed = pairs_rows_array(np.array([0]), np.array([1]), texts, np.array([4]), floats, holed=True)
    splice_q(np.array([0], dtype=np.int64), holed, np.array([0.5]))


def _compile_bytecode(package: Path) -> None:
    """gboost's own modules compiled to bytecode (__pycache__). Python writes it on first import,
    except where PYTHONDONTWRITEBYTECODE is set (container images often set it; the GPU device
    here does): there every command compiled its ~200 modules from source, a visible part of its
    start-up (bench/bench_start.py's first steps). compileall writes the files
    regardless, and imports read them. An unwritable install is left as it is."""
    import compileall

    try:
        compileall.compile_dir(str(package), quiet=2, workers=1)
    except OSError:
        pass


# The packages every scan imports before its first tile. Where they were installed without bytecode
# (``pip install --no-compile``, as many container images are built) and Python may not write it
# (PYTHONDONTWRITEBYTECODE), each command compiled them from source: NumPy's hundreds of modules alone
# are a visible part of the command's start (bench/bench_start.py's "numpy imported").
_SCAN_IMPORTS = ("numpy", "numba", "llvmlite", "cupy", "cupy_backends", "fastrlock")


def _dependency_folders() -> list[Path]:
    """The installed folders of ``_SCAN_IMPORTS`` (found without importing them) that we may write
    to; compileall then adds missing or stale bytecode only (Python's own cache files)."""
    import importlib.util

    out = []
    for name in _SCAN_IMPORTS:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is None or not spec.origin or not spec.submodule_search_locations:
            continue
        folder = Path(spec.origin).parent
        if os.access(folder, os.W_OK):
            out.append(folder)
    return out


def _record(folder: Path, result: WarmResult) -> None:
    tmp = folder / (MARKER + ".tmp")
    tmp.write_text(json.dumps(asdict(result), indent=1) + "\n")
    os.replace(tmp, folder / MARKER)  # never a half-written marker


def read_marker(folder: str | os.PathLike) -> dict | None:
    """The last ``gboost warm`` recorded in ``folder`` (the numba cache folder), or None."""
    try:
        return json.loads((Path(folder) / MARKER).read_text())
    except (OSError, ValueError):
        return None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--device", choices=("auto", "cpu", "gpu"), default="auto",
                        help="auto: the CPU engine, and the GPU engine when CuPy sees a GPU (default); "
                             "cpu: the CPU engine only; gpu: both, failing without a usable GPU")
    parser.add_argument("--verbose", action="store_true", help="a line per warming scan, and the functions compiled")


def run(args) -> int:
    from gboost.errors import InputError

    log = (lambda m: print(m, file=sys.stderr)) if args.verbose else None
    try:
        result = warm(args.device, log=log, command=args.run_command)
    except RuntimeError as exc:
        raise InputError(None, str(exc)) from None
    print(result.summary())
    if args.verbose and result.numba_compiled:
        print("compiled: " + ", ".join(result.numba_compiled))
    return 0


if __name__ == "__main__":
    from gboost.cli import main as _main
    from gboost.runtime.process import prepare_process

    prepare_process()  # a command as `gboost warm` is (gboost/runtime/process.py)
    sys.exit(_main(["warm", *sys.argv[1:]]))
