"""Chunk-reference tables (docs/reference-table.md) in Parquet.

GDAL-written TIFFs are indexed straight to ``.parquet`` and converted
between Kerchunk JSON and Parquet with ``chunkref convert``; ChunkRef must
read every form pixel for pixel like GDAL's GTiff driver, the conversions
must keep every reference and metadata document, pyarrow, DuckDB and polars
must read the table as an ordinary one (the examples of
docs/reference-table.md, run as written), and malformed tables (written with
pyarrow) must fail with a message naming what is wrong.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from osgeo import gdal

from conftest import REPO_ROOT, run_chunkref
from raster_checks import assert_matches, failure_text, native_levels, open_chunkref
from test_tiff_index import TIFF_CASES, assert_same_as_gdal, gdal_blocks, index_tiff, write_tiff
from venvs import ensure_venv

#: Sources covering chunky, planar, striped, masked and big-endian layouts.
TABLE_CASES = [
    "cog-deflate-pred2-3band",
    "gtiff-planar-u2-deflate-pred2",
    "gtiff-strips7-lzw-3band",
    "gtiff-mask-deflate-3band",
    "gtiff-bigendian-f4-lzw-pred3",
]

#: Python packages the table tests run in their venv.
TABLE_REQUIREMENTS = ["pyarrow", "kerchunk", "fastparquet", "duckdb", "polars"]


@pytest.fixture(scope="session")
def table_python() -> Path:
    """A python with pyarrow, kerchunk, fastparquet, duckdb and polars
    (skips only when PyPI is unreachable)."""
    return ensure_venv(
        REPO_ROOT / "build" / "table-venv",
        TABLE_REQUIREMENTS,
        "import pyarrow, kerchunk, fastparquet, duckdb, polars",
        "pyarrow, kerchunk, fastparquet, duckdb and polars",
    )


def run_python(python: Path, script: str, *args: str | Path, cwd: Path | None = None) -> str:
    """Run ``script`` with ``python`` (in ``cwd``); it must succeed.  Returns stdout."""
    done = subprocess.run(
        [str(python), "-c", script, *map(str, args)],
        capture_output=True, text=True, timeout=300, cwd=cwd,
    )
    assert done.returncode == 0, f"script failed:\n{done.stderr}{done.stdout}"
    return done.stdout


def convert(binary: Path, src: Path, dst: Path) -> None:
    """``chunkref convert src dst``; it must succeed."""
    done = run_chunkref(binary, "convert", src, dst)
    assert done.returncode == 0, f"convert {src.name} -> {dst.name}:\n{done.stderr}{done.stdout}"


def parsed_refs(path: Path) -> dict:
    """The refs of a Kerchunk JSON index with metadata documents parsed."""
    refs = json.loads(path.read_text())["refs"]
    return {
        k: json.loads(v) if isinstance(v, str) and not v.startswith("base64:") else v
        for k, v in refs.items()
    }


@pytest.mark.parametrize("name", TABLE_CASES)
def test_parquet_index_reads_like_gdal(tmp_path, chunkref_bin, name):
    case = TIFF_CASES[name]
    tif = write_tiff(tmp_path / f"{name}.tif", case)
    table = tmp_path / f"{name}.parquet"
    done = run_chunkref(chunkref_bin, "index", tif, "-o", table)
    assert done.returncode == 0, f"{done.stderr}{done.stdout}"
    assert table.read_bytes()[:4] == b"PAR1"
    ds = gdal.Open(str(table))
    assert ds.GetDriver().ShortName == "ChunkRef", "identified by its first bytes"
    ds = None
    assert_same_as_gdal(table, tif, case.tolerance, name)


@pytest.mark.parametrize("name", TABLE_CASES[:3])
def test_json_parquet_json_round_trip_is_lossless(tmp_path, chunkref_bin, name):
    tif = write_tiff(tmp_path / f"{name}.tif", TIFF_CASES[name])
    original = tmp_path / "index.json"
    index_tiff(chunkref_bin, tif, original)
    convert(chunkref_bin, original, tmp_path / "via.parquet")
    convert(chunkref_bin, tmp_path / "via.parquet", tmp_path / "back.json")
    convert(chunkref_bin, tmp_path / "back.json", tmp_path / "again.parquet")
    assert parsed_refs(tmp_path / "back.json") == parsed_refs(original)
    assert (tmp_path / "again.parquet").read_bytes() == (tmp_path / "via.parquet").read_bytes()
    native = gdal.Open(str(tif))
    expected, blocks = native_levels(native), gdal_blocks(native)
    for form in ["via.parquet", "back.json"]:
        assert_matches(open_chunkref(tmp_path / form), expected, blocks)


def test_template_base_table_moves_with_its_tiff(tmp_path, chunkref_bin):
    here = tmp_path / "here"
    here.mkdir()
    tif = write_tiff(here / "img.tif", TIFF_CASES["cog-lzw-1band"])
    done = run_chunkref(chunkref_bin, "index", "--template-base", tif, "-o", here / "img.parquet")
    assert done.returncode == 0, done.stderr
    native = gdal.Open(str(tif))
    expected, blocks = native_levels(native), gdal_blocks(native)
    native = None
    moved = Path(shutil.move(str(here), str(tmp_path / "elsewhere")))
    assert_matches(open_chunkref(moved / "img.parquet"), expected, blocks)


READ_WITH_PYARROW = """
import json, sys
import pyarrow.parquet as pq
table = pq.read_table(sys.argv[1])
doc = json.loads(pq.read_schema(sys.argv[1]).metadata[b"chunkref"])
print(json.dumps({
    "schema": {f.name: str(f.type) for f in table.schema},
    "rows": table.to_pylist(),
    "files": [f["path"] for f in doc["files"]],
    "arrays": [a["path"] for a in doc["arrays"]],
}))
"""


def test_pyarrow_reads_the_table_unchanged(tmp_path, chunkref_bin, table_python):
    tif = write_tiff(tmp_path / "img.tif", TIFF_CASES["gtiff-mask-deflate-3band"])
    index_tiff(chunkref_bin, tif, tmp_path / "img.json")
    convert(chunkref_bin, tmp_path / "img.json", tmp_path / "img.parquet")
    got = json.loads(run_python(table_python, READ_WITH_PYARROW, tmp_path / "img.parquet"))
    assert got["schema"] == {
        "array": "uint16", "time": "uint32", "band": "uint32", "y_chunk": "uint32",
        "x_chunk": "uint32", "file": "uint32", "offset": "uint64", "length": "uint64",
        "part": "uint16",
    }
    refs = json.loads((tmp_path / "img.json").read_text())["refs"]
    expected = {k: v for k, v in refs.items() if isinstance(v, list)}
    from_table = {}
    for row in got["rows"]:
        array = got["arrays"][row["array"]]
        key = f"{array}/{row['band']}.{row['y_chunk']}.{row['x_chunk']}"
        from_table[key] = [got["files"][row["file"]], row["offset"], row["length"]]
    assert from_table == expected


def doc_examples(language: str) -> list[str]:
    """The ``language`` code blocks of the "Reading it elsewhere" section of
    docs/reference-table.md."""
    text = (REPO_ROOT / "docs" / "reference-table.md").read_text()
    section = text[text.index("## Reading it elsewhere"):]
    return re.findall(rf"```{language}\n(.*?)```", section, re.S)


#: Runs the documentation's examples (argv: the SQL block, the pyarrow
#: block, the polars block) in a directory holding collection.parquet.
RUN_DOC_EXAMPLES = """
import json, sys
import duckdb
sql, pyarrow_example, polars_example = sys.argv[1:4]
tile_query, doc_query = [s for s in sql.split(";") if s.strip()]
found = {}
exec(pyarrow_example, found)
exec(polars_example, found)
import pyarrow.parquet as pq
meta = pq.ParquetFile("collection.parquet").metadata
print(json.dumps({
    "min_max_everywhere": all(
        meta.row_group(g).column(c).statistics is not None
        and meta.row_group(g).column(c).statistics.has_min_max
        for g in range(meta.num_row_groups) for c in range(meta.num_columns)
    ),
    "duckdb_tile": duckdb.sql(tile_query).fetchall(),
    "duckdb_doc": json.loads(duckdb.sql(doc_query).fetchall()[0][0]),
    "pyarrow_doc": found["doc"],
    "paths": found["paths"],
    "pyarrow_rows": found["t"].to_pylist(),
    "polars_rows": found["rows"].to_dicts(),
}))
"""


def kerchunk_refs(rows: list[dict], doc: dict) -> dict:
    """Kerchunk JSON references (key -> [url, offset, length]) of table rows
    of single-range chunks in time stacks of one band group."""
    refs = {}
    for row in rows:
        assert row["part"] == 0 and row["length"] is not None, row
        array = doc["arrays"][row["array"]]["path"]
        key = f"{array}/{row['time']}.{row['band']}.{row['y_chunk']}.{row['x_chunk']}"
        refs[key] = [doc["files"][row["file"]]["path"], row["offset"], row["length"]]
    return refs


def test_documented_examples_read_the_table_elsewhere(tmp_path, chunkref_bin, table_python):
    """pyarrow, DuckDB and polars run the examples of the documentation on a
    time stack of 11 steps (32 x 32 chunks each) unchanged and find the
    references the Kerchunk JSON of the same stack holds."""
    mem = gdal.GetDriverByName("MEM").Create("", 512, 512, 1, gdal.GDT_Int16)
    mem.GetRasterBand(1).WriteArray((np.arange(512 * 512).reshape(512, 512) % 7919).astype("int16"))
    base = tmp_path / "base.tif"
    gdal.Translate(str(base), mem, options="-co TILED=YES -co BLOCKXSIZE=16 -co BLOCKYSIZE=16 -co COMPRESS=DEFLATE")
    steps = []
    for t in range(11):
        steps.append(tmp_path / f"step_{t:02}.tif")
        os.link(base, steps[-1])
    done = run_chunkref(chunkref_bin, "index", *steps, "-o", tmp_path / "collection.parquet")
    assert done.returncode == 0, done.stderr
    convert(chunkref_bin, tmp_path / "collection.parquet", tmp_path / "collection.json")
    refs = json.loads((tmp_path / "collection.json").read_text())["refs"]
    expected = {k: v for k, v in refs.items() if isinstance(v, list)}
    assert len(expected) == 11 * 32 * 32

    (sql,) = doc_examples("sql")
    pyarrow_example, polars_example = doc_examples("python")
    got = json.loads(run_python(
        table_python, RUN_DOC_EXAMPLES, sql, pyarrow_example, polars_example, cwd=tmp_path
    ))
    doc = got["pyarrow_doc"]
    assert got["min_max_everywhere"], "every column chunk has min/max statistics"
    assert got["duckdb_doc"] == doc
    assert got["paths"] == [str(s) for s in steps]
    assert kerchunk_refs(got["pyarrow_rows"], doc) == expected
    step_10 = {k: v for k, v in expected.items() if k.startswith("0/data/10.")}
    assert kerchunk_refs(got["polars_rows"], doc) == step_10
    assert [[doc["files"][f]["path"], o, n] for f, o, n in got["duckdb_tile"]] == [
        expected["0/data/10.0.25.30"]
    ]


#: pyarrow script: rewrite argv[1] into argv[2] after applying argv[3].
BREAK_TABLE = """
import json, sys
import pyarrow as pa, pyarrow.compute as pc, pyarrow.parquet as pq
src, dst, how = sys.argv[1:4]
table = pq.read_table(src)
meta = table.schema.metadata
if how == "drop-offset":
    table = table.drop_columns(["offset"])
elif how == "string-offset":
    table = table.set_column(6, "offset", pc.cast(table["offset"], pa.string()))
elif how == "past-grid":
    table = table.set_column(3, "y_chunk", pc.add(table["y_chunk"], pa.scalar(1000, pa.uint32())))
elif how == "bad-file":
    table = table.set_column(5, "file", pc.add(table["file"], pa.scalar(5, pa.uint32())))
elif how == "no-metadata":
    meta = {}
elif how == "bad-json":
    meta = {b"chunkref": b"{not json"}
pq.write_table(table.replace_schema_metadata(meta), dst)
"""

BROKEN = {
    "drop-offset": "missing column 'offset'",
    "string-offset": "column 'offset' is BYTE_ARRAY, expected a flat INT64 column",
    "past-grid": "outside the chunk grid of '0/data'",
    "bad-file": "file 5 does not exist (the file table has 1 entries)",
    "no-metadata": "no 'chunkref' entry in the Parquet key-value metadata",
    "bad-json": "the 'chunkref' metadata document",
}


@pytest.mark.parametrize("how", list(BROKEN))
def test_malformed_tables_fail_clearly(tmp_path, chunkref_bin, table_python, how):
    tif = write_tiff(tmp_path / "img.tif", TIFF_CASES["cog-lzw-1band"])
    good = tmp_path / "good.parquet"
    assert run_chunkref(chunkref_bin, "index", tif, "-o", good).returncode == 0
    bad = tmp_path / f"{how}.parquet"
    run_python(table_python, BREAK_TABLE, good, bad, how)
    message = failure_text(gdal.OpenEx, str(bad), gdal.OF_RASTER, allowed_drivers=["ChunkRef"])
    assert BROKEN[how] in message and str(bad) in message, message
    done = run_chunkref(chunkref_bin, "convert", bad, tmp_path / "out.json")
    assert done.returncode != 0 and BROKEN[how] in done.stderr, done.stderr


# --------------------------------------------------------------------------
# Kerchunk Parquet (formats.md section 3)
# --------------------------------------------------------------------------

#: argv: INDEX.json OUT.parq RECORD_SIZE.  kerchunk's own Parquet writer.
KERCHUNK_TO_PARQUET = """
import json, sys
import kerchunk.df
refs = json.load(open(sys.argv[1]))
kerchunk.df.refs_to_dataframe(refs, sys.argv[2], record_size=int(sys.argv[3]))
"""


def kerchunk_parquet(tmp_path: Path, chunkref_bin: Path, python: Path) -> tuple[Path, Path, Path]:
    """A masked 3-band TIFF, its chunkref JSON index, and the same index
    written by kerchunk as Parquet with 5 references per record file (so
    arrays span several files and the last one is padded)."""
    tif = write_tiff(tmp_path / "img.tif", TIFF_CASES["gtiff-mask-deflate-3band"])
    index = tmp_path / "img.json"
    index_tiff(chunkref_bin, tif, index)
    store = tmp_path / "img.parq"
    run_python(python, KERCHUNK_TO_PARQUET, index, store, "5")
    assert len(list(store.glob("0/data/refs.*.parq"))) > 1, "several record files"
    return tif, index, store


def test_kerchunk_parquet_reads_like_gdal(tmp_path, chunkref_bin, table_python):
    tif, index, store = kerchunk_parquet(tmp_path, chunkref_bin, table_python)
    assert_same_as_gdal(store, tif, 0, "kerchunk parquet")
    convert(chunkref_bin, store, tmp_path / "back.json")
    assert parsed_refs(tmp_path / "back.json") == parsed_refs(index)


def test_kerchunk_parquet_missing_record_file_holds_unwritten_chunks(
    tmp_path, chunkref_bin, table_python
):
    """fsspec reads a record file that is not there as chunks never written
    (the usual case: a scalar variable with no chunk at all); so does the
    driver: they read as the fill value, like keys absent from Kerchunk JSON."""
    _, index, store = kerchunk_parquet(tmp_path, chunkref_bin, table_python)
    (store / "0" / "data" / "refs.1.parq").unlink()
    doc = json.loads(index.read_text())
    meta = json.loads(doc["refs"]["0/data/.zarray"])
    grid = [-(-s // c) for s, c in zip(meta["shape"], meta["chunks"])]

    def rank(key: str) -> int:
        r = 0
        for i, n in zip(map(int, key.rsplit("/", 1)[1].split(".")), grid):
            r = r * n + i
        return r

    doc["refs"] = {k: v for k, v in doc["refs"].items()
                   if not (k.startswith("0/data/") and k[7:8].isdigit() and 5 <= rank(k) < 10)}
    expected = tmp_path / "expected.json"
    expected.write_text(json.dumps(doc))
    got = gdal.OpenEx(str(store), gdal.OF_RASTER, allowed_drivers=["ChunkRef"])
    assert got.ReadRaster() == open_chunkref(expected).ReadRaster()


def test_peer_kerchunk_parquet_with_multi_range_rows(tmp_path, peer):
    from test_j2k import interleaved_j2k

    source = interleaved_j2k(tmp_path)
    store = tmp_path / "peer.parquet"
    peer.run(
        "import sys\n"
        "from aws.osml.io.virtualizarr_parsers import OversightMLParser, write_tile_index\n"
        "write_tile_index(OversightMLParser()(sys.argv[1]), sys.argv[2], zarr_format=2)\n",
        source,
        store,
    )
    assert (store / ".zmetadata").exists()
    native = gdal.Open(str(source))
    ds = open_chunkref(store)
    assert (ds.RasterXSize, ds.RasterYSize, ds.RasterCount) == (260, 300, 3)
    assert (ds.ReadAsArray() == native.ReadAsArray()).all()


# --------------------------------------------------------------------------
# FlatGeobuf: the same table with footprints and a packed R-tree
# --------------------------------------------------------------------------


def test_flatgeobuf_table_reads_like_gdal_and_lists_footprints(tmp_path, chunkref_bin):
    tif = write_tiff(tmp_path / "img.tif", TIFF_CASES["cog-deflate-pred2-3band"])
    index_tiff(chunkref_bin, tif, tmp_path / "img.json")
    table = tmp_path / "img.fgb"
    done = run_chunkref(chunkref_bin, "index", tif, "-o", table)
    assert done.returncode == 0, done.stderr
    assert_same_as_gdal(table, tif, 0, "flatgeobuf table")
    convert(chunkref_bin, table, tmp_path / "back.json")
    assert parsed_refs(tmp_path / "back.json") == parsed_refs(tmp_path / "img.json")

    # The same file is a vector layer for OGR: one feature per reference.
    refs = json.loads((tmp_path / "img.json").read_text())["refs"]
    chunks = {k: v for k, v in refs.items() if isinstance(v, list)}
    vector = gdal.OpenEx(str(table), gdal.OF_VECTOR)
    assert vector.GetDriver().ShortName == "FlatGeobuf"
    layer = vector.GetLayer(0)
    assert layer.GetFeatureCount() == len(chunks)
    native = gdal.Open(str(tif))
    x0, dx, _, y0, _, dy = native.GetGeoTransform()
    xblock, yblock = native.GetRasterBand(1).GetBlockSize()
    for feature in layer:
        if feature["array"] != 0:
            continue
        key = f"0/data/0.{feature['y_chunk']}.{feature['x_chunk']}"
        assert [feature["offset"], feature["length"]] == chunks[key][1:], key
        xmin, xmax, ymin, ymax = feature.GetGeometryRef().GetEnvelope()
        col, row = feature["x_chunk"] * xblock, feature["y_chunk"] * yblock
        ys = sorted([y0 + row * dy, y0 + min(row + yblock, native.RasterYSize) * dy])
        xs = [x0 + col * dx, x0 + min(col + xblock, native.RasterXSize) * dx]
        assert [xmin, xmax, ymin, ymax] == xs + ys, key
    # A spatial filter (answered by the packed R-tree) keeps the top-left
    # chunk of every level.
    ys = sorted([y0 + dy, y0 + 2 * dy])
    layer.SetSpatialFilterRect(x0 + dx, ys[0], x0 + 2 * dx, ys[1])
    found = [(f["array"], f["y_chunk"], f["x_chunk"]) for f in layer]
    assert len(found) == len(native_levels(native)), found
    assert all((y, x) == (0, 0) for _, y, x in found), found


def test_flatgeobuf_time_stack(tmp_path, chunkref_bin):
    from test_collections import expected_levels, write_steps

    sources = write_steps(tmp_path)
    table = tmp_path / "stack.fgb"
    done = run_chunkref(chunkref_bin, "index", "--datetime-from-name", *sources, "-o", table)
    assert done.returncode == 0, done.stderr
    levels, blocks = expected_levels(sources)
    assert_matches(open_chunkref(table), levels, blocks)
    ds = open_chunkref(table, ["TIME_STEP=2021-02-15"])
    assert_matches(ds, [level[[2]] for level in levels], blocks)
