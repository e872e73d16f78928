"""The wheel reads every kind of source as GDAL does: each source is written
by GDAL's own writer, indexed by the wheel's ``chunkref`` command, read by
``chunkref.open`` (no GDAL in the process) and compared with GDAL's native
driver on the source and with the ChunkRef plugin on the same index:
pixels of every level, size, type, georeferencing, nodata, scale and
offset, units, colours, palettes and time steps."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pyproj
import pytest

import chunkref
from conftest import KINDS, Shown, gdal_shows

def _same_crs(ours: str | None, gdal_wkt: str | None) -> bool:
    if ours is None or gdal_wkt is None:
        return ours == gdal_wkt
    return pyproj.CRS.from_user_input(ours).equals(
        pyproj.CRS.from_wkt(gdal_wkt), ignore_axis_order=True)


def _same_number(a, b) -> bool:
    if a is None or b is None:
        return a == b
    return (math.isnan(a) and math.isnan(b)) or a == b


def _assert_pixels(ds: chunkref.Dataset, shown: Shown, what: str, levels: bool = True) -> None:
    count = len(shown.levels) if levels else 1
    if levels:
        assert len(ds.levels) == len(shown.levels), what
    for i in range(count):
        ours = ds.read(level=i)
        theirs = shown.levels[i]
        assert ours.shape == theirs.shape, f"{what} level {i}"
        assert ours.dtype.itemsize == theirs.dtype.itemsize, f"{what} level {i}"
        # GDAL 3.6 shows int8 as Byte (PIXELTYPE=SIGNEDBYTE): compare bytes.
        if ours.dtype != theirs.dtype:
            assert {ours.dtype.str[1:], theirs.dtype.str[1:]} == {"i1", "u1"}, what
        assert np.array_equal(ours.view(np.uint8), theirs.view(np.uint8)), f"{what} level {i}"


def _assert_described(ds: chunkref.Dataset, shown: Shown, what: str) -> None:
    meta = shown.meta
    assert list(ds.shape) == meta["size"], what
    t = ds.transform
    assert (None if t is None else list(t)) == meta["transform"], what
    assert _same_crs(ds.crs_wkt, meta["crs_wkt"]), f"{what}: {ds.crs} vs {meta['crs_wkt']}"
    for b, band in enumerate(meta["bands"], start=1):
        info = ds.band_info(b)
        assert _same_number(info["nodata"], band["nodata"]), f"{what} band {b} nodata"
        assert (info["scale"] or 1.0) == (band["scale"] or 1.0), f"{what} band {b} scale"
        assert (info["offset"] or 0.0) == (band["offset"] or 0.0), f"{what} band {b} offset"
        assert info["unit"] == band["unit"], f"{what} band {b} unit"
        assert info["description"] == band["description"], f"{what} band {b} description"
        assert info["color"] == band["color"], f"{what} band {b} colour"
    palette = meta["bands"][0]["palette"]
    table = ds.color_table()
    assert (None if table is None else [list(e) for e in table]) == palette, what
    datetimes = [b["datetime"] for b in meta["bands"]]
    if any(datetimes):
        expected = np.array([np.datetime64(d.rstrip("Z"), "ns") for d in datetimes])
        assert np.array_equal(ds.times, expected), what
    else:
        assert ds.times is None, what


@pytest.mark.parametrize("kind", list(KINDS))
def test_reads_as_gdal_does(kind, indexed, tmp_path):
    root, index = indexed(kind)
    top = chunkref.open(str(index))
    plugin_top = gdal_shows(str(index), tmp_path / "top.npz", driver="ChunkRef")
    names = [str(index)] if top.is_raster else [n for n, _ in top.subdatasets]
    assert [n for n, _ in top.subdatasets] == plugin_top.meta["subdatasets"]
    for i, name in enumerate(names):
        ds = top if top.is_raster else chunkref.open(name)
        plugin = plugin_top if top.is_raster else gdal_shows(
            name, tmp_path / f"sub{i}.npz", driver="ChunkRef")
        _assert_described(ds, plugin, f"{kind}: {name}")
        _assert_pixels(ds, plugin, f"{kind}: {name} (plugin)")
    sources, _, native = KINDS[kind]
    if native:
        shown = gdal_shows(str(root / sources[0]), tmp_path / "native.npz")
        # Overviews: only GeoTIFF and COG keep them in the source file.
        _assert_pixels(top, shown, f"{kind} (GDAL's {shown.meta['driver']})",
                       levels=shown.meta["driver"] == "GTiff")
        # The wheel's command indexes without GDAL: georeferencing as GDAL's own driver.
        t = top.transform
        assert (None if t is None else list(t)) == shown.meta["transform"], f"{kind} transform"
        assert _same_crs(top.crs_wkt, shown.meta["crs_wkt"]), f"{kind} CRS"


@pytest.mark.parametrize("kind", ["tiff-deflate", "stack"])
@pytest.mark.parametrize("suffix", [".parquet", ".fgb"])
def test_reference_tables(kind, suffix, indexed):
    """Reference tables in Parquet and FlatGeobuf read as the JSON index."""
    _, json_index = indexed(kind)
    _, table = indexed(kind, suffix)
    a, b = chunkref.open(str(json_index)), chunkref.open(str(table))
    assert np.array_equal(a.read(), b.read())
    assert a.transform == b.transform and a.crs == b.crs
    assert np.array_equal(a.times, b.times) if a.times is not None else b.times is None


def test_windows_bands_and_levels(indexed):
    _, index = indexed("tiff-deflate")
    ds = chunkref.open(str(index))
    whole = ds.read()
    assert np.array_equal(ds.read(((10, 70), (33, 250))), whole[:, 10:70, 33:250])
    assert np.array_equal(ds.read(bands=2), whole[1])
    assert np.array_equal(ds.read(bands=[3, 1, 3]), whole[[2, 0, 2]])

    class Window:  # what rasterio's Window offers
        col_off, row_off, width, height = 5, 6, 7, 8

    assert np.array_equal(ds.read(Window()), whole[:, 6:14, 5:12])
    assert ds.read(level=2).shape == (3, ds.levels[2].height, ds.levels[2].width)
    assert ds.read(((0, 0), (0, 5))).shape == (3, 0, 5)


def test_open_options(indexed):
    """Open options are the driver's: a stack's time range."""
    _, index = indexed("stack")
    ds = chunkref.open(str(index), time_start="2024-01-02")
    assert ds.count == 2
    assert str(ds.times[0]).startswith("2024-01-02")
    full = chunkref.open(str(index))
    assert np.array_equal(ds.read(), full.read()[1:])


def test_template_override(indexed, tmp_path, chunkref_command):
    """A portable index (`--template-base`) opened from elsewhere with
    `template_base`, as `-oo TEMPLATE_base=...` does."""
    import shutil

    from conftest import run

    root, index = indexed("tiff-deflate")
    portable = tmp_path / "elsewhere" / "portable.json"
    portable.parent.mkdir()
    run(chunkref_command, "index", "--template-base", str(root / "src.tif"), "-o",
        str(root / "portable.json"))
    shutil.move(root / "portable.json", portable)
    with pytest.raises(chunkref.ChunkrefError):
        chunkref.open(str(portable)).read()
    moved = chunkref.open(str(portable), template_base=f"{root}/")
    assert np.array_equal(moved.read(), chunkref.open(str(index)).read())
