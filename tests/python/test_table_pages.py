"""Large chunk-reference tables are read on demand (locally, over HTTP and S3).

A table of more rows than ``CHUNKREF_TABLE_EAGER_ROWS`` is not read at open:
the driver keeps the Parquet footer (or the FlatGeobuf header) and, for each
read, decodes only the row groups whose statistics can hold the chunks (or
asks the FlatGeobuf R-tree for the features over their footprints).  Pixels
must be those of the same table read whole, locally and over HTTP, where a
one-tile read must fetch a small part of the table; a malformed row must
fail the read that needs it, naming the table and the row.

The tables are time stacks of hard links of three GDAL-written COGs (step t
links source t mod 3), the Parquet one rewritten by pyarrow into small row
groups (as any Parquet writer may cut them).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Iterator

import numpy as np
import pytest
from osgeo import gdal

from conftest import REPO_ROOT, run_chunkref
from raster_checks import assert_pixels_equal, config_options, failure_text, open_chunkref
from servers import MotoServer, RangeServer
from test_collections import write_step
from test_tables import run_python, table_python  # noqa: F401  (fixture)

STEPS = 60
#: Distinct sources the steps cycle through.
SOURCES = 3
#: Rows per row group of the rewritten tables.
GROUP_ROWS = 1024
#: Bands (steps + 1) compared in full.
BANDS = [1, 2, 3, 31, 59, 60]

#: pyarrow script: rewrite argv[1] into argv[2] in row groups of argv[3]
#: rows; with argv[4] = ROW, set the file id of that row to 9999.
REGROUP = """
import sys
import pyarrow as pa, pyarrow.compute as pc, pyarrow.parquet as pq
src, dst, rows = sys.argv[1:4]
table = pq.read_table(src)
if len(sys.argv) > 4:
    bad = int(sys.argv[4])
    files = table["file"].to_pylist()
    files[bad] = 9999
    table = table.set_column(5, "file", pa.array(files, pa.uint32()))
pq.write_table(table, dst, row_group_size=int(rows))
print(pq.ParquetFile(dst).metadata.num_row_groups)
"""


@pytest.fixture
def paged():
    """Every table opened in the test is read on demand."""
    gdal.SetConfigOption("CHUNKREF_TABLE_EAGER_ROWS", "0")
    yield
    gdal.SetConfigOption("CHUNKREF_TABLE_EAGER_ROWS", None)


@pytest.fixture(scope="module")
def tables(tmp_path_factory, chunkref_bin, table_python) -> dict[str, Path]:  # noqa: F811
    """A stack of STEPS steps as JSON, Parquet (cut by pyarrow into row
    groups of GROUP_ROWS rows) and FlatGeobuf, plus its sources."""
    root = tmp_path_factory.mktemp("pages")
    bases = [write_step(root / f"base{s}.tif", s, size=(3000, 2000)) for s in range(SOURCES)]
    sources = []
    for t in range(STEPS):
        step = root / f"step_{t:03d}.tif"
        os.link(bases[t % SOURCES], step)
        sources.append(step)
    out = {"json": root / "stack.json", "fgb": root / "stack.fgb"}
    for path in out.values():
        done = run_chunkref(chunkref_bin, "index", *sources, "-o", path)
        assert done.returncode == 0, done.stderr
    whole = root / "whole.parquet"
    assert run_chunkref(chunkref_bin, "index", *sources, "-o", whole).returncode == 0
    out["parquet"] = root / "stack.parquet"
    groups = run_python(table_python, REGROUP, whole, out["parquet"], GROUP_ROWS)
    assert int(groups) > 20, groups
    out["sources"] = bases
    return out


def native(tables: dict, band: int) -> gdal.Dataset:
    """The source file of band ``band`` (step ``band - 1``)."""
    return gdal.Open(str(tables["sources"][(band - 1) % SOURCES]))


def some_bands(ds: gdal.Dataset) -> np.ndarray:
    return np.stack([ds.GetRasterBand(b).ReadAsArray() for b in BANDS])


@pytest.mark.parametrize("form", ["parquet", "fgb"])
def test_paged_tables_read_like_the_json_index(tables, paged, form):
    gdal.SetConfigOption("CHUNKREF_TABLE_EAGER_ROWS", None)
    json_ds = open_chunkref(tables["json"])
    expected = some_bands(json_ds)
    gdal.SetConfigOption("CHUNKREF_TABLE_EAGER_ROWS", "0")
    ds = open_chunkref(tables[form])
    assert ds.RasterCount == STEPS
    assert_pixels_equal(some_bands(ds), expected, f"{form} read on demand")
    # A window of several bands (the batched window path), a block-cache
    # read of one pixel, and an overview.
    window = ds.ReadAsArray(130, 250, 333, 100, band_list=BANDS)
    assert_pixels_equal(window, expected[:, 250:350, 130:463], "window")
    band = ds.GetRasterBand(31)
    assert band.ReadAsArray(0, 0, 1, 1)[0, 0] == expected[3, 0, 0]
    source = native(tables, 31)
    assert_pixels_equal(
        band.GetOverview(0).ReadAsArray(),
        source.GetRasterBand(1).GetOverview(0).ReadAsArray(),
        "overview on demand",
    )


@pytest.mark.parametrize("form", ["parquet", "fgb"])
def test_time_options_on_paged_tables(tables, paged, form):
    ds = open_chunkref(tables[form], ["TIME_START=40", "TIME_END=42"])
    assert ds.RasterCount == 3
    for b in range(3):
        expected = native(tables, 41 + b).ReadAsArray()
        assert_pixels_equal(ds.GetRasterBand(b + 1).ReadAsArray(), expected, f"step {40 + b}")


@pytest.fixture(scope="module")
def http(tables) -> Iterator[RangeServer]:
    server = RangeServer(tables["json"].parent)
    yield server
    server.close()


def fetched_bytes(server: RangeServer, name: str) -> int:
    """Bytes of ``name`` the server sent (HEAD requests count nothing)."""
    total = 0
    for path, rng in server.log.requests:
        if path.endswith(name) and rng.startswith("bytes="):
            start, end = rng[len("bytes="):].split("-")
            total += int(end) - int(start) + 1
    return total


@pytest.mark.parametrize("form", ["parquet", "fgb"])
def test_one_tile_over_http_reads_a_small_part_of_the_table(tables, http, paged, form):
    name = tables[form].name
    gdal.SetConfigOption("GDAL_ALLOW_REMOTE_RESOURCE_TO_ACCESS_LOCAL_FILE", "YES")
    try:
        gdal.VSICurlClearCache()
        ds = open_chunkref(f"/vsicurl/{http.url}{name}")
        http.log.requests.clear()
        tile = ds.GetRasterBand(25).ReadAsArray(128, 256, 128, 128)
    finally:
        gdal.SetConfigOption("GDAL_ALLOW_REMOTE_RESOURCE_TO_ACCESS_LOCAL_FILE", None)
    source = native(tables, 25)
    expected = source.GetRasterBand(1).ReadAsArray(128, 256, 128, 128)
    assert_pixels_equal(tile, expected, "remote tile")
    size = tables[form].stat().st_size
    got = fetched_bytes(http, name)
    # A remote Parquet table's last 2 MiB (footer, page index) come with the
    # open: this small table is then read whole, and the tile needs nothing.
    least = 0 if form == "parquet" and size <= 2 << 20 else 1
    assert least <= got < size / 4, f"{got} of {size} bytes of {name} fetched for one tile"


def test_a_bad_row_fails_the_read_that_needs_it(tables, tmp_path, table_python, paged):  # noqa: F811
    whole = tables["parquet"].parent / "whole.parquet"
    bad = tmp_path / "bad.parquet"
    # Row 0 is the first tile of level 0, step 0.
    run_python(table_python, REGROUP, whole, bad, GROUP_ROWS, 0)
    ds = open_chunkref(bad)
    good = ds.GetRasterBand(STEPS).ReadAsArray(0, 0, 10, 10)
    source = native(tables, STEPS)
    expected = source.GetRasterBand(1).ReadAsArray(0, 0, 10, 10)
    assert_pixels_equal(good, expected, "other step")
    band = ds.GetRasterBand(1)
    message = failure_text(band.ReadAsArray, 0, 0, 10, 10)
    assert "row 0" in message and "file 9999 does not exist" in message, message
    assert str(bad) in message, message


@pytest.mark.parametrize("form", ["parquet", "fgb"])
def test_paged_tables_on_s3(tables, tmp_path, paged, form):
    """The same tables in an S3 bucket (moto on loopback), opened through
    /vsis3/ with GDAL's own credentials, read on demand."""
    upload = tmp_path / "upload"
    upload.mkdir()
    shutil.copy(tables[form], upload / tables[form].name)
    server = MotoServer(REPO_ROOT / "build" / "moto-venv", tmp_path / "moto.log")
    try:
        server.make_bucket("tables")
        server.upload_tree("tables", upload)
        options = {
            "AWS_S3_ENDPOINT": server.endpoint,
            "AWS_HTTPS": "NO",
            "AWS_VIRTUAL_HOSTING": "FALSE",
            "AWS_REGION": "us-east-1",
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "GDAL_ALLOW_REMOTE_RESOURCE_TO_ACCESS_LOCAL_FILE": "YES",
        }
        with config_options(options):
            ds = open_chunkref(f"/vsis3/tables/{tables[form].name}")
            assert ds.RasterCount == STEPS
            band = ds.GetRasterBand(44)
            tile = band.ReadAsArray(1000, 500, 300, 200)
    finally:
        server.close()
    source = native(tables, 44)
    expected = source.GetRasterBand(1).ReadAsArray(1000, 500, 300, 200)
    assert_pixels_equal(tile, expected, f"{form} on S3")
