#!/usr/bin/env bash
# Prints the cargo arguments this machine's GDAL needs: `--features bindgen`
# when it is newer than the GDAL bindings gdal-sys ships (3.12; build.rs says
# the same when a build lacks it), else nothing. Used by the scripts that
# build:  cargo build --release $(scripts/cargo-features.sh)
set -euo pipefail
version=$("${GDAL_CONFIG:-gdal-config}" --version 2>/dev/null || pkg-config --modversion gdal)
major=${version%%.*} rest=${version#*.}
minor=${rest%%.*}
if [ "$major" -gt 3 ] || { [ "$major" -eq 3 ] && [ "$minor" -gt 12 ]; }; then
  echo "--features bindgen"
fi
