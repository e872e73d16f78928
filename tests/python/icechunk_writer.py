"""Writes Icechunk repositories with icechunk-python (run in a venv by
tests/python/test_icechunk.py) and what the writer's own stack reads back.

Usage: python icechunk_writer.py OUT SPEC [--virtualizarr]

Every repository goes under OUT/SPEC-NAME/; OUT/SPEC-manifest.json lists,
per repository, the versions to open (open options -> snapshot) and, per
version, each array's expected values as an .npy file read back through
zarr from a read-only icechunk session.  SPEC is the format spec version
asked of the writer ("1" or "2"; icechunk 1.x writes only spec 1).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import icechunk
import numpy as np
import zarr

OUT = Path(sys.argv[1])
SPEC = int(sys.argv[2])
WITH_VIRTUALIZARR = "--virtualizarr" in sys.argv
if WITH_VIRTUALIZARR:
    # h5py and its filter plugins before netCDF4: the other order leaves
    # hdf5plugin's filters failing in h5py ("error during user callback").
    import h5py  # noqa: F401
    import hdf5plugin  # noqa: F401
MANIFEST: dict = {}
#: The driver's open option for each way icechunk-python names a version.
OPTION = {"branch": "BRANCH", "tag": "TAG", "snapshot_id": "SNAPSHOT"}


def create(name: str, config=None, credentials=None) -> tuple[icechunk.Repository, Path]:
    path = OUT / f"spec{SPEC}-{name}"
    storage = icechunk.local_filesystem_storage(str(path))
    kwargs = {"config": config, "authorize_virtual_chunk_access": credentials}
    if icechunk.__version__.startswith("1."):
        assert SPEC == 1, "icechunk 1.x writes format spec 1 only"
    else:
        kwargs["spec_version"] = SPEC
    return icechunk.Repository.create(storage, **kwargs), path


def record(repo: icechunk.Repository, path: Path, versions: dict[str, dict]) -> None:
    """Reads every array of each version back with zarr: the expectation."""
    entry = {"path": str(path), "versions": {}}
    for label, how in versions.items():
        session = repo.readonly_session(**how)
        group = zarr.open_group(session.store, mode="r")
        arrays = {}
        for name, array in group.arrays():
            arrays[name] = save(path, label, name, array[...])
        for name, sub in group.groups():
            for child, array in sub.arrays():
                arrays[f"{name}/{child}"] = save(path, label, f"{name}/{child}", array[...])
        options = [f"{OPTION[k]}={v}" for k, v in how.items() if (k, v) != ("branch", "main")]
        entry["versions"][label] = {"options": options, "snapshot": session.snapshot_id,
                                    "arrays": arrays}
    MANIFEST[path.name] = entry


def save(path: Path, label: str, name: str, values: np.ndarray) -> str:
    target = path.parent / "expected" / path.name / label / f"{name.replace('/', '__')}.npy"
    target.parent.mkdir(parents=True, exist_ok=True)
    np.save(target, values)
    return str(target)


def native() -> None:
    """Native and inline chunks, nested groups, three commits, a tag and a
    branch: the versions must each read as they were committed."""
    config = icechunk.RepositoryConfig.default()
    config.inline_chunk_threshold_bytes = 64
    repo, path = create("native", config)
    s = repo.writable_session("main")
    root = zarr.group(store=s.store, overwrite=True)
    root.attrs["title"] = "native chunks"
    temp = root.create_array("temp", shape=(40, 60), chunks=(16, 32), dtype="float32",
                             fill_value=-9999.0, dimension_names=("y", "x"))
    temp[:] = np.arange(2400, dtype="float32").reshape(40, 60)
    # 2x4 uint8 chunks (8 bytes) are below the inline threshold.
    small = root.create_array("small", shape=(6, 8), chunks=(2, 4), dtype="uint8",
                              fill_value=0, compressors=None, dimension_names=("y", "x"))
    small[:] = np.arange(48, dtype="uint8").reshape(6, 8)
    cube = root.create_group("grp").create_array(
        "cube", shape=(3, 20, 24), chunks=(1, 8, 8), dtype="int16", fill_value=-1,
        dimension_names=("time", "y", "x"))
    cube[:] = (np.arange(1440, dtype="int16") - 700).reshape(3, 20, 24)
    cube[1, 8:16, 8:16] = -1  # a chunk equal to the fill value: never written
    first = s.commit("first")
    repo.create_tag("v1", first)
    repo.create_branch("dev", first)

    s = repo.writable_session("main")
    temp = zarr.open_array(s.store, path="temp", mode="r+")
    temp[0:16, 0:32] = 7
    s.commit("second")

    s = repo.writable_session("dev")
    cube = zarr.open_array(s.store, path="grp/cube", mode="r+")
    cube[2] = 5
    s.commit("on dev")

    record(repo, path, {"main": {"branch": "main"}, "tag-v1": {"tag": "v1"},
                        "dev": {"branch": "dev"}, "first": {"snapshot_id": first}})


def virtual() -> None:
    """Virtual references into a local file of raw little-endian chunks."""
    data = OUT / f"spec{SPEC}-raw.bin"
    values = (np.arange(24 * 30, dtype="<u2") * 3).reshape(24, 30)
    offsets = {}
    with open(data, "wb") as f:
        f.write(b"HEADER--")
        for i in range(2):
            for j in range(3):
                offsets[(i, j)] = f.tell()
                f.write(np.ascontiguousarray(values[i * 12:(i + 1) * 12, j * 10:(j + 1) * 10]).tobytes())
    prefix = f"file://{OUT}/"
    credentials = icechunk.containers_credentials({prefix: None})
    repo, path = create("virtual", vds_config(prefix), credentials)
    s = repo.writable_session("main")
    root = zarr.group(store=s.store, overwrite=True)
    root.create_array("raw", shape=(24, 30), chunks=(12, 10), dtype="<u2", fill_value=0,
                      compressors=None, dimension_names=("y", "x"))
    for (i, j), offset in offsets.items():
        s.store.set_virtual_ref(f"raw/c/{i}/{j}", f"file://{data}", offset=offset, length=240)
    s.commit("virtual")
    record(repo, path, {"main": {"branch": "main"}})


def virtualizarr_stores() -> None:
    """VirtualiZarr over a NetCDF4 file: to_icechunk, to_kerchunk JSON and
    Parquet (all three must read as GDAL's netCDF driver reads the file)."""
    import netCDF4
    from obspec_utils.registry import ObjectStoreRegistry
    from obstore.store import LocalStore
    from virtualizarr import open_virtual_dataset
    from virtualizarr.parsers import HDFParser

    src = OUT / "sst.nc"
    with netCDF4.Dataset(src, "w") as nc:
        nc.createDimension("time", 3)
        nc.createDimension("lat", 20)
        nc.createDimension("lon", 30)
        t = nc.createVariable("time", "f8", ("time",))
        t.units = "days since 2000-01-01"
        t[:] = [0, 1, 2]
        lat = nc.createVariable("lat", "f4", ("lat",))
        lat.units = "degrees_north"
        lat[:] = np.linspace(59.5, 40.5, 20)
        lon = nc.createVariable("lon", "f4", ("lon",))
        lon.units = "degrees_east"
        lon[:] = np.linspace(0.5, 29.5, 30)
        v = nc.createVariable("sst", "f4", ("time", "lat", "lon"), zlib=True, shuffle=True,
                              chunksizes=(1, 10, 15), fill_value=-999.0)
        v.units = "K"
        v[:] = np.arange(1800, dtype="f4").reshape(3, 20, 30) / 4
        v[0, 0, 0] = -999.0
    registry = ObjectStoreRegistry({"file://": LocalStore()})
    vds = open_virtual_dataset(f"file://{src}", registry=registry, parser=HDFParser())
    vds.vz.to_kerchunk(str(OUT / "vz-refs.json"), format="json")
    vds.vz.to_kerchunk(str(OUT / "vz-refs.parq"), format="parquet", record_size=4)
    prefix = f"file://{OUT}/"
    repo, path = create("virtualizarr", vds_config(prefix),
                        icechunk.containers_credentials({prefix: None}))
    s = repo.writable_session("main")
    vds.vz.to_icechunk(s.store)
    s.commit("virtualizarr")
    MANIFEST["virtualizarr"] = {"source": str(src), "stores": [
        str(path), str(OUT / "vz-refs.json"), str(OUT / "vz-refs.parq")]}
    hdf5_filters(registry, prefix)


def hdf5_filters(registry, prefix: str) -> None:
    """Every HDF5 filter VirtualiZarr turns into a codec it can write (zstd
    and blosc through hdf5plugin, fletcher32 + shuffle + deflate); h5py's
    reading of each dataset is the expectation.  (It cannot write LZF, LZ4
    or bzip2 datasets: their imagecodecs ids are unknown to zarr 3.)"""
    import h5py
    import hdf5plugin
    from virtualizarr import open_virtual_dataset
    from virtualizarr.parsers import HDFParser

    src = OUT / "filters.h5"
    data = (np.arange(40 * 50, dtype="f4").reshape(40, 50) / 7).astype("f4")
    with h5py.File(src, "w") as f:
        f.create_dataset("zstd", data=data, chunks=(16, 20), **hdf5plugin.Zstd())
        f.create_dataset("blosc", data=data, chunks=(16, 20), **hdf5plugin.Blosc())
        f.create_dataset("checked", data=data, chunks=(16, 20), fletcher32=True, shuffle=True,
                         compression="gzip")
    expected = {}
    with h5py.File(src) as f:
        for name in f:
            expected[name] = save(OUT / "filters", "h5py", name, f[name][...])
    vds = open_virtual_dataset(f"file://{src}", registry=registry, parser=HDFParser())
    vds.vz.to_kerchunk(str(OUT / "filters.json"), format="json")
    repo, path = create("filters", vds_config(prefix), icechunk.containers_credentials({prefix: None}))
    s = repo.writable_session("main")
    vds.vz.to_icechunk(s.store)
    s.commit("filters")
    MANIFEST["filters"] = {"stores": [str(OUT / "filters.json"), str(path)], "arrays": expected}


def vds_config(prefix: str):
    """A repository configuration with one local virtual chunk container."""
    config = icechunk.RepositoryConfig.default()
    config.set_virtual_chunk_container(
        icechunk.VirtualChunkContainer(prefix, icechunk.local_filesystem_store(str(OUT))))
    return config


OUT.mkdir(parents=True, exist_ok=True)
native()
virtual()
if WITH_VIRTUALIZARR:
    virtualizarr_stores()
(OUT / f"spec{SPEC}-manifest.json").write_text(json.dumps(MANIFEST, indent=1))
