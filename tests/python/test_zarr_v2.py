"""Zarr v2 stores: written by GDAL's Zarr driver (oracle: GDAL reading the
store) and by zarr-python with numcodecs codecs GDAL cannot write (oracle:
the numpy array written).  Covers every data type in both byte orders, both
dimension separators, each compressor and filter, missing chunks and
leading axes as bands."""

from __future__ import annotations

import numcodecs
import pytest
from numcodecs import Blosc
from osgeo import gdal

import cases
import kerchunk_builders as kb
from raster_checks import assert_matches, native_levels, open_chunkref

GDAL_CODECS = {
    "none": ["COMPRESS=NONE"],
    "blosc": ["COMPRESS=BLOSC", "BLOSC_CNAME=zstd", "BLOSC_SHUFFLE=BIT"],
    "zlib": ["COMPRESS=ZLIB"],
    "gzip": ["COMPRESS=GZIP"],
    "lzma": ["COMPRESS=LZMA"],
    "zstd": ["COMPRESS=ZSTD"],
    "lz4": ["COMPRESS=LZ4"],
    "delta": ["FILTER=DELTA"],
    "delta+zlib": ["FILTER=DELTA", "COMPRESS=ZLIB"],
}


@pytest.mark.parametrize("separator", [".", "/"])
@pytest.mark.parametrize("codec", GDAL_CODECS)
def test_gdal_written_store(tmp_path, codec, separator):
    data = kb.sample_pixels("<i2", (75, 100))
    options = [*GDAL_CODECS[codec], f"DIM_SEPARATOR={separator}"]
    store = kb.write_gdal_zarr(tmp_path / "s.zarr", data, creation_options=options)
    index = kb.write_index(tmp_path / "index.json", kb.zarr_store_entries(store))
    native = gdal.Open(str(store))
    assert native.GetDriver().ShortName == "Zarr"
    assert_matches(open_chunkref(index), native_levels(native), blocks=[(32, 32)])


@pytest.mark.parametrize("compressor", [None, Blosc("lz4", 5, Blosc.SHUFFLE)], ids=["raw", "blosc"])
@pytest.mark.parametrize("dtype", kb.all_dtypes())
def test_dtypes(tmp_path, dtype, compressor):
    """Every data type, little and big endian (blosc's shuffle works on the
    stored element size)."""
    data = kb.sample_pixels(dtype, (75, 100))
    spec = kb.ArraySpec(data, (32, 32), compressor=compressor)
    store = kb.write_zarr_python(tmp_path / "s.zarr", {"a": spec})
    index = kb.write_index(tmp_path / "index.json", kb.zarr_store_entries(store))
    assert_matches(open_chunkref(index), [data], blocks=[(32, 32)])


BLOSC_SHUFFLES = {"noshuffle": Blosc.NOSHUFFLE, "shuffle": Blosc.SHUFFLE, "bitshuffle": Blosc.BITSHUFFLE}


def _blosc_cases() -> dict:
    """One case per blosc inner compressor and shuffle mode."""
    return {
        f"blosc-{cname}-{name}": (Blosc(cname, 5, shuffle), None)
        for cname in numcodecs.blosc.list_compressors()
        for name, shuffle in BLOSC_SHUFFLES.items()
    }


#: name -> (compressor, filters), applied to a "<i4" array (and a ">i4" one).
NUMCODECS_CASES = {
    "zlib": (numcodecs.Zlib(level=6), None),
    "gzip": (numcodecs.GZip(level=6), None),
    "bz2": (numcodecs.BZ2(level=9), None),
    "lzma": (numcodecs.LZMA(), None),
    "lz4": (numcodecs.LZ4(), None),
    "zstd": (numcodecs.Zstd(level=3), None),
    **_blosc_cases(),
    "shuffle": (None, [numcodecs.Shuffle(elementsize=4)]),
    "delta": (None, "delta"),
    "delta+shuffle+zlib": (numcodecs.Zlib(), ["delta", numcodecs.Shuffle(elementsize=4)]),
}


def _filters(filters, dtype):
    """Instantiate filters; "delta" stands for a Delta of the array's dtype."""
    if filters is None:
        return None
    if filters == "delta":
        filters = ["delta"]
    return [numcodecs.Delta(dtype=dtype) if f == "delta" else f for f in filters]


@pytest.mark.parametrize("dtype", ["<i4", ">i4"])
@pytest.mark.parametrize("case", NUMCODECS_CASES)
def test_numcodecs(tmp_path, case, dtype):
    compressor, filters = NUMCODECS_CASES[case]
    data = kb.sample_pixels(dtype, (75, 100))
    spec = kb.ArraySpec(data, (32, 32), compressor=compressor, filters=_filters(filters, dtype))
    store = kb.write_zarr_python(tmp_path / "s.zarr", {"a": spec})
    index = kb.write_index(tmp_path / "index.json", kb.zarr_store_entries(store))
    assert_matches(open_chunkref(index), [data])


@pytest.mark.parametrize("separator", [".", "/"])
@pytest.mark.parametrize("dtype,fill", cases.FILL_VALUES, ids=cases.FILL_VALUE_IDS)
def test_missing_chunks_read_as_fill_value(tmp_path, dtype, fill, separator):
    data = kb.sample_pixels(dtype, (75, 100))
    spec = kb.ArraySpec(
        data, (32, 32), compressor=numcodecs.Zlib(), fill_value=fill, dimension_separator=separator
    )
    store = kb.write_zarr_python(tmp_path / "s.zarr", {"a": spec})
    entries = kb.drop_chunks(kb.zarr_store_entries(store), "a", cases.MISSING_CHUNKS)
    index = kb.write_index(tmp_path / "index.json", entries)
    expected = kb.fill_chunks(data, (32, 32), cases.MISSING_CHUNKS, fill)
    assert_matches(open_chunkref(index), [expected])


LEADING_AXES_CASES = {
    # shape, chunks: chunks along the leading axes may be partial too.
    "3d-one-chunk-per-band": ((4, 75, 100), (1, 32, 32)),
    "3d-chunk-spans-3-of-4-bands": ((4, 75, 100), (3, 32, 32)),
    "4d": ((2, 3, 75, 100), (1, 2, 32, 32)),
}


@pytest.mark.parametrize("separator", [".", "/"])
@pytest.mark.parametrize("case", LEADING_AXES_CASES)
def test_leading_axes_become_bands(tmp_path, case, separator):
    """Every axis but the last two becomes bands, leading indices flattened
    in C order: band k of a (2, 3, y, x) array is [k // 3, k % 3]."""
    shape, chunks = LEADING_AXES_CASES[case]
    data = kb.sample_pixels(">u2", shape)
    spec = kb.ArraySpec(data, chunks, compressor=numcodecs.Zstd(), dimension_separator=separator)
    store = kb.write_zarr_python(tmp_path / "s.zarr", {"a": spec})
    index = kb.write_index(tmp_path / "index.json", kb.zarr_store_entries(store))
    expected = data.reshape(-1, *shape[-2:])
    assert_matches(open_chunkref(index), [expected], blocks=[(32, 32)])


def test_chunks_larger_than_the_array(tmp_path):
    """One chunk bigger than the whole raster in both directions."""
    data = kb.sample_pixels("<f4", (75, 100))
    store = kb.write_zarr_python(tmp_path / "s.zarr", {"a": kb.ArraySpec(data, (128, 128))})
    index = kb.write_index(tmp_path / "index.json", kb.zarr_store_entries(store))
    assert_matches(open_chunkref(index), [data], blocks=[(128, 128)])


def test_non_square_chunks(tmp_path):
    """Chunks of 16 rows by 48 columns: block size is (x=48, y=16)."""
    data = kb.sample_pixels("<i8", (75, 100))
    store = kb.write_zarr_python(tmp_path / "s.zarr", {"a": kb.ArraySpec(data, (16, 48))})
    index = kb.write_index(tmp_path / "index.json", kb.zarr_store_entries(store))
    assert_matches(open_chunkref(index), [data], blocks=[(48, 16)])


#: shape, chunks, compressor, expected INTERLEAVE, expected COMPRESSION
#: substring (None: not checked).
STRUCTURE_CASES = {
    "chunk-per-band-zlib": ((3, 75, 100), (1, 32, 32), numcodecs.Zlib(), "BAND", "ZLIB"),
    "chunk-spans-bands-zstd": ((3, 75, 100), (3, 32, 32), numcodecs.Zstd(), "PIXEL", "ZSTD"),
    "chunk-spans-bands-raw": ((3, 75, 100), (3, 32, 32), None, "PIXEL", None),
}


@pytest.mark.parametrize("case", STRUCTURE_CASES)
def test_image_structure_metadata(tmp_path, case):
    """INTERLEAVE says whether a chunk holds one band or all of them;
    COMPRESSION names the compressor."""
    shape, chunks, compressor, interleave, compression = STRUCTURE_CASES[case]
    data = kb.sample_pixels("<u2", shape)
    store = kb.write_zarr_python(tmp_path / "s.zarr", {"a": kb.ArraySpec(data, chunks, compressor=compressor)})
    index = kb.write_index(tmp_path / "index.json", kb.zarr_store_entries(store))
    structure = open_chunkref(index).GetMetadata("IMAGE_STRUCTURE")
    assert structure.get("INTERLEAVE") == interleave, structure
    if compression:
        assert compression in structure.get("COMPRESSION", "").upper(), structure


def test_bands_carry_their_leading_indices(tmp_path):
    """Each band of a (2, 3, y, x) array has metadata naming its indices
    along the two leading axes (the exact keys are the driver's choice)."""
    data = kb.sample_pixels("<u2", (2, 3, 75, 100))
    spec = kb.ArraySpec(data, (1, 1, 32, 32), attrs={"_ARRAY_DIMENSIONS": ["time", "level", "y", "x"]})
    store = kb.write_zarr_python(tmp_path / "s.zarr", {"a": spec})
    index = kb.write_index(tmp_path / "index.json", kb.zarr_store_entries(store))
    ds = open_chunkref(index)
    seen = []
    for k in range(6):
        md = ds.GetRasterBand(k + 1).GetMetadata()
        time, level = divmod(k, 3)
        assert any("time" in key and value == str(time) for key, value in md.items()), md
        assert any("level" in key and value == str(level) for key, value in md.items()), md
        seen.append(md)
    assert len({tuple(sorted(md.items())) for md in seen}) == 6
