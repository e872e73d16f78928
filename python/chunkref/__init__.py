"""chunkref: chunk indexes read into numpy, xarray and dask, with no GDAL.

``chunkref.open(url)`` opens any index the ChunkRef GDAL driver opens
(Kerchunk JSON and Parquet, reference tables in Parquet and FlatGeobuf,
Icechunk repositories, stacks, mosaics, multi-array stores; local paths,
``s3://``, ``gs://``, ``az://``, ``https://``) and shows it as the driver
does: bands, levels (level 0 the full resolution, the rest overviews), the
geotransform, the CRS, nodata, scale and offset, time steps.
``Dataset.read()`` fetches and decodes the chunks it needs concurrently,
with the GIL released. ``xarray.open_dataset(url, engine="chunkref")``
gives the same data as a lazy xarray Dataset (see docs/python.md).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from ._chunkref import ChunkrefError
from ._chunkref import InvalidIndexError as _InvalidIndexError
from ._chunkref import open_raster as _open_raster

__all__ = ["open", "Dataset", "Level", "ChunkrefError", "InvalidIndexError"]


class InvalidIndexError(_InvalidIndexError, ValueError):
    """The index, its metadata or a request is malformed."""


@dataclass(frozen=True)
class Level:
    """One level of a dataset: its size in pixels and its block (chunk) size."""

    width: int
    height: int
    block_width: int
    block_height: int


def _option_items(options: Mapping[str, Any]) -> list[tuple[str, str]]:
    items = []
    for key, value in options.items():
        if isinstance(value, bool):
            value = "YES" if value else "NO"
        items.append((key, str(value)))
    return items


def _call(fn, *args):
    """Calls into the engine, raising :class:`InvalidIndexError` (a
    ``ValueError`` too) for malformed indexes and requests."""
    try:
        return fn(*args)
    except _InvalidIndexError as e:
        raise InvalidIndexError(*e.args) from None


def open(url: str, *, config: Mapping[str, str] | None = None, **options: Any) -> "Dataset":
    """Opens the chunk index ``url`` as a raster.

    ``url`` is a local path or a URL (``s3://``, ``gs://``, ``az://``,
    ``https://``, or GDAL's ``/vsis3/`` spellings); ``CHUNKREF:"index":array``
    opens one array or group of a multi-array store (see
    :attr:`Dataset.subdatasets`). Keyword arguments are the driver's open
    options (``template_base="/data/"`` is ``-oo TEMPLATE_base=/data/``;
    ``time_start``, ``time_end``, ``y_order``, ``raw_color``...). ``config``
    holds settings (``AWS_REGION``, ``AWS_ENDPOINT_URL``, ``GDAL_HTTP_*``,
    ``CHUNKREF_*``), read before the environment.
    """
    return Dataset(url, options, dict(config or {}))


def _template_key(key: str) -> str:
    # Template names are case-sensitive: keep what follows the prefix.
    if key.upper().startswith("TEMPLATE_"):
        return "TEMPLATE_" + key[len("TEMPLATE_") :]
    return key.upper()


class Dataset:
    """An opened chunk index: a raster of ``count`` bands, or a store whose
    arrays are listed in :attr:`subdatasets`.

    It pickles as its url, options and config and opens again where it is
    unpickled (dask workers, other processes)."""

    def __init__(self, url: str, options: Mapping[str, Any], config: Mapping[str, str]):
        self.url = url
        self.options = dict(options)
        self.config = dict(config)
        opts = [(_template_key(k), v) for k, v in _option_items(self.options)]
        self._raster = _call(_open_raster, url, opts, list(self.config.items()))
        self.levels = [Level(*lv[:4]) for lv in self._raster.levels()]
        self._bands = self._raster.levels()[0][4] if self.levels else 0
        self._band_info: dict[tuple[int, int], dict] = {}

    def __reduce__(self):
        return (_reopen, (self.url, self.options, self.config))

    def __repr__(self) -> str:
        if not self.levels:
            return f"<chunkref.Dataset {self.url!r}: {len(self.subdatasets)} subdatasets>"
        return (
            f"<chunkref.Dataset {self.url!r}: {self.count} x {self.height} x {self.width} "
            f"{self.dtype}, {len(self.levels)} levels>"
        )

    # Shape and type ---------------------------------------------------------
    @property
    def is_raster(self) -> bool:
        """Whether a raster was chosen (else only :attr:`subdatasets`)."""
        return bool(self.levels)

    def _need_raster(self) -> None:
        if not self.levels:
            names = ", ".join(n for n, _ in self.subdatasets[:5])
            raise InvalidIndexError(
                f"{self.url} holds several arrays: open one of its subdatasets ({names} ...)"
            )

    @property
    def width(self) -> int:
        self._need_raster()
        return self.levels[0].width

    @property
    def height(self) -> int:
        self._need_raster()
        return self.levels[0].height

    @property
    def count(self) -> int:
        """The number of bands (time steps of a stack are bands)."""
        self._need_raster()
        return self._bands

    @property
    def shape(self) -> tuple[int, int, int]:
        """``(count, height, width)``: the shape :meth:`read` returns."""
        return (self.count, self.height, self.width)

    @property
    def block_shape(self) -> tuple[int, int]:
        """``(block_height, block_width)`` of level 0: the index's chunks."""
        self._need_raster()
        return (self.levels[0].block_height, self.levels[0].block_width)

    def dtype_of(self, level: int = 0) -> np.dtype:
        """The element type of ``level``."""
        return np.dtype(_call(self._raster.dtype, level))

    @property
    def dtype(self) -> np.dtype:
        self._need_raster()
        return self.dtype_of(0)

    # Georeferencing ---------------------------------------------------------
    def transform_of(self, level: int = 0) -> tuple[float, ...] | None:
        """GDAL's geotransform of ``level`` (x0, dx, rx, y0, ry, dy), or None."""
        t, _ = _call(self._raster.georef, level)
        return None if t is None else tuple(t)

    @property
    def transform(self) -> tuple[float, ...] | None:
        """GDAL's geotransform of level 0, or None."""
        self._need_raster()
        return self.transform_of(0)

    @property
    def crs(self) -> str | None:
        """The CRS as the index gives it: ``EPSG:<code>`` or WKT2, or None."""
        self._need_raster()
        return _call(self._raster.georef, 0)[1]

    @property
    def crs_wkt(self) -> str | None:
        """The CRS as WKT (made by pyproj from an EPSG code), or None."""
        crs = self.crs
        if crs is None or not crs.upper().startswith(("EPSG:", "ESRI:", "IAU_2015:", "+PROJ")):
            return crs
        import pyproj

        return pyproj.CRS.from_user_input(crs).to_wkt()

    @property
    def gcps(self):
        """Ground control points as ``[(pixel, line, x, y, z), ...]`` and
        their CRS, or None."""
        return self._raster.gcps()

    # Bands --------------------------------------------------------------------
    def band_info(self, band: int, level: int = 0) -> dict:
        """What GDAL shows of ``band`` (1-based): ``nodata``, ``nodata_int``,
        ``scale``, ``offset``, ``unit``, ``description``, ``color``."""
        key = (level, band)
        if key not in self._band_info:
            self._band_info[key] = _call(self._raster.band_info, level, band - 1)
        return self._band_info[key]

    def _per_band(self, item: str) -> tuple:
        return tuple(self.band_info(b)[item] for b in range(1, self.count + 1))

    @property
    def nodatavals(self) -> tuple:
        """Each band's nodata value (None where there is none)."""
        return self._per_band("nodata")

    @property
    def nodata(self):
        """Band 1's nodata value, exact for 64-bit integers, or None."""
        info = self.band_info(1)
        return info["nodata_int"] if info["nodata_int"] is not None else info["nodata"]

    @property
    def scales(self) -> tuple:
        return tuple(1.0 if s is None else s for s in self._per_band("scale"))

    @property
    def offsets(self) -> tuple:
        return tuple(0.0 if s is None else s for s in self._per_band("offset"))

    @property
    def units(self) -> tuple:
        return self._per_band("unit")

    @property
    def descriptions(self) -> tuple:
        return self._per_band("description")

    @property
    def colorinterp(self) -> tuple:
        """GDAL's colour interpretation of each band (``"Red"``, ``"Gray"``...)."""
        return self._per_band("color")

    def color_table(self, level: int = 0) -> list | None:
        """The palette as ``(c1, c2, c3, c4)`` entries, or None."""
        return _call(self._raster.color_table, level)

    @property
    def times(self) -> np.ndarray | None:
        """The ``datetime64[ns]`` of each band of a time stack, or None."""
        values = []
        for b in range(self.count):
            items = self._items(self._raster.metadata("", b))
            if "DATETIME" not in items:
                return None
            values.append(np.datetime64(items["DATETIME"].rstrip("Z"), "ns"))
        return np.array(values, dtype="datetime64[ns]")

    # Metadata -------------------------------------------------------------------
    @staticmethod
    def _items(items: Iterable[str]) -> dict[str, str]:
        return dict(i.split("=", 1) if "=" in i else (i, "") for i in items)

    def metadata(self, domain: str = "", band: int | None = None) -> dict[str, str]:
        """The metadata of ``domain`` (``""``, ``"IMAGE_STRUCTURE"``,
        ``"RPC"``, ``"GEOLOCATION"``, ``"SUBDATASETS"``) of the dataset or
        of a band (1-based), as GDAL shows it."""
        return self._items(
            _call(self._raster.metadata, domain, None if band is None else band - 1)
        )

    @property
    def subdatasets(self) -> list[tuple[str, str]]:
        """``(name, description)`` of each array of a store that holds
        several; ``chunkref.open(name)`` opens one."""
        return self._raster.subdatasets()

    @property
    def warnings(self) -> list[str]:
        """Non-fatal problems found opening the index."""
        return self._raster.warnings()

    @property
    def files(self) -> list[str]:
        """The files the index refers to."""
        return self._raster.files()

    # Reading --------------------------------------------------------------------
    def read(
        self,
        window: Any = None,
        level: int = 0,
        bands: int | Sequence[int] | None = None,
    ) -> np.ndarray:
        """Reads pixels into a new numpy array.

        ``window`` is None (the whole level), ``((row_start, row_stop),
        (col_start, col_stop))`` as rasterio writes it, or an object with
        ``col_off``, ``row_off``, ``width`` and ``height`` (a rasterio
        ``Window``). ``bands`` are 1-based: None reads every band into a
        ``(bands, rows, cols)`` array, an int one band into ``(rows, cols)``,
        a list those bands in that order. All the chunks needed are fetched
        and decoded concurrently, with the GIL released.
        """
        self._need_raster()
        if not 0 <= level < len(self.levels):
            raise InvalidIndexError(f"level {level} does not exist ({len(self.levels)} levels)")
        lv = self.levels[level]
        x, y, w, h = _window(window, lv)
        if min(x, y, w, h) < 0:
            raise InvalidIndexError(
                f"window (x={x}, y={y}, width={w}, height={h}) has a negative offset or size")
        single = isinstance(bands, (int, np.integer))
        wanted = (
            list(range(1, self.count + 1))
            if bands is None
            else [int(bands)] if single else [int(b) for b in bands]
        )
        for b in wanted:
            if not 1 <= b <= self.count:
                raise InvalidIndexError(f"band {b} does not exist (bands 1 to {self.count})")
        need = len(wanted) * w * h * self.dtype_of(level).itemsize
        if need > _MEMORY:
            raise InvalidIndexError(
                f"{self.url}: reading {len(wanted)} band(s) of {w} x {h} needs {need} bytes, "
                f"more than this machine's {_MEMORY} bytes of memory: read a smaller window")
        try:
            raw = _call(self._raster.read, level, x, y, w, h, [b - 1 for b in wanted])
        except ChunkrefError as e:  # name the index too
            raise type(e)(f"{self.url}, level {level}: {e}") from None
        array = np.frombuffer(raw, dtype=self.dtype_of(level)).reshape(len(wanted), h, w)
        return array[0] if single else array


#: Physical memory: reads that need more are refused before anything is allocated.
_MEMORY = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def _window(window: Any, level: Level) -> tuple[int, int, int, int]:
    """``(x, y, width, height)`` of a window given as rasterio gives it."""
    if window is None:
        return 0, 0, level.width, level.height
    if hasattr(window, "col_off"):
        return (int(window.col_off), int(window.row_off), int(window.width), int(window.height))
    (r0, r1), (c0, c1) = window
    return int(c0), int(r0), int(c1) - int(c0), int(r1) - int(r0)


def _reopen(url: str, options: dict, config: dict) -> Dataset:
    return Dataset(url, options, config)
