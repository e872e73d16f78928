"""Georeferencing and band metadata, read the GDAL way.

Three kinds of sources:

* GeoTIFFs written by GDAL (EPSG:4326, UTM, PixelIsPoint, nodata, RGB,
  RGBA, gray), indexed with ``chunkref index``: ``gdalinfo -json`` on the
  index and on the source must agree on geotransform, CRS (OSR IsSame),
  nodata, colour interpretation and overview sizes, and ``gdalwarp`` from
  both must give the same pixels.
* Stores written by GDAL's Zarr driver (``_CRS`` and X/Y coordinate arrays)
  and by zarr-python with CF attributes (``_FillValue`` as xarray encodes
  it, ``scale_factor``/``add_offset``, ``units``, ``_Unsigned``, ...).
* Hand-written fixtures taken from the GeoZarr seeds' own examples: the
  Sentinel-2 six-level r10m..r720m pyramid, the GeoZarr 0.4 UTM
  TileMatrixSet with a CF ``spatial_ref`` variable.
"""

from __future__ import annotations

import base64
import json
import os
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest
from osgeo import gdal, ogr, osr

import kerchunk_builders as kb
from conftest import run_chunkref
from raster_checks import captured_errors, open_chunkref
from test_j2k import J2K_CASES, write_j2k
from test_j2k import pattern as j2k_pattern
from test_tiff_index import TIFF_CASES, write_tiff

# --------------------------------------------------------------------------
# GeoTIFF sources through ``chunkref index``
# --------------------------------------------------------------------------

#: CRSs without an EPSG code (PROJ strings), as user-defined GeoKeys store them
USER_CRS = {
    "tmerc": "+proj=tmerc +lat_0=0 +lon_0=9.5 +k=0.999 +x_0=100 +y_0=0 +ellps=GRS80 +units=m",
    "lcc": "+proj=lcc +lat_1=40 +lat_2=50 +lat_0=45 +lon_0=10 +x_0=0 +y_0=0 +ellps=GRS80 +units=m",
    "aea": "+proj=aea +lat_1=29.5 +lat_2=45.5 +lat_0=23 +lon_0=-96 +x_0=0 +y_0=0 +datum=NAD83 +units=m",
    "stere": "+proj=stere +lat_0=90 +lat_ts=70 +lon_0=-45 +x_0=0 +y_0=0 +datum=WGS84 +units=m",
    "intl": "+proj=tmerc +lat_0=0 +lon_0=3 +k=0.9996 +x_0=500000 +y_0=0 +ellps=intl "
            "+towgs84=-87,-98,-121,0,0,0,0 +units=m",
}

#: name -> (bands, numpy dtype, EPSG or PROJ string, geotransform, nodata,
#: extra GTiff options, metadata)
GEOTIFF_CASES = {
    "epsg4326-int16-nodata": (
        1, "int16", 4326, (-10.0, 0.01, 0.0, 45.0, 0.0, -0.01), -9999, [], {},
    ),
    "utm-rgb": (3, "uint8", 32633, (500000.0, 10.0, 0.0, 5000000.0, 0.0, -10.0), None,
                ["PHOTOMETRIC=RGB"], {}),
    "utm-rgba-jpeg-ycbcr": (3, "uint8", 32617, (300000.0, 30.0, 0.0, 4500000.0, 0.0, -30.0), None,
                            ["COMPRESS=JPEG", "PHOTOMETRIC=YCBCR"], {}),
    "rgba": (4, "uint8", 32633, (500000.0, 10.0, 0.0, 5000000.0, 0.0, -10.0), None,
             ["PHOTOMETRIC=RGB", "ALPHA=YES"], {}),
    "pixelispoint-float32": (
        1, "float32", 32632, (400000.0, 20.0, 0.0, 6000000.0, 0.0, -20.0), -1.5, [],
        {"AREA_OR_POINT": "Point"},
    ),
    "gray-2band-deflate": (2, "uint16", 3857, (-1000.0, 5.0, 0.0, 2000.0, 0.0, -5.0), 0,
                           ["COMPRESS=DEFLATE"], {}),
    "scaled-int16": (1, "int16", 4326, (5.0, 0.001, 0.0, 50.0, 0.0, -0.001), -32768, [], {}),
    "scaled-per-band-uint16": (3, "uint16", 32633, (500000.0, 10.0, 0.0, 5000000.0, 0.0, -10.0), None,
                               ["INTERLEAVE=BAND"], {}),
    "palette": (1, "uint8", 32633, (500000.0, 10.0, 0.0, 5000000.0, 0.0, -10.0), None,
                ["PHOTOMETRIC=PALETTE"], {}),
    # User-defined projections: GeoKeys without an EPSG code.
    "user-tmerc": (1, "uint8", USER_CRS["tmerc"], (1000.0, 2.0, 0.0, 5000.0, 0.0, -2.0), None, [], {}),
    "user-lcc": (1, "uint16", USER_CRS["lcc"], (-2e5, 50.0, 0.0, 3e5, 0.0, -50.0), 0, [], {}),
    "user-albers-nad83": (1, "uint8", USER_CRS["aea"], (1e6, 30.0, 0.0, 2e6, 0.0, -30.0), None, [], {}),
    "user-polar-stereo": (1, "uint8", USER_CRS["stere"], (-3e6, 1000.0, 0.0, 3e6, 0.0, -1000.0), None, [],
                          {}),
    "user-tmerc-intl-towgs84": (1, "uint8", USER_CRS["intl"], (4e5, 5.0, 0.0, 5e6, 0.0, -5.0), None, [],
                                {}),
}

#: Band scale, offset, unit and description GDAL writes into GDAL_METADATA
#: (one tuple for every band, or one per band).
BAND_PACKING = {
    "scaled-int16": (0.5, 10.0, "m", "terrain height"),
    "scaled-per-band-uint16": [
        (0.0001, -0.1, "reflectance", "B04 red"),
        (0.0002, -0.1, "reflectance", "B03 green"),
        (0.5, 0.0, "K", "B10 brightness temperature"),
    ],
}


def write_geotiff(path: Path, case: str) -> Path:
    """A 301x203 tiled GeoTIFF with two internal overviews (sizes that do
    not divide evenly), written by GDAL."""
    bands, dtype, epsg, gt, nodata, options, metadata = GEOTIFF_CASES[case]
    data = kb.sample_pixels(np.dtype(dtype), (bands, 203, 301))
    ds = gdal.GetDriverByName("GTiff").Create(
        str(path), 301, 203, bands, kb.gdal_type_for(np.dtype(dtype)),
        ["TILED=YES", "BLOCKXSIZE=64", "BLOCKYSIZE=64", *options],
    )
    ds.SetGeoTransform(gt)
    ds.SetSpatialRef(crs_srs(epsg))
    for k, v in metadata.items():
        ds.SetMetadataItem(k, v)
    for b in range(bands):
        band = ds.GetRasterBand(b + 1)
        if case == "palette":
            # Before the pixels: GDAL >= 3.10's GTiff cannot change the
            # photometric interpretation of a file it has written to.
            table = gdal.ColorTable()
            for i in range(256):
                table.SetColorEntry(i, (i, 255 - i, (7 * i) % 256, 255))
            band.SetColorTable(table)
        band.WriteArray(data[b])
        if nodata is not None:
            band.SetNoDataValue(nodata)
        if case in BAND_PACKING:
            packing = BAND_PACKING[case]
            scale, offset, unit, description = packing[b] if isinstance(packing, list) else packing
            band.SetScale(scale)
            band.SetOffset(offset)
            band.SetUnitType(unit)
            band.SetDescription(description)
    ds.BuildOverviews("NEAREST", [2, 4])
    ds = None
    return path


def index_of(chunkref_bin: Path, tif: Path) -> Path:
    out = tif.with_suffix(".json")
    done = run_chunkref(chunkref_bin, "index", tif, "-o", out)
    assert done.returncode == 0, done.stderr
    return out


def epsg_srs(code: int) -> osr.SpatialReference:
    """EPSG:code with GDAL's traditional GIS axis order, as rasters report it."""
    srs = osr.SpatialReference()
    srs.ImportFromEPSG(code)
    srs.SetAxisMappingStrategy(osr.OAMS_TRADITIONAL_GIS_ORDER)
    return srs


def crs_srs(crs: int | str) -> osr.SpatialReference:
    """An EPSG code or a PROJ string, in the traditional GIS axis order."""
    if isinstance(crs, int):
        return epsg_srs(crs)
    srs = osr.SpatialReference()
    srs.ImportFromProj4(crs)
    srs.SetAxisMappingStrategy(osr.OAMS_TRADITIONAL_GIS_ORDER)
    return srs


def assert_same_crs(got: osr.SpatialReference | None, expected: osr.SpatialReference | None) -> None:
    assert (got is None) == (expected is None), (got, expected)
    if expected is not None:
        assert got.IsSame(expected), f"{got.ExportToWkt()}\n!=\n{expected.ExportToWkt()}"


def info_summary(ds: gdal.Dataset) -> dict:
    """The gdalinfo -json fields the index and the source must agree on."""
    info = gdal.Info(ds, format="json")
    return {
        "size": info["size"],
        "geoTransform": info.get("geoTransform"),
        "areaOrPoint": info.get("metadata", {}).get("", {}).get("AREA_OR_POINT"),
        "bands": [
            {
                "noDataValue": b.get("noDataValue"),
                "colorInterpretation": b.get("colorInterpretation"),
                "overviews": [o["size"] for o in b.get("overviews", [])],
                "scale": b.get("scale"),
                "offset": b.get("offset"),
                "unit": b.get("unit"),
                "description": b.get("description"),
                "colorTable": b.get("colorTable"),
            }
            for b in info["bands"]
        ],
    }


@pytest.mark.parametrize("name", ["cog-deflate-pred2-3band", "gtiff-planar-u1-lzw"])
def test_gdal_metadata_colour_interpretation_wins(tmp_path, chunkref_bin, name):
    """RGB-photometric TIFFs GDAL copied from bands of undefined colour
    carry COLORINTERP=Undefined in GDAL_METADATA; the index says so too."""
    tif = write_tiff(tmp_path / f"{name}.tif", TIFF_CASES[name])
    src = gdal.Open(str(tif))
    ds = open_chunkref(index_of(chunkref_bin, tif))
    got = [ds.GetRasterBand(b + 1).GetColorInterpretation() for b in range(ds.RasterCount)]
    want = [src.GetRasterBand(b + 1).GetColorInterpretation() for b in range(src.RasterCount)]
    assert got == want


@pytest.mark.parametrize("case", GEOTIFF_CASES)
def test_geotiff_index_agrees_with_gdalinfo(tmp_path, chunkref_bin, case):
    tif = write_geotiff(tmp_path / "src.tif", case)
    src = gdal.Open(str(tif))
    idx = open_chunkref(index_of(chunkref_bin, tif))
    assert info_summary(idx) == info_summary(src)
    assert_same_crs(idx.GetSpatialRef(), src.GetSpatialRef())
    assert_overviews_cover_base(idx)


@pytest.mark.parametrize(
    "case",
    ["epsg4326-int16-nodata", "utm-rgb", "pixelispoint-float32", "user-lcc", "user-polar-stereo"],
)
@pytest.mark.parametrize(
    "sizing",
    [{"overviewLevel": "NONE"}, {"width": 97, "height": 71}],
    ids=["full-resolution", "through-overviews"],
)
def test_gdalwarp_from_index_matches_source(tmp_path, chunkref_bin, case, sizing):
    tif = write_geotiff(tmp_path / "src.tif", case)
    idx = index_of(chunkref_bin, tif)
    options = dict(dstSRS="EPSG:3857", resampleAlg="bilinear", format="MEM", **sizing)
    want = gdal.Warp("", str(tif), **options).ReadAsArray()
    got = gdal.Warp("", open_chunkref(idx), **options).ReadAsArray()
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)


# --------------------------------------------------------------------------
# GDAL's Zarr convention, CF attributes
# --------------------------------------------------------------------------


@pytest.mark.parametrize("epsg", [4326, 32633])
def test_gdal_zarr_crs_and_coordinates(tmp_path, epsg):
    data = kb.sample_pixels("<u2", (1, 50, 70))
    mem = kb.mem_dataset(data)
    gt = (12.5, 0.25, 0.0, 48.0, 0.0, -0.25) if epsg == 4326 else (500020.0, 30.0, 0.0, 4e6, 0.0, -30.0)
    mem.SetGeoTransform(gt)
    srs = osr.SpatialReference()
    srs.ImportFromEPSG(epsg)
    srs.SetAxisMappingStrategy(osr.OAMS_TRADITIONAL_GIS_ORDER)
    mem.SetSpatialRef(srs)
    store = tmp_path / "g.zarr"
    gdal.Translate(str(store), mem, format="Zarr", creationOptions=["BLOCKSIZE=32,32"])
    index = kb.write_index(tmp_path / "g.json", kb.zarr_store_entries(store))
    oracle = gdal.OpenEx(str(store), allowed_drivers=["Zarr"])
    ds = open_chunkref(index)
    assert ds.GetGeoTransform() == pytest.approx(oracle.GetGeoTransform(), abs=1e-9)
    assert ds.GetGeoTransform() == pytest.approx(gt, abs=1e-9)
    # GDAL 3.6's Zarr driver maps data axes to CRS axes in CRS order; compare
    # the CRS with it, and the whole SRS with the traditional GIS order.
    got = ds.GetSpatialRef()
    assert got.IsSame(oracle.GetSpatialRef(), ["IGNORE_DATA_AXIS_TO_SRS_AXIS_MAPPING=YES"])
    assert_same_crs(got, srs)


def test_pixels_are_read_without_proj_and_the_crs_made_when_asked(tmp_path):
    """As GTiff, reading pixels does not open PROJ's database (10-15 ms on a
    process's first CRS): gdallocationinfo works where PROJ has no data at
    all. The CRS is made when a client asks for it, and a definition OSR
    does not understand is reported then."""
    data = kb.sample_pixels("<u2", (1, 50, 70))
    mem = kb.mem_dataset(data)
    mem.SetGeoTransform((500020.0, 30.0, 0.0, 4e6, 0.0, -30.0))
    mem.SetSpatialRef(epsg_srs(32633))
    store = tmp_path / "g.zarr"
    gdal.Translate(str(store), mem, format="Zarr", creationOptions=["BLOCKSIZE=32,32"])
    entries = kb.zarr_store_entries(store)
    index = kb.write_index(tmp_path / "g.json", entries)
    no_proj = tmp_path / "no-proj"
    no_proj.mkdir()
    env = {**os.environ, "PROJ_DATA": str(no_proj), "PROJ_LIB": str(no_proj)}
    done = subprocess.run(["gdallocationinfo", "-valonly", str(index), "45", "33"],
                          capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(data[0, 33, 45])]
    assert done.stderr == ""
    assert_same_crs(open_chunkref(index).GetSpatialRef(), epsg_srs(32633))
    # A CRS OSR does not understand: pixels read without a word, the
    # warning comes with the first request for the CRS.
    key = next(k for k, v in entries.items() if k.endswith("/.zattrs") and "_CRS" in v)
    bad = kb.write_index(tmp_path / "bad.json",
                         {**entries, key: {**entries[key], "_CRS": {"wkt": "NOT A CRS"}}})
    with captured_errors() as messages:
        ds = open_chunkref(bad)
        assert np.array_equal(ds.ReadAsArray(), data[0])
        assert messages == []
        assert ds.GetSpatialRef() is None
    assert any("is not understood by OSR" in m and "NOT A CRS" in m for m in messages), messages


def zarr_v2_array(values: np.ndarray, dims: list[str], chunks: list[int]) -> dict:
    """Entries of a little-endian, uncompressed v2 array named later by the caller."""
    meta = {"zarr_format": 2, "shape": list(values.shape), "chunks": chunks,
            "dtype": values.dtype.str, "fill_value": None, "order": "C",
            "compressor": None, "filters": None}
    entries = {".zarray": meta, ".zattrs": {"_ARRAY_DIMENSIONS": dims}}
    for idx in kb.all_chunk_indices(values.shape, chunks):
        region = tuple(slice(i * c, (i + 1) * c) for i, c in zip(idx, chunks))
        block = np.zeros(chunks, values.dtype)
        part = values[region]
        block[tuple(slice(0, n) for n in part.shape)] = part
        entries[".".join(map(str, idx))] = block.tobytes()
    return entries


def test_irregular_coordinates_are_the_geolocation_domain(tmp_path):
    """Irregular 1-D x/y arrays: no geotransform, GDAL's GEOLOCATION domain
    naming them as one-row ChunkRef datasets; gdalwarp through them matches
    gdalwarp through the same arrays as GTiff geolocation datasets."""
    data = kb.sample_pixels("<u2", (1, 40, 60))[0]
    xs = 10.0 + np.cumsum(np.linspace(0.01, 0.05, 60))
    ys = 50.0 - np.cumsum(np.linspace(0.02, 0.03, 40))
    entries = {".zgroup": {"zarr_format": 2}}
    for name, values, dims, chunks in (
        ("data", data, ["lat", "lon"], [16, 16]),
        ("lon", xs, ["lon"], [25]),
        ("lat", ys, ["lat"], [25]),
    ):
        for key, v in zarr_v2_array(values, dims, chunks).items():
            entries[f"{name}/{key}"] = v
    entries["data/.zattrs"]["_CRS"] = {"url": "http://www.opengis.net/def/crs/EPSG/0/4326"}
    index = kb.write_index(tmp_path / "irregular.json", kb.sort_entries(entries))
    ds = open_chunkref(index)
    assert ds.GetGeoTransform(can_return_null=True) is None
    geoloc = ds.GetMetadata("GEOLOCATION")
    assert geoloc["X_DATASET"] == f'CHUNKREF:"{index}":lon'
    assert geoloc["Y_DATASET"] == f'CHUNKREF:"{index}":lat'
    assert geoloc["GEOREFERENCING_CONVENTION"] == "PIXEL_CENTER"
    x_ds = gdal.Open(geoloc["X_DATASET"])
    np.testing.assert_array_equal(x_ds.ReadAsArray(), xs[np.newaxis])

    # The oracle: the same pixels and coordinate rows as GTiff files.
    def gtiff(path, array):
        out = gdal.GetDriverByName("GTiff").Create(
            str(path), array.shape[1], array.shape[0], 1, kb.gdal_type_for(array.dtype))
        out.GetRasterBand(1).WriteArray(array)
        return out
    gtiff(tmp_path / "x.tif", xs[np.newaxis])
    gtiff(tmp_path / "y.tif", ys[np.newaxis])
    oracle = gtiff(tmp_path / "data.tif", data)
    oracle.SetMetadata({**geoloc, "X_DATASET": str(tmp_path / "x.tif"),
                        "Y_DATASET": str(tmp_path / "y.tif")}, "GEOLOCATION")
    options = dict(dstSRS="EPSG:4326", format="MEM", width=90, height=70)
    want = gdal.Warp("", oracle, **options)
    got = gdal.Warp("", ds, **options)
    assert got.GetGeoTransform() == want.GetGeoTransform()
    assert want.ReadAsArray().any()
    np.testing.assert_array_equal(got.ReadAsArray(), want.ReadAsArray())


def test_cf_band_attributes(tmp_path):
    data = kb.sample_pixels("<i2", (40, 30)) - 100
    attrs = {
        "_FillValue": -7,
        "scale_factor": 0.01,
        "add_offset": 273.15,
        "units": "K",
        "long_name": "air temperature at 2 m",
        "standard_name": "air_temperature",
        "valid_range": [-1000, 1000],
        "_ARRAY_DIMENSIONS": ["y", "x"],
    }
    floats = kb.sample_pixels("<f4", (40, 30))
    f_attrs = {"_FillValue": base64.b64encode(struct.pack("<d", -9999.0)).decode(),
               "_ARRAY_DIMENSIONS": ["y", "x"]}
    unsigned = {"_Unsigned": "true", "missing_value": -1, "_ARRAY_DIMENSIONS": ["y", "x"]}
    store = kb.write_zarr_python(tmp_path / "cf.zarr", {
        "t2m": kb.ArraySpec(data, (16, 16), attrs=attrs),
        "f": kb.ArraySpec(floats, (16, 16), attrs=f_attrs, fill_value=0.0),
        "u": kb.ArraySpec(data, (16, 16), attrs=unsigned),
    })
    index = kb.write_index(tmp_path / "cf.json", kb.zarr_store_entries(store))

    ds_t2m = open_chunkref(f'CHUNKREF:"{index}":t2m')
    band = ds_t2m.GetRasterBand(1)
    assert band.GetNoDataValue() == -7
    assert (band.GetScale(), band.GetOffset()) == (0.01, 273.15)
    assert band.GetUnitType() == "K"
    assert band.GetDescription() == "air temperature at 2 m"
    md = band.GetMetadata()
    assert md["standard_name"] == "air_temperature" and md["valid_range"] == "[-1000,1000]"

    ds_f = open_chunkref(f'CHUNKREF:"{index}":f')
    f = ds_f.GetRasterBand(1)
    assert f.GetNoDataValue() == -9999.0

    ds_u = open_chunkref(f'CHUNKREF:"{index}":u')
    u = ds_u.GetRasterBand(1)
    assert u.DataType == gdal.GDT_UInt16
    assert u.GetNoDataValue() == 65535
    np.testing.assert_array_equal(u.ReadAsArray(), data.view("<u2"))


def test_no_georeferencing_opens_as_pixel_grid(tmp_path, simple_store):
    index = kb.write_index(tmp_path / "plain.json", simple_store.entries)
    messages = []

    def handler(err_class, err_no, message):
        messages.append(message)

    gdal.SetConfigOption("CPL_DEBUG", "ON")
    gdal.PushErrorHandler(handler)
    try:
        ds = open_chunkref(index)
    finally:
        gdal.PopErrorHandler()
        gdal.SetConfigOption("CPL_DEBUG", None)
    assert ds.GetGeoTransform(can_return_null=True) is None
    assert ds.GetSpatialRef() is None
    assert any("no georeferencing" in m for m in messages), messages


# --------------------------------------------------------------------------
# Hand-written fixtures from the GeoZarr seeds
# --------------------------------------------------------------------------

CONVENTIONS = [
    {"uuid": "d35379db-88df-4056-af3a-620245f8e347", "name": "multiscales"},
    {"uuid": "f17cb550-5864-4468-aeb7-f3180cfb622f", "name": "proj:"},
    {"uuid": "689b58e2-cf7b-45e0-9fff-9cfc0883d6b4", "name": "spatial:"},
]

#: The Sentinel-2 example of seed 001: (asset, derived_from, scale, size, pixel size).
S2_LEVELS = [
    ("r10m", None, 1, 10980, 10),
    ("r20m", "r10m", 2, 5490, 20),
    ("r60m", "r10m", 6, 1830, 60),
    ("r120m", "r60m", 2, 915, 120),
    ("r360m", "r120m", 3, 305, 360),
    ("r720m", "r360m", 2, 153, 720),
]


def v3_array(shape, chunks, dims, attrs=None, data_type="uint16"):
    return {
        "zarr_format": 3, "node_type": "array", "shape": list(shape), "data_type": data_type,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(chunks)}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0, "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
        "dimension_names": list(dims), "attributes": attrs or {},
    }


def sentinel2_entries(explicit_levels: bool) -> dict:
    layout = []
    for asset, parent, scale, size, pixel in S2_LEVELS:
        entry = {"asset": asset, "transform": {"scale": [float(scale)] * 2}}
        if parent:
            entry["derived_from"] = parent
            entry["transform"]["translation"] = [0.0, 0.0]
        if explicit_levels or parent is None:
            entry["spatial:shape"] = [size, size]
            entry["spatial:transform"] = [pixel, 0.0, 500000.0, 0.0, -pixel, 5000000.0]
        layout.append(entry)
    entries = {"zarr.json": {"zarr_format": 3, "node_type": "group", "attributes": {
        "zarr_conventions": CONVENTIONS,
        "multiscales": {"layout": layout, "resampling_method": "average"},
        "proj:code": "EPSG:32633",
        "spatial:dimensions": ["Y", "X"],
        "spatial:bbox": [500000.0, 4890220.0, 609800.0, 5000000.0],
    }}}
    for asset, _, _, size, _ in S2_LEVELS:
        entries[f"{asset}/zarr.json"] = {"zarr_format": 3, "node_type": "group"}
        for band in ("B02", "B03"):
            entries[f"{asset}/{band}/zarr.json"] = v3_array([size, size], [1024, 1024], ["Y", "X"])
    return entries


@pytest.mark.parametrize("explicit_levels", [True, False], ids=["per-level", "derived"])
def test_sentinel2_pyramid(tmp_path, explicit_levels):
    index = kb.write_index(tmp_path / "s2.json", sentinel2_entries(explicit_levels))
    root = open_chunkref(index)
    subdatasets = root.GetMetadata("SUBDATASETS")
    assert subdatasets["SUBDATASET_1_NAME"] == f'CHUNKREF:"{index}":r10m/B02'
    assert subdatasets["SUBDATASET_2_NAME"] == f'CHUNKREF:"{index}":r10m/B03'
    ds = open_chunkref(subdatasets["SUBDATASET_1_NAME"])
    assert ds.GetGeoTransform() == (500000.0, 10.0, 0.0, 5000000.0, 0.0, -10.0)
    expected = epsg_srs(32633)
    assert_same_crs(ds.GetSpatialRef(), expected)
    band = ds.GetRasterBand(1)
    sizes = [band.GetOverview(i).XSize for i in range(band.GetOverviewCount())]
    assert sizes == [s for _, _, _, s, _ in S2_LEVELS[1:]]
    for i, (_, _, _, _, pixel) in enumerate(S2_LEVELS[1:]):
        gt = band.GetOverview(i).GetDataset().GetGeoTransform()
        assert gt == pytest.approx((500000.0, pixel, 0.0, 5000000.0, 0.0, -pixel))
    # An array of another level opens alone, georeferenced by its layout
    # entry, else by the root's spatial:bbox (the seed's bbox is 20 m short
    # of 10980 pixels of 10 m in y).
    r60 = open_chunkref(f'CHUNKREF:"{index}":r60m/B02')
    assert (r60.RasterXSize, r60.GetRasterBand(1).GetOverviewCount()) == (1830, 0)
    dy = 60.0 if explicit_levels else (5000000.0 - 4890220.0) / 1830
    assert r60.GetGeoTransform() == pytest.approx((500000.0, 60, 0.0, 5000000.0, 0.0, -dy))


def test_level_not_covering_the_extent_is_ignored(tmp_path):
    entries = sentinel2_entries(True)
    layout = entries["zarr.json"]["attributes"]["multiscales"]["layout"]
    layout[1]["spatial:transform"] = [20.0, 0.0, 600000.0, 0.0, -20.0, 5000000.0]
    index = kb.write_index(tmp_path / "s2.json", entries)
    with captured_errors() as warnings:
        ds = open_chunkref(f'CHUNKREF:"{index}":r10m/B03')
    assert ds.GetRasterBand(1).GetOverviewCount() == 4
    assert any("r20m/B03" in w and "does not cover the extent" in w for w in warnings), warnings


#: The CRS WKT of the seed 003 example's spatial_ref (WGS 84 / UTM zone 32N).
UTM32_WKT = osr.SpatialReference()
UTM32_WKT.ImportFromEPSG(32632)
UTM32_WKT = UTM32_WKT.ExportToWkt()

UTM32_CF = {
    "semi_major_axis": 6378137.0, "semi_minor_axis": 6356752.314245179,
    "inverse_flattening": 298.257223563, "longitude_of_prime_meridian": 0.0,
    "grid_mapping_name": "transverse_mercator", "latitude_of_projection_origin": 0.0,
    "longitude_of_central_meridian": 9.0, "false_easting": 500000.0, "false_northing": 0.0,
    "scale_factor_at_central_meridian": 0.9996,
}


def tms_entries(level1_cell: float, with_wkt: bool = True, with_spatial_ref: bool = True) -> dict:
    """The GeoZarr 0.4 example of seed 003 (UTM TileMatrixSet, levels 0 and 1
    with red, nir, spatial_ref, x, y)."""
    tms = {"id": "UTM_Zone_33N_Sentinel2", "crs": "EPSG:32633", "orderedAxes": ["E", "N"],
           "tileMatrices": [
               {"id": "0", "scaleDenominator": 35.28, "cellSize": 10.0,
                "pointOfOrigin": [299960.0, 9000000.0], "tileWidth": 1024, "tileHeight": 1024,
                "matrixWidth": 1094, "matrixHeight": 1094},
               {"id": "1", "scaleDenominator": 70.56, "cellSize": 20.0,
                "pointOfOrigin": [299960.0, 9000000.0], "tileWidth": 512, "tileHeight": 512,
                "matrixWidth": 547, "matrixHeight": 547}]}
    entries = {"zarr.json": {"zarr_format": 3, "node_type": "group", "attributes": {
        "multiscales": {"tile_matrix_set": tms, "resampling_method": "average"}}}}
    for level, size, chunk, cell in (("0", 1094, 1024, 10.0), ("1", 547, 512, level1_cell)):
        entries[f"{level}/zarr.json"] = {"zarr_format": 3, "node_type": "group"}
        for var in ("red", "nir"):
            entries[f"{level}/{var}/zarr.json"] = v3_array(
                [size, size], [chunk, chunk], ["y", "x"], {"grid_mapping": "spatial_ref"})
        if with_spatial_ref:
            attrs = dict(UTM32_CF, _ARRAY_DIMENSIONS=[],
                         GeoTransform=f"300000.0 {cell} 0.0 5000040.0 0.0 -{cell}")
            if with_wkt:
                attrs.update(crs_wkt=UTM32_WKT, spatial_ref=UTM32_WKT)
            entries[f"{level}/spatial_ref/zarr.json"] = v3_array([], [], [], attrs, "int32")
        for axis in ("x", "y"):
            entries[f"{level}/{axis}/zarr.json"] = v3_array([size], [size], [axis], {}, "float64")
    return entries


def test_tile_matrix_set_with_cf_spatial_ref(tmp_path):
    # Level 1 as the seed should read (its GeoTransform repeats level 0's
    # 10 m cell size, a copy-paste slip; 20 m matches the tile matrix).
    index = kb.write_index(tmp_path / "tms.json", tms_entries(20.0))
    root = open_chunkref(index)
    assert root.GetMetadata("SUBDATASETS")["SUBDATASET_1_NAME"] == f'CHUNKREF:"{index}":0/nir'
    ds = open_chunkref(f'CHUNKREF:"{index}":0/red')
    assert ds.GetGeoTransform() == (300000.0, 10.0, 0.0, 5000040.0, 0.0, -10.0)
    expected = epsg_srs(32632)
    assert_same_crs(ds.GetSpatialRef(), expected)
    band = ds.GetRasterBand(1)
    assert [band.GetOverview(i).XSize for i in range(band.GetOverviewCount())] == [547]
    assert band.GetOverview(0).GetDataset().GetGeoTransform() == (
        300000.0, 20.0, 0.0, 5000040.0, 0.0, -20.0)


def test_tile_matrix_set_verbatim_seed_drops_inconsistent_level(tmp_path):
    index = kb.write_index(tmp_path / "tms.json", tms_entries(10.0))
    with captured_errors() as warnings:
        ds = open_chunkref(f'CHUNKREF:"{index}":0/red')
    assert ds.GetRasterBand(1).GetOverviewCount() == 0
    assert any("'1/red' is ignored" in w for w in warnings), warnings


def test_tile_matrix_set_alone(tmp_path):
    index = kb.write_index(tmp_path / "tms.json", tms_entries(20.0, with_spatial_ref=False))
    ds = open_chunkref(f'CHUNKREF:"{index}":0/red')
    assert ds.GetGeoTransform() == (299960.0, 10.0, 0.0, 9000000.0, 0.0, -10.0)
    expected = epsg_srs(32633)
    assert_same_crs(ds.GetSpatialRef(), expected)
    assert ds.GetRasterBand(1).GetOverview(0).XSize == 547


def test_cf_grid_mapping_without_wkt(tmp_path):
    index = kb.write_index(tmp_path / "cf.json", tms_entries(20.0, with_wkt=False))
    srs = open_chunkref(f'CHUNKREF:"{index}":0/red').GetSpatialRef()
    assert srs is not None and srs.IsProjected()
    assert srs.GetAttrValue("PROJECTION") == "Transverse_Mercator"
    assert srs.GetProjParm(osr.SRS_PP_CENTRAL_MERIDIAN) == 9.0
    assert srs.GetProjParm(osr.SRS_PP_FALSE_EASTING) == 500000.0
    assert srs.GetSemiMajor() == 6378137.0


def test_well_known_tile_matrix_set(tmp_path):
    entries = {".zgroup": {"zarr_format": 2},
               ".zattrs": {"multiscales": {"tile_matrix_set": "WebMercatorQuad",
                                           "resampling_method": "average"}}}
    for zoom in (1, 2):
        n = 256 << zoom
        entries[f"{zoom}/.zgroup"] = {"zarr_format": 2}
        entries[f"{zoom}/data/.zarray"] = {
            "zarr_format": 2, "shape": [n, n], "chunks": [256, 256], "dtype": "|u1",
            "fill_value": 0, "order": "C", "compressor": None, "filters": None}
    ds = open_chunkref(kb.write_index(tmp_path / "wm.json", entries))
    assert ds.RasterXSize == 1024
    assert ds.GetGeoTransform() == pytest.approx(
        (-20037508.3427892, 39135.75848201024, 0, 20037508.3427892, 0, -39135.75848201024))
    expected = epsg_srs(3857)
    assert_same_crs(ds.GetSpatialRef(), expected)
    assert ds.GetRasterBand(1).GetOverview(0).XSize == 512


@pytest.mark.parametrize(
    "crs, options",
    [("lcc", ["GMLJP2=NO"]), ("tmerc", ["GeoJP2=NO"])],
    ids=["geojp2-geokeys", "gmljp2-dictionary"],
)
def test_jp2_user_defined_crs(tmp_path, chunkref_bin, crs, options):
    """A CRS without an EPSG code: GeoKeys of a GeoJP2 box, or the GML
    dictionary entry GDAL writes beside a GMLJP2 coverage (GDAL cannot
    write LCC as GML: it keeps that in a .aux.xml, hence TM there)."""
    mem = kb.mem_dataset(j2k_pattern(1, 200, 300, "u1"))
    mem.SetGeoTransform((-2e5, 50.0, 0.0, 3e5, 0.0, -50.0))
    mem.SetSpatialRef(crs_srs(USER_CRS[crs]))
    jp2 = tmp_path / "src.jp2"
    gdal.Translate(str(jp2), mem, format="JP2OpenJPEG", creationOptions=options)
    aux = Path(f"{jp2}.aux.xml")
    if aux.exists():
        # GDAL 3.10.3 and 3.13.3 number the GML dictionary's entries with a
        # counter of the process (ogrcrs13, ...) that the coverage's srsName
        # (#ogrcrs1) may not match, and then keep the CRS in a .aux.xml:
        # the file alone, which is what the index holds, has none for
        # GDAL's own driver either (docs/gdal-versions.md).
        aux.unlink()
    src = gdal.Open(str(jp2))
    if int(gdal.VersionInfo()) < 3100000:
        assert src.GetSpatialRef() is not None, "GDAL 3.6 resolves its dictionary entry"
    idx = open_chunkref(index_of(chunkref_bin, jp2))
    assert idx.GetGeoTransform() == src.GetGeoTransform()
    assert_same_crs(idx.GetSpatialRef(), src.GetSpatialRef())


# --------------------------------------------------------------------------
# JPEG 2000 sources through ``chunkref index``: GeoJP2 and GMLJP2 boxes
# --------------------------------------------------------------------------

#: EPSG -> geotransform of the JPEG 2000 fixtures (EPSG:4326 puts GMLJP2
#: coordinates latitude first).
JP2_GEOREF = {
    4326: (10.0, 0.001, 0.0, 46.0, 0.0, -0.001),
    32633: (500000.0, 10.0, 0.0, 5000000.0, 0.0, -10.0),
}


def write_georeferenced_jp2(path: Path, epsg: int, boxes: str, point: bool = False) -> Path:
    """A 1100x700 JP2 (tiles 256, four overviews) written by GDAL with the
    GeoJP2 box, the GMLJP2 box or both (``boxes``)."""
    data = j2k_pattern(1, 700, 1100, "u1")
    mem = kb.mem_dataset(data)
    mem.SetGeoTransform(JP2_GEOREF[epsg])
    mem.SetSpatialRef(epsg_srs(epsg))
    if point:
        mem.SetMetadataItem("AREA_OR_POINT", "Point")
    options = [
        "BLOCKXSIZE=256", "BLOCKYSIZE=256", "REVERSIBLE=YES", "QUALITY=100",
        f"GeoJP2={'YES' if 'geojp2' in boxes else 'NO'}",
        f"GMLJP2={'YES' if 'gmljp2' in boxes else 'NO'}",
    ]
    gdal.Translate(str(path), mem, format="JP2OpenJPEG", creationOptions=options)
    return path


def assert_overviews_cover_base(ds: gdal.Dataset) -> None:
    """Overview datasets carry their own georeferencing over the extent of
    the full-resolution one."""
    base = ds.GetGeoTransform()
    for i in range(ds.GetRasterBand(1).GetOverviewCount()):
        ov = ds.GetRasterBand(1).GetOverview(i)
        gt = ov.GetDataset().GetGeoTransform()
        assert gt[0] == base[0] and gt[3] == base[3]
        assert gt[1] * ov.XSize == pytest.approx(base[1] * ds.RasterXSize)
        assert gt[5] * ov.YSize == pytest.approx(base[5] * ds.RasterYSize)


@pytest.mark.parametrize("boxes", ["geojp2", "gmljp2", "geojp2+gmljp2"])
@pytest.mark.parametrize("epsg", list(JP2_GEOREF))
def test_jp2_index_agrees_with_gdalinfo(tmp_path, chunkref_bin, epsg, boxes):
    jp2 = write_georeferenced_jp2(tmp_path / "src.jp2", epsg, boxes)
    src = gdal.Open(str(jp2))
    idx = open_chunkref(index_of(chunkref_bin, jp2))
    assert info_summary(idx) == info_summary(src)
    assert info_summary(src)["bands"][0]["overviews"], "the fixture should have overviews"
    assert_same_crs(idx.GetSpatialRef(), src.GetSpatialRef())
    assert_overviews_cover_base(idx)


@pytest.mark.parametrize("boxes", ["geojp2", "gmljp2"])
def test_jp2_pixel_is_point(tmp_path, chunkref_bin, boxes):
    jp2 = write_georeferenced_jp2(tmp_path / "src.jp2", 32633, boxes, point=True)
    src = gdal.Open(str(jp2))
    idx = open_chunkref(index_of(chunkref_bin, jp2))
    assert idx.GetGeoTransform() == src.GetGeoTransform()
    assert idx.GetMetadataItem("AREA_OR_POINT") == src.GetMetadataItem("AREA_OR_POINT")


@pytest.mark.parametrize("boxes", ["geojp2", "gmljp2"])
def test_gdalwarp_from_jp2_index_matches_source(tmp_path, chunkref_bin, boxes):
    jp2 = write_georeferenced_jp2(tmp_path / "src.jp2", 4326, boxes)
    idx = index_of(chunkref_bin, jp2)
    for sizing in ({"overviewLevel": "NONE"}, {"width": 97, "height": 71}):
        options = dict(dstSRS="EPSG:3857", resampleAlg="bilinear", format="MEM", **sizing)
        want = gdal.Warp("", str(jp2), **options).ReadAsArray()
        got = gdal.Warp("", open_chunkref(idx), **options).ReadAsArray()
        np.testing.assert_array_equal(got, want)


#: band colour interpretations of the source -> JPEG 2000 container
JP2_COLOURS = {
    "gray-jp2": ([gdal.GCI_Undefined], "JP2"),
    "gray-alpha-jp2": ([gdal.GCI_GrayIndex, gdal.GCI_AlphaBand], "JP2"),
    "rgb-jp2": ([gdal.GCI_RedBand, gdal.GCI_GreenBand, gdal.GCI_BlueBand], "JP2"),
    "rgba-jp2": ([gdal.GCI_RedBand, gdal.GCI_GreenBand, gdal.GCI_BlueBand, gdal.GCI_AlphaBand], "JP2"),
    "undefined-3band-jp2": ([gdal.GCI_Undefined] * 3, "JP2"),
    "rgb-j2k": ([gdal.GCI_RedBand, gdal.GCI_GreenBand, gdal.GCI_BlueBand], "J2K"),
}


@pytest.mark.parametrize("case", JP2_COLOURS)
def test_jp2_colour_interpretation(tmp_path, chunkref_bin, case):
    colours, codec = JP2_COLOURS[case]
    mem = kb.mem_dataset(j2k_pattern(len(colours), 64, 80, "u1"))
    for b, colour in enumerate(colours):
        mem.GetRasterBand(b + 1).SetColorInterpretation(colour)
    jp2 = tmp_path / "src.jp2"
    gdal.Translate(str(jp2), mem, format="JP2OpenJPEG", creationOptions=[f"CODEC={codec}"])
    src = gdal.Open(str(jp2))
    idx = open_chunkref(index_of(chunkref_bin, jp2))
    assert info_summary(idx) == info_summary(src)


# --------------------------------------------------------------------------
# NITF sources through ``chunkref index``: ICORDS / IGEOLO
# --------------------------------------------------------------------------

#: name -> (EPSG, geotransform, NITF creation options); 1100 x 700 pixels
NITF_GEOREF = {
    "icords-g": (4326, (10.0, 0.001, 0.0, 46.0, 0.0, -0.001), []),
    "icords-d": (4326, (-10.123456, 0.00123, 0.0, -20.5, 0.0, -0.00123), ["ICORDS=D"]),
    "icords-n": (32633, (500000.0, 10.0, 0.0, 5000000.0, 0.0, -10.0), []),
    "icords-s": (32733, (300000.0, 30.0, 0.0, 7000000.0, 0.0, -30.0), []),
    "icords-s-sydney": (32756, (312340.0, 10.0, 0.0, 6267895.0, 0.0, -10.0), []),
    "icords-n-c8": (32633, (500000.0, 10.0, 0.0, 5000000.0, 0.0, -10.0),
                    ["IC=C8", "QUALITY=100", "REVERSIBLE=YES"]),
}


def write_georeferenced_nitf(path: Path, case: str) -> Path:
    epsg, gt, options = NITF_GEOREF[case]
    mem = kb.mem_dataset(j2k_pattern(1, 700, 1100, "u1"))
    mem.SetGeoTransform(gt)
    mem.SetSpatialRef(epsg_srs(epsg))
    gdal.Translate(str(path), mem, format="NITF", creationOptions=options)
    return path


@pytest.mark.parametrize("case", NITF_GEOREF)
def test_nitf_index_agrees_with_gdalinfo(tmp_path, chunkref_bin, case):
    ntf = write_georeferenced_nitf(tmp_path / "src.ntf", case)
    src = gdal.Open(str(ntf))
    idx = open_chunkref(index_of(chunkref_bin, ntf))
    assert src.GetMetadataItem("NITF_ICORDS") == case.split("-")[1].upper()
    assert info_summary(idx) == info_summary(src)
    assert_same_crs(idx.GetSpatialRef(), src.GetSpatialRef())
    assert_overviews_cover_base(idx)


#: MGRS corners (pixel centres of 1100 x 700 pixels of 10 m) of UTM
#: fixtures: zone 33N (odd zone, square 33T WK) and zone 56S (even zone,
#: rows lettered from F, square 56H LH).
MGRS_CORNERS = {
    "icords-n": "33TWK000059999533TWK109959999533TWK109959300533TWK0000593005",
    "icords-s-sydney": "56HLH123456789056HLH233356789056HLH233356090056HLH1234560900",
}


@pytest.mark.parametrize("case", MGRS_CORNERS)
def test_nitf_mgrs_corners(tmp_path, chunkref_bin, case):
    """ICORDS U, which GDAL reads but does not write: a GDAL-written UTM
    NITF with its corners rewritten as MGRS references."""
    ntf = write_georeferenced_nitf(tmp_path / "src.ntf", case)
    src = gdal.Open(str(ntf))
    icords = src.GetMetadataItem("NITF_ICORDS").encode()
    igeolo = src.GetMetadataItem("NITF_IGEOLO").encode()
    src = None
    data = ntf.read_bytes()
    assert data.count(icords + igeolo) == 1
    ntf.write_bytes(data.replace(icords + igeolo, b"U" + MGRS_CORNERS[case].encode()))
    src = gdal.Open(str(ntf))
    assert src.GetMetadataItem("NITF_ICORDS") == "U"
    idx = open_chunkref(index_of(chunkref_bin, ntf))
    assert idx.GetGeoTransform() == src.GetGeoTransform()
    assert idx.GetGeoTransform() == NITF_GEOREF[case][1]
    assert_same_crs(idx.GetSpatialRef(), src.GetSpatialRef())


def test_gdalwarp_from_nitf_index_matches_source(tmp_path, chunkref_bin):
    ntf = write_georeferenced_nitf(tmp_path / "src.ntf", "icords-g")
    idx = index_of(chunkref_bin, ntf)
    options = dict(dstSRS="EPSG:3857", resampleAlg="bilinear", format="MEM")
    want = gdal.Warp("", str(ntf), **options).ReadAsArray()
    got = gdal.Warp("", open_chunkref(idx), **options).ReadAsArray()
    np.testing.assert_array_equal(got, want)


#: GDAL RPC metadata of the RPC00B fixture (coefficients GDAL rounds to
#: RPC00B's 7 significant digits).
RPC = {
    "ERR_BIAS": "0.5", "ERR_RAND": "0.25", "LINE_OFF": "350", "SAMP_OFF": "550",
    "LAT_OFF": "45.123", "LONG_OFF": "10.456", "HEIGHT_OFF": "250", "LINE_SCALE": "350",
    "SAMP_SCALE": "550", "LAT_SCALE": "0.05", "LONG_SCALE": "0.07", "HEIGHT_SCALE": "500",
    "LINE_NUM_COEFF": "0.01 -1.0 -0.02 " + " ".join(f"{(i + 1) * 1e-6:g}" for i in range(17)),
    "LINE_DEN_COEFF": "1 " + " ".join("0" for _ in range(19)),
    "SAMP_NUM_COEFF": "-0.03 0.02 1.0 " + " ".join(f"{-(i + 2) * 1.5e-7:g}" for i in range(17)),
    "SAMP_DEN_COEFF": "1 " + " ".join(f"{i * 1e-7:g}" for i in range(19)),
}


def test_nitf_rpc00b_is_the_rpc_domain(tmp_path, chunkref_bin):
    mem = kb.mem_dataset(j2k_pattern(1, 700, 1100, "u1"))
    mem.SetMetadata(RPC, "RPC")
    ntf = tmp_path / "rpc.ntf"
    gdal.Translate(str(ntf), mem, format="NITF")
    src = gdal.Open(str(ntf))
    assert "RPC00B" in src.GetMetadata("TRE")
    idx = open_chunkref(index_of(chunkref_bin, ntf))
    assert idx.GetMetadata("RPC") == src.GetMetadata("RPC")
    assert not any(k.startswith("chunkref:") for k in idx.GetMetadata())
    options = dict(rpc=True, dstSRS="EPSG:4326", resampleAlg="bilinear", format="MEM")
    want = gdal.Warp("", str(ntf), **options)
    got = gdal.Warp("", idx, **options)
    assert got.GetGeoTransform() == want.GetGeoTransform()
    assert want.ReadAsArray().any()
    np.testing.assert_array_equal(got.ReadAsArray(), want.ReadAsArray())


#: band colour interpretations of the source -> NITF creation options
NITF_COLOURS = {
    "gray": ([gdal.GCI_GrayIndex], []),
    "undefined-2band": ([gdal.GCI_Undefined] * 2, []),
    "rgb": ([gdal.GCI_RedBand, gdal.GCI_GreenBand, gdal.GCI_BlueBand], []),
    "rgb-jpeg": ([gdal.GCI_RedBand, gdal.GCI_GreenBand, gdal.GCI_BlueBand], ["IC=C3"]),
    "rgb-j2k": ([gdal.GCI_RedBand, gdal.GCI_GreenBand, gdal.GCI_BlueBand],
                ["IC=C8", "QUALITY=100", "REVERSIBLE=YES"]),
}


@pytest.mark.parametrize("case", NITF_COLOURS)
def test_nitf_colour_interpretation(tmp_path, chunkref_bin, case):
    colours, options = NITF_COLOURS[case]
    mem = kb.mem_dataset(j2k_pattern(len(colours), 64, 80, "u1"))
    for b, colour in enumerate(colours):
        mem.GetRasterBand(b + 1).SetColorInterpretation(colour)
    ntf = tmp_path / "src.ntf"
    gdal.Translate(str(ntf), mem, format="NITF", creationOptions=options)
    src = gdal.Open(str(ntf))
    idx = open_chunkref(index_of(chunkref_bin, ntf))
    assert info_summary(idx)["bands"] == info_summary(src)["bands"]


def test_raw_codestream_has_no_georeferencing(tmp_path, chunkref_bin):
    j2k = write_j2k(tmp_path / "raw.j2k", J2K_CASES["j2k-i2"])
    idx = open_chunkref(index_of(chunkref_bin, j2k))
    assert idx.GetSpatialRef() is None
    assert idx.GetGeoTransform(can_return_null=True) is None


def write_corner_nitf(path: Path, epsg: int, width: int = 100, height: int = 80) -> Path:
    """A NITF whose four corners are no affine frame (GDAL reads GCPs)."""
    mem = gdal.GetDriverByName("MEM").Create("", width, height, 1)
    pixels = np.arange(width * height).reshape(height, width) % 251
    mem.GetRasterBand(1).WriteArray(pixels.astype(np.uint8))
    srs = osr.SpatialReference()
    srs.ImportFromEPSG(epsg)
    if epsg == 4326:
        corners = [(10.0, 50.0), (11.0, 50.2), (11.1, 49.0), (9.9, 49.1)]
    else:
        corners = [(500000, 5500000), (501000, 5500200), (501100, 5499000), (499900, 5499100)]
    at = [(0.5, 0.5), (width - 0.5, 0.5), (width - 0.5, height - 0.5), (0.5, height - 0.5)]
    mem.SetGCPs([gdal.GCP(x, y, 0, p, l) for (x, y), (p, l) in zip(corners, at)],
                srs.ExportToWkt())
    gdal.Translate(str(path), mem, format="NITF", creationOptions=["BLOCKSIZE=64"])
    return path


@pytest.mark.parametrize("epsg", [4326, 32633])
def test_nitf_corners_that_are_no_frame_become_gcps(tmp_path, chunkref_bin, epsg):
    """Corners GDAL cannot fit with an affine frame are GCPs in GDAL's read
    of the NITF; the index carries them (and their CRS), and gdalwarp from
    the index matches gdalwarp from the source."""
    source = write_corner_nitf(tmp_path / "corners.ntf", epsg)
    native = gdal.Open(str(source))
    assert native.GetGeoTransform(can_return_null=True) is None and native.GetGCPCount() == 4
    out = index_of(chunkref_bin, source)
    idx = open_chunkref(out)

    def points(ds):
        return [(g.GCPPixel, g.GCPLine, g.GCPX, g.GCPY) for g in ds.GetGCPs()]

    assert points(idx) == points(native)
    assert idx.GetGCPSpatialRef().IsSame(native.GetGCPSpatialRef())
    assert idx.GetGeoTransform(can_return_null=True) is None
    warped = [gdal.Warp(f"/vsimem/w{n}.tif", ds, format="GTiff") for n, ds in enumerate((native, idx))]
    assert warped[0].GetGeoTransform() == warped[1].GetGeoTransform()
    np.testing.assert_array_equal(warped[0].ReadAsArray(), warped[1].ReadAsArray())
    for n in range(2):
        gdal.Unlink(f"/vsimem/w{n}.tif")


def test_gcp_placed_chunks_have_footprints_through_the_corners(tmp_path, chunkref_bin):
    """In the FlatGeobuf form, chunks of an image placed by corner GCPs get
    quadrilaterals on the surface through the corners: a spatial filter at
    each GCP finds the chunk holding its pixel, in the GCPs' CRS."""
    source = write_corner_nitf(tmp_path / "corners.ntf", 4326, 300, 200)
    table = tmp_path / "corners.fgb"
    done = run_chunkref(chunkref_bin, "index", source, "-o", table)
    assert done.returncode == 0, done.stderr
    vector = gdal.OpenEx(str(table), gdal.OF_VECTOR)
    layer = vector.GetLayer(0)
    assert layer.GetSpatialRef().GetAuthorityCode(None) == "4326"
    native = gdal.Open(str(source))
    for gcp in native.GetGCPs():
        point = ogr.Geometry(ogr.wkbPoint)
        point.AddPoint_2D(gcp.GCPX, gcp.GCPY)
        layer.SetSpatialFilter(point)
        hits = {(f["y_chunk"], f["x_chunk"]) for f in layer if f.GetGeometryRef().Contains(point)}
        assert (int(gcp.GCPLine) // 64, int(gcp.GCPPixel) // 64) in hits, (gcp, hits)
    layer.SetSpatialFilter(None)
    # The footprints tile the quadrilateral of the corners: their areas add up.
    area = sum(f.GetGeometryRef().GetArea() for f in layer)
    corners = ogr.CreateGeometryFromWkt(
        "POLYGON ((10 50, 11 50.2, 11.1 49, 9.9 49.1, 10 50))"
    )
    assert abs(area - corners.GetArea()) < 0.02 * corners.GetArea(), (area, corners.GetArea())
    idx = open_chunkref(table)
    np.testing.assert_array_equal(idx.ReadAsArray(), native.ReadAsArray())


def coordinate_store(tmp_path: Path, swath: bool) -> tuple[Path, np.ndarray, np.ndarray, np.ndarray]:
    """A Kerchunk JSON index of `data` (40 x 60, 16 x 16 chunks) placed by
    2-D longitude/latitude arrays its CF ``coordinates`` names (a swath), or
    by irregular 1-D x/y arrays; returns it with the data and each pixel's
    x and y."""
    data = kb.sample_pixels("<u2", (1, 40, 60))[0]
    rows, cols = np.mgrid[0:40, 0:60].astype("f8")
    entries = {".zgroup": {"zarr_format": 2}}
    if swath:
        lon = 10.0 + 0.02 * cols + 0.006 * rows + 0.0004 * rows * cols
        lat = 50.0 - 0.015 * rows + 0.004 * cols - 0.00005 * cols**2
        arrays = [("data", data, ["y", "x"], [16, 16]), ("lon", lon, ["y", "x"], [16, 32]),
                  ("lat", lat, ["y", "x"], [32, 16])]
        x, y = lon, lat
    else:
        xs = 10.0 + np.cumsum(np.linspace(0.01, 0.05, 60))
        ys = 50.0 - np.cumsum(np.linspace(0.02, 0.03, 40))
        arrays = [("data", data, ["lat", "lon"], [16, 16]), ("lon", xs, ["lon"], [25]),
                  ("lat", ys, ["lat"], [25])]
        x, y = xs[np.newaxis].repeat(40, 0), ys[:, np.newaxis].repeat(60, 1)
    for name, values, dims, chunks in arrays:
        for key, v in zarr_v2_array(values, dims, chunks).items():
            entries[f"{name}/{key}"] = v
    if swath:
        entries["data/.zattrs"]["coordinates"] = "lon lat"
        entries["lon/.zattrs"]["standard_name"] = "longitude"
        entries["lat/.zattrs"]["standard_name"] = "latitude"
    index = kb.write_index(tmp_path / "coords.json", kb.sort_entries(entries))
    return index, data, x, y


@pytest.mark.parametrize("swath", [True, False], ids=["swath-2d", "irregular-1d"])
def test_footprints_from_coordinate_arrays(tmp_path, chunkref_bin, swath):
    """Arrays placed by coordinate values (2-D lon/lat of a swath, or
    irregular 1-D axes) get FlatGeobuf footprints that hold every pixel of
    their chunk: a spatial filter at any pixel's coordinates finds its
    chunk. Such a table is read whole even when large (its footprints cannot
    be recomputed from metadata), and reads like the JSON index."""
    index, data, x, y = coordinate_store(tmp_path, swath)
    table = tmp_path / "coords.fgb"
    done = run_chunkref(chunkref_bin, "convert", index, table)
    assert done.returncode == 0, done.stderr
    vector = gdal.OpenEx(str(table), gdal.OF_VECTOR)
    layer = vector.GetLayer(0)
    layer.SetAttributeFilter("array = 0")
    footprints = {(f["y_chunk"], f["x_chunk"]): f.GetGeometryRef().Clone() for f in layer}
    assert len(footprints) == 3 * 4
    for r in range(0, 40, 3):
        for c in range(0, 60, 7):
            point = ogr.Geometry(ogr.wkbPoint)
            point.AddPoint_2D(float(x[r, c]), float(y[r, c]))
            assert footprints[(r // 16, c // 16)].Intersects(point), (r, c)
            layer.SetSpatialFilter(point)
            assert (r // 16, c // 16) in {(f["y_chunk"], f["x_chunk"]) for f in layer}
            layer.SetSpatialFilter(None)
    gdal.SetConfigOption("CHUNKREF_TABLE_EAGER_ROWS", "0")
    try:
        ds = gdal.OpenEx(f'CHUNKREF:"{table}":data', gdal.OF_RASTER)
        np.testing.assert_array_equal(ds.ReadAsArray(), data)
    finally:
        gdal.SetConfigOption("CHUNKREF_TABLE_EAGER_ROWS", None)
