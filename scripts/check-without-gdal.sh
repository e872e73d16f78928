#!/usr/bin/env bash
# Builds, lints and tests everything below the GDAL driver without the
# `gdal` feature, and checks that no libgdal is linked into the library or
# the command (docs/architecture.md, "Without GDAL"), then rebuilds the
# default library and command. About 3 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo clippy --release --no-default-features --all-targets -- -D warnings
cargo test --release --no-default-features
cargo build --release --no-default-features
for f in target/release/libchunkref.so target/release/chunkref; do
  if ldd "$f" | grep -q libgdal; then
    echo "$f links libgdal in a build without the gdal feature" >&2
    exit 1
  fi
done
echo "without GDAL: built, tested, no libgdal linked"
# Put the default build's library and command back in target/release/.
cargo build --release
