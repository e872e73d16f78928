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
from venvs import ensure_venv, kerchunk_python

WRITERS = REPO / "tests" / "python"
ICECHUNK_REQUIREMENTS = ["icechunk==2.0.0a4", "zarr==3.1.6", "numpy==2.4.6"]


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


@pytest.fixture(scope="module")
def icechunk_repos(tmp_path_factory) -> tuple[Path, dict]:
    python = ensure_venv(REPO / "build" / "icechunk2-venv", ICECHUNK_REQUIREMENTS,
                         "import icechunk, zarr", "icechunk 2.0")
    out = tmp_path_factory.mktemp("icechunk")
    p = subprocess.run([str(python), "-c", (WRITERS / "icechunk_writer.py").read_text(),
                        str(out), "2"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return out, json.loads((out / "spec2-manifest.json").read_text())


def test_icechunk_versions_read_as_icechunk_reads_them(icechunk_repos):
    _, manifest = icechunk_repos
    seen = 0
    for entry in manifest.values():
        for version in entry.get("versions", {}).values():
            options = dict(o.split("=", 1) for o in version["options"])
            for name, npy in version["arrays"].items():
                _assert_reads(f'CHUNKREF:"{entry["path"]}":{name}', np.load(npy), **options)
                seen += 1
    assert seen >= 4
