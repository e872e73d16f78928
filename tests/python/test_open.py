"""Registration, the ways of opening an index, and a gdal_translate copy."""

from __future__ import annotations

from osgeo import gdal

import kerchunk_builders as kb
from raster_checks import assert_matches


def test_driver_registered(chunkref_driver):
    assert chunkref_driver.ShortName == "ChunkRef"
    assert chunkref_driver.LongName
    assert chunkref_driver.GetMetadataItem(gdal.DCAP_RASTER) == "YES"
    assert "TEMPLATE_" in (chunkref_driver.GetMetadataItem(gdal.DMD_OPENOPTIONLIST) or "")


def test_open_by_path_and_by_prefix(simple_store, tmp_path):
    index = kb.write_index(tmp_path / "index.json", simple_store.entries)
    for name in (str(index), "CHUNKREF:" + str(index.resolve())):
        ds = gdal.Open(name)
        assert ds.GetDriver().ShortName == "ChunkRef", name
        assert_matches(ds, [simple_store.data], blocks=[(32, 32)])


def test_relative_urls_resolve_against_the_index_not_the_cwd(simple_store, tmp_path, monkeypatch):
    index = kb.write_index(
        tmp_path / "idx" / "index.json", simple_store.entries, kb.RefStyle(url="relative")
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    ds = gdal.Open("../idx/index.json")
    assert_matches(ds, [simple_store.data])


def test_gdal_translate_copy(simple_store, tmp_path):
    index = kb.write_index(tmp_path / "index.json", simple_store.entries)
    out = gdal.Translate(str(tmp_path / "copy.tif"), str(index), format="GTiff")
    out = None  # flush and close (GDAL 3.6 has no Dataset.Close)
    copy = gdal.Open(str(tmp_path / "copy.tif"))
    assert copy.GetDriver().ShortName == "GTiff"
    assert_matches(copy, [simple_store.data])
