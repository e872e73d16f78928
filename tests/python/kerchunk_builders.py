"""Builders for the end-to-end tests: sources written by GDAL or zarr-python,
and Kerchunk JSON reference indexes written over them.

The pipeline has three stages:

1. *Write a source* with a trusted writer: GDAL's Zarr driver
   (:func:`write_gdal_zarr`), zarr-python 2.x (:func:`write_zarr_python`) or
   GDAL's GTiff driver (:func:`write_tiled_gtiff`).
2. *Collect entries*: a mapping from Zarr key to what the key holds.  A value
   is a ``dict`` (a JSON metadata document), ``bytes`` (chunk bytes to inline)
   or a :class:`ChunkSource` (chunk bytes living in a file, possibly a byte
   range of it).  See :func:`zarr_store_entries`,
   :func:`gtiff_multiscale_entries` and :func:`to_zarr_v3`.  Tests may edit
   the mapping (drop a chunk, point one at a missing file, ...) before
   rendering.
3. *Render* the entries as a Kerchunk index with :func:`write_index`, choosing
   the reference form, URL style and version through :class:`RefStyle`, and
   optionally replacing an array's chunk references by ``gen`` entries with
   :func:`move_chunks_to_gen`.
"""

from __future__ import annotations

import base64
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping, NamedTuple, Sequence, Union

import numcodecs
import numpy as np
import zarr
from osgeo import gdal, gdal_array

# --------------------------------------------------------------------------
# Data types
# --------------------------------------------------------------------------

#: Whether this GDAL has an Int8 data type (3.7 and later); older ones
#: serve int8 as Byte bands marked PIXELTYPE=SIGNEDBYTE.
HAS_INT8 = hasattr(gdal, "GDT_Int8")

#: Zarr v2 type codes (without byte order) covered by the contract, with the
#: GDAL data type each must map to on this GDAL (i1: Int8, or Byte +
#: PIXELTYPE=SIGNEDBYTE before GDAL 3.7).
GDAL_TYPE_BY_CODE = {
    "u1": gdal.GDT_Byte,
    "i1": gdal.GDT_Int8 if HAS_INT8 else gdal.GDT_Byte,
    "u2": gdal.GDT_UInt16,
    "i2": gdal.GDT_Int16,
    "u4": gdal.GDT_UInt32,
    "i4": gdal.GDT_Int32,
    "u8": gdal.GDT_UInt64,
    "i8": gdal.GDT_Int64,
    "f4": gdal.GDT_Float32,
    "f8": gdal.GDT_Float64,
}

#: Zarr v3 ``data_type`` name for each v2 type code.
V3_DATA_TYPE_BY_CODE = {
    "u1": "uint8",
    "i1": "int8",
    "u2": "uint16",
    "i2": "int16",
    "u4": "uint32",
    "i4": "int32",
    "u8": "uint64",
    "i8": "int64",
    "f4": "float32",
    "f8": "float64",
}


def all_dtypes() -> list[str]:
    """Every numpy type string of the contract in every byte order that
    applies: ``|u1``, ``|i1`` and ``<``/``>`` for the wider types."""
    out = []
    for code in GDAL_TYPE_BY_CODE:
        if code[1] == "1":
            out.append("|" + code)
        else:
            out.extend(["<" + code, ">" + code])
    return out


def gdal_type_for(dtype: Any) -> int:
    """The GDAL data type a band of numpy dtype ``dtype`` must report."""
    dt = np.dtype(dtype)
    return GDAL_TYPE_BY_CODE[f"{dt.kind}{dt.itemsize}"]


def sample_pixels(dtype: Any, shape: Sequence[int], seed: int = 0) -> np.ndarray:
    """Deterministic test pixels of ``dtype`` and ``shape``.

    The values are a gradient with a little noise (so compressors actually
    compress instead of storing blocks raw), differ between leading-axis
    slices, and include the type's extremes (and NaN/inf/-0.0 for floats) so
    that sign, width and byte-order mistakes show up.
    """
    dt = np.dtype(dtype)
    rng = np.random.default_rng(seed)
    shape = tuple(shape)
    grid = np.indices(shape).astype(np.float64)
    weights = [97.0 * (i + 1) for i in range(len(shape) - 2)] + [3.0, 1.0]
    ramp = sum(w * g for w, g in zip(weights, grid)) + rng.integers(0, 4, shape)
    flat_index = np.arange(int(np.prod(shape))).reshape(shape)
    if dt.kind == "f":
        values = (ramp * 0.37 - 20.0).astype(dt.newbyteorder("="))
        specials = [np.nan, np.inf, -np.inf, -0.0, np.finfo(dt).max, np.finfo(dt).tiny]
    else:
        info = np.iinfo(dt)
        span = min(int(info.max) - int(info.min) + 1, 1 << 16)
        values = (ramp.astype(np.int64) % span + max(int(info.min), -(span // 2)))
        values = values.astype(dt.newbyteorder("="))
        specials = [info.min, info.max, info.max - 1, info.min + 1]
    for n, special in enumerate(specials):
        values[flat_index == (n * 389 + 11) % flat_index.size] = special
    return values.astype(dt)


# --------------------------------------------------------------------------
# Stage 1: sources
# --------------------------------------------------------------------------


def mem_dataset(array: np.ndarray) -> gdal.Dataset:
    """A GDAL MEM dataset holding ``array`` (2-D, or 3-D as bands, y, x).
    int8 is stored as the same bytes in a Byte band before GDAL 3.7, which
    has no Int8."""
    bands = array if array.ndim == 3 else array[np.newaxis]
    native = bands.astype(bands.dtype.newbyteorder("="))
    if native.dtype == np.int8 and not HAS_INT8:
        native = native.view(np.uint8)
    ds = gdal.GetDriverByName("MEM").Create(
        "", native.shape[2], native.shape[1], native.shape[0], gdal_type_for(native.dtype)
    )
    for index, band in enumerate(native):
        ds.GetRasterBand(index + 1).WriteArray(band)
    return ds


def write_gdal_zarr(
    path: Path,
    array: np.ndarray,
    *,
    chunks: tuple[int, int] = (32, 32),
    creation_options: Sequence[str] = (),
) -> Path:
    """Write ``array`` as a Zarr v2 store with GDAL's Zarr driver.

    GDAL writes one 2-D array per band (``Band1``, ``Band2``, ... when there
    are several bands, else an array named after the store).  ``chunks`` is
    (y, x); further options such as ``COMPRESS=ZLIB`` or ``DIM_SEPARATOR=/``
    go in ``creation_options``.
    """
    options = ["BLOCKSIZE=%d,%d" % chunks, *creation_options]
    gdal.Translate(str(path), mem_dataset(array), format="Zarr", creationOptions=options)
    return path


#: zarr-python 3 (Debian 13's python3-zarr; Debian 12 has 2.13) writes v2
#: stores through another API: :func:`write_zarr_python` uses the one it has.
ZARR_PYTHON_3 = int(zarr.__version__.split(".")[0]) >= 3


@dataclass
class ArraySpec:
    """One array for :func:`write_zarr_python`: its data and Zarr settings."""

    data: np.ndarray
    chunks: tuple[int, ...]
    compressor: Any = None
    filters: Any = None
    fill_value: Any = 0
    dimension_separator: str = "."
    attrs: dict = field(default_factory=dict)


def write_zarr_python(
    store: Path, arrays: Mapping[str, ArraySpec], group_attrs: Mapping[str, Any] | None = None
) -> Path:
    """Write a Zarr v2 directory store with zarr-python.

    ``arrays`` maps array paths (``"a"``, ``"grp/elev"``, ``"0/data"``) to
    :class:`ArraySpec`; intermediate groups are created.  Every chunk is
    written, even when it equals the fill value.
    """
    if ZARR_PYTHON_3:
        root = zarr.open_group(str(store), mode="w", zarr_format=2)
    else:
        root = zarr.open_group(str(store), mode="w")
    root.attrs.update(group_attrs or {})
    for name, spec in arrays.items():
        if ZARR_PYTHON_3:
            # zarr-python 3 (Debian 13 and later): create_array, whose v2
            # arrays take one compressor as `compressors` and the separator
            # as a chunk key encoding.
            array = root.create_array(
                name,
                shape=spec.data.shape,
                dtype=spec.data.dtype,
                chunks=spec.chunks,
                compressors=spec.compressor,
                filters=spec.filters,
                fill_value=spec.fill_value,
                chunk_key_encoding={"name": "v2", "separator": spec.dimension_separator},
                config={"write_empty_chunks": True},
            )
            array[...] = spec.data
        else:
            array = root.create_dataset(
                name,
                data=spec.data,
                dtype=spec.data.dtype,
                chunks=spec.chunks,
                compressor=spec.compressor,
                filters=spec.filters,
                fill_value=spec.fill_value,
                dimension_separator=spec.dimension_separator,
                write_empty_chunks=True,
            )
        array.attrs.update(spec.attrs)
    return store


def write_tiled_gtiff(
    path: Path,
    array: np.ndarray,
    *,
    tile: int = 32,
    overview_factors: Sequence[int] = (2, 4),
    overview_tile: int = 64,
    interleave: str = "BAND",
    endianness: str = "LITTLE",
    compress: str = "NONE",
) -> Path:
    """Write ``array`` (bands, y, x) as a tiled GTiff (uncompressed, or
    DEFLATE without predictor) with internal overviews (NEAREST).  GDAL
    only allows overview tiles of 64 or more, hence ``overview_tile``."""
    options = [
        "TILED=YES",
        f"BLOCKXSIZE={tile}",
        f"BLOCKYSIZE={tile}",
        f"INTERLEAVE={interleave}",
        f"ENDIANNESS={endianness}",
        f"COMPRESS={compress}",
    ]
    ds = gdal.GetDriverByName("GTiff").CreateCopy(str(path), mem_dataset(array), options=options)
    previous = gdal.GetConfigOption("GDAL_TIFF_OVR_BLOCKSIZE")
    gdal.SetConfigOption("GDAL_TIFF_OVR_BLOCKSIZE", str(overview_tile))
    try:
        ds.BuildOverviews("NEAREST", list(overview_factors))
    finally:
        gdal.SetConfigOption("GDAL_TIFF_OVR_BLOCKSIZE", previous)
    ds = None
    return path


# --------------------------------------------------------------------------
# Stage 2: entries
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class ChunkSource:
    """Chunk bytes stored in a file: the whole file (``length is None`` and
    ``offset == 0``) or ``length`` bytes from ``offset``.  Nothing is checked
    on construction, so tests can describe missing files or bad ranges."""

    path: Path
    offset: int = 0
    length: int | None = None

    @property
    def whole_file(self) -> bool:
        """True when the source is the entire file."""
        return self.offset == 0 and self.length is None

    def size(self) -> int:
        """Number of bytes the source covers."""
        return self.length if self.length is not None else self.path.stat().st_size - self.offset

    def read(self) -> bytes:
        """The bytes the source covers."""
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            return f.read(self.size())


Entry = Union[dict, bytes, ChunkSource]
Entries = dict  # str -> Entry, insertion-ordered

#: Names of Zarr metadata documents (v2 and v3).
METADATA_NAMES = (".zgroup", ".zattrs", ".zarray", "zarr.json")


def is_metadata_key(key: str) -> bool:
    """True for keys of metadata documents, False for chunk keys."""
    return key.rsplit("/", 1)[-1] in METADATA_NAMES


def zarr_store_entries(store: Path) -> Entries:
    """Every key of a Zarr v2 directory store: metadata documents parsed as
    JSON, every other file as a whole-file :class:`ChunkSource`.  The
    consolidated ``.zmetadata`` is left out, as Kerchunk does."""
    store = Path(store)
    files = [p for p in store.rglob("*") if p.is_file() and p.name != ".zmetadata"]
    entries: Entries = {}
    for path in files:
        key = path.relative_to(store).as_posix()
        entries[key] = json.loads(path.read_text()) if is_metadata_key(key) else ChunkSource(path)
    return sort_entries(entries)


def sort_entries(entries: Mapping[str, Entry]) -> Entries:
    """Order entries as Kerchunk writes them: metadata documents first,
    parents before children, ``.zgroup``/``.zarray`` before ``.zattrs``
    (so a v0 index starts with ``.zgroup``), then chunk keys."""

    def order(key: str) -> tuple:
        node, _, name = key.rpartition("/")
        if not is_metadata_key(key):
            return (1, key)
        return (0, node.count("/") + bool(node), node, name == ".zattrs")

    return dict(sorted(entries.items(), key=lambda kv: order(kv[0])))


def array_paths(entries: Mapping[str, Entry]) -> list[str]:
    """Paths of the arrays described by ``entries`` (v2 or v3), in order."""
    out = []
    for key, value in entries.items():
        name = key.rsplit("/", 1)[-1]
        if name == ".zarray" or (name == "zarr.json" and value.get("node_type") == "array"):
            out.append(key[: -len(name)].rstrip("/"))
    return out


def _prefix(path: str) -> str:
    return f"{path}/" if path else ""


def v2_chunk_keys(entries: Mapping[str, Entry], array: str) -> dict[tuple[int, ...], str]:
    """Map each chunk index (a tuple) of v2 array ``array`` to its key."""
    meta = entries[_prefix(array) + ".zarray"]
    sep = meta.get("dimension_separator", ".")
    ndim = len(meta["shape"])
    out = {}
    for key in entries:
        if not key.startswith(_prefix(array)) or is_metadata_key(key):
            continue
        parts = key[len(_prefix(array)) :].split(sep)
        if len(parts) == ndim and all(p.isdigit() for p in parts):
            out[tuple(int(p) for p in parts)] = key
    return out


def chunk_grid(shape: Sequence[int], chunks: Sequence[int]) -> tuple[int, ...]:
    """Number of chunks along each axis."""
    return tuple(math.ceil(s / c) for s, c in zip(shape, chunks))


def multiscales_attrs(assets: Sequence[str]) -> dict:
    """Root ``.zattrs`` of an osml-imagery-io style pyramid whose levels are
    the groups ``assets`` (full resolution first); each level is derived
    from the previous one at half resolution."""
    layout = [{"asset": assets[0], "transform": {"scale": [1, 1], "translation": [0, 0]}}]
    for previous, asset in zip(assets, assets[1:]):
        layout.append(
            {
                "asset": asset,
                "derived_from": previous,
                "transform": {"scale": [2, 2], "translation": [0, 0]},
            }
        )
    return {"multiscales": {"layout": layout}}


def _tiff_byte_order(path: Path) -> str:
    with open(path, "rb") as f:
        magic = f.read(2)
    return {b"II": "<", b"MM": ">"}[magic]


def dataset_levels(ds: gdal.Dataset) -> list[list[gdal.Band]]:
    """The bands of every level of ``ds``: level 0, then each overview."""
    bands = [ds.GetRasterBand(i + 1) for i in range(ds.RasterCount)]
    levels = [bands]
    for k in range(bands[0].GetOverviewCount()):
        levels.append([b.GetOverview(k) for b in bands])
    return levels


def gtiff_multiscale_entries(tif: Path) -> Entries:
    """Entries of an osml-imagery-io style pyramid over a tiled GTiff: one
    level per TIFF level, array ``N/data`` with axes (bands, y, x), tiles
    referenced by the offsets/sizes GDAL reports in its TIFF metadata
    domain.  Uncompressed tiles are raw chunks (``compressor`` and
    ``filters`` null); DEFLATE tiles (no predictor) are zlib streams, so
    they get the ``zlib`` compressor.

    Only planar (INTERLEAVE=BAND) or single-band files are accepted: a
    pixel-interleaved tile stores (y, x, band), which a (bands, y, x) chunk
    without a format filter cannot describe.
    """
    ds = gdal.Open(str(tif))
    structure = ds.GetMetadata("IMAGE_STRUCTURE")
    compression = structure.get("COMPRESSION", "NONE")
    if compression not in ("NONE", "DEFLATE") or structure.get("PREDICTOR", "1") != "1":
        raise ValueError("only uncompressed or DEFLATE (no predictor) tiles are supported")
    compressor = {"id": "zlib", "level": 6} if compression == "DEFLATE" else None
    if ds.RasterCount > 1 and structure.get("INTERLEAVE") != "BAND":
        raise ValueError("multi-band tiles must be planar (INTERLEAVE=BAND)")
    order = _tiff_byte_order(tif)
    levels = dataset_levels(ds)
    assets = [str(level) for level in range(len(levels))]
    entries: Entries = {".zgroup": {"zarr_format": 2}, ".zattrs": multiscales_attrs(assets)}
    for level, bands in enumerate(levels):
        first = bands[0]
        tw, th = first.GetBlockSize()
        dtype = np.dtype(gdal_array.GDALTypeCodeToNumericTypeCode(first.DataType))
        dtype = dtype.newbyteorder(order) if dtype.itemsize > 1 else dtype
        entries[f"{level}/.zgroup"] = {"zarr_format": 2}
        entries[f"{level}/.zattrs"] = {}
        entries[f"{level}/data/.zarray"] = {
            "zarr_format": 2,
            "shape": [len(bands), first.YSize, first.XSize],
            "chunks": [1, th, tw],
            "dtype": dtype.str,
            "fill_value": 0,
            "order": "C",
            "compressor": compressor,
            "filters": None,
            "dimension_separator": ".",
        }
        entries[f"{level}/data/.zattrs"] = {"_ARRAY_DIMENSIONS": ["bands", "y", "x"]}
        ny, nx = chunk_grid((first.YSize, first.XSize), (th, tw))
        for b, band in enumerate(bands):
            for ty in range(ny):
                for tx in range(nx):
                    offset = int(band.GetMetadataItem(f"BLOCK_OFFSET_{tx}_{ty}", "TIFF"))
                    size = int(band.GetMetadataItem(f"BLOCK_SIZE_{tx}_{ty}", "TIFF"))
                    assert compressor or size == tw * th * dtype.itemsize, "tile is not raw"
                    entries[f"{level}/data/{b}.{ty}.{tx}"] = ChunkSource(Path(tif), offset, size)
    return entries


_V3_SHUFFLE = {0: "noshuffle", 1: "shuffle", 2: "bitshuffle"}


def _v3_codecs(meta: dict) -> list[dict]:
    dtype = np.dtype(meta["dtype"])
    if meta.get("filters"):
        raise ValueError("v2 filters have no Zarr v3 core equivalent")
    if meta.get("order", "C") != "C":
        raise ValueError("only C order is converted")
    codecs: list[dict] = [{"name": "bytes"}]
    if dtype.itemsize > 1:
        endian = "big" if dtype.byteorder == ">" else "little"
        codecs[0]["configuration"] = {"endian": endian}
    compressor = meta.get("compressor")
    if compressor is None:
        return codecs
    cid = compressor["id"]
    if cid == "gzip":
        codecs.append({"name": "gzip", "configuration": {"level": compressor.get("level", 5)}})
    elif cid == "zstd":
        level = compressor.get("level", 0)
        codecs.append({"name": "zstd", "configuration": {"level": level, "checksum": False}})
    elif cid == "blosc":
        config = {
            "cname": compressor["cname"],
            "clevel": compressor["clevel"],
            "shuffle": _V3_SHUFFLE[compressor["shuffle"]],
            "typesize": dtype.itemsize,
            "blocksize": compressor.get("blocksize", 0),
        }
        codecs.append({"name": "blosc", "configuration": config})
    else:
        raise ValueError(f"compressor {cid!r} has no Zarr v3 core equivalent")
    return codecs


def _v3_fill_value(meta: dict) -> Any:
    fill = meta["fill_value"]
    if fill is None:
        return 0
    return fill  # numbers, or "NaN"/"Infinity"/"-Infinity": same spelling in v3


def v3_array_metadata(meta: dict, attrs: dict, separator: str) -> dict:
    """The v3 ``zarr.json`` equivalent of a v2 ``.zarray`` + ``.zattrs``."""
    dtype = np.dtype(meta["dtype"])
    attrs = dict(attrs)
    dims = attrs.pop("_ARRAY_DIMENSIONS", None)
    out = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": meta["shape"],
        "data_type": V3_DATA_TYPE_BY_CODE[f"{dtype.kind}{dtype.itemsize}"],
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": meta["chunks"]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": separator}},
        "fill_value": _v3_fill_value(meta),
        "codecs": _v3_codecs(meta),
        "attributes": attrs,
    }
    if dims:
        out["dimension_names"] = dims
    return out


def to_zarr_v3(entries: Mapping[str, Entry], separator: str = "/") -> Entries:
    """Convert v2 entries to Zarr v3: ``.zgroup``/``.zarray`` (+ ``.zattrs``)
    become ``zarr.json`` documents, and chunk key ``a/1.2`` becomes
    ``a/c/1/2`` (``separator="/"``) or ``a/c.1.2`` (``"."``).  Chunk bytes
    are reused as they are (v2 and v3 share the compressors' byte formats);
    only compressors with a v3 core codec (gzip, zstd, blosc) are allowed."""
    arrays = array_paths(entries)
    chunk_key_map = {}
    for array in arrays:
        for index, key in v2_chunk_keys(entries, array).items():
            parts = ["c", *map(str, index)]
            chunk_key_map[key] = _prefix(array) + separator.join(parts)
    out: Entries = {}
    for key, value in entries.items():
        if key in chunk_key_map:
            out[chunk_key_map[key]] = value
            continue
        node, _, name = key.rpartition("/")
        attrs = entries.get(_prefix(node) + ".zattrs", {})
        if name == ".zgroup":
            out[_prefix(node) + "zarr.json"] = {
                "zarr_format": 3,
                "node_type": "group",
                "attributes": attrs,
            }
        elif name == ".zarray":
            out[_prefix(node) + "zarr.json"] = v3_array_metadata(value, attrs, separator)
        elif name != ".zattrs":
            raise ValueError(f"cannot convert key {key!r}")
    return sort_entries(out)


def as_zarr_format(
    entries: Mapping[str, Entry], zarr_format: int, separator: str = "/"
) -> Entries:
    """``entries`` (v2) unchanged for ``zarr_format`` 2, or converted with
    :func:`to_zarr_v3` (chunk key separator ``separator``) for 3."""
    if zarr_format == 2:
        return dict(entries)
    assert zarr_format == 3, zarr_format
    return to_zarr_v3(entries, separator)


# --------------------------------------------------------------------------
# Stage 3: rendering the index
# --------------------------------------------------------------------------

#: Reference forms for chunk entries.
#:   whole       ["url"]                 (the chunk is extracted to its own file if needed)
#:   range       ["url", offset, length] (a chunk file from 0, or a range of the source)
#:   packed      ["url", offset, length] into one shared blob, chunks at odd offsets
#:   base64      "base64:..."
#:   text        raw bytes as a JSON string when they are ASCII, else base64 (as kerchunk does)
#:   multirange  ["url", [[o, n], ...]]  contiguous pieces of the source, in order
#:   multirange_shuffled  pieces stored in reverse order in a blob, listed in order
FORMS = ("whole", "range", "packed", "base64", "text", "multirange", "multirange_shuffled")

#: URL styles: absolute path, file:// URI, path relative to the index's
#: directory, or "{{base}}" + path relative to a template root.
URL_STYLES = ("absolute", "file", "relative", "template")

#: Bytes written between chunks in blobs, so offsets are never 0 or aligned.
BLOB_PADDING = b"\xa5" * 17


@dataclass(frozen=True)
class RefStyle:
    """How :func:`write_index` renders chunk references and the document."""

    form: str = "range"
    url: str = "absolute"
    version: int = 1
    indent: int | None = None
    sort_keys: bool = False

    def __post_init__(self) -> None:
        assert self.form in FORMS, self.form
        assert self.url in URL_STYLES, self.url
        assert self.version in (0, 1), self.version


@dataclass
class UrlMaker:
    """Turns file paths into URLs of one :data:`URL_STYLES` style."""

    style: str
    index_dir: Path
    template_root: Path | None = None
    template_prefix: str = "{{base}}"

    def __call__(self, path: Path | str) -> str:
        path = Path(path)
        if self.style == "absolute":
            return path.as_posix()
        if self.style == "file":
            return path.as_uri()
        if self.style == "relative":
            return Path(os.path.relpath(path, self.index_dir)).as_posix()
        assert self.template_root is not None
        return self.template_prefix + Path(os.path.relpath(path, self.template_root)).as_posix()


class BlobWriter:
    """Appends byte strings to files in a scratch directory next to the
    index, returning where each landed."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.count = 0
        self.blob = directory / "packed.bin"

    def new_file(self, data: bytes) -> Path:
        """Write ``data`` to a file of its own; return its path."""
        self.directory.mkdir(parents=True, exist_ok=True)
        self.count += 1
        path = self.directory / f"chunk{self.count}.bin"
        path.write_bytes(data)
        return path

    def append(self, data: bytes) -> int:
        """Append padding then ``data`` to the shared blob; return the
        offset of ``data``."""
        self.directory.mkdir(parents=True, exist_ok=True)
        with open(self.blob, "ab") as f:
            f.write(BLOB_PADDING)
            offset = f.tell()
            f.write(data)
        return offset


def split_sizes(length: int) -> list[int]:
    """Split ``length`` into three non-empty, unequal parts (or one part if
    ``length`` is below 3)."""
    if length < 3:
        return [length]
    first = length // 5 + 1
    second = (length - first) // 2
    return [first, second, length - first - second]


def _as_source(entry: Entry, blobs: BlobWriter) -> ChunkSource:
    if isinstance(entry, ChunkSource):
        return entry
    return ChunkSource(blobs.new_file(entry))


def _as_bytes(entry: Entry) -> bytes:
    return entry.read() if isinstance(entry, ChunkSource) else entry


def render_ref(entry: Entry, form: str, url: UrlMaker, blobs: BlobWriter) -> Any:
    """The Kerchunk ``refs`` value for one entry in reference form ``form``."""
    if isinstance(entry, dict):
        return json.dumps(entry)
    if form == "whole":
        if isinstance(entry, ChunkSource) and entry.whole_file:
            return [url(entry.path)]
        return [url(blobs.new_file(_as_bytes(entry)))]
    if form == "range":
        source = _as_source(entry, blobs)
        return [url(source.path), source.offset, source.size()]
    if form == "packed":
        data = _as_bytes(entry)
        return [url(blobs.blob), blobs.append(data), len(data)]
    if form == "base64":
        return "base64:" + base64.b64encode(_as_bytes(entry)).decode()
    if form == "text":
        data = _as_bytes(entry)
        try:
            return data.decode("ascii")
        except UnicodeDecodeError:
            return "base64:" + base64.b64encode(data).decode()
    if form == "multirange":
        source = _as_source(entry, blobs)
        ranges, offset = [], source.offset
        for size in split_sizes(source.size()):
            ranges.append([offset, size])
            offset += size
        return [url(source.path), ranges]
    if form == "multirange_shuffled":
        data = _as_bytes(entry)
        sizes = split_sizes(len(data))
        starts = np.cumsum([0, *sizes[:-1]])
        pieces = [data[s : s + n] for s, n in zip(starts, sizes)]
        offsets = [blobs.append(piece) for piece in reversed(pieces)][::-1]
        return [url(blobs.blob), [[o, n] for o, n in zip(offsets, sizes)]]
    raise ValueError(form)


def scratch_dir(index_path: Path) -> Path:
    """Directory where :func:`write_index` puts the blobs of an index."""
    return index_path.parent / (index_path.stem + ".blobs")


def write_index(
    index_path: Path,
    entries: Mapping[str, Entry],
    style: RefStyle = RefStyle(),
    *,
    templates: Mapping[str, str] | None = None,
    template_root: Path | None = None,
    template_prefix: str = "{{base}}",
    gen: Sequence[dict] = (),
) -> Path:
    """Write ``entries`` as a Kerchunk JSON index at ``index_path``.

    Metadata documents are inlined as JSON text; chunk entries are rendered
    in ``style.form`` with URLs in ``style.url``.  With the ``template``
    URL style, URLs are ``template_prefix`` (default ``{{base}}``) + the
    path relative to ``template_root`` (default: the index's directory) and
    ``templates`` defaults to ``{"base": "<template_root>/"}``; pass another
    ``templates`` to write values that only an open-time override can fix.
    Version 0 writes the bare refs object and allows neither templates nor
    gen.
    """
    index_path = Path(index_path)
    index_dir = index_path.parent
    index_dir.mkdir(parents=True, exist_ok=True)
    template_root = Path(template_root or index_dir)
    if style.url == "template" and templates is None:
        templates = {"base": template_root.as_posix() + "/"}
    url = UrlMaker(style.url, index_dir, template_root, template_prefix)
    blobs = BlobWriter(scratch_dir(index_path))
    refs = {key: render_ref(value, style.form, url, blobs) for key, value in entries.items()}
    if style.version == 0:
        if templates or gen:
            raise ValueError("Kerchunk version 0 has neither templates nor gen")
        document: dict = refs
    else:
        document = {"version": 1}
        if templates is not None:
            document["templates"] = dict(templates)
        if gen:
            document["gen"] = list(gen)
        document["refs"] = refs
    index_path.write_text(json.dumps(document, indent=style.indent, sort_keys=style.sort_keys))
    return index_path


def move_chunks_to_gen(
    entries: Mapping[str, Entry],
    array: str,
    index_path: Path,
    *,
    mode: str = "ranges",
    url_style: str = "absolute",
) -> tuple[Entries, list[dict]]:
    """Replace the chunk references of v2 array ``array`` by one ``gen``
    entry (Kerchunk spec v1).

    ``mode="ranges"``: every chunk is copied into one blob at a fixed stride
    (so all chunks must have the same length, i.e. be uncompressed) and the
    entry computes ``offset`` with an arithmetic template such as
    ``{{ 17 + (d0 * 4 + d1) * 2065 }}`` and a constant ``length``; the
    dimensions use the ``{"start", "stop", "step"}`` form.
    ``mode="files"``: every chunk is copied to a file named after its index
    and the entry has a URL pattern only; the first dimension is given as an
    explicit list of values.

    Returns the entries without the array's chunks, and the gen list.
    URLs use ``url_style`` ("absolute", "relative" or "template"; blobs live
    in :func:`scratch_dir`).
    """
    meta = entries[_prefix(array) + ".zarray"]
    sep = meta.get("dimension_separator", ".")
    grid = chunk_grid(meta["shape"], meta["chunks"])
    keys = v2_chunk_keys(entries, array)
    assert len(keys) == int(np.prod(grid)), "gen needs every chunk present"
    names = [f"d{i}" for i in range(len(grid))]
    url = UrlMaker(url_style, index_path.parent, index_path.parent)
    directory = scratch_dir(index_path) / "gen"
    directory.mkdir(parents=True, exist_ok=True)
    key_pattern = _prefix(array) + sep.join("{{%s}}" % n for n in names)
    remaining = {k: v for k, v in entries.items() if k not in keys.values()}
    if mode == "ranges":
        data = {index: _as_bytes(entries[key]) for index, key in keys.items()}
        length = {len(d) for d in data.values()}
        assert len(length) == 1, "gen ranges mode needs equal-length chunks"
        length = length.pop()
        stride = length + len(BLOB_PADDING)
        blob = directory / "strided.bin"
        with open(blob, "wb") as f:
            for index in sorted(data):
                f.seek(len(BLOB_PADDING) + int(np.ravel_multi_index(index, grid)) * stride)
                f.write(data[index])
        linear = " + ".join(
            "%s * %d" % (n, int(np.prod(grid[i + 1 :]))) for i, n in enumerate(names)
        )
        entry = {
            "key": key_pattern,
            "url": url(blob),
            "offset": "{{ %d + (%s) * %d }}" % (len(BLOB_PADDING), linear, stride),
            "length": str(length),
            "dimensions": {n: {"start": 0, "stop": g, "step": 1} for n, g in zip(names, grid)},
        }
    elif mode == "files":
        for index, key in keys.items():
            name = "_".join(map(str, index)) + ".bin"
            (directory / name).write_bytes(_as_bytes(entries[key]))
        pattern = directory / ("_".join("{{%s}}" % n for n in names) + ".bin")
        dims: dict = {n: {"stop": g} for n, g in zip(names, grid)}
        dims[names[0]] = list(range(grid[0]))
        entry = {"key": key_pattern, "url": url(pattern), "dimensions": dims}
    else:
        raise ValueError(mode)
    return remaining, [entry]


def drop_chunks(entries: Mapping[str, Entry], array: str, indices) -> Entries:
    """``entries`` without the chunks of v2 array ``array`` at ``indices``
    (chunk index tuples): keys absent from an index mean "not written"."""
    keys = v2_chunk_keys(entries, array)
    dropped = {keys[tuple(index)] for index in indices}
    return {k: v for k, v in entries.items() if k not in dropped}


def fill_chunks(data: np.ndarray, chunks: Sequence[int], indices, fill: Any) -> np.ndarray:
    """A copy of ``data`` with the regions of chunks ``indices`` set to
    ``fill``: what a reader must return when those chunks are missing."""
    out = data.copy()
    for index in indices:
        out[chunk_region(data.shape, chunks, index)] = fill
    return out


def chunk_region(
    shape: Sequence[int], chunks: Sequence[int], index: Sequence[int]
) -> tuple[slice, ...]:
    """The array region (a tuple of slices) covered by chunk ``index``."""
    return tuple(
        slice(i * c, min((i + 1) * c, s)) for i, c, s in zip(index, chunks, shape)
    )


def all_chunk_indices(shape: Sequence[int], chunks: Sequence[int]) -> Iterator[tuple[int, ...]]:
    """Every chunk index of an array, in C order."""
    return iter(np.ndindex(*chunk_grid(shape, chunks)))


class Store(NamedTuple):
    """A zarr-python store holding one array ``a``, with its pixels and
    builder entries."""

    path: Path
    data: np.ndarray
    entries: dict


def write_simple_store(directory: Path) -> Store:
    """A 75x100 ``<u2`` array ``a`` in 32x32 zlib chunks (partial at the
    right and bottom edges), written by zarr-python to directory/a.zarr."""
    data = sample_pixels("<u2", (75, 100))
    spec = ArraySpec(data, (32, 32), compressor=numcodecs.Zlib(level=1))
    path = write_zarr_python(Path(directory) / "a.zarr", {"a": spec})
    return Store(path, data, zarr_store_entries(path))
