#!/usr/bin/env python3
"""Writes a sample image with GDAL and a Kerchunk JSON chunk index over it.

The image is a tiled, band-interleaved GeoTIFF (DEFLATE, internal
overviews). Its tile offsets and sizes come from GDAL's TIFF metadata
domain; each TIFF Deflate tile is a zlib stream, so the index uses the
numcodecs `zlib` compressor. The index has the layout osml-imagery-io
writes: a root group whose `multiscales.layout` lists levels `0`, `1`, ...,
each holding an array `data` with axes (bands, y, x).

Usage: make_sample.py OUT_DIR   (writes sample.tif and sample.tile_index.json)
"""
import json
import os
import sys

import numpy as np
from osgeo import gdal

gdal.UseExceptions()


def write_sample(path, width=1000, height=700, bands=3):
    """Writes a smooth multi-band test pattern with overviews 2 and 4."""
    y, x = np.mgrid[0:height, 0:width]
    ds = gdal.GetDriverByName("GTiff").Create(
        path, width, height, bands, gdal.GDT_Byte,
        ["TILED=YES", "BLOCKXSIZE=256", "BLOCKYSIZE=256", "INTERLEAVE=BAND", "COMPRESS=DEFLATE"])
    for b in range(bands):
        pattern = (x * (b + 1) // 4 + y // (b + 2) + 40 * np.sin(x / 50.0 + b)) % 256
        ds.GetRasterBand(b + 1).WriteArray(pattern.astype(np.uint8))
    ds.BuildOverviews("AVERAGE", [2, 4])
    ds = None


def level_refs(level, bands, url):
    """References and metadata of one level (a list of per-band GDAL bands)."""
    first = bands[0]
    bw, bh = first.GetBlockSize()
    w, h = first.XSize, first.YSize
    prefix = f"{level}/data"
    refs = {
        f"{level}/.zgroup": json.dumps({"zarr_format": 2}),
        f"{level}/.zattrs": json.dumps({}),
        f"{prefix}/.zarray": json.dumps({
            "shape": [len(bands), h, w], "chunks": [1, bh, bw], "dtype": "|u1",
            "fill_value": 0, "order": "C", "compressor": {"id": "zlib", "level": 6},
            "filters": None, "dimension_separator": ".", "zarr_format": 2}),
        f"{prefix}/.zattrs": json.dumps({"_ARRAY_DIMENSIONS": ["bands", "y", "x"]}),
    }
    for b, band in enumerate(bands):
        for ty in range((h + bh - 1) // bh):
            for tx in range((w + bw - 1) // bw):
                offset = int(band.GetMetadataItem(f"BLOCK_OFFSET_{tx}_{ty}", "TIFF"))
                size = int(band.GetMetadataItem(f"BLOCK_SIZE_{tx}_{ty}", "TIFF"))
                refs[f"{prefix}/{b}.{ty}.{tx}"] = [url, offset, size]
    return refs


def write_index(tif, out):
    """Writes the Kerchunk JSON index of `tif` to `out` (portable {{base}} URLs)."""
    ds = gdal.Open(tif)
    url = "{{base}}" + os.path.basename(tif)
    levels = [[ds.GetRasterBand(b + 1) for b in range(ds.RasterCount)]]
    for o in range(ds.GetRasterBand(1).GetOverviewCount()):
        levels.append([ds.GetRasterBand(b + 1).GetOverview(o) for b in range(ds.RasterCount)])
    layout = [{"asset": "0", "transform": {"scale": [1.0, 1.0], "translation": [0.0, 0.0]}}]
    for i, lvl in enumerate(levels[1:], start=1):
        scale = [ds.RasterXSize / lvl[0].XSize, ds.RasterYSize / lvl[0].YSize]
        layout.append({"asset": str(i), "derived_from": str(i - 1),
                       "transform": {"scale": scale, "translation": [0.0, 0.0]}})
    refs = {".zgroup": json.dumps({"zarr_format": 2}),
            ".zattrs": json.dumps({"source": os.path.basename(tif), "multiscales": {"layout": layout}})}
    for i, lvl in enumerate(levels):
        refs.update(level_refs(i, lvl, url))
    with open(out, "w") as f:
        json.dump({"version": 1, "templates": {"base": ""}, "refs": refs}, f)


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "."
    tif = os.path.join(out_dir, "sample.tif")
    write_sample(tif)
    write_index(tif, os.path.join(out_dir, "sample.tile_index.json"))
    print(f"wrote {tif} and its index {os.path.join(out_dir, 'sample.tile_index.json')}")


if __name__ == "__main__":
    main()
