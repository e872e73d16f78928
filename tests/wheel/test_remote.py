"""Indexes and sources over the network, without GDAL: moto's S3 server,
fake-gcs-server, Azurite and a plain HTTP range server on loopback, read by
``chunkref.open`` with settings passed as ``config`` or taken from the
environment, and indexed by the wheel's command."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import chunkref
from conftest import REPO, make_sources, run
from cloud_servers import AzuriteServer, GcsServer
from servers import RangeServer, moto_bucket

BUCKET = "wheel"


@pytest.fixture(scope="module")
def tree(tmp_path_factory, chunkref_command) -> Path:
    """A tiled TIFF with overviews and a portable index beside it."""
    root = make_sources("tiff-deflate", tmp_path_factory.mktemp("tree"))
    run(chunkref_command, "index", "--template-base", str(root / "src.tif"),
        "-o", str(root / "src.tile_index.json"))
    return root


@pytest.fixture(scope="module")
def s3(tree, tmp_path_factory):
    with moto_bucket(REPO / "build" / "moto-venv", tmp_path_factory.mktemp("moto") / "log",
                     BUCKET, tree) as server:
        yield server


def _s3_config(s3) -> dict[str, str]:
    return {
        "AWS_ENDPOINT_URL": s3.url.rstrip("/"),
        "AWS_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_VIRTUAL_HOSTING": "FALSE",
    }


@pytest.mark.parametrize("url", [f"s3://{BUCKET}/src.tile_index.json",
                                 f"/vsis3/{BUCKET}/src.tile_index.json"])
def test_index_on_s3(url, tree, s3):
    local = chunkref.open(str(tree / "src.tile_index.json"))
    remote = chunkref.open(url, config=_s3_config(s3))
    assert remote.transform == local.transform and remote.crs == local.crs
    for level in range(len(local.levels)):
        assert np.array_equal(remote.read(level=level), local.read(level=level))


@pytest.mark.parametrize("scheme", ["gs", "az"])
def test_index_on_gcs_and_azure(scheme, tree, tmp_path):
    """GDAL's settings reach fake-gcs-server (``CPL_GS_ENDPOINT``) and
    Azurite (``AZURE_STORAGE_CONNECTION_STRING``, signed)."""
    if scheme == "gs":
        server = GcsServer(REPO / "build" / "gcs-venv", tree, BUCKET, tmp_path)
        config = {"CPL_GS_ENDPOINT": server.endpoint, "GS_NO_SIGN_REQUEST": "YES"}
    else:
        server = AzuriteServer(REPO / "build" / "azurite", REPO / "build" / "azure-venv", tree,
                               BUCKET, tmp_path)
        config = {"AZURE_STORAGE_CONNECTION_STRING": server.connection_string}
    try:
        local = chunkref.open(str(tree / "src.tile_index.json"))
        for url in (f"{scheme}://{BUCKET}/src.tile_index.json",
                    f"/vsi{scheme}/{BUCKET}/src.tile_index.json"):
            remote = chunkref.open(url, config=config)
            assert remote.transform == local.transform and remote.crs == local.crs
            for level in range(len(local.levels)):
                assert np.array_equal(remote.read(level=level), local.read(level=level)), url
    finally:
        server.close()


def test_config_does_not_leak(tree, s3):
    """Settings given to one open are not those of the next."""
    chunkref.open(f"s3://{BUCKET}/src.tile_index.json", config=_s3_config(s3))
    with pytest.raises(chunkref.ChunkrefError):
        chunkref.open(f"s3://{BUCKET}/src.tile_index.json",
                      config={"AWS_ENDPOINT_URL": "http://127.0.0.1:9", "GDAL_HTTP_MAX_RETRY": "0"})


def test_command_indexes_s3_sources(tree, s3, tmp_path, chunkref_command):
    """The wheel's command indexes a source on S3 (settings from the
    environment) and the Python face reads the index."""
    env = {**os.environ, **_s3_config(s3)}
    out = tmp_path / "remote.json"
    run(chunkref_command, "index", f"s3://{BUCKET}/src.tif", "-o", str(out), env=env)
    ds = chunkref.open(str(out), config=_s3_config(s3))
    assert np.array_equal(ds.read(), chunkref.open(str(tree / "src.tile_index.json")).read())


def test_http_range_server(tree):
    server = RangeServer(tree)
    try:
        url = server.url + "src.tile_index.json"
        ds = chunkref.open(url)
        local = chunkref.open(str(tree / "src.tile_index.json"))
        assert np.array_equal(ds.read(((20, 120), (40, 260)), level=0),
                              local.read(((20, 120), (40, 260))))
        # A missing index names the URL.
        with pytest.raises(chunkref.ChunkrefError, match="missing.json"):
            chunkref.open(server.url + "missing.json")
    finally:
        server.close()


@pytest.mark.parametrize("kept_mib", [None, "0"])
def test_fetched_bytes_kept_for_the_next_strip(tree, kept_mib):
    """Strips of rows read one after another decode the same tiles in part:
    the bytes the first strip fetched serve the next (at most
    ``CHUNKREF_FETCH_CACHE`` MiB, 8 by default without GDAL), unless the
    setting keeps none."""
    server = RangeServer(tree)
    try:
        config = {} if kept_mib is None else {"CHUNKREF_FETCH_CACHE": kept_mib}
        ds = chunkref.open(server.url + "src.tile_index.json", config=config)
        local = chunkref.open(str(tree / "src.tile_index.json"))
        width = ds.shape[2]
        strips = [((0, 10), (0, width)), ((10, 20), (0, width))]
        server.log.requests.clear()
        assert np.array_equal(ds.read(strips[0]), local.read(strips[0]))
        first = len(server.log.requests)
        assert first > 0
        assert np.array_equal(ds.read(strips[1]), local.read(strips[1]))
        again = len(server.log.requests) - first
        assert again == (0 if kept_mib is None else first), server.log.requests
    finally:
        server.close()


def test_no_gdal_in_the_process(tree, s3):
    """Opening, reading (local and S3), xarray and dask load no libgdal.
    (The engine is given as its class: named "chunkref", xarray imports
    every installed backend to find it, rioxarray's too, and that one loads
    the libgdal of rasterio's wheel.)"""
    code = f"""
import chunkref, xarray as xr, dask
from chunkref.xarray_backend import ChunkrefBackendEntrypoint as engine
ds = chunkref.open({str(tree / 'src.tile_index.json')!r})
ds.read()
chunkref.open("s3://{BUCKET}/src.tile_index.json", config={_s3_config(s3)!r}).read(level=1)
xr.open_dataset({str(tree / 'src.tile_index.json')!r}, engine=engine, chunks={{}}).band_data.sum().compute()
maps = open("/proc/self/maps").read()
assert "chunkref" in maps, "the extension is not mapped?"
assert "libgdal" not in maps, [l for l in maps.splitlines() if "libgdal" in l][:3]
print("no libgdal")
"""
    env = {k: v for k, v in os.environ.items() if k != "GDAL_DRIVER_PATH"}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True,
                       text=True, env=env, timeout=300)
    assert p.returncode == 0 and "no libgdal" in p.stdout, p.stderr


def test_reads_release_the_gil(tree):
    """A read waiting on a slow server lets other Python threads run."""
    import threading

    server = RangeServer(tree, delay=0.3)
    try:
        ds = chunkref.open(server.url + "src.tile_index.json")
        done = threading.Event()
        ticks = 0

        def read():
            ds.read(level=0)
            done.set()

        t = threading.Thread(target=read)
        t.start()
        while not done.is_set():
            ticks += 1
        t.join()
        # Held through the read, the GIL would let this loop run only in the
        # interpreter's switch intervals around it.
        assert ticks > 1_000_000, ticks
    finally:
        server.close()
