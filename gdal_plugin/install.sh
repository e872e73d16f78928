#!/usr/bin/env bash
# Installs the ChunkRef plugin where GDAL finds it.
#
#   gdal_plugin/install.sh [DIR]      copy to DIR/gdal_ChunkRef.so (default: ./build/gdalplugins);
#                                     then: export GDAL_DRIVER_PATH=DIR
#   gdal_plugin/install.sh --system   copy into GDAL's own plugin directory (needs root)
#
# Builds target/release/libchunkref.so first if it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
lib=target/release/libchunkref.so
[ -f "$lib" ] || cargo build --release
if [ "${1:-}" = "--system" ]; then
  version=$(gdal-config --version | cut -d. -f1,2)
  # GDAL looks in <libdir>/gdalplugins/<major.minor>/ first, then <libdir>/gdalplugins/.
  libdir=$(gdal-config --libs | tr ' ' '\n' | sed -n 's/^-L//p' | head -1)
  [ -n "$libdir" ] || libdir=/usr/lib/$(gcc -print-multiarch)
  base="$libdir/gdalplugins"
  dir="$base/$version"
else
  dir=${1:-build/gdalplugins}
fi
mkdir -p "$dir"
install -m 0755 "$lib" "$dir/gdal_ChunkRef.so"
echo "installed $dir/gdal_ChunkRef.so"
[ "${1:-}" = "--system" ] || echo "use it with: export GDAL_DRIVER_PATH=$(cd "$dir" && pwd)"
