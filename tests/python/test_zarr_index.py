"""``chunkref index STORE.zarr``: indexes of existing Zarr v2 and v3 stores.

Stores are written by GDAL's Zarr driver (oracle: GDAL reading the store:
pixels, geotransform, CRS, nodata) and by zarr-python 3 in its venv
(oracle: the numpy array written, with the regions blanked to the fill
value so their chunks, or inner chunks of a shard, are not stored).  GDAL
3.6 cannot read sharded arrays, so the numpy array is their oracle too.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from osgeo import gdal, osr

import kerchunk_builders as kb
from conftest import run_chunkref
from raster_checks import assert_matches, failure_text, native_levels, open_chunkref
from test_tables import run_python
from venvs import kerchunk_python

# --------------------------------------------------------------------------
# Writing stores with zarr-python 3
# --------------------------------------------------------------------------

#: Writes the store a JSON spec (argv[1]) describes; see :func:`write_zarr3`.
WRITER = r"""
import json, sys
import numcodecs, numpy as np, zarr
from zarr.codecs import (BloscCodec, BytesCodec, Crc32cCodec, GzipCodec, ShardingCodec,
                         ZstdCodec)

spec = json.load(open(sys.argv[1]))
V3 = {"none": [], "gzip": [GzipCodec(level=5)], "zstd": [ZstdCodec(level=3)],
      "blosc": [BloscCodec(cname="lz4", clevel=5, shuffle="shuffle")],
      "zstd+crc32c": [ZstdCodec(level=1), Crc32cCodec()]}
V2 = {"none": None, "gzip": numcodecs.GZip(5), "zstd": numcodecs.Zstd(3),
      "blosc": numcodecs.Blosc("lz4", 5, numcodecs.Blosc.SHUFFLE)}
fmt = spec["zarr_format"]
if spec["arrays"][0]["path"]:
    create = zarr.open_group(spec["store"], mode="w", zarr_format=fmt).create_array
else:  # the store is one array
    create = lambda _, **kw: zarr.create_array(spec["store"], zarr_format=fmt, **kw)
for a in spec["arrays"]:
    data = np.load(a["npy"])
    fill = float(a["fill"]) if isinstance(a["fill"], str) else a["fill"]
    kw = {"chunks": tuple(a["chunks"])}
    if fmt == 2:
        kw["compressors"] = V2[a["codec"]]
        kw["chunk_key_encoding"] = {"name": "v2", "separator": a["separator"]}
    else:
        kw["chunk_key_encoding"] = {"name": a["encoding"], "separator": a["separator"]}
        if a.get("index_location"):
            kw["chunks"] = tuple(a["shards"])
            kw["compressors"] = None
            kw["serializer"] = ShardingCodec(
                chunk_shape=tuple(a["chunks"]), codecs=[BytesCodec(), *V3[a["codec"]]],
                index_location=a["index_location"])
        else:
            kw["compressors"] = V3[a["codec"]]
            if a.get("shards"):
                kw["shards"] = tuple(a["shards"])
    array = create(a["path"], shape=data.shape, dtype=data.dtype,
                              fill_value=fill, **kw)
    array[...] = data
    for region in a["blank"]:
        array[tuple(slice(*r) for r in region)] = fill
if spec["consolidate"]:
    zarr.consolidate_metadata(spec["store"])
"""


class Spec(dict):
    """One array for :func:`write_zarr3` (a dict, so it goes to JSON)."""

    def __init__(self, path, data, chunks, *, codec="gzip", fill=0, separator=None,
                 encoding="default", shards=None, index_location=None, blank=()):
        super().__init__(path=path, chunks=list(chunks), codec=codec, fill=fill,
                         separator=separator, encoding=encoding, shards=shards,
                         index_location=index_location, blank=[list(map(list, r)) for r in blank])
        self.data = data

    def expected(self) -> np.ndarray:
        """The array zarr-python holds: the data, blanked regions filled."""
        out = self.data.copy()
        fill = float(self["fill"]) if isinstance(self["fill"], str) else self["fill"]
        for region in self["blank"]:
            out[tuple(slice(*r) for r in region)] = fill
        return out


def write_zarr3(store: Path, zarr_format: int, arrays: list[Spec], consolidate=False) -> Path:
    """Write ``arrays`` with zarr-python 3 into a new store (v2 or v3)."""
    for i, spec in enumerate(arrays):
        spec["npy"] = str(store.parent / f"{store.name}-{i}.npy")
        np.save(spec["npy"], spec.data)
        if spec["separator"] is None:
            spec["separator"] = "." if zarr_format == 2 or spec["encoding"] == "v2" else "/"
    config = store.parent / f"{store.name}-spec.json"
    config.write_text(json.dumps(
        {"store": str(store), "zarr_format": zarr_format, "arrays": arrays,
         "consolidate": consolidate}))
    run_python(kerchunk_python(), WRITER, config)
    return store


def index_store(binary: Path, store: Path, out: Path, *extra) -> Path:
    """``chunkref index [extra] store -o out``; it must succeed."""
    done = run_chunkref(binary, "index", *extra, store, "-o", out)
    assert done.returncode == 0, done.stderr
    return out


def check_arrays(index: Path, arrays: list[Spec]) -> None:
    """Every array of the index holds what zarr-python wrote."""
    for spec in arrays:
        ds = open_chunkref(f'CHUNKREF:"{index}":{spec["path"]}')
        inner = spec["chunks"]
        assert_matches(ds, [spec.expected()], blocks=[(inner[-1], inner[-2])])


# --------------------------------------------------------------------------
# zarr-python 3 stores: v2, v3, v3 sharded
# --------------------------------------------------------------------------

#: Blanked regions: chunks (and inner chunks, shards) left unwritten.
HOLES = [[(0, 20), (0, 30)], [(40, 50), (60, 75)]]

CASES = {
    "v2-dot-gzip-u2": (2, lambda: [
        Spec("a", kb.sample_pixels("<u2", (50, 75)), (16, 16), fill=7, blank=HOLES)]),
    "v2-slash-zstd-3d-f4-nan-fill": (2, lambda: [
        Spec("grp/sub/b", kb.sample_pixels("<f4", (3, 50, 75)), (2, 16, 32), codec="zstd",
             separator="/", fill="NaN", blank=[[(0, 2), (0, 16), (0, 32)]])]),
    "v2-blosc-i4-groups-consolidated": (2, lambda: [
        Spec("g1/x", kb.sample_pixels("<i4", (40, 30)), (10, 10), codec="blosc", fill=-1),
        Spec("g2/y", kb.sample_pixels("|u1", (40, 30)), (40, 7), codec="none")]),
    "v2-big-endian-i4-and-u8": (2, lambda: [
        Spec("be", kb.sample_pixels(">i4", (50, 75)), (16, 16), fill=-3, blank=HOLES),
        Spec("u8", kb.sample_pixels("<u8", (2, 50, 75)), (1, 25, 25), codec="zstd")]),
    "v3-default-slash-gzip-i2": (3, lambda: [
        Spec("a", kb.sample_pixels("<i2", (50, 75)), (16, 16), fill=-9999, blank=HOLES)]),
    "v3-default-dot-blosc-f8": (3, lambda: [
        Spec("grp/a", kb.sample_pixels("<f8", (50, 75)), (16, 32), codec="blosc",
             separator=".", fill="NaN", blank=HOLES)]),
    "v3-v2-encoding-zstd-crc32c-3d": (3, lambda: [
        Spec("a", kb.sample_pixels("<u4", (4, 50, 75)), (3, 16, 16), codec="zstd+crc32c",
             encoding="v2", fill=3, blank=[[(0, 4), (20, 40), (0, 75)]])]),
    "v3-sharded-gzip-u2": (3, lambda: [
        Spec("a", kb.sample_pixels("<u2", (50, 75)), (10, 15), shards=(20, 30), fill=7,
             blank=HOLES)]),
    "v3-sharded-3d-f4-zstd-crc32c-dot": (3, lambda: [
        Spec("grp/s", kb.sample_pixels("<f4", (3, 50, 75)), (1, 10, 25), codec="zstd+crc32c",
             shards=(3, 20, 50), separator=".", fill="NaN", blank=[[(1, 2), (0, 50), (0, 75)]])]),
    "v3-sharded-index-at-start-blosc-i8": (3, lambda: [
        Spec("a", kb.sample_pixels("<i8", (50, 75)), (10, 10), codec="blosc",
             shards=(20, 20), index_location="start", fill=-5, blank=HOLES)]),
    "v3-sharded-v2-encoding-and-plain-consolidated": (3, lambda: [
        Spec("s", kb.sample_pixels("|i1", (50, 75)), (5, 25), shards=(10, 75), encoding="v2",
             fill=0, blank=HOLES),
        Spec("p", kb.sample_pixels("<u2", (50, 75)), (32, 32), codec="none")]),
}


@pytest.mark.parametrize("case", CASES)
def test_zarr_python_store(tmp_path, chunkref_bin, case):
    zarr_format, arrays = CASES[case]
    arrays = arrays()
    store = write_zarr3(tmp_path / "s.zarr", zarr_format, arrays,
                        consolidate="consolidated" in case)
    check_arrays(index_store(chunkref_bin, store, tmp_path / "index.json"), arrays)


def test_sharded_index_references_inner_chunks(tmp_path, chunkref_bin):
    """One reference per stored inner chunk, none for empty ones or missing
    shards; the metadata describes the inner chunks."""
    spec = Spec("a", kb.sample_pixels("<u2", (50, 75)), (10, 15), shards=(20, 30), fill=7,
                blank=HOLES)
    store = write_zarr3(tmp_path / "s.zarr", 3, [spec], consolidate=True)
    refs = json.loads(index_store(chunkref_bin, store, tmp_path / "i.json").read_text())["refs"]
    meta = json.loads(refs["a/zarr.json"])
    assert meta["chunk_grid"]["configuration"]["chunk_shape"] == [10, 15]
    assert [c["name"] for c in meta["codecs"]] == ["bytes", "gzip"]
    assert "consolidated_metadata" not in json.loads(refs["zarr.json"])
    chunks = {k: v for k, v in refs.items() if k.startswith("a/c/")}
    expected = spec.expected()
    stored = {f"a/c/{i}/{j}" for i in range(5) for j in range(5)
              if not (expected[i * 10:(i + 1) * 10, j * 15:(j + 1) * 15] == 7).all()}
    assert set(chunks) == stored
    for key, (url, offset, length) in chunks.items():
        i, j = map(int, key.split("/")[2:])
        assert url == str(store / f"a/c/{i // 2}/{j // 2}")
        assert offset + length <= (store / f"a/c/{i // 2}/{j // 2}").stat().st_size


@pytest.mark.parametrize("form", ["parquet", "fgb"])
def test_table_index_matches(tmp_path, chunkref_bin, form):
    """The index written as a Parquet or FlatGeobuf reference table."""
    sharded = CASES["v3-sharded-3d-f4-zstd-crc32c-dot"][1]()
    store = write_zarr3(tmp_path / "s.zarr", 3, sharded)
    check_arrays(index_store(chunkref_bin, store, tmp_path / f"index.{form}"), sharded)
    plain = CASES["v2-dot-gzip-u2"][1]()
    store = write_zarr3(tmp_path / "t.zarr", 2, plain)
    check_arrays(index_store(chunkref_bin, store, tmp_path / f"index2.{form}"), plain)


def test_root_array_and_template_base(tmp_path, chunkref_bin):
    """A store that is one array opens as it; with --template-base the
    index sits next to the store and names it relatively."""
    data = kb.sample_pixels("<i2", (40, 50))
    spec = Spec("", data, (16, 16))
    write_zarr3(tmp_path / "r.zarr", 3, [spec])
    index = index_store(chunkref_bin, tmp_path / "r.zarr", tmp_path / "r.json",
                        "--template-base")
    doc = json.loads(index.read_text())
    assert doc["templates"] == {"base": ""}
    assert doc["refs"]["c/0/0"][0] == "{{base}}r.zarr/c/0/0"
    assert_matches(open_chunkref(index), [data], blocks=[(16, 16)])


# --------------------------------------------------------------------------
# GDAL-written stores
# --------------------------------------------------------------------------


@pytest.mark.parametrize("separator", [".", "/"])
@pytest.mark.parametrize("codec", ["COMPRESS=NONE", "COMPRESS=ZLIB", "COMPRESS=BLOSC"])
def test_gdal_written_v2_store(tmp_path, chunkref_bin, codec, separator):
    data = kb.sample_pixels("<i2", (75, 100))
    data[:32, :32] = -999  # one chunk equal to nodata: GDAL leaves it out
    srs = osr.SpatialReference()
    srs.ImportFromEPSG(32631)
    store = tmp_path / "g.zarr"
    gdal.Translate(str(store), kb.mem_dataset(data), format="Zarr", noData=-999,
                   outputSRS=srs, outputBounds=[500000, 4000750, 501000, 4000000],
                   creationOptions=["BLOCKSIZE=32,32", codec, f"DIM_SEPARATOR={separator}"])
    ds = open_chunkref(index_store(chunkref_bin, store, tmp_path / "g.json"))
    native = gdal.OpenEx(str(store), allowed_drivers=["Zarr"])
    assert_matches(ds, native_levels(native), blocks=[(32, 32)])
    assert ds.GetGeoTransform() == pytest.approx(native.GetGeoTransform(), abs=1e-9)
    assert ds.GetSpatialRef().IsSame(native.GetSpatialRef(),
                                     ["IGNORE_DATA_AXIS_TO_SRS_AXIS_MAPPING=YES"])
    assert ds.GetRasterBand(1).GetNoDataValue() == native.GetRasterBand(1).GetNoDataValue()


def test_gdal_written_multiband_store(tmp_path, chunkref_bin):
    """GDAL writes a 3-band raster as arrays Band1..Band3 (and X, Y)."""
    data = kb.sample_pixels("<u4", (3, 75, 100))
    store = kb.write_gdal_zarr(tmp_path / "m.zarr", data, creation_options=["COMPRESS=GZIP"])
    index = index_store(chunkref_bin, store, tmp_path / "m.json")
    for i in (1, 2, 3):
        native = gdal.Open(f'ZARR:"{store}":/Band{i}')
        assert_matches(open_chunkref(f'CHUNKREF:"{index}":Band{i}'), native_levels(native))


def test_gdal_v3_draft_store_reads_as_gdal(tmp_path, chunkref_bin):
    """GDAL 3.6 writes FORMAT=ZARR_V3 in the v3 draft layout, indexed as
    the v2 store it describes (test_zarr_draft.py has the other cases)."""
    store = kb.write_gdal_zarr(tmp_path / "d.zarr", kb.sample_pixels("|u1", (40, 40)),
                               creation_options=["FORMAT=ZARR_V3"])
    index = index_store(chunkref_bin, store, tmp_path / "d.json")
    native = gdal.Open(str(store))  # one array, named after the store
    assert_matches(open_chunkref(index), native_levels(native))


# --------------------------------------------------------------------------
# Odd files, corrupt shards, refusals
# --------------------------------------------------------------------------


def test_stray_and_empty_chunk_files(tmp_path, chunkref_bin):
    """A chunk key outside the grid is ignored with a warning, files that
    are no chunk key (or hidden) silently; a 0-byte chunk file is referenced
    as it is and fails to decode, as zarr-python fails on it."""
    spec = Spec("a", kb.sample_pixels("<u2", (50, 75)), (16, 16))
    store = write_zarr3(tmp_path / "s.zarr", 2, [spec])
    (store / "a/9.9").write_bytes((store / "a/0.0").read_bytes())
    (store / "a/notes.txt").write_text("not a chunk")
    (store / "a/.hidden").write_text("x")
    (store / "a/01.0").write_bytes((store / "a/1.0").read_bytes())  # zarr never reads it
    done = run_chunkref(chunkref_bin, "index", store, "-o", tmp_path / "i.json")
    assert done.returncode == 0, done.stderr
    assert "outside its chunk grid" in done.stderr and "a/9.9" in done.stderr
    refs = json.loads((tmp_path / "i.json").read_text())["refs"]
    assert not {"a/9.9", "a/notes.txt", "a/.hidden", "a/01.0"} & set(refs)
    check_arrays(tmp_path / "i.json", [spec])
    (store / "a/1.1").write_bytes(b"")
    index = index_store(chunkref_bin, store, tmp_path / "j.json")
    assert json.loads(index.read_text())["refs"]["a/1.1"] == [str(store / "a/1.1"), 0, 0]
    ds = open_chunkref(f'CHUNKREF:"{index}":a')
    assert ds.ReadAsArray(0, 0, 16, 16) is not None
    assert "a/1.1" in failure_text(ds.ReadAsArray, 16, 16, 16, 16)


def sharded_store(tmp_path) -> Path:
    spec = Spec("a", kb.sample_pixels("<u2", (40, 40)), (10, 10), shards=(20, 20))
    return write_zarr3(tmp_path / "s.zarr", 3, [spec])


@pytest.mark.parametrize("damage", ["truncated", "crc32c", "offset"])
def test_corrupt_shard_index_fails_naming_the_shard(tmp_path, chunkref_bin, damage):
    store = sharded_store(tmp_path)
    shard = store / "a/c/1/0"
    raw = bytearray(shard.read_bytes())
    if damage == "truncated":
        raw = raw[:40]
    elif damage == "crc32c":
        raw[-1] ^= 0xFF
    else:  # the last inner chunk's offset beyond the file, under a valid checksum
        raw[-20:-12] = (1 << 40).to_bytes(8, "little")
        raw[-4:] = crc32c(bytes(raw[-68:-4])).to_bytes(4, "little")
    shard.write_bytes(bytes(raw))
    done = run_chunkref(chunkref_bin, "index", store, "-o", tmp_path / "i.json")
    assert done.returncode != 0
    assert str(shard) in done.stderr, done.stderr
    reason = {"truncated": "shorter than its index", "crc32c": "crc32c mismatch",
              "offset": "outside the shard file"}[damage]
    assert reason in done.stderr, done.stderr
    assert not (tmp_path / "i.json").exists()


def crc32c(data: bytes) -> int:
    """CRC-32C (Castagnoli), bit by bit."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def test_directory_that_is_not_a_store(tmp_path, chunkref_bin):
    (tmp_path / "d").mkdir()
    (tmp_path / "d/readme.txt").write_text("hello")
    done = run_chunkref(chunkref_bin, "index", tmp_path / "d", "-o", tmp_path / "i.json")
    assert done.returncode != 0
    assert "not a Zarr store" in done.stderr, done.stderr


def test_several_stores(tmp_path, chunkref_bin):
    """Several stores go to OUT_DIR/ one index each, not into one file."""
    specs = [Spec("a", kb.sample_pixels("<u2", (20, 20), seed=i), (10, 10)) for i in range(2)]
    stores = [write_zarr3(tmp_path / f"s{i}.zarr", 3, [specs[i]]) for i in range(2)]
    done = run_chunkref(chunkref_bin, "index", *stores, "-o", tmp_path / "one.json")
    assert done.returncode != 0 and "Zarr store" in done.stderr, done.stderr
    done = run_chunkref(chunkref_bin, "index", *stores, "-o", f"{tmp_path / 'out'}/")
    assert done.returncode == 0, done.stderr
    for i, store in enumerate(stores):
        check_arrays(tmp_path / "out" / f"{store.name}.tile_index.json", [specs[i]])
