"""Growing collections: ``chunkref index --append`` adds time steps to a
collection stored as a directory of Parquet parts (docs/reference-table.md,
"Growing collections").

The oracle is the stack built from scratch over all the files: the grown
collection reads identically through GDAL (every band, overviews,
``DATETIME`` metadata, ``TIME_STEP``), whether its rows are read at open or
on demand; pyarrow and DuckDB read the parts directory as one table whose
rows are the from-scratch table's; ``chunkref convert`` makes it one file
again; files off the collection's grid are refused by name and leave the
collection as it was.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from osgeo import gdal

from conftest import run_chunkref
from test_tables import run_python, table_python  # noqa: F401

DAYS = [f"2021-03-{d:02d}" for d in range(1, 6)]


def write_day(directory: Path, day: str, seed: int, size: int = 600) -> Path:
    """A 3-band COG of ``day`` (its name carries the date)."""
    rng = np.random.default_rng(seed)
    data = (rng.integers(0, 255, (3, size, size)) // 16 * 16).astype(np.uint8)
    mem = gdal.GetDriverByName("MEM").Create("", size, size, 3, gdal.GDT_Byte)
    for b in range(3):
        mem.GetRasterBand(b + 1).WriteArray(data[b])
    mem.SetGeoTransform([300000, 10, 0, 5000000, 0, -10])
    mem.SetProjection("EPSG:32633")
    path = directory / f"sst-{day.replace('-', '')}.tif"
    gdal.Translate(str(path), mem, format="COG",
                   creationOptions=["COMPRESS=DEFLATE", "BLOCKSIZE=256"])
    return path


@pytest.fixture(scope="module")
def days(tmp_path_factory) -> list[Path]:
    root = tmp_path_factory.mktemp("days")
    return [write_day(root, day, seed) for seed, day in enumerate(DAYS)]


def chunkref(binary: Path, *args, ok: bool = True):
    done = run_chunkref(binary, "index", "--datetime-from-name", *args)
    if ok:
        assert done.returncode == 0, f"chunkref index {args}:\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def grown(days, tmp_path_factory, chunkref_bin) -> tuple[Path, Path]:
    """(the collection grown by appends, the stack built from scratch)."""
    root = tmp_path_factory.mktemp("grown")
    coll = root / "sst.parquet"
    # A one-file stack of two days, then one day, then two days at once.
    chunkref(chunkref_bin, *days[:2], "-o", coll)
    assert coll.is_file()
    chunkref(chunkref_bin, "--append", days[2], "-o", coll)
    chunkref(chunkref_bin, "--append", *days[3:], "-o", coll)
    full = root / "full.parquet"
    chunkref(chunkref_bin, *days, "-o", full)
    return coll, full


def test_parts_directory_lists_its_parts(grown):
    coll, _ = grown
    listed = json.loads((coll / "_chunkref_parts.json").read_text())
    assert listed == {"chunkref_parts": 1, "parts": [
        "part-00000.parquet", "part-00001.parquet", "part-00002.parquet"]}
    assert sorted(p.name for p in coll.iterdir()) == ["_chunkref_parts.json", *listed["parts"]]


@pytest.mark.parametrize("eager_rows", [None, "0"])
def test_grown_collection_reads_like_a_stack_built_at_once(grown, eager_rows):
    coll, full = grown
    gdal.SetConfigOption("CHUNKREF_TABLE_EAGER_ROWS", eager_rows)
    try:
        got, want = gdal.Open(str(coll)), gdal.Open(str(full))
        assert got.RasterCount == want.RasterCount == 3 * len(DAYS)
        np.testing.assert_array_equal(got.ReadAsArray(), want.ReadAsArray())
        dates = [got.GetRasterBand(b).GetMetadataItem("DATETIME") for b in range(1, 16, 3)]
        assert dates == DAYS
        for b in (1, 8, 15):
            g, w = got.GetRasterBand(b), want.GetRasterBand(b)
            assert g.GetOverviewCount() == w.GetOverviewCount() > 0
            np.testing.assert_array_equal(g.GetOverview(0).ReadAsArray(), w.GetOverview(0).ReadAsArray())
        step = gdal.OpenEx(str(coll), open_options=["TIME_STEP=2021-03-04"])
        np.testing.assert_array_equal(step.ReadAsArray(), want.ReadAsArray()[9:12])
    finally:
        gdal.SetConfigOption("CHUNKREF_TABLE_EAGER_ROWS", None)


def test_other_readers_see_one_table(grown, table_python):  # noqa: F811
    coll, full = grown
    script = r"""
import sys, duckdb, pyarrow.dataset as ds, pyarrow.parquet as pq
coll, full = sys.argv[1], sys.argv[2]
keys = ["array", "time", "band", "y_chunk", "x_chunk", "part"]
got = ds.dataset(coll, format="parquet").to_table().sort_by([(k, "ascending") for k in keys])
want = pq.read_table(full).sort_by([(k, "ascending") for k in keys])
assert got.equals(want), (got.num_rows, want.num_rows)
n = duckdb.sql(f"select count(*) from read_parquet('{coll}/*.parquet') where time = 4").fetchall()[0][0]
print(got.num_rows, n)
"""
    rows, last_day = map(int, run_python(table_python, script, coll, full).split())
    assert rows > 0 and last_day * len(DAYS) == rows


def test_convert_makes_one_file_again(grown, tmp_path, chunkref_bin):
    coll, full = grown
    single = tmp_path / "single.parquet"
    done = run_chunkref(chunkref_bin, "convert", coll, single)
    assert done.returncode == 0, done.stderr
    np.testing.assert_array_equal(gdal.Open(str(single)).ReadAsArray(),
                                  gdal.Open(str(full)).ReadAsArray())


def test_files_off_the_grid_are_refused_and_change_nothing(days, tmp_path, chunkref_bin):
    coll = tmp_path / "c.parquet"
    chunkref(chunkref_bin, "--append", days[0], "-o", coll)
    before = sorted((p.name, p.read_bytes()) for p in coll.iterdir())
    other = write_day(tmp_path, "2021-04-01", 9, size=610)
    done = chunkref(chunkref_bin, "--append", other, "-o", coll, ok=False)
    assert done.returncode != 0 and "not on the collection's grid: metadata '" in done.stderr, done.stderr
    assert sorted((p.name, p.read_bytes()) for p in coll.iterdir()) == before


#: Runs every shard on a dask.distributed LocalCluster of worker processes:
#: argv BINARY OUT SHARDS SOURCES...; prints the worker pid of each shard.
SHARDS_ON_DASK = r"""
import os, subprocess, sys
from dask.distributed import Client, LocalCluster


def run_shard(binary, out, i, n, sources):
    done = subprocess.run([binary, "index", "--datetime-from-name", "--shard", f"{i}/{n}",
                           *sources, "-o", out], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return os.getpid()


if __name__ == "__main__":
    binary, out, n, *sources = sys.argv[1:]
    n = int(n)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        futures = [client.submit(run_shard, binary, out, i, n, sources, pure=False)
                   for i in range(n)]
        pids = client.gather(futures)
    assert os.getpid() not in pids, pids
    print(len(set(pids)), "workers")
"""


def test_shards_indexed_on_a_dask_cluster_join_without_a_rewrite(days, tmp_path, chunkref_bin,
                                                                 grown):
    from test_dask_clients import CHECK, REQUIREMENTS
    from test_clients import DEBIAN_PYTHON
    from venvs import ensure_venv
    from conftest import REPO_ROOT

    python = ensure_venv(REPO_ROOT / "build" / "dask-venv", REQUIREMENTS, CHECK,
                         "rioxarray and dask[distributed]", system_python=DEBIAN_PYTHON)
    coll = tmp_path / "sharded.parquet"
    script = tmp_path / "shards.py"
    script.write_text(SHARDS_ON_DASK)
    import subprocess

    done = subprocess.run([str(python), str(script), str(chunkref_bin), str(coll), "3", *map(str, days)],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    shards = sorted(p.name for p in coll.iterdir())
    assert shards == [f"shard-{i:05}-of-00003.parquet" for i in range(3)], shards
    before = {p.name: p.read_bytes() for p in coll.iterdir()}
    merged = run_chunkref(chunkref_bin, "index", "--merge-shards", "-o", coll)
    assert merged.returncode == 0, merged.stderr
    # The shards are kept as they were written; one part holds the document.
    assert all((coll / name).read_bytes() == data for name, data in before.items())
    _, full = grown
    got, want = gdal.Open(str(coll)), gdal.Open(str(full))
    np.testing.assert_array_equal(got.ReadAsArray(), want.ReadAsArray())
    assert [got.GetRasterBand(b).GetMetadataItem("DATETIME") for b in range(1, 16, 3)] == DAYS
    # A merged collection keeps growing.
    extra = write_day(tmp_path, "2021-03-06", 7)
    chunkref(chunkref_bin, "--append", extra, "-o", coll)
    assert gdal.Open(str(coll)).RasterCount == 3 * (len(DAYS) + 1)


def test_shards_missing_or_from_other_lists_are_refused(days, tmp_path, chunkref_bin):
    coll = tmp_path / "s.parquet"
    chunkref(chunkref_bin, "--shard", "0/2", *days, "-o", coll)
    done = run_chunkref(chunkref_bin, "index", "--merge-shards", "-o", coll)
    assert done.returncode != 0 and "shard-00001-of-00002.parquet" in done.stderr, done.stderr
    # Shard 1 of a shorter list: its steps do not start where shard 0's end.
    chunkref(chunkref_bin, "--shard", "1/2", *days[:3], "-o", coll)
    done = run_chunkref(chunkref_bin, "index", "--merge-shards", "-o", coll)
    assert done.returncode != 0 and "same list of sources" in done.stderr, done.stderr


def test_appending_needs_a_parquet_collection(days, tmp_path, chunkref_bin):
    done = chunkref(chunkref_bin, "--append", days[0], "-o", tmp_path / "c.json", ok=False)
    assert done.returncode != 0 and "must end in .parquet" in done.stderr, done.stderr
    assert not (tmp_path / "c.json").exists()
