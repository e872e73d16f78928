"""``chunkref index`` of NetCDF4 / HDF5 files where they live: an S3
bucket (moto's server on loopback) and the plain HTTP range server
(servers.py), read by libhdf5 through chunkref's own file driver; and the
chunk addresses of every chunk index kind of HDF5 1.10.

Sources (hdf5_remote_writer.py): a NetCDF4 cube (chunked deflate +
shuffle, contiguous, coordinate variables), an h5py file with a 512-byte
user block, three daily files to be joined along time, and one file per
chunk index kind (v1 B-tree, fixed array, extensible array, v2 B-tree,
single chunk, implicit) plus a sparse grid.

Oracles: the index of the local copy (a remote index must hold the same
documents and chunk ranges, only the URL differs), GDAL's netCDF driver on
the local copy (what the remote index reads through GDAL), kerchunk's
``SingleHdf5ToZarr`` (the chunk ranges of every index kind: kerchunk reads
them with HDF5 2.0's ``H5Dchunk_iter``), and the range server's request
log (a small file costs at most :data:`MAX_REQUESTS` requests).  Failures:
a server answering 503 past the retries, a truncated object: the run
fails, naming the URL, without a hang or a crash.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

import numpy as np
import pytest
from osgeo import gdal

from conftest import REPO_ROOT
from raster_checks import assert_pixels_equal, captured_errors, config_options, open_chunkref
from servers import Faults, MotoServer, RangeServer, moto_bucket
from test_hdf5_index import rows_reversed
from test_kerchunk_hdf5 import hdf5_python  # noqa: F401 (a fixture)
from test_remote_index import index, refs_with_urls, s3_env
from test_tables import run_python

WRITER = Path(__file__).with_name("hdf5_remote_writer.py")

BUCKET = "hdf5"

#: The most requests indexing nc/cube.nc (about 40 KiB) over HTTP may take.
MAX_REQUESTS = 2

#: The files of one chunk index kind each, and the sparse grid.
KINDS = ["btree1", "fixed", "extensible", "btree2", "single", "implicit", "sparse"]


@pytest.fixture(scope="module")
def root(hdf5_python, tmp_path_factory) -> Path:  # noqa: F811 (the fixture above)
    out = tmp_path_factory.mktemp("hdf5-remote")
    run_python(hdf5_python, WRITER.read_text(), out)
    return out


@pytest.fixture(scope="module")
def s3(root, tmp_path_factory) -> Iterator[MotoServer]:
    with moto_bucket(REPO_ROOT / "build" / "moto-venv", tmp_path_factory.mktemp("moto") / "log",
                     BUCKET, root) as server:
        yield server


@pytest.fixture(scope="module")
def http(root) -> Iterator[RangeServer]:
    server = RangeServer(root)
    yield server
    server.close()


def local_refs(binary: Path, source: Path, url: str, tmp_path: Path) -> dict:
    """The refs of the local copy's index, its path replaced by ``url``."""
    out = tmp_path / f"{source.name}.local.json"
    index(binary, source, "-o", out)
    return refs_with_urls(out, {str(source.resolve()): url})


def url_of(kind: str, s3: MotoServer, http: RangeServer, key: str) -> tuple[str, str, dict]:
    """The name given to chunkref, the URL the index must hold, the environment."""
    if kind == "http":
        return f"{http.url}{key}", f"{http.url}{key}", {}
    name = f"s3://{BUCKET}/{key}" if kind == "s3" else f"/vsis3/{BUCKET}/{key}"
    return name, f"s3://{BUCKET}/{key}", s3_env(s3)


@pytest.mark.parametrize("kind", ["s3", "vsis3", "http"])
@pytest.mark.parametrize("key", ["nc/cube.nc", "nc/userblock.h5", "kinds/extensible.h5",
                                 "kinds/sparse.h5"])
def test_remote_index_equals_the_local_copys(root, s3, http, tmp_path, chunkref_bin, kind, key):
    name, url, env = url_of(kind, s3, http, key)
    out = tmp_path / "remote.json"
    index(chunkref_bin, name, "-o", out, env=env)
    got = refs_with_urls(out, {})
    assert got == local_refs(chunkref_bin, root / key, url, tmp_path)
    assert any(isinstance(v, list) and v[0] == url for v in got.values())


def test_remote_index_reads_as_gdal_reads_the_local_copy(root, s3, tmp_path, chunkref_bin):
    out = tmp_path / "cube.json"
    index(chunkref_bin, f"s3://{BUCKET}/nc/cube.nc", "-o", out, env=s3_env(s3))
    source = root / "nc" / "cube.nc"
    for variable in ["t", "c"]:
        nat = gdal.OpenEx(f'NETCDF:"{source}":{variable}', gdal.OF_RASTER,
                          allowed_drivers=["netCDF"])
        with config_options(s3_env(s3)), captured_errors():
            ds = open_chunkref(f'CHUNKREF:"{out}":{variable}')
            assert ds.RasterCount == nat.RasterCount
            flip = rows_reversed(ds, nat)
            for b in range(1, ds.RasterCount + 1):
                want = nat.GetRasterBand(b).ReadAsArray()
                got = ds.GetRasterBand(b).ReadAsArray()
                assert_pixels_equal(got, want[::-1] if flip else want, f"{variable} band {b}")
                assert ds.GetRasterBand(b).GetNoDataValue() == nat.GetRasterBand(b).GetNoDataValue()


def test_a_small_remote_file_costs_few_requests(root, http, tmp_path, chunkref_bin):
    """nc/cube.nc: its head (16 KiB) and one block of 64 KiB serve every
    metadata read libhdf5 makes; chunks are never read."""
    assert (root / "nc" / "cube.nc").stat().st_size < 64 << 10
    http.set_faults(Faults())
    index(chunkref_bin, f"{http.url}nc/cube.nc", "-o", tmp_path / "cube.json")
    requests = [r for r in http.log.requests if r[0].endswith("cube.nc")]
    assert 1 <= len(requests) <= MAX_REQUESTS, requests


def test_a_bucket_glob_indexes_each_file_or_joins_them(root, s3, tmp_path, chunkref_bin):
    """``s3://bucket/days/*.nc`` to OUT_DIR/ (one index each) and to one
    file (joined along time): as the local copies, but for the URLs."""
    env = s3_env(s3)
    out = tmp_path / "each"
    index(chunkref_bin, f"s3://{BUCKET}/days/*.nc", "-o", f"{out}/", env=env)
    assert sorted(p.name for p in out.iterdir()) == [f"day{d}.nc.tile_index.json" for d in range(3)]
    urls = {str((root / "days" / f"day{d}.nc").resolve()): f"s3://{BUCKET}/days/day{d}.nc"
            for d in range(3)}
    for d in range(3):
        got = refs_with_urls(out / f"day{d}.nc.tile_index.json", {})
        assert got == local_refs(chunkref_bin, root / "days" / f"day{d}.nc",
                                 urls[str((root / "days" / f"day{d}.nc").resolve())], tmp_path)
    joined, local = tmp_path / "days.json", tmp_path / "days.local.json"
    index(chunkref_bin, f"s3://{BUCKET}/days/*.nc", "--concat-dim", "time", "-o", joined, env=env)
    index(chunkref_bin, *sorted((root / "days").glob("*.nc")), "-o", local)
    assert refs_with_urls(joined, {}) == refs_with_urls(local, urls)
    with config_options(env), captured_errors():
        ds = open_chunkref(f'CHUNKREF:"{joined}":temp')
        assert ds.RasterCount == 3
        np.testing.assert_array_equal(
            ds.ReadAsArray(), open_chunkref(f'CHUNKREF:"{local}":temp').ReadAsArray())


@pytest.mark.parametrize("name", KINDS)
def test_chunk_ranges_of_every_index_kind_are_kerchunks(root, tmp_path, chunkref_bin, name):
    source = root / "kinds" / f"{name}.h5"
    out = tmp_path / f"{name}.json"
    index(chunkref_bin, source, "-o", out)
    ours = {k: v[1:] for k, v in json.loads(out.read_text())["refs"].items() if isinstance(v, list)}
    theirs = json.loads(Path(f"{source}.kerchunk.json").read_text())["refs"]
    theirs = {k: v[1:] for k, v in theirs.items() if isinstance(v, list)}
    assert ours == theirs
    want = {"sparse": 3, "single": 1}.get(name, 7 * 9)
    assert len(ours) == want, sorted(ours)


def test_failed_reads_fail_the_run_naming_the_url(root, s3, http, tmp_path, chunkref_bin):
    """503 on every attempt past the retries (HTTP), and an object cut to
    half its length (S3): exit status 1, the URL named, no index written,
    no panic, no hang (the run's timeout is the test's)."""
    key = "nc/cube.nc"
    http.set_faults(Faults(kinds=("503",), attempts=1000, spare=()))
    try:
        url = f"{http.url}{key}"
        done = index(chunkref_bin, url, "-o", tmp_path / "x.json", ok=False,
                     env={"GDAL_HTTP_MAX_RETRY": "2", "GDAL_HTTP_RETRY_DELAY": "0.01"})
    finally:
        http.set_faults(Faults())
    assert done.returncode == 1 and url in done.stderr and "503" in done.stderr, done.stderr
    whole = (root / key).read_bytes()
    cut = tmp_path / "cut"
    (cut / "nc").mkdir(parents=True)
    (cut / "nc" / "cut.nc").write_bytes(whole[: len(whole) // 2])
    s3.upload_tree(BUCKET, cut)
    url = f"s3://{BUCKET}/nc/cut.nc"
    done = index(chunkref_bin, url, "-o", tmp_path / "y.json", ok=False, env=s3_env(s3))
    assert done.returncode == 1 and url in done.stderr, done.stderr
    assert "panicked" not in done.stderr and "truncated" in done.stderr, done.stderr
    assert not (tmp_path / "x.json").exists() and not (tmp_path / "y.json").exists()
