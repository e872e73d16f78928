#!/usr/bin/env bash
# Builds the ChunkRef plugin for the libgdal a rasterio wheel from PyPI
# bundles (issue 43), so that `pip install rasterio` reads chunk indexes
# through GDAL_DRIVER_PATH with no Debian GDAL:
#
#   scripts/build-rasterio-plugin.sh [RASTERIO_VERSION]     (default 1.4.4: GDAL 3.10.3;
#                                                            1.5.2: GDAL 3.12.2)
#
# 1. downloads the rasterio wheel by name and takes its libgdal
#    (rasterio.libs/libgdal-<hash>.so.<abi>.<version>);
# 2. takes the headers of that GDAL major.minor: 3.10's from Debian 13
#    (scripts/gdal-headers-check.sh), 3.12's from the GDAL source of the
#    crate gdal-src;
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
  # pip from a venv (Debian's python3 has no pip module); build-wheel.sh's.
  venv=build/wheel-venv
  [ -x "$venv/bin/pip" ] || { rm -rf "$venv"; python3 -m venv "$venv"; }
  "$venv/bin/pip" download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --platform manylinux_2_28_x86_64 "rasterio==$rasterio" -d "$work/wheel"
fi
python3 -m zipfile -e "$(ls "$work"/wheel/rasterio-*.whl | head -1)" "$work/wheel/unpacked"
libgdal=$(ls "$work"/wheel/unpacked/rasterio.libs/libgdal-*.so.*)
soname=$(readelf -d "$libgdal" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
version=$(echo "$soname" | sed "s/.*\.so\.[0-9]*\.//")   # libgdal-c8c9c467.so.36.3.10.3 -> 3.10.3
minor=${version%.*}
case $minor in
  3.10)
    # Debian 13's libgdal-dev.
    scripts/gdal-headers-check.sh trixie >/dev/null
    headers=$PWD/build/headers/trixie/usr/include/gdal ;;
  3.12)
    # The GDAL source the crate gdal-src carries (3.12.1): its public headers
    # gathered as `make install` would, gdal_version.h from its template,
    # and the generated cpl_config.h (platform checks only) of Debian 13.
    scripts/gdal-headers-check.sh trixie >/dev/null
    headers=$PWD/build/headers/gdal-src-3.12/include
    if [ ! -e "$headers/gdal_version.h" ]; then
      fetch=build/headers/gdal-src-3.12/fetch
      mkdir -p "$fetch/src" "$headers"
      [ -e "$fetch/Cargo.toml" ] || printf '[package]\nname = "fetch"\nversion = "0.0.0"\nedition = "2021"\n[workspace]\n[dependencies]\ngdal-src = "=0.3.0"\n' >"$fetch/Cargo.toml"
      touch "$fetch/src/lib.rs"
      cargo fetch --manifest-path "$fetch/Cargo.toml" -q
      src=$(cargo metadata --manifest-path "$fetch/Cargo.toml" --format-version 1 |
        python3 -c 'import json,sys; print(next(p["manifest_path"] for p in json.load(sys.stdin)["packages"] if p["name"] == "gdal-src"))')
      src=$(dirname "$src")/source
      for d in gcore port alg ogr ogr/ogrsf_frmts apps; do cp "$src/$d"/*.h "$headers/"; done
      cp "$src/gcore/gdal_version.h.in" "$headers/gdal_version.h"
      cp build/headers/trixie/usr/include/gdal/cpl_config.h "$headers/"
    fi ;;
  *) echo "no GDAL $minor headers known here (rasterio $rasterio bundles GDAL $version): 3.10 and 3.12 are" >&2
     exit 1 ;;
esac
# Build against the headers' own patch release (same major.minor: same ABI).
headers_version=$(sed -n 's/.*GDAL_RELEASE_NAME *"\(.*\)"/\1/p' "$headers/gdal_version.h")
[ "$headers_version" = "$version" ] ||
  echo "note: headers of GDAL $headers_version for the wheel's GDAL $version" >&2
# Link name -lgdal -> the wheel's library (its soname is what gets recorded).
ln -sf "$libgdal" "$work/lib/libgdal.so"
cat >"$work/gdal-config" <<CONFIG
#!/bin/sh
case "\$1" in
  --cflags) echo "-I$headers" ;;
  --libs) echo "-L$work/lib -lgdal" ;;
  --version) echo "$headers_version" ;;
esac
CONFIG
chmod +x "$work/gdal-config"
export CARGO_TARGET_DIR=$PWD/build/target-gdal$minor
GDAL_CONFIG=$work/gdal-config GDAL_VERSION=$headers_version GDAL_INCLUDE_DIR=$headers \
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
