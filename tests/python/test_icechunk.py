"""Icechunk repositories as icechunk-python writes them.

tests/python/icechunk_writer.py runs in two venvs: icechunk 1.1.21 (format
spec 1, with VirtualiZarr 2.5.1 and kerchunk for the virtual stores) and
icechunk 2.0.0a4 (spec 1 and spec 2; later icechunk 2.x needs Python 3.12,
which Debian 12 lacks).  It writes native, inline and virtual chunks,
nested groups, several commits, a tag and a branch, and reads each
version back with zarr from a read-only icechunk session: ChunkRef must
read the same values at the same version (BRANCH / TAG / SNAPSHOT open
options).  VirtualiZarr's to_icechunk / to_kerchunk stores over a NetCDF4
file must read as GDAL's netCDF driver reads the file.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from osgeo import gdal

from conftest import REPO_ROOT
from raster_checks import assert_band_matches, captured_errors, open_chunkref
from servers import MotoServer
from test_multidim import arrays_of, assert_same_info, assert_same_values, mdiminfo, open_md
from test_remote import config, s3_options
from test_tables import run_python
from venvs import ICECHUNK1_REQUIREMENTS as V1_REQUIREMENTS
from venvs import ICECHUNK2_REQUIREMENTS as V2_REQUIREMENTS
from venvs import ensure_venv

WRITER = Path(__file__).with_name("icechunk_writer.py")
BUCKET = "icechunk"


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> tuple[Path, dict]:
    """Every repository (spec 1 by icechunk 1.x; spec 1 and 2 by 2.0) and
    the writers' manifests, merged."""
    v1 = ensure_venv(REPO_ROOT / "build" / "icechunk-venv", V1_REQUIREMENTS,
                     "import icechunk, virtualizarr, kerchunk.df, netCDF4, hdf5plugin",
                     "icechunk 1.x, VirtualiZarr and kerchunk")
    v2 = ensure_venv(REPO_ROOT / "build" / "icechunk2-venv", V2_REQUIREMENTS,
                     "import icechunk, zarr", "icechunk 2.0")
    out = tmp_path_factory.mktemp("icechunk")
    manifest = {}
    for python, spec, label, extra in [(v1, "1", "icechunk1", ["--virtualizarr"]),
                                       (v2, "1", "icechunk2", []), (v2, "2", "icechunk2", [])]:
        where = out / label
        run_python(python, WRITER.read_text(), where, spec, *extra)
        for name, entry in json.loads((where / f"spec{spec}-manifest.json").read_text()).items():
            manifest[f"{label}-{name}"] = entry
    return out, manifest


def versions(manifest: dict):
    for repo, entry in manifest.items():
        for label, version in entry.get("versions", {}).items():
            yield repo, entry["path"], label, version


def test_every_version_of_every_array_reads_as_the_writer_reads_it(written):
    _, manifest = written
    seen = 0
    for repo, path, label, version in versions(manifest):
        for name, npy in version["arrays"].items():
            expected = np.load(npy)
            what = f"{repo} {label} {name}"
            ds = open_chunkref(f'CHUNKREF:"{path}":{name}', version["options"])
            planes = expected if expected.ndim == 3 else expected[np.newaxis]
            assert ds.RasterCount == planes.shape[0], what
            for b, plane in enumerate(planes):
                assert_band_matches(ds.GetRasterBand(b + 1), plane, f"{what} band {b + 1}")
            seen += 1
    # 3 arrays x 4 versions of native, 1 virtual; three writer runs.
    assert seen == 3 * (3 * 4 + 1)


#: The native repository's arrays as the writer made them: dimensions,
#: chunk shape, fill value.
NATIVE_ARRAYS = {"temp": (["y", "x"], [16, 32], -9999.0), "small": (["y", "x"], [2, 4], 0.0),
                 "grp/cube": (["time", "y", "x"], [1, 8, 8], -1.0)}


def hyperslab(values: np.ndarray, start: list[int], count: list[int],
              step: list[int]) -> np.ndarray:
    """What a multidimensional read of `values` with start, count, step gives."""
    return values[np.ix_(*[s + t * np.arange(c) for s, c, t in zip(start, count, step)])]


def test_multidim_view_reads_every_version_as_the_writer(written):
    """GDAL's multidimensional view of every repository at every version
    (BRANCH / TAG / SNAPSHOT open options): each array the writer's zarr
    reads, whole and by hyperslabs (offset, strided, reversed), with the
    dimensions, chunk shape and fill value the writer gave it."""
    _, manifest = written
    seen = 0
    for repo, path, label, version in versions(manifest):
        arrays = arrays_of(open_md(path, options=version["options"]))
        assert sorted(arrays) == sorted(f"/{n}" for n in version["arrays"]), (repo, label)
        for name, npy in version["arrays"].items():
            expected, array, what = np.load(npy), arrays[f"/{name}"], f"{repo} {label} {name}"
            if "native" in repo:
                dims, block, fill = NATIVE_ARRAYS[name]
                assert [d.GetName() for d in array.GetDimensions()] == dims, what
                assert array.GetBlockSize() == block, what
                assert array.GetNoDataValueAsDouble() == fill, what
            np.testing.assert_array_equal(array.ReadAsArray(), expected, err_msg=what)
            shape = list(expected.shape)
            for start, count, step in [([s // 3 for s in shape], [s - s // 3 for s in shape],
                                        [1] * len(shape)),
                                       ([1] * len(shape), [s // 2 for s in shape],
                                        [2] * len(shape)),
                                       ([s - 1 for s in shape], shape, [-1] * len(shape))]:
                got = array.ReadAsArray(array_start_idx=start, count=count, array_step=step)
                np.testing.assert_array_equal(got, hyperslab(expected, start, count, step),
                                              err_msg=f"{what} {start} {count} {step}")
            seen += 1
    assert seen == 3 * (3 * 4 + 1)


def test_virtualizarr_repository_matches_gdal_netcdf_multidim(written):
    """VirtualiZarr's Icechunk store (and its Kerchunk JSON and Parquet)
    over a NetCDF-4 file: gdalmdiminfo and every array's values as GDAL's
    netCDF driver's multidimensional view of the file. The dimensions'
    types and directions differ on purpose: the netCDF driver derives them
    from CF units, GDAL's Zarr driver from `axis` / `standard_name` only,
    and chunkref does as the Zarr driver for a store not indexed from the
    NetCDF file itself (docs/driver.md)."""
    _, manifest = written
    vz = manifest["icechunk1-virtualizarr"]
    source = open_md(vz["source"], ["netCDF"])
    for store in vz["stores"]:
        assert_same_info(mdiminfo(store), mdiminfo(vz["source"]), store, dimension_types=False)
        assert_same_values(open_md(store), source, store)


def test_versions_differ_where_the_commits_did(written):
    """Guards the test above: the versions really hold different values."""
    _, manifest = written
    entry = manifest["icechunk2-spec2-native"]["versions"]
    main = np.load(entry["main"]["arrays"]["temp"])
    tag = np.load(entry["tag-v1"]["arrays"]["temp"])
    assert (main[:16, :32] == 7).all() and not (tag[:16, :32] == 7).all()
    dev = np.load(entry["dev"]["arrays"]["grp/cube"])
    assert (dev[2] == 5).all()


def test_snapshot_option_and_default_branch(written):
    _, manifest = written
    entry = manifest["icechunk2-spec2-native"]
    first = entry["versions"]["first"]
    tag = entry["versions"]["tag-v1"]
    assert first["snapshot"] == tag["snapshot"]
    a = open_chunkref(f'CHUNKREF:"{entry["path"]}":temp', [f"SNAPSHOT={first['snapshot']}"])
    b = open_chunkref(f'CHUNKREF:"{entry["path"]}":temp', ["TAG=v1"])
    assert np.array_equal(a.ReadAsArray(), b.ReadAsArray())


def test_repository_directory_opens_without_prefix_and_lists_arrays(written):
    _, manifest = written
    for spec in ("1", "2"):
        path = manifest[f"icechunk2-spec{spec}-native"]["path"]
        ds = gdal.Open(path)
        assert ds is not None and ds.GetDriver().ShortName == "ChunkRef"
        names = [n for k, n in ds.GetMetadata("SUBDATASETS").items() if k.endswith("_NAME")]
        assert sorted(n.rsplit(":", 1)[1] for n in names) == ["grp/cube", "small", "temp"]
        sub = gdal.Open(names[0])
        assert sub is not None and sub.RasterXSize > 0


@pytest.mark.parametrize("form", ["json", "parquet"])
def test_repository_converts_to_an_index_of_its_default_branch(written, chunkref_bin, tmp_path,
                                                                form):
    """``chunkref convert`` of a repository writes the main branch's
    arrays as an index that reads as the repository does."""
    _, manifest = written
    entry = manifest["icechunk2-spec2-native"]
    out = tmp_path / f"converted.{form}"
    subprocess.run([str(chunkref_bin), "convert", entry["path"], str(out)], check=True,
                   capture_output=True)
    for name, npy in entry["versions"]["main"]["arrays"].items():
        expected = np.load(npy)
        planes = expected if expected.ndim == 3 else expected[np.newaxis]
        ds = open_chunkref(f'CHUNKREF:"{out}":{name}')
        for b, plane in enumerate(planes):
            assert_band_matches(ds.GetRasterBand(b + 1), plane, f"{form} {name} band {b + 1}")


def test_inline_chunks_need_no_chunk_object(written, tmp_path):
    """The 8-byte chunks of `small` are inline in the manifest: with every
    chunk object gone it still reads as written."""
    _, manifest = written
    entry = manifest["icechunk2-spec2-native"]
    repo = tmp_path / "no-chunks"
    shutil.copytree(entry["path"], repo)
    shutil.rmtree(repo / "chunks")
    ds = open_chunkref(f'CHUNKREF:"{repo}":small')
    expected = np.load(entry["versions"]["main"]["arrays"]["small"])
    assert_band_matches(ds.GetRasterBand(1), expected, "inline small")


def test_virtual_references_point_into_the_source_file(written):
    _, manifest = written
    for spec in ("1", "2"):
        entry = manifest[f"icechunk2-spec{spec}-virtual"]
        ds = open_chunkref(f'CHUNKREF:"{entry["path"]}":raw')
        assert any(f.endswith(f"spec{spec}-raw.bin") for f in ds.GetFileList())


def test_virtualizarr_stores_read_as_gdal_reads_the_netcdf_file(written):
    _, manifest = written
    vz = manifest["icechunk1-virtualizarr"]
    source = gdal.Open(f'NETCDF:"{vz["source"]}":sst')
    assert source is not None
    for store in vz["stores"]:
        ds = open_chunkref(f'CHUNKREF:"{store}":sst')
        assert ds.RasterCount == source.RasterCount == 3, store
        for b in range(1, 4):
            band = ds.GetRasterBand(b)
            assert_band_matches(band, source.GetRasterBand(b).ReadAsArray(), f"{store} band {b}")
            assert band.GetNoDataValue() == source.GetRasterBand(b).GetNoDataValue()
        got, want = ds.GetGeoTransform(), source.GetGeoTransform()
        assert np.allclose(got, want, atol=1e-9), (store, got, want)


def test_virtualizarr_hdf5_filters_read_as_h5py_reads_them(written):
    """zstd and blosc (hdf5plugin), fletcher32 + shuffle + deflate: the
    codecs VirtualiZarr writes for HDF5 filters, in Kerchunk JSON and
    Icechunk."""
    _, manifest = written
    entry = manifest["icechunk1-filters"]
    for store in entry["stores"]:
        for name, npy in entry["arrays"].items():
            ds = open_chunkref(f'CHUNKREF:"{store}":{name}')
            assert_band_matches(ds.GetRasterBand(1), np.load(npy), f"{store} {name}")


def test_unknown_versions_name_what_was_asked(written):
    _, manifest = written
    for spec in ("1", "2"):
        path = manifest[f"icechunk2-spec{spec}-native"]["path"]
        for option, words in [("TAG=nope", "tag 'nope'"), ("BRANCH=nope", "branch 'nope'"),
                              ("SNAPSHOT=ZZZZ", "snapshot ZZZZ")]:
            with captured_errors() as errors, pytest.raises(RuntimeError):
                gdal.OpenEx(f'CHUNKREF:"{path}":temp', open_options=[option])
            assert any(words in e and path in e for e in errors), (option, errors)
        with captured_errors() as errors, pytest.raises(RuntimeError):
            gdal.OpenEx(path, open_options=["TAG=v1", "BRANCH=main"])
        assert any("at most one" in e for e in errors), errors


def test_damaged_repositories_fail_naming_the_file(written, tmp_path):
    """A truncated snapshot, a manifest of garbage and a missing chunk
    object: clear errors naming the file, never wrong pixels."""
    _, manifest = written
    entry = manifest["icechunk2-spec2-native"]
    snapshot = entry["versions"]["main"]["snapshot"]
    for damage in ("truncate-snapshot", "garbage-manifests", "remove-chunks"):
        repo = tmp_path / damage
        shutil.copytree(entry["path"], repo)
        if damage == "truncate-snapshot":
            target = repo / "snapshots" / snapshot
            target.write_bytes(target.read_bytes()[:60])
            expected = f"snapshots/{snapshot}"
        elif damage == "garbage-manifests":
            for m in (repo / "manifests").iterdir():
                m.write_bytes(b"ICE\xf0\x9f\xa7\x8aCHUNK" + b"\x00" * 40)
            expected = "manifests/"
        else:
            for c in (repo / "chunks").iterdir():
                c.unlink()
            expected = "/chunks/"
        with captured_errors() as errors:
            try:
                ds = gdal.OpenEx(f'CHUNKREF:"{repo}":temp', open_options=[])
                if ds is not None:
                    ds.ReadAsArray()
                failed = False
            except RuntimeError:
                failed = True
        assert failed, damage
        assert any(expected in e for e in errors), (damage, errors)


@pytest.fixture(scope="module")
def s3(written, tmp_path_factory):
    """moto's S3 server holding the icechunk 2.0 repositories."""
    out, manifest = written
    server = MotoServer(REPO_ROOT / "build" / "moto-venv", tmp_path_factory.mktemp("moto") / "log")
    try:
        server.make_bucket(BUCKET)
        for spec in ("1", "2"):
            path = Path(manifest[f"icechunk2-spec{spec}-native"]["path"])
            server.upload_tree(BUCKET, path.parent)
        yield server
    finally:
        server.close()


@pytest.mark.parametrize("spec", ["1", "2"])
@pytest.mark.parametrize("spelling", ["/vsis3/{b}/{r}", "s3://{b}/{r}"])
def test_repository_in_object_storage_reads_like_local(written, s3, spec, spelling):
    _, manifest = written
    entry = manifest[f"icechunk2-spec{spec}-native"]
    where = spelling.format(b=BUCKET, r=Path(entry["path"]).name)
    with config(s3_options(s3, signed=True)):
        if where.startswith("/vsis3/"):
            ds = gdal.Open(where)
            assert ds is not None and ds.GetDriver().ShortName == "ChunkRef", where
        for label in ("main", "tag-v1", "dev"):
            version = entry["versions"][label]
            ds = open_chunkref(f'CHUNKREF:"{where}":grp/cube', version["options"])
            expected = np.load(version["arrays"]["grp/cube"])
            for b in range(expected.shape[0]):
                assert_band_matches(ds.GetRasterBand(b + 1), expected[b], f"{where} {label} {b}")
