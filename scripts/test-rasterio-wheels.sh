#!/usr/bin/env bash
# The ChunkRef plugin in every rasterio wheel it is built for (issue 43):
# builds the wheel chunkref-rasterio with the plugins of every
# RASTERIO_VERSION (scripts/build-plugin-wheel.sh); for each, makes a fresh
# venv with that rasterio from PyPI, `chunkref[rasterio]` (build/wheelhouse,
# scripts/build-wheel.sh), rioxarray, dask and TiTiler, and runs
# tests/wheel/test_rasterio_wheel.py there.
#
#   scripts/test-rasterio-wheels.sh [RASTERIO_VERSION...]    (default: 1.4.4 1.5.2)
#
# rasterio 1.5 has wheels for Python >= 3.12 only: its venv is made with a
# python3.12 or python3.13 on PATH or under pyenv (Debian 12 has 3.11; the
# test command runs 1.4.4 alone, in scripts/test-wheel.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
versions=("$@"); [ ${#versions[@]} -gt 0 ] || versions=(1.4.4 1.5.2)
python_for() {
  case $1 in
    1.4.*) echo python3 ;;
    *) for p in python3.12 python3.13 "$HOME"/.pyenv/versions/3.1[23]*/bin/python3; do
         if command -v "$p" >/dev/null && "$p" -c "import venv, ensurepip" 2>/dev/null; then
           echo "$p"; return
         fi
       done
       echo "rasterio $1 needs Python >= 3.12, and none was found" >&2; return 1 ;;
  esac
}
ls build/wheelhouse/chunkref-*.whl >/dev/null || scripts/build-wheel.sh
scripts/build-plugin-wheel.sh "${versions[@]}"
for v in "${versions[@]}"; do
  python=$(python_for "$v")
  venv=build/rasterio-$v-venv
  rm -rf "$venv"
  "$python" -m venv "$venv"
  "$venv/bin/pip" install -q --find-links build/wheelhouse \
    "$(ls build/wheelhouse/chunkref-*.whl)[rasterio]" "rasterio==$v" pytest rioxarray \
    "dask[array,distributed]" titiler.core httpx
  echo "== rasterio $v ($("$venv/bin/python" -c 'import rasterio; print("GDAL", rasterio.__gdal_version__)'), $("$venv/bin/python" --version))"
  "$venv/bin/python" -m pytest -q tests/wheel/test_rasterio_wheel.py
done
