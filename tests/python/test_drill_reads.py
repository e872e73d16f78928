"""Windows smaller than a chunk over every step of a time stack (issue 29):
a pixel drill (``ds.ReadAsArray(x, y, 1, 1)``, rasterio's
``src.read(window=...)``), a few rows of one tile, a window crossing tiles,
the band-by-band loop of ``gdallocationinfo`` and GDAL clients, and repeated
reads nearby (rasterio's ``sample`` of many points of one tile).

The first read of part of one block of several bands goes through the
window reader, its ZSTD tiles decoded only down to the window's last row;
a second read at that block loads the blocks into GDAL's block cache from
the chunks' bytes kept from the first read (no new requests). Every read
must give GDAL's pixels, local and remote, and a corrupt chunk an error
naming its file and chunk.
"""

from __future__ import annotations

import concurrent.futures
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from osgeo import gdal

from conftest import REPO_ROOT, run_chunkref
from raster_checks import config_options, open_chunkref
from servers import RangeServer, moto_bucket

#: Steps of the stack, and each step's size (128 x 128 tiles: 3 x 2 tiles,
#: the last column and row partial).
STEPS = 20
WIDTH, HEIGHT = 300, 200


def write_step(path: Path, step: int) -> Path:
    """A ZSTD + predictor COG whose pixels vary along rows, columns and steps."""
    mem = gdal.GetDriverByName("MEM").Create("", WIDTH, HEIGHT, 1, gdal.GDT_Int16)
    y, x = np.mgrid[0:HEIGHT, 0:WIDTH]
    pixels = (x * 7 + y * 131 + step * 1009 + (x * y) % 97) % 30011 - 15000
    mem.GetRasterBand(1).WriteArray(pixels.astype("int16"))
    mem.SetGeoTransform([100, 0.5, 0, 200, 0, -0.5])
    mem.SetProjection("EPSG:4326")
    gdal.Translate(str(path), mem,
                   options="-of COG -co BLOCKSIZE=128 -co COMPRESS=ZSTD -co PREDICTOR=YES "
                           "-co OVERVIEWS=NONE")
    return path


def name(step: int) -> str:
    return f"sst_2021{1 + step // 28:02d}{1 + step % 28:02d}.tif"


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> Path:
    """The directory of the steps' COGs."""
    root = tmp_path_factory.mktemp("steps")
    for step in range(STEPS):
        write_step(root / name(step), step)
    return root


def want(root: Path, x: int, y: int, w: int, h: int) -> np.ndarray:
    """What GDAL reads from the steps: (steps, h, w)."""
    out = []
    for step in range(STEPS):
        ds = gdal.Open(str(root / name(step)))
        out.append(ds.GetRasterBand(1).ReadAsArray(x, y, w, h))
    return np.stack(out)


def make_stack(binary: Path, inputs: list[str], out: Path) -> Path:
    done = run_chunkref(binary, "index", "--stack", "--datetime-from-name", *inputs, "-o", out)
    assert done.returncode == 0, f"{done.stderr}{done.stdout}"
    return out


@pytest.fixture(scope="module")
def local_stack(sources, chunkref_bin, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("local") / "stack.parquet"
    return make_stack(chunkref_bin, [str(sources / name(s)) for s in range(STEPS)], out)


@pytest.fixture(scope="module")
def server(sources):
    server = RangeServer(sources)
    yield server
    server.close()


@pytest.fixture(scope="module")
def remote_stack(server, chunkref_bin, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("remote") / "stack.parquet"
    return make_stack(chunkref_bin, [f"{server.url}{name(s)}" for s in range(STEPS)], out)


@pytest.fixture
def unshared_stack(remote_stack, tmp_path) -> Path:
    """A copy of the remote stack written now, for tests that count the
    requests a fresh dataset makes: opens share one dataset (and the bytes
    it fetched) only once an index has been unchanged for 2 s, so an
    earlier test's open of ``remote_stack`` may be shared with theirs."""
    return Path(shutil.copy(remote_stack, tmp_path / "stack.parquet"))


#: (x, y, width, height): one pixel (top row of a tile, a middle row, the
#: last row, the partial last tile), a few pixels inside one row of a
#: tile, a small rectangle, a window crossing four tiles.
WINDOWS = [
    (130, 0, 1, 1),
    (140, 70, 1, 1),
    (5, 127, 1, 1),
    (299, 199, 1, 1),
    (140, 75, 9, 1),
    (135, 60, 7, 5),
    (120, 120, 20, 20),
]


@pytest.mark.parametrize("where", ["local", "remote"])
@pytest.mark.parametrize("window", WINDOWS, ids=lambda w: "x".join(map(str, w)))
def test_small_windows_over_every_step_match_gdal(where, window, request, sources):
    stack = request.getfixturevalue(f"{where}_stack")
    ds = open_chunkref(stack)  # a new dataset: nothing cached
    x, y, w, h = window
    expected = want(sources, *window)
    assert np.array_equal(ds.ReadAsArray(x, y, w, h).reshape(expected.shape), expected)
    # Again (now from the block cache), in another buffer type, and some bands only.
    assert np.array_equal(ds.ReadAsArray(x, y, w, h).reshape(expected.shape), expected)
    ds = open_chunkref(stack)
    floats = ds.ReadAsArray(x, y, w, h, buf_type=gdal.GDT_Float32).reshape(expected.shape)
    assert np.array_equal(floats, expected.astype(np.float32))
    ds = open_chunkref(stack)
    bands = [3, 5, 11, 20]
    some = np.frombuffer(ds.ReadRaster(x, y, w, h, band_list=bands), np.int16)
    assert np.array_equal(some.reshape(len(bands), h, w), expected[[b - 1 for b in bands]])


def test_band_by_band_loop_reads_ahead(server, unshared_stack, sources):
    """``GetRasterBand(b).ReadRaster`` in a loop: each step's chunk fetched
    once, the following steps' read ahead in growing batches."""
    ds = open_chunkref(unshared_stack)
    server.log.requests.clear()
    server.log.most_in_flight = 0
    server.delay = 0.03  # requests overlap: the read-ahead batches show
    try:
        got = [np.frombuffer(ds.GetRasterBand(b).ReadRaster(250, 150, 1, 1), np.int16)[0]
               for b in range(1, STEPS + 1)]
    finally:
        server.delay = 0.0
    assert got == want(sources, 250, 150, 1, 1).ravel().tolist()
    assert len(server.log.requests) == STEPS, server.log.requests
    assert server.log.most_in_flight >= 8, server.log.most_in_flight
    # Loops at two windows interleaved, some bands skipped, another type.
    ds = open_chunkref(unshared_stack)
    a, b = want(sources, 3, 4, 2, 3), want(sources, 200, 130, 1, 1)
    order = [("a", 1), ("a", 2), ("a", 3), ("b", 1), ("b", 2), ("a", 4), ("a", 5), ("a", 9),
             ("a", 10), ("b", 3), ("a", 11), ("a", 12), ("a", 20), ("a", 19)]
    for which, band in order:
        x, y, w, h = (3, 4, 2, 3) if which == "a" else (200, 130, 1, 1)
        raw = ds.GetRasterBand(band).ReadRaster(x, y, w, h, buf_type=gdal.GDT_Float64)
        got = np.frombuffer(raw, np.float64).reshape(h, w)
        assert np.array_equal(got, (a if which == "a" else b)[band - 1]), (which, band)


def test_time_series_on_s3_reads_like_gdal(sources, chunkref_bin, tmp_path):
    """The stack indexed and read where such collections live: S3 (moto,
    signed requests). The one-call drill and the band-by-band loop (which
    reads ahead from its first band) give GDAL's pixels."""
    bucket = "steps"
    options = {"AWS_S3_ENDPOINT": "", "AWS_HTTPS": "NO", "AWS_VIRTUAL_HOSTING": "FALSE",
               "AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "testing",
               "AWS_SECRET_ACCESS_KEY": "testing"}
    with moto_bucket(REPO_ROOT / "build" / "moto-venv", tmp_path / "moto.log", bucket,
                     sources) as s3:
        options["AWS_S3_ENDPOINT"] = s3.endpoint
        env = os.environ | options
        inputs = [f"s3://{bucket}/{name(s)}" for s in range(STEPS)]
        done = subprocess.run([str(chunkref_bin), "index", "--stack", "--datetime-from-name",
                               *inputs, "-o", str(tmp_path / "stack.parquet")],
                              capture_output=True, text=True, env=env, timeout=300)
        assert done.returncode == 0, f"{done.stderr}{done.stdout}"
        with config_options(options):
            try:
                ds = open_chunkref(tmp_path / "stack.parquet")
                drill = ds.ReadAsArray(140, 70, 1, 1).ravel().tolist()
                ds = open_chunkref(tmp_path / "stack.parquet")
                loop = [np.frombuffer(ds.GetRasterBand(b).ReadRaster(250, 150, 1, 1),
                                      np.int16)[0] for b in range(1, STEPS + 1)]
            finally:
                ds = None
                gdal.VSICurlClearCache()
    assert drill == want(sources, 140, 70, 1, 1).ravel().tolist()
    assert loop == want(sources, 250, 150, 1, 1).ravel().tolist()


@pytest.mark.parametrize("where", ["local", "remote"])
def test_gdallocationinfo_names_each_dates_file(where, request, sources):
    """``gdallocationinfo -lifonly`` (the ``LocationInfo`` metadata of each
    band): the file each date's value comes from, as GDAL names it; the
    values it prints alongside are GDAL's."""
    stack = request.getfixturevalue(f"{where}_stack")
    if where == "local":
        files = [str(sources / name(s)) for s in range(STEPS)]
    else:
        files = [f"/vsicurl/{request.getfixturevalue('server').url}{name(s)}" for s in range(STEPS)]
    done = subprocess.run(["gdallocationinfo", "-lifonly", str(stack), "140", "70"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == files
    done = subprocess.run(["gdallocationinfo", "-b", "3", str(stack), "140", "70"],
                          capture_output=True, text=True, timeout=60)
    assert f"<LocationInfo><File>{files[2]}</File></LocationInfo>" in done.stdout, done.stdout
    assert f"Value: {want(sources, 140, 70, 1, 1).ravel()[2]}" in done.stdout, done.stdout


def wait_for_requests(server, count: int) -> None:
    """Waits (at most 10 s) until the server has seen ``count`` requests."""
    deadline = time.monotonic() + 10
    while len(server.log.requests) < count and time.monotonic() < deadline:
        time.sleep(0.01)


def test_first_band_read_fetches_the_next_bands_ahead_until_a_guess_is_wrong(
        server, unshared_stack, sources):
    """The first one-band read of part of a tile fetches that tile of the
    later bands ahead, concurrently: the loop over the bands then makes no
    request of its own. A client that goes elsewhere instead (one band at
    many points) ends the guessing: its later reads fetch only their own
    chunk."""
    ds = open_chunkref(unshared_stack)
    server.log.requests.clear()
    server.log.most_in_flight = 0
    server.delay = 0.03
    try:
        first = np.frombuffer(ds.GetRasterBand(1).ReadRaster(250, 150, 1, 1), np.int16)[0]
        wait_for_requests(server, STEPS)
        assert len(server.log.requests) == STEPS, server.log.requests
        assert server.log.most_in_flight >= 8, server.log.most_in_flight
        rest = [np.frombuffer(ds.GetRasterBand(b).ReadRaster(250, 150, 1, 1), np.int16)[0]
                for b in range(2, STEPS + 1)]
        assert [first, *rest] == want(sources, 250, 150, 1, 1).ravel().tolist()
        assert len(server.log.requests) == STEPS, server.log.requests

        ds = open_chunkref(unshared_stack)
        server.log.requests.clear()
        points = [(10, 10), (140, 70), (20, 150), (260, 20)]
        for i, (x, y) in enumerate(points):
            got = np.frombuffer(ds.GetRasterBand(1).ReadRaster(x, y, 1, 1), np.int16)[0]
            assert got == want(sources, x, y, 1, 1)[0, 0, 0], (x, y)
            if i == 0:  # the guess, made in full before it shows wrong
                wait_for_requests(server, STEPS)
        assert len(server.log.requests) == STEPS + len(points) - 1, server.log.requests

        # Two bands at each point: the drill the guess made at the first is
        # left before its end, which ends the guessing too.
        ds = open_chunkref(unshared_stack)
        for i, (x, y) in enumerate(points[:3]):
            server.log.requests.clear()
            got = np.frombuffer(ds.GetRasterBand(1).ReadRaster(x, y, 1, 1), np.int16)[0]
            time.sleep(0.2)  # a guess would be in flight by now
            assert len(server.log.requests) == (STEPS if i == 0 else 1), (i, server.log.requests)
            got2 = np.frombuffer(ds.GetRasterBand(2).ReadRaster(x, y, 1, 1), np.int16)[0]
            assert [got, got2] == want(sources, x, y, 1, 1)[:2, 0, 0].tolist(), (x, y)
    finally:
        server.delay = 0.0


def test_datasets_on_one_index_keep_their_own_guesses(server, remote_stack, sources, tmp_path):
    """Datasets opened on the same index share its chunk locations: one's
    guess must not stop another's, interleaved or on threads of their own."""
    loop = lambda ds, x, y, bands: [  # noqa: E731
        np.frombuffer(ds.GetRasterBand(b).ReadRaster(x, y, 1, 1), np.int16)[0] for b in bands]
    # An index written a while ago: later opens share the first one's.
    remote_stack = Path(shutil.copy(remote_stack, tmp_path / "settled.parquet"))
    os.utime(remote_stack, (time.time() - 3600,) * 2)
    one, two = open_chunkref(remote_stack), open_chunkref(remote_stack)
    server.log.requests.clear()
    server.delay = 0.02
    try:
        first = loop(one, 250, 150, [1])
        wait_for_requests(server, STEPS)
        first += loop(two, 10, 10, [1])
        wait_for_requests(server, 2 * STEPS)
        got_one = first[:1] + loop(one, 250, 150, range(2, STEPS + 1))
        got_two = first[1:] + loop(two, 10, 10, range(2, STEPS + 1))
        assert got_one == want(sources, 250, 150, 1, 1).ravel().tolist()
        assert got_two == want(sources, 10, 10, 1, 1).ravel().tolist()
        assert len(server.log.requests) == 2 * STEPS, server.log.requests

        points = [(20 + 37 * i % 280, 15 + 53 * i % 180) for i in range(6)]
        expected = {p: want(sources, *p, 1, 1).ravel().tolist() for p in points}

        def walk(offset: int) -> list:
            ds = open_chunkref(remote_stack)
            return [(p, loop(ds, *p, range(1, STEPS + 1)))
                    for p in points[offset:] + points[:offset]]

        with concurrent.futures.ThreadPoolExecutor(3) as pool:
            for walked in pool.map(walk, range(3)):
                for p, got in walked:
                    assert got == expected[p], p
    finally:
        server.delay = 0.0


#: A guess in flight when the process forks: argv STACK X Y STEPS. Both
#: processes then read every band there; the child has no fetching thread.
FORK_SCRIPT = r"""
import os, sys
import numpy as np
from osgeo import gdal
gdal.UseExceptions()
stack, x, y, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
ds = gdal.Open(stack)
loop = lambda bands: [int(np.frombuffer(ds.GetRasterBand(b).ReadRaster(x, y, 1, 1), np.int16)[0])
                      for b in bands]
first = loop([1])
pid = os.fork()
print(" ".join(map(str, first + loop(range(2, steps + 1)))), flush=True)  # child, then parent
if pid == 0:
    os._exit(0)
os.waitpid(pid, 0)
"""


def test_a_guess_in_flight_at_fork_is_the_parents(server, remote_stack, sources, tmp_path):
    script = tmp_path / "fork_guess.py"
    script.write_text(FORK_SCRIPT)
    server.delay = 0.05  # the guess is still in flight when the process forks
    try:
        done = subprocess.run([sys.executable, str(script), str(remote_stack), "250", "150",
                               str(STEPS)], capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        pytest.fail("a read after fork hangs")
    finally:
        server.delay = 0.0
    assert done.returncode == 0, done.stderr[-3000:]
    expected = " ".join(map(str, want(sources, 250, 150, 1, 1).ravel().tolist()))
    assert done.stdout.split("\n")[:2] == [expected, expected], done.stdout


@pytest.mark.parametrize("where", ["local", "remote"])
@pytest.mark.parametrize("window", [(120, 120, 20, 20), (64, 70, 128, 100), (250, 150, 50, 50)],
                         ids=lambda w: "x".join(map(str, w)))
def test_band_loop_over_windows_across_tiles(where, window, request, sources):
    """A window no larger than a tile but across two or four of them, read
    band by band, drills as a window inside one tile does: GDAL's pixels,
    and over HTTP each tile fetched once, in one round of requests."""
    stack = request.getfixturevalue("local_stack" if where == "local" else "unshared_stack")
    ds = open_chunkref(stack)
    server = request.getfixturevalue("server") if where == "remote" else None
    if server:
        server.log.requests.clear()
    x, y, w, h = window
    got = np.stack([np.frombuffer(ds.GetRasterBand(b).ReadRaster(x, y, w, h), np.int16)
                    .reshape(h, w) for b in range(1, STEPS + 1)])
    assert np.array_equal(got, want(sources, *window))
    if server:
        tiles = len({(tx, ty) for tx in (x // 128, (x + w - 1) // 128)
                     for ty in (y // 128, (y + h - 1) // 128)})
        assert len(server.log.requests) <= STEPS * tiles, server.log.requests


def test_band_loop_of_large_windows_through_many_drills(chunkref_bin, tmp_path):
    """A window so large that a drill holds 9 bands (16 MiB): 84 bands take
    ten drills, each asking for more bands than the last, a count that must
    stay bounded (it overflowed and crashed the process)."""
    bands, size = 84, 512
    mem = gdal.GetDriverByName("MEM").Create("", size, size, bands, gdal.GDT_Float64)
    y, x = np.mgrid[0:size, 0:size]
    for b in range(bands):
        mem.GetRasterBand(b + 1).WriteArray((x * 3 + y * 7 + b * 1000) % 4093 / 7.0)
    tif = tmp_path / "bands.tif"
    gdal.Translate(str(tif), mem, options="-co TILED=YES -co BLOCKXSIZE=512 -co BLOCKYSIZE=512 "
                                          "-co INTERLEAVE=BAND -co COMPRESS=ZSTD")
    server = RangeServer(tmp_path)
    try:
        done = run_chunkref(chunkref_bin, "index", tif, "-o", tmp_path / "local.json")
        assert done.returncode == 0, done.stderr
        index = tmp_path / "http.json"
        index.write_text((tmp_path / "local.json").read_text().replace(str(tif), server.url + tif.name))
        ds, native = open_chunkref(index), gdal.Open(str(tif))
        window = (20, 30, 460, 460)
        for b in range(1, bands + 1):
            got = np.frombuffer(ds.GetRasterBand(b).ReadRaster(*window), np.float64)
            assert np.array_equal(got, native.GetRasterBand(b).ReadAsArray(*window).ravel()), b
        # Each tile fetched once (neighbours in the file share requests).
        assert server.log.bytes_sent <= tif.stat().st_size, server.log.bytes_sent
    finally:
        server.close()


def test_gdallocationinfo_matches_gdal(local_stack, sources):
    env = dict(os.environ)
    done = subprocess.run(["gdallocationinfo", "-valonly", str(local_stack), "77", "133"],
                          capture_output=True, text=True, env=env, check=True)
    assert [int(v) for v in done.stdout.split()] == want(sources, 77, 133, 1, 1).ravel().tolist()


def test_repeated_reads_nearby_make_no_new_requests(server, unshared_stack, sources):
    """A second pixel in the same tiles (rasterio sampling points) is read
    from the bytes the first read fetched; the reads after it from the
    block cache. A pixel in other tiles fetches those."""
    ds = open_chunkref(unshared_stack)
    server.log.requests.clear()
    first = ds.ReadAsArray(140, 70, 1, 1)
    assert np.array_equal(first.ravel(), want(sources, 140, 70, 1, 1).ravel())
    assert len(server.log.requests) == STEPS, server.log.requests
    for x, y in [(141, 71), (250, 127), (129, 0), (200, 100), (140, 70)]:
        got = ds.ReadAsArray(x, y, 1, 1)
        assert np.array_equal(got.ravel(), want(sources, x, y, 1, 1).ravel()), (x, y)
    assert len(server.log.requests) == STEPS, server.log.requests
    # A window of rows further down the same tiles: served from the block cache.
    got = ds.ReadAsArray(130, 100, 20, 3)
    assert np.array_equal(got, want(sources, 130, 100, 20, 3))
    assert len(server.log.requests) == STEPS, server.log.requests
    # Another tile: its chunks are fetched.
    got = ds.ReadAsArray(10, 10, 1, 1)
    assert np.array_equal(got.ravel(), want(sources, 10, 10, 1, 1).ravel())
    assert len(server.log.requests) == 2 * STEPS, server.log.requests


def test_fetch_cache_setting_keeps_nothing(server, unshared_stack, sources):
    """``CHUNKREF_FETCH_CACHE=0``: no fetched bytes are kept, so a second
    pixel in the same tiles fetches them again (then GDAL's block cache
    holds the blocks it decoded whole)."""
    with config_options({"CHUNKREF_FETCH_CACHE": "0"}):
        ds = open_chunkref(unshared_stack)
    server.log.requests.clear()
    for n, (x, y) in enumerate([(140, 70), (141, 71), (142, 72)]):
        got = ds.ReadAsArray(x, y, 1, 1)
        assert np.array_equal(got.ravel(), want(sources, x, y, 1, 1).ravel()), (x, y)
        assert len(server.log.requests) == min(n + 1, 2) * STEPS, (n, server.log.requests)


def tile_range(path: Path, x: int, y: int) -> tuple[int, int]:
    """Offset and size of tile (x, y) of a TIFF file, as GDAL reports them."""
    ds = gdal.Open(str(path))  # kept open while its band is used
    band = ds.GetRasterBand(1)
    return (int(band.GetMetadataItem(f"BLOCK_OFFSET_{x}_{y}", "TIFF")),
            int(band.GetMetadataItem(f"BLOCK_SIZE_{x}_{y}", "TIFF")))


@pytest.mark.parametrize("damage", ["truncated", "corrupt"])
@pytest.mark.parametrize("where", ["local", "remote"])
def test_damaged_chunk_is_an_error_naming_file_and_chunk(damage, where, sources, chunkref_bin,
                                                        tmp_path):
    """A tile cut short by the end of its file, or overwritten, fails the
    drill with the file and the chunk in the message, not wrong pixels."""
    root = tmp_path / "steps"
    shutil.copytree(sources, root)
    bad = root / name(7)
    offset, size = tile_range(bad, 1, 0)
    data = bytearray(bad.read_bytes())
    if damage == "truncated":
        del data[offset + size // 10:]  # the file ends inside the tile
    else:
        data[offset + 4:offset + size] = bytes(size - 4)  # frame header kept, blocks zeroed
    server = RangeServer(root) if where == "remote" else None
    gdal.SetConfigOption("GDAL_HTTP_MAX_RETRY", "0")  # a cut-short body is not retried
    try:
        base = server.url if server else f"{root}/"
        out = make_stack(chunkref_bin, [f"{base}{name(s)}" for s in range(STEPS)],
                         tmp_path / "stack.parquet")
        bad.write_bytes(bytes(data))
        ds = open_chunkref(out)
        gdal.UseExceptions()
        with pytest.raises(RuntimeError) as err:
            ds.ReadAsArray(140, 5, 1, 1)
        text = str(err.value)
        assert name(7) in text, text
        assert "7.0.0.1" in text, text  # step 7, tile row 0, column 1
        # Band by band: the steps before the damaged one read (the read
        # ahead that met the damage is dropped, the bands then read one at
        # a time), the damaged one fails.
        ds = open_chunkref(out)
        expected = want(sources, 140, 5, 1, 1).ravel().tolist()
        for b in range(1, 8):
            value = np.frombuffer(ds.GetRasterBand(b).ReadRaster(140, 5, 1, 1), np.int16)[0]
            assert value == expected[b - 1], b
        with pytest.raises(RuntimeError) as err:
            ds.GetRasterBand(8).ReadRaster(140, 5, 1, 1)
        assert name(7) in str(err.value) and "7.0.0.1" in str(err.value), str(err.value)
    finally:
        gdal.SetConfigOption("GDAL_HTTP_MAX_RETRY", None)
        if server:
            server.close()


@pytest.mark.parametrize("where", ["local", "remote"])
def test_rasterio_window_and_sample_match_gdal(where, request, sources):
    """rasterio's ``src.read(window=...)`` of every band and ``sample`` of
    points of one tile, the calls time-series users make."""
    rasterio = pytest.importorskip("rasterio")
    from rasterio.windows import Window

    stack = request.getfixturevalue(f"{where}_stack")
    with rasterio.open(str(stack)) as src:
        for x, y, w, h in WINDOWS:
            assert np.array_equal(src.read(window=Window(x, y, w, h)), want(sources, x, y, w, h))
        pixels = [(130, 70), (141, 72), (250, 10), (129, 127)]
        points = [(100 + 0.5 * (x + 0.5), 200 - 0.5 * (y + 0.5)) for x, y in pixels]
        for (x, y), values in zip(pixels, src.sample(points)):
            assert values.tolist() == want(sources, x, y, 1, 1).ravel().tolist(), (x, y)


#: terra's reads of a stack (arguments: index, then a 1-based row and column
#: of one cell, then the 1-based first row, rows, first column and columns
#: of a window): the cell over every date (``r[cell]``), then the window's
#: values, cells in rows of columns, every date's in turn.
TERRA_READS = """
suppressMessages(library(terra))
a <- commandArgs(TRUE)
n <- as.integer(a[-1])
r <- rast(a[1])
cat(unlist(r[cellFromRowCol(r, n[1], n[2])]), "\\n")
cat(as.vector(values(r, row = n[3], nrows = n[4], col = n[5], ncols = n[6])), "\\n")
"""


@pytest.mark.parametrize("where", ["local", "remote"])
def test_terra_cell_and_window_match_gdal(where, request, sources):
    """R's terra (Debian's ``r-cran-terra``, through the plugin): one cell
    on every date and a window crossing tiles, as GDAL reads the steps."""
    if shutil.which("Rscript") is None or subprocess.run(
            ["Rscript", "-e", "library(terra)"], capture_output=True).returncode != 0:
        pytest.skip("R terra is not installed (Debian package r-cran-terra)")
    stack = request.getfixturevalue(f"{where}_stack")
    (cx, cy), (x, y, w, h) = (141, 72), (120, 120, 20, 20)
    done = subprocess.run(
        ["Rscript", "-e", TERRA_READS, str(stack), str(cy + 1), str(cx + 1),
         str(y + 1), str(h), str(x + 1), str(w)],
        capture_output=True, text=True, env=dict(os.environ), check=True)
    cell, window = ([int(float(v)) for v in line.split()]
                    for line in done.stdout.strip().splitlines())
    assert cell == want(sources, cx, cy, 1, 1).ravel().tolist()
    assert window == want(sources, x, y, w, h).reshape(STEPS, -1).ravel().tolist()
