#!/usr/bin/env bash
# Installs the ChunkRef plugin where GDAL finds it, stripped of debug
# information (about 12 MB instead of 100 MB).
#
#   gdal_plugin/install.sh [DIR]      copy to DIR/gdal_ChunkRef.so (default: ./build/gdalplugins);
#                                     then: export GDAL_DRIVER_PATH=DIR
#   gdal_plugin/install.sh --system   copy into GDAL's own plugin directory (needs root):
#                                     <libdir>/gdalplugins/<major.minor>/, which GDAL
#                                     searches without GDAL_DRIVER_PATH
#   CHUNKREF_KEEP_DEBUG=1 ...         install unstripped (for perf and gdb)
#
# Builds target/release/libchunkref.so first (a no-op when it is up to
# date: `cargo test` alone may leave an older one behind), unless
# CHUNKREF_LIB names a library built elsewhere. The plugin
# only loads into the GDAL major.minor it was built for (see README.md,
# "Install and troubleshooting").
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -n "${CHUNKREF_LIB:-}" ]; then
  lib=$CHUNKREF_LIB
else
  lib=${CARGO_TARGET_DIR:-target}/release/libchunkref.so
  # shellcheck disable=SC2046  # nothing, or --features bindgen (GDAL > 3.12)
  cargo build --release --lib --quiet $(scripts/cargo-features.sh)
fi
if [ "${1:-}" = "--system" ]; then
  version=$(gdal-config --version | cut -d. -f1,2)
  # GDAL looks in <libdir>/gdalplugins/<major.minor>/ first, then <libdir>/gdalplugins/.
  libdir=$(gdal-config --libs | tr ' ' '\n' | sed -n 's/^-L//p' | head -1)
  [ -n "$libdir" ] || libdir=/usr/lib/$(gcc -print-multiarch)
  dir="$libdir/gdalplugins/$version"
else
  dir=${1:-build/gdalplugins}
fi
mkdir -p "$dir"
# Write a new file and rename it over the old one: a process that has the
# old plugin loaded keeps its copy instead of reading a half-written one.
tmp="$dir/.gdal_ChunkRef.so.$$"
if [ -n "${CHUNKREF_KEEP_DEBUG:-}" ] || ! command -v strip >/dev/null; then
  install -m 0755 "$lib" "$tmp"
else
  strip --strip-unneeded -o "$tmp" "$lib"
  chmod 0755 "$tmp"
fi
mv -f "$tmp" "$dir/gdal_ChunkRef.so"
echo "installed $dir/gdal_ChunkRef.so ($(du -h "$dir/gdal_ChunkRef.so" | cut -f1))"
[ "${1:-}" = "--system" ] || echo "use it with: export GDAL_DRIVER_PATH=$(cd "$dir" && pwd)"
