"""Interoperability with the Python peer, osml-imagery-io 0.2.x (PyPI),
installed at test time into ``<repo>/build/peer-venv`` (see peer.py).

(a) indexes the peer writes (Zarr v2, Zarr v3, portable) open in ChunkRef
    with GDAL's pixels;
(b) indexes ``chunkref index`` writes open in the peer's stack
    (MultiReferenceFileSystem + zarr) with GDAL's pixels;
(c) the time each tool takes to index a 4096x4096 COG is printed
    (``pytest -s``), not asserted.

Only sources the peer handles are used (observed with 0.2.2): it cannot
index ZSTD (50000), LZMA (34925) or WebP (50001) TIFFs; it indexes stripped
TIFFs but its own reader then fails on every strip ("Not enough data at
scanline"); for big-endian integer TIFFs it writes a little-endian dtype and
reads byte-swapped pixels (its float indexes with predictor 3 are right:
its decoder returns little-endian floats whatever the file's order).
Those sources are covered against GDAL alone in
test_tiff_index.py.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import numpy as np
import pytest
from osgeo import gdal

from conftest import run_chunkref
from peer import peer_index, peer_read_levels
from raster_checks import as_bands, assert_pixels_equal, max_abs_diff, native_levels
from test_tiff_index import (
    TIFF_CASES,
    TiffCase,
    assert_same_as_gdal,
    index_tiff,
    write_tiff,
)

#: TIFF_CASES the peer can index and read back itself (checked with 0.2.2).
PEER_CASES = [
    "cog-deflate-pred2-3band",
    "cog-lzw-1band",
    "cog-none-3band",
    "gtiff-packbits-3band",
    "cog-jpeg-ycbcr-3band",
    "cog-jpeg-gray-1band",
    "cog-u2-deflate-pred2-1band",
    "cog-i2-lzw-pred2-3band",
    "cog-f4-deflate-pred3-1band",
    "cog-f4-lzw-pred3-3band",
    "cog-f8-deflate-pred3-2band",
    "gtiff-planar-u2-deflate-pred2",
    "gtiff-planar-u1-lzw",
    "gtiff-planar-u1-none",
    "cog-bigtiff-deflate-3band",
    "gtiff-bigendian-f4-lzw-pred3",
    "gtiff-bigendian-f8-deflate-pred3-planar",
    "gtiff-mask-deflate-3band",
    "gtiff-mask-jpeg-3band",
]

#: Sources whose chunkref index the peer should read: the above, plus an
#: uncompressed big-endian integer TIFF (chunkref declares ">i2", which the
#: peer's pass-through decoding honours; the peer's own index of it says
#: "<i2").  Big-endian integers with a predictor stay out: the peer's
#: tiff-tile decoder undoes horizontal differencing as little-endian words.
CHUNKREF_TO_PEER_CASES = PEER_CASES + ["gtiff-bigendian-i2-none"]


def compare_levels(
    got: list[np.ndarray], expected: list[np.ndarray], case: TiffCase, what: str
) -> float:
    """Peer-read levels against GDAL's: same count, shapes and dtypes (byte
    order aside), pixels identical or within the case's tolerance."""
    assert len(got) == len(expected), f"{what}: {len(got)} levels, GDAL has {len(expected)}"
    worst = 0.0
    for n, (array, want) in enumerate(zip(got, expected)):
        array, want = as_bands(array), as_bands(want)
        assert array.dtype.newbyteorder("=") == want.dtype.newbyteorder("="), (
            f"{what} level {n}: dtype {array.dtype} != {want.dtype}"
        )
        if case.tolerance == 0:
            assert_pixels_equal(array.astype(want.dtype), want, f"{what} level {n}")
        else:
            diff = max_abs_diff(array, want, f"{what} level {n}")
            assert diff <= case.tolerance, f"{what} level {n}: max abs difference {diff}"
            worst = max(worst, diff)
    return worst


# --------------------------------------------------------------------------
# (a) peer-written indexes in ChunkRef
# --------------------------------------------------------------------------


@pytest.mark.parametrize("zarr_format", [2, 3], ids=["v2", "v3"])
@pytest.mark.parametrize("name", PEER_CASES)
def test_peer_index_opens_in_chunkref(tmp_path, peer, name, zarr_format):
    case = TIFF_CASES[name]
    tif = write_tiff(tmp_path / f"{name}.tif", case)
    index = tmp_path / f"{name}.v{zarr_format}.tile_index.json"
    peer_index(peer, tif, index, zarr_format)
    assert_same_as_gdal(index, tif, case.tolerance, f"peer v{zarr_format} {name}")


@pytest.mark.parametrize("name", ["cog-deflate-pred2-3band", "gtiff-planar-u2-deflate-pred2"])
def test_peer_portable_index_opens_in_chunkref(tmp_path, peer, name):
    """A ``{{base}}`` index beside its TIFF opens, and still opens once both
    moved to another directory."""
    here = tmp_path / "here"
    here.mkdir()
    tif = write_tiff(here / "img.tif", TIFF_CASES[name])
    index = here / "img.tif.tile_index.json"
    peer_index(peer, tif, index, template=True)
    doc = json.loads(index.read_text())
    assert doc.get("templates") == {"base": ""}, doc.get("templates")
    assert_same_as_gdal(index, tif, 0, f"peer portable {name}")
    moved = Path(shutil.move(str(here), str(tmp_path / "moved")))
    assert_same_as_gdal(moved / index.name, moved / tif.name, 0, f"peer portable {name}, moved")


# --------------------------------------------------------------------------
# (b) chunkref-written indexes in the peer
# --------------------------------------------------------------------------


@pytest.mark.parametrize("name", CHUNKREF_TO_PEER_CASES)
def test_chunkref_index_opens_in_peer(tmp_path, peer, chunkref_bin, name):
    case = TIFF_CASES[name]
    tif = write_tiff(tmp_path / f"{name}.tif", case)
    index = tmp_path / f"{name}.tile_index.json"
    index_tiff(chunkref_bin, tif, index)
    got = peer_read_levels(peer, index, tmp_path / "peer-read")
    expected = native_levels(gdal.Open(str(tif)))
    worst = compare_levels(got, expected, case, f"peer reading chunkref index of {name}")
    if case.tolerance:
        print(f"\n{name}: peer vs GDAL max abs difference {worst}")


def test_chunkref_portable_index_opens_in_peer(tmp_path, peer, chunkref_bin):
    """A ``--template-base`` index read by the peer with
    ``template_overrides`` after the TIFF moved elsewhere."""
    case = TIFF_CASES["cog-deflate-pred2-3band"]
    tif = write_tiff(tmp_path / "img.tif", case)
    index = tmp_path / "img.tile_index.json"
    index_tiff(chunkref_bin, tif, index, "--template-base")
    expected = native_levels(gdal.Open(str(tif)))
    far = tmp_path / "far"
    far.mkdir()
    shutil.move(str(tif), str(far / tif.name))
    got = peer_read_levels(peer, index, tmp_path / "peer-read", base=f"{far}/")
    compare_levels(got, expected, case, "peer reading a portable chunkref index")


# --------------------------------------------------------------------------
# (c) indexing time
# --------------------------------------------------------------------------


def write_big_cog(path: Path, size: int = 4096) -> Path:
    """A size x size x 3 uint8 COG, DEFLATE + predictor, 256x256 tiles
    (the file of formats.md section 7)."""
    y, x = np.ogrid[:size, :size]
    rng = np.random.default_rng(7)
    noise = rng.integers(0, 8, (size, size), dtype=np.uint8)
    mem = gdal.GetDriverByName("MEM").Create("", size, size, 3, gdal.GDT_Byte)
    for b in range(3):
        plane = ((x * (b + 1) + y * (3 - b)) // 5 % 256).astype(np.uint8) + noise
        mem.GetRasterBand(b + 1).WriteArray(plane)
    gdal.Translate(
        str(path), mem, format="COG",
        creationOptions=["COMPRESS=DEFLATE", "PREDICTOR=YES", "BLOCKSIZE=256"],
    )
    return path


def test_indexing_time_4096_cog(tmp_path, peer, chunkref_bin):
    tif = write_big_cog(tmp_path / "big.tif")
    runs = 3  # of each tool; the best is reported
    peer_times, peer_walls = [], []
    for run in range(runs):
        start = time.perf_counter()
        peer_times.append(peer_index(peer, tif, tmp_path / f"peer{run}.json"))
        peer_walls.append(time.perf_counter() - start)
    ours = []
    for run in range(runs):
        start = time.perf_counter()
        done = run_chunkref(chunkref_bin, "index", tif, "-o", tmp_path / f"chunkref{run}.json")
        ours.append(time.perf_counter() - start)
        assert done.returncode == 0, done.stderr
    refs = json.loads((tmp_path / "chunkref0.json").read_text())["refs"]
    chunks = sum(1 for key in refs if not key.rsplit("/", 1)[-1].startswith((".z", "zarr.json")))
    print(
        f"\nindexing {tif.name} (4096x4096x3 uint8 COG, DEFLATE+predictor, 256x256 tiles, "
        f"{chunks} chunk refs, {tif.stat().st_size} bytes):\n"
        f"  osml-imagery-io {peer.version()}: best {min(peer_times) * 1e3:.1f} ms parse+write "
        f"(runs {', '.join(f'{t * 1e3:.1f}' for t in peer_times)} ms); "
        f"best {min(peer_walls) * 1e3:.0f} ms with interpreter start-up and imports\n"
        f"  chunkref index: best {min(ours) * 1e3:.1f} ms wall, process start-up included "
        f"(runs {', '.join(f'{t * 1e3:.1f}' for t in ours)} ms)"
    )


@pytest.mark.parametrize("name", ["cog-jpeg-ycbcr-3band", "cog-jpeg-gray-1band"])
def test_peer_index_colour_interpretation(tmp_path, peer, name):
    """Peer indexes carry no colour hint: ChunkRef takes the colour model
    from the tiff-tile codec's photometric, as GDAL reads the source.  (When
    GDAL_METADATA overrides a band's colour interpretation, e.g. RGB
    photometric with COLORINTERP=Undefined, only chunkref's own indexes,
    which record it, can agree with GDAL.)"""
    tif = write_tiff(tmp_path / f"{name}.tif", TIFF_CASES[name])
    index = tmp_path / f"{name}.tile_index.json"
    peer_index(peer, tif, index, 2)
    assert "chunkref:color_interpretation" not in index.read_text()
    src = gdal.Open(str(tif))
    ds = gdal.OpenEx(str(index), allowed_drivers=["ChunkRef"])
    got = [ds.GetRasterBand(b + 1).GetColorInterpretation() for b in range(ds.RasterCount)]
    want = [src.GetRasterBand(b + 1).GetColorInterpretation() for b in range(src.RasterCount)]
    assert got == want
