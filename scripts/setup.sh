#!/usr/bin/env bash
# Set up gboost on a fresh machine: a virtual environment in .venv with gboost, the desktop app
# and the test tools; where an NVIDIA driver is found, the CuPy wheel for its CUDA major version
# (the GPU engine); PLINK 1.9 (the parity oracle) and the system libraries of the desktop app's
# window (Qt's xcb platform plugin: `gboost doctor` names them) from Debian/Ubuntu packages when
# apt exists;
# then `gboost warm` compiles what a scan compiles (numba, and the CUDA kernels on a GPU), so the
# first scan is as fast as the second (docs/PERFORMANCE.md, "First run after install").
# Idempotent: a second run only checks, and its warm loads everything from the caches.
#
#   bash scripts/setup.sh            set up (PYTHON=python3.12 picks the interpreter)
#   bash scripts/setup.sh --detect   say what it finds and what it would install; change nothing
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
DETECT=0
case "${1:-}" in
  --detect) DETECT=1 ;;
  "") ;;
  *) echo "usage: bash scripts/setup.sh [--detect]" >&2; exit 2 ;;
esac

# The CUDA version the NVIDIA driver supports (MAJOR.MINOR), or nothing without a working driver:
# nvidia-smi's header says "CUDA Version: 13.0"; where it does not, the driver's branch does
# (580 and newer run CUDA 13, 525 and newer CUDA 12).
driver_cuda() {
  command -v nvidia-smi >/dev/null 2>&1 || return 0
  local out v d
  out=$(nvidia-smi 2>/dev/null) || return 0
  v=$(printf '%s\n' "$out" | sed -n 's/.*CUDA Version: *\([0-9][0-9]*\.[0-9][0-9]*\).*/\1/p' | head -n 1)
  if [ -z "$v" ]; then
    d=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n 1 | cut -d. -f1) || true
    case "$d" in
      ''|*[!0-9]*) ;;
      *) if [ "$d" -ge 580 ]; then v=13.0; elif [ "$d" -ge 525 ]; then v=12.0; else v=11.0; fi ;;
    esac
  fi
  echo "$v"
}

# CuPy importable by interpreter $1 and seeing a GPU; then prints its wheel and version.
cupy_works() {
  "$1" - <<'PY' 2>/dev/null
import sys
from importlib import metadata
import cupy
if cupy.cuda.runtime.getDeviceCount() < 1:
    sys.exit(1)
names = [d.metadata["Name"] for d in metadata.distributions() if (d.metadata["Name"] or "").lower().startswith("cupy")]
print(f"{names[0] if names else 'cupy'} {cupy.__version__}")
PY
}

cupy_present() {
  "$1" -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("cupy") is None)' 2>/dev/null
}

CUDA=$(driver_cuda)
EXTRA=""      # the pyproject extra with the CuPy wheel to install
SHARE=""      # a site-packages folder of $PY whose working CuPy the new .venv uses
if [ -x .venv/bin/python ]; then TARGET=.venv/bin/python; else TARGET=$PY; fi
if [ -z "$CUDA" ]; then
  PLAN="no NVIDIA driver found"
else
  GPU=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1) || true
  echo "setup: NVIDIA driver found: $GPU, CUDA $CUDA"
  MAJOR=${CUDA%%.*}
  if HAVE=$(cupy_works "$TARGET"); then
    PLAN="CuPy already works in $TARGET ($HAVE): kept, nothing installed for the GPU"
    if [ "$TARGET" = "$PY" ]; then
      SHARE=$("$PY" -c 'import cupy, os; print(os.path.dirname(os.path.dirname(os.path.abspath(cupy.__file__))))')
      PLAN="$PLAN; .venv will see it"
    fi
  elif cupy_present "$TARGET"; then
    PLAN="a CuPy is installed in $TARGET but sees no GPU: left as it is (pip uninstall it to let setup choose)"
  elif [ "$MAJOR" -ge 13 ]; then
    EXTRA=gpu-cuda13; PLAN="installing cupy-cuda13x (the extra gpu-cuda13)"
  elif [ "$MAJOR" -ge 12 ]; then
    EXTRA=gpu; PLAN="installing cupy-cuda12x (the extra gpu)"
  else
    PLAN="CUDA $CUDA is older than the CuPy wheels gboost uses (CUDA 12 or newer): no CuPy"
  fi
  echo "setup: $PLAN"
fi
if [ "$DETECT" = 1 ]; then
  [ -z "$CUDA" ] && echo "no NVIDIA driver found: gboost will use the CPU engine ($(nproc 2>/dev/null || echo 1) threads)"
  exit 0
fi

if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
  if [ -n "$SHARE" ]; then
    # The image's CuPy (matched to its driver and CUDA libraries) rather than a second copy:
    # its site-packages folder goes on the venv's path after the venv's own packages.
    SITE=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    echo "$SHARE" > "$SITE/gboost-image-cupy.pth"
  fi
fi
.venv/bin/python -m pip install -q --upgrade pip
# formats: the optional readers of .pgen, VCF/BCF and BGEN (pgenlib is LGPL-3, kept optional)
if [ -n "$EXTRA" ]; then
  .venv/bin/python -m pip install -q -e ".[gui,test,formats,$EXTRA]" || {
    echo "setup: could not install the CuPy wheel (extra $EXTRA); installing without it" >&2
    .venv/bin/python -m pip install -q -e ".[gui,test,formats]"
  }
else
  .venv/bin/python -m pip install -q -e ".[gui,test,formats]"
fi
THREADS=$(.venv/bin/python -c 'import numba; print(numba.config.NUMBA_NUM_THREADS)')
if [ -z "$CUDA" ]; then
  echo "no NVIDIA driver found: gboost will use the CPU engine ($THREADS threads)"
elif HAVE=$(cupy_works .venv/bin/python); then
  echo "setup: GPU engine ready ($HAVE); the CPU engine ($THREADS threads) is the fallback"
else
  echo "setup: an NVIDIA driver but no working CuPy in .venv: gboost will use the CPU engine ($THREADS threads);" \
       "see .venv/bin/gboost doctor" >&2
fi

# The desktop app's window on X11 needs system libraries that a fresh Debian/Ubuntu desktop lacks
# (libxcb-icccm4, libxcb-keysyms1, libxcb-cursor0...); gboost doctor finds them (ldd on PySide6's
# xcb platform plugin) and names their packages.
QT_PKGS=$(.venv/bin/python -c 'from gboost.cli.doctor import qt_libraries_section as q; print(" ".join(q().get("packages", [])))' 2>/dev/null) || QT_PKGS=""
if [ -n "$QT_PKGS" ]; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  if command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing the desktop app's system libraries: $QT_PKGS"
    # shellcheck disable=SC2086 # one word per package
    $SUDO apt-get install -y -q $QT_PKGS >/dev/null 2>&1 || { $SUDO apt-get update -q >/dev/null && $SUDO apt-get install -y -q $QT_PKGS >/dev/null; } \
      || echo "setup: could not install $QT_PKGS; the desktop app's window needs them (see gboost doctor)" >&2
  else
    echo "setup: no apt-get; the desktop app's window needs the libraries of $QT_PKGS (see gboost doctor)" >&2
  fi
fi

# plink1.9 is the parity oracle; plink2 converts test studies to .pgen/VCF/BGEN for the readers'
# equality tests
for tool in plink1.9 plink2; do
  if ! command -v $tool >/dev/null 2>&1; then
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
    if command -v apt-get >/dev/null 2>&1; then
      $SUDO apt-get install -y -q $tool >/dev/null 2>&1 || { $SUDO apt-get update -q >/dev/null && $SUDO apt-get install -y -q $tool >/dev/null; } \
        || echo "setup: could not install $tool; the tests that need it will be skipped" >&2
    else
      echo "setup: no apt-get; install $tool yourself for the tests that need it" >&2
    fi
  fi
done

# Compile now what the first scan would compile (seconds here, not on the user's first scan);
# a failure here is reported and leaves a working install (the scan compiles on first use).
.venv/bin/gboost warm || echo "setup: gboost warm failed; the first scan will compile its functions" >&2
