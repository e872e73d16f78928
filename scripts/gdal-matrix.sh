#!/usr/bin/env bash
# Builds chunkref and runs the GDAL oracle tests against each GDAL it
# supports, then prints one table row per environment: GDAL and libhdf5
# versions, build (time, warnings), tests passed/failed/skipped, client checks.
#
#   scripts/gdal-matrix.sh [ENV...]        ENV: host (Debian 12, GDAL 3.6),
#                                          trixie (GDAL 3.10), sid (GDAL 3.13);
#                                          default: all three
#   MATRIX_TESTS="tests/python/test_x.py ..." scripts/gdal-matrix.sh ...
#                                          the pytest files to run (default: the
#                                          oracle tests of the formats, types,
#                                          georeferencing, HDF5 and packaging,
#                                          $DEFAULT_TESTS below)
#   MATRIX_TESTS=all ...                   the whole of tests/python
#   MATRIX_TESTS=none ...                  build and client checks only
#   scripts/gdal-matrix.sh --shell ENV     a shell in ENV's root, set up as the builds
#
# trixie and sid are Debian roots under build/roots/ (made on first use by
# scripts/gdal-roots.sh: about 7 minutes each); the host's Rust toolchain is
# bind-mounted into them, cargo's registry is copied once, and each has its
# own target directory (build/target-ENV) and test venvs (build/venvs-ENV:
# tests/python/venvs.py). Needs root (chroot, mount).
# Results: build/matrix/ENV.{row,build.log,tests.log}.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
# The tests where GDAL versions differ: data types (int8), every format's
# driver against GDAL's own, georeferencing, libhdf5's file driver, packages.
DEFAULT_TESTS="tests/python/test_builders.py tests/python/test_hdf5_index.py
  tests/python/test_georef.py tests/python/test_tiff_index.py tests/python/test_nitf.py
  tests/python/test_j2k.py tests/python/test_dted.py tests/python/test_grib2.py
  tests/python/test_package.py"

# ---- inside one environment (the host, or a root at /src) ----------------
if [ "${1:-}" = "--here" ]; then
  env_name=$2
  out=build/matrix
  mkdir -p "$out"
  gdal=$(gdal-config --version)
  # H5_VERSION: in H5public.h up to 1.14, in H5pubconf.h from 2.0.
  hdf5_include=$(pkg-config --variable=includedir hdf5 2>/dev/null || true)
  [ -e "$hdf5_include/H5public.h" ] || hdf5_include=/usr/include/hdf5/serial
  hdf5=$(cat "$hdf5_include"/H5public.h "$hdf5_include"/H5pubconf.h 2>/dev/null |
         sed -n 's/^#define H5_VERSION *"\(.*\)"/\1/p' | head -1)
  features=$(scripts/cargo-features.sh)
  # Debian unstable's hdf5.pc links -lhdf5_serial, whose library
  # hdf5-metno-sys does not look for: point it at Debian's serial build.
  serial=/usr/lib/$(gcc -print-multiarch)/hdf5/serial
  if [ -z "${HDF5_DIR:-}" ] && [ -e "$serial/libhdf5.so" ] &&
     pkg-config --libs hdf5 | grep -q -- -lhdf5_serial; then
    export HDF5_DIR=$serial
  fi
  target=${CARGO_TARGET_DIR:-target}
  start=$(date +%s)
  build=failed
  # shellcheck disable=SC2086  # features is empty or "--features bindgen"
  if nice -n 10 cargo build --release $features --color never >"$out/$env_name.build.log" 2>&1; then
    build=ok
  fi
  build_s=$(( $(date +%s) - start ))
  warnings=$(grep -c '^warning' "$out/$env_name.build.log" || true)
  tests="-" clients=""
  if [ "$build" = ok ]; then
    plugins=build/gdalplugins-$env_name
    CHUNKREF_LIB=$target/release/libchunkref.so gdal_plugin/install.sh "$plugins" >/dev/null
    export GDAL_DRIVER_PATH=$repo/$plugins CHUNKREF_BIN=$repo/$target/release/chunkref
    # gdalinfo / gdal_translate on an index of a COG GDAL writes: the copy's
    # checksums must be those of the source.
    work=$(mktemp -d)
    if /usr/bin/python3 scripts/make_sample.py "$work/sample.tif" >/dev/null 2>&1 &&
       "$CHUNKREF_BIN" index "$work/sample.tif" -o "$work/sample.json" >/dev/null 2>&1 &&
       gdalinfo "$work/sample.json" | grep -q '^Driver: ChunkRef' &&
       gdal_translate -q "$work/sample.json" "$work/copy.tif" &&
       cmp -s <(gdalinfo -checksum "$work/copy.tif" | grep Checksum) \
              <(gdalinfo -checksum "$work/sample.tif" | grep Checksum); then
      clients="gdal-tools:ok"
    else
      clients="gdal-tools:FAILED"
    fi
    rm -rf "$work"
    # The package for this GDAL, and its installer accepting this GDAL.
    work=$(mktemp -d)
    if tarball=$(scripts/package.sh 2>/dev/null | tail -1 | cut -d' ' -f1) &&
       tar -C "$work" -xzf "$tarball" &&
       "$work"/chunkref-*/install.sh --plugins "$work/plugins" --bin "$work/bin" >/dev/null; then
      clients="$clients package:$(basename "$tarball")"
    else
      clients="$clients package:FAILED"
    fi
    rm -rf "$work"
    tests_list=${MATRIX_TESTS:-$DEFAULT_TESTS}
    [ "$tests_list" != all ] || tests_list=tests/python
    if [ "$tests_list" != none ]; then
      tstart=$(date +%s)
      # shellcheck disable=SC2086  # a list of paths
      nice -n 10 /usr/bin/python3 -m pytest -q -p no:cacheprovider -rs $tests_list \
        >"$out/$env_name.tests.log" 2>&1 || true
      tests_s=$(( $(date +%s) - tstart ))
      summary=$(grep -E '^=*.* in [0-9.]+s' "$out/$env_name.tests.log" | tail -1 | tr -d '=')
      # pytest leaves out the kinds it has none of: those are 0.
      count() { echo "$summary" | grep -oE "[0-9]+ $1" | cut -d' ' -f1 | grep . || echo 0; }
      tests="$(count passed)/$(count failed)$(count error | sed 's/^0$//;s/^./+&/')/$(count skipped) in ${tests_s}s"
    fi
    # The clients of tests/python/test_clients.py and test_qgis.py, and the
    # multidimensional view's R clients (test_multidim.py): ok, failed, or
    # "-" when the root has no such package (or terra no md).
    for client in rasterio:test_clients.py::test_rasterio_reads_like_gtiff \
                  terra:test_clients.py::test_terra_reads_like_gtiff qgis:test_qgis.py \
                  terra-md:test_multidim.py::test_terra_md_reads_like_gdal_netcdf \
                  stars:test_multidim.py::test_stars_read_mdim_reads_like_gdal_zarr; do
      name=${client%%:*} test=tests/python/${client#*:}
      log=$( (/usr/bin/python3 -m pytest -q -p no:cacheprovider -rs "$test" 2>&1 || true) | tail -3)
      if echo "$log" | grep -qE '[0-9]+ passed' && ! echo "$log" | grep -qE 'failed|error'; then
        clients="$clients $name:ok"
      elif echo "$log" | grep -qE 'skipped' && ! echo "$log" | grep -qE 'failed|error|passed'; then
        clients="$clients $name:-"
      else
        clients="$clients $name:FAILED"
      fi
    done
  fi
  printf '%s\t%s\t%s\t%s (%ss, %s warnings)\t%s\t%s\n' "$env_name" "$gdal" "$hdf5" "$build" \
    "$build_s" "$warnings" "$tests" "$clients" >"$out/$env_name.row"
  cat "$out/$env_name.row"
  exit 0
fi

# ---- preparing and entering a root ---------------------------------------
# Mounts what a build in build/roots/SUITE needs: /proc, the worktree at
# /src, the host's rustup toolchains and cargo binaries (read-only), and a
# CARGO_HOME of its own (the host's registry copied in once).
mount_root() {
  local root=build/roots/$1
  [ -e "$root/etc/debian_version" ] || scripts/gdal-roots.sh "$1"
  mkdir -p "$root/proc" "$root/src" "$root/root/.rustup" "$root/opt/cargo-bin" "$root/root/cargo-home"
  mountpoint -q "$root/proc" || mount -t proc proc "$root/proc"
  mountpoint -q "$root/src" || mount --bind "$repo" "$root/src"
  if ! mountpoint -q "$root/root/.rustup"; then
    mount --bind "${RUSTUP_HOME:-$HOME/.rustup}" "$root/root/.rustup"
    mount -o remount,bind,ro "$root/root/.rustup"
  fi
  if ! mountpoint -q "$root/opt/cargo-bin"; then
    mount --bind "${CARGO_HOME:-$HOME/.cargo}/bin" "$root/opt/cargo-bin"
    mount -o remount,bind,ro "$root/opt/cargo-bin"
  fi
  [ -d "$root/root/cargo-home/registry" ] ||
    cp -a "${CARGO_HOME:-$HOME/.cargo}/registry" "$root/root/cargo-home/registry"
  cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
  # The host's CA bundle: a proxy on the way to the registries may sign
  # with a CA only the host knows.
  cp "${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}" "$root/etc/ssl/certs/host-ca-certificates.crt"
}

umount_root() {
  local root=build/roots/$1 m
  for m in opt/cargo-bin root/.rustup src proc; do
    mountpoint -q "$root/$m" && umount "$root/$m"
  done
  return 0
}

in_root() {
  local suite=$1; shift
  chroot "build/roots/$suite" /usr/bin/env -i HOME=/root TERM="${TERM:-dumb}" \
    PATH=/opt/cargo-bin:/usr/local/bin:/usr/bin:/bin \
    RUSTUP_HOME=/root/.rustup CARGO_HOME=/root/cargo-home \
    CARGO_TARGET_DIR="build/target-$suite" MATRIX_TESTS="${MATRIX_TESTS:-}" \
    CHUNKREF_VENVS="/src/builders/venvs-$suite" \
    SSL_CERT_FILE=/etc/ssl/certs/host-ca-certificates.crt \
    CARGO_HTTP_CAINFO=/etc/ssl/certs/host-ca-certificates.crt \
    PIP_CERT=/etc/ssl/certs/host-ca-certificates.crt \
    REQUESTS_CA_BUNDLE=/etc/ssl/certs/host-ca-certificates.crt \
    /bin/bash -c 'cd /src && "$@"' bash "$@"
}

if [ "${1:-}" = "--shell" ]; then
  suite=${2:?usage: scripts/gdal-matrix.sh --shell trixie|sid}
  mount_root "$suite"
  trap 'umount_root "$suite"' EXIT
  in_root "$suite" bash -i
  exit 0
fi

envs=("$@"); [ ${#envs[@]} -gt 0 ] || envs=(host trixie sid)
rows=()
for env_name in "${envs[@]}"; do
  echo "== $env_name"
  if [ "$env_name" = host ]; then
    scripts/gdal-matrix.sh --here host
  else
    mount_root "$env_name"
    trap 'umount_root "$env_name"' EXIT
    in_root "$env_name" scripts/gdal-matrix.sh --here "$env_name"
    umount_root "$env_name"
    trap - EXIT
  fi
  rows+=("$(cat "build/matrix/$env_name.row")")
done
echo
{
  printf 'ENV\tGDAL\tHDF5\tBUILD\tTESTS passed/failed/skipped\tCLIENTS\n'
  printf '%s\n' "${rows[@]}"
} | column -t -s $'\t'
