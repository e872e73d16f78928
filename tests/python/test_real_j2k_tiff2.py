"""More JPEG 2000 and TIFF structures found in files others wrote (issue 28),
each rebuilt here with GDAL or ``opj_compress`` (and small byte-level edits
of their files), indexed by ``chunkref index`` and read through ChunkRef and
through GDAL's own driver: properties and every pixel of every level must
be the same.

- one-tile codestreams GDAL reads through an OpenJPEG decode area (a tile
  the size of an image over 1024 pixels, or larger than the image): their
  reduced levels go on where the tile stops halving;
- bytes after the last tile-part: two (taken for the end marker) read as
  GDAL reads them, more are refused naming them (GDAL reads no pixel);
- a paletted JP2 inside a NITF image segment: no reduced levels;
- TIFF colour maps with a nodata value: that entry transparent;
- one-band 1-bit TIFFs: a palette of black and white (white and black for
  MinIsWhite);
- ``.ovr`` and ``.msk`` sidecars beside a TIFF: overview levels and the
  per-dataset mask GDAL reads from them.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
from osgeo import gdal

from conftest import run_chunkref
from raster_checks import config_options, open_chunkref
from test_nitf_real_codecs import box, write_c8
from test_real_j2k_tiff import assert_reads_like_gdal, index, opj_compress, pattern

gdal.UseExceptions()


# --------------------------------------------------------------------------
# JPEG 2000: reduced levels of one-tile codestreams
# --------------------------------------------------------------------------

#: name: (width, height, opj_compress arguments, overviews GDAL offers)
ONE_TILE = {
    # One 1101 x 333 tile: over 1024 wide, decode area; 1101 stops halving
    # at once, GDAL's levels go on while the previous one is over 128.
    "wide-reversible": (1101, 333, ["-n", "6"], 4),
    "wide-irreversible": (1101, 333, ["-n", "6", "-I"], 4),
    # 301 x 1203 in one tile, only 4 resolutions coded: 3 levels.
    "tall-few-resolutions": (301, 1203, ["-n", "4"], 3),
    # An image smaller than its one tile: decode area too.
    "tile-larger-than-image": (601, 401, ["-n", "5", "-t", "1024,1024"], 3),
    # One odd tile of at most 1024 pixels: GDAL reads it tile by tile and
    # offers no reduced level.
    "small-odd-tile": (601, 401, ["-n", "5"], 0),
    # A tile vastly larger than the image: the chunk is the image (a chunk
    # of the tile's size would be 1.6 GB decoded).
    "tile-vastly-larger-than-image": (64, 48, ["-n", "3", "-t", "40000,40000"], 0),
}


@pytest.mark.parametrize("name", list(ONE_TILE))
def test_one_tile_levels_read_like_gdal(tmp_path, chunkref_bin, name):
    width, height, args, overviews = ONE_TILE[name]
    source = opj_compress(tmp_path, pattern(1, height, width), False, *args)
    ours = assert_reads_like_gdal(index(chunkref_bin, source, tmp_path / "i.json"), source)
    assert ours.GetRasterBand(1).GetOverviewCount() == overviews


# --------------------------------------------------------------------------
# JPEG 2000: bytes after the last tile-part
# --------------------------------------------------------------------------


def gdal_j2k(path: Path) -> bytes:
    """A lossless one-band codestream of GDAL's, ending with EOC."""
    mem = gdal.GetDriverByName("MEM").Create("", 200, 150, 1, gdal.GDT_Byte)
    mem.GetRasterBand(1).WriteArray(pattern(1, 150, 200)[0].astype(np.uint8))
    gdal.GetDriverByName("JP2OpenJPEG").CreateCopy(
        str(path), mem, options=["CODEC=J2K", "REVERSIBLE=YES", "QUALITY=100"]
    )
    data = path.read_bytes()
    assert data[-2:] == b"\xff\xd9"
    return data


def test_two_bytes_in_place_of_eoc_read_like_gdal(tmp_path, chunkref_bin):
    source = tmp_path / "junk2.j2k"
    source.write_bytes(gdal_j2k(tmp_path / "t.j2k")[:-2] + b"\x12\x34")
    assert_reads_like_gdal(index(chunkref_bin, source, tmp_path / "i.json"), source)


@pytest.mark.parametrize("tail", [b"\x80\x80\xff\xd9", b"\x19\xc0\x6d\xdb", b"\x00"])
def test_stray_bytes_after_the_last_tile_part_are_refused(tmp_path, chunkref_bin, tail):
    source = tmp_path / "stray.j2k"
    source.write_bytes(gdal_j2k(tmp_path / "t.j2k")[:-2] + tail)
    # GDAL opens it but reads no pixel.
    native = gdal.Open(str(source))
    with pytest.raises(RuntimeError):
        native.GetRasterBand(1).ReadAsArray()
    done = run_chunkref(chunkref_bin, "index", source, "-o", tmp_path / "i.json")
    assert done.returncode != 0
    assert f"ends with {len(tail)} stray bytes" in done.stderr, done.stderr
    assert "after its last tile-part" in done.stderr, done.stderr


def test_tile_too_large_to_decode_is_refused_at_index_time(tmp_path, chunkref_bin):
    # openjpeg-data's issue432.jp2: 1109 x 2098808 pixels in 10^6 x 10^6
    # tiles; GDAL opens it and fails to allocate a block. Here a codestream
    # of GDAL's with its SIZ made 2000 x 3000000 pixels in such tiles.
    data = bytearray(gdal_j2k(tmp_path / "t.j2k"))
    assert data[2:4] == b"\xff\x51"
    struct.pack_into(">II", data, 8, 2000, 3_000_000)  # Xsiz, Ysiz
    struct.pack_into(">II", data, 24, 1_000_000, 1_000_000)  # XTsiz, YTsiz
    source = tmp_path / "huge-tiles.j2k"
    source.write_bytes(bytes(data))
    done = run_chunkref(chunkref_bin, "index", source, "-o", tmp_path / "i.json")
    assert done.returncode != 0
    assert "chunk shape [1, 1000000, 2000]" in done.stderr, done.stderr
    assert "cannot be decoded in memory" in done.stderr, done.stderr
    assert not (tmp_path / "i.json").exists()


# --------------------------------------------------------------------------
# NITF: a paletted JP2 as the image data of a C8 segment
# --------------------------------------------------------------------------


def paletted_jp2_in_nitf(tmp_path: Path) -> tuple[Path, Path]:
    """A one-band C8 NITF of GDAL's (tiled, so its codestream has reduced
    levels GDAL offers), and a copy whose codestream is wrapped in a JP2
    file with a ``pclr`` palette of 256 entries."""
    data = pattern(1, 600, 500).astype(np.uint8)
    raw = write_c8(tmp_path / "raw.ntf", data, ["BLOCKXSIZE=256", "BLOCKYSIZE=256"])
    f = bytearray(raw.read_bytes())
    hl, lish, li = int(f[354:360]), int(f[363:369]), int(f[369:379])
    start = hl + lish
    codestream = bytes(f[start : start + li])
    entries = b"".join(bytes([i, 255 - i, (7 * i) % 256]) for i in range(256))
    pclr = box(b"pclr", struct.pack(">HB", 256, 3) + b"\x07\x07\x07" + entries)
    ihdr = box(b"ihdr", struct.pack(">IIHBBBB", 600, 500, 1, 7, 7, 0, 0))
    colr = box(b"colr", struct.pack(">BBBI", 1, 0, 0, 17))
    jp2 = (
        box(b"jP  ", b"\r\n\x87\n")
        + box(b"ftyp", b"jp2 \0\0\0\0jp2 ")
        + box(b"jp2h", ihdr + colr + pclr)
        + box(b"jp2c", codestream)
    )
    out = f[:start] + jp2 + f[start + li :]
    out[369:379] = b"%010d" % len(jp2)
    out[342:354] = b"%012d" % len(out)
    source = tmp_path / "pclr.ntf"
    source.write_bytes(bytes(out))
    return raw, source


def test_paletted_jp2_in_nitf_has_no_reduced_levels(tmp_path, chunkref_bin):
    raw, source = paletted_jp2_in_nitf(tmp_path)
    unwrapped = gdal.Open(str(raw))
    assert unwrapped.GetRasterBand(1).GetOverviewCount() > 0
    ours = assert_reads_like_gdal(index(chunkref_bin, source, tmp_path / "i.json"), source)
    assert ours.GetRasterBand(1).GetOverviewCount() == 0


# --------------------------------------------------------------------------
# TIFF: colour tables
# --------------------------------------------------------------------------


def gtiff(path: Path, data: np.ndarray, options=(), nodata=None, table=None) -> Path:
    bands, height, width = data.shape
    ds = gdal.GetDriverByName("GTiff").Create(
        str(path), width, height, bands, gdal.GDT_Byte, list(options)
    )
    for b in range(bands):
        band = ds.GetRasterBand(b + 1)
        if table is not None:
            band.SetColorTable(table)
        if nodata is not None:
            band.SetNoDataValue(nodata)
        band.WriteArray(data[b])
    ds = None
    return path


@pytest.mark.parametrize("nodata", [None, 3, 7.9, 300])
def test_colour_map_nodata_entry_is_transparent(tmp_path, chunkref_bin, nodata):
    table = gdal.ColorTable()
    for i in range(256):
        table.SetColorEntry(i, (i, 255 - i, (3 * i) % 256, 255))
    data = (pattern(1, 300, 260) % 16).astype(np.uint8)
    source = gtiff(tmp_path / "pal.tif", data, ["TILED=YES"], nodata, table)
    ds = gdal.Open(str(source), gdal.GA_Update)
    ds.BuildOverviews("NEAREST", [2])
    ds = None
    ours = assert_reads_like_gdal(index(chunkref_bin, source, tmp_path / "i.json"), source)
    entries = [ours.GetRasterBand(1).GetColorTable().GetColorEntry(i) for i in range(256)]
    transparent = [i for i, e in enumerate(entries) if e[3] == 0]
    assert transparent == ([] if nodata in (None, 300) else [int(nodata)])


@pytest.mark.parametrize("photometric", ["MINISBLACK", "MINISWHITE"])
@pytest.mark.parametrize("nodata", [None, 1])
def test_one_bit_band_is_black_and_white_palette(tmp_path, chunkref_bin, photometric, nodata):
    data = (pattern(1, 90, 70) % 2).astype(np.uint8)
    options = ["NBITS=1", f"PHOTOMETRIC={photometric}"]
    source = gtiff(tmp_path / "bit.tif", data, options, nodata)
    ours = assert_reads_like_gdal(index(chunkref_bin, source, tmp_path / "i.json"), source)
    band = ours.GetRasterBand(1)
    assert band.GetColorInterpretation() == gdal.GCI_PaletteIndex


def test_one_bit_bands_of_several_stay_grey(tmp_path, chunkref_bin):
    data = (pattern(2, 90, 70) % 2).astype(np.uint8)
    source = gtiff(tmp_path / "bits.tif", data, ["NBITS=1"])
    ours = assert_reads_like_gdal(index(chunkref_bin, source, tmp_path / "i.json"), source)
    assert ours.GetRasterBand(1).GetColorTable() is None


# --------------------------------------------------------------------------
# TIFF: .ovr and .msk sidecars
# --------------------------------------------------------------------------


def rgb_tiff(tmp_path: Path, name: str = "rgb.tif") -> Path:
    return gtiff(
        tmp_path / name,
        pattern(3, 300, 280).astype(np.uint8),
        ["TILED=YES", "BLOCKXSIZE=64", "BLOCKYSIZE=64", "COMPRESS=DEFLATE"],
    )


def test_external_overviews_are_levels(tmp_path, chunkref_bin):
    source = rgb_tiff(tmp_path)
    ds = gdal.Open(str(source))  # read-only: gdaladdo -ro writes a .ovr
    with config_options({"COMPRESS_OVERVIEW": "DEFLATE"}):
        ds.BuildOverviews("AVERAGE", [2, 4, 8])
    ds = None
    assert (tmp_path / "rgb.tif.ovr").is_file()
    ours = assert_reads_like_gdal(index(chunkref_bin, source, tmp_path / "i.json"), source)
    assert ours.GetRasterBand(1).GetOverviewCount() == 3
    assert str(tmp_path / "rgb.tif.ovr") in ours.GetFileList()


def test_internal_overviews_win_over_external_ones(tmp_path, chunkref_bin):
    source = rgb_tiff(tmp_path)
    ds = gdal.Open(str(source), gdal.GA_Update)
    ds.BuildOverviews("NEAREST", [2])
    ds = None
    other = rgb_tiff(tmp_path, "other.tif")
    ds = gdal.Open(str(other))
    ds.BuildOverviews("NEAREST", [2, 4])
    ds = None
    (tmp_path / "other.tif.ovr").rename(tmp_path / "rgb.tif.ovr")
    ours = assert_reads_like_gdal(index(chunkref_bin, source, tmp_path / "i.json"), source)
    assert ours.GetRasterBand(1).GetOverviewCount() == 1


def test_external_overviews_of_other_bands_are_left_out(tmp_path, chunkref_bin):
    source = rgb_tiff(tmp_path)
    grey = gtiff(tmp_path / "grey.tif", pattern(1, 150, 140).astype(np.uint8))
    grey.rename(tmp_path / "rgb.tif.ovr")
    done = run_chunkref(chunkref_bin, "index", source, "-o", tmp_path / "i.json")
    assert done.returncode == 0, done.stderr
    assert "external overviews" in done.stderr and "left out" in done.stderr, done.stderr
    ours = open_chunkref(tmp_path / "i.json")
    assert ours.GetRasterBand(1).GetOverviewCount() == 0


def with_external_mask(source: Path, flags: int) -> Path:
    """``source`` with a ``.msk`` mask GDAL writes (``flags``: 2 for one
    mask shared by every band, 0 for one per band)."""
    with config_options({"GDAL_TIFF_INTERNAL_MASK": "NO"}):
        ds = gdal.Open(str(source), gdal.GA_Update)
        if flags == gdal.GMF_PER_DATASET:
            ds.CreateMaskBand(gdal.GMF_PER_DATASET)
            bands = [ds.GetRasterBand(1).GetMaskBand()]
        else:
            bands = []
            for b in range(1, ds.RasterCount + 1):
                ds.GetRasterBand(b).CreateMaskBand(0)
                bands.append(ds.GetRasterBand(b).GetMaskBand())
        y, x = np.mgrid[0 : ds.RasterYSize, 0 : ds.RasterXSize]
        for k, mask in enumerate(bands):
            mask.WriteArray((((x + 3 * y + k) % 17) > 4).astype(np.uint8) * 255)
        ds = None
    assert Path(str(source) + ".msk").is_file()
    return source


def test_external_mask_is_the_dataset_mask(tmp_path, chunkref_bin):
    source = with_external_mask(rgb_tiff(tmp_path), gdal.GMF_PER_DATASET)
    ours = assert_reads_like_gdal(index(chunkref_bin, source, tmp_path / "i.json"), source)
    native = gdal.Open(str(source))
    for b in range(1, 4):
        assert ours.GetRasterBand(b).GetMaskFlags() == gdal.GMF_PER_DATASET
        expected = native.GetRasterBand(b).GetMaskBand().ReadAsArray()
        got = ours.GetRasterBand(b).GetMaskBand().ReadAsArray()
        assert np.array_equal(got, expected), f"band {b} mask"


def test_per_band_external_masks_are_left_out(tmp_path, chunkref_bin):
    source = with_external_mask(rgb_tiff(tmp_path), 0)
    native = gdal.Open(str(source))
    assert native.GetRasterBand(1).GetMaskFlags() == 0
    done = run_chunkref(chunkref_bin, "index", source, "-o", tmp_path / "i.json")
    assert done.returncode == 0, done.stderr
    assert "external mask" in done.stderr and "left out" in done.stderr, done.stderr
    ours = open_chunkref(tmp_path / "i.json")
    assert ours.GetRasterBand(1).GetMaskFlags() == gdal.GMF_ALL_VALID
