"""Bad input raises a Python exception naming what is wrong (the index, the
chunk, the source file): ``chunkref.InvalidIndexError`` (a ``ValueError``
and an ``OSError``) for malformed indexes and requests,
``chunkref.ChunkrefError`` (an ``OSError``) for what cannot be read or
decoded. Never a crash of the interpreter."""

from __future__ import annotations

import json
import shutil

import pytest

import chunkref


@pytest.fixture
def copy(indexed, tmp_path):
    """A private copy of the tiff-deflate fixture: (source, index document)."""
    root, index = indexed("tiff-deflate")
    shutil.copy(root / "src.tif", tmp_path / "src.tif")
    doc = json.loads(index.read_text())
    text = json.dumps(doc).replace(str(root / "src.tif"), str(tmp_path / "src.tif"))
    (tmp_path / "index.json").write_text(text)
    return tmp_path / "src.tif", tmp_path / "index.json"


def test_missing_index():
    with pytest.raises(chunkref.ChunkrefError, match="no-such-index.json"):
        chunkref.open("/nonexistent/no-such-index.json")


@pytest.mark.parametrize("text", ["{", '{"version": 1, "refs": 5}', "[1, 2]", ""])
def test_malformed_index(text, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(text)
    with pytest.raises((chunkref.InvalidIndexError, chunkref.ChunkrefError)) as e:
        chunkref.open(str(bad))
    assert isinstance(e.value, OSError)
    assert "bad.json" in str(e.value)


def test_invalid_index_error_is_a_value_error(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"version": 1, "refs": {".zgroup": "{\\"zarr_format\\": 2}", '
                   '"a/.zarray": "{\\"shape\\": [-5, 3]}"}}')
    with pytest.raises(chunkref.InvalidIndexError) as e:
        chunkref.open(str(bad))
    assert isinstance(e.value, ValueError) and isinstance(e.value, OSError)


def test_source_file_gone(copy):
    source, index = copy
    ds = chunkref.open(str(index))
    source.unlink()
    with pytest.raises(chunkref.ChunkrefError, match="src.tif"):
        ds.read()


def test_source_cut_short(copy):
    """A chunk past the end of its file names the file and the range."""
    source, index = copy
    ds = chunkref.open(str(index))
    with open(source, "r+b") as f:
        f.truncate(source.stat().st_size // 3)
    with pytest.raises(chunkref.ChunkrefError, match=r"src\.tif.*bytes|bytes.*src\.tif"):
        ds.read()


def test_corrupt_chunk(copy):
    """Garbage where a deflate tile was: a decoding error naming the codec."""
    source, index = copy
    doc = json.loads(index.read_text())
    key, (path, offset, length) = next(
        (k, v) for k, v in doc["refs"].items() if isinstance(v, list) and len(v) == 3)
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(b"\xff" * length)
    ds = chunkref.open(str(index))
    with pytest.raises(chunkref.ChunkrefError) as e:
        ds.read()
    assert "decode" in str(e.value) or "deflate" in str(e.value).lower(), str(e.value)


@pytest.mark.parametrize("call", [
    lambda ds: ds.read(bands=0),
    lambda ds: ds.read(bands=[1, 9]),
    lambda ds: ds.read(level=7),
    lambda ds: ds.read(((0, 10), (0, 10**9))),
    lambda ds: ds.read(((-5, 10), (0, 10))),
])
def test_bad_requests(call, indexed):
    ds = chunkref.open(str(indexed("tiff-deflate")[1]))
    with pytest.raises(ValueError):
        call(ds)


def test_store_of_several_arrays_needs_one(tmp_path):
    """A store of two arrays lists them; reading it asks for one."""
    zarray = {"zarr_format": 2, "shape": [4, 5], "chunks": [4, 5], "dtype": "|u1",
              "compressor": None, "fill_value": 1, "order": "C", "filters": None}
    doc = {"version": 1, "refs": {".zgroup": json.dumps({"zarr_format": 2}),
                                  "a/.zarray": json.dumps(zarray),
                                  "b/.zarray": json.dumps(zarray)}}
    (tmp_path / "two.json").write_text(json.dumps(doc))
    top = chunkref.open(str(tmp_path / "two.json"))
    assert not top.is_raster and len(top.subdatasets) == 2
    with pytest.raises(ValueError, match="subdatasets"):
        top.read()
    assert (chunkref.open(top.subdatasets[1][0]).read() == 1).all()


def test_paths_only_gdal_reads_say_so():
    """GDAL's in-memory and archive file systems need a GDAL build."""
    for name in ["/vsimem/x.json", "/vsizip/archive.zip/x.json"]:
        with pytest.raises(chunkref.ChunkrefError, match="without the `gdal` feature"):
            chunkref.open(name)


def test_hostile_sizes(tmp_path):
    """An index declaring a raster of 10^12 pixels opens; reading it all is
    refused before any allocation, a window of it reads as fill."""
    zarray = {"zarr_format": 2, "shape": [1_000_000, 1_000_000], "chunks": [1000, 1000],
              "dtype": "|u1", "compressor": None, "fill_value": 3, "order": "C",
              "filters": None}
    doc = {"version": 1, "refs": {".zgroup": json.dumps({"zarr_format": 2}),
                                  "big/.zarray": json.dumps(zarray)}}
    (tmp_path / "big.json").write_text(json.dumps(doc))
    ds = chunkref.open(str(tmp_path / "big.json"))
    assert ds.shape == (1, 1_000_000, 1_000_000)
    with pytest.raises(ValueError, match="memory"):
        ds.read()
    assert (ds.read(((5, 7), (999_990, 1_000_000))) == 3).all()
