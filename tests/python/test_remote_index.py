"""``chunkref index`` reading its sources where they live: an S3 bucket
(moto's server on loopback) and a plain HTTP range server with injected
faults (servers.py).

The oracle is the index built from local copies of the same files: built
remotely, every index holds the same documents and the same chunk ranges,
only the file URLs differ (``s3://bucket/key`` or the ``http://`` URL
instead of the local path); and the remote index reads through GDAL as
GDAL's own drivers read the local files.  Sources are a bucket of COGs (one
also in a subdirectory), NITF files and DTED cells, listed by glob
patterns, ``/vsis3/`` names and ``--from-list``.  Failures: retried faults
leave no trace, faults beyond the retries fail the run naming every
failed URL, ``--skip-errors`` leaves them out and lists them
(``--failures``), and a failed run leaves no half-written index.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterator

import numpy as np
import pytest
from osgeo import gdal

from conftest import REPO_ROOT, run_chunkref
from raster_checks import assert_matches, config_options, native_levels, open_chunkref
from servers import Faults, MotoServer, RangeServer, moto_bucket
from test_dted import cell_name, write_cell
from test_nitf import write_nitf
from test_tiff_index import TIFF_CASES, write_tiff

BUCKET = "archive"

#: name -> TIFF case of the COGs in the bucket (cogs/<name>.tif).
COGS = {"a": "cog-deflate-pred2-3band", "b": "cog-deflate-pred2-3band"}


class Archive:
    """The local files, the same tree uploaded to the bucket."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / "cogs").mkdir()
        self.cogs = [write_tiff(root / "cogs" / f"{n}.tif", TIFF_CASES[c]) for n, c in COGS.items()]
        (root / "cogs" / "2021").mkdir()
        self.cogs.append(write_tiff(root / "cogs" / "2021" / "c.tif", TIFF_CASES["cog-deflate-pred2-3band"]))
        (root / "cogs" / "notes.txt").write_text("not an image")
        (root / "nitf").mkdir()
        self.nitf = write_nitf(root / "nitf" / "c8.ntf", "c8-u1-3band")
        self.cells = [
            write_cell(root / "dted" / cell_name(45, lon, 0), 45, lon, 121, 121, seed=lon)
            for lon in (15, 16)
        ]

    def key(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()


@pytest.fixture(scope="module")
def archive(tmp_path_factory) -> Archive:
    return Archive(tmp_path_factory.mktemp("archive"))


@pytest.fixture(scope="module")
def s3(archive, tmp_path_factory) -> Iterator[MotoServer]:
    with moto_bucket(REPO_ROOT / "build" / "moto-venv", tmp_path_factory.mktemp("moto") / "log",
                     BUCKET, archive.root) as server:
        yield server


@pytest.fixture(scope="module")
def http(archive) -> Iterator[RangeServer]:
    server = RangeServer(archive.root)
    yield server
    server.close()


def s3_env(s3: MotoServer) -> dict[str, str]:
    """GDAL's configuration names reaching moto (signed requests)."""
    return {
        "AWS_S3_ENDPOINT": s3.endpoint,
        "AWS_HTTPS": "NO",
        "AWS_VIRTUAL_HOSTING": "FALSE",
        "AWS_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
    }


def index(binary: Path, *args: str | Path, env: dict[str, str] | None = None,
          stdin: str | None = None, ok: bool = True):
    """``chunkref index *args`` with ``env`` added to the environment."""
    import subprocess

    done = subprocess.run(
        [str(binary), "index", *map(str, args)], capture_output=True, text=True, timeout=300,
        env=os.environ | (env or {}), input=stdin,
    )
    if ok:
        assert done.returncode == 0, f"chunkref index {args} failed:\n{done.stderr}"
    return done


def refs_with_urls(path: Path, urls: dict[str, str]) -> dict:
    """The refs of a Kerchunk JSON index, every file URL mapped by ``urls``
    (in references, and where metadata names the source)."""
    def mapped(value):
        if isinstance(value, list):
            return [urls.get(value[0], value[0]), *value[1:]]
        for old, new in urls.items():
            value = value.replace(json.dumps(old), json.dumps(new))
        return value

    return {k: mapped(v) for k, v in json.loads(path.read_text())["refs"].items()}


def local_index(binary: Path, source: Path, out: Path) -> Path:
    index(binary, source, "-o", out)
    return out


def test_bucket_glob_indexes_like_local_copies(archive, s3, tmp_path, chunkref_bin):
    out = tmp_path / "remote"
    done = index(chunkref_bin, f"s3://{BUCKET}/cogs/*.tif", "-o", f"{out}/", env=s3_env(s3))
    made = sorted(p.name for p in out.iterdir())
    # * stops at "/": cogs/2021/c.tif is not listed; notes.txt does not match.
    assert made == ["a.tif.tile_index.json", "b.tif.tile_index.json"], (made, done.stderr)
    for cog in archive.cogs[:2]:
        url = f"s3://{BUCKET}/{archive.key(cog)}"
        want = refs_with_urls(local_index(chunkref_bin, cog, tmp_path / f"{cog.name}.json"),
                              {str(cog.resolve()): url})
        got = refs_with_urls(out / f"{cog.name}.tile_index.json", {})
        assert got == want
        with config_options(s3_env(s3)):
            assert_matches(open_chunkref(out / f"{cog.name}.tile_index.json"),
                           native_levels(gdal.Open(str(cog))))


def test_double_star_crosses_directories(archive, s3, tmp_path, chunkref_bin):
    out = tmp_path / "all"
    index(chunkref_bin, f"s3://{BUCKET}/cogs/**/*.tif", "-o", f"{out}/", env=s3_env(s3))
    assert sorted(p.name for p in out.iterdir()) == [
        "a.tif.tile_index.json", "b.tif.tile_index.json", "c.tif.tile_index.json"]


def test_stack_from_a_bucket_reads_like_the_local_stack(archive, s3, tmp_path, chunkref_bin):
    remote, local = tmp_path / "remote.parquet", tmp_path / "local.parquet"
    index(chunkref_bin, "--stack", f"/vsis3/{BUCKET}/cogs/*.tif", "-o", remote, env=s3_env(s3))
    index(chunkref_bin, "--stack", *archive.cogs[:2], "-o", local)
    with config_options(s3_env(s3)):
        got = open_chunkref(remote)
        want = open_chunkref(local)
        assert got.RasterCount == want.RasterCount == 6
        np.testing.assert_array_equal(got.ReadAsArray(), want.ReadAsArray())


def test_nitf_from_a_list_on_stdin_and_dted_by_glob(archive, s3, tmp_path, chunkref_bin):
    nitf_url = f"s3://{BUCKET}/{archive.key(archive.nitf)}"
    out = tmp_path / "c8.json"
    index(chunkref_bin, "--from-list", "-", "-o", out, env=s3_env(s3), stdin=f"# NITF\n{nitf_url}\n")
    want = refs_with_urls(local_index(chunkref_bin, archive.nitf, tmp_path / "local.json"),
                          {str(archive.nitf.resolve()): nitf_url})
    assert refs_with_urls(out, {}) == want
    mosaic = tmp_path / "dted.json"
    index(chunkref_bin, f"s3://{BUCKET}/dted/*.dt0", "-o", mosaic, env=s3_env(s3))
    with config_options(s3_env(s3)):
        got = open_chunkref(mosaic)
        vrt = gdal.BuildVRT("", [str(c) for c in archive.cells])
        np.testing.assert_array_equal(got.ReadAsArray(), vrt.ReadAsArray())


def test_http_sources_read_through_retried_faults(archive, http, tmp_path, chunkref_bin):
    cog = archive.cogs[0]
    url = f"{http.url}{archive.key(cog)}"
    want = refs_with_urls(local_index(chunkref_bin, cog, tmp_path / "local.json"),
                          {str(cog.resolve()): url})
    http.set_faults(Faults(kinds=("503", "drop", "short", "slow"), attempts=4, spare=(),
                           slow_seconds=1.5))
    try:
        out = tmp_path / "remote.json"
        index(chunkref_bin, url, "-o", out,
              env={"GDAL_HTTP_MAX_RETRY": "5", "GDAL_HTTP_RETRY_DELAY": "0.01",
                   "GDAL_HTTP_TIMEOUT": "0.5"})
        assert refs_with_urls(out, {}) == want
        assert {kind for _, kind in http.log.faults} == {"503", "drop", "short", "slow"}, http.log.faults
    finally:
        http.set_faults(Faults())


def test_failed_sources_fail_the_run_or_are_left_out(archive, http, s3, tmp_path, chunkref_bin):
    good = f"s3://{BUCKET}/{archive.key(archive.cogs[0])}"
    gone = f"s3://{BUCKET}/cogs/missing.tif"
    out = tmp_path / "stack.parquet"
    done = index(chunkref_bin, "--stack", good, gone, "-o", out, env=s3_env(s3), ok=False)
    assert done.returncode != 0 and gone in done.stderr, done.stderr
    assert not out.exists() and not list(tmp_path.glob(".stack.parquet.partial-*"))
    failures = tmp_path / "failures.tsv"
    # Beyond the retries over HTTP, and missing in the bucket: both listed.
    http.set_faults(Faults(kinds=("503",), attempts=1000, spare=()))
    broken = f"{http.url}{archive.key(archive.cogs[1])}"
    try:
        index(chunkref_bin, "--skip-errors", "--failures", failures, good, gone, broken,
              "-o", f"{tmp_path}/each/", env=s3_env(s3) | {"GDAL_HTTP_MAX_RETRY": "1",
                                                           "GDAL_HTTP_RETRY_DELAY": "0.01"})
    finally:
        http.set_faults(Faults())
    listed = dict(line.split("\t", 1) for line in failures.read_text().splitlines())
    assert set(listed) == {gone, broken}, listed
    assert "not found" in listed[gone] and "503" in listed[broken], listed
    assert [p.name for p in (tmp_path / "each").iterdir()] == ["a.tif.tile_index.json"]


def test_patterns_that_cannot_be_listed_or_match_nothing(s3, tmp_path, chunkref_bin, http):
    done = index(chunkref_bin, f"{http.url}cogs/*.tif", "-o", tmp_path / "x.json", ok=False)
    assert done.returncode != 0 and "cannot be listed" in done.stderr, done.stderr
    done = index(chunkref_bin, f"s3://{BUCKET}/nothing/*.tif", "-o", tmp_path / "x.json",
                 env=s3_env(s3), ok=False)
    assert done.returncode != 0 and "no object matches" in done.stderr, done.stderr


def test_collection_grown_from_the_bucket_reads_from_the_bucket(archive, s3, tmp_path, chunkref_bin):
    """Days appended from the bucket to a collection of parts, which is
    then uploaded and read through /vsis3/ like the same stack made at once
    from the local files."""
    up = tmp_path / "up"
    coll = up / "stack.parquet"
    for cog in archive.cogs[:2]:
        index(chunkref_bin, "--append", f"s3://{BUCKET}/{archive.key(cog)}", "-o", coll,
              env=s3_env(s3))
    assert (coll / "part-00001.parquet").is_file()
    local = tmp_path / "local.parquet"
    index(chunkref_bin, "--stack", *archive.cogs[:2], "-o", local)
    s3.make_bucket("collections")
    s3.upload_tree("collections", up)
    with config_options(s3_env(s3)):
        got = open_chunkref("/vsis3/collections/stack.parquet")
        np.testing.assert_array_equal(got.ReadAsArray(), open_chunkref(local).ReadAsArray())


def test_zarr_stores_in_a_bucket_index_like_local_copies(s3, tmp_path, chunkref_bin):
    """A Zarr v2 store and a v3 sharded store, listed from the bucket (names
    and sizes in one listing), shard indexes read by range: the index equals
    the local one but for the URLs, and reads what zarr-python wrote."""
    import kerchunk_builders as kb
    from test_zarr_index import Spec, check_arrays, write_zarr3

    up = tmp_path / "up"
    up.mkdir()
    v2 = [Spec("g/a", kb.sample_pixels("<i2", (50, 75)), (16, 16), fill=-9, blank=[[(0, 16), (0, 16)]])]
    v3 = [Spec("a", kb.sample_pixels("<u2", (40, 60)), (10, 10), shards=(20, 30), fill=7)]
    stores = {"v2.zarr": write_zarr3(up / "v2.zarr", 2, v2), "v3.zarr": write_zarr3(up / "v3.zarr", 3, v3)}
    for npy in up.glob("*.npy"):
        npy.unlink()
    for spec in up.glob("*-spec.json"):
        spec.unlink()
    s3.make_bucket("stores")
    s3.upload_tree("stores", up)
    for name, arrays in (("v2.zarr", v2), ("v3.zarr", v3)):
        local = tmp_path / f"{name}.local.json"
        index(chunkref_bin, stores[name], "-o", local)
        remote = tmp_path / f"{name}.remote.json"
        index(chunkref_bin, f"s3://stores/{name}", "-o", remote, env=s3_env(s3))
        prefix = str(stores[name].resolve())
        got = {k: ([v[0].replace(f"s3://stores/{name}", prefix), *v[1:]] if isinstance(v, list) else v)
               for k, v in refs_with_urls(remote, {}).items()}
        assert got == refs_with_urls(local, {})
        with config_options(s3_env(s3)):
            check_arrays(remote, arrays)
