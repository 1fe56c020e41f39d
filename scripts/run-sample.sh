#!/usr/bin/env bash
# The main job on the sample study: set up, scan every SNP pair of sample_data/sample with the
# best engine available (GPU if CuPy sees one, else all CPU cores), write results/sample/, and
# open the desktop application on the results when a display is available.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/gboost scan --bfile sample_data/sample --out results/sample --overwrite
echo "--- top pairs (results/sample/pairs.tsv) ---"
head -n 6 results/sample/pairs.tsv | { column -t 2>/dev/null || cat; }
if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ] && [ -z "${GBOOST_NO_GUI:-}" ]; then
  exec .venv/bin/gboost-gui sample_data/sample --run
else
  echo "(no display: skipping the desktop application; run .venv/bin/gboost-gui on a desktop)"
fi
