"""The paths issue 29's open and indexing work made faster, checked
against GDAL reading the sources:

- Kerchunk JSON is parsed as strict JSON first and rewritten only when
  that fails (Python's ``NaN``, trailing commas): both kinds of text open,
  uncached, with the pixels and nodata GDAL reads;
- Parquet tables are written uncompressed and open, uncached, as GDAL
  reads the source;
- a time stack's sources are read continuously by the source threads and
  used in the order given, at any ``--concurrency`` (1 used to hang);
- ``chunkref index``'s summary counts the sources of a NetCDF join, and
  an error names the source once.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
from osgeo import gdal
from scipy.io import netcdf_file

from conftest import run_chunkref
from raster_checks import assert_pixels_equal, captured_errors, config_options, open_chunkref

gdal.UseExceptions()


def float_tiff(path: Path, seed: int = 1, size: int = 96) -> Path:
    """A tiled Float32 GTiff with NaN nodata and some NaN pixels."""
    rng = np.random.default_rng(seed)
    data = rng.normal(size=(size, size)).astype(np.float32)
    data[5:9, 10:20] = np.nan
    ds = gdal.GetDriverByName("GTiff").Create(str(path), size, size, 1, gdal.GDT_Float32,
                                              ["TILED=YES", "BLOCKXSIZE=32", "BLOCKYSIZE=32",
                                               "COMPRESS=DEFLATE"])
    ds.SetGeoTransform([300000, 10, 0, 5000000, 0, -10])
    band = ds.GetRasterBand(1)
    band.SetNoDataValue(float("nan"))
    band.WriteArray(data)
    ds = None
    return path


def int_tiff(path: Path, value: int, size: int = 64) -> Path:
    """A tiled Int16 GTiff whose pixels are ``value`` plus a gradient."""
    y, x = np.mgrid[0:size, 0:size]
    ds = gdal.GetDriverByName("GTiff").Create(str(path), size, size, 1, gdal.GDT_Int16,
                                              ["TILED=YES", "BLOCKXSIZE=32", "BLOCKYSIZE=32",
                                               "COMPRESS=ZSTD"])
    ds.SetGeoTransform([500000, 30, 0, 4600000, 0, -30])
    ds.GetRasterBand(1).WriteArray((value + x + 2 * y).astype(np.int16))
    ds = None
    return path


def assert_reads_like_gdal(index: Path | str, source: Path) -> None:
    """Opened without the index cache: the pixels and nodata of ``source``."""
    native_ds = gdal.Open(str(source))
    native = native_ds.GetRasterBand(1)
    with config_options({"CHUNKREF_INDEX_CACHE": "NO"}), captured_errors():
        ds = open_chunkref(index)
        band = ds.GetRasterBand(1)
        assert np.isnan(band.GetNoDataValue()) == np.isnan(native.GetNoDataValue() or 0.0)
        assert_pixels_equal(band.ReadAsArray(), native.ReadAsArray(), str(index))
        assert_pixels_equal(band.ReadAsArray(40, 20, 30, 50), native.ReadAsArray(40, 20, 30, 50),
                            f"{index} window")


def test_strict_and_python_json_open_alike(chunkref_bin, tmp_path):
    source = float_tiff(tmp_path / "f.tif")
    strict = tmp_path / "strict.json"
    done = run_chunkref(chunkref_bin, "index", source, "-o", strict)
    assert done.returncode == 0, done.stderr
    text = strict.read_text()
    assert '\\"fill_value\\":\\"NaN\\"' in text, text[:400]
    assert_reads_like_gdal(strict, source)
    # What Python's json module and GDAL's JSON writer let through: a bare
    # NaN inside a metadata document, a comma before the closing brace.
    python = tmp_path / "python.json"
    python.write_text(text.replace('\\"fill_value\\":\\"NaN\\"', '\\"fill_value\\":NaN')
                      .rstrip()[:-1] + ", }")
    text = python.read_text()
    assert '\\"fill_value\\":NaN' in text and text.endswith(", }")
    with pytest.raises(json.JSONDecodeError, match="double quotes"):
        json.loads(text)  # strict JSON has no trailing comma
    assert_reads_like_gdal(python, source)


def test_broken_json_still_names_the_place(chunkref_bin, tmp_path):
    source = float_tiff(tmp_path / "f.tif")
    index = tmp_path / "f.json"
    assert run_chunkref(chunkref_bin, "index", source, "-o", index).returncode == 0
    broken = tmp_path / "broken.json"
    broken.write_text(index.read_text().replace('"version"', '"version" oops', 1))
    with config_options({"CHUNKREF_INDEX_CACHE": "NO"}), captured_errors():
        with pytest.raises(RuntimeError, match=r"broken\.json.*line 1"):
            gdal.Open(str(broken))


def test_parquet_tables_open_uncached_as_gdal_reads(chunkref_bin, tmp_path):
    source = float_tiff(tmp_path / "f.tif", seed=3)
    table = tmp_path / "f.parquet"
    done = run_chunkref(chunkref_bin, "index", source, "-o", table)
    assert done.returncode == 0, done.stderr
    assert table.read_bytes()[:4] == b"PAR1"
    assert_reads_like_gdal(table, source)


@pytest.mark.parametrize("concurrency", ["1", "2", "5"])
def test_stack_steps_keep_the_order_given(chunkref_bin, tmp_path, concurrency):
    """Twelve sources, given out of date order, read by 1, 2 or 5 source
    threads: every band is the source given at its place."""
    days = [7, 3, 11, 0, 5, 9, 1, 10, 2, 8, 4, 6]
    sources = [int_tiff(tmp_path / f"sst_202501{d + 10:02d}.tif", 100 * d) for d in days]
    stack = tmp_path / f"stack{concurrency}.parquet"
    done = subprocess.run([str(chunkref_bin), "index", "--stack", "--concurrency", concurrency,
                           *map(str, sources), "-o", str(stack)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "12 of 12 sources indexed (0 failed)" in done.stderr, done.stderr
    with captured_errors():
        ds = open_chunkref(stack)
    assert ds.RasterCount == len(sources)
    for b, source in enumerate(sources, start=1):
        want = gdal.Open(str(source)).ReadAsArray()
        assert_pixels_equal(ds.GetRasterBand(b).ReadAsArray(), want, f"band {b} ({source.name})")


def test_a_failed_source_stops_the_stack_naming_it_once(chunkref_bin, tmp_path):
    sources = [int_tiff(tmp_path / f"d{d}.tif", d) for d in range(6)]
    broken = sources[3]
    broken.write_bytes(broken.read_bytes()[:40])  # inside its first IFD
    done = run_chunkref(chunkref_bin, "index", "--stack", "--concurrency", "2", *sources,
                        "-o", tmp_path / "stack.parquet")
    assert done.returncode == 1
    assert done.stderr.count(broken.name) == 1, done.stderr
    assert not (tmp_path / "stack.parquet").exists()
    done = run_chunkref(chunkref_bin, "index", "--stack", "--skip-errors", *sources,
                        "-o", tmp_path / "kept.parquet")
    assert done.returncode == 0, done.stderr
    assert "5 of 6 sources indexed (1 failed)" in done.stderr, done.stderr
    with captured_errors():
        assert open_chunkref(tmp_path / "kept.parquet").RasterCount == 5


def test_an_unreadable_source_is_named_once(chunkref_bin, tmp_path):
    """A TIFF cut inside its first IFD, which GDAL cannot open either; our
    message says "cannot index <file>" once, with what is wrong."""
    source = int_tiff(tmp_path / "cut.tif", 0, size=256)
    source.write_bytes(source.read_bytes()[:40])
    with pytest.raises(RuntimeError):
        gdal.Open(str(source))
    done = run_chunkref(chunkref_bin, "index", source, "-o", tmp_path / "cut.json")
    assert done.returncode == 1
    assert done.stderr.count("cannot index") == 1, done.stderr
    assert done.stderr.count("cut.tif") == 1, done.stderr
    assert "past the end of the file" in done.stderr, done.stderr


ROWS, COLS = 6, 7


def daily_netcdf(path: Path, day: int) -> Path:
    """A netCDF-3 file with one record of ``t`` along an unlimited ``time``."""
    f = netcdf_file(path, "w", version=2)
    f.createDimension("time", None)
    f.createDimension("lat", ROWS)
    f.createDimension("lon", COLS)
    lat = f.createVariable("lat", "f4", ("lat",))
    lat.units = "degrees_north"
    lat[:] = np.linspace(45, 45 - (ROWS - 1) * 0.5, ROWS)
    lon = f.createVariable("lon", "f4", ("lon",))
    lon.units = "degrees_east"
    lon[:] = np.linspace(2, 2 + (COLS - 1) * 0.5, COLS)
    t = f.createVariable("time", "f8", ("time",))
    t.units = "days since 2025-01-01"
    t[:] = [float(day)]
    v = f.createVariable("t", "f4", ("time", "lat", "lon"))
    v[:] = (np.arange(ROWS * COLS, dtype="f4").reshape(1, ROWS, COLS) + 100 * day)
    f.close()
    return path


def test_a_netcdf_join_counts_its_sources(chunkref_bin, tmp_path):
    days = [daily_netcdf(tmp_path / f"day{d}.nc", d) for d in range(3)]
    out = tmp_path / "days.json"
    done = run_chunkref(chunkref_bin, "index", *days, "-o", out)
    assert done.returncode == 0, done.stderr
    assert "3 of 3 sources indexed (0 failed)" in done.stderr, done.stderr
    with captured_errors():
        ds = open_chunkref(f'CHUNKREF:"{out}":t')
    assert ds.RasterCount == 3
    for b, day in enumerate(days, start=1):
        want = gdal.Open(f'NETCDF:"{day}":t').ReadAsArray()
        assert_pixels_equal(ds.GetRasterBand(b).ReadAsArray(), want, f"band {b}")


def test_a_mosaic_counts_its_sources(chunkref_bin, tmp_path):
    """Two scenes side by side on one grid: the summary counts both, and
    the mosaic reads as GDAL's VRT of them."""
    left = int_tiff(tmp_path / "left.tif", 0)
    right = int_tiff(tmp_path / "right.tif", 1000)
    ds = gdal.Open(str(right), gdal.GA_Update)
    ds.SetGeoTransform([500000 + 64 * 30, 30, 0, 4600000, 0, -30])
    ds = None
    out = tmp_path / "mosaic.json"
    done = run_chunkref(chunkref_bin, "index", "--mosaic", left, right, "-o", out)
    assert done.returncode == 0, done.stderr
    assert "2 of 2 sources indexed (0 failed)" in done.stderr, done.stderr
    vrt = gdal.BuildVRT(str(tmp_path / "both.vrt"), [str(left), str(right)])
    with captured_errors():
        got = open_chunkref(out)
    assert_pixels_equal(got.ReadAsArray(), vrt.ReadAsArray(), "mosaic")
