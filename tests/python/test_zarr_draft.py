"""Stores of the Zarr v3 draft (issue 41): the layout GDAL 3.4 to 3.7
writes with ``FORMAT=ZARR_V3`` (a root ``zarr.json`` whose
``zarr_format`` is the draft's URL, ``meta/root/...`` and
``data/root/.../c0/1``).  GDAL 3.6's own writer makes each store, and its
Zarr driver is the oracle: ``chunkref index STORE`` + ChunkRef must give
the arrays, pixels and nodata GDAL's Zarr driver gives, through the raster
view (one subdataset per array) and the multidimensional view (groups,
a 3-D array)."""

from __future__ import annotations

import numpy as np
import pytest
from osgeo import gdal

from conftest import run_chunkref
from raster_checks import open_chunkref

gdal.UseExceptions()

#: (creation option COMPRESS, GDAL type, nodata or None).
CASES = [
    ("GZIP", gdal.GDT_Byte, None),
    ("BLOSC", gdal.GDT_Int16, -9),
    ("ZSTD", gdal.GDT_Float32, -1.5),
    ("LZ4", gdal.GDT_UInt16, 7),
    ("NONE", gdal.GDT_Int16, None),
]


def draft_store(path, compress: str, gdal_type: int, nodata) -> None:
    """A 2-band 300 x 200 raster written as a draft store (blocks of 64 x
    48, so edge chunks are partial)."""
    mem = gdal.GetDriverByName("MEM").Create("", 300, 200, 2, gdal_type)
    rng = np.random.default_rng(7)
    for b in range(2):
        values = rng.integers(0, 200, (200, 300)).astype(np.float64) / (2 if b else 1)
        if nodata is not None:
            values[:20, :30] = nodata
        band = mem.GetRasterBand(b + 1)
        band.WriteArray(values)
        if nodata is not None:
            band.SetNoDataValue(nodata)
    gdal.Translate(str(path), mem, format="Zarr",
                   creationOptions=["FORMAT=ZARR_V3", f"COMPRESS={compress}",
                                    "BLOCKSIZE=48,64"])


@pytest.mark.parametrize("compress, gdal_type, nodata", CASES, ids=[c[0] for c in CASES])
def test_raster_view_reads_as_gdal_zarr(tmp_path, chunkref_bin, compress, gdal_type, nodata):
    store = tmp_path / "draft.zarr"
    draft_store(store, compress, gdal_type, nodata)
    assert '"zarr_format": "https://purl.org/zarr/spec/protocol/core/3.0"' in (
        store / "zarr.json").read_text()
    out = tmp_path / "draft.json"
    done = run_chunkref(chunkref_bin, "index", store, "-o", out)
    assert done.returncode == 0, done.stderr
    names = sorted(v for k, v in gdal.Open(str(store)).GetMetadata("SUBDATASETS").items()
                   if k.endswith("_NAME"))
    assert len(names) == 2
    for name in names:
        array = name.rsplit(":", 1)[1].lstrip("/")
        want = gdal.Open(name)
        got = open_chunkref(f'CHUNKREF:"{out}":{array}')
        assert (got.RasterXSize, got.RasterYSize) == (300, 200)
        band, ref = got.GetRasterBand(1), want.GetRasterBand(1)
        assert band.DataType == ref.DataType
        assert band.GetBlockSize() == ref.GetBlockSize() == [64, 48]
        assert band.GetNoDataValue() == ref.GetNoDataValue()
        np.testing.assert_array_equal(band.ReadAsArray(), ref.ReadAsArray())


def test_groups_and_a_cube_through_the_multidimensional_view(tmp_path, chunkref_bin):
    store = tmp_path / "cube.zarr"
    ds = gdal.GetDriverByName("Zarr").CreateMultiDimensional(
        str(store), options=["FORMAT=ZARR_V3"])
    group = ds.GetRootGroup().CreateGroup("grp")
    dims = [group.CreateDimension(n, None, None, s) for n, s in (("t", 3), ("y", 10), ("x", 7))]
    cube = group.CreateMDArray("cube", dims, gdal.ExtendedDataType.Create(gdal.GDT_Float64),
                               ["BLOCKSIZE=2,4,3", "COMPRESS=GZIP"])
    values = np.arange(3 * 10 * 7, dtype=np.float64).reshape(3, 10, 7) / 4
    cube.Write(values)
    del cube, group, ds
    out = tmp_path / "cube.json"
    done = run_chunkref(chunkref_bin, "index", store, "-o", out)
    assert done.returncode == 0, done.stderr
    want = gdal.OpenEx(str(store), gdal.OF_MULTIDIM_RASTER).GetRootGroup()
    got = gdal.OpenEx(str(out), gdal.OF_MULTIDIM_RASTER,
                      allowed_drivers=["ChunkRef"]).GetRootGroup()
    ref = want.OpenGroup("grp").OpenMDArray("cube")
    mine = got.OpenGroup("grp").OpenMDArray("cube")
    assert [d.GetSize() for d in mine.GetDimensions()] == [3, 10, 7]
    assert mine.GetBlockSize() == ref.GetBlockSize() == [2, 4, 3]
    np.testing.assert_array_equal(mine.ReadAsArray(), ref.ReadAsArray())
    np.testing.assert_array_equal(mine.ReadAsArray(), values)


def test_unknown_compressor_is_named(tmp_path, chunkref_bin):
    store = tmp_path / "odd.zarr"
    draft_store(store, "GZIP", gdal.GDT_Byte, None)
    meta = store / "meta" / "root" / "Band1.array.json"
    meta.write_text(meta.read_text().replace("gzip", "lzma"))
    done = run_chunkref(chunkref_bin, "index", store, "-o", tmp_path / "x.json")
    assert done.returncode != 0
    assert "compressor 'lzma'" in done.stderr and "Band1" in done.stderr, done.stderr
