"""CCITT fax TIFFs (compressions 2 RLE, 3 Group 3, 4 Group 4) through
``chunkref index`` + ChunkRef, against GDAL's GTiff driver (libtiff).

Sources are written by GDAL (``COMPRESS=CCITTRLE/CCITTFAX3/CCITTFAX4`` of a
1-bit image, strips and tiles, odd widths, MinIsWhite and MinIsBlack) and by
libtiff's ``tiffcp`` (Group 3 with 2-D coding and fill bits, FillOrder 2,
tiled Group 4), and cut short to check that a corrupt strip reads (Group 4:
the rows decoded, the rest white) or fails (RLE, Group 3) as in GDAL.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest
from osgeo import gdal

import kerchunk_builders as kb
from raster_checks import assert_pixels_equal, describe, odd_windows, open_chunkref
from test_tiff_index import index_tiff

COMPRESSIONS = ["CCITTRLE", "CCITTFAX3", "CCITTFAX4"]
TIFF_TILE = "https://awslabs.github.io/osml-imagery-io/codecs/tiff-tile"


def bilevel(width: int, height: int, seed: int = 7) -> np.ndarray:
    """0/1 pixels with isolated dots, long runs (make-up codes, past 2560
    pixels when the image is that wide) and rows of one colour."""
    rng = np.random.default_rng(seed)
    pixels = (rng.random((height, width)) > 0.85).astype(np.uint8)
    pixels[height // 3 : height // 2, width // 10 : width - 3] = 1
    pixels[height // 2 + 1] = 0
    pixels[height // 2 + 2] = 1
    pixels[:, width // 2] = 1
    return pixels


def write_fax(path: Path, pixels: np.ndarray, compression: str, *options: str) -> Path:
    """A 1-bit GTiff of ``pixels`` written by GDAL with ``compression``."""
    ds = kb.mem_dataset(pixels[np.newaxis])
    gdal.Translate(
        str(path), ds, format="GTiff",
        creationOptions=["NBITS=1", f"COMPRESS={compression}", *options],
    )
    return path


def assert_reads_like_gdal(tif: Path, index: Path) -> None:
    """Size, type, NBITS, colour interpretation and table, compression and
    pixels (whole and odd windows) of the ChunkRef dataset equal GTiff's."""
    native, ours = gdal.Open(str(tif)), open_chunkref(index)
    assert describe(ours) == describe(native)
    nb, ob = native.GetRasterBand(1), ours.GetRasterBand(1)
    assert ob.GetMetadataItem("NBITS", "IMAGE_STRUCTURE") == "1"
    assert ob.GetMetadataItem("NBITS", "IMAGE_STRUCTURE") == nb.GetMetadataItem(
        "NBITS", "IMAGE_STRUCTURE"
    )
    assert ours.GetMetadataItem("COMPRESSION", "IMAGE_STRUCTURE") == native.GetMetadataItem(
        "COMPRESSION", "IMAGE_STRUCTURE"
    )
    want = native.ReadAsArray()
    assert set(np.unique(want)) <= {0, 1}
    assert_pixels_equal(ours.ReadAsArray(), want, f"{tif.name} whole")
    for xoff, yoff, w, h in odd_windows(native.RasterXSize, native.RasterYSize):
        assert_pixels_equal(
            ob.ReadAsArray(xoff, yoff, w, h), want[yoff : yoff + h, xoff : xoff + w],
            f"{tif.name} window {(xoff, yoff, w, h)}",
        )


def codec_of(index: dict) -> dict:
    """The tiff-tile codec configuration of the index's full-resolution array."""
    import json

    refs = index["refs"]
    for key, value in refs.items():
        if key.endswith(".zarray"):
            doc = json.loads(value) if isinstance(value, str) else value
            if doc.get("compressor", {}) and doc["compressor"].get("id") == TIFF_TILE:
                return doc["compressor"]
            for f in doc.get("filters") or []:
                if f.get("id") == TIFF_TILE:
                    return f
    raise AssertionError("no tiff-tile codec in the index")


@pytest.mark.parametrize("compression", COMPRESSIONS)
@pytest.mark.parametrize("photometric", ["MINISWHITE", "MINISBLACK"])
@pytest.mark.parametrize(
    "layout",
    [("TILED=NO", "BLOCKYSIZE=9"), ("TILED=YES", "BLOCKXSIZE=32", "BLOCKYSIZE=16")],
    ids=["strips", "tiles"],
)
def test_gdal_written_fax_reads_like_gdal(tmp_path, chunkref_bin, compression, photometric, layout):
    # 77 x 50: rows not a whole number of bytes, a last strip of 5 rows,
    # partial edge tiles.
    tif = write_fax(tmp_path / "fax.tif", bilevel(77, 50), compression,
                    f"PHOTOMETRIC={photometric}", *layout)
    index = index_tiff(chunkref_bin, tif, tmp_path / "fax.json")
    codec = codec_of(index)
    assert codec["compression"] == {"CCITTRLE": 2, "CCITTFAX3": 3, "CCITTFAX4": 4}[compression]
    assert ("image_height" in codec) == (layout[0] == "TILED=NO"), codec
    assert_reads_like_gdal(tif, tmp_path / "fax.json")


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_wide_fax_rows_use_every_make_up_code(tmp_path, chunkref_bin, compression):
    tif = write_fax(tmp_path / "wide.tif", bilevel(2701, 12, seed=3), compression)
    index_tiff(chunkref_bin, tif, tmp_path / "wide.json")
    assert_reads_like_gdal(tif, tmp_path / "wide.json")


TIFFCP = shutil.which("tiffcp")


@pytest.mark.skipif(TIFFCP is None, reason="libtiff-tools (tiffcp) not installed")
@pytest.mark.parametrize(
    "args",
    [
        ("-c", "g3:2d:fill", "-f", "lsb2msb", "-r", "7"),
        ("-c", "g3:1d:fill", "-r", "11"),
        ("-c", "g3:2d", "-r", "50"),
        ("-c", "g4", "-f", "lsb2msb", "-t", "-w", "32", "-l", "16"),
        ("-c", "g4", "-r", "13"),
    ],
    ids=["g3-2d-fill-lsb2msb", "g3-1d-fill", "g3-2d-one-strip", "g4-tiled-lsb2msb", "g4-strips"],
)
def test_tiffcp_written_fax_reads_like_gdal(tmp_path, chunkref_bin, args):
    """T4Options 2-D coding and fill bits, and FillOrder 2, as libtiff
    writes them; the options and the fill order are in the index."""
    plain = tmp_path / "plain.tif"
    gdal.Translate(str(plain), kb.mem_dataset(bilevel(77, 50)[np.newaxis]),
                   creationOptions=["NBITS=1", "PHOTOMETRIC=MINISWHITE"])
    tif = tmp_path / "fax.tif"
    subprocess.run([TIFFCP, *args, str(plain), str(tif)], check=True, capture_output=True)
    index = index_tiff(chunkref_bin, tif, tmp_path / "fax.json")
    codec = codec_of(index)
    if "g3:2d" in args[1]:
        assert codec["t4_options"] & 1 == 1, codec
    if "fill" in args[1]:
        assert codec["t4_options"] & 4 == 4, codec
    assert codec.get("fill_order", 1) == (2 if "lsb2msb" in args else 1), codec
    assert_reads_like_gdal(tif, tmp_path / "fax.json")


def cut_strip(source: Path, out: Path, fraction: float) -> None:
    """A copy of a one-strip little-endian TIFF whose StripByteCounts says
    only ``fraction`` of the strip is there."""
    data = bytearray(source.read_bytes())
    assert data[:4] == b"II*\x00"
    ifd = struct.unpack_from("<I", data, 4)[0]
    for i in range(struct.unpack_from("<H", data, ifd)[0]):
        at = ifd + 2 + 12 * i
        tag, kind, count = struct.unpack_from("<HHI", data, at)
        if tag == 279 and count == 1:
            fmt = "<H" if kind == 3 else "<I"
            struct.pack_into(fmt, data, at + 8, int(struct.unpack_from(fmt, data, at + 8)[0] * fraction))
            out.write_bytes(bytes(data))
            return
    raise AssertionError("no single StripByteCounts entry")


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_cut_fax_strip_reads_or_fails_like_gdal(tmp_path, chunkref_bin, compression):
    """Half a strip: libtiff keeps the Group 4 rows it decoded (the rest of
    GDAL's fresh block buffer is white) with a warning, and fails RLE and
    Group 3 strips that end before their last row; ChunkRef does the same."""
    full = write_fax(tmp_path / "full.tif", bilevel(77, 50), compression, "BLOCKYSIZE=50")
    cut = tmp_path / "cut.tif"
    cut_strip(full, cut, 0.5)
    index_tiff(chunkref_bin, cut, tmp_path / "cut.json")
    native, ours = gdal.Open(str(cut)), open_chunkref(tmp_path / "cut.json")
    if compression == "CCITTFAX4":
        want = native.ReadAsArray()
        assert want[-10:].sum() == 0 and want.sum() > 0
        assert_pixels_equal(ours.ReadAsArray(), want, "cut Group 4 strip")
    else:
        for ds in (native, ours):
            with pytest.raises(RuntimeError):
                ds.ReadAsArray()


def test_fax_of_several_bits_is_refused(tmp_path, chunkref_bin):
    """libtiff decodes fax data of 1-bit samples only (GDAL cannot read
    others): such an IFD is refused at index time, naming the reason."""
    tif = write_fax(tmp_path / "one.tif", bilevel(40, 20), "CCITTFAX4")
    data = bytearray(tif.read_bytes())
    ifd = struct.unpack_from("<I", data, 4)[0]
    for i in range(struct.unpack_from("<H", data, ifd)[0]):
        at = ifd + 2 + 12 * i
        if struct.unpack_from("<H", data, at)[0] == 258:
            struct.pack_into("<H", data, at + 8, 2)
    bad = tmp_path / "two-bits.tif"
    bad.write_bytes(bytes(data))
    from conftest import run_chunkref

    done = run_chunkref(chunkref_bin, "index", bad, "-o", tmp_path / "x.json")
    assert done.returncode != 0 and "1-bit sample" in done.stderr, done.stderr
