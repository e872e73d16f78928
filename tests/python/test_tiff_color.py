"""8-bit CMYK and CIELab TIFF (issue 41): GDAL's GTiff driver opens them
as RGBA through libtiff's RGBA interface (4 bands, an alpha mask), and so
does ChunkRef; ``RAW_COLOR=YES`` shows the stored components, as GDAL's
``GTIFF_RAW:`` prefix does.  Images GDAL keeps as stored (16-bit) stay so.
GDAL itself is the oracle: band count, colour interpretations, mask flags
and every pixel."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from osgeo import gdal

from conftest import run_chunkref
from raster_checks import open_chunkref

gdal.UseExceptions()

LAYOUTS = {
    "strips": [],
    "strips-deflate": ["COMPRESS=DEFLATE", "BLOCKYSIZE=5"],
    "tiles": ["TILED=YES", "BLOCKXSIZE=16", "BLOCKYSIZE=16"],
    "tiles-lzw-predictor": ["TILED=YES", "BLOCKXSIZE=16", "BLOCKYSIZE=16", "COMPRESS=LZW",
                            "PREDICTOR=2"],
    "tiles-zstd": ["TILED=YES", "BLOCKXSIZE=32", "BLOCKYSIZE=16", "COMPRESS=ZSTD"],
    "jpeg": ["COMPRESS=JPEG"],
}


def make_tiff(path: Path, photometric: str, bands: int, gdal_type: int, options: list[str]):
    """A 37 x 29 image of pseudo-random samples (every value of a byte:
    signed a*, b* included), written by GDAL's GTiff driver."""
    rng = np.random.default_rng(41)
    dtype = np.uint8 if gdal_type == gdal.GDT_Byte else np.uint16
    ds = gdal.GetDriverByName("GTiff").Create(
        str(path), 37, 29, bands, gdal_type, options=[f"PHOTOMETRIC={photometric}", *options]
    )
    for b in range(bands):
        ds.GetRasterBand(b + 1).WriteArray(
            rng.integers(0, np.iinfo(dtype).max + 1, (29, 37)).astype(dtype)
        )
    ds = None


def index(chunkref_bin: Path, tif: Path, out: Path) -> dict:
    done = run_chunkref(chunkref_bin, "index", tif, "-o", out)
    assert done.returncode == 0, done.stderr
    return json.loads(out.read_text())


def assert_same(got: gdal.Dataset, want: gdal.Dataset):
    """Same bands, colour interpretations, mask flags and pixels."""
    assert got.RasterCount == want.RasterCount
    for b in range(1, want.RasterCount + 1):
        g, w = got.GetRasterBand(b), want.GetRasterBand(b)
        assert g.GetColorInterpretation() == w.GetColorInterpretation(), b
        assert g.GetMaskFlags() == w.GetMaskFlags(), b
    np.testing.assert_array_equal(got.ReadAsArray(), want.ReadAsArray())


# GDAL 3.6 writes uncompressed CIELab tiles of 4 samples (1024 bytes for a
# 16 x 16 tile of 3) and cannot read back CIELab in JPEG: no oracle there.
CASES = [("CMYK", 4, layout) for layout in LAYOUTS] + [
    ("CIELAB", 3, layout) for layout in LAYOUTS if layout not in ("tiles", "jpeg")
]


@pytest.mark.parametrize("photometric,bands,layout", CASES)
def test_8bit_cmyk_and_cielab_read_as_gdal_rgba(tmp_path, chunkref_bin, photometric, bands,
                                                layout):
    tif = tmp_path / "color.tif"
    make_tiff(tif, photometric, bands, gdal.GDT_Byte, LAYOUTS[layout])
    doc = index(chunkref_bin, tif, tmp_path / "color.json")
    assert f'"color_to_rgba":"{photometric.lower()}"' in json.dumps(
        doc, separators=(",", ":")).replace("\\", "")
    want = gdal.Open(str(tif))
    assert want.RasterCount == 4
    assert want.GetRasterBand(1).GetMaskFlags() == gdal.GMF_ALPHA | gdal.GMF_PER_DATASET
    assert_same(open_chunkref(tmp_path / "color.json"), want)
    # A window that is not a whole block, and an overview-free decimated read.
    got = open_chunkref(tmp_path / "color.json")
    np.testing.assert_array_equal(got.ReadAsArray(3, 7, 20, 13), want.ReadAsArray(3, 7, 20, 13))
    # The stored components: GDAL's GTIFF_RAW: view.
    raw = open_chunkref(tmp_path / "color.json", ["RAW_COLOR=YES"])
    assert_same(raw, gdal.Open(f"GTIFF_RAW:{tif}"))
    # The default view is unchanged by a raw open before it (no shared index).
    assert_same(open_chunkref(tmp_path / "color.json", ["RAW_COLOR=NO"]), want)


@pytest.mark.parametrize("photometric,bands", [("CMYK", 4), ("CIELAB", 3)])
def test_16bit_cmyk_and_cielab_stay_stored_as_in_gdal(tmp_path, chunkref_bin, photometric,
                                                       bands):
    tif = tmp_path / "color16.tif"
    make_tiff(tif, photometric, bands, gdal.GDT_UInt16, ["COMPRESS=DEFLATE"])
    doc = index(chunkref_bin, tif, tmp_path / "color16.json")
    assert "color_to_rgba" not in json.dumps(doc)
    want = gdal.Open(str(tif))
    assert want.RasterCount == bands
    assert_same(open_chunkref(tmp_path / "color16.json"), want)
    assert_same(open_chunkref(tmp_path / "color16.json", ["RAW_COLOR=YES"]), want)


def test_separate_planes_stay_stored_with_a_warning(tmp_path, chunkref_bin):
    """GDAL converts CMYK in separate planes too; a chunk here holds one
    plane, so chunkref serves the stored components (GDAL's GTIFF_RAW:
    view) and says so at index time."""
    tif = tmp_path / "planes.tif"
    make_tiff(tif, "CMYK", 4, gdal.GDT_Byte, ["INTERLEAVE=BAND"])
    done = run_chunkref(chunkref_bin, "index", tif, "-o", tmp_path / "planes.json")
    assert done.returncode == 0 and "separate planes" in done.stderr, done.stderr
    assert_same(open_chunkref(tmp_path / "planes.json"), gdal.Open(f"GTIFF_RAW:{tif}"))
