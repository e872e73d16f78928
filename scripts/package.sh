#!/usr/bin/env bash
# Makes a binary package of chunkref for this machine's GDAL:
#   build/dist/chunkref-<version>-gdal<major.minor>-<arch>.tar.gz
# holding the stripped plugin (gdal_ChunkRef.so), the stripped `chunkref`
# tool, an install.sh and the docs. On the target machine:
#   tar xzf chunkref-*.tar.gz && sudo chunkref-*/install.sh        # GDAL's plugin dir, /usr/local/bin
#   chunkref-*/install.sh --plugins DIR --bin DIR                  # anywhere (then GDAL_DRIVER_PATH=DIR)
# install.sh refuses a GDAL whose major.minor differs from the one the
# plugin was built for, naming both.
set -euo pipefail
cd "$(dirname "$0")/.."
# Up to date: a no-op (`cargo test` alone may leave an older library).
# shellcheck disable=SC2046  # nothing, or --features bindgen (GDAL > 3.12)
cargo build --release --quiet $(scripts/cargo-features.sh)
target=${CARGO_TARGET_DIR:-target}
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
gdal=$(gdal-config --version | cut -d. -f1,2)
arch=$(uname -m)
name="chunkref-$version-gdal$gdal-$arch"
out=build/dist
rm -rf "${out:?}/$name" && mkdir -p "$out/$name/bin" "$out/$name/docs"
strip --strip-unneeded -o "$out/$name/gdal_ChunkRef.so" "$target/release/libchunkref.so"
strip --strip-unneeded -o "$out/$name/bin/chunkref" "$target/release/chunkref"
cp README.md "$out/$name/"
cp docs/*.md "$out/$name/docs/"
echo "$gdal" > "$out/$name/GDAL_VERSION"
cat > "$out/$name/install.sh" <<'INSTALL'
#!/usr/bin/env bash
# Installs this chunkref package: the GDAL plugin and the chunkref tool.
#   install.sh                            plugin into GDAL's own plugin directory, tool into /usr/local/bin (root)
#   install.sh --plugins DIR [--bin DIR]  plugin into DIR (use GDAL_DRIVER_PATH=DIR), tool into DIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
built=$(cat "$here/GDAL_VERSION")
plugins="" bin=/usr/local/bin
while [ $# -gt 0 ]; do
  case "$1" in
    --plugins) plugins=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    *) echo "usage: install.sh [--plugins DIR] [--bin DIR]" >&2; exit 2 ;;
  esac
done
if command -v gdal-config >/dev/null; then
  runtime=$(gdal-config --version)
elif command -v gdalinfo >/dev/null; then
  runtime=$(gdalinfo --version | sed -n 's/^GDAL \([0-9.]*\).*/\1/p')
else
  echo "error: GDAL not found (no gdal-config or gdalinfo); install GDAL $built first" >&2; exit 1
fi
if [ "$(echo "$runtime" | cut -d. -f1,2)" != "$built" ]; then
  echo "error: this package was built for GDAL $built, but this machine has GDAL $runtime;" \
       "a GDAL plugin only loads into the major.minor it was built for: build chunkref from" \
       "source here (README.md, \"Build for another GDAL\")" >&2
  exit 1
fi
# The libraries it was linked with (libhdf5's soname differs between
# distributions that share a GDAL minor).
if command -v ldd >/dev/null; then
  missing=$(ldd "$here/gdal_ChunkRef.so" 2>/dev/null | awk '/not found/ {print $1}' | tr '\n' ' ')
  if [ -n "$missing" ]; then
    echo "error: this package (built for GDAL $built) needs libraries this machine lacks:" \
         "${missing% }; install them (Debian: the libhdf5 and libgdal packages of the" \
         "release it was built on) or build chunkref from source here" >&2
    exit 1
  fi
fi
if [ -z "$plugins" ]; then
  libdir=$(gdal-config --libs 2>/dev/null | tr ' ' '\n' | sed -n 's/^-L//p' | head -1)
  [ -n "$libdir" ] || libdir=/usr/lib/$(gcc -print-multiarch 2>/dev/null || uname -m)-linux-gnu
  plugins="$libdir/gdalplugins/$built"
fi
mkdir -p "$plugins" "$bin"
install -m 0755 "$here/gdal_ChunkRef.so" "$plugins/gdal_ChunkRef.so"
install -m 0755 "$here/bin/chunkref" "$bin/chunkref"
echo "installed $plugins/gdal_ChunkRef.so and $bin/chunkref"
INSTALL
chmod 0755 "$out/$name/install.sh"
tar -C "$out" -czf "$out/$name.tar.gz" "$name"
echo "$out/$name.tar.gz ($(du -h "$out/$name.tar.gz" | cut -f1))"
