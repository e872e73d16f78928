"""``gs://`` and ``az://`` against real servers on loopback (cloud_servers.py:
fake-gcs-server and Azurite), reached with GDAL's own settings
(``CPL_GS_ENDPOINT`` with ``GS_NO_SIGN_REQUEST``;
``AZURE_STORAGE_CONNECTION_STRING``, signed with the account key): chunk
URLs on the store, the index on the store read by object_store
(``CHUNKREF:gs://...``) and by GDAL (``/vsigs/``, ``/vsiaz/``), read
identically to the local fixtures of test_remote.py; a COG index next to its
COG reads as GDAL's native driver reads that COG from the same store.
"""

from __future__ import annotations

import contextlib
from typing import Iterator

import numpy as np
import pytest
from osgeo import gdal

from cloud_servers import AzuriteServer, GcsServer
from conftest import REPO_ROOT
from raster_checks import assert_matches, config_options, failure_text, native_levels, open_chunkref
from test_remote import Tree

BUCKET = "chunks"
FORM = "multirange_shuffled"


@pytest.fixture(scope="module")
def tree(tmp_path_factory, chunkref_bin) -> Tree:
    return Tree(tmp_path_factory.mktemp("cloud"), chunkref_bin)


class Store:
    """One server: its URL scheme, GDAL's /vsi prefix and the settings
    reaching it."""

    def __init__(self, scheme: str, vsi: str, options: dict[str, str], server) -> None:
        self.scheme, self.vsi, self.options, self.server = scheme, vsi, options, server


@pytest.fixture(scope="module", params=["gs", "az"])
def store(request, tree, tmp_path_factory) -> Iterator[Store]:
    work = tmp_path_factory.mktemp(request.param)
    if request.param == "gs":
        server = GcsServer(REPO_ROOT / "build" / "gcs-venv", tree.root, BUCKET, work)
        s = Store("gs", "/vsigs/", {"CPL_GS_ENDPOINT": server.endpoint,
                                     "GS_NO_SIGN_REQUEST": "YES"}, server)
    else:
        server = AzuriteServer(REPO_ROOT / "build" / "azurite", REPO_ROOT / "build" / "azure-venv",
                               tree.root, BUCKET, work)
        s = Store("az", "/vsiaz/", {"AZURE_STORAGE_CONNECTION_STRING": server.connection_string},
                  server)
    yield s
    server.close()


@contextlib.contextmanager
def settings(store: Store) -> Iterator[None]:
    with config_options(store.options):
        try:
            yield
        finally:
            gdal.VSICurlClearCache()


@pytest.mark.parametrize("where", ["urls", "index", "vsi-index"])
def test_reads_like_local(tree, store, tmp_path, where):
    if where == "urls":
        name = tree.rebased(FORM, f"{store.scheme}://{BUCKET}/", tmp_path / "i.json")
    elif where == "index":
        name = f"CHUNKREF:{store.scheme}://{BUCKET}/idx/{FORM}.json"
    else:
        name = f"{store.vsi}{BUCKET}/idx/{FORM}.json"
    with settings(store):
        assert_matches(open_chunkref(name), [tree.store.data])


def test_cog_index_reads_like_gdal_on_the_store(tree, store):
    """The oracle is GDAL's own driver reading the same COG through
    /vsigs/ or /vsiaz/ with the same settings."""
    with settings(store):
        native = native_levels(gdal.Open(f"{store.vsi}{BUCKET}/cog/img.tif"))
        for got, want in zip(native, tree.cog_levels):
            np.testing.assert_array_equal(got, want)
        assert_matches(open_chunkref(f"{store.vsi}{BUCKET}/cog/img.tile_index.json"), native)


def test_missing_object_names_the_url(tree, store, tmp_path):
    index = tree.rebased("range", f"{store.scheme}://{BUCKET}/gone/", tmp_path / "i.json")
    with settings(store):
        ds = open_chunkref(index)
        message = failure_text(ds.GetRasterBand(1).ReadAsArray)
    assert f"{store.scheme}://{BUCKET}/gone/src/a.zarr/a/0.0" in message, message
    assert "not found" in message, message
