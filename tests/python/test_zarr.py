"""Zarr arrays: data types, codecs, missing chunks, leading axes.

Sources are written by GDAL's Zarr driver (oracle: GDAL reading the store)
or by zarr-python with numcodecs codecs GDAL cannot write (oracle: the numpy
array written).  Each zarr-python case runs in every metadata *flavour*: Zarr
v2 with "." and "/" dimension separators, and Zarr v3 (``zarr.json`` written
by :func:`kb.to_zarr_v3` over the same chunk files) with ``c/1/2`` and
``c.1.2`` chunk keys.  Only gzip, zstd and blosc exist in both versions, so
the other codecs run in the v2 flavours only.
"""

from __future__ import annotations

import numcodecs
import pytest
from numcodecs import Blosc
from osgeo import gdal

import cases
import kerchunk_builders as kb
from raster_checks import assert_matches, native_levels, open_chunkref

#: flavour -> (zarr format, separator of v2 chunk keys / v3 chunk key encoding)
FLAVOURS = {"v2-dot": (2, "."), "v2-slash": (2, "/"), "v3-c-slash": (3, "/"), "v3-c-dot": (3, ".")}
V2_FLAVOURS = [name for name, (version, _) in FLAVOURS.items() if version == 2]


def zarr_index(tmp_path, arrays, flavour, drop=()):
    """Write ``arrays`` (path -> :class:`kb.ArraySpec`) with zarr-python in
    the flavour's separator, leave chunks ``drop`` of array "a" out of the
    index, convert to v3 for v3 flavours; return the index path."""
    version, separator = FLAVOURS[flavour]
    for spec in arrays.values():
        spec.dimension_separator = separator
    store = kb.write_zarr_python(tmp_path / "s.zarr", arrays)
    entries = kb.drop_chunks(kb.zarr_store_entries(store), "a", drop)
    return kb.write_index(tmp_path / "index.json", kb.as_zarr_format(entries, version, separator))


GDAL_CODECS = {
    "none": ["COMPRESS=NONE"],
    "blosc": ["COMPRESS=BLOSC", "BLOSC_CNAME=zstd", "BLOSC_SHUFFLE=BIT"],
    "zlib": ["COMPRESS=ZLIB"],
    "gzip": ["COMPRESS=GZIP"],
    # GDAL writes {"id": "lzma", "preset": 6, "delta": 1}: an xz stream plus
    # a configuration key numcodecs does not know.
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


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize(
    "compressor", [None, Blosc("lz4", 5, Blosc.SHUFFLE)], ids=["raw", "blosc-shuffle"]
)
@pytest.mark.parametrize("dtype", kb.all_dtypes())
def test_dtypes(tmp_path, dtype, compressor, flavour):
    """Every data type, little and big endian (blosc's shuffle works on the
    stored element size)."""
    data = kb.sample_pixels(dtype, (75, 100))
    spec = kb.ArraySpec(data, (32, 32), compressor=compressor)
    index = zarr_index(tmp_path, {"a": spec}, flavour)
    assert_matches(open_chunkref(index), [data], blocks=[(32, 32)])


BLOSC_SHUFFLES = {
    "noshuffle": Blosc.NOSHUFFLE,
    "shuffle": Blosc.SHUFFLE,
    "bitshuffle": Blosc.BITSHUFFLE,
}

#: name -> (compressor, filters); "delta" stands for numcodecs.Delta of the
#: array's dtype.
CODECS = {
    "zlib": (numcodecs.Zlib(level=6), None),
    "gzip": (numcodecs.GZip(level=6), None),
    "bz2": (numcodecs.BZ2(level=9), None),
    "lzma": (numcodecs.LZMA(), None),
    "lz4": (numcodecs.LZ4(), None),
    "zstd": (numcodecs.Zstd(level=3), None),
    **{
        f"blosc-{cname}-{name}": (Blosc(cname, 5, shuffle), None)
        for cname in numcodecs.blosc.list_compressors()
        for name, shuffle in BLOSC_SHUFFLES.items()
    },
    "shuffle": (None, [numcodecs.Shuffle(elementsize=4)]),
    "delta": (None, ["delta"]),
    "delta+shuffle+zlib": (numcodecs.Zlib(), ["delta", numcodecs.Shuffle(elementsize=4)]),
}


def codec_params():
    """(codec, flavour) pairs: every codec in the v2 flavours, and those
    with a Zarr v3 core equivalent in the v3 flavours too."""
    params = []
    for codec, (compressor, filters) in CODECS.items():
        in_v3 = filters is None and compressor.codec_id in ("gzip", "zstd", "blosc")
        for flavour in FLAVOURS if in_v3 else V2_FLAVOURS:
            params.append(pytest.param(codec, flavour, id=f"{codec}-{flavour}"))
    return params


@pytest.mark.parametrize("dtype", ["<i4", ">i4"])
@pytest.mark.parametrize("codec,flavour", codec_params())
def test_codecs(tmp_path, codec, flavour, dtype):
    compressor, filters = CODECS[codec]
    if filters:
        filters = [numcodecs.Delta(dtype=dtype) if f == "delta" else f for f in filters]
    data = kb.sample_pixels(dtype, (75, 100))
    spec = kb.ArraySpec(data, (32, 32), compressor=compressor, filters=filters)
    index = zarr_index(tmp_path, {"a": spec}, flavour)
    assert_matches(open_chunkref(index), [spec.data])


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("dtype,fill", cases.FILL_VALUES, ids=cases.FILL_VALUE_IDS)
def test_missing_chunks_read_as_fill_value(tmp_path, dtype, fill, flavour):
    data = kb.sample_pixels(dtype, (75, 100))
    spec = kb.ArraySpec(data, (32, 32), compressor=numcodecs.GZip(), fill_value=fill)
    index = zarr_index(tmp_path, {"a": spec}, flavour, drop=cases.MISSING_CHUNKS)
    expected = kb.fill_chunks(data, (32, 32), cases.MISSING_CHUNKS, fill)
    assert_matches(open_chunkref(index), [expected])


#: name -> (dtype, shape, chunks): chunks along the leading axes may be
#: partial too; chunks may be non-square or larger than the raster.
SHAPES = {
    "3d-one-chunk-per-band": ("<u2", (4, 75, 100), (1, 32, 32)),
    "3d-chunk-spans-3-of-4-bands": (">u2", (4, 75, 100), (3, 32, 32)),
    "4d": ("<i4", (2, 3, 75, 100), (1, 2, 32, 32)),
    "non-square-chunks": ("<i8", (75, 100), (16, 48)),
    "chunk-larger-than-raster": ("<f4", (75, 100), (128, 128)),
}


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("case", SHAPES)
def test_shapes_and_leading_axes(tmp_path, case, flavour):
    """Every axis but the last two becomes bands, leading indices flattened
    in C order (band k of a (2, 3, y, x) array is [k // 3, k % 3]); the
    block size is the chunk's (x, y) size."""
    dtype, shape, chunks = SHAPES[case]
    data = kb.sample_pixels(dtype, shape)
    spec = kb.ArraySpec(data, chunks, compressor=numcodecs.Zstd())
    index = zarr_index(tmp_path, {"a": spec}, flavour)
    expected = data.reshape(-1, *shape[-2:])
    assert_matches(open_chunkref(index), [expected], blocks=[(chunks[-1], chunks[-2])])


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
    spec = kb.ArraySpec(kb.sample_pixels("<u2", shape), chunks, compressor=compressor)
    ds = open_chunkref(zarr_index(tmp_path, {"a": spec}, "v2-dot"))
    structure = ds.GetMetadata("IMAGE_STRUCTURE")
    assert structure.get("INTERLEAVE") == interleave, structure
    if compression:
        assert compression in structure.get("COMPRESSION", "").upper(), structure


@pytest.mark.parametrize("flavour", ["v2-dot", "v3-c-slash"])
def test_bands_carry_their_leading_indices(tmp_path, flavour):
    """Each band of a (2, 3, y, x) array has metadata naming its indices
    along the two leading axes (the exact keys are the driver's choice, but
    they mention the dimension names)."""
    attrs = {"_ARRAY_DIMENSIONS": ["time", "level", "y", "x"]}
    spec = kb.ArraySpec(kb.sample_pixels("<u2", (2, 3, 75, 100)), (1, 1, 32, 32), attrs=attrs)
    ds = open_chunkref(zarr_index(tmp_path, {"a": spec}, flavour))
    seen = set()
    for k in range(6):
        md = ds.GetRasterBand(k + 1).GetMetadata()
        time, level = divmod(k, 3)
        assert any("time" in key and value == str(time) for key, value in md.items()), md
        assert any("level" in key and value == str(level) for key, value in md.items()), md
        seen.add(tuple(sorted(md.items())))
    assert len(seen) == 6
