"""``chunkref index`` of NetCDF4 / HDF5 files, against kerchunk and GDAL.

The NetCDF4 sources are kerchunk_hdf5_writer.py's (CF attributes, packed
scale/offset, ``_FillValue``, grid mappings, chunked / contiguous /
compact layouts, fletcher32, big-endian, unwritten chunks, groups,
string and compound variables); hdf5_index_writer.py adds plain HDF5
written with h5py, a file with a user block, files with filters chunkref
has no codec for, and kerchunk ``SingleHdf5ToZarr``'s
references (inline threshold 0) to each source.

Our index must be kerchunk's store (same keys, metadata documents and
chunk ranges, except where documented: fletcher32 kept as a codec,
compact data inlined, contiguous extents over 4 MiB split into row
blocks, non-numeric datasets left out); read through the ChunkRef driver
it must give what GDAL's netCDF driver gives on the source (pixels,
georeferencing, CRS, nodata, scale / offset, units, ``NETCDF_DIM_*``), or
what h5py reads for plain HDF5.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from osgeo import gdal

from conftest import run_chunkref
from raster_checks import assert_band_matches, assert_pixels_equal, captured_errors, open_chunkref
from test_kerchunk_hdf5 import (  # noqa: F401 (hdf5_python is a fixture)
    GEOREF_FROM,
    GT_TOLERANCE_PIXELS,
    WITH_FILL_VALUE,
    WRITER,
    assert_same_crs,
    hdf5_python,
    netcdf_dims,
    pixel_centres,
    same_number,
)
from test_tables import run_python

INDEX_WRITER = Path(__file__).with_name("hdf5_index_writer.py")

#: The NetCDF4 sources of kerchunk_hdf5_writer.py indexed here.
NETCDF_SOURCES = ["cf", "utm", "southup", "polar", "day0"]

#: Datasets chunkref leaves out (not numbers), each named in one warning.
LEFT_OUT = {"cf": ["label"], "utm": ["obs"], "plain": ["names"]}

#: Keys only our index has: kerchunk drops the fletcher32 datasets, and
#: with inline threshold 0 gives a compact dataset no chunk; we split the
#: contiguous dataset over 4 MiB into two row blocks.
ONLY_OURS = {
    "cf": {"checked/", "compact/0.0"},
    "plain": {"fl/", "contig_big/1.0"},
}

#: Where our metadata deliberately differs from kerchunk's: the row
#: blocks of a large contiguous dataset.
ROW_BLOCKED = {"plain": {"contig_big": [300, 1000]}}

#: Variables whose nodata must be the netCDF driver's (an explicit
#: ``_FillValue``; kerchunk_hdf5's list plus the fletcher32 variable,
#: which kerchunk cannot index).
FILL_VALUE_VARIABLES = WITH_FILL_VALUE | {"checked"}


@pytest.fixture(scope="module")
def sources(hdf5_python, tmp_path_factory) -> Path:
    """Every source and kerchunk's references to it, in one directory."""
    out = tmp_path_factory.mktemp("hdf5-index")
    run_python(hdf5_python, WRITER.read_text(), out / "kerchunk")
    for name in NETCDF_SOURCES:
        shutil.copy(out / "kerchunk" / f"{name}.nc", out / f"{name}.nc")
    netcdf = [out / f"{name}.nc" for name in NETCDF_SOURCES]
    run_python(hdf5_python, INDEX_WRITER.read_text(), out, *netcdf)
    return out


def index(binary: Path, source: Path, out: Path, *options: str):
    """``chunkref index [options] source -o out``; it must succeed.
    Returns its stderr."""
    done = run_chunkref(binary, "index", *options, source, "-o", out)
    assert done.returncode == 0, f"index {source.name}:\n{done.stderr}{done.stdout}"
    return done.stderr


@pytest.fixture(scope="module")
def indexed(sources, chunkref_bin) -> dict[str, tuple[Path, str]]:
    """Our JSON index of every readable source, with the indexer's stderr."""
    out = {}
    for name in [*NETCDF_SOURCES, "plain", "userblock", "plugins"]:
        source = sources / (f"{name}.nc" if name in NETCDF_SOURCES else f"{name}.h5")
        target = sources / "ours" / f"{name}.json"
        out[name] = (target, index(chunkref_bin, source, target))
    return out


def parsed(path: Path) -> dict:
    """The refs of a Kerchunk JSON file, metadata documents parsed."""
    refs = json.loads(path.read_text())["refs"]
    return {
        k: json.loads(v) if k.rsplit("/", 1)[-1].startswith(".z") else v for k, v in refs.items()
    }


def kerchunk_of(sources: Path, name: str) -> dict:
    source = f"{name}.nc" if name in NETCDF_SOURCES else f"{name}.h5"
    return parsed(sources / f"{source}.kerchunk.json")


def arrays(refs: dict) -> dict[str, dict]:
    """The ``.zarray`` documents of a store, by array path."""
    return {k[: -len("/.zarray")]: v for k, v in refs.items() if k.endswith("/.zarray")}


def rasters(refs: dict) -> list[str]:
    """The arrays of two or more dimensions holding numbers (GDAL's
    netCDF driver lists character arrays too, but cannot read them)."""
    return sorted(name for name, za in arrays(refs).items()
                  if len(za["shape"]) >= 2 and za["dtype"] != "|S1")


@pytest.mark.parametrize("name", [*NETCDF_SOURCES, "plain", "userblock"])
def test_index_is_kerchunks_store(sources, indexed, name):
    """Same keys, metadata documents and chunk (offset, length) as
    kerchunk's SingleHdf5ToZarr, but for the documented differences."""
    path, stderr = indexed[name]
    ours, theirs = parsed(path), kerchunk_of(sources, name)
    left_out = LEFT_OUT.get(name, [])
    for array in left_out:
        naming = [line for line in stderr.splitlines() if f"'/{array}'" in line]
        assert len(naming) == 1 and "left out" in naming[0], (array, stderr)
    missing = {k for k in theirs.keys() - ours.keys() if k.split("/")[0] not in left_out}
    assert not missing, f"{name}: kerchunk has keys we lack: {sorted(missing)}"
    extra = {
        k for k in ours.keys() - theirs.keys()
        if not any(k.startswith(p) for p in ONLY_OURS.get(name, set()))
    }
    assert not extra, f"{name}: keys kerchunk lacks: {sorted(extra)}"
    blocked = ROW_BLOCKED.get(name, {})
    ranges = 0
    for key in sorted(ours.keys() & theirs.keys()):
        mine, want = ours[key], theirs[key]
        array = key.rsplit("/", 1)[0]
        if key.endswith("/.zarray") and (mine.get("filters") or [{}])[0].get("id") == "valid_range":
            # Ours alone: GDAL's netCDF driver's valid range and NaN as nodata.
            rest = mine["filters"][1:]
            mine = dict(mine, filters=rest or None)
        if key.endswith("/.zarray") and want["dtype"] == "|S1":
            # Characters: no fill value (GDAL's netCDF driver shows no
            # nodata for them), where kerchunk gives the HDF5 one.
            mine, want = dict(mine, fill_value=None), dict(want, fill_value=None)
        zattrs = ours.get(f"{array}/.zattrs", {})
        default_fill = zattrs.get("chunkref:netcdf_default_fill")
        if key.endswith("/.zarray") and default_fill is not None and want["fill_value"] is None:
            # Ours alone: the netCDF default fill of a variable without
            # _FillValue (its HDF5 fill value) fills unwritten chunks.
            assert mine["fill_value"] == default_fill, key
            mine = dict(mine, fill_value=None)
        if key.endswith("/.zarray") and array in blocked:
            assert mine["chunks"] == blocked[array], key
            mine, want = dict(mine, chunks=None), dict(want, chunks=None)
        if isinstance(want, list):
            assert isinstance(mine, list) and Path(mine[0]).resolve() == Path(want[0]).resolve()
            ranges += 1
            if array in blocked:
                assert mine[1] == want[1], key  # the first row block starts the extent
                continue
            mine, want = mine[1:], want[1:]
        if key.endswith(".zattrs"):
            # Ours alone: the netCDF default fill GDAL reports as nodata,
            # the GDAL driver of the source (and, for HDF5, its _FillValue),
            # the order that driver lists subdatasets in.
            mine.pop("chunkref:variable_order", None)
            fill = mine.pop("chunkref:netcdf_default_fill", None)
            assert fill is None or "_FillValue" not in want, key
            if mine.pop("chunkref:gdal_driver", None) == "HDF5":
                mine.pop("_FillValue", None)
        assert mine == want, f"{name}: {key}\n ours {mine}\n kerchunk {want}"
    assert ranges > 0


def test_fletcher32_is_a_checked_codec_over_the_whole_stored_chunk(sources, indexed):
    """kerchunk cannot index fletcher32 datasets; ours keep the checksum
    (the ``fletcher32`` codec verifies and strips it)."""
    refs = parsed(indexed["cf"][0])
    assert refs["checked/.zarray"]["filters"] == [{"id": "fletcher32"}]
    plain = parsed(indexed["plain"][0])
    assert plain["fl/.zarray"]["filters"] == [{"id": "zlib", "level": 4}, {"id": "fletcher32"}]


def native(source: Path, name: str) -> gdal.Dataset:
    """GDAL's netCDF driver on variable ``name`` of ``source``."""
    variable = f"/{name}" if "/" in name else name
    ds = gdal.OpenEx(f'NETCDF:"{source}":{variable}', gdal.OF_RASTER, allowed_drivers=["netCDF"])
    assert ds is not None
    return ds


def ours(index_path: Path, name: str) -> gdal.Dataset:
    return open_chunkref(f'CHUNKREF:"{index_path}":{name}')


def rows_reversed(ours_ds: gdal.Dataset, native_ds: gdal.Dataset) -> bool:
    """Whether the netCDF driver shows our (stored) rows bottom-up."""
    mine, theirs = ours_ds.GetRasterBand(1).ReadAsArray(), native_ds.GetRasterBand(1).ReadAsArray()
    for reversed_, candidate in [(False, theirs), (True, theirs[::-1])]:
        if np.array_equal(mine, candidate, equal_nan=mine.dtype.kind == "f"):
            return reversed_
    raise AssertionError("the netCDF driver reads neither our rows nor them reversed")


@pytest.mark.parametrize("name", NETCDF_SOURCES)
def test_rasters_equal_gdal_netcdf_driver(sources, indexed, name):
    """Every raster of our index reads as GDAL's netCDF driver reads the
    source: pixels (every band, odd windows), nodata, scale, offset,
    units, NETCDF_DIM_* per band, and the same georeferencing and CRS."""
    path, _ = indexed[name]
    source = sources / f"{name}.nc"
    refs = parsed(path)
    assert rasters(refs), name
    for variable in rasters(refs):
        ds, nat = ours(path, variable), native(source, variable)
        reversed_ = rows_reversed(ds, nat)
        assert ds.RasterCount == nat.RasterCount, variable
        for b in range(1, ds.RasterCount + 1):
            mine, theirs = ds.GetRasterBand(b), nat.GetRasterBand(b)
            what = f"{name}:{variable} band {b}"
            plane = theirs.ReadAsArray()
            assert_band_matches(mine, plane[::-1] if reversed_ else plane, what)
            assert (mine.GetScale() or 1.0) == (theirs.GetScale() or 1.0), what
            assert (mine.GetOffset() or 0.0) == (theirs.GetOffset() or 0.0), what
            assert mine.GetUnitType() == theirs.GetUnitType(), what
            if variable in FILL_VALUE_VARIABLES:
                assert same_number(mine.GetNoDataValue(), theirs.GetNoDataValue()), what
            if len(refs[f"{variable}/.zarray"]["shape"]) >= 3:
                want = netcdf_dims(theirs)
                assert want and netcdf_dims(mine) == want, what
        if "grid_mapping" in refs[f"{variable}/.zattrs"]:
            # A sub-group variable: the netCDF driver georeferences only a
            # root variable of the same grid.
            reference = GEOREF_FROM.get(variable, variable)
            nat = native(source, reference)
            assert_same_place(ds, nat, rows_reversed(ours(path, reference), nat),
                              f"{name}:{variable}")


@pytest.mark.parametrize("name", NETCDF_SOURCES)
def test_driver_reads_our_index_as_kerchunks_store(sources, indexed, name):
    """Every raster both stores hold opens the same through the ChunkRef
    driver over our index and over kerchunk's: size, bands, geotransform,
    CRS, band metadata (NETCDF_DIM_*, time), nodata, scale, offset and
    pixels (but the compact dataset, which kerchunk's threshold 0 loses)."""
    path, _ = indexed[name]
    theirs_path = sources / f"{name}.nc.kerchunk.json"
    shared = sorted(set(rasters(parsed(path))) & set(rasters(kerchunk_of(sources, name))))
    assert shared, name
    for variable in shared:
        mine, theirs = ours(path, variable), ours(theirs_path, variable)
        what = f"{name}:{variable}"
        assert (mine.RasterXSize, mine.RasterYSize, mine.RasterCount) == (
            theirs.RasterXSize, theirs.RasterYSize, theirs.RasterCount), what
        assert mine.GetGeoTransform() == theirs.GetGeoTransform(), what
        assert mine.GetProjection() == theirs.GetProjection(), what
        for b in range(1, mine.RasterCount + 1):
            m, t = mine.GetRasterBand(b), theirs.GetRasterBand(b)
            assert m.GetMetadata() == t.GetMetadata(), f"{what} band {b}"
            # Ours alone records the fill netCDF reports (GDAL's nodata,
            # held against GDAL in test_rasters_equal_gdal_netcdf_driver).
            if "chunkref:netcdf_default_fill" not in parsed(path)[f"{variable}/.zattrs"]:
                assert same_number(m.GetNoDataValue(), t.GetNoDataValue()), f"{what} band {b}"
            assert (m.GetScale(), m.GetOffset()) == (t.GetScale(), t.GetOffset()), what
            if variable != "compact":
                assert_pixels_equal(m.ReadAsArray(), t.ReadAsArray(), f"{what} band {b}")


def assert_same_place(ds: gdal.Dataset, nat: gdal.Dataset, reversed_: bool, what: str) -> None:
    """Every stored value at the same place (to GT_TOLERANCE_PIXELS) and
    the same CRS as the netCDF driver says."""
    got, want = ds.GetGeoTransform(), nat.GetGeoTransform()
    ny, nx = ds.RasterYSize, ds.RasterXSize
    theirs = pixel_centres(want, ny, nx, reversed_)
    worst = float(np.abs(pixel_centres(got, ny, nx, False) - theirs).max())
    assert worst / max(abs(want[1]), abs(want[5])) <= GT_TOLERANCE_PIXELS, (what, got, want)
    assert_same_crs(ds.GetSpatialRef(), nat.GetSpatialRef(), what)


@pytest.mark.parametrize("name", ["plain", "userblock", "plugins"])
def test_plain_hdf5_rasters_equal_h5py(sources, indexed, name):
    """Each raster reads as h5py reads the dataset (or, for the plugin
    filters, as it was written): gzip + shuffle, fletcher32, big-endian,
    int8, unwritten chunks and a never-written contiguous dataset as their
    fill values, row blocks, a user block, Zstandard and Blosc."""
    path, _ = indexed[name]
    expected_dir = sources / "expected" / f"{name}.h5"
    names = rasters(parsed(path))
    assert names == sorted(p.stem.replace(".", "/") for p in expected_dir.glob("*.npy")
                           if np.load(p).ndim >= 2)
    for variable in names:
        expected = np.load(expected_dir / f"{variable.replace('/', '.')}.npy")
        ds = ours(path, variable)
        planes = expected.reshape((-1, *expected.shape[-2:]))
        assert ds.RasterCount == planes.shape[0], variable
        for b, plane in enumerate(planes):
            assert_band_matches(ds.GetRasterBand(b + 1), plane, f"{name}:{variable} band {b + 1}")


def test_plain_hdf5_groups_attributes_and_fill_values(indexed):
    refs = parsed(indexed["plain"][0])
    assert refs[".zattrs"] == {
        "title": "plain hdf5",
        "version": 3,
        "weights": [0.5, 1.5],
        "tags": ["a", "bc"],
        "note": "variable-length text",
        # GDAL's HDF5 driver lists the rasters walking the file by name.
        "chunkref:gdal_driver": "HDF5",
        "chunkref:variable_order": [
            "be", "contig_big", "cube", "fl", "grp/gz", "grp/sub/deep", "sparse", "unwritten"],
    }
    assert refs["grp/.zattrs"] == {"kind": "group"}
    assert refs["grp/sub/.zattrs"] == {"level": 2}
    assert all(refs[f"{g}.zgroup"] == {"zarr_format": 2} for g in ["", "grp/", "grp/sub/"])
    assert refs["grp/gz/.zattrs"] == {
        "_ARRAY_DIMENSIONS": ["phony_dim_0", "phony_dim_1"],
        "units": "m",
        "valid_range": [0, 5000],
        "chunkref:gdal_driver": "HDF5",  # an .h5 file: GDAL's HDF5 driver's
    }
    assert refs["grp/gz/.zarray"]["filters"] == [
        {"id": "shuffle", "elementsize": 4},
        {"id": "zlib", "level": 6},
    ]
    assert refs["be/.zarray"]["dtype"] == ">i4"
    assert refs["cube/.zarray"]["dtype"] == "|i1"
    assert refs["sparse/.zarray"]["fill_value"] == -5
    assert sorted(k for k in refs if k.startswith("sparse/") and "/." not in k) == [
        "sparse/0.0", "sparse/3.5"]
    assert refs["unwritten/.zarray"]["fill_value"] == 7.5
    assert not [k for k in refs if k.startswith("unwritten/") and "/." not in k]
    assert refs["scalar/.zarray"]["shape"] == [] and "scalar/0" in refs


def test_plugin_filters_map_to_their_codecs(indexed):
    refs = parsed(indexed["plugins"][0])
    assert refs["zstd/.zarray"]["filters"] == [{"id": "zstd", "level": 3}]
    assert refs["blosc/.zarray"]["filters"] == [
        {"id": "blosc", "cname": "zstd", "clevel": 5, "shuffle": 1, "blocksize": 0}]


def test_large_contiguous_dataset_is_read_in_row_blocks(indexed):
    """A 4.8 MB contiguous extent becomes two 300-row references, back to
    back, so a tile never fetches the whole extent."""
    refs = parsed(indexed["plain"][0])
    assert refs["contig_big/.zarray"]["chunks"] == [300, 1000]
    (_, first, a), (_, second, b) = refs["contig_big/0.0"], refs["contig_big/1.0"]
    assert a == b == 300 * 1000 * 8 and second == first + a


def test_compact_dataset_is_inlined(indexed):
    refs = json.loads(indexed["cf"][0].read_text())["refs"]
    assert refs["compact/0.0"].startswith("base64:")


@pytest.mark.parametrize(
    "file, words",
    [
        ("scaleoffset.h5", ["'/packed/so'", "filter 6 (scaleoffset)"]),
        ("zfp.h5", ["'/squeezed'", "filter 32013"]),
        ("masked.h5", ["chunk 1.0 of dataset '/partly'", "filter mask 0x1"]),
    ],
)
def test_unsupported_sources_fail_naming_dataset_and_filter(sources, chunkref_bin, tmp_path,
                                                           file, words):
    done = run_chunkref(chunkref_bin, "index", sources / file, "-o", tmp_path / "x.json")
    assert done.returncode == 1, done
    for word in [file, *words]:
        assert word in done.stderr, (word, done.stderr)
    assert not (tmp_path / "x.json").exists()


@pytest.mark.parametrize("damage", ["truncated", "garbage"])
def test_corrupt_hdf5_fails_naming_the_file(sources, chunkref_bin, tmp_path, damage):
    whole = (sources / "cf.nc").read_bytes()
    bad = tmp_path / f"{damage}.nc"
    if damage == "truncated":
        bad.write_bytes(whole[: len(whole) // 2])
    else:
        bad.write_bytes(whole[:8] + bytes(range(256)) * 64)
    done = run_chunkref(chunkref_bin, "index", bad, "-o", tmp_path / "x.json")
    assert done.returncode == 1, done
    assert bad.name in done.stderr and "panicked" not in done.stderr, done.stderr


@pytest.mark.parametrize("form", ["parquet", "fgb"])
def test_table_index_reads_as_the_json_one(sources, indexed, chunkref_bin, tmp_path, form):
    table = tmp_path / f"cf.{form}"
    index(chunkref_bin, sources / "cf.nc", table)
    json_index, _ = indexed["cf"]
    for variable in ["temp", "wind", "checked", "compact", "contig", "forecast/gust"]:
        a, b = ours(table, variable), ours(json_index, variable)
        assert a.RasterCount == b.RasterCount
        assert a.GetGeoTransform() == b.GetGeoTransform(), variable
        for i in range(1, a.RasterCount + 1):
            got, want = a.GetRasterBand(i), b.GetRasterBand(i)
            assert_pixels_equal(got.ReadAsArray(), want.ReadAsArray(), f"{variable} band {i}")
            assert got.GetMetadata() == want.GetMetadata()
            assert same_number(got.GetNoDataValue(), want.GetNoDataValue())


def test_template_base_makes_a_portable_index(sources, chunkref_bin):
    target = sources / "cf.portable.json"
    index(chunkref_bin, sources / "cf.nc", target, "--template-base")
    doc = json.loads(target.read_text())
    assert doc["templates"] == {"base": ""}
    assert doc["refs"]["temp/0.0.0"][0] == "{{base}}cf.nc"
    nat, ds = native(sources / "cf.nc", "temp"), ours(target, "temp")
    plane = nat.GetRasterBand(2).ReadAsArray()
    assert_pixels_equal(ds.GetRasterBand(2).ReadAsArray(), plane, "temp")


@pytest.mark.parametrize("how", [["--append"], ["--shard", "1/2"]])
def test_hdf5_sources_make_no_collection_parts(sources, chunkref_bin, tmp_path, how):
    done = run_chunkref(chunkref_bin, "index", *how, sources / "polar.nc", "-o", tmp_path / "c")
    assert done.returncode == 1 and "one per index" in done.stderr, done.stderr
    assert not (tmp_path / "c").exists() or not any((tmp_path / "c").iterdir())


def test_several_hdf5_sources_join_or_index_one_each(sources, chunkref_bin, tmp_path):
    """Files that do not line up are not joined (the file and the document
    that differs are named); to OUT_DIR/ each is indexed on its own."""
    both = [sources / "polar.nc", sources / "southup.nc"]
    done = run_chunkref(chunkref_bin, "index", *both, "-o", tmp_path / "stack.json")
    assert done.returncode == 1 and "cannot join the files" in done.stderr, done.stderr
    assert "polar.nc" in done.stderr or "southup.nc" in done.stderr, done.stderr
    assert not (tmp_path / "stack.json").exists()
    out = tmp_path / "each"
    done = run_chunkref(chunkref_bin, "index", *both, "-o", f"{out}/")
    assert done.returncode == 0, done.stderr
    for source in both:
        with captured_errors():
            ds = open_chunkref(out / f"{source.name}.tile_index.json")
        assert ds.RasterCount == 1


@pytest.mark.parametrize("form", ["json", "parquet"])
def test_daily_files_join_along_time_as_multizarrtozarr_does(sources, chunkref_bin, tmp_path, form):
    """Three daily NetCDF4 files joined along ``time`` (the unlimited
    dimension, the default: the first of the first array): the same chunk
    keys and byte ranges as kerchunk's MultiZarrToZarr store of the same
    files, and through the driver the same bands, pixels and times."""
    days = [sources / "kerchunk" / f"day{d}.nc" for d in range(3)]
    out = tmp_path / f"days.{form}"
    done = run_chunkref(chunkref_bin, "index", *days, "-o", out)
    assert done.returncode == 0, done.stderr
    theirs = parsed(sources / "kerchunk" / "days.json")
    if form == "json":
        # kerchunk inlines these small chunks; ours refer to each day's file.
        ours = parsed(out)
        chunks = lambda refs: {k for k in refs if k.startswith("temp/") and "/." not in k}  # noqa: E731
        assert chunks(ours) == chunks(theirs) and len(chunks(ours)) == 3 * 9
        assert all(Path(ours[k][0]).name == f"day{k.split('/')[1].split('.')[0]}.nc"
                   for k in chunks(ours))
        assert arrays(ours)["temp"]["shape"] == arrays(theirs)["temp"]["shape"]
    with captured_errors():
        got = open_chunkref(f'CHUNKREF:"{out}":temp')
        want = open_chunkref(f'CHUNKREF:"{sources / "kerchunk" / "days.json"}":temp')
    assert got.RasterCount == want.RasterCount == 3
    np.testing.assert_array_equal(got.ReadAsArray(), want.ReadAsArray())
    for b in range(1, 4):
        assert (got.GetRasterBand(b).GetMetadataItem("NETCDF_DIM_time")
                == want.GetRasterBand(b).GetMetadataItem("NETCDF_DIM_time"))
