"""Errors: each is a GDAL error (an exception here), never a crash, and the
process carries on.

Index-level problems (malformed JSON) make the open fail with an error of the
driver's own.  Chunk-level problems (missing file, range past the end of the
file, bytes that decode to the wrong size or not at all, for every
compressor) make the read of the
affected window fail with a message naming the chunk key and the URL, every
time it is read, while other windows still read correctly.  An unknown codec
may fail either at open or at read time, naming the codec.
"""

from __future__ import annotations

import json

import numcodecs
import pytest

import kerchunk_builders as kb
from raster_checks import assert_matches, assert_pixels_equal, failure_text, open_chunkref

#: The chunk broken by the chunk-level cases: rows 32-63, columns 64-95.
BAD_KEY = "a/1.2"
BAD_WINDOW = (64, 32, 32, 32)
#: A window well away from it (chunk a/0.0).
GOOD_WINDOW = (3, 4, 20, 20)


@pytest.fixture
def raw_store(tmp_path):
    """A 75x100 ``<u2`` array ``a`` in uncompressed 32x32 chunks (every
    chunk file is 2048 bytes); returns (entries, data)."""
    data = kb.sample_pixels("<u2", (75, 100))
    store = kb.write_zarr_python(tmp_path / "src.zarr", {"a": kb.ArraySpec(data, (32, 32))})
    return kb.zarr_store_entries(store), data


def _missing_file(tmp_path, source):
    return kb.ChunkSource(tmp_path / "no-such-dir" / "chunk.bin")


def _missing_file_range(tmp_path, source):
    return kb.ChunkSource(tmp_path / "no-such-dir" / "chunk.bin", 0, source.size())


def _range_past_end(tmp_path, source):
    return kb.ChunkSource(source.path, 1000, source.size())


def _offset_past_end(tmp_path, source):
    return kb.ChunkSource(source.path, source.size() + 10, 100)


def _too_short(tmp_path, source):
    return kb.ChunkSource(source.path, 0, source.size() - 2)


def _too_long(tmp_path, source):
    path = tmp_path / "long.bin"
    path.write_bytes(source.read() + b"\0\0")
    return kb.ChunkSource(path)


#: Chunk-level failures of the uncompressed array: case -> (function
#: (tmp_path, good ChunkSource of BAD_KEY) -> bad ChunkSource, ref form).
RAW_CASES = {
    "missing-file-whole": (_missing_file, "whole"),
    "missing-file-range": (_missing_file_range, "range"),
    "range-past-end-of-file": (_range_past_end, "range"),
    "offset-past-end-of-file": (_offset_past_end, "range"),
    "decodes-too-short": (_too_short, "range"),
    "decodes-too-long": (_too_long, "whole"),
}


def read_window(ds, window):
    """Read one window of band 1."""
    return ds.GetRasterBand(1).ReadAsArray(*window)


def assert_chunk_failure(index, bad_url, data):
    """Reading the broken chunk fails naming its key and URL (twice: the
    failure is not cached as pixels), while a good window reads right,
    before and after."""
    ds = open_chunkref(index)
    x, y, w, h = GOOD_WINDOW
    assert_pixels_equal(read_window(ds, GOOD_WINDOW), data[y : y + h, x : x + w], "before")
    for attempt in (1, 2):
        message = failure_text(read_window, ds, BAD_WINDOW)
        assert BAD_KEY in message, f"attempt {attempt}: chunk key missing from {message!r}"
        assert bad_url in message, f"attempt {attempt}: URL {bad_url!r} missing from {message!r}"
    with pytest.raises(RuntimeError):
        ds.ReadAsArray()
    assert_pixels_equal(read_window(ds, GOOD_WINDOW), data[y : y + h, x : x + w], "after")


@pytest.mark.parametrize("case", RAW_CASES)
def test_chunk_level_errors(raw_store, tmp_path, case):
    entries, data = raw_store
    make_bad, form = RAW_CASES[case]
    bad = make_bad(tmp_path, entries[BAD_KEY])
    entries[BAD_KEY] = bad
    index = kb.write_index(tmp_path / "index.json", entries, kb.RefStyle(form, "absolute"))
    assert_chunk_failure(index, str(bad.path), data)


#: Compressors whose broken streams are tried.
ERROR_CODECS = {
    "zlib": numcodecs.Zlib(),
    "gzip": numcodecs.GZip(),
    "bz2": numcodecs.BZ2(),
    "lzma": numcodecs.LZMA(),
    "lz4": numcodecs.LZ4(),
    "zstd": numcodecs.Zstd(),
    "blosc": numcodecs.Blosc("lz4", 5, numcodecs.Blosc.SHUFFLE),
}

#: Broken compressed chunks that every reader can detect: case ->
#: function(codec, the chunk's 2048 decoded bytes) -> stored bytes.
DETECTABLE = {
    "decodes-too-short": lambda codec, good: codec.encode(good[: len(good) // 2]),
    "decodes-too-long": lambda codec, good: codec.encode(good + good),
    "truncated-stream": lambda codec, good: codec.encode(good)[: len(codec.encode(good)) // 2],
}


def compressed_index(tmp_path, codec, make_bad):
    """An index over a 75x100 ``<u2`` array compressed with ``codec`` whose
    chunk BAD_KEY is replaced by ``make_bad(codec, decoded bytes)`` in a
    file of its own.  Returns (index, bad file, data)."""
    data = kb.sample_pixels("<u2", (75, 100))
    spec = kb.ArraySpec(data, (32, 32), compressor=codec)
    entries = kb.zarr_store_entries(kb.write_zarr_python(tmp_path / "s.zarr", {"a": spec}))
    x, y, w, h = BAD_WINDOW
    bad = tmp_path / "bad.bin"
    bad.write_bytes(make_bad(codec, data[y : y + h, x : x + w].tobytes()))
    entries[BAD_KEY] = kb.ChunkSource(bad)
    index = kb.write_index(tmp_path / "index.json", entries, kb.RefStyle("whole", "absolute"))
    return index, bad, data


@pytest.mark.parametrize("case", DETECTABLE)
@pytest.mark.parametrize("codec", ERROR_CODECS)
def test_compressed_chunk_errors(tmp_path, codec, case):
    index, bad, data = compressed_index(tmp_path, ERROR_CODECS[codec], DETECTABLE[case])
    assert_chunk_failure(index, str(bad), data)


def _garble(codec, good):
    """The encoded chunk with everything after its first 16 bytes flipped."""
    encoded = codec.encode(good)
    return encoded[:16] + bytes(b ^ 0x5A for b in encoded[16:])


@pytest.mark.parametrize("codec", ERROR_CODECS)
def test_garbled_stream_does_not_crash(tmp_path, codec):
    """A garbled stream may go undetected by codecs without checksums, so
    the read may fail (naming the chunk) or return some pixels; either way
    the process survives and other chunks read right."""
    index, bad, data = compressed_index(tmp_path, ERROR_CODECS[codec], _garble)
    ds = open_chunkref(index)
    try:
        read_window(ds, BAD_WINDOW)
    except RuntimeError:
        message = failure_text(read_window, ds, BAD_WINDOW)
        assert BAD_KEY in message and str(bad) in message, message
    x, y, w, h = GOOD_WINDOW
    assert_pixels_equal(read_window(ds, GOOD_WINDOW), data[y : y + h, x : x + w], "good")


def test_error_then_good_dataset(raw_store, tmp_path):
    """After a failed read in one dataset, another opens and reads fully."""
    entries, data = raw_store
    good = kb.write_index(tmp_path / "good.json", entries)
    entries[BAD_KEY] = _missing_file_range(tmp_path, entries[BAD_KEY])
    bad = kb.write_index(tmp_path / "bad.json", entries)
    failure_text(open_chunkref(bad).ReadAsArray)
    assert_matches(open_chunkref(good), [data])


def _truncated(text):
    return text[: len(text) // 2]


def _bad_zarray_text(text):
    document = json.loads(text)
    document["refs"]["a/.zarray"] = '{"chunks": [32, 32], "dtype": '
    return json.dumps(document)


def _refs_not_an_object(text):
    return json.dumps({"version": 1, "refs": [1, 2, 3]})


#: Malformed indexes: case -> function(original text) -> broken text.
MALFORMED = {
    "truncated-json": _truncated,
    "invalid-inline-zarray": _bad_zarray_text,
    "refs-not-an-object": _refs_not_an_object,
}

GENERIC_OPEN_FAILURE = "not recognized as a supported file format"


@pytest.mark.parametrize("case", MALFORMED)
def test_malformed_index_fails_to_open(simple_store, tmp_path, case):
    """The driver claims the file and reports the problem itself (GDAL's
    generic "not recognized" message would mean it just gave up)."""
    index = kb.write_index(tmp_path / "index.json", simple_store.entries)
    index.write_text(MALFORMED[case](index.read_text()))
    message = failure_text(open_chunkref, index)
    assert GENERIC_OPEN_FAILURE not in message, message
    good = kb.write_index(tmp_path / "good.json", simple_store.entries)
    assert_matches(open_chunkref(good), [simple_store.data])


def _unknown_compressor(entries):
    entries["a/.zarray"] = {**entries["a/.zarray"], "compressor": {"id": "nosuchcodec42"}}
    return entries


def _unknown_filter(entries):
    entries["a/.zarray"] = {**entries["a/.zarray"], "filters": [{"id": "nosuchcodec42"}]}
    return entries


def _unknown_v3_codec(entries):
    entries = kb.to_zarr_v3(entries)
    meta = entries["a/zarr.json"]
    entries["a/zarr.json"] = {**meta, "codecs": [*meta["codecs"], {"name": "nosuchcodec42"}]}
    return entries


UNKNOWN_CODEC = {
    "v2-compressor": _unknown_compressor,
    "v2-filter": _unknown_filter,
    "v3-codec": _unknown_v3_codec,
}


def open_or_read_failure(index):
    """Message of the failure of opening ``index`` or, if it opens, of
    reading all of it.  An open failure must be the driver's own error."""
    try:
        ds = open_chunkref(index)
    except RuntimeError:
        message = failure_text(open_chunkref, index)
        assert GENERIC_OPEN_FAILURE not in message, message
        return message
    return failure_text(ds.ReadAsArray)


@pytest.mark.parametrize("case", UNKNOWN_CODEC)
def test_unknown_codec_is_named(tmp_path, case):
    """Fails at open or at read time (either is allowed), naming the codec;
    a good index still works afterwards."""
    data = kb.sample_pixels("<u2", (75, 100))
    spec = kb.ArraySpec(data, (32, 32), compressor=numcodecs.GZip())
    store = kb.write_zarr_python(tmp_path / "s.zarr", {"a": spec})
    entries = UNKNOWN_CODEC[case](kb.zarr_store_entries(store))
    index = kb.write_index(tmp_path / "index.json", entries)
    message = open_or_read_failure(index)
    assert "nosuchcodec42" in message, message
    good = kb.write_index(tmp_path / "good.json", kb.zarr_store_entries(store))
    assert_matches(open_chunkref(good), [data])


#: Invalid values for the reference of BAD_KEY; "<chunk>" stands for the
#: path of its (valid) chunk file.
BAD_REF_VALUES = {
    "number": 42,
    "null": None,
    "empty-list": [],
    "object": {"url": "<chunk>"},
    "negative-offset": ["<chunk>", -5, 100],
    "negative-length": ["<chunk>", 0, -1],
    "string-offset": ["<chunk>", "0", "100"],
    "too-many-items": ["<chunk>", 0, 100, 7],
    "url-not-a-string": [7, 0, 100],
    "multirange-not-pairs": ["<chunk>", [[0]]],
    "invalid-base64": "base64:@@ not base64 @@",
}


@pytest.mark.parametrize("case", BAD_REF_VALUES)
def test_invalid_reference_values(raw_store, tmp_path, case):
    """An invalid reference fails the open (with the driver's own error) or
    the read of that chunk (naming its key); nothing crashes, and the other
    chunks or a good index still read."""
    entries, data = raw_store
    chunk = entries[BAD_KEY].path.as_posix()
    index = kb.write_index(tmp_path / "index.json", entries)
    document = json.loads(index.read_text())
    bad = json.dumps(BAD_REF_VALUES[case]).replace('"<chunk>"', json.dumps(chunk))
    document["refs"][BAD_KEY] = json.loads(bad)
    index.write_text(json.dumps(document))
    try:
        ds = open_chunkref(index)
    except RuntimeError:
        assert GENERIC_OPEN_FAILURE not in failure_text(open_chunkref, index)
        assert_matches(open_chunkref(kb.write_index(tmp_path / "good.json", entries)), [data])
    else:
        assert BAD_KEY in failure_text(read_window, ds, BAD_WINDOW)
        x, y, w, h = GOOD_WINDOW
        assert_pixels_equal(read_window(ds, GOOD_WINDOW), data[y : y + h, x : x + w], "good")
