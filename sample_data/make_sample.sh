#!/usr/bin/env bash
# Makes sample_data/sample.{bed,bim,fam}, the study the app opens on first start. Deterministic:
# the same command gives the same files byte for byte (tests/test_simulate.py checks it).
# Equivalent to `gboost simulate ...` with the same options.
set -euo pipefail
cd "$(dirname "$0")/.."
"${PYTHON:-python3}" -m gboost.cli_simulate \
  --out sample_data/sample --snps 3000 --cases 800 --controls 800 --seed 2024 \
  --missing 0.01 --chromosomes 5 --maf-min 0.05 --maf-max 0.5 --prevalence 0.1 \
  --plant 101:1501:xor:2.5:0.35 \
  --plant 702:2703:xor:3:0.25 \
  --plant 1203:2204:threshold:8:0.25
