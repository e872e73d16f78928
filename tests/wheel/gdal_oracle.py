"""The oracle of the wheel tests, run by Debian's python3 (which has GDAL's
bindings): makes source files with GDAL's own writers, and dumps what GDAL
shows of a dataset, through its native driver or the ChunkRef plugin, so
that the tests themselves run in a venv with no libgdal in the process.

    gdal_oracle.py make KIND DIR      # writes the sources of KIND under DIR
    gdal_oracle.py dump NAME OUT.npz [--driver D] [--oo K=V ...]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
from osgeo import gdal, osr

gdal.UseExceptions()


def _pattern(rows: int, cols: int, band: int, dtype: str) -> np.ndarray:
    y, x = np.mgrid[0:rows, 0:cols]
    values = (x * 7 + y * 13 + band * 101) % 251
    if np.dtype(dtype).kind == "f":
        return (values * 0.37 - 20).astype(dtype)
    if np.dtype(dtype).kind == "i":
        return (values - 120).astype(dtype)
    return values.astype(dtype)


def _write(path: Path, fmt: str, cols: int, rows: int, bands: int, dtype: str,
           options: list[str], *, epsg: int | None = 32633, nodata=None,
           overviews: list[int] | None = None, scale=None, origin=(500000.0, 4100000.0),
           pixel=(30.0, -30.0), palette: bool = False) -> None:
    """Writes an image through an in-memory copy and GDAL's CreateCopy (the
    only way some drivers write)."""
    mem = gdal.GetDriverByName("MEM").Create(
        "", cols, rows, bands, gdal.GetDataTypeByName(
            {"uint8": "Byte", "uint16": "UInt16", "int16": "Int16", "int32": "Int32",
             "float32": "Float32", "float64": "Float64"}[dtype]))
    mem.SetGeoTransform([origin[0], pixel[0], 0, origin[1], 0, pixel[1]])
    if epsg is not None:
        srs = osr.SpatialReference()
        srs.ImportFromEPSG(epsg)
        mem.SetProjection(srs.ExportToWkt())
    for b in range(bands):
        band = mem.GetRasterBand(b + 1)
        band.WriteArray(_pattern(rows, cols, b, dtype))
        if nodata is not None:
            band.SetNoDataValue(nodata)
        if scale is not None:
            band.SetScale(scale[0])
            band.SetOffset(scale[1])
    if palette:
        ct = gdal.ColorTable()
        for i in range(256):
            ct.SetColorEntry(i, (i, 255 - i, (i * 3) % 256, 255))
        mem.GetRasterBand(1).SetColorTable(ct)
    if overviews:
        mem.BuildOverviews("NEAREST", overviews)
        options = options + ["COPY_SRC_OVERVIEWS=YES"] if fmt == "GTiff" else options
    gdal.GetDriverByName(fmt).CreateCopy(str(path), mem, options=options)


def make(kind: str, root: Path) -> None:
    """The sources of one fixture kind under ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    tiled = ["TILED=YES", "BLOCKXSIZE=64", "BLOCKYSIZE=64"]
    if kind == "tiff-deflate":
        _write(root / "src.tif", "GTiff", 300, 200, 3, "uint16", tiled + ["COMPRESS=DEFLATE"],
               nodata=7, overviews=[2, 4])
    elif kind == "tiff-lzw-int16":
        _write(root / "src.tif", "GTiff", 257, 190, 1, "int16",
               tiled + ["COMPRESS=LZW", "PREDICTOR=2"], nodata=-99, scale=(0.5, 10.0))
    elif kind == "tiff-zstd-float":
        _write(root / "src.tif", "GTiff", 200, 150, 2, "float32",
               tiled + ["COMPRESS=ZSTD", "PREDICTOR=3"], epsg=4326,
               origin=(10.0, 50.0), pixel=(0.01, -0.01))
    elif kind == "tiff-jpeg-rgb":
        _write(root / "src.tif", "GTiff", 256, 192, 3, "uint8",
               tiled + ["COMPRESS=JPEG", "PHOTOMETRIC=YCBCR"])
    elif kind == "tiff-palette-strips":
        _write(root / "src.tif", "GTiff", 120, 90, 1, "uint8", ["COMPRESS=PACKBITS"],
               palette=True)
    elif kind == "cog-webp":
        _write(root / "src.tif", "COG", 512, 384, 3, "uint8",
               ["COMPRESS=WEBP", "QUALITY=100", "BLOCKSIZE=128", "OVERVIEW_RESAMPLING=NEAREST"])
    elif kind == "nitf-nc":
        _write(root / "src.ntf", "NITF", 200, 150, 1, "uint16", ["BLOCKXSIZE=64", "BLOCKYSIZE=64"],
               epsg=4326, origin=(10.0, 50.0), pixel=(0.01, -0.01))
    elif kind == "nitf-c3":
        _write(root / "src.ntf", "NITF", 256, 128, 1, "uint8",
               ["IC=C3", "BLOCKXSIZE=64", "BLOCKYSIZE=64"], epsg=4326,
               origin=(10.0, 50.0), pixel=(0.01, -0.01))
    elif kind == "nitf-c8":
        _write(root / "src.ntf", "NITF", 200, 160, 1, "uint8",
               ["IC=C8", "QUALITY=100"], epsg=4326,
               origin=(10.0, 50.0), pixel=(0.01, -0.01))
    elif kind == "jp2-tiles":
        _write(root / "src.jp2", "JP2OpenJPEG", 300, 200, 1, "uint16",
               ["REVERSIBLE=YES", "QUALITY=100", "BLOCKXSIZE=128", "BLOCKYSIZE=128"])
    elif kind == "dted":
        _write(root / "src.dt1", "DTED", 1201, 1201, 1, "int16", [], epsg=4326,
               origin=(9.9995833333, 50.0004166667), pixel=(1 / 1200, -1 / 1200))
    elif kind == "netcdf4":
        _write(root / "src.nc", "netCDF", 180, 90, 1, "float32",
               ["FORMAT=NC4C", "COMPRESS=DEFLATE"],
               epsg=4326, origin=(-180.0, 90.0), pixel=(2.0, -2.0), nodata=-9999.0)
    elif kind == "netcdf3":
        _write(root / "src.nc", "netCDF", 120, 60, 1, "int16", ["FORMAT=NC"],
               epsg=4326, origin=(-180.0, 90.0), pixel=(3.0, -3.0))
    elif kind == "grib2":
        _write(root / "src.grb2", "GRIB", 90, 45, 1, "float32", [], epsg=4326,
               origin=(-180.0, 90.0), pixel=(4.0, -4.0))
    elif kind == "zarr-v2":
        _write(root / "src.zarr", "Zarr", 200, 120, 1, "int32",
               ["BLOCKSIZE=50,64", "COMPRESS=ZLIB"])
    elif kind == "tiff-lzma":
        _write(root / "src.tif", "GTiff", 200, 130, 2, "float32",
               tiled + ["COMPRESS=LZMA", "PREDICTOR=3"])
    elif kind == "nitf-m3":
        _write(root / "src.ntf", "NITF", 256, 192, 3, "uint8",
               ["IC=M3", "BLOCKXSIZE=64", "BLOCKYSIZE=64"], epsg=4326,
               origin=(10.0, 50.0), pixel=(0.01, -0.01))
    elif kind == "j2k-interleaved":
        # Tile-parts by resolution, reordered so that each tile's chunk is
        # several ranges (the builder of tests/python/test_j2k.py).
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
        from test_j2k import interleaved_j2k

        interleaved_j2k(root)
    elif kind == "dted-mosaic":
        for lon in (10, 11):
            _write(root / f"e0{lon}_n50.dt1", "DTED", 1201, 1201, 1, "int16", [], epsg=4326,
                   origin=(lon - 1 / 2400, 51 + 1 / 2400), pixel=(1 / 1200, -1 / 1200))
    elif kind == "stack":
        for day in ("20240101", "20240102", "20240105"):
            _write(root / f"sst_{day}.tif", "GTiff", 128, 96, 1, "float32",
                   tiled + ["COMPRESS=DEFLATE"], nodata=-1.0)
    elif kind == "mosaic":
        _write(root / "a.tif", "GTiff", 128, 128, 1, "uint16", tiled + ["COMPRESS=DEFLATE"],
               origin=(500000.0, 4100000.0))
        _write(root / "b.tif", "GTiff", 128, 128, 1, "uint16", tiled + ["COMPRESS=DEFLATE"],
               origin=(500000.0 + 96 * 30, 4100000.0 - 64 * 30))
    else:
        sys.exit(f"unknown kind {kind}")


def _crs(wkt: str) -> str | None:
    return wkt or None


def dump(name: str, out: Path, driver: str | None, oo: list[str]) -> None:
    """What GDAL shows of ``name``: ``meta`` (JSON) and ``level_N`` pixels."""
    ds = gdal.OpenEx(name, gdal.OF_RASTER, allowed_drivers=[driver] if driver else [],
                     open_options=oo)
    meta: dict = {
        "driver": ds.GetDriver().ShortName,
        "subdatasets": [v for k, v in sorted(ds.GetMetadata("SUBDATASETS").items())
                        if k.endswith("_NAME")],
        "size": [ds.RasterCount, ds.RasterYSize, ds.RasterXSize],
    }
    arrays = {}
    if ds.RasterCount:
        gt = ds.GetGeoTransform(can_return_null=True)
        meta["transform"] = list(gt) if gt else None
        meta["crs_wkt"] = _crs(ds.GetProjectionRef())
        bands = [ds.GetRasterBand(b + 1) for b in range(ds.RasterCount)]
        meta["bands"] = [{
            "nodata": b.GetNoDataValue(),
            "scale": b.GetScale(),
            "offset": b.GetOffset(),
            "unit": b.GetUnitType(),
            "description": b.GetDescription(),
            "color": gdal.GetColorInterpretationName(b.GetColorInterpretation()),
            "datetime": b.GetMetadataItem("DATETIME"),
            "palette": None if b.GetColorTable() is None else
            [list(b.GetColorTable().GetColorEntry(i))
             for i in range(b.GetColorTable().GetCount())],
        } for b in bands]
        meta["levels"] = [[ds.RasterYSize, ds.RasterXSize]] + [
            [o.YSize, o.XSize] for o in
            (bands[0].GetOverview(i) for i in range(bands[0].GetOverviewCount()))]
        arrays["level_0"] = ds.ReadAsArray().reshape(meta["size"])
        for i in range(1, len(meta["levels"])):
            planes = [b.GetOverview(i - 1).ReadAsArray() for b in bands]
            arrays[f"level_{i}"] = np.stack(planes)
    np.savez(out, meta=np.array(json.dumps(meta)), **arrays)


def main() -> None:
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="command", required=True)
    m = sub.add_parser("make")
    m.add_argument("kind")
    m.add_argument("dir", type=Path)
    d = sub.add_parser("dump")
    d.add_argument("name")
    d.add_argument("out", type=Path)
    d.add_argument("--driver")
    d.add_argument("--oo", action="append", default=[])
    a = p.parse_args()
    if a.command == "make":
        make(a.kind, a.dir)
    else:
        dump(a.name, a.out, a.driver, a.oo)


if __name__ == "__main__":
    main()
