"""Self-checks of kerchunk_builders, independent of the ChunkRef driver.

Indexes are read back with fsspec's ReferenceFileSystem + zarr-python (the
reference implementation of Kerchunk), so a failure in the end-to-end tests
points at the driver, not at the fixtures.  fsspec does not know the
multi-range extension or Zarr v3 (zarr-python 2.x), so those are checked
by resolving ranges / decoding chunks here.
"""

from __future__ import annotations

import base64
import inspect
import json
from pathlib import Path

import numcodecs
import numpy as np
import pytest
import zarr
from osgeo import gdal

import kerchunk_builders as kb
from raster_checks import assert_pixels_equal, native_levels

fsspec = pytest.importorskip("fsspec")

pytestmark = pytest.mark.builders_only


def _reference_options() -> dict:
    """fsspec from 2023 renders templates with str.format unless told
    otherwise, and from 2025 then expands no ``gen`` entries (Debian 13 and
    unstable): ask for Jinja where there is the choice."""
    from fsspec.implementations.reference import ReferenceFileSystem

    parameters = inspect.signature(ReferenceFileSystem.__init__).parameters
    return {"simple_templates": False} if "simple_templates" in parameters else {}


def reference_store(index: Path, path: str, template_overrides=None):
    """The node ``path`` of a Kerchunk index as zarr-python opens it
    through fsspec's ReferenceFileSystem: a mapper for zarr-python 2, an
    ``FsspecStore`` over the asynchronous file system for zarr-python 3
    (3.0 takes no mapper)."""
    options = dict(fo=str(index), remote_protocol="file", template_overrides=template_overrides,
                   **_reference_options())
    if kb.ZARR_PYTHON_3:
        from zarr.storage import FsspecStore

        fs = fsspec.filesystem("reference", asynchronous=True, skip_instance_cache=True, **options)
        return FsspecStore(fs=fs, read_only=True, path=path)
    return fsspec.filesystem("reference", **options).get_mapper(path)


def read_with_fsspec(index: Path, array: str, template_overrides=None) -> np.ndarray:
    """Read ``array`` of a Kerchunk index with fsspec + zarr-python."""
    return zarr.open_array(reference_store(index, array, template_overrides), mode="r")[...]


def local_path(url: str, index: Path, templates: dict) -> Path:
    """The file a URL of any :data:`kb.URL_STYLES` style names."""
    for name, value in templates.items():
        url = url.replace("{{%s}}" % name, value)
    url = url.removeprefix("file://")
    return index.parent / url  # an absolute url replaces the directory


def inline_multiranges(index: Path) -> Path:
    """Rewrite the multi-range refs of an index as base64 (fetch every range,
    concatenate in order), so that fsspec can read the result."""
    document = json.loads(index.read_text())
    refs = document.get("refs", document)
    for key, value in refs.items():
        if isinstance(value, list) and len(value) == 2 and isinstance(value[1], list):
            path = local_path(value[0], index, document.get("templates", {}))
            data = b"".join(kb.ChunkSource(path, o, n).read() for o, n in value[1])
            refs[key] = "base64:" + base64.b64encode(data).decode()
    out = index.with_name("inlined.json")
    out.write_text(json.dumps(document))
    return out


@pytest.fixture
def store(tmp_path: Path) -> tuple[Path, np.ndarray]:
    """A zarr-python store with one zlib-compressed u2 array ``a``."""
    data = kb.sample_pixels("<u2", (75, 100))
    spec = kb.ArraySpec(data, (32, 32), compressor=numcodecs.Zlib(level=1))
    return kb.write_zarr_python(tmp_path / "src.zarr", {"a": spec}), data


@pytest.mark.parametrize("url", kb.URL_STYLES)
@pytest.mark.parametrize("form", kb.FORMS)
def test_forms_and_urls(store, tmp_path, monkeypatch, form, url):
    path, data = store
    entries = kb.zarr_store_entries(path)
    index = kb.write_index(tmp_path / "idx" / "index.json", entries, kb.RefStyle(form, url))
    if url == "relative":
        monkeypatch.chdir(index.parent)  # fsspec resolves relative URLs against the cwd
    if form.startswith("multirange"):
        index = inline_multiranges(index)
    assert_pixels_equal(read_with_fsspec(index, "a"), data, f"{form}/{url}")


def test_text_form_inlines_ascii_chunks(tmp_path):
    data = (kb.sample_pixels("|u1", (75, 100)) % 128).astype("u1")
    path = kb.write_zarr_python(tmp_path / "s.zarr", {"a": kb.ArraySpec(data, (32, 32))})
    index = kb.write_index(tmp_path / "i.json", kb.zarr_store_entries(path), kb.RefStyle("text"))
    refs = json.loads(index.read_text())["refs"]
    assert not any(v.startswith("base64:") for v in refs.values())
    assert_pixels_equal(read_with_fsspec(index, "a"), data, "text")


def test_version_0_is_bare_refs(store, tmp_path):
    path, data = store
    entries = kb.zarr_store_entries(path)
    index = kb.write_index(tmp_path / "i.json", entries, kb.RefStyle(version=0))
    document = json.loads(index.read_text())
    assert "version" not in document and next(iter(document)) == ".zgroup"
    assert_pixels_equal(read_with_fsspec(index, "a"), data, "v0")


def test_template_needs_override(store, tmp_path):
    path, data = store
    index = kb.write_index(
        tmp_path / "i.json",
        kb.zarr_store_entries(path),
        kb.RefStyle(url="template"),
        templates={"base": "/nonexistent/"},
        template_root=tmp_path,
    )
    overrides = {"base": tmp_path.as_posix() + "/"}
    assert_pixels_equal(read_with_fsspec(index, "a", overrides), data, "override")
    with pytest.raises(Exception):
        read_with_fsspec(index, "a")


@pytest.mark.parametrize("mode", ["ranges", "files"])
@pytest.mark.parametrize("separator", [".", "/"])
def test_gen(tmp_path, mode, separator):
    data = kb.sample_pixels("<i4", (75, 100))
    spec = kb.ArraySpec(data, (32, 32), dimension_separator=separator)
    path = kb.write_zarr_python(tmp_path / "s.zarr", {"a": spec})
    index = tmp_path / "i.json"
    entries, gen = kb.move_chunks_to_gen(kb.zarr_store_entries(path), "a", index, mode=mode)
    assert not any(k.startswith("a/") and not kb.is_metadata_key(k) for k in entries)
    kb.write_index(index, entries, gen=gen)
    assert_pixels_equal(read_with_fsspec(index, "a"), data, f"gen {mode}")


@pytest.mark.parametrize("compress", ["NONE", "DEFLATE"])
@pytest.mark.parametrize("bands", [1, 3])
@pytest.mark.parametrize("endianness", ["LITTLE", "BIG"])
def test_gtiff_multiscale(tmp_path, bands, endianness, compress):
    data = kb.sample_pixels("<i2", (bands, 150, 200))
    tif = kb.write_tiled_gtiff(tmp_path / "t.tif", data, endianness=endianness, compress=compress)
    index = kb.write_index(tmp_path / "i.json", kb.gtiff_multiscale_entries(tif))
    expected = native_levels(gdal.Open(str(tif)))
    assert len(expected) == 3
    attrs = read_with_fsspec_group_attrs(index)
    assert [lvl["asset"] for lvl in attrs["multiscales"]["layout"]] == ["0", "1", "2"]
    for level, pixels in enumerate(expected):
        assert_pixels_equal(read_with_fsspec(index, f"{level}/data"), pixels, f"level {level}")


def read_with_fsspec_group_attrs(index: Path) -> dict:
    """The root group attributes of a Kerchunk index, through zarr-python."""
    return dict(zarr.open_group(reference_store(index, ""), mode="r").attrs)


def test_gtiff_pixel_interleaved_multiband_is_refused(tmp_path):
    data = kb.sample_pixels("|u1", (3, 40, 40))
    tif = kb.write_tiled_gtiff(tmp_path / "t.tif", data, interleave="PIXEL")
    with pytest.raises(ValueError):
        kb.gtiff_multiscale_entries(tif)


V3_CODECS = {
    "gzip": lambda c: numcodecs.GZip(c.get("level", 5)),
    "zstd": lambda c: numcodecs.Zstd(c.get("level", 0)),
    "blosc": lambda c: numcodecs.Blosc(),  # blosc frames describe themselves
}


def decode_v3(entries: dict, array: str) -> np.ndarray:
    """Decode a v3 array from builder entries (bytes codec + one
    compressor), for checking :func:`kb.to_zarr_v3`."""
    meta = entries[f"{array}/zarr.json"]
    names = {v: k for k, v in kb.V3_DATA_TYPE_BY_CODE.items()}
    code = names[meta["data_type"]]
    endian = meta["codecs"][0].get("configuration", {}).get("endian", "little")
    dtype = np.dtype(("<" if endian == "little" else ">") + code)
    chunks = meta["chunk_grid"]["configuration"]["chunk_shape"]
    separator = meta["chunk_key_encoding"]["configuration"]["separator"]
    out = np.full(meta["shape"], meta["fill_value"], dtype=dtype)
    for index in kb.all_chunk_indices(meta["shape"], chunks):
        key = f"{array}/" + separator.join(["c", *map(str, index)])
        raw = entries[key].read()
        for codec in reversed(meta["codecs"][1:]):
            raw = V3_CODECS[codec["name"]](codec.get("configuration", {})).decode(raw)
        chunk = np.frombuffer(raw, dtype=dtype).reshape(chunks)
        region = kb.chunk_region(meta["shape"], chunks, index)
        out[region] = chunk[tuple(slice(0, s.stop - s.start) for s in region)]
    return out


@pytest.mark.parametrize("separator", [".", "/"])
@pytest.mark.parametrize(
    "compressor",
    [
        None,
        numcodecs.GZip(5),
        numcodecs.Zstd(3),
        numcodecs.Blosc("zstd", 5, numcodecs.Blosc.BITSHUFFLE),
    ],
    ids=["raw", "gzip", "zstd", "blosc"],
)
@pytest.mark.parametrize("dtype", [">f8", "<i2", "|i1"])
def test_to_zarr_v3(tmp_path, separator, compressor, dtype):
    data = kb.sample_pixels(dtype, (2, 75, 100))
    dims = {"_ARRAY_DIMENSIONS": ["t", "y", "x"]}
    spec = kb.ArraySpec(data, (1, 32, 32), compressor=compressor, attrs=dims)
    path = kb.write_zarr_python(tmp_path / "s.zarr", {"g/a": spec})
    entries = kb.to_zarr_v3(kb.zarr_store_entries(path), separator)
    assert entries["zarr.json"]["node_type"] == "group"
    assert entries["g/zarr.json"]["node_type"] == "group"
    assert entries["g/a/zarr.json"]["dimension_names"] == ["t", "y", "x"]
    assert f"g/a/c{separator}1{separator}2{separator}3" in entries
    assert not any(k.endswith((".zarray", ".zattrs", ".zgroup")) for k in entries)
    assert_pixels_equal(decode_v3(entries, "g/a"), data, "v3")


def test_sample_pixels_has_extremes():
    for dtype in kb.all_dtypes():
        values = kb.sample_pixels(dtype, (2, 40, 50))
        assert values.dtype == np.dtype(dtype)
        if values.dtype.kind == "f":
            assert np.isnan(values).any() and np.isinf(values).any()
        else:
            info = np.iinfo(values.dtype)
            assert values.min() == info.min and values.max() == info.max
