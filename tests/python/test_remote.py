"""Remote reads against real servers on loopback (servers.py): the same
fixtures read identically from local disk, a plain HTTP range server and an
S3 server (moto), with the index local, in /vsimem/, or remote (/vsicurl/,
/vsis3/, ``CHUNKREF:s3://``); signed and unsigned S3 requests; faults the
retries absorb, and faults they cannot (the error names URL and range);
remote indexes may not read local files.

Fixtures: the zarr-python store of :func:`kerchunk_builders.write_simple_store`
indexed in several reference forms with relative URLs, and a GDAL-written
COG indexed by ``chunkref index --template-base``.  Everything lives in one
tree, served as is by the HTTP server and uploaded to the S3 bucket, so a
relative reference means the same file everywhere.
"""

from __future__ import annotations

import contextlib
import json
from concurrent.futures import ThreadPoolExecutor
import os
import re
from pathlib import Path
from typing import Iterator

import numpy as np
import pytest
from osgeo import gdal

import kerchunk_builders as kb
from conftest import REPO_ROOT
from raster_checks import (
    assert_matches,
    config_options,
    failure_text,
    native_levels,
    open_chunkref,
)
from servers import Faults, MotoServer, RangeServer, free_port, moto_bucket
from test_tiff_index import TIFF_CASES, index_tiff, write_tiff

#: Reference forms indexed (one range, ranges scattered in reverse file order, whole files).
FORMS = ("range", "multirange_shuffled", "whole")
BUCKET = "chunks"

#: Fast retries for the fault tests (GDAL option names).
RETRY_FAST = {"GDAL_HTTP_RETRY_DELAY": "0.02", "GDAL_HTTP_TIMEOUT": "1"}


@contextlib.contextmanager
def config(options: dict[str, str]) -> Iterator[None]:
    """GDAL configuration options set for the duration of the block, with
    GDAL's HTTP cache cleared after it."""
    with config_options(options):
        try:
            yield
        finally:
            gdal.VSICurlClearCache()


class Tree:
    """The fixture tree: store, indexes, COG and what GDAL reads from them."""

    def __init__(self, root: Path, chunkref_bin: Path) -> None:
        self.root = root
        self.store = kb.write_simple_store(root / "src")
        self.indexes = {
            form: kb.write_index(
                root / "idx" / f"{form}.json", self.store.entries, kb.RefStyle(form, "relative")
            )
            for form in FORMS
        }
        (root / "cog").mkdir()
        cog = write_tiff(root / "cog" / "img.tif", TIFF_CASES["cog-deflate-pred2-3band"])
        index_tiff(chunkref_bin, cog, root / "cog" / "img.tile_index.json", "--template-base")
        self.cog = cog
        self.cog_levels = native_levels(gdal.Open(str(cog)))

    def rebased(self, form: str, prefix: str, out: Path) -> Path:
        """The index of ``form`` with every relative URL made absolute under
        ``prefix`` (e.g. ``s3://bucket/``), written to ``out``."""
        index = self.indexes[form]
        doc = json.loads(index.read_text())
        for value in doc["refs"].values():
            if isinstance(value, list):
                rel = os.path.relpath((index.parent / value[0]).resolve(), self.root.resolve())
                value[0] = prefix + Path(rel).as_posix()
        out.write_text(json.dumps(doc))
        return out


@pytest.fixture(scope="module")
def tree(tmp_path_factory, chunkref_bin) -> Tree:
    return Tree(tmp_path_factory.mktemp("remote"), chunkref_bin)


@pytest.fixture(scope="module")
def http(tree) -> Iterator[RangeServer]:
    server = RangeServer(tree.root)
    yield server
    server.close()


@pytest.fixture(autouse=True)
def _no_faults(request) -> None:
    if "http" in request.fixturenames:
        request.getfixturevalue("http").set_faults(Faults())


@pytest.fixture(scope="module")
def s3(tree, tmp_path_factory) -> Iterator[MotoServer]:
    with moto_bucket(REPO_ROOT / "build" / "moto-venv", tmp_path_factory.mktemp("moto") / "log",
                     BUCKET, tree.root) as server:
        yield server


def s3_options(s3: MotoServer, signed: bool) -> dict[str, str]:
    """GDAL options reaching moto, with credentials or unsigned."""
    options = {
        "AWS_S3_ENDPOINT": s3.endpoint,
        "AWS_HTTPS": "NO",
        "AWS_VIRTUAL_HOSTING": "FALSE",
        "AWS_REGION": "us-east-1",
    }
    if signed:
        options |= {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
    else:
        options |= {"AWS_NO_SIGN_REQUEST": "YES", "AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": ""}
    return options


# --------------------------------------------------------------------------
# The same pixels from everywhere
# --------------------------------------------------------------------------


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize(
    "where", ["local", "http-urls", "vsicurl-urls", "vsicurl-index", "https-index-array"]
)
def test_http_reads_like_local(tree, http, tmp_path, form, where):
    if where == "local":
        name = tree.indexes[form]
    elif where == "http-urls":
        name = tree.rebased(form, http.url, tmp_path / "i.json")
    elif where == "vsicurl-urls":
        name = tree.rebased(form, "/vsicurl/" + http.url, tmp_path / "i.json")
    elif where == "vsicurl-index":
        name = f"/vsicurl/{http.url}idx/{form}.json"
    else:  # an http URL after the prefix, quoted, with the array path
        name = f'CHUNKREF:"{http.url}idx/{form}.json":a'
    with config(RETRY_FAST):
        assert_matches(open_chunkref(name), [tree.store.data])
    if where != "local":
        assert http.log.requests, "nothing was read over HTTP"


def test_scatter_gather_fetches_every_range(tree, http, tmp_path):
    """Without coalescing, a multi-range chunk is one request per range,
    concatenated in index order (the ranges lie in reverse file order)."""
    name = tree.rebased("multirange_shuffled", http.url, tmp_path / "i.json")
    doc = json.loads(name.read_text())
    ranges = sum(len(v[1]) for v in doc["refs"].values() if isinstance(v, list))
    with config({"CHUNKREF_COALESCE_GAP": "0", "CHUNKREF_WINDOW_READS": "NO"}):
        assert_matches(open_chunkref(name), [tree.store.data])
    chunk_requests = [r for r in http.log.requests if r[0].endswith("packed.bin")]
    assert len(chunk_requests) == ranges, (len(chunk_requests), ranges)


def test_window_reads_coalesce_nearby_ranges(tree, http, tmp_path):
    """A window read plans the ranges of all its chunks together: ranges
    within CHUNKREF_COALESCE_GAP of each other become one request."""
    name = tree.rebased("multirange_shuffled", http.url, tmp_path / "i.json")
    with config({"CHUNKREF_COALESCE_GAP": "65536"}):
        ds = open_chunkref(name)
        np.testing.assert_array_equal(ds.ReadAsArray(), tree.store.data)
    chunk_requests = [r for r in http.log.requests if r[0].endswith("packed.bin")]
    assert len(chunk_requests) == 1, chunk_requests


def test_advise_read_fills_the_block_cache_in_one_round(tree, http, tmp_path):
    """AdviseRead loads a window's blocks with batched reads; the block
    reads that follow need no further requests and see the right pixels."""
    name = tree.rebased("multirange_shuffled", http.url, tmp_path / "i.json")
    with config({"CHUNKREF_COALESCE_GAP": "65536"}):
        ds = open_chunkref(name)
    band = ds.GetRasterBand(1)
    bw, bh = band.GetBlockSize()
    assert ds.AdviseRead(0, 0, ds.RasterXSize, ds.RasterYSize) == gdal.CE_None
    block_rows = -(-ds.RasterYSize // bh)
    advised = [r for r in http.log.requests if r[0].endswith("packed.bin")]
    assert 1 <= len(advised) <= block_rows, advised
    for b in range(ds.RasterCount):
        target = ds.GetRasterBand(b + 1)
        for y in range(0, ds.RasterYSize, bh):
            for x in range(0, ds.RasterXSize, bw):
                w, h = min(bw, ds.RasterXSize - x), min(bh, ds.RasterYSize - y)
                got = target.ReadAsArray(x, y, w, h)
                want = np.asarray(tree.store.data).reshape(-1, ds.RasterYSize, ds.RasterXSize)
                np.testing.assert_array_equal(got, want[b, y : y + h, x : x + w])
    after = [r for r in http.log.requests if r[0].endswith("packed.bin")]
    assert after == advised, "block reads after AdviseRead went to the server"


def test_many_threads_read_remote_datasets_at_once(tree, http, tmp_path):
    """GDAL calls from several threads share the runtime and the store."""
    name = tree.rebased("multirange_shuffled", http.url, tmp_path / "i.json")
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: open_chunkref(name).ReadAsArray(), range(8)))
    for got in results:
        np.testing.assert_array_equal(got, tree.store.data)


@pytest.mark.parametrize("requests", ["1", "3"])
def test_bounded_requests_in_flight(tree, http, tmp_path, requests):
    name = tree.rebased("multirange_shuffled", http.url, tmp_path / "i.json")
    with config({"CHUNKREF_MAX_REQUESTS": requests}):
        assert_matches(open_chunkref(name), [tree.store.data])


@pytest.mark.parametrize("signed", [True, False], ids=["signed", "unsigned"])
@pytest.mark.parametrize(
    "where", ["s3-urls", "vsis3-urls", "vsis3-index", "s3-index", "vsimem-index"]
)
def test_s3_reads_like_local(tree, s3, tmp_path, where, signed):
    form = "multirange_shuffled"
    if where == "s3-urls":
        name = tree.rebased(form, f"s3://{BUCKET}/", tmp_path / "i.json")
    elif where == "vsis3-urls":
        name = tree.rebased(form, f"/vsis3/{BUCKET}/", tmp_path / "i.json")
    elif where == "vsis3-index":
        name = f"/vsis3/{BUCKET}/idx/{form}.json"
    elif where == "s3-index":
        name = f"CHUNKREF:s3://{BUCKET}/idx/{form}.json"
    else:
        local = tree.rebased(form, f"s3://{BUCKET}/", tmp_path / "i.json")
        name = "/vsimem/chunkref-test/i.json"
        gdal.FileFromMemBuffer(name, local.read_bytes())
    try:
        with config(s3_options(s3, signed)):
            assert_matches(open_chunkref(name), [tree.store.data])
    finally:
        if str(name).startswith("/vsimem/"):
            gdal.Unlink(name)


def test_cog_index_on_s3_reads_like_gdal_on_s3(tree, s3):
    """A ``{{base}}`` index next to its COG in the bucket; the oracle is
    GDAL's own driver reading the same COG through /vsis3/."""
    with config(s3_options(s3, signed=True)):
        native = native_levels(gdal.Open(f"/vsis3/{BUCKET}/cog/img.tif"))
        for got, want in zip(native, tree.cog_levels):
            np.testing.assert_array_equal(got, want)
        assert_matches(open_chunkref(f"/vsis3/{BUCKET}/cog/img.tile_index.json"), native)


def test_missing_object_names_the_url(tree, s3, tmp_path):
    index = tree.rebased("range", f"s3://{BUCKET}/gone/", tmp_path / "i.json")
    with config(s3_options(s3, signed=True)):
        ds = open_chunkref(index)
        message = failure_text(ds.GetRasterBand(1).ReadAsArray)
    assert f"s3://{BUCKET}/gone/src/a.zarr/a/0.0" in message and "not found" in message, message


def test_a_missing_aws_profile_fails_s3_only(tree, http, s3, tmp_path):
    """As in GDAL, the AWS profile matters only to S3: a profile named but
    not found fails reads from S3 naming it, not local or HTTP reads."""
    options = {"AWS_PROFILE": "nope", "AWS_ACCESS_KEY_ID": None,
               "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "credentials"),
               "AWS_CONFIG_FILE": str(tmp_path / "config")}
    (tmp_path / "config").write_text("[profile work]\nregion = eu-west-1\n")
    on_s3 = tree.rebased("range", f"s3://{BUCKET}/", tmp_path / "s3.json")
    with config(options):
        assert_matches(open_chunkref(tree.indexes["range"]), [tree.store.data])
        assert_matches(open_chunkref(tree.rebased("range", http.url, tmp_path / "h.json")),
                       [tree.store.data])
        ds = open_chunkref(on_s3)  # kept open while its band is read
        message = failure_text(ds.GetRasterBand(1).ReadAsArray)
    assert f"s3://{BUCKET}/" in message and "AWS_PROFILE=nope" in message, message


@pytest.mark.parametrize("setting", ["AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_S3_ENDPOINT"])
def test_sdk_endpoint_settings_reach_the_server(tree, s3, tmp_path, setting):
    """The AWS SDKs' ``AWS_ENDPOINT_URL`` and ``AWS_ENDPOINT_URL_S3`` name the
    endpoint as ``AWS_S3_ENDPOINT`` does, in GDAL's order: ``AWS_S3_ENDPOINT``
    first, then the S3-specific URL, then the general one (the others point
    at a closed port, so only the winner can serve the read). An endpoint
    on an IP address is reached path-style with no AWS_VIRTUAL_HOSTING."""
    dead = f"http://127.0.0.1:{free_port()}"
    order = ["AWS_S3_ENDPOINT", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"]
    options = {key: None for key in order} | {
        "AWS_VIRTUAL_HOSTING": None, "AWS_HTTPS": None, "AWS_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
        "GDAL_HTTP_MAX_RETRY": "0",
    }
    for key in order[order.index(setting) + 1:]:
        options[key] = dead
    options[setting] = s3.url if setting != "AWS_S3_ENDPOINT" else s3.url.rstrip("/")
    index = tree.rebased("range", f"s3://{BUCKET}/", tmp_path / "i.json")
    with config(options):
        assert_matches(open_chunkref(index), [tree.store.data])


def test_identify_touches_nothing_for_unreadable_objects(http, s3):
    """An object that cannot be read (here: not there) is left to GDAL's own
    error: ChunkRef asks for no other path (an Icechunk repository's
    ``repo``, ``refs/...``) and adds no warning, over HTTP and S3."""
    messages: list[str] = []

    def handler(_cls, _code, message):
        messages.append(message)

    gdal.PushErrorHandler(handler)
    try:
        with config(RETRY_FAST), pytest.raises(RuntimeError):
            gdal.OpenEx(f"/vsicurl/{http.url}gone/image.ntf")
        with config(s3_options(s3, signed=True)), pytest.raises(RuntimeError):
            gdal.OpenEx(f"/vsis3/{BUCKET}/gone/image.ntf")
    finally:
        gdal.PopErrorHandler()
    # GDAL itself asks for the object and lists its directory (siblings).
    asked = [path for path, _ in http.log.requests if path.startswith("/gone/image.ntf/")]
    assert not asked, asked
    log = s3.log_path.read_text(errors="replace")
    # (GDAL itself lists the prefix ``gone/image.ntf/`` to see if it is a directory.)
    assert "gone/image.ntf/repo" not in log and "gone/image.ntf/refs" not in log, log[-2000:]
    assert not [m for m in messages if "ChunkRef" in m or "/repo" in m or "ref.json" in m], messages


# --------------------------------------------------------------------------
# Faults
# --------------------------------------------------------------------------

RANGE_IN_MESSAGE = re.compile(r"bytes \d+\.\.\d+")


@pytest.mark.parametrize("kinds", [("503",), ("drop",), ("truncate",), ("short",), ("slow",),
                                   ("503", "drop", "truncate", "short")])
def test_retries_absorb_faults(tree, http, tmp_path, kinds):
    name = tree.rebased("multirange_shuffled", http.url, tmp_path / "i.json")
    # Every request fails its first attempts, one kind after another, so each
    # kind is met however few requests the read needs (the block cache and
    # coalescing make it one or two).
    attempts = max(2, len(kinds))
    options = RETRY_FAST | {"GDAL_HTTP_MAX_RETRY": str(attempts + 1)}
    faults = Faults(kinds=kinds, share=1.0, attempts=attempts, slow_seconds=2.0)
    if kinds == ("slow",):  # each slow attempt costs a timeout: one each, shorter
        options["GDAL_HTTP_TIMEOUT"] = "0.5"
        faults = Faults(kinds=kinds, share=1.0, attempts=1, slow_seconds=1.5)
    http.set_faults(faults)
    with config(options):
        assert_matches(open_chunkref(name), [tree.store.data])
    injected = {kind for _, kind in http.log.faults}
    assert injected == set(kinds), f"faults injected: {http.log.faults}"


@pytest.mark.parametrize("kind", ["503", "drop", "truncate", "short", "slow"])
def test_faults_beyond_retries_fail_naming_url_and_range(tree, http, tmp_path, kind):
    name = tree.rebased("range", http.url, tmp_path / "i.json")
    http.set_faults(Faults(kinds=(kind,), attempts=1000, slow_seconds=2.0))
    with config(RETRY_FAST | {"GDAL_HTTP_MAX_RETRY": "1"}):
        ds = open_chunkref(name)
        message = failure_text(ds.GetRasterBand(1).ReadAsArray, 0, 0, 32, 32)
    assert f"{http.url}src/a.zarr/a/0.0" in message, message
    assert RANGE_IN_MESSAGE.search(message), message
    assert len(http.log.requests) >= 2, "the read was not retried"


#: What a user reads for each fault, once retries are spent.
PLAIN_WORDS = {
    "503": "HTTP 503 Service Unavailable, after 2 attempts",
    "drop": "the server closed the connection without answering, after 2 attempts",
    "truncate": "the connection closed before the whole answer arrived, after 2 attempts",
    "short": "(Content-Range) for a request of bytes 0..953, after 2 attempts",
    "slow": "timed out after 1 s, after 2 attempts",
}


@pytest.mark.parametrize("kind", PLAIN_WORDS)
@pytest.mark.parametrize("path", ["window", "block", "dataset-window"])
def test_fault_messages_are_plain_words_with_one_prefix(tree, http, tmp_path, kind, path):
    """The message names the index and band, the chunk, the URL and range,
    what went wrong in plain words and the attempts; no object_store framing,
    no durations in microseconds, no empty fields; window reads carry the
    same ``index, band N:`` prefix GDAL gives block reads."""
    name = tree.rebased("range", http.url, tmp_path / "i.json")
    http.set_faults(Faults(kinds=(kind,), attempts=1000, slow_seconds=2.0))
    with config(RETRY_FAST | {"GDAL_HTTP_MAX_RETRY": "1", "GDAL_NUM_THREADS": "1"}):
        ds = open_chunkref(name)
        read = {
            "window": lambda: ds.GetRasterBand(1).ReadAsArray(0, 0, 32, 32),
            "block": lambda: ds.GetRasterBand(1).ReadRaster(0, 0, 5, 5),
            "dataset-window": lambda: ds.ReadAsArray(0, 0, 40, 40),
        }[path]
        message = failure_text(read)
    assert message.startswith(f"{name}, band 1: "), message
    assert f"chunk 'a/0.0': cannot read {http.url}src/a.zarr/a/0.0 bytes 0..953: " in message, message
    assert message.endswith(PLAIN_WORDS[kind]), message
    for noise in ("Generic", "Error performing", "µs", "non-2xx", ":  ", "HTTP error"):
        assert noise not in message, message


def test_failed_read_stops_requesting_later_chunks(tree, http, tmp_path):
    """Once a chunk fails for good, the chunks after it that are not yet
    requested are not requested: a read from a server that is down fails
    after one chunk's retries, not after every chunk's. The error still
    names the first chunk."""
    name = tree.rebased("whole", http.url, tmp_path / "i.json")
    http.set_faults(Faults(kinds=("503",), attempts=1000))
    with config(RETRY_FAST | {"GDAL_HTTP_MAX_RETRY": "1", "CHUNKREF_MAX_REQUESTS": "1"}):
        message = failure_text(open_chunkref(name).ReadAsArray)
    assert f"{http.url}src/a.zarr/a/0.0" in message, message
    # One chunk of 12, tried twice (one retry).
    assert len(http.log.requests) == 2, http.log.requests


# --------------------------------------------------------------------------
# Security and index locations
# --------------------------------------------------------------------------


def test_remote_index_may_not_read_local_files(tree, http):
    """``/vsicurl/`` index whose references are absolute local paths."""
    local = tree.rebased("range", f"{tree.root.resolve()}/", tree.root / "idx" / "abs.json")
    name = f"/vsicurl/{http.url}idx/{local.name}"
    ds = open_chunkref(name)
    message = failure_text(ds.GetRasterBand(1).ReadAsArray)
    assert "GDAL_ALLOW_REMOTE_RESOURCE_TO_ACCESS_LOCAL_FILE" in message, message
    assert str(tree.root.resolve()) in message, message
    with config({"GDAL_ALLOW_REMOTE_RESOURCE_TO_ACCESS_LOCAL_FILE": "YES"}):
        assert_matches(open_chunkref(name), [tree.store.data])


def test_vsimem_index_with_local_paths(tree):
    local = tree.rebased("range", f"{tree.root.resolve()}/", tree.root / "idx" / "abs2.json")
    name = "/vsimem/chunkref-test/local.json"
    gdal.FileFromMemBuffer(name, local.read_bytes())
    try:
        assert_matches(open_chunkref(name), [tree.store.data])
    finally:
        gdal.Unlink(name)


def test_vsimem_index_with_relative_references_is_refused(tree):
    name = "/vsimem/chunkref-test/rel.json"
    gdal.FileFromMemBuffer(name, tree.indexes["range"].read_bytes())
    try:
        ds = open_chunkref(name)
        message = failure_text(ds.GetRasterBand(1).ReadAsArray)
    finally:
        gdal.Unlink(name)
    assert name in message and "relative reference" in message, message


def test_missing_remote_index_names_it(http):
    name = f"/vsicurl/{http.url}idx/nope.json"
    message = failure_text(open_chunkref, f"CHUNKREF:{name}")
    assert name in message, message
