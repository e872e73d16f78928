#!/usr/bin/env bash
# Makes (once) the Debian roots that scripts/gdal-matrix.sh builds and tests
# chunkref in: build/roots/trixie (GDAL 3.10, HDF5 1.14) and build/roots/sid
# (GDAL 3.13). Each takes about 7 minutes and 1.5 GB; an existing root is
# kept (delete its folder to remake it). Needs root and mmdebstrap.
#   scripts/gdal-roots.sh [SUITE...]      (default: trixie sid)
set -euo pipefail
cd "$(dirname "$0")/.."
suites=("$@"); [ ${#suites[@]} -gt 0 ] || suites=(trixie sid)
# What building and the oracle tests need.
core=libgdal-dev,libhdf5-dev,gdal-bin,python3-gdal,python3-numpy,python3-pytest,python3-numcodecs,python3-zarr,python3-h5py,python3-venv,make,cmake,nasm,g++,pkg-config,libclang-dev,clang,libopenjp2-tools,ca-certificates
# The clients checked on an index (terra, stars: the multidimensional
# view's R clients too), and what optional tests and the
# benchmark against GDAL's Zarr driver use (fsspec, netCDF4); installed
# afterwards, each on its own, so that one missing from a suite (unstable
# has transitions) costs only itself.
clients=(python3-rasterio r-cran-terra r-cran-stars python3-qgis python3-fsspec python3-netcdf4)
command -v mmdebstrap >/dev/null || apt-get install -y -qq mmdebstrap
for suite in "${suites[@]}"; do
  root=build/roots/$suite
  if [ ! -e "$root/etc/debian_version" ]; then
    mkdir -p build/roots
    rm -rf "$root"
    echo "== making $root (about 7 minutes)"
    mmdebstrap --variant=apt --include="$core" \
      --aptopt='Acquire::Check-Valid-Until "false"' \
      --aptopt='APT::Install-Recommends "false"' \
      "$suite" "$root"
  fi
  updated=""
  for p in "${clients[@]}"; do
    chroot "$root" dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" && continue
    echo "== $suite: installing $p"
    # mmdebstrap leaves no package lists behind.
    [ -n "$updated" ] || { chroot "$root" apt-get update -qq && updated=1; }
    chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$p" >/dev/null ||
      echo "== $suite: $p could not be installed; its client check is skipped" >&2
  done
done
