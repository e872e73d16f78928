#!/usr/bin/env bash
# conda-build's build script for gdal_plugin/conda/meta.yaml, run from the
# source tree with $PREFIX set: builds against the prefix's GDAL and
# installs the plugin and the command into the prefix. Also run by
# tests/python/test_conda_prefix.py with PREFIX a directory and
# GDAL_CONFIG the build machine's (no conda there).
set -euo pipefail
: "${PREFIX:?set PREFIX to the environment being built}"
export GDAL_CONFIG=${GDAL_CONFIG:-$PREFIX/bin/gdal-config}
if command -v cargo-bundle-licenses >/dev/null; then
  cargo-bundle-licenses --format yaml --output THIRDPARTY.yml
fi
# shellcheck disable=SC2046  # nothing, or --features bindgen (GDAL > 3.12)
cargo build --release --locked --lib --bin chunkref $(scripts/cargo-features.sh)
gdal_plugin/install.sh "$PREFIX/lib/gdalplugins"
mkdir -p "$PREFIX/bin"
install -m 755 "${CARGO_TARGET_DIR:-target}/release/chunkref" "$PREFIX/bin/chunkref"
