"""JPEG 2000 and TIFF structures found in files others wrote (issue 28), each
rebuilt here with GDAL or ``opj_compress`` (and, where neither writes the
structure, a small byte-level edit of such a file), indexed by ``chunkref
index`` and read through ChunkRef and through GDAL's own driver (JP2OpenJPEG,
GTiff): properties and every pixel of every level must be the same.

- signed codestreams of 8 bits or fewer: GDAL shows them as Byte, negative
  samples clamped to 0, at every level;
- JP2 boxes whose length runs past the end of the file or of their parent;
- image and tile origins other than (0, 0);
- ``colr``/``cdef`` colour spaces and channel order, opacity channels;
- ``pclr`` palettes: a colour table and no reduced resolutions;
- GeoTIFF tie points without a pixel scale: GCPs and their CRS;
- JPEG-compressed tiles of 4 samples per pixel;
- Float32 nodata values, rounded to Float32 as GDAL reports them.
"""

from __future__ import annotations

import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest
from osgeo import gdal, osr

from conftest import run_chunkref
from raster_checks import describe, open_chunkref

gdal.UseExceptions()


# --------------------------------------------------------------------------
# Comparison with GDAL's own driver
# --------------------------------------------------------------------------


def same_srs(a: osr.SpatialReference | None, b: osr.SpatialReference | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return bool(a.IsSame(b))


def assert_reads_like_gdal(
    index_path: Path, source: Path, unreadable_overviews: int = 0
) -> gdal.Dataset:
    """Properties, CRSs and the pixels of every level of the ChunkRef
    dataset equal those GDAL's own driver reads from ``source``; GDAL's
    last ``unreadable_overviews`` overviews, which GDAL fails to read, are
    left out of the index."""
    native = gdal.Open(str(source))
    ours = open_chunkref(index_path)
    n, c = describe(native), describe(ours)
    for band in n["bands"]:
        band["overviews"] -= unreadable_overviews
    assert c == n
    for k in range(unreadable_overviews):
        overview = native.GetRasterBand(1).GetOverview(n["bands"][0]["overviews"] + k)
        with pytest.raises(RuntimeError):
            overview.ReadAsArray()
    assert same_srs(ours.GetSpatialRef(), native.GetSpatialRef()), "CRS"
    assert same_srs(ours.GetGCPSpatialRef(), native.GetGCPSpatialRef()), "GCP CRS"
    for i in range(1, native.RasterCount + 1):
        nb, cb = native.GetRasterBand(i), ours.GetRasterBand(i)
        pairs = [(nb, cb)] + [
            (nb.GetOverview(k), cb.GetOverview(k)) for k in range(cb.GetOverviewCount())
        ]
        for level, (x, y) in enumerate(pairs):
            assert (y.XSize, y.YSize) == (x.XSize, x.YSize), f"band {i} level {level} size"
            a, b = x.ReadAsArray(), y.ReadAsArray()
            assert b.dtype == a.dtype, f"band {i} level {level} dtype"
            assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), (
                f"band {i} level {level}: {int((a != b).sum())} pixels differ"
            )
    return ours


def index(binary: Path, source: Path, out: Path) -> Path:
    done = run_chunkref(binary, "index", source, "-o", out)
    assert done.returncode == 0, f"chunkref index failed:\n{done.stderr}"
    return out


def pattern(bands: int, height: int, width: int) -> np.ndarray:
    """Gradients with texture, 0..250."""
    y, x = np.mgrid[0:height, 0:width]
    return np.stack([(x * (b + 1) + y * 2 + (x * y) % (7 + b)) % 251 for b in range(bands)])


def opj_compress(tmp_path: Path, planes: np.ndarray, signed: bool, *args: str) -> Path:
    """A codestream of ``planes`` (components, y, x; 8-bit) by opj_compress."""
    comps, height, width = planes.shape
    raw = tmp_path / "in.raw"
    raw.write_bytes(planes.astype(np.int8 if signed else np.uint8).tobytes())
    out = tmp_path / "out.j2k"
    sign = "s" if signed else "u"
    subprocess.run(
        ["opj_compress", "-i", raw, "-o", out, "-F", f"{width},{height},{comps},8,{sign}", *args],
        check=True,
        capture_output=True,
    )
    return out


def gdal_jp2(
    path: Path,
    data: np.ndarray,
    *options: str,
    table: gdal.ColorTable | None = None,
    colours: tuple[int, ...] = (),
) -> Path:
    """A lossless JP2 of the (bands, y, x) Byte ``data`` written by GDAL,
    band 1 with colour table ``table``, bands with colour interpretations
    ``colours``."""
    bands, height, width = data.shape
    mem = gdal.GetDriverByName("MEM").Create("", width, height, bands, gdal.GDT_Byte)
    for b in range(bands):
        mem.GetRasterBand(b + 1).WriteArray(data[b])
    for b, colour in enumerate(colours):
        mem.GetRasterBand(b + 1).SetColorInterpretation(colour)
    if table is not None:
        mem.GetRasterBand(1).SetColorTable(table)
    gdal.Translate(
        str(path),
        mem,
        format="JP2OpenJPEG",
        creationOptions=["REVERSIBLE=YES", "QUALITY=100", *options],
    )
    return path


def boxes(data: bytes, start: int = 0, end: int | None = None) -> list[tuple[bytes, int, int]]:
    """(type, offset, length) of the boxes in ``data[start:end]``."""
    end = len(data) if end is None else end
    out, at = [], start
    while at + 8 <= end:
        length, kind = struct.unpack(">I4s", data[at : at + 8])
        out.append((kind, at, length))
        at += length
    return out


def box(kind: bytes, payload: bytes) -> bytes:
    return struct.pack(">I4s", 8 + len(payload), kind) + payload


def replace_in_jp2h(data: bytes, keep, extra: bytes) -> bytes:
    """``data`` with its ``jp2h`` box holding the children ``keep(type)``
    accepts followed by ``extra`` (whole boxes)."""
    (_, at, length), = [b for b in boxes(data) if b[0] == b"jp2h"]
    children = b"".join(
        data[o : o + n] for kind, o, n in boxes(data, at + 8, at + length) if keep(kind)
    )
    return data[:at] + box(b"jp2h", children + extra) + data[at + length :]


# --------------------------------------------------------------------------
# JPEG 2000
# --------------------------------------------------------------------------


def test_signed_8bit_reads_as_gdal_byte_at_every_level(tmp_path, chunkref_bin):
    # GDAL 3.6 makes <= 8-bit signed components Byte (no PIXELTYPE) and
    # clamps negative samples to 0, at full and reduced resolution alike.
    planes = (pattern(2, 300, 260) - 125).astype(np.int8)
    source = opj_compress(tmp_path, planes, True, "-t", "128,128", "-n", "3")
    ours = assert_reads_like_gdal(index(chunkref_bin, source, tmp_path / "s.json"), source)
    band = ours.GetRasterBand(1)
    assert band.GetOverviewCount() == 2
    assert band.GetOverview(0).GetMetadataItem("PIXELTYPE", "IMAGE_STRUCTURE") is None
    assert band.ReadAsArray().min() == 0


def test_box_lengths_past_the_end_are_tolerated(tmp_path, chunkref_bin):
    data = gdal_jp2(tmp_path / "src.jp2", pattern(3, 150, 170)).read_bytes()
    # A jp2c box that claims 103 bytes more than the file has.
    (_, at, length), = [b for b in boxes(data) if b[0] == b"jp2c"]
    long_jp2c = tmp_path / "long_jp2c.jp2"
    long_jp2c.write_bytes(data[:at] + struct.pack(">I", length + 103) + data[at + 4 :])
    # A trailing box that claims far more than is left.
    trailing = tmp_path / "trailing.jp2"
    trailing.write_bytes(data + struct.pack(">I4s", 1 << 30, b"dstr") + b"x" * 40)
    # A colr box running past the end of its jp2h box: GDAL reads no colour.
    colr = struct.pack(">I4s", 1 << 22, b"colr") + bytes([1, 0, 0, 0, 0, 0, 16])
    past_parent = tmp_path / "past_parent.jp2"
    past_parent.write_bytes(replace_in_jp2h(data, lambda k: k == b"ihdr", colr))
    for source in (long_jp2c, trailing, past_parent):
        out = index(chunkref_bin, source, tmp_path / f"{source.stem}.json")
        assert_reads_like_gdal(out, source)
    colours = describe(gdal.Open(str(past_parent)))["bands"]
    assert [b["colour"] for b in colours] == ["Undefined"] * 3


def test_image_and_tile_origins(tmp_path, chunkref_bin):
    # Tiles at the image origin (8, 8): every reduced resolution is the size
    # GDAL's halving says.
    planes = pattern(3, 290, 270)
    source = opj_compress(tmp_path, planes, False, "-d", "8,8", "-T", "8,8", "-t", "128,128", "-n", "3")
    ours = assert_reads_like_gdal(index(chunkref_bin, source, tmp_path / "o.json"), source)
    assert (ours.RasterXSize, ours.RasterYSize) == (270, 290)
    assert ours.GetRasterBand(1).GetOverviewCount() == 2


def test_origin_levels_stop_where_gdal_cannot_read(tmp_path, chunkref_bin):
    # Image at (3, 5): at resolution level 2 the image is 68 x 72 (its
    # corners divided by 4, rounded up), GDAL's halving says 68 x 73, and
    # GDAL fails to read that overview: the index stops before it.
    planes = pattern(3, 290, 270)
    source = opj_compress(tmp_path, planes, False, "-d", "3,5", "-T", "3,5", "-t", "64,64", "-n", "3")
    ours = assert_reads_like_gdal(
        index(chunkref_bin, source, tmp_path / "o.json"), source, unreadable_overviews=1
    )
    assert ours.GetRasterBand(1).GetOverviewCount() == 1


def test_tiles_off_the_image_origin_are_refused(tmp_path, chunkref_bin):
    source = opj_compress(
        tmp_path, pattern(1, 100, 90), False, "-d", "17,12", "-T", "8,2", "-t", "37,37"
    )
    done = run_chunkref(chunkref_bin, "index", source, "-o", tmp_path / "r.json")
    assert done.returncode != 0
    assert "tile grid not aligned with the image" in done.stderr


def cdef(*entries: tuple[int, int, int]) -> bytes:
    return box(b"cdef", struct.pack(">H", len(entries)) + b"".join(struct.pack(">3H", *e) for e in entries))


def colr(enum: int) -> bytes:
    return box(b"colr", bytes([1, 0, 0]) + struct.pack(">I", enum))


COLOUR_HEADERS = {
    # Channels stored blue, green, red (as in JITC file2.jp2).
    "bgr": colr(18) + cdef((0, 0, 3), (1, 0, 2), (2, 0, 1)),
    # e-sRGB and ROMM-RGB are shown as RGB; only the last colr counts.
    "romm": colr(17) + colr(21),
    # An entry naming a channel past the bands ends the reading.
    "bad-channel": colr(16) + cdef((0, 0, 1), (9, 0, 2), (2, 0, 3)),
    # Premultiplied opacity (type 2) is no alpha band for GDAL.
    "premultiplied": colr(16) + cdef((0, 0, 1), (1, 0, 2), (2, 2, 0)),
    # Opacity (type 1) is an alpha band.
    "opacity": colr(16) + cdef((0, 0, 1), (1, 1, 0), (2, 0, 3)),
}


@pytest.mark.parametrize("name", list(COLOUR_HEADERS))
def test_colour_boxes_read_as_gdal_reads_them(tmp_path, chunkref_bin, name):
    header = COLOUR_HEADERS[name]
    data = gdal_jp2(tmp_path / "src.jp2", pattern(3, 140, 150)).read_bytes()
    source = tmp_path / f"{name}.jp2"
    source.write_bytes(replace_in_jp2h(data, lambda k: k == b"ihdr", header))
    assert_reads_like_gdal(index(chunkref_bin, source, tmp_path / f"{name}.json"), source)


def test_rgba_alpha_is_a_band_with_its_mask(tmp_path, chunkref_bin):
    data = pattern(4, 200, 180)
    rgba = (gdal.GCI_RedBand, gdal.GCI_GreenBand, gdal.GCI_BlueBand, gdal.GCI_AlphaBand)
    source = gdal_jp2(tmp_path / "rgba.jp2", data, "RESOLUTIONS=2", colours=rgba)
    ours = assert_reads_like_gdal(index(chunkref_bin, source, tmp_path / "rgba.json"), source)
    assert ours.GetRasterBand(4).GetColorInterpretation() == gdal.GCI_AlphaBand


def test_palette_gives_a_colour_table_and_no_overviews(tmp_path, chunkref_bin):
    table = gdal.ColorTable()
    for i in range(251):
        table.SetColorEntry(i, (i, 255 - i, (7 * i) % 256, 255))
    data = pattern(1, 400, 300)
    source = gdal_jp2(tmp_path / "pal.jp2", data, "RESOLUTIONS=4", "BLOCKXSIZE=128", "BLOCKYSIZE=128", table=table)
    ours = assert_reads_like_gdal(index(chunkref_bin, source, tmp_path / "pal.json"), source)
    band = ours.GetRasterBand(1)
    assert band.GetColorInterpretation() == gdal.GCI_PaletteIndex
    assert band.GetOverviewCount() == 0


# --------------------------------------------------------------------------
# TIFF
# --------------------------------------------------------------------------


def mem_dataset(data: np.ndarray, gdal_type: int = gdal.GDT_Byte) -> gdal.Dataset:
    bands, height, width = data.shape
    mem = gdal.GetDriverByName("MEM").Create("", width, height, bands, gdal_type)
    for b in range(bands):
        mem.GetRasterBand(b + 1).WriteArray(data[b])
    return mem


def grid_gcps(width: int, height: int) -> list[gdal.GCP]:
    """A 5 x 4 grid of GCPs on a slightly warped lon/lat surface, with z."""
    gcps = []
    for j in range(4):
        for i in range(5):
            px, ln = i * (width - 1) / 4, j * (height - 1) / 3
            lon = 78.2 - 0.002 * px + 0.0004 * ln + 1e-7 * px * ln
            lat = 10.7 + 0.0004 * px - 0.002 * ln
            gcps.append(gdal.GCP(lon, lat, 250.0 + i + 0.25 * j, px, ln))
    return gcps


@pytest.mark.parametrize(
    "name, srs, area_or_point",
    [
        ("wgs84", "EPSG:4326", None),
        ("utm-point", "EPSG:32633", "Point"),
        ("no-crs", None, None),
    ],
)
def test_tie_points_without_pixel_scale_are_gcps(tmp_path, chunkref_bin, name, srs, area_or_point):
    src = mem_dataset(pattern(1, 300, 280))
    options = {"GCPs": grid_gcps(280, 300), "outputSRS": srs}
    if area_or_point:
        options["metadataOptions"] = [f"AREA_OR_POINT={area_or_point}"]
    source = tmp_path / f"{name}.tif"
    gdal.Translate(str(source), src, creationOptions=["TILED=YES"], **options)
    ours = assert_reads_like_gdal(index(chunkref_bin, source, tmp_path / f"{name}.json"), source)
    assert ours.GetGCPCount() == 20
    assert ours.GetSpatialRef() is None
    assert ours.GetGeoTransform(can_return_null=True) is None


@pytest.mark.parametrize(
    "name, colours, options",
    [
        ("rgba", (gdal.GCI_RedBand, gdal.GCI_GreenBand, gdal.GCI_BlueBand, gdal.GCI_AlphaBand), ()),
        ("four-grey", (), ("PHOTOMETRIC=MINISBLACK",)),
    ],
)
def test_jpeg_tiles_of_four_samples(tmp_path, chunkref_bin, name, colours, options):
    src = mem_dataset(pattern(4, 300, 270))
    for b, colour in enumerate(colours):
        src.GetRasterBand(b + 1).SetColorInterpretation(colour)
    source = tmp_path / f"{name}.tif"
    gdal.Translate(
        str(source),
        src,
        creationOptions=["TILED=YES", "COMPRESS=JPEG", "BLOCKXSIZE=128", "BLOCKYSIZE=128", *options],
    )
    assert_reads_like_gdal(index(chunkref_bin, source, tmp_path / f"{name}.json"), source)


def set_nodata_text(path: Path, text: str) -> None:
    """Rewrite the GDAL_NODATA tag (42113) of the little-endian classic
    TIFF at ``path`` to ``text`` as other writers spell it (GDAL writes the
    Float32-rounded value); ``text`` has 4 characters or more and at most
    as many as GDAL wrote, so it stays where GDAL put it."""
    data = bytearray(path.read_bytes())
    (ifd,) = struct.unpack("<I", data[4:8])
    (count,) = struct.unpack("<H", data[ifd : ifd + 2])
    for k in range(count):
        at = ifd + 2 + 12 * k
        tag, kind, n, value = struct.unpack("<HHII", data[at : at + 12])
        if tag == 42113:
            assert kind == 2 and 4 < len(text) + 1 <= n
            start = value if n > 4 else at + 8
            data[start : start + n] = text.encode() + b"\0" * (n - len(text))
            data[at + 4 : at + 8] = struct.pack("<I", len(text) + 1)
            path.write_bytes(bytes(data))
            return
    raise AssertionError("no GDAL_NODATA tag")


@pytest.mark.parametrize("text", ["-3.4e+38", "-3.40282346638529e+38", "0.10", "-9999"])
def test_float32_nodata_is_rounded_as_gdal_reports_it(tmp_path, chunkref_bin, text):
    # rasterio's float_raster_with_nodata.tif says -3.4e+38; GDAL reports
    # the Float32 the pixels hold, -3.3999999521443642e+38.
    nodata = float(text)
    data = pattern(1, 60, 50).astype(np.float32)
    data[0, :5, :5] = np.float32(nodata)
    source = tmp_path / "f32.tif"
    gdal.Translate(str(source), mem_dataset(data, gdal.GDT_Float32), noData=nodata)
    set_nodata_text(source, text)
    ours = assert_reads_like_gdal(index(chunkref_bin, source, tmp_path / "f32.json"), source)
    band = ours.GetRasterBand(1)
    assert (band.ReadAsArray() == band.GetNoDataValue()).sum() == 25


@pytest.mark.parametrize("nodata", [-10000.0, 300.0, 0.5])
def test_nodata_no_pixel_can_hold(tmp_path, chunkref_bin, nodata):
    # rio-tiler's pix4d_alpha_nodata.tif: a Byte image with nodata -10000,
    # which GDAL reports as written (no pixel matches it).
    source = tmp_path / "byte.tif"
    mem = gdal.GetDriverByName("MEM").Create("", 50, 60, 1, gdal.GDT_Byte)
    mem.GetRasterBand(1).WriteArray(pattern(1, 60, 50)[0].astype(np.uint8))
    mem.GetRasterBand(1).SetNoDataValue(nodata)
    gdal.Translate(str(source), mem)
    native = gdal.Open(str(source))
    assert native.GetRasterBand(1).GetNoDataValue() == nodata
    ours = assert_reads_like_gdal(index(chunkref_bin, source, tmp_path / "byte.json"), source)
    assert ours.GetRasterBand(1).GetNoDataValue() == nodata
