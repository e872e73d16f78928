#!/usr/bin/env bash
# Installs the system packages chunkref needs on Debian 12 (idempotent).
set -euo pipefail
# (Test helpers from PyPI, the peer and the moto S3 server, go into venvs under
# build/, made by tests/python/venvs.py with python3-venv.)
packages=(libgdal-dev libhdf5-dev gdal-bin python3-gdal python3-numpy python3-pytest python3-numcodecs
          python3-zarr python3-venv pkg-config g++ libopenjp2-tools cmake nasm
          python3-rasterio r-cran-terra r-cran-stars python3-scipy python3-pil libeccodes-tools
          libaec-dev hdf5-tools libclang1 libtiff-tools)
# (libclang1: bindgen of libaec-sys, in the manylinux wheel's static build.)
# (libtiff-tools: tiffcp writes the fax TIFFs GDAL cannot: 2-D, fill bits, FillOrder 2.)
# PyQGIS for the headless QGIS test, without its recommends (113 packages
# instead of 194; about 45 s here).
lean_packages=(python3-qgis)
missing=(); lean_missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
for p in "${lean_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || lean_missing+=("$p")
done
if [ $(( ${#missing[@]} + ${#lean_missing[@]} )) -gt 0 ]; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -qq
  [ ${#missing[@]} -eq 0 ] ||
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
  [ ${#lean_missing[@]} -eq 0 ] ||
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${lean_missing[@]}"
fi
# Node.js and npm install Azurite, the Azure Blob Storage server of the az://
# tests (tests/python/cloud_servers.py); the machine's own when it has them.
if ! command -v npm >/dev/null; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq nodejs npm
fi
command -v cargo >/dev/null || { echo "cargo not found: install Rust (https://rustup.rs)" >&2; exit 1; }
