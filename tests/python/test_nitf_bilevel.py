"""NITF bi-level images (IC = C1 / M1: ITU-T T.4 Group 3 fax coding, the
JITC ``U_1036A``-style files), indexed by ``chunkref index`` and read through
ChunkRef with GDAL's NITF driver as the oracle (issue 28).

GDAL cannot write C1, so the T.4 data comes from libtiff itself (the
library GDAL decodes it with), called through ctypes: a 1-bit strip coded
1-D (COMRAT ``1D``) or with the 2-D option (``2DS`` / ``2DH``), its raw
bytes copied into an image segment of a NITF written here byte by byte.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import struct
from pathlib import Path

import numpy as np
import pytest
from osgeo import gdal

from conftest import run_chunkref
from raster_checks import captured_errors, open_chunkref
from test_nitf_real_codecs import assert_reads_like_gdal, field, file_header

gdal.UseExceptions()

# libtiff tags and values.
WIDTH_TAG, LENGTH_TAG, BITS_TAG, COMPRESSION_TAG, PHOTOMETRIC_TAG = 256, 257, 258, 259, 262
FILLORDER_TAG, SAMPLES_TAG, ROWS_TAG, GROUP3_TAG = 266, 277, 278, 292
CCITTFAX3, MINISBLACK, MSB2LSB, G3_2D, G3_FILLBITS = 3, 1, 1, 1, 4


def libtiff() -> ctypes.CDLL:
    name = ctypes.util.find_library("tiff") or "libtiff.so.6"
    lib = ctypes.CDLL(name)
    lib.TIFFOpen.restype = ctypes.c_void_p
    lib.TIFFOpen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    lib.TIFFClose.argtypes = [ctypes.c_void_p]
    lib.TIFFWriteEncodedStrip.argtypes = [
        ctypes.c_void_p,
        ctypes.c_uint32,
        ctypes.c_void_p,
        ctypes.c_ssize_t,
    ]
    lib.TIFFWriteEncodedStrip.restype = ctypes.c_ssize_t
    lib.TIFFReadRawStrip.argtypes = [
        ctypes.c_void_p,
        ctypes.c_uint32,
        ctypes.c_void_p,
        ctypes.c_ssize_t,
    ]
    lib.TIFFReadRawStrip.restype = ctypes.c_ssize_t
    return lib


def t4_code(pixels: np.ndarray, options: int, scratch: Path) -> bytes:
    """The T.4 data libtiff writes for ``pixels`` (0 / 1, one strip), with
    GROUP3OPTIONS ``options`` (2-D coding, fill bits)."""
    lib = libtiff()
    height, width = pixels.shape
    tif = lib.TIFFOpen(str(scratch).encode(), b"w")
    assert tif
    for tag, value in [
        (WIDTH_TAG, width),
        (LENGTH_TAG, height),
        (BITS_TAG, 1),
        (COMPRESSION_TAG, CCITTFAX3),
        (PHOTOMETRIC_TAG, MINISBLACK),
        (FILLORDER_TAG, MSB2LSB),
        (SAMPLES_TAG, 1),
        (ROWS_TAG, height),
        (GROUP3_TAG, options),
    ]:
        assert lib.TIFFSetField(ctypes.c_void_p(tif), ctypes.c_uint32(tag), ctypes.c_int(value))
    packed = np.packbits(pixels.astype(np.uint8), axis=1).tobytes()
    assert lib.TIFFWriteEncodedStrip(tif, 0, packed, len(packed)) == len(packed)
    lib.TIFFClose(tif)
    tif = lib.TIFFOpen(str(scratch).encode(), b"r")
    buffer = ctypes.create_string_buffer(len(packed) * 4 + 1024)
    got = lib.TIFFReadRawStrip(tif, 0, buffer, len(buffer))
    lib.TIFFClose(tif)
    assert got > 0
    return buffer.raw[:got]


def image_subheader(
    rows: int, cols: int, ic: bytes, comrat: bytes, blocks: tuple[int, int], block: tuple[int, int]
) -> bytes:
    """An image subheader of one 1-bit band, IMODE B, no LUT."""
    sub = b"IM" + field(b"BILEVEL", 10) + b"20240101000000" + b" " * 17 + b" " * 80 + b"U"
    sub += b" " * (2 + 11 + 2 + 20 + 2 + 8 + 4 + 1 + 8 + 43 + 1 + 40 + 1 + 8 + 15)
    sub += b"0" + b" " * 42
    assert len(sub) == 333
    sub += b"%08d%08d" % (rows, cols) + b"B  " + field(b"MONO", 8) + field(b"VIS", 8)
    sub += b"01" + b"R" + b" " + b"0" + ic + field(comrat, 4) + b"1"
    sub += b"M " + b" " * 6 + b"N" + b"   " + b"0"
    sub += b"0" + b"B" + b"%04d%04d" % blocks + b"%04d%04d" % block + b"01"
    sub += b"001" + b"000" + b"0000000000" + b"1.0 " + b"00000" + b"00000"
    return sub


def write_bilevel_nitf(
    path: Path, blocks: list[bytes | None], grid: tuple[int, int], block: tuple[int, int], comrat: bytes
) -> Path:
    """A NITF of one bi-level image segment of ``grid`` (across, down)
    blocks of ``block`` (width, height) pixels: C1 for a single block, else
    M1 with a block mask table (``None`` blocks marked absent)."""
    data = b"".join(b for b in blocks if b is not None)
    ic = b"C1"
    if len(blocks) > 1:
        ic = b"M1"
        offsets, at = [], 0
        for b in blocks:
            offsets.append(0xFFFFFFFF if b is None else at)
            at += 0 if b is None else len(b)
        table = b"".join(struct.pack(">I", o) for o in offsets)
        head = struct.pack(">IHHH", 10 + len(table), 4, 0, 0)
        data = head + table + data
    (across, down), (bw, bh) = grid, block
    sub = image_subheader(down * bh, across * bw, ic, comrat, grid, block)
    head = file_header([(len(sub), len(data))], 0)
    total = len(head) + len(sub) + len(data)
    path.write_bytes(file_header([(len(sub), len(data))], total) + sub + data)
    return path


def drawing(height: int, width: int, seed: int) -> np.ndarray:
    """Bi-level pixels with long runs (make-up codes past 1728), short
    runs, edges that move a little from row to row (2-D vertical modes)
    and a lot (horizontal and pass modes)."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width]
    pixels = ((x - width // 2) ** 2 + (y - height // 2) ** 2 < (min(height, width) // 3) ** 2)
    pixels ^= (x // (7 + y % 5)) % 3 == 0
    pixels[height // 4, 10 : width - 10] = True
    pixels[height // 3, :] = True
    pixels[-3:, :] = rng.random((3, width)) < 0.5
    return pixels.astype(np.uint8)


def index(binary: Path, source: Path, out: Path) -> dict:
    done = run_chunkref(binary, "index", source, "-o", out)
    assert done.returncode == 0, f"chunkref index failed:\n{done.stderr}"
    return json.loads(out.read_text())


#: name: (COMRAT, GROUP3OPTIONS)
CODINGS = {
    "1d": (b"1D", 0),
    "1d-fill-bits": (b"1D", G3_FILLBITS),
    "2ds": (b"2DS", G3_2D),
    "2dh-fill-bits": (b"2DH", G3_2D | G3_FILLBITS),
}


@pytest.mark.parametrize("name", list(CODINGS))
def test_c1_reads_like_gdal(tmp_path, chunkref_bin, name):
    comrat, options = CODINGS[name]
    pixels = drawing(40, 2048, seed=len(name))
    coded = t4_code(pixels, options, tmp_path / "strip.tif")
    source = write_bilevel_nitf(tmp_path / f"{name}.ntf", [coded], (1, 1), (2048, 40), comrat)
    native = gdal.OpenEx(str(source), allowed_drivers=["NITF"])
    assert native.GetMetadataItem("COMPRESSION", "IMAGE_STRUCTURE") == "BILEVEL"
    # libtiff's coding is what we think it is: GDAL decodes the pixels.
    assert np.array_equal(native.ReadAsArray(), pixels)
    index(chunkref_bin, source, tmp_path / f"{name}.json")
    assert_reads_like_gdal(tmp_path / f"{name}.json", source)


def test_m1_blocks_read_like_gdal(tmp_path, chunkref_bin):
    """Several blocks found through the block mask (GDAL 3.6 takes a
    block's length up to the next block's offset, so it cannot read one
    followed by an absent block: every block is present here)."""
    blocks = []
    for i in range(4):
        pixels = drawing(24, 64, seed=i)
        blocks.append(t4_code(pixels, G3_2D, tmp_path / "strip.tif"))
    source = write_bilevel_nitf(tmp_path / "m1.ntf", blocks, (2, 2), (64, 24), b"2DS")
    refs = index(chunkref_bin, source, tmp_path / "m1.json")["refs"]
    assert len([k for k in refs if not k.split("/")[-1].startswith(".")]) == 4
    assert_reads_like_gdal(tmp_path / "m1.json", source)


def test_c1_of_several_blocks_without_mask_is_refused(tmp_path, chunkref_bin):
    coded = t4_code(drawing(8, 64, seed=1), 0, tmp_path / "strip.tif")
    source = write_bilevel_nitf(tmp_path / "c1.ntf", [coded], (1, 1), (64, 8), b"1D")
    data = bytearray(source.read_bytes())
    # NBPR 1 -> 2 (blocks of 32 pixels): two blocks, no mask.
    at = data.find(b"B0001000100640008")
    assert at > 0
    data[at : at + 17] = b"B0002000100320008"
    source.write_bytes(bytes(data))
    done = run_chunkref(chunkref_bin, "index", source, "-o", tmp_path / "c1.json")
    assert done.returncode != 0
    assert "without a block mask" in done.stderr, done.stderr


def test_truncated_t4_data_fails_like_gdal(tmp_path, chunkref_bin):
    """Data that ends rows early: GDAL's read fails, and so does ours,
    naming the row; no pixels are made up."""
    pixels = drawing(40, 256, seed=3)
    coded = t4_code(pixels, G3_2D, tmp_path / "strip.tif")
    source = write_bilevel_nitf(
        tmp_path / "cut.ntf", [coded[: len(coded) // 2]], (1, 1), (256, 40), b"2DS"
    )
    native = gdal.OpenEx(str(source), allowed_drivers=["NITF"])
    with pytest.raises(RuntimeError):
        native.ReadAsArray()
    index(chunkref_bin, source, tmp_path / "cut.json")
    ours = open_chunkref(tmp_path / "cut.json")
    with captured_errors():
        with pytest.raises(RuntimeError, match="nitf-bilevel.*row"):
            ours.ReadAsArray()
