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
#    DT_NEEDED is the wheel's soname, which rasterio has loaded already.
#    zig (cargo-zigbuild) compiles and links it for glibc 2.28, with GCC's
#    libstdc++, so that it is manylinux_2_28 as rasterio's wheels are;
# 4. checks the result with readelf and objdump: the libraries it needs,
#    and no glibc, libstdc++ or C++ ABI symbol version newer than
#    manylinux_2_28 allows (GLIBC_2.28, GLIBCXX_3.4.25, CXXABI_1.3.11),
#    else the build fails.
#
# Output: build/rasterio-plugins/gdalplugins/<GDAL major.minor>/gdal_ChunkRef.so
# (scripts/build-plugin-wheel.sh puts that tree into the wheel
# chunkref-rasterio, for chunkref.gdal). The build has a target directory of
# its own (build/target-zig-gdal<minor>): the first build compiles every
# dependency again (8 to 10 minutes here on 2 cores shared with other
# builds; the wheel and header downloads add well under a minute).
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
# zig links against glibc 2.28's symbols and compiles C and C++ with glibc
# 2.28's headers (cargo-zigbuild's target x86_64-unknown-linux-gnu.2.28),
# from PyPI into build/wheel-venv as scripts/build-wheel.sh has them.
venv=build/wheel-venv
if ! "$venv/bin/python" -c "import ziglang" 2>/dev/null || [ ! -x "$venv/bin/cargo-zigbuild" ]; then
  [ -x "$venv/bin/pip" ] || { rm -rf "$venv"; python3 -m venv "$venv"; }
  "$venv/bin/pip" install -q "ziglang==0.17.1" "cargo-zigbuild==0.24.1"
fi
export PATH="$PWD/$venv/bin:$PATH"
# C++ (the shim, snappy) keeps GCC's libstdc++, whose ABI libgdal's C++
# API has: zig's C++ driver with libstdc++'s headers instead of zig's libc++
# ones (-I, ahead of zig's glibc headers, which they #include_next), and
# the shared libstdc++.so.6 linked by its path (zig takes -lstdc++ for its
# own libc++, so the cc crate is told to link none: CXXSTDLIB empty). So is
# libgcc_s.so.1, the unwinder libstdc++ and libgdal throw C++ exceptions
# with: zig would otherwise link its own libunwind into the plugin (for
# Rust's -lgcc_s), and the shim's cleanups would resume libgcc_s's
# exceptions with it. gdal_plugin/manylinux_2_28 keeps GCC 12's headers
# within manylinux_2_28: its sys/single_threaded.h (glibc 2.32's
# __libc_single_threaded) and libstdcxx_floor.cpp
# (std::__throw_bad_array_new_length, GLIBCXX_3.4.29), linked in. zig does
# not search Debian's library directory: -L gives it Debian's libsz (the
# szip codec, src/codec/szip.rs), alone in a directory. These link
# arguments go to the plugin's crate alone (cargo rustc), so that the
# dependencies do not rebuild for them.
gcc_major=$(g++ -dumpversion | cut -d. -f1)
multiarch=$(g++ -print-multiarch)
target=x86_64-unknown-linux-gnu
glibc=2.28
compat_src=$PWD/gdal_plugin/manylinux_2_28
cxxflags="-nostdinc++ -I$compat_src/include -I/usr/include/c++/$gcc_major -I/usr/include/$multiarch/c++/$gcc_major"
compat=$PWD/build/zig-libstdc++
mkdir -p "$compat"
ln -sf "/usr/lib/$multiarch/libsz.so" "$compat/libsz.so"
python-zig c++ -target "${target/-unknown/}.$glibc" $cxxflags -std=c++17 -O2 -fPIC -Wall -Wextra \
  -c "$compat_src/libstdcxx_floor.cpp" -o "$compat/libstdcxx_floor.o"
export CXXFLAGS_${target//-/_}="$cxxflags"
export CXXSTDLIB_${target//-/_}=
link_args=(-L "native=$compat" -C "link-arg=$compat/libstdcxx_floor.o"
  -C "link-arg=$(readlink -f "$(g++ -print-file-name=libstdc++.so)")"
  -C "link-arg=$(readlink -f "$(g++ -print-file-name=libgcc_s.so.1)")")
# The plugin is stripped: no debug information to build.
export CARGO_PROFILE_RELEASE_DEBUG=0
export CARGO_TARGET_DIR=$PWD/build/target-zig-gdal$minor
GDAL_CONFIG=$work/gdal-config GDAL_VERSION=$headers_version GDAL_INCLUDE_DIR=$headers \
  GDAL_LIB_DIR=$work/lib GDAL_DYNAMIC=1 cargo-zigbuild rustc --release --lib --target "$target.$glibc" \
  -- "${link_args[@]}"
plugin=$PWD/build/rasterio-plugins/gdalplugins/$minor/gdal_ChunkRef.so
mkdir -p "$(dirname "$plugin")"
strip -o "$plugin" "$CARGO_TARGET_DIR/$target/release/libchunkref.so"
echo "plugin for rasterio $rasterio (GDAL $version): $plugin"
echo "needs: $(readelf -d "$plugin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')"
readelf -d "$plugin" | grep -q "NEEDED.*\[$soname\]" ||
  { echo "the plugin does not link $soname" >&2; exit 1; }
# manylinux_2_28, as rasterio's wheels: glibc 2.28, and the libstdc++ of
# GCC 8 (AlmaLinux 8's own). Any symbol of a newer version fails the build
# here; scripts/build-plugin-wheel.sh then has auditwheel check the wheel
# against its manylinux_2_28 policy (which stops at GLIBCXX_3.4.24).
versioned=$(objdump -T "$plugin" |
  sed -n 's/.*[ (]\(\(GLIBC\|GLIBCXX\|CXXABI\)_[0-9.]*[0-9]\))\{0,1\} \{1,\}\([^ ]*\)$/\1 \3/p')
too_new=
for floor in GLIBC_2.28 GLIBCXX_3.4.25 CXXABI_1.3.11; do
  echo "newest ${floor%_*}: $(echo "$versioned" | grep "^${floor%_*}_" | cut -d' ' -f1 | sort -uV | tail -1)" \
    "(at most $floor)"
  while read -r version symbol; do
    [ "$(printf '%s\n' "$floor" "$version" | sort -V | tail -1)" = "$floor" ] ||
      too_new+=" $symbol@$version"
  done < <(echo "$versioned" | grep "^${floor%_*}_")
done
[ -z "$too_new" ] ||
  { echo "the plugin uses symbols newer than manylinux_2_28 allows:$too_new" >&2; exit 1; }
