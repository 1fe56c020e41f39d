#!/usr/bin/env bash
# Set up gboost on a fresh machine: a virtual environment in .venv with gboost, the desktop app
# and the test tools; PLINK 1.9 (the parity oracle) from Debian/Ubuntu packages when apt exists.
# Idempotent: a second run only checks.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e ".[gui,test,formats]"
# plink2 converts test studies to .pgen/VCF/BGEN for the readers' equality tests (issue 19)
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
