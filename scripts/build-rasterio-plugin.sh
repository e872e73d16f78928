#!/usr/bin/env bash
# Builds the ChunkRef plugin for the libgdal a rasterio wheel from PyPI
# bundles (issue 43), so that `pip install rasterio` reads chunk indexes
# through GDAL_DRIVER_PATH with no Debian GDAL:
#
#   scripts/build-rasterio-plugin.sh [RASTERIO_VERSION]     (default 1.4.4: GDAL 3.10.3)
#
# 1. downloads the rasterio wheel by name and takes its libgdal
#    (rasterio.libs/libgdal-<hash>.so.<abi>.<version>);
# 2. takes the headers of that GDAL major.minor from a Debian suite
#    (scripts/gdal-headers-check.sh: 3.10 is Debian 13's);
# 3. builds the plugin against those headers (the shim, and gdal-sys's
#    prebuilt bindings of that minor), linked to the wheel's library: its
#    DT_NEEDED is the wheel's soname, which rasterio has loaded already;
# 4. checks the result with readelf: the libraries it needs and the
#    newest glibc and libstdc++ symbol versions it uses.
#
# Output: build/rasterio-plugins/gdalplugins/<GDAL major.minor>/gdal_ChunkRef.so
# (scripts/build-wheel.sh puts that tree into the wheel, for chunkref.gdal).
# The build has a target directory of its own (build/target-gdal<minor>):
# the first build compiles every dependency again (about 6 minutes here).
set -euo pipefail
cd "$(dirname "$0")/.."
rasterio=${1:-1.4.4}
work=$PWD/build/rasterio-plugins/$rasterio
mkdir -p "$work/wheel" "$work/lib"
if ! ls "$work"/wheel/rasterio-*.whl >/dev/null 2>&1; then
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.11 \
    --platform manylinux_2_28_x86_64 "rasterio==$rasterio" -d "$work/wheel"
fi
(cd "$work/wheel" && unzip -q -o rasterio-*.whl 'rasterio.libs/*')
libgdal=$(ls "$work"/wheel/rasterio.libs/libgdal-*.so.*)
soname=$(readelf -d "$libgdal" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
version=$(echo "$soname" | sed "s/.*\.so\.[0-9]*\.//")   # libgdal-c8c9c467.so.36.3.10.3 -> 3.10.3
minor=${version%.*}
case $minor in
  3.10) suite=trixie ;;
  *) echo "no Debian suite with GDAL $minor headers known here (rasterio $rasterio bundles GDAL $version)" >&2
     exit 1 ;;
esac
scripts/gdal-headers-check.sh "$suite" >/dev/null
headers=$PWD/build/headers/$suite/usr/include/gdal
grep -q "GDAL_RELEASE_NAME *\"$version\"" "$headers/gdal_version.h" ||
  echo "note: Debian $suite's headers are GDAL $(sed -n 's/.*GDAL_RELEASE_NAME *"\(.*\)"/\1/p' "$headers/gdal_version.h"), the wheel's $version" >&2
# Link name -lgdal -> the wheel's library (its soname is what gets recorded).
ln -sf "$libgdal" "$work/lib/libgdal.so"
cat >"$work/gdal-config" <<CONFIG
#!/bin/sh
case "\$1" in
  --cflags) echo "-I$headers" ;;
  --libs) echo "-L$work/lib -lgdal" ;;
  --version) echo "$version" ;;
esac
CONFIG
chmod +x "$work/gdal-config"
export CARGO_TARGET_DIR=$PWD/build/target-gdal$minor
GDAL_CONFIG=$work/gdal-config GDAL_VERSION=$version GDAL_INCLUDE_DIR=$headers \
  GDAL_LIB_DIR=$work/lib GDAL_DYNAMIC=1 cargo build --release --lib
plugin=$PWD/build/rasterio-plugins/gdalplugins/$minor/gdal_ChunkRef.so
mkdir -p "$(dirname "$plugin")"
strip -o "$plugin" "$CARGO_TARGET_DIR/release/libchunkref.so"
echo "plugin for rasterio $rasterio (GDAL $version): $plugin"
echo "needs: $(readelf -d "$plugin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')"
echo "newest glibc symbol: $(objdump -T "$plugin" | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)," \
     "newest libstdc++: $(objdump -T "$plugin" | grep -o 'GLIBCXX_[0-9.]*' | sort -uV | tail -1)"
readelf -d "$plugin" | grep -q "NEEDED.*\[$soname\]" ||
  { echo "the plugin does not link $soname" >&2; exit 1; }
