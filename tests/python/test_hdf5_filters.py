"""``chunkref index`` of HDF5 files with h5py's LZF filter (32000), the
bitshuffle plugin (32008) and the LZ4 plugin (32004), read through the
ChunkRef driver.

GDAL's netCDF and HDF5 drivers cannot read these filters without plugins,
and kerchunk's ``SingleHdf5ToZarr`` refuses them, so the oracle is h5py
with hdf5plugin (hdf5_filters_writer.py, in its own venv): every dataset
must read as h5py reads it, and every chunk range (and which chunks LZF
left uncompressed) must be the one h5py reports.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from conftest import run_chunkref
from raster_checks import assert_band_matches, open_chunkref
from test_tables import run_python
from venvs import ensure_venv

WRITER = Path(__file__).with_name("hdf5_filters_writer.py")

#: h5py with the filter plugins of hdf5plugin (bitshuffle with LZ4 and
#: Zstandard among them).
REQUIREMENTS = ["h5py==3.16.0", "numpy==2.4.6", "hdf5plugin==7.1.0"]

#: The codecs each source's datasets must map to, in pipeline order.
SHUFFLE4 = {"id": "shuffle", "elementsize": 4}
LZF = {"id": "imagecodecs_lzf", "header": False}
CODECS = {
    "lzf.h5": {
        "plain": [LZF],
        "shuffled": [SHUFFLE4, LZF],
        "checked": [SHUFFLE4, LZF, {"id": "fletcher32"}],
        "mixed": [LZF],
        "mixed_checked": [SHUFFLE4, LZF, {"id": "fletcher32"}],
    },
    "bitshuffle.h5": {
        "lz4": [{"id": "hdf5-bitshuffle", "elementsize": 2, "compression": "lz4"}],
        "lz4_blocks": [{"id": "hdf5-bitshuffle", "elementsize": 8, "compression": "lz4"}],
        "zstd": [{"id": "hdf5-bitshuffle", "elementsize": 4, "compression": "zstd"}],
        "none": [{"id": "imagecodecs_bitshuffle", "itemsize": 4, "blocksize": 16}],
        "bytes": [{"id": "hdf5-bitshuffle", "elementsize": 1, "compression": "lz4"}],
    },
    "lz4.h5": {
        "whole": [{"id": "hdf5-lz4"}],
        "blocks": [{"id": "hdf5-lz4"}],
        "random": [{"id": "hdf5-lz4"}],
    },
}


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> Path:
    repo = Path(__file__).resolve().parents[2]
    python = ensure_venv(repo / "build" / "hdf5plugin-venv", REQUIREMENTS,
                         "import h5py, hdf5plugin", "h5py and hdf5plugin")
    out = tmp_path_factory.mktemp("hdf5-filters")
    run_python(python, WRITER.read_text(), out)
    return out


@pytest.fixture(scope="module")
def indexed(sources, chunkref_bin) -> dict[str, dict]:
    """Our JSON index of each source, its refs (metadata parsed) by file."""
    out = {}
    for name in CODECS:
        target = sources / "ours" / f"{name}.json"
        done = run_chunkref(chunkref_bin, "index", sources / name, "-o", target)
        assert done.returncode == 0, f"index {name}:\n{done.stderr}{done.stdout}"
        refs = json.loads(target.read_text())["refs"]
        out[name] = (target, {k: json.loads(v) if k.rsplit("/", 1)[-1].startswith(".z") else v
                              for k, v in refs.items()})
    return out


@pytest.mark.parametrize("name", sorted(CODECS))
def test_filters_map_to_codecs(indexed, name):
    _, refs = indexed[name]
    got = {k[: -len("/.zarray")]: v["filters"] for k, v in refs.items() if k.endswith("/.zarray")}
    assert got == CODECS[name]
    assert all(v["compressor"] is None for k, v in refs.items() if k.endswith("/.zarray"))


@pytest.mark.parametrize("name", sorted(CODECS))
def test_chunk_ranges_are_h5pys(sources, indexed, name):
    """Every stored chunk, at the range h5py reports; for LZF, chunks it
    could not shrink are among them (filter mask with the LZF bit)."""
    _, refs = indexed[name]
    table = json.loads((sources / "chunks.json").read_text())[name]
    for dataset, chunks in table.items():
        ours = {k.split("/", 1)[1]: v for k, v in refs.items()
                if k.startswith(f"{dataset}/") and "/." not in k}
        assert {k: v[1:] for k, v in ours.items()} == {k: v[:2] for k, v in chunks.items()}
    if name == "lzf.h5":
        assert {v[2] for v in table["mixed"].values()} == {0, 1}
        assert {v[2] for v in table["mixed_checked"].values()} == {0, 2}


@pytest.mark.parametrize("name", sorted(CODECS))
def test_datasets_read_as_h5py_reads_them(sources, indexed, name):
    path, _ = indexed[name]
    for dataset in CODECS[name]:
        expected = np.load(sources / "expected" / name / f"{dataset}.npy")
        ds = open_chunkref(f'CHUNKREF:"{path}":{dataset}')
        planes = expected.reshape((-1, *expected.shape[-2:]))
        assert ds.RasterCount == planes.shape[0], dataset
        for b, plane in enumerate(planes):
            assert_band_matches(ds.GetRasterBand(b + 1), plane, f"{name}:{dataset} band {b + 1}")


def test_lzf_chunk_as_long_as_the_chunk_is_refused(sources, chunkref_bin, tmp_path):
    """A chunk whose LZF stream (mask clear) is as long as the chunk would
    read as stored uncompressed: the index is refused, naming it."""
    done = run_chunkref(chunkref_bin, "index", sources / "ambiguous.h5", "-o", tmp_path / "x.json")
    assert done.returncode == 1, done
    for word in ["ambiguous.h5", "chunk 0.0 of dataset '/exact'", "exactly as long"]:
        assert word in done.stderr, (word, done.stderr)
    assert not (tmp_path / "x.json").exists()
