"""Kerchunk's TIFF references (``kerchunk.tiff.tiff_to_zarr``), as the world
writes them.

GeoTIFFs are written with GDAL's GTiff driver (tiled and stripped, pixel-
and band-interleaved, DEFLATE and LZW with predictors 2 and 3, EPSG:4326
and UTM, PixelIsArea and PixelIsPoint, a rotated ModelTransformation,
internal overviews), referenced by kerchunk in a venv with tifffile and
imagecodecs from PyPI (tests/python/kerchunk_tiff_writer.py), and read back
through fsspec + zarr there.  tifffile stores a pixel-interleaved image as
(Y, X, S) and records the GeoTIFF tags and keys as attributes; ChunkRef must
serve the samples as bands, with the georeferencing GDAL's GTiff driver
reads from the source: pixels equal to the GTiff driver's and the writer
stack's, geotransform within GT_TOLERANCE_PIXELS, the same CRS, band count
and AREA_OR_POINT.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from osgeo import gdal, osr

from raster_checks import assert_matches, assert_pixels_equal, config_options, native_levels
from raster_checks import open_chunkref
from test_tables import run_python
from venvs import KERCHUNK_REQUIREMENTS, kerchunk_python

WRITER = Path(__file__).with_name("kerchunk_tiff_writer.py")

#: Geotransform tolerance against GDAL's GTiff driver, in pixels.
GT_TOLERANCE_PIXELS = 1e-9

#: Size of every source (rows per strip divide the height: tifffile's
#: fsspec writer refuses a short last strip).
WIDTH, HEIGHT = 300, 200

GEOGRAPHIC = (4326, (10.0, 0.01, 0.0, 50.0, 0.0, -0.01))
UTM = (32633, (500000.0, 30.0, 0.0, 4000000.0, 0.0, -30.0))
ROTATED = (4326, (10.0, 0.01, 0.001, 50.0, 0.001, -0.01))

#: name -> (bands, GDAL type, creation options, (EPSG, geotransform),
#: PixelIsPoint, overview factors).
SOURCES = {
    "f32-tiled-deflate-fp": (1, gdal.GDT_Float32, ["TILED=YES", "BLOCKXSIZE=128",
                             "BLOCKYSIZE=64", "COMPRESS=DEFLATE", "PREDICTOR=3"],
                             GEOGRAPHIC, False, []),
    "rgb-pixel-lzw-pred2": (3, gdal.GDT_Byte, ["TILED=YES", "COMPRESS=LZW", "PREDICTOR=2",
                            "INTERLEAVE=PIXEL", "PHOTOMETRIC=RGB"], UTM, False, []),
    "u16-pixel-lzw-pred2-point": (3, gdal.GDT_UInt16, ["TILED=YES", "BLOCKXSIZE=64",
                                  "BLOCKYSIZE=32", "COMPRESS=LZW", "PREDICTOR=2",
                                  "INTERLEAVE=PIXEL"], GEOGRAPHIC, True, []),
    "f64-pixel-deflate-fp": (2, gdal.GDT_Float64, ["TILED=YES", "COMPRESS=DEFLATE",
                             "PREDICTOR=3", "INTERLEAVE=PIXEL"], UTM, False, []),
    "band-interleaved-point": (4, gdal.GDT_Byte, ["TILED=YES", "INTERLEAVE=BAND",
                               "COMPRESS=DEFLATE"], GEOGRAPHIC, True, []),
    "strips-rgb-point": (3, gdal.GDT_Byte, ["INTERLEAVE=PIXEL", "BLOCKYSIZE=20"], UTM, True,
                         []),
    "strips-i16-deflate-pred2": (1, gdal.GDT_Int16, ["BLOCKYSIZE=25", "COMPRESS=DEFLATE",
                                 "PREDICTOR=2"], UTM, False, []),
    "rotated": (1, gdal.GDT_Float32, ["TILED=YES"], ROTATED, False, []),
    "rgb-overviews": (3, gdal.GDT_Byte, ["TILED=YES", "COMPRESS=DEFLATE", "INTERLEAVE=PIXEL",
                      "BLOCKXSIZE=64", "BLOCKYSIZE=64"], UTM, False, [2, 4]),
}


def pattern(band: int, dtype: np.dtype) -> np.ndarray:
    """Band ``band``'s pixels: smooth ramps with noise, negative and
    fractional where the type allows."""
    rng = np.random.default_rng(band)
    y, x = np.mgrid[0:HEIGHT, 0:WIDTH]
    values = (x * (band + 1) + 3 * y) % 251 + rng.integers(0, 4, (HEIGHT, WIDTH))
    if dtype.kind == "f":
        return (values * 0.37 - 20.0).astype(dtype)
    if dtype.kind == "i":
        return (values * 97 - 12000).astype(dtype)
    return (values * (1 if dtype.itemsize == 1 else 211)).astype(dtype)


def write_geotiff(path: Path, spec) -> None:
    bands, gdal_type, options, (epsg, gt), point, overviews = spec
    ds = gdal.GetDriverByName("GTiff").Create(str(path), WIDTH, HEIGHT, bands, gdal_type,
                                              options)
    ds.SetGeoTransform(gt)
    srs = osr.SpatialReference()
    srs.ImportFromEPSG(epsg)
    ds.SetSpatialRef(srs)
    if point:
        ds.SetMetadataItem("AREA_OR_POINT", "Point")
    dtype = np.dtype(gdal.GetDataTypeName(gdal_type).lower().replace("byte", "uint8"))
    for b in range(bands):
        ds.GetRasterBand(b + 1).WriteArray(pattern(b, dtype))
    if overviews:
        ds.BuildOverviews("AVERAGE", overviews)
    ds = None


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> tuple[Path, dict]:
    """The sources, kerchunk's stores and the writer stack's arrays."""
    python = kerchunk_python()
    out = tmp_path_factory.mktemp("kerchunk-tiff")
    for name, spec in SOURCES.items():
        write_geotiff(out / f"{name}.tif", spec)
    run_python(python, WRITER.read_text(), out)
    return out, json.loads((out / "manifest.json").read_text())


def writer_levels(out: Path, name: str, entry: dict) -> list[np.ndarray]:
    """Each level the writer's stack read, as (bands, y, x): tifffile's
    (Y, X, S) arrays with their samples first."""
    levels = []
    for array in sorted(entry["arrays"], key=lambda a: -1 if a == "root" else int(a)):
        values = np.load(out / name / f"{array}.npy")
        dims = entry["arrays"][array]["dims"]
        if dims[-1] == "S":
            values = np.moveaxis(values, -1, 0)
        levels.append(values if values.ndim == 3 else values[np.newaxis])
    return levels


def gtiff(out: Path, name: str) -> gdal.Dataset:
    ds = gdal.OpenEx(str(out / f"{name}.tif"), gdal.OF_RASTER, allowed_drivers=["GTiff"])
    assert ds is not None
    return ds


def test_the_stores_are_what_tifffile_writes(written):
    """The cases cover what the issue is about: (Y, X, S) pixel-interleaved
    arrays, (S, Y, X) band-interleaved ones, a multiscale group, and the
    GeoTIFF tags as attributes."""
    _, manifest = written
    dims = {name: manifest[name]["arrays"][next(iter(manifest[name]["arrays"]))]["dims"]
            for name in SOURCES}
    assert dims["rgb-pixel-lzw-pred2"] == ["Y", "X", "S"]
    assert dims["band-interleaved-point"] == ["S", "Y", "X"]
    assert dims["f32-tiled-deflate-fp"] == ["Y", "X"]
    assert sorted(manifest["rgb-overviews"]["arrays"]) == ["0", "1", "2"]
    attrs = manifest["rgb-pixel-lzw-pred2"]["attrs"]
    assert attrs["ProjectedCSTypeGeoKey"] == 32633 and "ModelTiepoint" in attrs
    assert "ModelTransformation" in manifest["rotated"]["attrs"]
    pinned = dict(r.split("==") for r in KERCHUNK_REQUIREMENTS)
    for module in ["kerchunk", "tifffile", "imagecodecs", "zarr", "fsspec"]:
        assert manifest["versions"][module] == pinned[module], module


@pytest.mark.parametrize("name", SOURCES)
def test_writer_stack_reads_what_gtiff_reads(written, name):
    """The expectations are sound: fsspec + zarr over kerchunk's references
    read the pixels GDAL's GTiff driver reads, at every level."""
    out, manifest = written
    ours = writer_levels(out, name, manifest[name])
    theirs = native_levels(gtiff(out, name))
    assert len(ours) == len(theirs)
    for level, (a, b) in enumerate(zip(ours, theirs)):
        assert_pixels_equal(a, b, f"{name} level {level}")


@pytest.mark.parametrize("name", SOURCES)
def test_pixels_equal_the_writer_stack_and_gtiff(written, name):
    """Every band of every level, whole and in odd windows, through the
    block and window paths: the writer stack's arrays, which the previous
    test found equal to GTiff's."""
    out, manifest = written
    ds = open_chunkref(out / f"{name}.json")
    native = gtiff(out, name)
    assert ds.RasterCount == native.RasterCount
    assert_matches(ds, writer_levels(out, name, manifest[name]))
    for b in range(1, ds.RasterCount + 1):
        assert ds.GetRasterBand(b).GetBlockSize() == native.GetRasterBand(b).GetBlockSize()


def assert_same_georeferencing(ds: gdal.Dataset, native: gdal.Dataset, what: str) -> None:
    got, want = ds.GetGeoTransform(), native.GetGeoTransform()
    pixel = max(abs(want[1]), abs(want[5]))
    worst = max(abs(g - w) for g, w in zip(got, want)) / pixel
    assert worst <= GT_TOLERANCE_PIXELS, f"{what}: geotransform {got} != GTiff's {want}"
    ours, theirs = ds.GetSpatialRef(), native.GetSpatialRef()
    assert ours is not None, f"{what} has no CRS"
    assert ours.IsSame(theirs), f"{what} CRS\n{ours.ExportToWkt()}\n!= {theirs.ExportToWkt()}"
    assert ds.GetMetadataItem("AREA_OR_POINT") == native.GetMetadataItem("AREA_OR_POINT"), what


@pytest.mark.parametrize("name", SOURCES)
def test_georeferencing_equals_gtiff(written, name):
    out, _ = written
    ds, native = open_chunkref(out / f"{name}.json"), gtiff(out, name)
    assert_same_georeferencing(ds, native, name)
    for i in range(native.GetRasterBand(1).GetOverviewCount()):
        a, b = ds.GetRasterBand(1).GetOverview(i), native.GetRasterBand(1).GetOverview(i)
        assert (a.XSize, a.YSize) == (b.XSize, b.YSize), f"{name} overview {i}"


@pytest.mark.parametrize("name", ["band-interleaved-point", "strips-rgb-point"])
def test_point_geo_ignore_as_gtiff(written, name):
    """``GTIFF_POINT_GEO_IGNORE=YES`` keeps PixelIsPoint coordinates
    unshifted, for ChunkRef as for GTiff."""
    out, _ = written
    with config_options({"GTIFF_POINT_GEO_IGNORE": "YES", "CHUNKREF_INDEX_CACHE": "NO"}):
        ds, native = open_chunkref(out / f"{name}.json"), gtiff(out, name)
        assert_same_georeferencing(ds, native, name)
        unshifted = ds.GetGeoTransform()
    assert open_chunkref(out / f"{name}.json").GetGeoTransform() != unshifted


def test_pixel_interleaved_bands_share_chunks(written):
    """The samples of a (Y, X, S) chunk are bands of one chunk, as GTiff's
    pixel-interleaved bands are."""
    out, _ = written
    ds = open_chunkref(out / "rgb-pixel-lzw-pred2.json")
    assert ds.GetMetadataItem("INTERLEAVE", "IMAGE_STRUCTURE") == "PIXEL"
    assert [ds.GetRasterBand(b).GetMetadataItem("DIM_S_INDEX") for b in (1, 2, 3)] == [
        "0", "1", "2"]
