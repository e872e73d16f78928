#!/usr/bin/env bash
# The whole test suite: style gates, Rust unit/integration tests, then the
# end-to-end GDAL oracle tests through the installed plugin.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
rustup component add rustfmt clippy >/dev/null 2>&1 || true
cargo fmt --all -- --check
# Every module imports only from its own layer or those below, and no
# files import each other in a circle (docs/architecture.md).
python3 scripts/check-layers.py
# The shim and the HDF5 driver layout against GDAL 3.10 / 3.13 and libhdf5
# 1.14 / 2.2 headers (about 1 minute); the whole matrix, build and oracle
# tests in Debian 13 and unstable roots, is scripts/gdal-matrix.sh.
scripts/gdal-headers-check.sh
cargo clippy --release --all-targets -- -D warnings
# The engine and the builders without GDAL: built, linted and tested with
# no libgdal linked (docs/architecture.md, "Without GDAL").
scripts/check-without-gdal.sh
# The Python face (python/, a crate over the engine without GDAL).
PYO3_PYTHON=/usr/bin/python3 cargo clippy --release -p chunkref-python -- -D warnings
cargo test --release
gdal_plugin/install.sh build/gdalplugins
export GDAL_DRIVER_PATH=$PWD/build/gdalplugins
/usr/bin/python3 -m pytest -q tests/python
# The wheel: built, repaired, installed into a fresh venv with packages from
# PyPI, and tested there against GDAL and the plugin (docs/python.md).
scripts/test-wheel.sh
# Every fuzz target, 40,000 runs from a fixed seed over its corpus, with ASan.
scripts/fuzz-smoke.sh
