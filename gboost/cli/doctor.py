"""``gboost doctor``: what this install found, in one screen.

The engine that ``--device auto`` would choose and why; the GPU (name, memory, compute
capability), CuPy and the CUDA runtime, driver and NVRTC versions; numba and its threads; the
compile caches and whether ``gboost warm`` filled them (docs/PERFORMANCE.md, "First run after
install"); the optional readers; the system libraries the desktop app's window needs (Qt's xcb
platform plugin: which are missing and the apt-get command that installs them); PLINK on the
PATH. It compiles nothing, imports no Qt and starts no engine, so
it answers in about a second, and it always exits 0: a missing piece is reported, not an error.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

# Readers of other genotype formats, optional: (import name, distribution, what it reads).
OPTIONAL_READERS = (("pgenlib", "Pgenlib", "PLINK 2 .pgen"), ("cyvcf2", "cyvcf2", "VCF/BCF"),
                    ("cbgen", "cbgen", "BGEN"))
PLINKS = ("plink1.9", "plink", "plink2")
# The Debian/Ubuntu package of each shared library Qt's xcb platform plugin (the desktop app's
# window on X11) links to. A fresh desktop install lacks some (libxcb-icccm4 and libxcb-keysyms1
# on Debian 12 and Ubuntu 24.04), and Qt's own error then names the plugin, not the package.
XCB_PACKAGES = {
    "libxcb-cursor.so.0": "libxcb-cursor0", "libxcb-icccm.so.4": "libxcb-icccm4",
    "libxcb-keysyms.so.1": "libxcb-keysyms1", "libxcb-image.so.0": "libxcb-image0",
    "libxcb-render-util.so.0": "libxcb-render-util0", "libxcb-xinerama.so.0": "libxcb-xinerama0",
    "libxcb-xkb.so.1": "libxcb-xkb1", "libxcb-randr.so.0": "libxcb-randr0", "libxcb-shape.so.0": "libxcb-shape0",
    "libxcb-sync.so.1": "libxcb-sync1", "libxcb-xfixes.so.0": "libxcb-xfixes0", "libxcb-shm.so.0": "libxcb-shm0",
    "libxcb-render.so.0": "libxcb-render0", "libxcb-xinput.so.0": "libxcb-xinput0", "libxcb-util.so.1": "libxcb-util1",
    "libxcb.so.1": "libxcb1", "libX11-xcb.so.1": "libx11-xcb1", "libX11.so.6": "libx11-6",
    "libxkbcommon.so.0": "libxkbcommon0", "libxkbcommon-x11.so.0": "libxkbcommon-x11-0",
    "libEGL.so.1": "libegl1", "libGL.so.1": "libgl1", "libOpenGL.so.0": "libopengl0",
    "libfontconfig.so.1": "libfontconfig1", "libfreetype.so.6": "libfreetype6", "libdbus-1.so.3": "libdbus-1-3",
    "libglib-2.0.so.0": "libglib2.0-0", "libgthread-2.0.so.0": "libglib2.0-0",
}
# Loaded by name at run time (not a link-time dependency in every Qt 6), so ldd cannot see it:
# looked up by ctypes.util.find_library as well. Qt 6.5 and newer refuse the xcb plugin without it.
XCB_DLOPENED = (("xcb-cursor", "libxcb-cursor.so.0"),)


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _installed(module: str, dist: str) -> str | None:
    """The installed version ('installed' when the distribution has no metadata), or None."""
    if importlib.util.find_spec(module) is None:
        return None
    return _version(dist) or "installed"


def gpu_section() -> dict:
    """CuPy and the devices it sees; ``usable`` False with ``reason`` when the GPU engine cannot run."""
    from gboost.engines import gpu_available

    out: dict = {"cupy": _cupy_dist(), "driver": _smi_driver()}
    if importlib.util.find_spec("cupy") is None:
        return {**out, "usable": False, "reason": "CuPy is not installed"}
    ok, why = gpu_available()
    out["usable"] = ok
    if not ok:
        out["reason"] = why
        return out
    from gboost.engines.cupy_import import import_cupy

    cupy = import_cupy()

    rt = cupy.cuda.runtime
    out["cupy"] = cupy.__version__
    out["cuda_runtime"] = _cuda_version(rt.runtimeGetVersion())
    out["cuda_driver"] = _cuda_version(rt.driverGetVersion())
    try:
        major, minor = cupy.cuda.nvrtc.getVersion()
        out["nvrtc"] = f"{major}.{minor}"
    except Exception as exc:  # noqa: BLE001 - a missing NVRTC library: the GPU engine cannot build its kernels
        out["nvrtc"] = f"not usable ({type(exc).__name__}: {exc})"
    devices = []
    for d in range(rt.getDeviceCount()):
        props = rt.getDeviceProperties(d)
        name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
        cc = props["major"] * 10 + props["minor"]
        devices.append({"id": d, "name": name, "memory_gib": round(props["totalGlobalMem"] / 2**30, 1),
                        "compute_capability": f"{props['major']}.{props['minor']}",
                        "counting": "tensor-core b1 mma" if cc >= 80 else "CUDA-core popcount"})
    out["devices"] = devices
    return out


def _cuda_version(v: int) -> str:
    return f"{v // 1000}.{v % 1000 // 10}"


def _cupy_dist() -> str | None:
    """Which CuPy wheel is installed (cupy-cuda12x 13.6.0), without importing it."""
    for dist in metadata.distributions():
        name = (dist.metadata["Name"] or "").lower()
        if name == "cupy" or name.startswith("cupy-"):
            return f"{name} {dist.version}"
    return None


def _smi_driver() -> str | None:
    """The NVIDIA driver's version from nvidia-smi, or None without one."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    try:
        r = subprocess.run([smi, "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True,
                           text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = r.stdout.strip().splitlines()
    return lines[0].strip() if r.returncode == 0 and lines else None


def engine_section(gpu: dict) -> dict:
    """What ``--device auto`` chooses, by the rule of gboost.engines.make_engine (without starting it)."""
    import numba

    threads = os.cpu_count() or 1
    if gpu["usable"]:
        devs = gpu["devices"]
        return {"auto": "gpu", "why": f"CuPy sees {len(devs)} GPU(s): {devs[0]['name']}; the CPU engine is the "
                                      "fallback if the GPU engine fails to start",
                "cpu_threads": threads, "numba_threads": numba.config.NUMBA_NUM_THREADS}
    why = gpu.get("reason", "")
    if importlib.util.find_spec("cupy") is None:
        why += " (scripts/setup.sh installs the wheel for the driver's CUDA where it finds a driver)"
    return {"auto": "cpu", "why": why, "cpu_threads": threads, "numba_threads": numba.config.NUMBA_NUM_THREADS}


def _numba_state(folder: str, mark: dict | None) -> dict:
    import numba

    indexes = list(Path(folder).rglob("*.nbi"))  # numba keeps one index a source file, in subfolders
    if mark is None:
        state = "cold: run `gboost warm` (the first scan would compile for ~15 s)" if not indexes else \
            f"{len(indexes)} cached function files; `gboost warm` has not run for this version"
    elif mark.get("numba") != numba.__version__ or mark.get("python") != sys.version.split()[0]:
        state = (f"warmed with numba {mark.get('numba')} / Python {mark.get('python')}, now numba {numba.__version__}"
                 f" / Python {sys.version.split()[0]}: run `gboost warm`")
    elif not indexes:
        state = "warm.json present but the cached functions are gone: run `gboost warm`"
    else:
        state = f"warm ({len(indexes)} cached function files; `gboost warm` at {mark.get('when')})"
    return {"numba_cache": folder, "numba_cache_state": state}


def caches_section(gpu: dict) -> dict:
    """The numba cache folder and the CuPy kernel cache, and what ``gboost warm`` recorded in them."""
    from gboost.runtime.numba_cache import choose
    from gboost.cli.warm import kernel_cache_dir, read_marker

    folder = choose()  # the folder gboost's compiled functions use in this process
    if folder is None:
        mark = None
        out = {"numba_cache": "off", "numba_cache_state": "off: no cache folder could be made private to this user"}
    else:
        mark = read_marker(str(folder))
        out = _numba_state(str(folder), mark)
    kc = kernel_cache_dir()
    n = len(list(Path(kc).glob("*.cubin")))
    out["cupy_kernel_cache"] = kc
    if os.environ.get("CUPY_CACHE_IN_MEMORY", "").strip().lower() in ("1", "true", "yes", "on"):
        out["cupy_kernel_cache_state"] = "CUPY_CACHE_IN_MEMORY is set: every process compiles the CUDA kernels again"
    elif not gpu["usable"]:
        out["cupy_kernel_cache_state"] = f"not used (no usable GPU); {n} compiled modules there"
    else:
        dev = gpu["devices"][0]
        g = (mark or {}).get("gpu") or {}
        same = (g.get("name") == dev["name"] and g.get("cupy") == gpu["cupy"] and g.get("kernel_cache") == kc
                and str(g.get("compute_capability")) == dev["compute_capability"].replace(".", ""))
        if same and n:
            out["cupy_kernel_cache_state"] = f"warm for {dev['name']} ({n} compiled modules)"
        else:
            out["cupy_kernel_cache_state"] = (f"{n} compiled modules; not warmed for {dev['name']} with CuPy "
                                              f"{gpu['cupy']}: run `gboost warm` (the first GPU scan would build them)")
    return out


def readers_section() -> dict:
    out = {"bed-reader (PLINK .bed)": _version("bed-reader") or "not installed"}
    for module, dist, what in OPTIONAL_READERS:
        out[f"{module} ({what})"] = _installed(module, dist) or "not installed"
    out["PySide6 (desktop app)"] = _installed("PySide6", "PySide6-Essentials") or "not installed"
    out["dask (--dask)"] = _installed("distributed", "distributed") or "not installed"
    return out


def _xcb_plugin() -> Path | None:
    """PySide6's xcb platform plugin (found without importing PySide6), or None."""
    spec = importlib.util.find_spec("PySide6")
    if spec is None or not spec.submodule_search_locations:
        return None
    for root in spec.submodule_search_locations:
        plugin = Path(root) / "Qt" / "plugins" / "platforms" / "libqxcb.so"
        if plugin.is_file():
            return plugin
    return None


def missing_from_ldd(text: str) -> list[str]:
    """The libraries ``ldd`` reports "not found", once each, in its order."""
    out: list[str] = []
    for line in text.splitlines():
        name, sep, where = line.strip().partition("=>")
        if sep and where.strip() == "not found" and name.strip() not in out:
            out.append(name.strip())
    return out


def qt_libraries_section(plugin: Path | None = None, ldd_text: str | None = None, find_library=None) -> dict:
    """The system libraries the xcb platform plugin needs that this system lacks, the packages that
    hold them and the command that installs them (``plugin``, ``ldd_text`` and ``find_library``:
    what to look at instead of this system's, for tests)."""
    if find_library is None:
        from ctypes.util import find_library
    if sys.platform != "linux":
        return {"state": f"not checked on {sys.platform} (PySide6's wheels bring what Qt needs there)"}
    if plugin is None:
        if importlib.util.find_spec("PySide6") is None:
            return {"state": "PySide6 not installed (the desktop app: pip install -e '.[gui]')"}
        plugin = _xcb_plugin()
        if plugin is None:
            return {"state": "PySide6 has no xcb platform plugin (Qt/plugins/platforms/libqxcb.so)"}
    missing: list[str] = []
    if ldd_text is None:
        ldd = shutil.which("ldd")
        if ldd is not None:
            try:
                ldd_text = subprocess.run([ldd, str(plugin)], capture_output=True, text=True, timeout=20).stdout
            except (OSError, subprocess.TimeoutExpired):
                ldd_text = None
    if ldd_text is not None:
        missing = missing_from_ldd(ldd_text)
    for name, soname in XCB_DLOPENED:
        if soname not in missing and (ldd_text is None or soname + " =>" not in ldd_text) and find_library(name) is None:
            missing.append(soname)
    out = {"xcb_plugin": str(plugin), "missing": missing,
           "packages": sorted({XCB_PACKAGES[m] for m in missing if m in XCB_PACKAGES})}
    unknown = [m for m in missing if m not in XCB_PACKAGES]
    if not missing:
        out["state"] = "every library of Qt's xcb platform plugin found" + ("" if ldd_text is not None else
                                                                           " (ldd not found: only xcb-cursor checked)")
    else:
        out["state"] = (f"missing {', '.join(missing)}: the window will not open on an X11 desktop"
                        + (f" (install {', '.join(unknown)} by your system's package manager)" if unknown else ""))
        if out["packages"]:
            root = hasattr(os, "geteuid") and os.geteuid() == 0
            out["install"] = ("" if root else "sudo ") + "apt-get install -y " + " ".join(out["packages"])
    return out


def plink_section() -> dict:
    out = {}
    for name in PLINKS:
        path = shutil.which(name)
        if path is None:
            out[name] = "not on PATH"
            continue
        try:
            r = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10)
            first = (r.stdout.strip() or r.stderr.strip()).splitlines()
            out[name] = f"{path} ({first[0].strip()})" if first else path
        except (OSError, subprocess.TimeoutExpired):
            out[name] = f"{path} (does not answer --version)"
    return out


def report() -> dict:
    """Every section of the report, as plain data (``gboost doctor --json`` prints it)."""
    import numba
    import numpy

    import gboost

    gpu = gpu_section()
    return {
        "gboost": {"version": gboost.__version__, "python": f"{sys.version.split()[0]} ({sys.executable})",
                   "numpy": numpy.__version__, "numba": numba.__version__},
        "engine": engine_section(gpu),
        "gpu": gpu,
        "caches": caches_section(gpu),
        "readers": readers_section(),
        "desktop": qt_libraries_section(),
        "plink": plink_section(),
    }


def format_report(rep: dict) -> str:
    lines = []
    e, g = rep["engine"], rep["gpu"]
    lines.append(f"gboost {rep['gboost']['version']}: Python {rep['gboost']['python']}, numpy {rep['gboost']['numpy']},"
                 f" numba {rep['gboost']['numba']}")
    lines.append(f"engine    --device auto uses the {'GPU' if e['auto'] == 'gpu' else 'CPU'} engine: {e['why']}")
    lines.append(f"          CPU engine: {e['cpu_threads']} threads (numba {e['numba_threads']})")
    if g["usable"]:
        lines.append(f"gpu       {g['cupy'] and 'CuPy ' + g['cupy']}; CUDA runtime {g['cuda_runtime']}, driver "
                     f"{g['cuda_driver']} ({g['driver'] or 'nvidia-smi not found'}), NVRTC {g['nvrtc']}")
        for d in g["devices"]:
            lines.append(f"          GPU {d['id']}: {d['name']}, {d['memory_gib']} GiB, compute capability "
                         f"{d['compute_capability']} ({d['counting']} counting)")
    else:
        lines.append(f"gpu       none usable: {g.get('reason', '')}")
        lines.append(f"          CuPy wheel: {g['cupy'] or 'none installed'}; NVIDIA driver: {g['driver'] or 'not found'}")
    c = rep["caches"]
    lines.append(f"caches    numba: {c['numba_cache']}")
    lines.append(f"            {c['numba_cache_state']}")
    lines.append(f"          CUDA kernels (CuPy): {c['cupy_kernel_cache']}")
    lines.append(f"            {c['cupy_kernel_cache_state']}")
    first = True
    for k, v in rep["readers"].items():
        lines.append(f"{'readers' if first else '':10}{k}: {v}")
        first = False
    d = rep["desktop"]
    lines.append(f"desktop   Qt's system libraries: {d['state']}")
    if d.get("install"):
        lines.append(f"          install them with: {d['install']}")
    first = True
    for k, v in rep["plink"].items():
        lines.append(f"{'plink' if first else '':10}{k}: {v}")
        first = False
    return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def run(args) -> int:
    rep = report()
    print(json.dumps(rep, indent=1) if args.json else format_report(rep))
    return 0
