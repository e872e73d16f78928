"""Reading after ``fork``: a process that read through ChunkRef and then
forks (``os.fork``, ``multiprocessing`` with its default fork start
method, dask's forked workers) must read in the child as in the parent.
The child gets a copy of the driver's memory but none of its threads, so
the decoding pool, the I/O runtime and the object-store clients are built
anew in the child.  Each case runs in its own interpreter under a timeout:
a regression fails instead of hanging the suite."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from osgeo import gdal

from servers import RangeServer
from test_tiff_index import TIFF_CASES, index_tiff, write_tiff

#: Seconds a case may take (each takes under 2): a hang in the child, or a
#: child waiting out its parent's HTTP connections (30 s), is a failure.
TIMEOUT = 20

#: The case, as a script file (spawned workers import it, so the work is
#: under the main guard): argv INDEX METHOD.
SCRIPT = r"""
import functools, hashlib, multiprocessing, os, sys
from osgeo import gdal
gdal.UseExceptions()

WINDOWS = [(0, 0, 300, 200), (10, 20, 150, 90), (64, 64, 64, 64)]

def digest(name, window):
    ds = gdal.Open(name)
    return hashlib.sha256(ds.ReadRaster(*window)).hexdigest()

def main(name, method):
    before = [digest(name, w) for w in WINDOWS]  # the parent has read: pools exist
    ds = gdal.Open(name)
    ds.GetRasterBand(2).ReadRaster(0, 0, 100, 100)  # and holds a dataset open
    if method == "os.fork":
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            got = [digest(name, w_) for w_ in WINDOWS]
            got.append(hashlib.sha256(ds.GetRasterBand(2).ReadRaster(50, 50, 200, 100)).hexdigest())
            os.write(w, "\n".join(got).encode())
            os._exit(0)
        os.close(w)
        child = b""
        while chunk := os.read(r, 65536):
            child += chunk
        os.waitpid(pid, 0)
        child = child.decode().split("\n")
        assert child[:3] == before, "the child read other pixels"
        parent_band = hashlib.sha256(ds.GetRasterBand(2).ReadRaster(50, 50, 200, 100)).hexdigest()
        assert child[3] == parent_band, "the child's read of the inherited dataset differs"
    else:
        with multiprocessing.get_context(method).Pool(2) as pool:
            got = pool.map(functools.partial(digest, name), WINDOWS * 2)
        assert got == before * 2, "the workers read other pixels"
    assert [digest(name, w) for w in WINDOWS] == before, "the parent reads other pixels afterwards"
    print("ok")

if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
"""


@pytest.fixture(scope="module")
def indexes(chunkref_bin, tmp_path_factory):
    """{"local": index of a local COG, "http": the same COG over HTTP}."""
    tmp = tmp_path_factory.mktemp("fork")
    tif = write_tiff(tmp / "src.tif", TIFF_CASES["cog-deflate-pred2-3band"])
    doc = index_tiff(chunkref_bin, tif, tmp / "local.json")
    server = RangeServer(tmp)
    remote = tmp / "http.json"
    remote.write_text(json.dumps(doc).replace(json.dumps(str(tif))[1:-1], server.url + "src.tif"))
    yield {"local": tmp / "local.json", "http": remote}
    server.close()


@pytest.mark.parametrize("method", ["os.fork", "fork", "spawn"])
@pytest.mark.parametrize("where", ["local", "http"])
def test_reads_after_fork_match_the_parent(indexes, tmp_path, method, where):
    script = tmp_path / "case.py"
    script.write_text(SCRIPT)
    try:
        done = subprocess.run(
            [sys.executable, str(script), str(indexes[where]), method],
            capture_output=True, text=True, timeout=TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{method} child did not finish in {TIMEOUT} s: it hangs")
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]


def test_the_pixels_are_gdals(indexes):
    """The digests compared above are of the right pixels."""
    native = gdal.Open(str(Path(indexes["local"]).with_name("src.tif")))
    chunkref = gdal.Open(str(indexes["local"]))
    assert chunkref.ReadRaster() == native.ReadRaster()
