"""GDAL's own Kerchunk fixtures, rebuilt here, open (or fail) in ChunkRef as
GDAL's tests expect.

GDAL (3.11+) keeps small Kerchunk stores under
``autotest/gdrivers/data/zarr/kerchunk_json/`` and ``kerchunk_parquet/`` and
checks them in ``autotest/gdrivers/zarr_kerchunk_json.py`` and
``zarr_kerchunk_parquet.py``.  Each fixture is rebuilt below from its
description (the JSON text, the ``.zmetadata`` document, and the rows its
``create_refs.0.parq.py`` writes through OGR's Parquet driver: columns
``path`` string, ``offset`` and ``size`` 64-bit integers, ``raw`` binary).
The Parquet record files are written by fastparquet in the kerchunk venv
(Debian's Python has no Parquet writer; Debian's GDAL 3.6 has no Kerchunk
support, so GDAL's expectations, not a run of GDAL, are the oracle).

Every fixture of the two directories is covered:

- ``kerchunk_json/json_ref_v0_min``, ``json_ref_v1_min`` (the v1 file with
  its trailing comma): :func:`test_json_ref_min`, and the remote-index
  variant of v0 in :func:`test_json_remote_index_may_not_read_local_files`.
- ``kerchunk_parquet/parquet_ref_min``, ``parquet_ref_0_dim``,
  ``parquet_ref_0_dim_missing_size``, ``parquet_ref_0_dim_path_dot_dot``,
  ``parquet_ref_0_dim_inline_content``: :func:`test_parquet_ref_one_byte`.
- ``kerchunk_parquet/parquet_ref_2_dim`` (its ``refs.*.parq.csv``,
  ``.csvt`` and ``.vrt`` are GDAL's sources of the two record files):
  :func:`test_parquet_ref_2_dim`, :func:`test_parquet_ref_missing_bin_file`.
- ``kerchunk_parquet/parquet_ref_invalid_parquet_struct``:
  :func:`test_parquet_ref_invalid_parquet_struct` (with three more wrong
  structures GDAL's check also refuses).
- The ``.zmetadata`` documents test_zarr_kerchunk_parquet_fail_exception
  writes: :func:`test_parquet_ref_bad_zmetadata`.

GDAL opens them with its multidimensional API (``gdal.OF_MULTIDIM_RASTER``,
``ZARR:`` names, ``/vsikerchunk_*_ref/`` paths) and reads array ``x``.
ChunkRef is a raster driver: the equivalent is opening the store (or
``CHUNKREF:"store":x``) as a raster and reading its pixels.  Not applicable
to a raster driver, so not rebuilt: the ``VSIStatL``/``VSIFOpenL``/
``ReadDir`` checks of the ``/vsikerchunk_*_ref/`` file systems (their
``.zgroup`` sizes and listings), ``CHUNK_INFO`` file metadata (checked here
through the dataset's file list: the same FILENAME), the
``VSIKERCHUNK_USE_STREAMING_PARSER`` and ``CACHE_KERCHUNK_JSON`` options,
and the JSON documents written inline by test_zarr_kerchunk_json_ok /
_fail_exception (they hold no array, so no raster; ChunkRef's own JSON
tests cover that syntax).
"""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path

import pytest
from osgeo import gdal

from conftest import REPO_ROOT
from raster_checks import config_options, failure_text, open_chunkref
from servers import RangeServer
from test_tables import run_python
from venvs import kerchunk_python

#: The one-byte array of every "min" fixture (GDAL's ``x/.zarray``).
ZARRAY_1 = {
    "zarr_format": 2, "shape": [1], "chunks": [1], "compressor": None, "dtype": ">u1",
    "order": "C", "filters": [], "fill_value": None,
}
#: The same array without dimensions (the ``0_dim`` fixtures).
ZARRAY_0D = ZARRAY_1 | {"shape": [], "chunks": []}
#: ``parquet_ref_2_dim``: 3 x 4 bytes in 2 x 3 chunks, 3 references per record file.
ZARRAY_2D = ZARRAY_1 | {"shape": [3, 4], "chunks": [2, 3]}
#: What GDAL reads of ``parquet_ref_2_dim`` (every chunk file holds bytes 0..5).
EXPECTED_2D = b"\x00\x01\x02\x00\x03\x04\x05\x03\x00\x01\x02\x00"

#: argv: SPEC.json.  Writes each record file of the spec, {"file": {"column":
#: [type, values]}}, with fastparquet: "utf8" (string), "bytes" (binary) or
#: "int64" (nullable) columns, in the order given.
WRITE_RECORDS = """
import json, sys
import pandas as pd
import fastparquet
for name, columns in json.load(open(sys.argv[1])).items():
    frame, encodings = {}, {}
    for column, (kind, values) in columns.items():
        if kind == "int64":
            frame[column] = pd.array(values, dtype="Int64")
        else:
            encodings[column] = kind
            frame[column] = pd.Series(
                [None if v is None else (bytes.fromhex(v) if kind == "bytes" else v)
                 for v in values],
                dtype=object,
            )
    fastparquet.write(name, pd.DataFrame(frame), object_encoding=encodings, stats=False)
"""


@pytest.fixture(scope="module")
def parquet_python() -> Path:
    """The kerchunk venv's python (pandas and fastparquet write record files)."""
    return kerchunk_python()


def record(path=None, offset=None, size=None, raw=None, *, drop=(), types=None) -> dict:
    """One-row record file columns as OGR writes them in GDAL's scripts;
    ``drop`` leaves columns out, ``types`` overrides column types."""
    columns = {
        "path": ["utf8", [path]],
        "offset": ["int64", [offset]],
        "size": ["int64", [size]],
        "raw": ["bytes", [None if raw is None else raw.hex()]],
    }
    for name, kind in (types or {}).items():
        columns[name][0] = kind
    return {k: v for k, v in columns.items() if k not in drop}


def write_parquet_store(
    python: Path, store: Path, zarray: dict, records: dict[str, dict], record_size: int = 1,
    array: str = "x",
) -> Path:
    """A Kerchunk Parquet directory: ``.zmetadata`` as GDAL's fixtures
    write it, and the record files ``records`` (name -> columns) of array
    ``array``."""
    (store / array).mkdir(parents=True, exist_ok=True)
    (store / ".zmetadata").write_text(json.dumps({
        "metadata": {
            ".zgroup": {"zarr_format": 2}, ".zattrs": {},
            f"{array}/.zarray": zarray, f"{array}/.zattrs": {},
        },
        "record_size": record_size,
    }))
    spec = {str(store / array / name): columns for name, columns in records.items()}
    spec_file = store.parent / f"{store.name}.spec.json"
    spec_file.write_text(json.dumps(spec))
    run_python(python, WRITE_RECORDS, spec_file)
    spec_file.unlink()
    return store


def one_byte_store(python: Path, root: Path, name: str, zarray: dict, row: dict) -> Path:
    """A fixture of one chunk (``x/refs.0.parq`` with one row) whose data
    file, ``x/0.bin``, holds byte 1."""
    store = write_parquet_store(python, root / name, zarray, {"refs.0.parq": row})
    (store / "x" / "0.bin").write_bytes(b"\x01")
    return store


def read_x(name: str | Path) -> tuple[int, int, int, bytes]:
    """Open ``name`` as ChunkRef and read it all: size, bands, bytes."""
    ds = open_chunkref(name)
    return ds.RasterXSize, ds.RasterYSize, ds.RasterCount, bytes(ds.ReadRaster())


# --------------------------------------------------------------------------
# kerchunk_json: json_ref_v0_min, json_ref_v1_min
# --------------------------------------------------------------------------

def json_fixture(root: Path, version: int) -> Path:
    """``json_ref_v{version}_min/ref.json`` and its ``0.bin`` (byte 1).  The
    v0 file references the whole of ``0.bin``; the v1 file a range, with
    ``x/.zarray`` in base64 and a trailing comma after ``refs``, as GDAL's
    fixture has them."""
    d = root / f"json_ref_v{version}_min"
    d.mkdir()
    (d / "0.bin").write_bytes(b"\x01")
    zarray = json.dumps(ZARRAY_1)
    if version == 0:
        text = (
            '{".zgroup": {"zarr_format":2}, ".zattrs": {}, '
            f'"x/.zarray": {zarray}, "x/.zattrs": {{}}, "x/0": [ "0.bin" ]}}'
        )
    else:
        encoded = base64.b64encode(zarray.encode()).decode()
        text = (
            '{"version": 1, "refs": {".zgroup": "{\\"zarr_format\\":2}", ".zattrs": "{}", '
            f'"x/.zarray": "base64:{encoded}", "x/.zattrs": "{{}}", '
            '"x/0": [ "0.bin", 0, 1 ]},\n}'
        )
    (d / "ref.json").write_text(text)
    return d / "ref.json"


@pytest.mark.parametrize("version", [0, 1])
def test_json_ref_min(tmp_path, version):
    """test_zarr_kerchunk_json_gdal_open: array x reads b"\\x01", opened by
    the file name or through ZARR:.  GDAL's raster view opens a store whose
    one array is 1-D as one row; so does ChunkRef, by the store's name and
    by the array's.  The relative "0.bin" is next to the JSON file
    (test_vsikerchunk_json_ref_GetFileMetadata's FILENAME), and it is the
    one file the dataset lists."""
    ref = json_fixture(tmp_path, version)
    for name in [str(ref), f'CHUNKREF:"{ref}":x']:
        assert read_x(name) == (1, 1, 1, b"\x01"), name
        assert open_chunkref(name).GetFileList()[-1] == str(ref.parent / "0.bin")


def test_json_remote_index_may_not_read_local_files(tmp_path):
    """test_zarr_kerchunk_json_gdal_open_remote_file_accessing_local_resources:
    an index served over HTTP that references a local file fails with "tries
    to access local file" unless GDAL_ALLOW_REMOTE_RESOURCE_TO_ACCESS_LOCAL_FILE
    is YES (then it reads b"\\x01")."""
    ref = json_fixture(tmp_path, 0)
    doc = json.loads(ref.read_text())
    doc["x/0"] = [str(ref.parent / "0.bin")]
    site = tmp_path / "site"
    site.mkdir()
    (site / "ref.json").write_text(json.dumps(doc))
    server = RangeServer(site)
    try:
        name = f"/vsicurl/{server.url}ref.json"
        message = failure_text(lambda: open_chunkref(name).ReadRaster())
        # GDAL says "tries to access local file"; ChunkRef names the file
        # and the option.
        assert "refers to the local file" in message, message
        assert "GDAL_ALLOW_REMOTE_RESOURCE_TO_ACCESS_LOCAL_FILE=YES" in message, message
        with config_options({"GDAL_ALLOW_REMOTE_RESOURCE_TO_ACCESS_LOCAL_FILE": "YES"}):
            assert read_x(name) == (1, 1, 1, b"\x01")
    finally:
        server.close()


# --------------------------------------------------------------------------
# kerchunk_parquet
# --------------------------------------------------------------------------

#: GDAL's one-chunk fixtures: (.zarray, the row of x/refs.0.parq).
ONE_BYTE_FIXTURES = {
    "parquet_ref_min": (ZARRAY_1, record("0.bin", 0, 1)),
    "parquet_ref_0_dim": (ZARRAY_0D, record("0.bin", 0, 1)),
    "parquet_ref_0_dim_missing_size": (ZARRAY_0D, record("0.bin")),
    "parquet_ref_0_dim_path_dot_dot": (ZARRAY_0D, record("../x/0.bin")),
    "parquet_ref_0_dim_inline_content": (ZARRAY_0D, record(raw=b"\x01")),
}


@pytest.mark.parametrize("fixture", list(ONE_BYTE_FIXTURES))
def test_parquet_ref_one_byte(tmp_path, parquet_python, fixture, monkeypatch):
    """test_zarr_kerchunk_parquet_gdal_open (and the stat/open tests of
    /vsikerchunk_parquet_ref/, whose x/0 is 1 byte holding 1): array x
    reads b"\\x01".

    A relative ``path`` is resolved in the directory of its record file,
    ``x/`` (test_vsikerchunk_parquet_ref_GetFileMetadata: FILENAME
    ``parquet_ref_0_dim/x/0.bin``; ``../x/0.bin`` is the same file), and a
    missing ``size`` means the whole file.  GDAL's multidimensional API
    reads a 0-d array as its one value (its classic raster view refuses
    it: "Unsupported number of dimensions"); ChunkRef shows it as a
    1 x 1 raster, which reads that value."""
    zarray, row = ONE_BYTE_FIXTURES[fixture]
    store = one_byte_store(parquet_python, tmp_path, fixture, zarray, row)
    # Named as GDAL's tests name it (relative, from the directory holding
    # it), with a trailing slash, absolute, and the array through CHUNKREF:.
    monkeypatch.chdir(tmp_path)
    for name in [fixture, f"{fixture}/", str(store), f'CHUNKREF:"{store}":x']:
        assert read_x(name) == (1, 1, 1, b"\x01"), name
    files = open_chunkref(store).GetFileList()
    if row["raw"][1][0] is None:
        assert str(store / "x" / "0.bin") in files, files
    # A copy elsewhere reads the same: references are relative to the store.
    moved = tmp_path / "elsewhere" / "deeper" / fixture
    shutil.copytree(store, moved)
    assert read_x(moved) == (1, 1, 1, b"\x01")


def two_dim_store(python: Path, root: Path) -> Path:
    """``parquet_ref_2_dim``: record files of 3 rows, the second holding
    the fourth chunk alone; every chunk file holds bytes 0..5."""
    rows = {
        "refs.0.parq": {
            "path": ["utf8", ["0.bin", "1.bin", "2.bin"]],
            "offset": ["int64", [0, 0, 0]],
            "size": ["int64", [6, 6, 6]],
            "raw": ["bytes", [None, None, None]],
        },
        "refs.1.parq": record("4.bin", 0, 6),
    }
    store = write_parquet_store(python, root / "parquet_ref_2_dim", ZARRAY_2D, rows, 3, "ar")
    for name in ["0.bin", "1.bin", "2.bin", "4.bin"]:
        (store / "ar" / name).write_bytes(bytes(range(6)))
    return store


def test_parquet_ref_2_dim(tmp_path, parquet_python):
    """test_zarr_kerchunk_parquet_gdal_open_dim2: array ar reads
    EXPECTED_2D (edge chunks cut to the 3 x 4 shape)."""
    store = two_dim_store(parquet_python, tmp_path)
    assert read_x(store) == (4, 3, 1, EXPECTED_2D)


def test_parquet_ref_missing_bin_file(tmp_path, parquet_python):
    """test_zarr_kerchunk_parquet_gdal_open_missing_bin_file: with
    ar/4.bin removed the store opens and reading it fails (naming the
    file)."""
    store = two_dim_store(parquet_python, tmp_path)
    (store / "ar" / "4.bin").unlink()
    ds = open_chunkref(store)
    message = failure_text(ds.ReadRaster)
    assert "4.bin" in message, message


@pytest.mark.parametrize(
    "how,row",
    [
        # GDAL's fixture: no raw column, one row of nulls.
        ("no-raw-column", record(drop=["raw"])),
        ("path-not-a-string", record(types={"path": "int64"})),
        ("size-not-an-integer", record("0.bin", 0, types={"size": "utf8"})),
        ("raw-not-binary", record(types={"raw": "int64"})),
    ],
)
def test_parquet_ref_invalid_parquet_struct(tmp_path, parquet_python, how, row):
    """test_zarr_kerchunk_parquet_invalid_parquet_struct: a record file
    without the columns path (string), offset, size (integers) and raw
    (binary) fails with "has an unexpected field structure", naming the
    file; never zeros.  GDAL fails at the read of the array; ChunkRef reads
    record files at open, so it is the open that fails."""
    if how == "size-not-an-integer":
        row["size"][1] = ["1"]
    store = one_byte_store(parquet_python, tmp_path, "parquet_ref_invalid_parquet_struct",
                           ZARRAY_1, row)
    message = failure_text(gdal.OpenEx, str(store), gdal.OF_RASTER, allowed_drivers=["ChunkRef"])
    assert "unexpected field structure" in message, message
    assert "refs.0.parq" in message, message


ZGROUP = '".zgroup": {"zarr_format":2}'


def zarray(*drop: str, **fields) -> str:
    """GDAL's one-byte ``x/.zarray`` with ``fields`` changed and ``drop`` left out."""
    return json.dumps({k: v for k, v in (ZARRAY_1 | fields).items() if k not in drop})


#: test_zarr_kerchunk_parquet_fail_exception's ``.zmetadata`` documents:
#: id -> (content, GDAL's message, ChunkRef's).
BAD_ZMETADATA = {
    "empty": ("", "JSON parsing error", "is not valid JSON"),
    "no-metadata": ('{"record_size":1}', "key 'metadata' missing", "no 'metadata' object"),
    "null-metadata": ('{"metadata": null, "record_size":1}', "key 'metadata' missing",
                      "no 'metadata' object"),
    "non-document-value": (f'{{"metadata": {{{ZGROUP}, "foo":"bar"}}, "record_size":1}}',
                           "invalid value type for key 'foo'",
                           "metadata document 'foo' is not valid JSON"),
    "no-record-size": (f'{{"metadata": {{{ZGROUP}, "x/.zarray": {zarray()}}}}}',
                       "key 'record_size' missing", "no positive integer 'record_size'"),
    "null-record-size": (
        f'{{"metadata": {{{ZGROUP}, "x/.zarray": {zarray()}}}, "record_size": null}}',
        "key 'record_size' missing", "no positive integer 'record_size'"),
    "zero-record-size": (
        f'{{"metadata": {{{ZGROUP}, "x/.zarray": {zarray()}}}, "record_size": 0}}',
        "Invalid 'record_size'", "no positive integer 'record_size'"),
    "no-shape": (f'{{"metadata": {{{ZGROUP}, "x/.zarray": {zarray("shape")}}}, "record_size": 1}}',
                 "missing 'shape' entry", "'shape' must be a list"),
    "no-chunks": (
        f'{{"metadata": {{{ZGROUP}, "x/.zarray": {zarray("chunks")}}}, "record_size": 1}}',
        "missing 'chunks' entry", "'chunks' must be a list"),
    # GDAL refuses the empty array when it loads the store; ChunkRef when
    # it makes it a raster.
    "zero-shape": (f'{{"metadata": {{{ZGROUP}, "x/.zarray": {zarray(shape=[0])}}}, "record_size": 1}}',
                   "shape[0]=0", "array 'x' is empty"),
    "zero-chunks": (
        f'{{"metadata": {{{ZGROUP}, "x/.zarray": {zarray(chunks=[0])}}}, "record_size": 1}}',
        "chunks[0]=0", "has a zero extent"),
    "shape-chunks-differ": (
        f'{{"metadata": {{{ZGROUP}, "x/.zarray": {zarray(chunks=[2, 3])}}}, "record_size": 1}}',
        "have not the same number of values", "shape has 1 dimensions but chunks has 2"),
    "33-dimensions": (
        f'{{"metadata": {{{ZGROUP}, "x/.zarray": '
        f'{zarray(shape=[1] * 32 + [33], chunks=[1] * 32 + [33])}}}, "record_size": 1}}',
        "too many dimensions", "33 dimensions (at most 32)"),
    "too-many-chunks": (
        f'{{"metadata": {{{ZGROUP}, "x/.zarray": '
        f'{zarray(shape=[4000000000, 4000000000, 4], chunks=[1, 1, 1])}}}, "record_size": 1}}',
        "> UINT64_MAX", "more than 2^64 chunks"),
}


@pytest.mark.parametrize("case", list(BAD_ZMETADATA))
def test_parquet_ref_bad_zmetadata(tmp_path, case):
    """test_zarr_kerchunk_parquet_fail_exception: each of these
    ``.zmetadata`` documents makes the store fail, GDAL when its virtual
    file system loads the store, ChunkRef when it opens it, each with a
    message saying what is wrong.  Named with ``CHUNKREF:`` so the driver
    reads it even where Identify, which looks for ``record_size`` in a
    directory's ``.zmetadata``, does not claim the plain name ("empty",
    "no-record-size": no driver opens those)."""
    content, _gdal_message, message = BAD_ZMETADATA[case]
    store = tmp_path / "store"
    (store / "x").mkdir(parents=True)
    (store / ".zmetadata").write_text(content)
    for name in [f'CHUNKREF:"{store}"', str(store)]:
        text = failure_text(gdal.OpenEx, name, gdal.OF_RASTER, allowed_drivers=["ChunkRef"])
        if name.startswith("CHUNKREF:"):
            assert message in text, text
