#!/usr/bin/env bash
# Set up and run every test that this machine can run. GPU tests skip with a reason where no
# NVIDIA GPU is visible; GUI tests run offscreen.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export QT_QPA_PLATFORM=offscreen
exec .venv/bin/python -m pytest -q -rs "$@"
