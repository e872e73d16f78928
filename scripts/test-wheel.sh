#!/usr/bin/env bash
# Builds the wheel (scripts/build-wheel.sh), installs it into a fresh venv
# with its test packages from PyPI by name, and runs tests/wheel there (no
# GDAL in that process; GDAL, the oracle, runs in Debian's python3 with the
# ChunkRef plugin of build/gdalplugins). Arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
# The plugin for pip's rasterio (GDAL 3.10.3 of rasterio 1.4.4) in the wheel
# chunkref-rasterio, chunkref's `rasterio` extra (8 to 10 minutes the first
# time: scripts/build-rasterio-plugin.sh compiles everything with zig).
scripts/build-plugin-wheel.sh 1.4.4
scripts/build-wheel.sh
venv=build/wheel-test-venv
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/pip" install -q --find-links build/wheelhouse "$(ls build/wheelhouse/chunkref-*.whl)[rasterio]" \
  pytest xarray "dask[array,distributed]" rioxarray "rasterio==1.4.4" titiler.core httpx
GDAL_DRIVER_PATH="${GDAL_DRIVER_PATH:-$PWD/build/gdalplugins}" \
  "$venv/bin/python" -m pytest -q tests/wheel "$@"
