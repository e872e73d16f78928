"""NITF structures of real files (issue 28), each rebuilt from a file GDAL
writes and read through ChunkRef and through GDAL's NITF driver:

- JPEG (C3) streams without quantisation tables, naming a default table
  by the Q level of their APP6 "NITF" segment (JITC's U_1125C.NTF);
- one-block C3 images, which GDAL reads through its JPEG driver and so
  offers at 1/2, 1/4 and 1/8 of their size (JITC's ns3321a.nsf, WithBE.ntf);
- uncompressed one-block images whose data stops short, which GDAL reads
  line by line (GDAL's own fromGDAL/rgb.ntf);
- a paletted JP2 file as C8 image data: no overviews, as for a bare
  paletted JP2 (JITC's file9_jp2_2places.ntf);
- IC = I1 and image segments without data (JITC's i_3113g.ntf, the
  GHSarNITF*_good.ntf files of VTS): refused, GDAL reads no pixels of them.
"""

from __future__ import annotations

import re
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest
from osgeo import gdal

from conftest import run_chunkref
from raster_checks import assert_matches, failure_text, native_levels, open_chunkref
from test_nitf import ramp12, write_12bit_jpeg_nitf
from test_nitf_real_codecs import box, index, jp2_file, write_c8

gdal.UseExceptions()


def picture(bands: int, height: int, width: int) -> np.ndarray:
    """Smooth pixels with some texture (JPEG-friendly, not flat)."""
    y, x = np.mgrid[0:height, 0:width]
    planes = [(x * (b + 1) + 2 * y + 40 * np.sin((x + y * (b + 2)) / 9.0) + 60) % 256 for b in range(bands)]
    return np.stack(planes).astype(np.uint8)


def write_nitf(path: Path, data: np.ndarray, options: list[str]) -> Path:
    bands, height, width = data.shape
    mem = gdal.GetDriverByName("MEM").Create("", width, height, bands, gdal.GDT_Byte)
    for b in range(bands):
        mem.GetRasterBand(b + 1).WriteArray(data[b])
    gdal.Translate(str(path), mem, format="NITF", creationOptions=options)
    return path


def segment_data(raw: bytes | bytearray) -> tuple[int, int]:
    """Start and length (LI) of the image data of a one-segment NITF 2.1
    file as GDAL writes it."""
    hl, lish, li = int(raw[354:360]), int(raw[363:369]), int(raw[369:379])
    assert int(raw[360:363]) == 1, "one image segment expected"
    return hl + lish, li


def with_segment_data(raw: bytes, data: bytes) -> bytes:
    """``raw`` with its image data replaced by ``data`` (LI and FL fixed)."""
    start, li = segment_data(raw)
    out = bytearray(raw[:start] + data + raw[start + li :])
    out[369:379] = b"%010d" % len(data)
    out[342:354] = b"%012d" % len(out)
    return bytes(out)


def jpeg_streams(data: bytes) -> list[bytes]:
    """The JPEG streams (SOI ... EOI) following one another in ``data``."""
    streams, at = [], 0
    while at < len(data):
        assert data[at : at + 2] == b"\xff\xd8", f"no SOI at {at}"
        end = at + 2
        while True:
            marker, length = data[end + 1], int.from_bytes(data[end + 2 : end + 4], "big")
            end += 2 + length
            if marker == 0xDA:
                break
        while not (data[end] == 0xFF and data[end + 1] not in (0x00, *range(0xD0, 0xD8))):
            end += 1
        assert data[end + 1] == 0xD9, "one scan expected"
        streams.append(data[at : end + 2])
        at = end + 2
    return streams


def without_tables(stream: bytes, drop: set[int], q_level: int) -> bytes:
    """``stream`` without its marker segments in ``drop`` (DQT 0xDB, DHT
    0xC4), its APP6 "NITF" segment (if any) naming default tables
    ``q_level``."""
    out, at = bytearray(stream[:2]), 2
    while True:
        marker, length = stream[at + 1], int.from_bytes(stream[at + 2 : at + 4], "big")
        if marker not in drop:
            out += stream[at : at + 2 + length]
        at += 2 + length
        if marker == 0xDA:
            break
    out += stream[at:]
    if out[6:11] == b"NITF\0":
        out[22] = q_level
    return bytes(out)


def strip_tables(source: Path, target: Path, drop: set[int], q_level: int) -> Path:
    raw = source.read_bytes()
    start, li = segment_data(raw)
    streams = jpeg_streams(raw[start : start + li])
    # GDAL writes the APP6 segment in the first block only; its Q level
    # stands for every block.
    assert streams[0][6:11] == b"NITF\0", "GDAL writes an APP6 NITF segment"
    data = b"".join(without_tables(s, drop, q_level) for s in streams)
    target.write_bytes(with_segment_data(raw, data))
    return target


# --------------------------------------------------------------------------
# Default quantisation (and Huffman) tables named by the APP6 Q level
# --------------------------------------------------------------------------

#: name: (bands, blocks across x down of 64 x 64, segments dropped, Q level)
DEFAULT_TABLE_CASES = {
    "q1-one-block": (1, (1, 1), {0xDB}, 1),
    "q3-ycbcr-one-block": (3, (1, 1), {0xDB}, 3),
    "q5-blocks": (1, (2, 2), {0xDB}, 5),
    "q2-no-huffman-tables": (1, (2, 1), {0xDB, 0xC4}, 2),
    "q4-ycbcr-blocks": (3, (2, 2), {0xDB}, 4),
}


@pytest.mark.parametrize("name", list(DEFAULT_TABLE_CASES))
def test_default_tables_of_the_q_level_read_like_gdal(tmp_path, chunkref_bin, name):
    bands, (across, down), drop, q = DEFAULT_TABLE_CASES[name]
    data = picture(bands, 64 * down, 64 * across)
    raw = write_nitf(tmp_path / "raw.ntf", data, ["IC=C3", "BLOCKXSIZE=64", "BLOCKYSIZE=64"])
    source = strip_tables(raw, tmp_path / f"{name}.ntf", drop, q)
    assert b"\xff\xdb" not in source.read_bytes()[segment_data(source.read_bytes())[0] :]
    out = tmp_path / f"{name}.json"
    index(chunkref_bin, source, out)
    assert re.search(r'q_level\\*"\s*:\s*%d' % q, out.read_text()), "q_level in the codec"
    native = gdal.Open(str(source))
    expected = native_levels(native)
    # The default tables differ from the ones the pixels were coded with.
    assert not np.array_equal(expected[0], gdal.Open(str(raw)).ReadAsArray().reshape(expected[0].shape))
    assert_matches(open_chunkref(out), expected)


def test_q_level_without_default_table_is_ignored(tmp_path, chunkref_bin):
    """Q levels past 5 name no table: GDAL loads none, the stream's own
    tables decode it."""
    raw = write_nitf(tmp_path / "raw.ntf", picture(1, 64, 64), ["IC=C3"])
    source = strip_tables(raw, tmp_path / "q9.ntf", set(), 9)
    out = tmp_path / "q9.json"
    index(chunkref_bin, source, out)
    assert not re.search(r'q_level\\*"', out.read_text())
    assert_matches(open_chunkref(out), native_levels(gdal.Open(str(source))))


# --------------------------------------------------------------------------
# One-block C3 images: GDAL's JPEG driver's DCT-scaled overviews
# --------------------------------------------------------------------------

#: name: (bands, width, height, blocks of (width, height), overviews GDAL offers)
OVERVIEW_CASES = {
    "grey-1024": (1, 1024, 300, None, 3),
    "ycbcr-683x512": (3, 683, 512, None, 2),
    "grey-300x200": (1, 300, 200, None, 1),
    "grey-255": (1, 255, 255, None, 0),
    "blocks-have-none": (1, 600, 300, (300, 300), 0),
}


@pytest.mark.parametrize("name", list(OVERVIEW_CASES))
def test_one_block_c3_overviews_read_like_gdal(tmp_path, chunkref_bin, name):
    bands, width, height, block, count = OVERVIEW_CASES[name]
    bw, bh = block or (width, height)
    source = write_nitf(
        tmp_path / f"{name}.ntf",
        picture(bands, height, width),
        ["IC=C3", f"BLOCKXSIZE={bw}", f"BLOCKYSIZE={bh}", "QUALITY=85"],
    )
    out = tmp_path / f"{name}.json"
    index(chunkref_bin, source, out)
    native = gdal.Open(str(source))
    assert native.GetRasterBand(1).GetOverviewCount() == count
    assert_matches(open_chunkref(out), native_levels(native))


def test_one_block_12bit_c3_overview_reads_like_gdal(tmp_path, chunkref_bin):
    options = ["IC=C3", "BLOCKXSIZE=300", "BLOCKYSIZE=200"]
    source = write_12bit_jpeg_nitf(tmp_path / "c3.ntf", ramp12(1), options)
    out = tmp_path / "c3.json"
    index(chunkref_bin, source, out)
    native = gdal.Open(str(source))
    assert native.GetRasterBand(1).GetOverviewCount() == 1
    assert_matches(open_chunkref(out), native_levels(native))


# --------------------------------------------------------------------------
# Uncompressed one-block images whose data stops short
# --------------------------------------------------------------------------


@pytest.mark.parametrize("imode", ["B", "S"])
def test_short_one_block_data_reads_line_by_line_like_gdal(tmp_path, chunkref_bin, imode):
    data = picture(3, 50, 50)
    raw = write_nitf(tmp_path / "raw.ntf", data, ["IREP=RGB"] + (["IMODE=S"] if imode == "S" else []))
    source = tmp_path / "short.ntf"
    source.write_bytes(raw.read_bytes()[:-3])  # LI still says 7500 bytes
    out = tmp_path / "short.json"
    done = run_chunkref(chunkref_bin, "index", source, "-o", out)
    assert done.returncode == 0, done.stderr
    assert "line" in done.stderr, done.stderr
    native, ours = gdal.Open(str(source)), open_chunkref(out)
    assert native.GetRasterBand(1).GetBlockSize() == [50, 1]
    for b in (1, 2):
        want = native.GetRasterBand(b).ReadAsArray()
        assert np.array_equal(ours.GetRasterBand(b).ReadAsArray(), want)
        assert np.array_equal(want, data[b - 1])
    band = ours.GetRasterBand(3)
    assert np.array_equal(band.ReadAsArray(0, 0, 50, 49), native.GetRasterBand(3).ReadAsArray(0, 0, 50, 49))
    # The last line of band 3 lacks 3 bytes: both fail to read it.
    failure_text(native.GetRasterBand(3).ReadAsArray, 0, 49, 50, 1)
    message = failure_text(band.ReadAsArray, 0, 49, 50, 1)
    assert "2.49.0" in message and "got 47" in message, message


# --------------------------------------------------------------------------
# A paletted JP2 file as C8 image data
# --------------------------------------------------------------------------


def paletted_jp2(codestream: bytes, width: int, height: int, entries: np.ndarray) -> bytes:
    """A JP2 file of one component mapped through a ``pclr`` palette of
    ``entries`` (n x 3 bytes) by a ``cmap`` box."""
    plain = jp2_file(codestream, width, height, 1, 8, 16)
    pclr = box(b"pclr", struct.pack(">HB", len(entries), 3) + b"\x07" * 3 + entries.astype(np.uint8).tobytes())
    cmap = box(b"cmap", b"".join(struct.pack(">HBB", 0, 1, i) for i in range(3)))
    at = plain.find(b"jp2h") - 4
    header_len = struct.unpack(">I", plain[at : at + 4])[0]
    header = plain[at + 8 : at + header_len] + pclr + cmap
    return plain[:at] + box(b"jp2h", header) + plain[at + header_len :]


def opj_codestream(path: Path, pixels: np.ndarray) -> bytes:
    """A JPEG 2000 codestream of one 8-bit component in 128 x 128 tiles and
    4 resolution levels, written by opj_compress."""
    height, width = pixels.shape
    pgm = path.with_suffix(".pgm")
    pgm.write_bytes(b"P5\n%d %d\n255\n" % (width, height) + pixels.astype(np.uint8).tobytes())
    done = subprocess.run(
        ["opj_compress", "-i", str(pgm), "-o", str(path), "-t", "128,128", "-n", "4"],
        capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return path.read_bytes()


@pytest.mark.parametrize("paletted", [False, True])
def test_paletted_jp2_in_nitf_has_no_overviews(tmp_path, chunkref_bin, paletted):
    height, width = 400, 512
    pixels = (picture(1, height, width)[0] // 16).astype(np.uint8)
    raw = write_c8(tmp_path / "raw.ntf", pixels[None], [])
    codestream = opj_codestream(tmp_path / "cs.j2k", pixels)
    entries = np.stack([np.arange(16) * 16, 255 - np.arange(16) * 16, np.full(16, 7)], axis=1)
    jp2 = (
        paletted_jp2(codestream, width, height, entries)
        if paletted
        else jp2_file(codestream, width, height, 1, 8, 17)
    )
    source = tmp_path / "c8.ntf"
    source.write_bytes(with_segment_data(raw.read_bytes(), jp2))
    out = tmp_path / "c8.json"
    index(chunkref_bin, source, out)
    native = gdal.Open(str(source))
    count = native.GetRasterBand(1).GetOverviewCount()
    assert (count == 0) == paletted, count
    ours = open_chunkref(out)
    assert ours.GetRasterBand(1).GetOverviewCount() == count
    assert np.array_equal(ours.ReadAsArray(), native.ReadAsArray())


# --------------------------------------------------------------------------
# Refused: IC = I1, and a segment without image data
# --------------------------------------------------------------------------


def test_i1_is_refused_as_gdal_reads_no_pixels(tmp_path, chunkref_bin):
    raw = bytearray(write_nitf(tmp_path / "raw.ntf", picture(1, 64, 64), ["IC=C3"]).read_bytes())
    start, li = segment_data(raw)
    sub = raw.rfind(b"C3", 0, start)
    raw[sub : sub + 2] = b"I1"
    source = tmp_path / "i1.ntf"
    source.write_bytes(bytes(raw))
    native = gdal.Open(str(source))
    assert native.GetMetadataItem("NITF_IC") == "I1"
    failure_text(native.GetRasterBand(1).ReadAsArray)
    done = run_chunkref(chunkref_bin, "index", source, "-o", tmp_path / "i1.json")
    assert done.returncode != 0
    assert "IC = I1" in done.stderr and "GDAL" in done.stderr, done.stderr


def test_segment_without_data_is_refused(tmp_path, chunkref_bin):
    raw = write_nitf(
        tmp_path / "raw.ntf", picture(1, 64, 64), ["IC=C3", "BLOCKXSIZE=32", "BLOCKYSIZE=32"]
    )
    source = tmp_path / "empty.ntf"
    source.write_bytes(with_segment_data(raw.read_bytes(), b""))
    native = gdal.Open(str(source))
    failure_text(native.GetRasterBand(1).ReadAsArray)
    done = run_chunkref(chunkref_bin, "index", source, "-o", tmp_path / "empty.json")
    assert done.returncode != 0
    assert "holds no image data" in done.stderr, done.stderr
