"""Stores other tools wrote, read by the wheel as those tools read them:
HDF5 files written by h5py (indexed by the wheel's command, and through
kerchunk's own references) against h5py's values, and Icechunk
repositories written by icechunk-python (every version of every array)
against what icechunk and zarr read back. The writers are the suite's
(tests/python/*_writer.py), run in their venvs of packages from PyPI."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

import chunkref
from conftest import REPO, run
from venvs import ICECHUNK1_REQUIREMENTS, ICECHUNK2_REQUIREMENTS, ensure_venv, kerchunk_python

WRITERS = REPO / "tests" / "python"


def _planes(values: np.ndarray) -> np.ndarray:
    """An array as the raster view serves it: (bands, rows, cols)."""
    if values.ndim >= 2:
        return values.reshape(-1, *values.shape[-2:])
    return values.reshape(1, 1, -1)


def _assert_reads(name: str, expected: np.ndarray, **options) -> None:
    got = chunkref.open(name, **options).read()
    want = _planes(expected)
    assert got.shape == want.shape, name
    if want.dtype.kind == "f":
        assert np.array_equal(got, want, equal_nan=True), name
    else:
        assert np.array_equal(got, want), name


@pytest.fixture(scope="module")
def hdf5_files(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("h5py")
    run(str(kerchunk_python()), str(WRITERS / "hdf5_index_writer.py"), str(out))
    return out


@pytest.mark.parametrize("file", ["plain.h5", "userblock.h5", "plugins.h5"])
def test_h5py_files_indexed_by_the_wheel(file, hdf5_files, chunkref_command):
    index = hdf5_files / f"{file}.chunkref.json"
    run(chunkref_command, "index", str(hdf5_files / file), "-o", str(index))
    expected = sorted((hdf5_files / "expected" / file).glob("*.npy"))
    assert expected
    for npy in expected:
        dataset = npy.stem.replace(".", "/")
        _assert_reads(f'CHUNKREF:"{index}":{dataset}', np.load(npy))


@pytest.mark.parametrize("file", ["plain.h5", "userblock.h5"])
def test_kerchunk_references_to_h5py_files(file, hdf5_files):
    refs = hdf5_files / f"{file}.kerchunk.json"
    keys = json.loads(refs.read_text())["refs"]
    for npy in sorted((hdf5_files / "expected" / file).glob("*.npy")):
        dataset = npy.stem.replace(".", "/")
        if f"{dataset}/.zarray" not in keys:
            continue  # kerchunk left it out (fletcher32)
        _assert_reads(f'CHUNKREF:"{refs}":{dataset}', np.load(npy))


def _icechunk_python(version: int) -> Path:
    if version == 1:
        return ensure_venv(REPO / "build" / "icechunk-venv", ICECHUNK1_REQUIREMENTS,
                           "import icechunk, virtualizarr, kerchunk.df, netCDF4, hdf5plugin",
                           "icechunk 1.x, VirtualiZarr and kerchunk")
    return ensure_venv(REPO / "build" / "icechunk2-venv", ICECHUNK2_REQUIREMENTS,
                       "import icechunk, zarr", "icechunk 2.0")


#: (icechunk major version, format spec asked, writer arguments): spec 2 by
#: icechunk 2.0; spec 1 by icechunk 1.x with VirtualiZarr's virtual arrays.
WRITES = [(2, "2", []), (1, "1", ["--virtualizarr"])]


@pytest.mark.parametrize("version,spec,extra", WRITES, ids=["icechunk2", "icechunk1-virtualizarr"])
def test_icechunk_versions_read_as_icechunk_reads_them(version, spec, extra, tmp_path):
    out = tmp_path / "repos"
    p = subprocess.run([str(_icechunk_python(version)), "-c",
                        (WRITERS / "icechunk_writer.py").read_text(), str(out), spec, *extra],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    manifest = json.loads((out / f"spec{spec}-manifest.json").read_text())
    seen = 0
    for entry in manifest.values():
        for version_entry in entry.get("versions", {}).values():
            options = dict(o.split("=", 1) for o in version_entry["options"])
            for name, npy in version_entry["arrays"].items():
                _assert_reads(f'CHUNKREF:"{entry["path"]}":{name}', np.load(npy), **options)
                seen += 1
    assert seen >= 4


#: zarr-python 3 writes a Zarr v3 store: a Zstandard-compressed array with
#: partial edge chunks and a fill value, and a sharded one partly written.
ZARR_V3_WRITER = """
import sys
import numpy as np
import zarr
out = sys.argv[1]
g = zarr.open_group(out + "/v3.zarr", mode="w", zarr_format=3)
a = g.create_array("plain", shape=(3, 100, 130), chunks=(1, 32, 40), dtype="uint16",
                   compressors=zarr.codecs.ZstdCodec(), fill_value=7)
a[:] = (np.arange(3 * 100 * 130).reshape(3, 100, 130) * 7) % 60000
b = g.create_array("sharded", shape=(200, 150), chunks=(20, 30), shards=(100, 90),
                   dtype="float32", fill_value=-1.5)
b[:130, :100] = np.arange(130 * 100, dtype="float32").reshape(130, 100) / 3
np.save(out + "/plain.npy", a[:])
np.save(out + "/sharded.npy", b[:])
"""


def test_zarr_v3_and_shards_written_by_zarr_python(tmp_path, chunkref_command):
    p = subprocess.run([str(_icechunk_python(2)), "-c", ZARR_V3_WRITER, str(tmp_path)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    index = tmp_path / "v3.json"
    run(chunkref_command, "index", str(tmp_path / "v3.zarr"), "-o", str(index))
    for name in ("plain", "sharded"):
        _assert_reads(f'CHUNKREF:"{index}":{name}', np.load(tmp_path / f"{name}.npy"))
