"""``chunkref index`` over GDAL-written DTED cells, read back through ChunkRef.

Cells are written by GDAL's DTED driver from a synthetic Int16 raster whose
extent is exactly one degree of posts (levels 0, 1, 2, and a level 1 cell
at 60N where longitude lines are twice as far apart).  GDAL's DTED driver
is the oracle for one cell; ``gdalbuildvrt`` + ``gdal_translate`` over the
same cells is the oracle for a mosaic.  The neighbouring cells hold
different values on their shared edges, so the test sees which post wins.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from osgeo import gdal

from conftest import run_chunkref
from peer import peer_index, peer_read_levels
from raster_checks import assert_pixels_equal, captured_errors, failure_text, open_chunkref

VOID = -32767
#: Size of the UHL, DSI and ACC records before the data records.
DATA_OFFSET = 3428

#: name -> (latitude, longitude, posts per line (rows), longitude lines (cols)).
CELLS = {
    "level0": (45, 15, 121, 121),
    "level1": (45, 15, 1201, 1201),
    "level2": (45, 15, 3601, 3601),
    "level1-zone2-60N": (60, 15, 1201, 601),
    "level0-southwest": (-13, -76, 121, 121),
}


def cell_pixels(rows: int, cols: int, seed: int) -> np.ndarray:
    """Elevations with negatives, voids and a per-cell offset (so that
    neighbours disagree on their shared edges)."""
    y, x = np.mgrid[0:rows, 0:cols]
    pixels = ((x * 7 + y * 13 + seed * 1000) % 3000 - 500).astype(np.int16)
    pixels[rows // 3, cols // 4] = VOID
    pixels[rows // 2, : cols // 5] = -15000
    return pixels


def write_cell(path: Path, lat: int, lon: int, rows: int, cols: int, seed: int = 0) -> Path:
    """A DTED cell written by GDAL covering [lon, lon+1] x [lat, lat+1]."""
    mem = gdal.GetDriverByName("MEM").Create("", cols, rows, 1, gdal.GDT_Int16)
    px, py = 1 / (cols - 1), 1 / (rows - 1)
    mem.SetGeoTransform([lon - px / 2, px, 0, lat + 1 + py / 2, 0, -py])
    mem.SetProjection("EPSG:4326")
    mem.GetRasterBand(1).WriteArray(cell_pixels(rows, cols, seed))
    path.parent.mkdir(parents=True, exist_ok=True)
    gdal.Translate(str(path), mem, format="DTED")
    return path


def cell_name(lat: int, lon: int, level: int) -> str:
    ns, ew = ("n" if lat >= 0 else "s"), ("e" if lon >= 0 else "w")
    return f"{ns}{abs(lat):02d}{ew}{abs(lon):03d}.dt{level}"


def index(chunkref_bin: Path, out: Path, *sources: Path, extra: tuple = ()) -> Path:
    done = run_chunkref(chunkref_bin, "index", *extra, *sources, "-o", out)
    assert done.returncode == 0, done.stderr
    return out


def index_attrs(path: Path) -> dict:
    return json.loads(json.loads(path.read_text())["refs"][".zattrs"])


def gdal_order(transform: list) -> tuple:
    """GeoZarr ``spatial:transform`` [a, b, c, d, e, f] as GDAL's geotransform."""
    a, b, c, d, e, f = transform
    return (c, a, b, f, d, e)


def assert_geotransform(got: tuple, want: tuple, what: str) -> None:
    assert np.allclose(got, want, rtol=0, atol=1e-12), f"{what}: {got} != {want}"


@pytest.mark.parametrize("name", list(CELLS))
def test_cell_reads_like_gdal(name, tmp_path, chunkref_bin):
    lat, lon, rows, cols = CELLS[name]
    level = {121: 0, 1201: 1, 3601: 2}[rows]
    source = write_cell(tmp_path / cell_name(lat, lon, level), lat, lon, rows, cols)
    native = gdal.Open(str(source))
    assert (native.RasterXSize, native.RasterYSize) == (cols, rows)
    out = index(chunkref_bin, tmp_path / "cell.json", source)
    ds = open_chunkref(out)
    band = ds.GetRasterBand(1)
    assert (ds.RasterXSize, ds.RasterYSize, ds.RasterCount) == (cols, rows, 1)
    assert band.DataType == gdal.GDT_Int16
    assert band.GetNoDataValue() == VOID
    assert_pixels_equal(band.ReadAsArray(), native.ReadAsArray(), name)
    window = band.ReadAsArray(cols // 3, rows // 5, cols // 2, rows // 3)
    assert_pixels_equal(window, native.ReadAsArray(cols // 3, rows // 5, cols // 2, rows // 3), name)
    attrs = index_attrs(out)
    assert attrs["proj:code"] == "EPSG:4326"
    assert attrs["spatial:shape"] == [rows, cols]
    assert_geotransform(gdal_order(attrs["spatial:transform"]), native.GetGeoTransform(), name)
    assert_geotransform(ds.GetGeoTransform(), native.GetGeoTransform(), f"{name} (driver)")
    assert ds.GetSpatialRef().IsSame(native.GetSpatialRef()), ds.GetSpatialRef().ExportToWkt()


def test_latitude_with_two_degree_digits(tmp_path, chunkref_bin):
    """A UHL latitude written ``380000N `` (DDMMSSH and a blank) is indexed
    as 38N. GDAL 3.6 reads those columns as 380 degrees (its geotransform
    is off the globe); the pixels are GDAL's, the origin is the unedited
    cell's (docs/real-files.md, DTED)."""
    source = write_cell(tmp_path / "n38w077.dt0", 38, -77, 121, 121)
    reference = gdal.Open(str(source)).GetGeoTransform()
    edited = tmp_path / "short.dt0"
    data = bytearray(source.read_bytes())
    assert data[12:20] == b"0380000N"
    data[12:20] = b"380000N "
    edited.write_bytes(bytes(data))
    native = gdal.Open(str(edited))
    assert native.GetGeoTransform()[3] > 380  # GDAL's fixed-column reading
    ds = open_chunkref(index(chunkref_bin, tmp_path / "short.json", edited))
    assert_geotransform(ds.GetGeoTransform(), reference, "short latitude")
    assert_pixels_equal(ds.ReadAsArray(), native.ReadAsArray(), "short latitude")


#: The 3x3 block of level 0 cells: latitudes north to south, longitudes west to east.
LATS, LONS = (47, 46, 45), (15, 16, 17)


def mosaic_cells(directory: Path, missing: tuple | None) -> list[Path]:
    """GDAL-written cells of the 3x3 block (less ``missing``), in the order
    north to south, west to east."""
    return [
        write_cell(directory / cell_name(lat, lon, 0), lat, lon, 121, 121, seed=lat * 7 + lon)
        for lat in LATS
        for lon in LONS
        if (lat, lon) != missing
    ]


def vrt_oracle(cells: list[Path], tmp_path: Path) -> gdal.Dataset:
    """gdalbuildvrt + gdal_translate over ``cells`` (later sources win where
    cells overlap, so with this order the southern / eastern cell's post is
    kept on a shared edge)."""
    vrt = gdal.BuildVRT(str(tmp_path / "cells.vrt"), [str(c) for c in cells])
    gdal.Translate(str(tmp_path / "cells.tif"), vrt)
    vrt = None
    return gdal.Open(str(tmp_path / "cells.tif"))


@pytest.mark.parametrize("missing", [None, (46, 16), (45, 17)], ids=["full", "hole", "corner"])
def test_mosaic_matches_gdalbuildvrt(missing, tmp_path, chunkref_bin):
    cells = mosaic_cells(tmp_path / "cells", missing)
    oracle = vrt_oracle(cells, tmp_path)
    # Placement is by origin: the order on the command line does not matter.
    out = index(chunkref_bin, tmp_path / "tiles.json", *reversed(cells))
    ds = open_chunkref(out)
    assert (ds.RasterXSize, ds.RasterYSize) == (oracle.RasterXSize, oracle.RasterYSize) == (361, 361)
    assert ds.GetRasterBand(1).GetNoDataValue() == oracle.GetRasterBand(1).GetNoDataValue() == VOID
    attrs = index_attrs(out)
    assert attrs["spatial:shape"] == [361, 361]
    assert_geotransform(gdal_order(attrs["spatial:transform"]), oracle.GetGeoTransform(), "mosaic")
    assert_geotransform(ds.GetGeoTransform(), oracle.GetGeoTransform(), "mosaic (driver)")
    got, want = ds.ReadAsArray(), oracle.ReadAsArray()
    # The shared edges differ between neighbours: make sure the test sees it.
    first, second = (gdal.Open(str(c)).ReadAsArray() for c in cells[:2])
    assert (first[:, -1] != second[:, 0]).any()
    if missing is None:
        assert_pixels_equal(got, want, "3x3 mosaic")
        return
    # The missing cell's chunk reads as nodata. gdalbuildvrt also shows the
    # posts its neighbours share with it there; the chunk that would hold
    # them (the hole's north row and west column) has no reference.
    row, col = LATS.index(missing[0]) * 120, LONS.index(missing[1]) * 120
    end_row, end_col = row + 120 + (row == 240), col + 120 + (col == 240)
    hole = np.zeros(got.shape, bool)
    hole[row:end_row, col:end_col] = True
    assert_pixels_equal(got[~hole], want[~hole], "mosaic outside the missing cell")
    assert (got[hole] == VOID).all()
    assert (want[row + 1 : end_row, col + 1 : end_col] == VOID).all()


def test_mosaic_window_reads(tmp_path, chunkref_bin):
    cells = mosaic_cells(tmp_path / "cells", None)
    oracle = vrt_oracle(cells, tmp_path)
    ds = open_chunkref(index(chunkref_bin, tmp_path / "tiles.json", *cells))
    for xoff, yoff, w, h in [(100, 110, 50, 30), (238, 0, 123, 361), (0, 359, 361, 2), (360, 360, 1, 1)]:
        assert_pixels_equal(
            ds.ReadAsArray(xoff, yoff, w, h), oracle.ReadAsArray(xoff, yoff, w, h), f"window {xoff},{yoff}"
        )


def corrupt(source: Path, dest: Path, line: int, post: int) -> Path:
    """A copy of ``source`` with one post of record ``line`` changed (its
    checksum left as it was)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(source, dest)
    rows = gdal.Open(str(source)).RasterYSize
    with open(dest, "r+b") as f:
        at = DATA_OFFSET + line * (12 + 2 * rows) + 8 + 2 * post + 1
        f.seek(at)
        byte = f.read(1)[0]
        f.seek(at)
        f.write(bytes([byte ^ 1]))
    return dest


def test_bad_checksum_is_an_error_naming_the_record(tmp_path, chunkref_bin):
    good = write_cell(tmp_path / "n45e015.dt0", 45, 15, 121, 121)
    bad = corrupt(good, tmp_path / "bad" / "n45e015.dt0", line=37, post=5)
    ds = open_chunkref(index(chunkref_bin, tmp_path / "bad.json", bad))
    message = failure_text(ds.ReadAsArray)
    assert "bad checksum in record 37 (longitude line 37" in message, message
    assert str(bad) in message and "--bad-checksum-warning" in message, message
    # Indexed with checksum warnings, it reads (with the altered post) and warns.
    lenient = index(chunkref_bin, tmp_path / "lenient.json", bad, extra=("--bad-checksum-warning",))
    with captured_errors() as warnings:
        got = open_chunkref(lenient).ReadAsArray()
    assert any("bad checksum in record 37" in w for w in warnings), warnings
    want = gdal.Open(str(good)).ReadAsArray()
    differs = np.argwhere(got != want)
    assert differs.tolist() == [[120 - 5, 37]]


def test_mixed_levels_and_zones_are_refused(tmp_path, chunkref_bin):
    level0 = write_cell(tmp_path / "n45e015.dt0", 45, 15, 121, 121)
    level1 = write_cell(tmp_path / "n45e016.dt1", 45, 16, 1201, 1201)
    zone2 = write_cell(tmp_path / "n60e015.dt1", 60, 15, 1201, 601)
    for a, b in [(level0, level1), (level1, zone2)]:
        done = run_chunkref(chunkref_bin, "index", a, b, "-o", tmp_path / "mixed.json")
        assert done.returncode != 0
        assert "cannot mosaic DTED cells of different levels or latitude zones" in done.stderr
        assert a.name in done.stderr and b.name in done.stderr, done.stderr
        assert not (tmp_path / "mixed.json").exists()
    twice = run_chunkref(chunkref_bin, "index", level0, level0, "-o", tmp_path / "twice.json")
    assert twice.returncode != 0 and "give each cell once" in twice.stderr, twice.stderr


def test_truncated_file_is_a_clear_error(tmp_path, chunkref_bin):
    source = write_cell(tmp_path / "n45e015.dt0", 45, 15, 121, 121)
    out = index(chunkref_bin, tmp_path / "cell.json", source)
    size = source.stat().st_size
    with open(source, "r+b") as f:
        f.truncate(size - 100)
    done = run_chunkref(chunkref_bin, "index", source, "-o", tmp_path / "again.json")
    assert done.returncode != 0
    assert "truncated: 121 data records of 254 bytes" in done.stderr, done.stderr
    assert str(source) in done.stderr
    # Truncated after indexing: the read names the file and the range.
    message = failure_text(open_chunkref(out).ReadAsArray)
    assert str(source) in message and f"{DATA_OFFSET}" in message, message


def test_peer_index_of_a_cell_reads_identically(peer, tmp_path):  # noqa: F811
    source = write_cell(tmp_path / "n60e015.dt1", 60, 15, 1201, 601)
    want = gdal.Open(str(source)).ReadAsArray()
    for zarr_format in (2, 3):
        out = tmp_path / f"peer-v{zarr_format}.json"
        peer_index(peer, source, out, zarr_format=zarr_format)
        assert_pixels_equal(open_chunkref(out).ReadAsArray(), want, f"peer v{zarr_format} index")


def test_peer_reads_a_chunkref_cell_index(peer, tmp_path, chunkref_bin):  # noqa: F811
    source = write_cell(tmp_path / "n45e015.dt1", 45, 15, 1201, 1201)
    out = index(chunkref_bin, tmp_path / "cell.json", source)
    (level,) = peer_read_levels(peer, out, tmp_path / "peer-read")
    assert_pixels_equal(level.reshape(1201, 1201), gdal.Open(str(source)).ReadAsArray(), "peer read")
