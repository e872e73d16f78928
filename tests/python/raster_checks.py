"""Comparison helpers: read a ChunkRef dataset and check it, pixel for pixel,
against what GDAL's native drivers (or the numpy arrays zarr-python wrote)
say the pixels are."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np
from osgeo import gdal

from kerchunk_builders import HAS_INT8, gdal_type_for, dataset_levels

DRIVER = "ChunkRef"


def open_chunkref(path: Path | str, open_options: Sequence[str] = ()) -> gdal.Dataset:
    """Open ``path`` with the ChunkRef driver only (fails if it does not
    claim the file) and check that it really is ChunkRef that opened it."""
    ds = gdal.OpenEx(
        str(path), gdal.OF_RASTER, allowed_drivers=[DRIVER], open_options=list(open_options)
    )
    assert ds is not None
    assert ds.GetDriver().ShortName == DRIVER
    return ds


def describe(ds: gdal.Dataset) -> dict:
    """What a user sees of ``ds`` besides its pixels and CRSs: size,
    geotransform, GCPs and, per band, data type, pixel type, nodata, mask
    flags, colour interpretation and table and overview count."""
    bands = []
    for i in range(1, ds.RasterCount + 1):
        b = ds.GetRasterBand(i)
        ct = b.GetColorTable()
        bands.append(
            {
                "type": gdal.GetDataTypeName(b.DataType),
                "pixeltype": b.GetMetadataItem("PIXELTYPE", "IMAGE_STRUCTURE"),
                "nodata": b.GetNoDataValue(),
                "mask": b.GetMaskFlags(),
                "colour": gdal.GetColorInterpretationName(b.GetColorInterpretation()),
                "ct": None if ct is None else [ct.GetColorEntry(k) for k in range(ct.GetCount())],
                "overviews": b.GetOverviewCount(),
            }
        )
    gt = ds.GetGeoTransform(can_return_null=True)
    return {
        "size": (ds.RasterXSize, ds.RasterYSize, ds.RasterCount),
        "gt": None if gt is None else tuple(gt),
        "gcps": [(g.GCPPixel, g.GCPLine, g.GCPX, g.GCPY, g.GCPZ, g.Id) for g in ds.GetGCPs()],
        "bands": bands,
    }


def as_bands(array: np.ndarray) -> np.ndarray:
    """View a 2-D (y, x) array as (1, y, x); pass (bands, y, x) through."""
    return array[np.newaxis] if array.ndim == 2 else array


def native_levels(ds: gdal.Dataset) -> list[np.ndarray]:
    """Pixels of every level of ``ds`` (level 0, then each overview) read by
    the dataset's own driver, each as a (bands, y, x) array."""
    out = []
    for bands in dataset_levels(ds):
        out.append(np.stack([b.ReadAsArray() for b in bands]))
    return out


def odd_windows(xsize: int, ysize: int) -> list[tuple[int, int, int, int]]:
    """Windows (xoff, yoff, xsize, ysize) for a raster of the given size:
    the full image, then windows that start and end off chunk boundaries,
    cross several chunks, hug the partial right/bottom edge chunks, or are
    one pixel thick."""
    candidates = [
        (0, 0, xsize, ysize),
        (1, 2, xsize - 3, ysize - 5),
        (xsize // 3, ysize // 4, xsize // 2 + 1, ysize // 2 + 3),
        (31, 31, 3, 3),
        (xsize - 7, ysize - 5, 7, 5),
        (xsize // 2 + 1, 0, 1, ysize),
        (0, ysize // 2 - 1, xsize, 1),
        (xsize - 1, ysize - 1, 1, 1),
    ]
    windows = []
    for xoff, yoff, w, h in candidates:
        xoff, yoff = max(0, min(xoff, xsize - 1)), max(0, min(yoff, ysize - 1))
        w, h = max(1, min(w, xsize - xoff)), max(1, min(h, ysize - yoff))
        if (xoff, yoff, w, h) not in windows:
            windows.append((xoff, yoff, w, h))
    return windows


def assert_pixels_equal(got: np.ndarray, expected: np.ndarray, what: str) -> None:
    """Exact equality; NaNs compare equal; int8 expectations accept the
    uint8 arrays GDAL before 3.7 returns for SIGNEDBYTE bands."""
    if expected.dtype.kind == "i" and expected.dtype.itemsize == 1:
        got = got.astype(np.uint8).view(np.int8)
    assert got.shape == expected.shape, f"{what}: shape {got.shape} != {expected.shape}"
    equal_nan = expected.dtype.kind == "f"
    if not np.array_equal(got, expected, equal_nan=equal_nan):
        same = got == expected
        if equal_nan:
            same |= np.isnan(got) & np.isnan(expected)
        where = np.argwhere(~same)
        first = tuple(where[0])
        raise AssertionError(
            f"{what}: {len(where)} of {expected.size} pixels differ; first at {first}: "
            f"got {got[first]!r}, expected {expected[first]!r}"
        )


def assert_band_type(band: gdal.Band, dtype: np.dtype) -> None:
    """The band's GDAL type (and, before GDAL 3.7, the SIGNEDBYTE marker for
    int8) match ``dtype``."""
    expected = gdal_type_for(dtype)
    assert band.DataType == expected, (
        f"data type {gdal.GetDataTypeName(band.DataType)} != {gdal.GetDataTypeName(expected)}"
    )
    if np.dtype(dtype).kind == "i" and np.dtype(dtype).itemsize == 1:
        marker = None if HAS_INT8 else "SIGNEDBYTE"
        assert band.GetMetadataItem("PIXELTYPE", "IMAGE_STRUCTURE") == marker


def assert_band_matches(
    band: gdal.Band, expected: np.ndarray, what: str, block: tuple[int, int] | None = None
) -> None:
    """Compare one band with a 2-D expected array: size, type, block size
    (``block`` is (x, y)), then the full image and every odd window."""
    ysize, xsize = expected.shape
    assert (band.XSize, band.YSize) == (xsize, ysize), f"{what}: size"
    assert_band_type(band, expected.dtype)
    if block is not None:
        assert tuple(band.GetBlockSize()) == tuple(block), f"{what}: block size"
    for xoff, yoff, w, h in odd_windows(xsize, ysize):
        got = band.ReadAsArray(xoff, yoff, w, h)
        window = expected[yoff : yoff + h, xoff : xoff + w]
        assert_pixels_equal(got, window, f"{what} window {(xoff, yoff, w, h)}")


def assert_matches(
    ds: gdal.Dataset,
    levels: Sequence[np.ndarray],
    blocks: Sequence[tuple[int, int]] | None = None,
) -> None:
    """Check a ChunkRef dataset against expected pixels.

    ``levels[0]`` is the full-resolution (bands, y, x) or (y, x) array, and
    ``levels[k]`` the expected k-th overview; ``blocks[k]`` optionally the
    expected (x, y) block size of level k.  Every band of every level is
    compared (full image and odd windows), and level 0 is also read through
    the dataset (all bands at once).
    """
    levels = [as_bands(level) for level in levels]
    base = levels[0]
    assert ds.RasterCount == base.shape[0], f"band count {ds.RasterCount} != {base.shape[0]}"
    assert (ds.RasterXSize, ds.RasterYSize) == (base.shape[2], base.shape[1])
    for index in range(ds.RasterCount):
        band = ds.GetRasterBand(index + 1)
        assert band.GetOverviewCount() == len(levels) - 1, "overview count"
        for level, expected in enumerate(levels):
            target = band if level == 0 else band.GetOverview(level - 1)
            block = blocks[level] if blocks else None
            assert_band_matches(target, expected[index], f"band {index + 1} level {level}", block)
    whole = ds.ReadAsArray()
    assert_pixels_equal(as_bands(whole), base, "dataset ReadAsArray")
    xoff, yoff, w, h = odd_windows(ds.RasterXSize, ds.RasterYSize)[2]
    window = as_bands(ds.ReadAsArray(xoff, yoff, w, h))
    assert_pixels_equal(window, base[:, yoff : yoff + h, xoff : xoff + w], "dataset window")


def max_abs_diff(got: np.ndarray, expected: np.ndarray, what: str) -> float:
    """Largest absolute difference between two arrays of the same shape
    (compared as float64; NaNs in the same places compare equal)."""
    assert got.shape == expected.shape, f"{what}: shape {got.shape} != {expected.shape}"
    a, b = got.astype(np.float64), expected.astype(np.float64)
    both_nan = np.isnan(a) & np.isnan(b)
    diff = np.where(both_nan, 0.0, np.abs(a - b))
    return float(diff.max()) if diff.size else 0.0


def assert_levels_close(ds: gdal.Dataset, levels: Sequence[np.ndarray], tolerance: float) -> float:
    """Like :func:`assert_matches` for lossy codecs: every band of every
    level (full image and odd windows) is within ``tolerance`` of the
    expected (bands, y, x) arrays.  Returns the largest difference seen."""
    levels = [as_bands(level) for level in levels]
    assert ds.RasterCount == levels[0].shape[0], "band count"
    worst = 0.0
    for index in range(ds.RasterCount):
        band = ds.GetRasterBand(index + 1)
        assert band.GetOverviewCount() == len(levels) - 1, "overview count"
        for level, expected in enumerate(levels):
            target = band if level == 0 else band.GetOverview(level - 1)
            plane = expected[index]
            assert (target.XSize, target.YSize) == (plane.shape[1], plane.shape[0])
            assert_band_type(target, plane.dtype)
            for xoff, yoff, w, h in odd_windows(target.XSize, target.YSize):
                what = f"band {index + 1} level {level} window {(xoff, yoff, w, h)}"
                got = target.ReadAsArray(xoff, yoff, w, h)
                diff = max_abs_diff(got, plane[yoff : yoff + h, xoff : xoff + w], what)
                assert diff <= tolerance, f"{what}: max abs difference {diff} > {tolerance}"
                worst = max(worst, diff)
    return worst


@contextlib.contextmanager
def captured_errors() -> Iterator[list[str]]:
    """Collect the messages of every GDAL error raised inside the block
    (exceptions keep being raised as usual)."""
    messages: list[str] = []

    def handler(err_class: int, err_no: int, message: str) -> None:
        if err_class >= gdal.CE_Warning:
            messages.append(message)

    gdal.PushErrorHandler(handler)
    try:
        yield messages
    finally:
        gdal.PopErrorHandler()


def failure_text(call, *args, **kwargs) -> str:
    """Run ``call``; it must raise RuntimeError.  Return the exception's
    message joined with every GDAL error message emitted meanwhile."""
    with captured_errors() as messages:
        try:
            call(*args, **kwargs)
        except RuntimeError as exc:
            return "\n".join([str(exc), *messages])
    raise AssertionError(f"{getattr(call, '__name__', call)} did not fail; errors: {messages}")


@contextlib.contextmanager
def config_options(options: dict[str, str]) -> Iterator[None]:
    """Set GDAL configuration options for the block (GDAL 3.6 has no
    ``gdal.config_options``)."""
    previous = {key: gdal.GetConfigOption(key) for key in options}
    for key, value in options.items():
        gdal.SetConfigOption(key, value)
    try:
        yield
    finally:
        for key, value in previous.items():
            gdal.SetConfigOption(key, value)
