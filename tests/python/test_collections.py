"""Collections: ``chunkref index a.tif b.tif ... -o stack.parquet`` stacks
files of one grid along time.  The stack must read like a VRT built by
``gdalbuildvrt -separate`` over the same files (band t = step t), every
overview level like the sources' own overviews, band metadata must carry
each step's datetime, and the TIME_* open options must pick steps.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from osgeo import gdal

from conftest import run_chunkref
from raster_checks import assert_matches, assert_pixels_equal, failure_text, native_levels, open_chunkref
from servers import RangeServer

DATES = ["20210101", "20210102", "20210215", "20210301"]


def write_step(path: Path, step: int, bands: int = 1, size: tuple[int, int] = (300, 200)) -> Path:
    """A ZSTD COG (128x128 tiles, one overview) whose pixels depend on ``step``."""
    width, height = size
    mem = gdal.GetDriverByName("MEM").Create("", width, height, bands, gdal.GDT_Int16)
    for b in range(bands):
        pixels = (np.arange(width * height).reshape(height, width) * (step + 3 + b)) % 30011
        mem.GetRasterBand(b + 1).WriteArray(pixels.astype("int16"))
    mem.SetGeoTransform([100, 0.5, 0, 200, 0, -0.5])
    mem.SetProjection("EPSG:4326")
    gdal.Translate(
        str(path), mem,
        options="-of COG -co BLOCKSIZE=128 -co COMPRESS=ZSTD -co PREDICTOR=YES -co OVERVIEW_COUNT=1",
    )
    return path


def write_steps(tmp_path: Path, bands: int = 1) -> list[Path]:
    return [write_step(tmp_path / f"sst_{d}.tif", i, bands) for i, d in enumerate(DATES)]


def stack(binary: Path, sources: list[Path], out: Path, *extra: str) -> None:
    done = run_chunkref(binary, "index", *extra, *sources, "-o", out)
    assert done.returncode == 0, f"{done.stderr}{done.stdout}"


def expected_levels(sources: list[Path]) -> tuple[list[np.ndarray], list[tuple[int, int]]]:
    """Every level of the stack as GDAL reads the sources: (steps * bands, y, x)."""
    per_source = [native_levels(gdal.Open(str(s))) for s in sources]
    levels = [np.concatenate([p[level] for p in per_source]) for level in range(len(per_source[0]))]
    ds = gdal.Open(str(sources[0]))
    blocks = [tuple(ds.GetRasterBand(1).GetBlockSize())] + [
        tuple(ds.GetRasterBand(1).GetOverview(i).GetBlockSize())
        for i in range(ds.GetRasterBand(1).GetOverviewCount())
    ]
    return levels, blocks


@pytest.mark.parametrize("form", ["parquet", "json"])
def test_time_stack_reads_like_a_separate_vrt(tmp_path, chunkref_bin, form):
    sources = write_steps(tmp_path)
    out = tmp_path / f"stack.{form}"
    stack(chunkref_bin, sources, out, "--datetime-from-name")
    vrt = gdal.BuildVRT(str(tmp_path / "stack.vrt"), [str(s) for s in sources], separate=True)
    ds = open_chunkref(out)
    assert ds.RasterCount == len(sources)
    assert ds.GetGeoTransform() == vrt.GetGeoTransform()
    assert_pixels_equal(ds.ReadAsArray(), vrt.ReadAsArray(), "stack vs gdalbuildvrt -separate")
    levels, blocks = expected_levels(sources)
    assert_matches(ds, levels, blocks)
    for t, d in enumerate(DATES):
        band = ds.GetRasterBand(t + 1)
        assert band.GetMetadataItem("DATETIME") == f"{d[:4]}-{d[4:6]}-{d[6:]}"
        assert band.GetMetadataItem("DIM_time_INDEX") == str(t)


def test_multiband_steps_are_band_groups(tmp_path, chunkref_bin):
    sources = write_steps(tmp_path, bands=3)[:2]
    out = tmp_path / "stack.parquet"
    stack(chunkref_bin, sources, out)
    levels, blocks = expected_levels(sources)
    ds = open_chunkref(out)
    assert ds.RasterCount == 6
    assert_matches(ds, levels, blocks)
    assert ds.GetRasterBand(4).GetMetadataItem("DATETIME") is None, "no datetime unless asked"


def test_time_options_pick_steps(tmp_path, chunkref_bin):
    sources = write_steps(tmp_path)
    out = tmp_path / "stack.parquet"
    stack(chunkref_bin, sources, out, "--datetime-from-name")
    levels, blocks = expected_levels(sources)
    cases = {
        ("TIME_STEP=2",): [2],
        ("TIME_STEP=2021-02-15",): [2],
        ("TIME_START=1", "TIME_END=2"): [1, 2],
        ("TIME_START=2021-01-02", "TIME_END=2021-02-28"): [1, 2],
        ("TIME_START=2021-02-01",): [2, 3],
        ("TIME_END=2021-01-02",): [0, 1],
    }
    for options, steps in cases.items():
        ds = open_chunkref(out, options)
        assert_matches(ds, [level[steps] for level in levels], blocks)
        dates = [ds.GetRasterBand(i + 1).GetMetadataItem("DATETIME") for i in range(ds.RasterCount)]
        assert [d.replace("-", "") for d in dates] == [DATES[s] for s in steps], options


@pytest.mark.parametrize(
    "options, message",
    [
        (["TIME_STEP=4"], "TIME_STEP=4 is outside the 4 time steps (0 to 3)"),
        (["TIME_START=2022-01-01"], "no time step of"),
        (["TIME_START=3", "TIME_END=1"], "chooses no step"),
        (["TIME_STEP=1", "TIME_END=2"], "cannot be combined"),
    ],
)
def test_bad_time_options_fail_clearly(tmp_path, chunkref_bin, options, message):
    sources = write_steps(tmp_path)
    out = tmp_path / "stack.parquet"
    stack(chunkref_bin, sources, out, "--datetime-from-name")
    text = failure_text(
        gdal.OpenEx, str(out), gdal.OF_RASTER, allowed_drivers=["ChunkRef"], open_options=options
    )
    assert message in text, text


def test_time_options_on_a_plain_index_fail_clearly(tmp_path, chunkref_bin):
    source = write_step(tmp_path / "one.tif", 0)
    stack(chunkref_bin, [source], tmp_path / "one.parquet")
    text = failure_text(
        gdal.OpenEx, str(tmp_path / "one.parquet"), gdal.OF_RASTER,
        allowed_drivers=["ChunkRef"], open_options=["TIME_STEP=0"],
    )
    assert "has a time axis" in text, text


def test_stack_converts_losslessly(tmp_path, chunkref_bin):
    sources = write_steps(tmp_path)
    stack(chunkref_bin, sources, tmp_path / "stack.parquet", "--datetime-from-name")
    for src, dst in [("stack.parquet", "stack.json"), ("stack.json", "again.parquet")]:
        done = run_chunkref(chunkref_bin, "convert", tmp_path / src, tmp_path / dst)
        assert done.returncode == 0, done.stderr
    levels, blocks = expected_levels(sources)
    for name in ["stack.json", "again.parquet"]:
        ds = open_chunkref(tmp_path / name)
        assert_matches(ds, levels, blocks)
        assert ds.GetRasterBand(3).GetMetadataItem("DATETIME") == "2021-02-15"


def test_files_off_the_grid_are_refused_by_name(tmp_path, chunkref_bin):
    sources = write_steps(tmp_path)[:2]
    odd = write_step(tmp_path / "odd_20210105.tif", 9, size=(310, 200))
    done = run_chunkref(
        chunkref_bin, "index", "--stack", *sources, odd, "-o", tmp_path / "stack.parquet"
    )
    assert done.returncode != 0
    assert f"{odd} is not on the grid of {sources[0]}" in done.stderr, done.stderr
    assert not (tmp_path / "stack.parquet").exists()


def test_datetime_from_name_needs_a_date(tmp_path, chunkref_bin):
    sources = [write_step(tmp_path / "a.tif", 0), write_step(tmp_path / "b.tif", 1)]
    done = run_chunkref(
        chunkref_bin, "index", "--datetime-from-name", *sources, "-o", tmp_path / "s.parquet"
    )
    assert done.returncode != 0 and "no date" in done.stderr and "a.tif" in done.stderr, done.stderr


#: How each form records a datetime with GDAL: (extension, gdal_translate
#: options for a datetime), the datetimes as written and as ISO 8601.
METADATA_FORMS = {
    "tiff_tag": (".tif", lambda d: ["-of", "COG", "-co", "BLOCKSIZE=128", "-mo", f"TIFFTAG_DATETIME={d}"]),
    "gdal_item": (".tif", lambda d: ["-of", "COG", "-co", "BLOCKSIZE=128", "-mo", f"ACQUISITIONDATETIME={d}"]),
    "nitf": (".ntf", lambda d: ["-of", "NITF", "-co", "BLOCKSIZE=128", "-co", f"IDATIM={d}"]),
    "jp2": (".jp2", lambda d: ["-of", "JP2OpenJPEG", "-co", "WRITE_METADATA=YES", "-mo", f"TIFFTAG_DATETIME={d}"]),
}
WRITTEN = {
    "tiff_tag": ["2021:01:01 00:00:00", "2021:01:02 06:30:00", "2021:02:15 12:00:00"],
    "gdal_item": ["2021-01-01T00:00:00Z", "2021-01-02T06:30:00Z", "2021-02-15T12:00:00Z"],
    "nitf": ["20210101000000", "20210102063000", "20210215120000"],
    "jp2": ["2021:01:01 00:00:00", "2021:01:02 06:30:00", "2021:02:15 12:00:00"],
}


@pytest.mark.parametrize("form", sorted(METADATA_FORMS))
def test_datetime_from_metadata(tmp_path, chunkref_bin, form):
    ext, options = METADATA_FORMS[form]
    sources = []
    for t, written in enumerate(WRITTEN[form]):
        plain = write_step(tmp_path / f"plain_{t}.tif", t)
        path = tmp_path / f"step_{t}{ext}"
        gdal.Translate(str(path), str(plain), options=options(written))
        sources.append(path)
    zone = "Z" if form == "gdal_item" else ""
    iso = [f"2021-01-01T00:00:00{zone}", f"2021-01-02T06:30:00{zone}", f"2021-02-15T12:00:00{zone}"]
    out = tmp_path / "stack.parquet"
    stack(chunkref_bin, sources, out, "--datetime-from-metadata")
    ds = open_chunkref(out)
    assert [ds.GetRasterBand(t + 1).GetMetadataItem("DATETIME") for t in range(3)] == iso
    vrt = gdal.BuildVRT(str(tmp_path / "stack.vrt"), [str(s) for s in sources], separate=True)
    assert_pixels_equal(ds.ReadAsArray(), vrt.ReadAsArray(), f"{form} stack vs gdalbuildvrt -separate")
    picked = open_chunkref(out, ["TIME_START=2021-01-02", "TIME_END=2021-01-02"])
    assert picked.RasterCount == 1
    assert picked.GetRasterBand(1).GetMetadataItem("DATETIME") == iso[1]
    assert_pixels_equal(picked.ReadAsArray(), vrt.GetRasterBand(2).ReadAsArray(), "step 1")
    late = open_chunkref(out, ["TIME_START=2021-01-02T12:00:00"])
    assert [late.GetRasterBand(1).GetMetadataItem("DATETIME")] == iso[2:]


def test_datetime_from_metadata_needs_one(tmp_path, chunkref_bin):
    dated = tmp_path / "dated.tif"
    gdal.Translate(str(dated), str(write_step(tmp_path / "a.tif", 0)),
                   options=["-of", "COG", "-co", "BLOCKSIZE=128", "-mo", "TIFFTAG_DATETIME=2021:01:01 00:00:00"])
    bare = write_step(tmp_path / "bare.tif", 1)
    out = tmp_path / "s.parquet"
    done = run_chunkref(chunkref_bin, "index", "--datetime-from-metadata", dated, bare, "-o", out)
    assert done.returncode != 0, done.stderr
    assert f"{bare}: --datetime-from-metadata: its metadata records no datetime" in done.stderr, done.stderr
    assert not out.exists()
    done = run_chunkref(
        chunkref_bin, "index", "--datetime-from-name", "--datetime-from-metadata", dated, bare, "-o", out
    )
    assert done.returncode != 0 and "exclude each other" in done.stderr, done.stderr


def test_pixel_drill_fetches_every_step_at_once(tmp_path, chunkref_bin):
    """One pixel over every step of a remote stack (``ds.ReadRaster(x, y, 1,
    1)`` of all bands, rasterio's ``src.read(window=...)``): the steps'
    chunks are fetched together, not one band's round trip after another."""
    steps = 12
    for i in range(steps):
        write_step(tmp_path / f"sst_202101{i + 1:02d}.tif", i)
    server = RangeServer(tmp_path, delay=0.05)
    try:
        urls = [f"{server.url}sst_202101{i + 1:02d}.tif" for i in range(steps)]
        out = tmp_path / "stack.json"
        stack(chunkref_bin, urls, out, "--datetime-from-name")
        ds = open_chunkref(out)
        assert ds.RasterCount == steps
        server.log.most_in_flight = 0
        got = np.frombuffer(ds.ReadRaster(130, 70, 1, 1), dtype=np.int16)
        want = [gdal.Open(str(tmp_path / f"sst_202101{i + 1:02d}.tif")).ReadAsArray(130, 70, 1, 1)[0, 0]
                for i in range(steps)]
        assert got.tolist() == want
        assert server.log.most_in_flight > steps // 2, server.log.most_in_flight
        # Band by band (gdallocationinfo, a client's loop): the following
        # steps' blocks are read ahead, more at each next band.
        ds = open_chunkref(out)  # a new dataset: its block cache is empty
        server.log.most_in_flight = 0
        got = [
            np.frombuffer(ds.GetRasterBand(b).ReadRaster(250, 150, 1, 1), dtype=np.int16)[0]
            for b in range(1, steps + 1)
        ]
        want = [gdal.Open(str(tmp_path / f"sst_202101{i + 1:02d}.tif")).ReadAsArray(250, 150, 1, 1)[0, 0]
                for i in range(steps)]
        assert got == want
        assert server.log.most_in_flight >= 4, server.log.most_in_flight
    finally:
        server.close()
