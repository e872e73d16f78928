#!/usr/bin/env python3
"""Writes a sample Cloud Optimized GeoTIFF with GDAL for the demo.

A smooth 3-band test pattern, georeferenced in UTM 33N, DEFLATE with the
horizontal predictor, 256x256 tiles, internal overviews.

Usage: make_sample.py OUT.tif
"""
import sys

import numpy as np
from osgeo import gdal

gdal.UseExceptions()


def main(out, width=2000, height=1400, bands=3):
    y, x = np.mgrid[0:height, 0:width]
    mem = gdal.GetDriverByName("MEM").Create("", width, height, bands, gdal.GDT_Byte)
    mem.SetGeoTransform([500000.0, 5.0, 0.0, 5000000.0, 0.0, -5.0])
    mem.SetProjection("EPSG:32633")
    for b in range(bands):
        pattern = (x * (b + 1) // 4 + y // (b + 2) + 40 * np.sin(x / 50.0 + b)) % 256
        mem.GetRasterBand(b + 1).WriteArray(pattern.astype(np.uint8))
    gdal.Translate(out, mem, format="COG",
                   creationOptions=["COMPRESS=DEFLATE", "PREDICTOR=2", "BLOCKSIZE=256"])
    print(f"wrote {out}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "sample.tif")
