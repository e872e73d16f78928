"""Mosaics: ``chunkref index a.tif b.tif ... -o mosaic.parquet|.fgb|.json``
makes scenes of one CRS and resolution on different grids one dataset
covering their union.  It must read exactly like the VRT ``gdalbuildvrt``
builds over the same files in the same order (later scenes over earlier
ones, each scene's nodata letting what lies beneath show through, gaps
nodata or 0), in every index form, through the batched window path and
the block path; scenes that cannot be mosaicked are refused by name.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from osgeo import gdal, osr

from conftest import run_chunkref
from raster_checks import (
    assert_pixels_equal,
    config_options,
    failure_text,
    odd_windows,
    open_chunkref,
)

#: Pixel size (metres) and union origin of every scene's grid.
PIXEL = 10.0
ORIGIN = (500000.0, 4600000.0)
EPSG = 32633

#: Scenes as (column, row, width, height, creation options): A and B
#: overlap, C lies apart (a gap between), D below A; sizes are uneven and
#: the scenes' tilings differ (the mosaic's blocks are A's).
LAYOUT = [
    (0, 0, 150, 100, ["TILED=YES", "BLOCKXSIZE=64", "BLOCKYSIZE=64"]),
    (100, 50, 120, 90, ["TILED=YES", "BLOCKXSIZE=32", "BLOCKYSIZE=48"]),
    (260, 10, 70, 60, ["TILED=YES", "BLOCKXSIZE=64", "BLOCKYSIZE=64"]),
    (20, 120, 50, 45, ["BLOCKYSIZE=7"]),
]


@dataclass(frozen=True)
class Case:
    """A kind of scene: bands, type, nodata (None: none) and interleave."""

    bands: int
    dtype: int
    nodata: float | None
    interleave: str = "PIXEL"


CASES = {
    "u1-1band-nodata0": Case(1, gdal.GDT_Byte, 0),
    "i2-3band-no-nodata": Case(3, gdal.GDT_Int16, None),
    "u2-3band-planar-nodata": Case(3, gdal.GDT_UInt16, 65535, "BAND"),
    "f4-2band-nan": Case(2, gdal.GDT_Float32, float("nan")),
}


def write_scene(
    path: Path,
    case: Case,
    col: int,
    row: int,
    width: int,
    height: int,
    options: list[str],
    seed: int,
    pixel: float = PIXEL,
    epsg: int = EPSG,
    shift: float = 0.0,
) -> Path:
    """A DEFLATE GeoTIFF at (col, row) pixels of the grid, with pixels that
    depend on ``seed`` and a patch of nodata (where it has one)."""
    ds = gdal.GetDriverByName("GTiff").Create(
        str(path), width, height, case.bands, case.dtype,
        options=[*options, "COMPRESS=DEFLATE", f"INTERLEAVE={case.interleave}"],
    )
    ds.SetGeoTransform([ORIGIN[0] + col * pixel + shift, pixel, 0, ORIGIN[1] - row * pixel, 0, -pixel])
    srs = osr.SpatialReference()
    srs.ImportFromEPSG(epsg)
    ds.SetProjection(srs.ExportToWkt())
    for b in range(case.bands):
        band = ds.GetRasterBand(b + 1)
        pixels = (np.arange(width * height).reshape(height, width) * (seed + 2 + b) + seed) % 251 + 1
        if case.nodata is not None:
            pixels = pixels.astype(np.float64)
            pixels[height // 3 : height // 2, width // 4 : width // 2] = case.nodata
            band.SetNoDataValue(case.nodata)
        band.WriteArray(pixels)
    ds = None
    return path


def write_scenes(directory: Path, case: Case) -> list[Path]:
    return [
        write_scene(directory / f"scene_{i}.tif", case, col, row, w, h, opts, i)
        for i, (col, row, w, h, opts) in enumerate(LAYOUT)
    ]


def index(binary: Path, sources: list[Path], out: Path, *extra: str) -> None:
    done = run_chunkref(binary, "index", *extra, *sources, "-o", out)
    assert done.returncode == 0, f"{done.stderr}{done.stdout}"
    assert "mosaic" in done.stderr, done.stderr


def build_vrt(sources: list[Path], out: Path) -> gdal.Dataset:
    return gdal.BuildVRT(str(out), [str(s) for s in sources])


def read_forms(ds: gdal.Dataset, window: tuple[int, int, int, int]) -> dict[str, bytes]:
    """One window read the ways GDAL clients ask for it."""
    x, y, w, h = window
    n = ds.RasterCount
    size = gdal.GetDataTypeSize(ds.GetRasterBand(1).DataType) // 8
    bands = list(range(n, 0, -1))
    return {
        "dataset": ds.ReadRaster(x, y, w, h),
        "dataset float64": ds.ReadRaster(x, y, w, h, buf_type=gdal.GDT_Float64),
        "pixel-interleaved reversed bands": ds.ReadRaster(
            x, y, w, h, band_list=bands, buf_pixel_space=size * n,
            buf_line_space=size * n * w, buf_band_space=size,
        ),
        "last band": ds.GetRasterBand(n).ReadRaster(x, y, w, h),
        "band 1 halved": ds.GetRasterBand(1).ReadRaster(
            x, y, w, h, buf_xsize=max(1, w // 2), buf_ysize=max(1, h // 2)
        ),
        "dataset to two thirds": ds.ReadRaster(
            x, y, w, h, buf_xsize=max(1, w * 2 // 3), buf_ysize=max(1, h * 2 // 3)
        ),
        "pixel-interleaved enlarged": ds.ReadRaster(
            x, y, w, h, buf_xsize=w + w // 2 + 1, buf_ysize=h + 3, band_list=bands,
            buf_pixel_space=size * n, buf_line_space=size * n * (w + w // 2 + 1),
            buf_band_space=size,
        ),
    }

#: Resampled forms, compared with the VRT's pixels written out.
RESAMPLED = ["band 1 halved", "dataset to two thirds", "pixel-interleaved enlarged"]


#: Windows across the union: scene edges, the overlap, gaps, single pixels.
EXTRA_WINDOWS = [(95, 45, 30, 30), (215, 0, 50, 80), (0, 95, 80, 70), (200, 60, 130, 30)]


def assert_reads_like(ds: gdal.Dataset, vrt: gdal.Dataset) -> None:
    """Same size, georeferencing, bands, types and nodata as the VRT, and
    the same bytes for every window read form, batched and per block.

    Resampled reads are compared with the VRT's pixels written out (a MEM
    copy): the VRT resamples each source on its own, rounding each
    source's place in the smaller buffer, so at scene edges its nearest
    neighbours differ from those of the one raster the mosaic is."""
    whole = gdal.Translate("", vrt, format="MEM")
    assert (ds.RasterXSize, ds.RasterYSize, ds.RasterCount) == (
        vrt.RasterXSize, vrt.RasterYSize, vrt.RasterCount
    )
    assert ds.GetGeoTransform() == vrt.GetGeoTransform()
    assert ds.GetSpatialRef().IsSame(vrt.GetSpatialRef())
    for b in range(1, ds.RasterCount + 1):
        got, want = ds.GetRasterBand(b), vrt.GetRasterBand(b)
        assert got.DataType == want.DataType
        nodata, expected = got.GetNoDataValue(), want.GetNoDataValue()
        assert (nodata is None) == (expected is None), (nodata, expected)
        if expected is not None:
            assert nodata == expected or (np.isnan(nodata) and np.isnan(expected))
    assert_pixels_equal(ds.ReadAsArray(), vrt.ReadAsArray(), "whole mosaic vs gdalbuildvrt")
    inside = [
        (x, y, w, h) for x, y, w, h in EXTRA_WINDOWS
        if x + w <= ds.RasterXSize and y + h <= ds.RasterYSize
    ]
    windows = odd_windows(ds.RasterXSize, ds.RasterYSize) + inside
    for window in windows:
        expected = read_forms(vrt, window)
        from_whole = read_forms(whole, window)
        expected.update({form: from_whole[form] for form in RESAMPLED})
        for block_path in ["YES", "NO"]:
            with config_options({"CHUNKREF_WINDOW_READS": block_path}):
                got = read_forms(ds, window)
            for form, data in expected.items():
                assert got[form] == data, f"{window} {form} (window reads {block_path}) differs"
        x, y, w, h = window
        assert_pixels_equal(
            ds.GetRasterBand(1).ReadAsArray(x, y, w, h),
            vrt.GetRasterBand(1).ReadAsArray(x, y, w, h),
            f"band 1 window {window}",
        )


@pytest.mark.parametrize("form", ["parquet", "fgb", "json"])
@pytest.mark.parametrize("case", list(CASES))
def test_mosaic_reads_like_gdalbuildvrt(tmp_path, chunkref_bin, case, form):
    sources = write_scenes(tmp_path, CASES[case])
    out = tmp_path / f"mosaic.{form}"
    index(chunkref_bin, sources, out)
    vrt = build_vrt(sources, tmp_path / "mosaic.vrt")
    ds = open_chunkref(out)
    assert tuple(ds.GetRasterBand(1).GetBlockSize()) == (64, 64)
    assert_reads_like(ds, vrt)
    copy = gdal.Translate(str(tmp_path / "copy.tif"), ds)
    assert_pixels_equal(copy.ReadAsArray(), vrt.ReadAsArray(), "gdal_translate of the mosaic")


@pytest.mark.parametrize("cache", ["0", "1"])
def test_mosaic_reads_alike_with_its_chunk_cache_off_or_small(tmp_path, chunkref_bin, cache):
    """Decoded scene chunks are kept per dataset (CHUNKREF_MOSAIC_CACHE MiB,
    0 = none): reads are the same either way."""
    sources = write_scenes(tmp_path, CASES[next(iter(CASES))])
    out = tmp_path / "mosaic.json"
    index(chunkref_bin, sources, out)
    vrt = build_vrt(sources, tmp_path / "mosaic.vrt")
    with config_options({"CHUNKREF_MOSAIC_CACHE": cache}):
        ds = open_chunkref(out)
    assert_reads_like(ds, vrt)


def test_mosaic_converts_losslessly(tmp_path, chunkref_bin):
    sources = write_scenes(tmp_path, CASES["u2-3band-planar-nodata"])
    index(chunkref_bin, sources, tmp_path / "m.parquet")
    chain = ["m.parquet", "m.fgb", "m.json", "again.parquet"]
    for src, dst in zip(chain, chain[1:]):
        done = run_chunkref(chunkref_bin, "convert", tmp_path / src, tmp_path / dst)
        assert done.returncode == 0, done.stderr
    vrt = build_vrt(sources, tmp_path / "m.vrt")
    for name in chain[1:]:
        assert_reads_like(open_chunkref(tmp_path / name), vrt)
    doc = json.loads(json.loads((tmp_path / "m.json").read_text())["refs"][".zattrs"])
    mosaic = doc["chunkref:mosaic"]
    assert mosaic["spatial:shape"] == [165, 330]
    assert [s["offset"] for s in mosaic["scenes"]] == [[r, c] for c, r, *_ in LAYOUT]
    assert mosaic["scenes"][1]["levels"] == ["scenes/1/0/data"]


def test_footprints_lie_in_place(tmp_path, chunkref_bin):
    """The FlatGeobuf form's chunk footprints cover each scene where it lies."""
    sources = write_scenes(tmp_path, CASES["u1-1band-nodata0"])
    index(chunkref_bin, sources, tmp_path / "m.fgb")
    layer_ds = gdal.OpenEx(str(tmp_path / "m.fgb"), gdal.OF_VECTOR)
    layer = layer_ds.GetLayer(0)
    x0, x1, y0, y1 = layer.GetExtent()
    assert (x0, y1) == ORIGIN
    assert (x1, y0) == (ORIGIN[0] + 330 * PIXEL, ORIGIN[1] - 165 * PIXEL)
    # Scene C alone covers column 300 (a gap lies between B and C).
    x, y = ORIGIN[0] + 300.5 * PIXEL, ORIGIN[1] - 30.5 * PIXEL
    layer.SetSpatialFilterRect(x, y, x, y)
    assert {f.GetField("array") for f in layer} == {2}, "scene C's array"


def test_later_scenes_win_and_mosaic_forced_on_one_grid(tmp_path, chunkref_bin):
    """Files on one grid stack by default; --mosaic makes them a mosaic in
    which the last file wins where it has data."""
    case = CASES["u1-1band-nodata0"]
    sources = [
        write_scene(tmp_path / f"same_{i}.tif", case, 0, 0, 150, 100, LAYOUT[0][4], i)
        for i in range(3)
    ]
    index(chunkref_bin, sources, tmp_path / "m.parquet", "--mosaic")
    vrt = build_vrt(sources, tmp_path / "m.vrt")
    ds = open_chunkref(tmp_path / "m.parquet")
    assert ds.RasterCount == 1
    assert_reads_like(ds, vrt)
    done = run_chunkref(chunkref_bin, "index", *sources, "-o", tmp_path / "s.parquet")
    assert done.returncode == 0 and "3 time steps" in done.stderr, done.stderr


def test_stack_forced_on_different_grids_is_refused(tmp_path, chunkref_bin):
    sources = write_scenes(tmp_path, CASES["u1-1band-nodata0"])
    done = run_chunkref(chunkref_bin, "index", "--stack", *sources, "-o", tmp_path / "s.parquet")
    assert done.returncode != 0
    assert f"{sources[1]} is not on the grid of {sources[0]}" in done.stderr, done.stderr
    done = run_chunkref(
        chunkref_bin, "index", "--stack", "--mosaic", *sources, "-o", tmp_path / "s.parquet"
    )
    assert done.returncode != 0 and "exclude each other" in done.stderr, done.stderr


@pytest.mark.parametrize(
    "odd, message",
    [
        ({"epsg": 32634}, "is in CRS EPSG:32634, {first} in EPSG:32633: a mosaic needs one CRS"),
        ({"pixel": 20.0}, "its pixel size 20 x -20 differs from the first scene's 10 x -10"),
        ({"shift": 5.0}, "lies 200.5000 columns and 0.0000 rows from the first scene's"),
        ({"bands": 2}, "has 2 bands of UInt8, {first} has 1 of UInt8"),
    ],
)
def test_scenes_that_do_not_fit_are_refused_by_name(tmp_path, chunkref_bin, odd, message):
    case = CASES["u1-1band-nodata0"]
    first = write_scene(tmp_path / "first.tif", case, 0, 0, 150, 100, [], 0)
    bands = odd.pop("bands", case.bands)
    bad_case = Case(bands, case.dtype, case.nodata)
    bad = write_scene(tmp_path / "odd.tif", bad_case, 200, 0, 40, 30, [], 1, **odd)
    out = tmp_path / "m.parquet"
    done = run_chunkref(chunkref_bin, "index", first, bad, "-o", out)
    assert done.returncode != 0
    assert str(bad) in done.stderr, done.stderr
    assert message.format(first=first) in done.stderr, done.stderr
    assert not out.exists()


def test_datetime_from_name_is_for_stacks(tmp_path, chunkref_bin):
    case = CASES["u1-1band-nodata0"]
    sources = [
        write_scene(tmp_path / f"s_2021010{i + 1}.tif", case, col, row, w, h, opts, i)
        for i, (col, row, w, h, opts) in enumerate(LAYOUT[:2])
    ]
    done = run_chunkref(
        chunkref_bin, "index", "--datetime-from-name", *sources, "-o", tmp_path / "m.parquet"
    )
    assert done.returncode != 0 and "for time stacks" in done.stderr, done.stderr


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda m: m["scenes"][2].update(offset=[10, 300]), "do not fit the 330 x 165 union"),
        (lambda m: m["scenes"][1].update(levels=["scenes/9/0/data"]), "no array 'scenes/9/0/data'"),
        (lambda m: m["scenes"][0].update({"spatial:shape": [99, 150]}), "the mosaic says [99, 150]"),
        (lambda m: m.pop("scenes"), "'chunkref:mosaic' is malformed"),
    ],
)
def test_malformed_mosaic_descriptions_fail_clearly(tmp_path, chunkref_bin, edit, message):
    sources = write_scenes(tmp_path, CASES["u1-1band-nodata0"])
    index(chunkref_bin, sources, tmp_path / "m.json")
    doc = json.loads((tmp_path / "m.json").read_text())
    root = json.loads(doc["refs"][".zattrs"])
    edit(root["chunkref:mosaic"])
    doc["refs"][".zattrs"] = json.dumps(root)
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    text = failure_text(gdal.OpenEx, str(tmp_path / "bad.json"), gdal.OF_RASTER, allowed_drivers=["ChunkRef"])
    assert message in text, text


def test_a_scene_opens_alone_as_a_subdataset(tmp_path, chunkref_bin):
    sources = write_scenes(tmp_path, CASES["i2-3band-no-nodata"])
    index(chunkref_bin, sources, tmp_path / "m.parquet")
    scene = open_chunkref(f'CHUNKREF:"{tmp_path / "m.parquet"}":scenes/1')
    native = gdal.Open(str(sources[1]))
    assert scene.GetGeoTransform() == native.GetGeoTransform()
    assert_pixels_equal(scene.ReadAsArray(), native.ReadAsArray(), "scene 1 alone")


def composite(levels: list[list[np.ndarray]], places: list[tuple[int, int]], shape, nodata) -> np.ndarray:
    """Scenes' pixels (bands, y, x) pasted at ``places`` (row, column) in
    order, nodata pixels left out, over an array filled with nodata (or 0)."""
    fill = 0 if nodata is None else nodata
    out = np.full((levels[0].shape[0], *shape), fill, dtype=levels[0].dtype)
    for pixels, (row, col) in zip(levels, places):
        _, h, w = pixels.shape
        target = out[:, row : row + h, col : col + w]
        if nodata is None:
            target[...] = pixels
        else:
            keep = ~np.isnan(pixels) if np.isnan(nodata) else pixels != nodata
            target[keep] = pixels[keep]
    return out


@pytest.mark.parametrize("case", ["u1-1band-nodata0", "i2-3band-no-nodata", "f4-2band-nan"])
def test_overviews_paste_the_scenes_overviews(tmp_path, chunkref_bin, case):
    """Scenes with overviews 2 and 4: every offset is even but one is not a
    multiple of 4, so the mosaic has one overview, each scene's own 2x
    overview pasted at half its offset."""
    sources = write_scenes(tmp_path, CASES[case])
    for s in sources:
        ds = gdal.Open(str(s), gdal.GA_Update)
        ds.BuildOverviews("NEAREST", [2, 4])
        ds = None
    index(chunkref_bin, sources, tmp_path / "m.parquet")
    ds = open_chunkref(tmp_path / "m.parquet")
    band = ds.GetRasterBand(1)
    assert band.GetOverviewCount() == 1
    expected_nodata = CASES[case].nodata
    scenes = []
    for s in sources:
        native = gdal.Open(str(s))
        scenes.append(np.stack([
            native.GetRasterBand(b + 1).GetOverview(0).ReadAsArray() for b in range(native.RasterCount)
        ]))
    places = [(row // 2, col // 2) for col, row, *_ in LAYOUT]
    expected = composite(scenes, places, (83, 165), expected_nodata)
    for b in range(ds.RasterCount):
        overview = ds.GetRasterBand(b + 1).GetOverview(0)
        assert (overview.XSize, overview.YSize) == (165, 83)
        for x, y, w, h in odd_windows(165, 83):
            assert_pixels_equal(
                overview.ReadAsArray(x, y, w, h), expected[b, y : y + h, x : x + w],
                f"band {b + 1} overview window {(x, y, w, h)}",
            )
    # A zoomed-out read is served from the overview.
    small = ds.ReadRaster(0, 0, 330, 165, buf_xsize=165, buf_ysize=83)
    dtype = expected.dtype
    got = np.frombuffer(small, dtype=dtype).reshape(expected.shape)
    assert_pixels_equal(got, expected, "dataset read at half resolution")


def test_files_on_one_grid_that_differ_otherwise_are_no_mosaic_unless_asked(tmp_path, chunkref_bin):
    """Same place, other tiling: more likely a failed time stack than a
    mosaic, so only --mosaic lays them over each other."""
    case = CASES["u1-1band-nodata0"]
    sources = [
        write_scene(tmp_path / "a.tif", case, 0, 0, 150, 100, LAYOUT[0][4], 0),
        write_scene(tmp_path / "b.tif", case, 0, 0, 150, 100, LAYOUT[1][4], 1),
    ]
    done = run_chunkref(chunkref_bin, "index", *sources, "-o", tmp_path / "m.parquet")
    assert done.returncode != 0
    assert f"{sources[1]} is not on the grid of {sources[0]}" in done.stderr, done.stderr
    assert "pass --mosaic" in done.stderr, done.stderr
    index(chunkref_bin, sources, tmp_path / "m.parquet", "--mosaic")
    assert_reads_like(open_chunkref(tmp_path / "m.parquet"), build_vrt(sources, tmp_path / "m.vrt"))


#: Pixels (union column, row): A alone, A and B overlapping, B alone, the
#: gap, C, D, the last pixel of the union.
LOCATED = [(10, 10), (120, 60), (200, 130), (240, 5), (300, 40), (30, 150), (329, 164)]


def test_location_info_names_every_scene_under_a_pixel_as_the_vrt_does(tmp_path, chunkref_bin):
    """``LocationInfo`` (what ``gdallocationinfo`` prints): the scenes
    covering a pixel, in paste order, as gdalbuildvrt's VRT lists its
    sources; by pixel and by georeferenced point."""
    case = CASES["i2-3band-no-nodata"]
    sources = write_scenes(tmp_path, case)
    out = tmp_path / "mosaic.parquet"
    index(chunkref_bin, sources, out)
    vrt = build_vrt(sources, tmp_path / "mosaic.vrt")
    ds = open_chunkref(out)
    assert (ds.RasterXSize, ds.RasterYSize) == (vrt.RasterXSize, vrt.RasterYSize)
    assert "LocationInfo" in ds.GetRasterBand(1).GetMetadataDomainList()
    for x, y in LOCATED:
        for b in (1, case.bands):
            item = f"Pixel_{x}_{y}"
            want = vrt.GetRasterBand(b).GetMetadataItem(item, "LocationInfo")
            assert ds.GetRasterBand(b).GetMetadataItem(item, "LocationInfo") == want, (x, y, b)
        geo = f"GeoPixel_{ORIGIN[0] + (x + 0.5) * PIXEL}_{ORIGIN[1] - (y + 0.5) * PIXEL}"
        assert (ds.GetRasterBand(1).GetMetadataItem(geo, "LocationInfo")
                == vrt.GetRasterBand(1).GetMetadataItem(geo, "LocationInfo")), (x, y)
    both = ds.GetRasterBand(1).GetMetadataItem("Pixel_120_60", "LocationInfo")
    assert both.count("<File>") == 2 and "scene_0.tif" in both and "scene_1.tif" in both, both
    assert ds.GetRasterBand(1).GetMetadataItem("Pixel_240_5", "LocationInfo") == \
        "<LocationInfo></LocationInfo>"
    for outside in ("Pixel_-1_0", "Pixel_330_0", "Pixel_0_165", "Pixel_x", "Pixel_5",
                    "Pixel_99999999999999999999_0", "GeoPixel_0_0", "GeoPixel_nan_nan"):
        assert ds.GetRasterBand(1).GetMetadataItem(outside, "LocationInfo") is None, outside
