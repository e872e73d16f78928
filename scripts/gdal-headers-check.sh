#!/usr/bin/env bash
# The cheap part of scripts/gdal-matrix.sh, for CI: compiles the C++ shim
# and src/builders/hdf5/vfd_layout.c (the code GDAL's and libhdf5's API changes
# break) against the GDAL and libhdf5 headers of other Debian suites, with
# the host's compilers. Downloads only their libgdal-dev and libhdf5-dev
# packages (about 5 MB, 30 s per suite), into build/headers/SUITE.
#   scripts/gdal-headers-check.sh [SUITE...]     (default: trixie sid)
# The Rust side and the tests need the whole matrix (scripts/gdal-matrix.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
suites=("$@"); [ ${#suites[@]} -gt 0 ] || suites=(trixie sid)
failed=0
for suite in "${suites[@]}"; do
  dir=build/headers/$suite apt=build/headers/$suite/apt
  if [ ! -e "$dir/usr/include/gdal/gdal_version.h" ]; then
    rm -rf "$dir" && mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/debs"
    echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $suite main" \
      >"$apt/sources.list"
    opts=(-o "Dir::Etc::SourceList=$PWD/$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
          -o "Dir::State::Lists=$PWD/$apt/lists" -o "Dir::Cache=$PWD/$apt/cache"
          -o Acquire::Check-Valid-Until=false -o Debug::NoLocking=1 -o APT::Sandbox::User=root)
    apt-get "${opts[@]}" update -qq
    (cd "$apt/debs" && apt-get "${opts[@]}" download -qq libgdal-dev libhdf5-dev)
    for deb in "$apt"/debs/*.deb; do dpkg-deb -x "$deb" "$dir"; done
  fi
  inc=$dir/usr/include
  gdal=$(sed -n 's/^# *define GDAL_RELEASE_NAME *"\(.*\)"/\1/p' "$inc/gdal/gdal_version.h")
  hdf5_major=$(sed -n 's/^#define H5_VERS_MAJOR *\([0-9]*\).*/\1/p' "$inc/hdf5/serial/H5public.h")
  hdf5_minor=$(sed -n 's/^#define H5_VERS_MINOR *\([0-9]*\).*/\1/p' "$inc/hdf5/serial/H5public.h")
  # The layout build.rs chooses: 1.10's, else 1.14's (1.14 and 2.x).
  layout=114; [ "$hdf5_major.$hdf5_minor" != 1.10 ] || layout=110
  result=ok
  g++ -std=c++17 -fsyntax-only -Wall -Wextra -Werror -I"$inc/gdal" -Icpp_shim \
    cpp_shim/chunkref_shim.cpp || result=FAILED
  g++ -std=c++17 -fsyntax-only -Wall -Wextra -Werror -I"$inc/gdal" -Icpp_shim \
    cpp_shim/chunkref_mdim.cpp || result=FAILED
  g++ -std=c++17 -fsyntax-only -Wall -Wextra -Werror -I"$inc/gdal" -Icpp_shim \
    cpp_shim/shim_common.cpp || result=FAILED
  gcc -fsyntax-only -Wall -Wextra -Werror -I"$inc/hdf5/serial" -DCHUNKREF_VFD_LAYOUT=$layout \
    src/builders/hdf5/vfd_layout.c || result=FAILED
  echo "headers check: $suite: GDAL $gdal, libhdf5 $hdf5_major.$hdf5_minor: $result"
  [ "$result" = ok ] || failed=1
done
exit $failed
