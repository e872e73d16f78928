"""Zarr v3 metadata (``zarr.json``), written by hand over chunk files that
zarr-python wrote as v2 (the bytes, gzip, zstd and blosc byte formats are
the same in both versions), with ``c/1/2`` and ``c.1.2`` chunk keys.
Oracle: the numpy array zarr-python wrote."""

from __future__ import annotations

import numcodecs
import pytest
from numcodecs import Blosc

import cases
import kerchunk_builders as kb
from raster_checks import assert_matches, open_chunkref

SEPARATORS = pytest.mark.parametrize("separator", ["/", "."], ids=["c-slash", "c-dot"])


def v3_index(tmp_path, arrays, separator, drop=()):
    """Write ``arrays`` (name -> ArraySpec) with zarr-python, drop chunks
    ``drop`` of array "a", convert to v3, write the index; return its path."""
    store = kb.write_zarr_python(tmp_path / "s.zarr", arrays)
    entries = kb.drop_chunks(kb.zarr_store_entries(store), "a", drop)
    return kb.write_index(tmp_path / "index.json", kb.to_zarr_v3(entries, separator))


@SEPARATORS
@pytest.mark.parametrize("dtype", kb.all_dtypes())
def test_dtypes(tmp_path, dtype, separator):
    data = kb.sample_pixels(dtype, (75, 100))
    index = v3_index(tmp_path, {"a": kb.ArraySpec(data, (32, 32))}, separator)
    assert_matches(open_chunkref(index), [data], blocks=[(32, 32)])


V3_CODECS = {
    "gzip": numcodecs.GZip(level=6),
    "zstd": numcodecs.Zstd(level=3),
    **{
        f"blosc-{cname}-{name}": Blosc(cname, 5, shuffle)
        for cname in ("lz4", "zstd", "blosclz")
        for name, shuffle in (("noshuffle", Blosc.NOSHUFFLE), ("shuffle", Blosc.SHUFFLE), ("bitshuffle", Blosc.BITSHUFFLE))
    },
}


@SEPARATORS
@pytest.mark.parametrize("dtype", ["<u2", ">f4"])
@pytest.mark.parametrize("codec", V3_CODECS)
def test_codecs(tmp_path, codec, dtype, separator):
    data = kb.sample_pixels(dtype, (75, 100))
    index = v3_index(tmp_path, {"a": kb.ArraySpec(data, (32, 32), compressor=V3_CODECS[codec])}, separator)
    assert_matches(open_chunkref(index), [data])


@SEPARATORS
@pytest.mark.parametrize("dtype,fill", cases.FILL_VALUES, ids=cases.FILL_VALUE_IDS)
def test_missing_chunks_read_as_fill_value(tmp_path, dtype, fill, separator):
    data = kb.sample_pixels(dtype, (75, 100))
    spec = kb.ArraySpec(data, (32, 32), compressor=numcodecs.GZip(), fill_value=fill)
    index = v3_index(tmp_path, {"a": spec}, separator, drop=cases.MISSING_CHUNKS)
    expected = kb.fill_chunks(data, (32, 32), cases.MISSING_CHUNKS, fill)
    assert_matches(open_chunkref(index), [expected])


@SEPARATORS
def test_leading_axes_become_bands(tmp_path, separator):
    data = kb.sample_pixels("<i4", (2, 3, 75, 100))
    spec = kb.ArraySpec(data, (1, 2, 32, 32), compressor=numcodecs.Zstd())
    index = v3_index(tmp_path, {"a": spec}, separator)
    assert_matches(open_chunkref(index), [data.reshape(6, 75, 100)], blocks=[(32, 32)])


@pytest.mark.parametrize("form", ["packed", "base64", "multirange_shuffled"])
def test_reference_forms(tmp_path, form):
    """v3 keys behind other reference forms (the form is independent of
    the metadata version)."""
    data = kb.sample_pixels("<f8", (75, 100))
    store = kb.write_zarr_python(tmp_path / "s.zarr", {"a": kb.ArraySpec(data, (32, 32), compressor=numcodecs.GZip())})
    entries = kb.to_zarr_v3(kb.zarr_store_entries(store), "/")
    index = kb.write_index(tmp_path / "index.json", entries, kb.RefStyle(form, "file"))
    assert_matches(open_chunkref(index), [data])
