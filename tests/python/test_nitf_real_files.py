"""NITF structures real producers write around the pixels, read through
``chunkref index`` + ChunkRef as GDAL's NITF driver reads them (issue 28):
image corners from the BLOCKA and GEOLOB extensions and from ICORDS C,
crossed IGEOLO corners. Each source is written by GDAL (creation options
``TRE=``, ``ICORDS=``), with a field patched in place where GDAL cannot
write it, and GDAL's driver reading the same file is the oracle."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest
from osgeo import gdal, osr

from conftest import run_chunkref
from raster_checks import open_chunkref

WIDTH, HEIGHT = 120, 80


def epsg_srs(code: int) -> osr.SpatialReference:
    srs = osr.SpatialReference()
    srs.ImportFromEPSG(code)
    return srs


def write_nitf(
    path: Path,
    gt: tuple | None = None,
    epsg: int | None = None,
    options: list[str] | None = None,
    data: np.ndarray | None = None,
) -> Path:
    """A one-band NITF of WIDTH x HEIGHT bytes written by GDAL."""
    if data is None:
        y, x = np.mgrid[0:HEIGHT, 0:WIDTH]
        data = ((x * 3 + y * 7) % 251).astype(np.uint8)
    mem = gdal.GetDriverByName("MEM").Create("", data.shape[1], data.shape[0], 1)
    mem.GetRasterBand(1).WriteArray(data)
    if gt is not None:
        mem.SetGeoTransform(gt)
        mem.SetSpatialRef(epsg_srs(epsg))
    gdal.Translate(str(path), mem, format="NITF", creationOptions=options or [])
    return path


def patch(path: Path, old: bytes, new: bytes) -> None:
    """Replace the one occurrence of ``old`` in the file by ``new`` (same
    length)."""
    data = path.read_bytes()
    assert data.count(old) == 1 and len(old) == len(new), (old, new)
    path.write_bytes(data.replace(old, new))


def index_of(binary: Path, source: Path) -> Path:
    out = source.with_suffix(".json")
    done = run_chunkref(binary, "index", source, "-o", out)
    assert done.returncode == 0, done.stderr
    json.loads(out.read_text())
    return out


def georef(ds: gdal.Dataset) -> dict:
    """What places a dataset: geotransform, GCPs and their CRS."""
    srs = ds.GetSpatialRef() or ds.GetGCPSpatialRef()
    return {
        "transform": ds.GetGeoTransform(can_return_null=True),
        "gcps": [(g.GCPPixel, g.GCPLine, g.GCPX, g.GCPY) for g in ds.GetGCPs()],
        "crs": srs.GetAuthorityCode(None) if srs is not None else None,
    }


def assert_placed_like_gdal(binary: Path, source: Path) -> dict:
    """The index of ``source`` is placed exactly as GDAL places the file,
    and reads the same pixels; returns GDAL's placement."""
    native = gdal.Open(str(source))
    idx = open_chunkref(index_of(binary, source))
    want = georef(native)
    assert georef(idx) == want
    np.testing.assert_array_equal(idx.ReadAsArray(), native.ReadAsArray())
    return want


# --------------------------------------------------------------------------
# Corners: BLOCKA, GEOLOB, ICORDS C, crossed IGEOLO
# --------------------------------------------------------------------------

#: 0.001-degree pixels at (10.0E, 46.0N): corners of the pixel centres.
GT_DEG = (10.0, 0.001, 0.0, 46.0, 0.0, -0.001)


def blocka(lines: int, corners: list[str]) -> str:
    """A BLOCKA extension's data: L_LINES and FRLC, LRLC, LRFC, FRFC."""
    text = f"01{0:05d}{lines:05d}" + " " * 22 + "".join(corners) + "010.0"
    assert len(text) == 123
    return text


def decimal(lon: float, lat: float) -> str:
    return f"{lat:+010.6f}{lon:+011.6f}"


def dms(lon: float, lat: float) -> str:
    def part(v: float, width: int) -> str:
        a = abs(v)
        d, m = int(a), int((a - int(a)) * 60)
        s = (a - d - m / 60) * 3600
        return f"{d:0{width}d}{m:02d}{s:05.2f}"

    return f"{'N' if lat >= 0 else 'S'}{part(lat, 2)}{'E' if lon >= 0 else 'W'}{part(lon, 3)}"


def centres(gt: tuple, width: int = WIDTH, height: int = HEIGHT) -> list[tuple[float, float]]:
    """FRLC, LRLC, LRFC, FRFC: pixel centres of the corners (BLOCKA's order)."""
    at = [(width - 0.5, 0.5), (width - 0.5, height - 0.5), (0.5, height - 0.5), (0.5, 0.5)]
    return [(gt[0] + p * gt[1] + l * gt[2], gt[3] + p * gt[4] + l * gt[5]) for p, l in at]


def blocka_of(gt: tuple, form=decimal, lines: int = HEIGHT, skew: float = 0.0) -> str:
    """The BLOCKA extension (``TAG=data``) of an image placed by ``gt``,
    its last row's last column moved ``skew`` degrees east (no frame)."""
    points = centres(gt)
    points[1] = (points[1][0] + skew, points[1][1])
    return "BLOCKA=" + blocka(lines, [form(x, y) for x, y in points])


#: name -> (geotransform and EPSG of the written image, or None;
#: extensions as ``TAG=data``).
#: The extensions' corners are 0.0001234 degrees off the image's own
#: (IGEOLO rounds them away), so reading them shows.
OFF = (10.0001234, 0.001, 0.0, 46.0001234, 0.0, -0.001)
CORNER_CASES = {
    "blocka-decimal": ((GT_DEG, 4326), [blocka_of(OFF)]),
    "blocka-dms": ((GT_DEG, 4326), [blocka_of(OFF, dms)]),
    "blocka-over-utm": (((500000.0, 10.0, 0.0, 5000000.0, 0.0, -10.0), 32633), [blocka_of(OFF)]),
    "blocka-without-igeolo": (None, [blocka_of(OFF)]),
    "blocka-rotated": ((GT_DEG, 4326), [blocka_of((10.0, 0.001, 0.0002, 46.0, 0.0001, -0.001))]),
    "blocka-no-frame-is-gcps": ((GT_DEG, 4326), [blocka_of(OFF, skew=0.01)]),
    "blocka-other-rows-ignored": ((GT_DEG, 4326), [blocka_of(OFF, lines=HEIGHT - 1)]),
    "blocka-blank-corner-ignored": ((GT_DEG, 4326), ["BLOCKA=" + blocka(HEIGHT, [" " * 21] * 4)]),
    "geolob": ((GT_DEG, 4326), ["GEOLOB=000360000000360000+010.0001234000+046.0001234000"]),
    "geolob-without-igeolo": (None, ["GEOLOB=002060370003590149-123.0749837910+044.0622542218"]),
    "geolob-over-blocka": ((GT_DEG, 4326), [
        blocka_of(OFF), "GEOLOB=000360000000360000+010.0004321000+046.0004321000"]),
}


@pytest.mark.parametrize("case", CORNER_CASES)
def test_corners_from_extensions(tmp_path, chunkref_bin, case):
    place, tres = CORNER_CASES[case]
    gt, epsg = place if place else (None, None)
    source = write_nitf(tmp_path / "src.ntf", gt, epsg, [f"TRE={t}" for t in tres])
    want = assert_placed_like_gdal(chunkref_bin, source)
    plain = georef(gdal.Open(str(write_nitf(tmp_path / "plain.ntf", gt, epsg))))
    if case.endswith("gcps"):
        assert want["transform"] is None and len(want["gcps"]) == 4
    elif case.endswith("ignored"):
        assert want == plain
    else:
        assert want["crs"] == "4326" and want["transform"] != plain["transform"]


def test_geocentric_icords_c(tmp_path, chunkref_bin):
    """ICORDS C (GDAL reads it, does not write it): IGEOLO as for G, its
    latitudes geocentric."""
    source = write_nitf(tmp_path / "src.ntf", GT_DEG, 4326)
    igeolo = gdal.Open(str(source)).GetMetadataItem("NITF_IGEOLO").encode()
    patch(source, b"G" + igeolo, b"C" + igeolo)
    assert gdal.Open(str(source)).GetMetadataItem("NITF_ICORDS") == "C"
    want = assert_placed_like_gdal(chunkref_bin, source)
    assert want["transform"][3] > 46.1  # geodetic latitudes are larger


@pytest.mark.parametrize("order", ["crossed", "quarter-turn"])
def test_igeolo_corner_order(tmp_path, chunkref_bin, order):
    """Corners written in a crossed order are put back by quadrant; a
    quarter turn is a rotated frame, as GDAL has them."""
    source = write_nitf(tmp_path / "src.ntf", GT_DEG, 4326, ["ICORDS=D"])
    igeolo = gdal.Open(str(source)).GetMetadataItem("NITF_IGEOLO").encode()
    ul, ur, lr, ll = (igeolo[i * 15 : (i + 1) * 15] for i in range(4))
    new = ul + ur + ll + lr if order == "crossed" else ur + lr + ll + ul
    patch(source, b"D" + igeolo, b"D" + new)
    want = assert_placed_like_gdal(chunkref_bin, source)
    if order == "crossed":
        assert want["transform"][1] > 0 and want["transform"][5] < 0
    else:
        assert want["transform"][1] == 0


# --------------------------------------------------------------------------
# Look-up tables, pad pixels and the nodata GDAL derives from them
# --------------------------------------------------------------------------


def segment(raw: bytes) -> tuple[int, int]:
    """(offset, length) of the image subheader of a single-segment
    GDAL-written NITF 2.1 file."""
    assert int(raw[360:363]) == 1, "one image segment"
    return int(raw[354:360]), int(raw[363:369])


def with_image(raw: bytes, sub: bytes, data: bytes) -> bytes:
    """``raw`` with its image subheader and data replaced (LISH1, LI1 and
    FL updated)."""
    hl, _ = segment(raw)
    head = bytearray(raw[:hl])
    head[342:354] = b"%012d" % (hl + len(sub) + len(data))
    head[363:379] = b"%06d%010d" % (len(sub), len(data))
    return bytes(head) + sub + data


def masked(
    source: Path, out: Path, blocks: int, absent: int | None, pad: bytes, pad_bits: int
) -> Path:
    """``source`` (IC = NC, ``blocks`` blocks) as IC = NM with a block mask
    (block ``absent`` left out) and pad pixel code ``pad`` of ``pad_bits``."""
    raw = source.read_bytes()
    hl, lish = segment(raw)
    sub = bytearray(raw[hl : hl + lish])
    ic_at = sub.index(b"NC", 372)
    sub[ic_at : ic_at + 2] = b"NM"
    data = raw[hl + lish :]
    size = len(data) // blocks
    offsets, kept = [], b""
    for i in range(blocks):
        if i == absent:
            offsets.append(0xFFFFFFFF)
        else:
            offsets.append(len(kept))
            kept += data[i * size : (i + 1) * size]
    table_len = 10 + len(pad) + 4 * blocks
    table = struct.pack(">IHHH", table_len, 4, 0, pad_bits) + pad
    table += struct.pack(f">{blocks}I", *offsets)
    out.write_bytes(with_image(raw, bytes(sub), table + kept))
    return out


def band_view(ds: gdal.Dataset) -> list[dict]:
    """What GDAL says of each band besides its pixels."""
    view = []
    for n in range(ds.RasterCount):
        band = ds.GetRasterBand(n + 1)
        ct = band.GetColorTable()
        view.append({
            "type": band.DataType,
            "nodata": band.GetNoDataValue(),
            "mask": band.GetMaskFlags(),
            "colour": band.GetColorInterpretation(),
            "table": [ct.GetColorEntry(i) for i in range(ct.GetCount())] if ct else None,
        })
    return view


def assert_bands_like_gdal(binary: Path, source: Path) -> list[dict]:
    """The index of ``source`` has GDAL's band properties and pixels;
    returns GDAL's band properties."""
    native = gdal.Open(str(source))
    idx = open_chunkref(index_of(binary, source))
    want = band_view(native)
    assert band_view(idx) == want
    np.testing.assert_array_equal(idx.ReadAsArray(), native.ReadAsArray())
    return want


def paletted(path: Path, entries: list[tuple[int, int, int]], options=()) -> Path:
    """An 8-bit NITF whose colour table GDAL writes as three LUTs."""
    y, x = np.mgrid[0:HEIGHT, 0:WIDTH]
    mem = gdal.GetDriverByName("MEM").Create("", WIDTH, HEIGHT, 1)
    mem.GetRasterBand(1).WriteArray(((x + y) % len(entries)).astype(np.uint8))
    ct = gdal.ColorTable()
    for i, (r, g, b) in enumerate(entries):
        ct.SetColorEntry(i, (r, g, b, 255))
    mem.GetRasterBand(1).SetColorTable(ct)
    gdal.Translate(str(path), mem, format="NITF", creationOptions=list(options))
    return path


#: name -> LUT entries. Fewer than 255 add a transparent nodata entry after
#: the last; 217 whose last is black make that one nodata.
LUT_CASES = {
    "lut-128": [(i, 255 - i, i // 2) for i in range(128)],
    "lut-217-black-last": [(i, i, 255 - i) for i in range(216)] + [(0, 0, 0)],
    "lut-256": [(i, 255 - i, 7) for i in range(256)],
}


@pytest.mark.parametrize("case", LUT_CASES)
def test_lut_colour_table_and_nodata(tmp_path, chunkref_bin, case):
    source = paletted(tmp_path / "src.ntf", LUT_CASES[case])
    assert gdal.Open(str(source)).GetMetadataItem("NITF_IREP") == "RGB/LUT"
    (want,) = assert_bands_like_gdal(chunkref_bin, source)
    assert want["colour"] == gdal.GCI_PaletteIndex
    assert want["nodata"] == {"lut-128": 128, "lut-217-black-last": 216, "lut-256": None}[case]


def test_lut_of_jpeg_blocks(tmp_path, chunkref_bin):
    """JPEG blocks GDAL reads itself (several blocks) carry the LUT; one
    whole JPEG stream, read by GDAL's JPEG driver, does not."""
    entries = LUT_CASES["lut-128"]
    for blocks in (["BLOCKSIZE=64"], []):
        source = paletted(tmp_path / "src.ntf", entries, ["IC=C3", "QUALITY=100", *blocks])
        native = gdal.Open(str(source))
        idx = open_chunkref(index_of(chunkref_bin, source))
        assert band_view(idx) == band_view(native)
        assert (native.GetRasterBand(1).GetColorTable() is None) == (not blocks)


def one_bit(path: Path, source: Path) -> Path:
    """A GDAL-written one-band 8-bit NC file of one block (no IGEOLO, no
    comments) turned into NBPP = ABPP = 1, its samples' low bits packed."""
    raw = source.read_bytes()
    hl, lish = segment(raw)
    sub = bytearray(raw[hl : hl + lish])
    nbands = int(sub[375:376])
    luts = 0 if sub[376 + 2 + 6 + 4 : 376 + 13] == b"0" else None
    assert nbands == 1 and luts == 0, "one band without LUTs"
    at = 376 + 13 + 1
    assert sub[at : at + 1] == b"B" and sub[at + 1 : at + 9] == b"00010001"
    sub[at + 17 : at + 19] = b"01"
    sub[368:370] = b"01"
    data = np.frombuffer(raw[hl + lish :], np.uint8) & 1
    path.write_bytes(with_image(raw, bytes(sub), np.packbits(data).tobytes()))
    return path


def test_one_bit_samples_are_black_and_white(tmp_path, chunkref_bin):
    source = one_bit(tmp_path / "bits.ntf", write_nitf(tmp_path / "src.ntf"))
    (want,) = assert_bands_like_gdal(chunkref_bin, source)
    assert want["table"] == [(0, 0, 0, 255), (255, 255, 255, 255)]
    # Masked (one block: GDAL reads 1-bit samples of one block only), its
    # 1-bit pad pixel is no nodata to GDAL.
    source = masked(source, tmp_path / "bits-nm.ntf", 1, None, b"\x80", 1)
    (want,) = assert_bands_like_gdal(chunkref_bin, source)
    assert want["nodata"] is None


#: name -> (sample type, pad code, its length in bits): GDAL takes only an
#: 8-bit pad code as nodata (and reads absent blocks as it, else as 0).
PAD_CASES = {
    "u1-pad-8": (np.uint8, b"\x07", 8),
    "u2-pad-8": (np.uint16, b"\x07", 8),
    "u2-pad-16": (np.uint16, b"\x00\x07", 16),
}


@pytest.mark.parametrize("case", PAD_CASES)
def test_pad_pixel_is_nodata_only_when_8_bits(tmp_path, chunkref_bin, case):
    dtype, pad, bits = PAD_CASES[case]
    y, x = np.mgrid[0:HEIGHT, 0:WIDTH]
    data = ((x * 3 + y * 7) % 251 + 1).astype(dtype)
    source = write_nitf(tmp_path / "src.ntf", data=data, options=["BLOCKSIZE=64"])
    source = masked(source, tmp_path / "nm.ntf", 4, 1, pad, bits)
    (want,) = assert_bands_like_gdal(chunkref_bin, source)
    assert want["nodata"] == (7 if bits == 8 else None)


# --------------------------------------------------------------------------
# JPEG blocks (IC = C3)
# --------------------------------------------------------------------------


@pytest.mark.parametrize("blocks", [[], ["BLOCKSIZE=64"]])
def test_fill_bytes_before_a_jpeg_stream(tmp_path, chunkref_bin, blocks):
    """Bytes of 0xFF before the first block's JPEG stream (as in JITC's
    i_3025b.ntf), which GDAL skips."""
    source = write_nitf(tmp_path / "src.ntf", options=["IC=C3", "QUALITY=90", *blocks])
    raw = source.read_bytes()
    hl, lish = segment(raw)
    data = raw[hl + lish :]
    assert data.startswith(b"\xff\xd8\xff")
    filled = tmp_path / "filled.ntf"
    filled.write_bytes(with_image(raw, raw[hl : hl + lish], b"\xff" * 6 + data))
    assert_bands_like_gdal(chunkref_bin, filled)


# --------------------------------------------------------------------------
# Segment lengths past the end of the file
# --------------------------------------------------------------------------


def test_segment_running_past_the_end_is_read_as_far_as_it_goes(tmp_path, chunkref_bin):
    """LI larger than what the file holds (JITC ns3321a.nsf says 10 GB, this 9.9):
    GDAL reads the data there is, and so does the index."""
    source = write_nitf(tmp_path / "src.ntf", options=["IC=C3", "QUALITY=90"])
    raw = bytearray(source.read_bytes())
    raw[369:379] = b"9999999999"
    long = tmp_path / "long.ntf"
    long.write_bytes(bytes(raw))
    assert_bands_like_gdal(chunkref_bin, long)


def test_uncompressed_block_cut_short_is_refused(tmp_path, chunkref_bin):
    """An uncompressed block of several the file ends inside (GDAL fails on
    its last rows): refused at index time, naming the block. (A one-block
    image GDAL reads line by line, and so does ChunkRef: see
    test_nitf_real_jpeg.py.)"""
    source = write_nitf(tmp_path / "src.ntf", options=["BLOCKXSIZE=32", "BLOCKYSIZE=32"])
    short = tmp_path / "short.ntf"
    short.write_bytes(source.read_bytes()[:-3])
    done = run_chunkref(chunkref_bin, "index", short, "-o", tmp_path / "short.json")
    assert done.returncode != 0
    assert "runs past the end of the file" in done.stderr
    assert "of band group 0" in done.stderr
