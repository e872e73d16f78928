"""Every form a Kerchunk ``refs`` value takes, URL styles, templates and
their open-time override, versions 0 and 1, and ``gen`` entries.

The source is :func:`conftest.simple_store` (zarr-python, zlib chunks); the
oracle is the numpy array zarr-python wrote.
"""

from __future__ import annotations

import numcodecs
import pytest

import kerchunk_builders as kb
from raster_checks import assert_matches, failure_text, open_chunkref


@pytest.mark.parametrize("form", kb.FORMS)
def test_reference_forms(simple_store, tmp_path, form):
    index = kb.write_index(tmp_path / "index.json", simple_store.entries, kb.RefStyle(form))
    assert_matches(open_chunkref(index), [simple_store.data], blocks=[(32, 32)])


def test_inline_text_chunks(tmp_path):
    """Raw (uncompressed) chunks whose bytes are ASCII, including NUL and
    other control characters, inlined as plain JSON strings."""
    data = (kb.sample_pixels("|u1", (75, 100)) % 128).astype("u1")
    path = kb.write_zarr_python(tmp_path / "s.zarr", {"a": kb.ArraySpec(data, (32, 32))})
    entries = kb.zarr_store_entries(path)
    index = kb.write_index(tmp_path / "index.json", entries, kb.RefStyle("text"))
    assert "\\u0000" in index.read_text()
    assert_matches(open_chunkref(index), [data])


@pytest.mark.parametrize("index_dir", ["beside", "subdir"])
@pytest.mark.parametrize("form", ["whole", "range", "multirange"])
@pytest.mark.parametrize("url", kb.URL_STYLES)
def test_url_styles(simple_store, tmp_path, url, form, index_dir):
    """Absolute paths, file:// URIs, paths relative to the index (with and
    without ``../``) and ``{{base}}`` templates."""
    parent = simple_store.path.parent if index_dir == "beside" else tmp_path / "indexes" / "deep"
    index = kb.write_index(
        parent / "index.json",
        simple_store.entries,
        kb.RefStyle(form, url),
        template_root=tmp_path,  # the template base holds chunks and blobs
    )
    assert_matches(open_chunkref(index), [simple_store.data])


@pytest.mark.parametrize("escape", ["../", "a/../../", "./../"])
def test_template_urls_may_not_climb_out_of_their_base(simple_store, tmp_path, escape):
    """``{{base}}../x`` would read outside the directory the user pointed
    the template at: refused at open, naming the reference."""
    index = kb.write_index(
        tmp_path / "deep" / "index.json",
        simple_store.entries,
        kb.RefStyle("range", "template"),
        template_root=tmp_path / "deep",
        template_prefix="{{base}}" + escape,
    )
    message = failure_text(open_chunkref, index)
    assert "climbs out of its template base" in message and "{{base}}" + escape in message


@pytest.mark.parametrize("version", [0, 1])
@pytest.mark.parametrize("layout", ["compact", "indented", "sorted_keys"])
def test_versions_and_json_layout(simple_store, tmp_path, version, layout):
    indent = 2 if layout == "indented" else None
    style = kb.RefStyle(version=version, indent=indent, sort_keys=layout == "sorted_keys")
    index = kb.write_index(tmp_path / "index.json", simple_store.entries, style)
    assert_matches(open_chunkref(index), [simple_store.data])


@pytest.mark.parametrize("base", ["/nonexistent/base/", "file:///nonexistent/base/"])
def test_template_override(simple_store, tmp_path, base):
    """A ``base`` written into the index that points nowhere; the open option
    ``TEMPLATE_base`` makes it right."""
    index = kb.write_index(
        tmp_path / "index.json",
        simple_store.entries,
        kb.RefStyle(url="template"),
        templates={"base": base},
        template_root=tmp_path,
    )
    good = open_chunkref(index, [f"TEMPLATE_base={tmp_path.as_posix()}/"])
    assert_matches(good, [simple_store.data])
    with pytest.raises(RuntimeError):
        open_chunkref(index).ReadAsArray()


def test_portable_empty_base_is_relative_to_the_index(simple_store, tmp_path):
    """``"templates": {"base": ""}`` as osml-imagery-io writes portable
    indexes: ``{{base}}name`` is a path relative to the index."""
    index = kb.write_index(
        simple_store.path.parent / "index.json",
        simple_store.entries,
        kb.RefStyle(url="template"),
        templates={"base": ""},
    )
    assert_matches(open_chunkref(index), [simple_store.data])


def test_several_templates(simple_store, tmp_path):
    """Two template names in one URL, one of them overridden at open time."""
    index = kb.write_index(
        tmp_path / "index.json",
        simple_store.entries,
        kb.RefStyle("whole", "template"),
        templates={"top": "/wrong", "store": simple_store.path.name},
        template_root=simple_store.path,
        template_prefix="{{top}}/{{store}}/",
    )
    assert '"{{top}}/{{store}}/a/0.0"' in index.read_text()
    ds = open_chunkref(index, [f"TEMPLATE_top={simple_store.path.parent.as_posix()}"])
    assert_matches(ds, [simple_store.data])


@pytest.mark.parametrize("url", ["absolute", "template"])
@pytest.mark.parametrize("separator", [".", "/"])
@pytest.mark.parametrize("mode", ["ranges", "files"])
def test_gen(tmp_path, mode, separator, url):
    """Chunk references generated by a ``gen`` entry: arithmetic offsets into
    one strided blob, or a URL pattern per chunk file."""
    data = kb.sample_pixels("<i4", (75, 100))
    spec = kb.ArraySpec(data, (32, 32), dimension_separator=separator)
    path = kb.write_zarr_python(tmp_path / "s.zarr", {"a": spec})
    index = tmp_path / "index.json"
    entries, gen = kb.move_chunks_to_gen(
        kb.zarr_store_entries(path), "a", index, mode=mode, url_style=url
    )
    kb.write_index(index, entries, kb.RefStyle(url=url), gen=gen)
    assert_matches(open_chunkref(index), [data])


def test_gen_and_refs_together(tmp_path):
    """Metadata in ``refs``, the chunks of one array from ``gen``, those of
    another array in ``refs`` (the two arrays give subdatasets)."""
    a = kb.sample_pixels("<i2", (75, 100), seed=1)
    b = kb.sample_pixels("<f4", (75, 100), seed=2)
    path = kb.write_zarr_python(
        tmp_path / "s.zarr",
        {
            "a": kb.ArraySpec(a, (32, 32)),
            "b": kb.ArraySpec(b, (32, 32), compressor=numcodecs.Zlib()),
        },
    )
    index = tmp_path / "index.json"
    entries, gen = kb.move_chunks_to_gen(kb.zarr_store_entries(path), "a", index)
    kb.write_index(index, entries, kb.RefStyle("packed"), gen=gen)
    for name, expected in (("a", a), ("b", b)):
        assert_matches(open_chunkref(f'CHUNKREF:"{index}":{name}'), [expected])


def test_offsets_beyond_4_gib(simple_store, tmp_path):
    """Byte ranges at offsets that do not fit in 32 bits (a sparse file)."""
    big = tmp_path / "sparse.bin"
    entries = {}
    with open(big, "wb") as f:
        for n, (key, value) in enumerate(simple_store.entries.items()):
            if isinstance(value, dict):
                entries[key] = value
                continue
            data = value.read()
            offset = (5 << 30) + n * 100_003
            f.seek(offset)
            f.write(data)
            entries[key] = kb.ChunkSource(big, offset, len(data))
    index = kb.write_index(tmp_path / "index.json", entries, kb.RefStyle("range"))
    assert_matches(open_chunkref(index), [simple_store.data])


@pytest.mark.parametrize("url", kb.URL_STYLES)
def test_paths_with_spaces_and_non_ascii(tmp_path, url):
    """Directory and file names with spaces and non-ASCII letters, in every
    URL style (file:// URIs percent-encode them), opened by plain path and
    through the CHUNKREF: prefix."""
    data = kb.sample_pixels("<i2", (75, 100))
    root = tmp_path / "dir with spaces ü"
    store = kb.write_zarr_python(root / "src é.zarr", {"a": kb.ArraySpec(data, (32, 32))})
    index = kb.write_index(
        root / "index ñ.json", kb.zarr_store_entries(store), kb.RefStyle("range", url)
    )
    for name in (index, f"CHUNKREF:{index}"):
        assert_matches(open_chunkref(name), [data])
