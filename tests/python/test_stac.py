"""``chunkref index --stac``: STAC in, time stacks out (docs/stac.md).

Real parts: COGs written by GDAL and served by the range server with 20 ms
of latency; a static catalogue and ItemCollections written with pystac; a
STAC API (``rustac serve``, its in-memory backend) on loopback; a
STAC-GeoParquet table written by rustac.  The oracle is GDAL reading each
item's asset directly: every band of every step of the index has the
asset's pixels and georeferencing, the item's datetime, and the band
metadata of the item (asset key, nodata, scale, common name).  Bad
catalogues (invalid JSON, pages that loop or never end, links and hrefs to
other hosts) are served by a small hostile server and must end in a clear
error, quickly.
"""

from __future__ import annotations

import http.server
import json
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Iterator

import numpy as np
import pytest
from osgeo import gdal

from conftest import REPO_ROOT, run_chunkref
from raster_checks import open_chunkref
from servers import RangeServer, StacApi
from venvs import stac_python as make_stac_python

CHUNKREF = REPO_ROOT / "target" / "release" / "chunkref"

#: Items of the catalogue: id, datetime (None: start_datetime only), EPSG.
ITEMS = [
    ("s2-0", "2021-01-03T00:00:00Z", 32633),
    ("s2-1", "2021-01-01T00:00:00Z", 32633),
    ("s2-2", None, 32633),
    ("s2-3", "2021-01-04T00:00:00Z", 32634),
]
#: Asset key -> (size, pixel size): red and nir on one grid, swir on another.
ASSETS = {"red": (300, 10), "nir": (300, 10), "swir": (150, 20)}
SCALE = {"red": 0.0001, "nir": 0.0002, "swir": 0.0003}


@pytest.fixture(scope="module")
def stac_python() -> Path:
    return make_stac_python()


def write_cog(path: Path, width: int, pixel: int, epsg: int, seed: int) -> None:
    height = width * 2 // 3
    mem = gdal.GetDriverByName("MEM").Create("", width, height, 1, gdal.GDT_UInt16)
    mem.SetGeoTransform([500000, pixel, 0, 4600000, 0, -pixel])
    mem.SetProjection(f"EPSG:{epsg}")
    values = (np.arange(width * height).reshape(height, width) * seed) % 997
    mem.GetRasterBand(1).WriteArray(values.astype("uint16"))
    mem.GetRasterBand(1).SetNoDataValue(0)
    gdal.GetDriverByName("COG").CreateCopy(str(path), mem,
                                           options=["BLOCKSIZE=128", "COMPRESS=DEFLATE"])


def item_dicts(href_of, missing: dict[str, str] | None = None) -> list[dict]:
    """The items of :data:`ITEMS` as plain STAC dicts, hrefs from
    ``href_of(item, asset)``; ``missing`` replaces an item's asset href."""
    items = []
    for n, (iid, when, _) in enumerate(ITEMS):
        props = {"datetime": when}
        if when is None:
            props = {"datetime": None, "start_datetime": "2021-01-02T00:00:00Z",
                     "end_datetime": "2021-01-02T23:59:59Z"}
        assets = {}
        for key in ASSETS:
            href = (missing or {}).get(f"{iid}/{key}") or href_of(iid, key)
            assets[key] = {
                "href": href, "type": "image/tiff; application=geotiff; profile=cloud-optimized",
                "raster:bands": [{"nodata": 0, "scale": SCALE[key], "data_type": "uint16"}],
                "eo:bands": [{"name": key.upper(), "common_name": key}],
            }
        items.append({"type": "Feature", "stac_version": "1.0.0", "id": iid,
                      "geometry": {"type": "Point", "coordinates": [15.0, 41.5]},
                      "bbox": [15.0, 41.5, 15.0, 41.5], "properties": props,
                      "links": [], "assets": assets, "collection": "s2"})
    return items


@pytest.fixture(scope="module")
def archive(tmp_path_factory, stac_python) -> Path:
    """COGs under data/, a pystac catalogue under catalog/ (relative
    hrefs), and the items as an ItemCollection."""
    root = tmp_path_factory.mktemp("stac")
    (root / "data").mkdir()
    for n, (iid, _, epsg) in enumerate(ITEMS):
        for k, (key, (width, pixel)) in enumerate(ASSETS.items()):
            write_cog(root / "data" / f"{iid}_{key}.tif", width, pixel, epsg, seed=3 + n * 5 + k)
    items = item_dicts(lambda i, k: str(root / "data" / f"{i}_{k}.tif"))
    (root / "items.json").write_text(json.dumps(items))
    script = """
import json, sys, pystac
root = sys.argv[1]
cat = pystac.Catalog("s2", "test catalogue")
for d in json.load(open(root + "/items.json")):
    cat.add_item(pystac.Item.from_dict(d))
cat.normalize_hrefs(root + "/catalog")
cat.make_all_asset_hrefs_relative()
cat.save(pystac.CatalogType.SELF_CONTAINED)
"""
    done = subprocess.run([str(stac_python), "-c", script, str(root)], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    return root


@pytest.fixture(scope="module")
def server(archive) -> Iterator[RangeServer]:
    s = RangeServer(archive, delay=0.02)
    yield s
    s.close()


def item_collection(path: Path, items: list[dict]) -> Path:
    path.write_text(json.dumps({"type": "FeatureCollection", "features": items}))
    return path


def check_stacks(out: Path, archive: Path, items: list[str] = None) -> None:
    """The oracle: every stack's bands against GDAL reading the assets."""
    kept = [i for i in ITEMS if items is None or i[0] in items]
    stacks = {
        "red+nir": ([i for i in kept if i[2] == 32633], ["red", "nir"]),
        "swir": ([i for i in kept if i[2] == 32633], ["swir"]),
        "red+nir_2": ([i for i in kept if i[2] == 32634], ["red", "nir"]),
        "swir_2": ([i for i in kept if i[2] == 32634], ["swir"]),
    }
    root = open_chunkref(out)
    names = {v for k, v in root.GetMetadata("SUBDATASETS").items() if k.endswith("_NAME")}
    assert names == {f'CHUNKREF:"{out}":{s}' for s in stacks if stacks[s][0]}
    for name, (steps, keys) in stacks.items():
        if not steps:
            continue
        ds = open_chunkref(f'CHUNKREF:"{out}":{name}')
        steps = sorted(steps, key=lambda i: i[1] or "2021-01-02T00:00:00Z")
        assert ds.RasterCount == len(steps) * len(keys)
        for t, (iid, when, _) in enumerate(steps):
            for b, key in enumerate(keys):
                src = gdal.Open(str(archive / "data" / f"{iid}_{key}.tif"))
                band = ds.GetRasterBand(t * len(keys) + b + 1)
                np.testing.assert_array_equal(band.ReadAsArray(), src.ReadAsArray())
                assert ds.GetGeoTransform() == src.GetGeoTransform()
                assert ds.GetSpatialRef().IsSame(src.GetSpatialRef())
                md = band.GetMetadata()
                assert md["DATETIME"] == (when or "2021-01-02T00:00:00Z")
                assert band.GetDescription() == key
                assert md["STAC_ASSET"] == key and md["eo:common_name"] == key
                assert band.GetNoDataValue() == 0
                assert band.GetScale() == pytest.approx(SCALE[key])


def test_static_catalogue_over_http(archive, server, tmp_path):
    out = tmp_path / "s2.parquet"
    url = server.url + "catalog/catalog.json"
    done = run_chunkref(CHUNKREF, "index", "--stac", url, "--asset", "red,nir,swir", "-o", out)
    assert done.returncode == 0, done.stderr
    assert "4 STAC items in 4 stack(s): red+nir, swir, red+nir_2, swir_2" in done.stderr
    check_stacks(out, archive)


def test_search_options_need_an_api(archive, server, tmp_path):
    done = run_chunkref(CHUNKREF, "index", "--stac", server.url + "catalog/catalog.json",
                        "--asset", "red", "--bbox", "1,2,3,4", "-o", tmp_path / "x.json")
    assert done.returncode == 1
    assert "search a STAC API; give its landing page or .../search URL" in done.stderr


def test_item_collection_file_and_skip_errors(archive, tmp_path):
    missing = str(archive / "data" / "gone.tif")
    items = item_dicts(lambda i, k: str(archive / "data" / f"{i}_{k}.tif"),
                       missing={"s2-1/nir": missing})
    items.append({"type": "Feature", "id": "no-red", "properties": {"datetime": None},
                  "assets": {}, "links": []})
    source = item_collection(tmp_path / "items.json", items)
    out = tmp_path / "s2.json"
    failed = run_chunkref(CHUNKREF, "index", "--stac", source, "--asset", "red,nir,swir",
                          "-o", out)
    assert failed.returncode == 1
    assert "item 'no-red': no asset 'red'" in failed.stderr
    assert not out.exists()
    listed = tmp_path / "failures.txt"
    done = run_chunkref(CHUNKREF, "index", "--stac", source, "--asset", "red,nir,swir",
                        "--skip-errors", "--failures", listed, "-o", out)
    assert done.returncode == 0, done.stderr
    lines = dict(line.split("\t", 1) for line in listed.read_text().splitlines())
    assert set(lines) == {"no-red", "s2-1"}
    assert f"asset 'nir' ({missing})" in lines["s2-1"]
    check_stacks(out, archive, items=["s2-0", "s2-2", "s2-3"])


def test_stac_geoparquet(archive, stac_python, tmp_path):
    items = item_collection(tmp_path / "items.json",
                            item_dicts(lambda i, k: str(archive / "data" / f"{i}_{k}.tif")))
    table = tmp_path / "items.parquet"
    done = subprocess.run([str(stac_python.parent / "rustac"), "translate", str(items),
                           str(table)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    out = tmp_path / "s2.parquet"
    done = run_chunkref(CHUNKREF, "index", "--stac", table, "--asset", "red,nir,swir", "-o", out)
    assert done.returncode == 0, done.stderr
    check_stacks(out, archive)


@pytest.fixture(scope="module")
def api(archive, server, stac_python, tmp_path_factory) -> Iterator[str]:
    """``rustac serve`` over 300 items (the four of the archive repeated
    on later days), assets on the range server; its /search URL."""
    items = []
    for day in range(75):
        for d in item_dicts(lambda i, k: f"{server.url}data/{i}_{k}.tif"):
            d = json.loads(json.dumps(d))
            d["id"] = f"{d['id']}-{day:03d}"
            props = d["properties"]
            for key in ("datetime", "start_datetime", "end_datetime"):
                if props.get(key):
                    props[key] = props[key].replace("2021-01", f"2021-{1 + day // 28:02d}")
                    props[key] = props[key][:8] + f"{1 + day % 28:02d}" + props[key][10:]
            items.append(d)
    path = item_collection(tmp_path_factory.mktemp("api") / "items.json", items)
    api = StacApi(stac_python.parent / "rustac", path, path.parent / "serve.log")
    yield api.search
    api.close()


def test_api_search_pages(api, server, archive, tmp_path):
    out = tmp_path / "s2.parquet"
    host = server.url.split("/")[2]
    done = run_chunkref(CHUNKREF, "index", "--stac", api, "--asset", "red,nir",
                        "--collections", "s2", "--allow-host", host, "-o", out)
    assert done.returncode == 0, done.stderr
    assert "300 STAC items in 2 stack(s): red+nir, red+nir_2" in done.stderr
    ds = open_chunkref(f'CHUNKREF:"{out}":red+nir')
    assert ds.RasterCount == 225 * 2
    times = [ds.GetRasterBand(2 * t + 1).GetMetadataItem("DATETIME") for t in range(225)]
    assert times == sorted(times)
    src = gdal.Open(str(archive / "data" / "s2-0_nir.tif"))
    t = times.index("2021-03-19T00:00:00Z")  # day 74: s2-0 of day 74
    np.testing.assert_array_equal(ds.GetRasterBand(2 * t + 2).ReadAsArray(), src.ReadAsArray())
    # A search narrowed by datetime and bbox: the first four days, 16 items.
    out2 = tmp_path / "first.parquet"
    done = run_chunkref(CHUNKREF, "index", "--stac", api, "--asset", "red",
                        "--datetime", "2021-01-01T00:00:00Z/2021-01-04T12:00:00Z",
                        "--bbox", "14.5,41,15.5,42",
                        "--allow-host", host, "-o", out2)
    assert done.returncode == 0, done.stderr
    assert "16 STAC items in 2 stack(s)" in done.stderr
    # The API's landing page searches as its /search URL does.
    out3 = tmp_path / "landing.parquet"
    done = run_chunkref(CHUNKREF, "index", "--stac", api.removesuffix("search"), "--asset",
                        "red", "--datetime", "2021-01-01T00:00:00Z/2021-01-04T12:00:00Z",
                        "--allow-host", host, "-o", out3)
    assert done.returncode == 0, done.stderr
    assert "16 STAC items in 2 stack(s)" in done.stderr
    # Without --allow-host the assets on the range server are refused.
    refused = run_chunkref(CHUNKREF, "index", "--stac", api, "--asset", "red", "--max-items",
                           "1000", "-o", tmp_path / "x.json")
    assert refused.returncode == 1
    assert f"pass --allow-host {host}" in refused.stderr


class Hostile(http.server.BaseHTTPRequestHandler):
    """Answers ``/bad.json`` with invalid JSON, ``/loop/search`` with a
    page whose next link is itself, ``/endless/search`` with pages that
    each link to the next, ``/away/search`` with a next link to another
    host, ``/getonly/search`` with 405 to a POST and an empty page to a GET
    (whose query it records)."""

    #: The query strings ``/getonly/search`` was asked with.
    gets: list[str] = []

    def do_POST(self):  # noqa: N802 (http.server's name)
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.path.startswith("/getonly/"):
            self.send_response(405)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.do_GET()

    def do_GET(self):  # noqa: N802 (http.server's name)
        path = self.path.split("?")[0]
        page = {"type": "FeatureCollection", "features": [], "links": []}
        if path == "/getonly/search":
            Hostile.gets.append(self.path.split("?", 1)[1])
            body = json.dumps(page).encode()
        elif path == "/bad.json":
            body = b'{"type": "FeatureCollection", "features": [}'
        else:
            n = int(self.path.split("page=")[1]) if "page=" in self.path else 0
            nxt = {"/loop/search": self.path, "/endless/search": f"/endless/search?page={n + 1}",
                   "/away/search": "http://198.51.100.7/search?page=2"}[path]
            page["links"].append({"rel": "next", "href": nxt})
            body = json.dumps(page).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def hostile() -> Iterator[str]:
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hostile)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()


@pytest.mark.parametrize("path, extra, message", [
    ("/bad.json", [], "not a JSON document"),
    ("/loop/search", [], "the pages loop"),
    ("/endless/search", ["--max-pages", "20"], "more than 20 pages"),
    ("/away/search", [], "is on another host than the catalogue"),
])
def test_bad_catalogues_fail_clearly_and_quickly(hostile, tmp_path, path, extra, message):
    start = time.monotonic()
    done = run_chunkref(CHUNKREF, "index", "--stac", hostile + path, "--asset", "red", *extra,
                        "-o", tmp_path / "x.json")
    assert done.returncode == 1
    assert message in done.stderr
    assert "panicked" not in done.stderr
    assert time.monotonic() - start < 30
    assert not (tmp_path / "x.json").exists()


def test_search_falls_back_to_get(hostile, tmp_path):
    done = run_chunkref(CHUNKREF, "index", "--stac", hostile + "/getonly/search", "--asset",
                        "red", "--collections", "a,b", "--bbox", "1,2,3,4", "--filter",
                        "eo:cloud_cover < 10", "-o", tmp_path / "x.json")
    assert done.returncode == 1
    assert "no item with the assets red" in done.stderr
    from urllib.parse import parse_qs
    asked = parse_qs(Hostile.gets[-1])
    assert asked["collections"] == ["a,b"] and asked["bbox"] == ["1.0,2.0,3.0,4.0"]
    assert asked["filter"] == ["eo:cloud_cover < 10"] and asked["filter-lang"] == ["cql2-text"]
    assert asked["limit"] == ["250"]


def test_remote_catalogue_may_not_point_at_local_files(archive, server, tmp_path):
    items = item_dicts(lambda i, k: f"file:///etc/{i}_{k}.tif")
    item_collection(archive / "local-hrefs.json", items)
    done = run_chunkref(CHUNKREF, "index", "--stac", server.url + "local-hrefs.json",
                        "--asset", "red", "-o", tmp_path / "x.json")
    assert done.returncode == 1
    assert "the local path /etc/s2-0_red.tif is refused in a remote catalogue" in done.stderr


def test_append_takes_new_items_only(archive, tmp_path):
    zone33 = [d for d in item_dicts(lambda i, k: str(archive / "data" / f"{i}_{k}.tif"))
              if d["id"] != "s2-3"]
    first = item_collection(tmp_path / "first.json", zone33[:2])
    later = item_collection(tmp_path / "later.json", zone33)
    out = tmp_path / "s2.parquet"
    for source, new in ((first, 2), (later, 1)):
        done = run_chunkref(CHUNKREF, "index", "--stac", source, "--asset", "red,nir",
                            "--append", "-o", out)
        assert done.returncode == 0, done.stderr
        assert f"{new} new STAC items" in done.stderr
    again = run_chunkref(CHUNKREF, "index", "--stac", later, "--asset", "red,nir", "--append",
                         "-o", out)
    assert again.returncode == 0 and "no new item" in again.stderr
    assert json.loads((out / "_chunkref_parts.json").read_text())["parts"] == [
        "part-00000.parquet", "part-00001.parquet"]
    ds = open_chunkref(out)
    order = ["s2-1", "s2-0", "s2-2"]  # the first two by datetime, then the appended one
    assert ds.RasterCount == 6
    for t, iid in enumerate(order):
        when = dict((i, w) for i, w, _ in ITEMS)[iid] or "2021-01-02T00:00:00Z"
        for b, key in enumerate(["red", "nir"]):
            band = ds.GetRasterBand(2 * t + b + 1)
            src = gdal.Open(str(archive / "data" / f"{iid}_{key}.tif"))
            np.testing.assert_array_equal(band.ReadAsArray(), src.ReadAsArray())
            assert band.GetMetadataItem("DATETIME") == when
            assert band.GetDescription() == key
    several = run_chunkref(CHUNKREF, "index", "--stac", later, "--asset", "red,swir",
                           "--append", "-o", tmp_path / "two.parquet")
    assert several.returncode == 1
    assert "--append grows one time stack" in several.stderr


def test_item_collection_on_object_storage(archive, tmp_path):
    """An ItemCollection in an S3 bucket (moto), its relative hrefs
    resolved in the bucket, read with the sources' AWS_* settings."""
    from raster_checks import config_options
    from servers import moto_bucket

    root = tmp_path / "bucket"
    shutil.copytree(archive / "data", root / "stac" / "data")
    item_collection(root / "stac" / "items.json",
                    item_dicts(lambda i, k: f"data/{i}_{k}.tif"))
    with moto_bucket(REPO_ROOT / "build" / "moto-venv", tmp_path / "moto.log", "cat",
                     root) as s3:
        env = {"AWS_S3_ENDPOINT": s3.endpoint, "AWS_HTTPS": "NO",
               "AWS_VIRTUAL_HOSTING": "FALSE", "AWS_REGION": "us-east-1",
               "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
        out = tmp_path / "s2.parquet"
        done = subprocess.run([str(CHUNKREF), "index", "--stac", "s3://cat/stac/items.json",
                               "--asset", "red,nir,swir", "-o", str(out)],
                              capture_output=True, text=True, timeout=300,
                              env=os.environ | env)
        assert done.returncode == 0, done.stderr
        with config_options(env):
            check_stacks(out, archive)


def test_signed_hrefs(archive, tmp_path):
    """Asset hrefs signed as Planetary Computer signs them: SAS URLs of
    blobs in a private Azurite container.  The query string is sent with
    every range request of the index and of the reads; without it the
    server refuses the object."""
    from cloud_servers import AzuriteServer

    server = AzuriteServer(REPO_ROOT / "build" / "azurite", REPO_ROOT / "build" / "azure-venv",
                           archive / "data", "private", tmp_path)
    try:
        names = [f"{iid}_{key}.tif" for iid, _, _ in ITEMS for key in ASSETS]
        signed = dict(zip(names, server.signed_urls(names)))
        assert all("sig=" in url for url in signed.values())
        source = item_collection(tmp_path / "items.json",
                                 item_dicts(lambda i, k: signed[f"{i}_{k}.tif"]))
        host = f"127.0.0.1:{server.port}"
        out = tmp_path / "s2.parquet"
        done = run_chunkref(CHUNKREF, "index", "--stac", source, "--asset", "red,nir,swir",
                            "--allow-host", host, "-o", out)
        assert done.returncode == 0, done.stderr
        check_stacks(out, archive)
        # The signature is what opens the blob: unsigned, the item is named.
        unsigned = item_collection(tmp_path / "unsigned.json", item_dicts(
            lambda i, k: signed[f"{i}_{k}.tif"].split("?")[0]))
        refused = run_chunkref(CHUNKREF, "index", "--stac", unsigned, "--asset", "red",
                               "--allow-host", host, "-o", tmp_path / "x.json")
        assert refused.returncode == 1
        assert "item 's2-" in refused.stderr and "private/s2-" in refused.stderr, refused.stderr
    finally:
        server.close()
