"""``chunkref convert`` keeps a templated store as it is.

One Kerchunk JSON index over a zarr-python store holds every part a
conversion could lose: ``templates`` (every URL starts with ``{{base}}``), a
``gen`` entry (array ``b``), a multi-range reference, an inline chunk and a
chunk never written (array ``a``).  It is converted to every form; the data
directory is then moved, and each converted index must read the moved files
with ``-oo TEMPLATE_base=<new place>`` as zarr-python reads the store (and
fail without it), and round trips must give back the same references.
"""

from __future__ import annotations

import base64
import json
import re
import shutil
from pathlib import Path

import numcodecs
import numpy as np
import pytest

import kerchunk_builders as kb
from conftest import run_chunkref
from raster_checks import assert_pixels_equal, failure_text, open_chunkref

#: The forms ``chunkref convert`` writes.
FORMS = [".json", ".parquet", ".fgb"]
#: The chunk of ``a`` left unwritten, the inline one and the multi-range one.
UNWRITTEN, INLINE, MULTI = (1, 2), (0, 1), (2, 0)


def convert(binary: Path, src: Path, dst: Path) -> str:
    """``chunkref convert src dst``; it must succeed.  Returns stderr."""
    done = run_chunkref(binary, "convert", src, dst)
    assert done.returncode == 0, f"convert {src.name} -> {dst.name}:\n{done.stderr}{done.stdout}"
    return done.stderr


@pytest.fixture
def templated(tmp_path: Path) -> tuple[Path, dict]:
    """data/index.json over data/store.zarr, every URL ``{{base}}...`` with
    ``base`` = data/; returns the index and the pixels of ``a`` and ``b``."""
    data = tmp_path / "data"
    a = kb.sample_pixels("<u2", (75, 100))
    b = kb.sample_pixels("<i4", (40, 48), seed=3)
    kb.write_zarr_python(data / "store.zarr", {
        "a": kb.ArraySpec(a, (32, 32), compressor=numcodecs.Zlib(level=1)),
        "b": kb.ArraySpec(b, (16, 16)),
    })
    entries = kb.zarr_store_entries(data / "store.zarr")
    index = data / "index.json"
    entries, gen = kb.move_chunks_to_gen(entries, "b", index, url_style="template")
    entries = kb.drop_chunks(entries, "a", [UNWRITTEN])
    kb.write_index(index, entries, kb.RefStyle(url="template"), template_root=data, gen=gen)
    doc = json.loads(index.read_text())
    refs = doc["refs"]
    inline_key, multi_key = (f"a/{i}.{j}" for i, j in (INLINE, MULTI))
    chunk = entries[inline_key]
    refs[inline_key] = "base64:" + base64.b64encode(chunk.read()).decode()
    url, offset, length = refs[multi_key]
    refs[multi_key] = [url, [[offset, 5], [offset + 5, length - 5]]]
    index.write_text(json.dumps(doc))
    expected_a = kb.fill_chunks(a, (32, 32), [UNWRITTEN], 0)
    return index, {"a": expected_a, "b": b}


def read_array(index: Path, array: str, options=()) -> np.ndarray:
    """Array ``array`` of ``index`` as ChunkRef reads it."""
    ds = open_chunkref(f'CHUNKREF:"{index}":{array}', options)
    return ds.GetRasterBand(1).ReadAsArray()


def expanded_refs(path: Path) -> dict:
    """The references of a Kerchunk JSON index, its ``gen`` entries expanded
    (the arithmetic templates evaluated) and metadata documents parsed;
    ``{{base}}`` and the other templates left as they are."""
    doc = json.loads(path.read_text())
    refs = {
        k: json.loads(v) if isinstance(v, str) and not v.startswith("base64:") else v
        for k, v in doc["refs"].items()
    }
    for g in doc.get("gen", []):
        dims = {n: range(d.get("start", 0), d["stop"], d.get("step", 1)) if isinstance(d, dict)
                else d for n, d in g["dimensions"].items()}
        names = list(dims)
        for values in np.ndindex(*(len(dims[n]) for n in names)):
            env = {n: dims[n][i] for n, i in zip(names, values)}

            def render(text: str) -> str:
                return re.sub(r"\{\{(.*?)\}\}",
                              lambda m: str(eval(m[1], {}, env)) if m[1].strip() in env
                              or not m[1].strip().isidentifier() else m[0], text)

            url = re.sub(r"\{\{\s*(\w+)\s*\}\}", r"{{\1}}", render(g["url"]))
            value = [url, int(render(g["offset"])), int(render(g["length"]))] \
                if "offset" in g else [url]
            refs[render(g["key"])] = value
    return refs


def test_convert_keeps_templates_in_every_form(tmp_path, chunkref_bin, templated):
    index, expected = templated
    out = tmp_path / "out"
    converted = [out / f"index{form}" for form in FORMS]
    for dst in converted:
        convert(chunkref_bin, index, dst)
    table_back = [out / "back.parquet.json", out / "back.fgb.json"]
    for src, dst in zip(converted[1:], table_back):
        convert(chunkref_bin, src, dst)
    moved = Path(shutil.move(str(index.parent), str(tmp_path / "moved")))
    relocate = [f"TEMPLATE_base={moved}/"]
    for path in [*converted, *table_back]:
        for name, pixels in expected.items():
            assert_pixels_equal(read_array(path, name, relocate), pixels, f"{path.name}:{name}")
        message = failure_text(read_array, path, "a")
        assert "data/store.zarr" in message, f"{path.name} reads its old place: {message}"


def test_round_trips_keep_the_references(tmp_path, chunkref_bin, templated):
    index, _ = templated
    original = json.loads(index.read_text())
    same = tmp_path / "same.json"
    convert(chunkref_bin, index, same)
    again = json.loads(same.read_text())
    assert again["templates"] == original["templates"]
    assert again["gen"] == original["gen"], "JSON to JSON keeps gen entries as they are"
    assert expanded_refs(same) == expanded_refs(index)
    for form in [".parquet", ".fgb"]:
        table, back, table2 = (tmp_path / f"t{form}", tmp_path / f"b{form}.json",
                               tmp_path / f"t2{form}")
        stderr = convert(chunkref_bin, index, table)
        assert "'gen' entries are written as the references they generate" in stderr
        convert(chunkref_bin, table, back)
        convert(chunkref_bin, back, table2)
        doc = json.loads(back.read_text())
        assert doc["templates"] == original["templates"]
        assert "gen" not in doc
        assert expanded_refs(back) == expanded_refs(index), form
        assert all(v[0].startswith("{{base}}") for v in doc["refs"].values()
                   if isinstance(v, list)), "URLs keep their placeholder"
        assert table2.read_bytes() == table.read_bytes(), form
