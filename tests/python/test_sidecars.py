"""What GDAL keeps beside a dataset: external overviews users build
(``gdaladdo``, QGIS's *Build Pyramids*), ``.aux.xml`` statistics and
metadata (also for ``CHUNKREF:`` names and one array of a store), and the
file list tools use to copy or package a dataset (``GetFileList``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from osgeo import gdal

from raster_checks import open_chunkref
from servers import RangeServer
from test_tiff_index import TIFF_CASES, index_tiff, write_tiff

#: A source without overviews of its own: the index has one level.
CASE = TIFF_CASES["gtiff-planar-u2-deflate-pred2"]


@pytest.fixture
def flat(chunkref_bin, tmp_path):
    """(source TIFF, its index) for a 300x200 source without overviews."""
    src = tmp_path / "built.tif"
    write_tiff(src, CASE)
    tif = tmp_path / "src.tif"
    gdal.Translate(str(tif), str(src), creationOptions=["TILED=YES", "COMPRESS=DEFLATE"])
    src.unlink()
    index = tmp_path / "src.json"
    index_tiff(chunkref_bin, tif, index)
    return tif, index


def gdaladdo(*args: str | Path) -> None:
    done = subprocess.run(["gdaladdo", *map(str, args)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr + done.stdout


def test_gdaladdo_builds_external_overviews_equal_to_gtiffs(flat, tmp_path):
    tif, index = flat
    assert open_chunkref(index).GetRasterBand(1).GetOverviewCount() == 0
    gdaladdo("-r", "average", index, "2", "4")
    assert Path(f"{index}.ovr").exists()
    # The same overviews made by GTiff on a copy of the source.
    copy = tmp_path / "copy.tif"
    shutil.copy(tif, copy)
    gdaladdo("-ro", "-r", "average", copy, "2", "4")
    ds, native = open_chunkref(index), gdal.Open(str(copy))
    for b in range(1, ds.RasterCount + 1):
        band, nband = ds.GetRasterBand(b), native.GetRasterBand(b)
        assert band.GetOverviewCount() == 2
        for level in range(2):
            assert band.GetOverview(level).ReadRaster() == nband.GetOverview(level).ReadRaster()
    # A zoomed-out read goes to them, as GDAL does for GTiff.
    w, h = ds.RasterXSize, ds.RasterYSize
    assert ds.ReadRaster(0, 0, w, h, 75, 50) == native.ReadRaster(0, 0, w, h, 75, 50)
    info = gdal.Info(str(index))
    assert "Overviews: 150x100, 75x50" in info, info


def test_gdaladdo_on_an_index_with_its_own_levels_says_why(chunkref_bin, tmp_path):
    """GDAL would try to write into the index's own overview levels; the
    refusal names the index and the reason, as GTiff's does."""
    tif, index = tmp_path / "cog.tif", tmp_path / "cog.json"
    write_tiff(tif, TIFF_CASES["cog-lzw-1band"])
    index_tiff(chunkref_bin, tif, index)
    assert open_chunkref(index).GetRasterBand(1).GetOverviewCount() == 3
    done = subprocess.run(["gdaladdo", str(index), "2"], capture_output=True, text=True)
    assert done.returncode != 0
    assert "cannot add external overviews" in done.stderr and str(index) in done.stderr, done.stderr
    assert "already has 3 overview levels" in done.stderr, done.stderr
    assert not Path(f"{index}.ovr").exists()


def test_statistics_are_saved_for_prefixed_names(flat):
    tif, index = flat
    name = f"CHUNKREF:{index}"
    ds = open_chunkref(name)
    stats = ds.GetRasterBand(1).ComputeStatistics(False)
    ds.GetRasterBand(2).SetMetadataItem("NOTE", "kept")
    ds = None
    aux = Path(f"{index}.aux.xml")
    assert aux.exists(), "no .aux.xml next to the index"
    ds = open_chunkref(name)
    assert float(ds.GetRasterBand(1).GetMetadataItem("STATISTICS_MEAN")) == pytest.approx(stats[2])
    assert ds.GetRasterBand(2).GetMetadataItem("NOTE") == "kept"
    # The plain name reads the same sidecar.
    assert open_chunkref(index).GetRasterBand(2).GetMetadataItem("NOTE") == "kept"


def test_each_array_of_a_store_keeps_its_own_sidecar_entry(chunkref_bin, tmp_path):
    tifs = []
    for n, name in enumerate(["cog-lzw-1band", "cog-none-3band"]):
        tifs.append(write_tiff(tmp_path / f"s{n}.tif", TIFF_CASES[name]))
    store = tmp_path / "store.json"
    index_tiff(chunkref_bin, tifs[0], tmp_path / "a.json")
    index_tiff(chunkref_bin, tifs[1], tmp_path / "b.json")
    a = json.loads((tmp_path / "a.json").read_text())["refs"]
    b = json.loads((tmp_path / "b.json").read_text())["refs"]
    refs = {".zgroup": json.dumps({"zarr_format": 2})}
    refs |= {f"a/{k}": v for k, v in a.items() if k.startswith("0/")}
    refs |= {f"b/{k}": v for k, v in b.items() if k.startswith("0/")}
    store.write_text(json.dumps({"version": 1, "refs": refs}))
    names = [f'CHUNKREF:"{store}":a/0/data', f'CHUNKREF:"{store}":b/0/data']
    for n, name in enumerate(names):
        ds = open_chunkref(name)
        ds.GetRasterBand(1).SetMetadataItem("WHICH", str(n))
        ds = None
    for n, name in enumerate(names):
        assert open_chunkref(name).GetRasterBand(1).GetMetadataItem("WHICH") == str(n)


def test_file_list_names_the_index_and_its_sources(flat, tmp_path):
    tif, index = flat
    files = open_chunkref(index).GetFileList()
    assert files[0] == str(index)
    assert str(tif) in files
    assert open_chunkref(f"CHUNKREF:{index}").GetFileList()[:2] == [str(index), str(tif)]


def test_file_list_of_a_remote_source_uses_gdal_names(flat, tmp_path):
    tif, index = flat
    server = RangeServer(tmp_path)
    try:
        remote = tmp_path / "remote.json"
        text = index.read_text().replace(json.dumps(str(tif))[1:-1], server.url + "src.tif")
        remote.write_text(text)
        files = open_chunkref(remote).GetFileList()
        assert files == [str(remote), f"/vsicurl/{server.url}src.tif"], files
    finally:
        server.close()


def test_sidecars_are_seen_however_the_directory_changes(flat, tmp_path):
    """The sidecars found beside an index are kept while its directory is
    unchanged: an ``.aux.xml`` written, edited or removed later is seen at
    the next open, even in a directory dated long ago."""
    _, index = flat

    def settle() -> None:
        old = time.time() - 3600
        os.utime(tmp_path, (old, old))
        os.utime(index, (old, old))

    def note() -> str | None:
        return open_chunkref(index).GetMetadataItem("NOTE")

    settle()
    assert note() is None
    assert note() is None
    pam = Path(f"{index}.aux.xml")
    pam.write_text('<PAMDataset><Metadata><MDI key="NOTE">one</MDI></Metadata></PAMDataset>')
    settle()
    assert note() == "one"
    # Edited in place (the directory does not change): read again.
    pam.write_text('<PAMDataset><Metadata><MDI key="NOTE">two</MDI></Metadata></PAMDataset>')
    settle()
    assert note() == "two"
    pam.unlink()
    settle()
    assert note() is None
