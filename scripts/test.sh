#!/usr/bin/env bash
# Set up and run every test that this machine can run. GPU tests skip with a reason where no
# NVIDIA GPU is visible; GUI tests run offscreen.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export QT_QPA_PLATFORM=offscreen
# A crash (a CI run of 2026-11-26 segfaulted after every test had passed) prints every thread's
# stack, also at the interpreter's exit, where pytest's own handler is no longer installed.
export PYTHONFAULTHANDLER=1
exec .venv/bin/python -m pytest -q -rs "$@"
