"""``chunkref index`` reading many sources at once into one collection.

The sources of a time stack or a mosaic are read by tasks on the I/O
runtime, ``--concurrency`` at once: a remote source's head is read as a
future and its builder runs on the task when the head holds every byte it
reads; else the source is built again on a thread that may wait for more
reads.  Whatever order the reads finish in, the collection must be the one
made of the sources in the order given: the oracle is the index of the
same files read locally (``--template-base`` makes the two documents
byte for byte comparable) and GDAL reading the files (a VRT for mosaics).
Slow answers (servers.py's ``slow`` fault on a share of the requests)
make the reads finish out of order.  Also: the DTED mosaic's summary
counts its cells, ``--concurrency 1`` finishes, a remote source that
fails is named, and the command loads libgdal only when a builder calls
GDAL.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import numpy as np
import pytest
from osgeo import gdal

from conftest import run_chunkref
from raster_checks import assert_pixels_equal, open_chunkref
from servers import Faults, RangeServer
from test_dted import cell_name, write_cell
from test_mosaic import CASES, LAYOUT, build_vrt, write_scene

#: A share of the requests answered late, so that reads finish out of order.
SLOW = Faults(kinds=("slow",), share=0.4, attempts=1, slow_seconds=0.3)


@pytest.fixture
def served(tmp_path) -> Iterator[tuple[Path, RangeServer]]:
    """A directory of sources and a server over it (slow on a share)."""
    root = tmp_path / "sources"
    root.mkdir()
    server = RangeServer(root, delay=0.005)
    server.set_faults(SLOW)
    yield root, server
    server.close()


def index(binary: Path, out: Path, sources: list[str], *extra: str) -> str:
    """Runs ``chunkref index`` (portable URLs); returns its stderr."""
    done = run_chunkref(binary, "index", "--template-base", *extra, *sources, "-o", out)
    assert done.returncode == 0, done.stderr
    return done.stderr


def write_scenes(root: Path, count: int) -> list[Path]:
    """``count`` scenes placed as test_mosaic's LAYOUT, in turn: later ones
    over earlier ones, so the order of the scenes shows in the pixels."""
    case = CASES["u1-1band-nodata0"]
    return [
        write_scene(root / f"scene_{i:02d}.tif", case, *LAYOUT[i % len(LAYOUT)], seed=i)
        for i in range(count)
    ]


def test_remote_mosaic_is_the_local_one_whatever_order_reads_finish(tmp_path, chunkref_bin, served):
    root, server = served
    scenes = write_scenes(root, 12)
    # Next to the sources, the indexes' relative names read the local files.
    local = root / "local.json"
    index(chunkref_bin, local, [str(s) for s in scenes], "--mosaic")
    urls = [server.url + s.name for s in scenes]
    for concurrency in ["4", "1"]:
        remote = root / f"remote-{concurrency}.json"
        stderr = index(chunkref_bin, remote, urls, "--mosaic", "--concurrency", concurrency)
        assert "12 of 12 sources indexed (0 failed)" in stderr, stderr
        assert remote.read_bytes() == local.read_bytes(), f"--concurrency {concurrency}"
    assert any(kind == "slow" for _, kind in server.log.faults), server.log.faults
    vrt = build_vrt(scenes, tmp_path / "scenes.vrt")
    ds = open_chunkref(root / "remote-4.json")
    assert_pixels_equal(ds.ReadAsArray(), vrt.ReadAsArray(), "remote mosaic vs gdalbuildvrt")


def write_step(path: Path, day: int, tile: int = 256, size: int = 512) -> Path:
    """A tiled DEFLATE GeoTIFF, pixels depending on ``day``."""
    ds = gdal.GetDriverByName("GTiff").Create(
        str(path), size, size, 1, gdal.GDT_Int16,
        options=["TILED=YES", f"BLOCKXSIZE={tile}", f"BLOCKYSIZE={tile}", "COMPRESS=DEFLATE"],
    )
    ds.SetGeoTransform([300000, 30, 0, 5000000, 0, -30])
    ds.SetProjection("EPSG:32633")
    ds.GetRasterBand(1).WriteArray((np.indices((size, size)).sum(axis=0) + day * 7).astype(np.int16))
    ds = None
    return path


@pytest.mark.parametrize("tile", [256, 16], ids=["header-in-head", "header-past-head"])
def test_remote_stack_is_the_local_one(tmp_path, chunkref_bin, served, tile):
    """With 16 x 16 tiles of 1024 x 1024 pixels the tile offset and byte
    count arrays (4,096 tiles, 16 KiB each) end past the first 16 KiB read
    ahead: each source is built again where it may read them."""
    root, server = served
    size = 512 if tile == 256 else 1024
    steps = [write_step(root / f"step_2021-01-{d:02d}.tif", d, tile, size) for d in range(1, 11)]
    local = root / "local.json"
    index(chunkref_bin, local, [str(s) for s in steps], "--stack", "--datetime-from-name")
    remote = root / "remote.json"
    urls = [server.url + s.name for s in steps]
    stderr = index(chunkref_bin, remote, urls, "--stack", "--datetime-from-name")
    assert "10 of 10 sources indexed (0 failed)" in stderr, stderr
    assert remote.read_bytes() == local.read_bytes()
    requests = [path for path, _ in server.log.requests]
    per_source = {s.name: requests.count("/" + s.name) for s in steps}
    expected = 1 if tile == 256 else 2
    assert set(per_source.values()) == {expected}, per_source
    ds = open_chunkref(remote)
    for band, step in enumerate(steps, start=1):
        want = gdal.Open(str(step)).ReadAsArray()
        assert_pixels_equal(ds.GetRasterBand(band).ReadAsArray(), want, step.name)


def test_concurrency_one_finishes_a_remote_stack(tmp_path, chunkref_bin, served):
    root, server = served
    steps = [write_step(root / f"step_2021-02-{d:02d}.tif", d) for d in range(1, 7)]
    urls = [server.url + s.name for s in steps]
    outs = []
    for concurrency in ["1", "3"]:
        out = tmp_path / f"stack-{concurrency}.parquet"
        stderr = index(chunkref_bin, out, urls, "--stack", "--concurrency", concurrency)
        assert "6 time steps" in stderr, stderr
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]


def test_a_failed_remote_source_is_named_or_left_out(tmp_path, chunkref_bin, served):
    root, server = served
    steps = [write_step(root / f"step_2021-03-{d:02d}.tif", d) for d in range(1, 5)]
    urls = [server.url + s.name for s in steps]
    missing = server.url + "step_2021-03-09.tif"
    sources = urls[:2] + [missing] + urls[2:]
    out = tmp_path / "stack.json"
    done = run_chunkref(chunkref_bin, "index", "--stack", *sources, "-o", out)
    assert done.returncode != 0
    assert missing in done.stderr and "not found" in done.stderr, done.stderr
    assert not out.exists()
    failures = tmp_path / "failures.tsv"
    done = run_chunkref(
        chunkref_bin, "index", "--stack", "--template-base", "--skip-errors",
        "--failures", failures, *sources, "-o", out,
    )
    assert done.returncode == 0, done.stderr
    assert "4 of 5 sources indexed (1 failed)" in done.stderr, done.stderr
    assert failures.read_text().split("\t")[0] == missing
    local = tmp_path / "local.json"
    index(chunkref_bin, local, [str(s) for s in steps], "--stack")
    assert out.read_bytes() == local.read_bytes()


def chunk_references(index_path: Path) -> int:
    refs = json.loads(index_path.read_text())["refs"]
    return sum(1 for key in refs if re.search(r"/\d+(\.\d+)*$", key))


def test_dted_mosaic_summary_counts_its_cells(tmp_path, chunkref_bin):
    cells = [write_cell(tmp_path / cell_name(45, lon, 0), 45, lon, 121, 121, seed=lon)
             for lon in (15, 16, 17)]
    out = tmp_path / "dted.json"
    done = run_chunkref(chunkref_bin, "index", *cells, "-o", out)
    assert done.returncode == 0, done.stderr
    refs = chunk_references(out)
    assert refs > 3
    assert f"3 of 3 sources indexed (0 failed), {refs} chunk references" in done.stderr, done.stderr

    broken = tmp_path / cell_name(45, 18, 0)
    broken.write_bytes(b"UHL1" + b"\0" * 200)
    done = run_chunkref(chunkref_bin, "index", "--skip-errors", *cells, broken, "-o", out)
    assert done.returncode == 0, done.stderr
    assert f"3 of 4 sources indexed (1 failed), {refs} chunk references" in done.stderr, done.stderr
    assert f"left out {broken}" in done.stderr, done.stderr


def loads_libgdal(binary: Path, *args: str | Path) -> bool:
    """Whether ``binary *args`` loads libgdal (glibc's ``LD_DEBUG=files``)."""
    done = subprocess.run(
        [str(binary), *map(str, args)], capture_output=True, text=True, timeout=300,
        env={**os.environ, "LD_DEBUG": "files"},
    )
    assert done.returncode in (0, 2), done.stderr[-2000:]  # 2: --help
    return re.search(r"file=libgdal\.so", done.stderr) is not None


@pytest.mark.skipif(sys.platform != "linux", reason="glibc's loader")
def test_libgdal_is_loaded_only_when_a_source_needs_it(tmp_path, chunkref_bin):
    """The command loads libgdal when a builder first calls GDAL (here:
    the CRS of GeoKeys that name no EPSG code), not at start."""
    needed = subprocess.run(["readelf", "-d", str(chunkref_bin)], capture_output=True, text=True)
    if needed.returncode != 0 or "libgdal" in needed.stdout:
        pytest.skip("a build that links libgdal at start (no soname found, or not Linux)")
    plain = write_step(tmp_path / "plain.tif", 1)
    assert not loads_libgdal(chunkref_bin, "--help")
    assert not loads_libgdal(chunkref_bin, "index", plain, "-o", tmp_path / "plain.json")
    lcc = tmp_path / "lcc.tif"
    gdal.Translate(str(lcc), str(plain), outputSRS="+proj=lcc +lat_1=33 +lat_2=45 +lat_0=39 "
                   "+lon_0=-96 +x_0=0 +y_0=0 +datum=WGS84 +units=m")
    out = tmp_path / "lcc.json"
    assert loads_libgdal(chunkref_bin, "index", lcc, "-o", out)
    assert open_chunkref(out).GetSpatialRef().IsSame(gdal.Open(str(lcc)).GetSpatialRef())
