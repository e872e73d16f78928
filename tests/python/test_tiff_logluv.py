"""SGI LogLuv and LogL TIFFs (compressions 34676 SGILOG and 34677 SGILOG24,
photometric 32845 LogLuv and 32844 LogL) through ``chunkref index`` +
ChunkRef, against GDAL's GTiff driver (libtiff).

GDAL cannot write these and leaves libtiff to pick what the pixels decode
to; libtiff picks from BitsPerSample and SampleFormat. It writes every such
file with 16-bit signed samples, so GDAL shows LogLuv as three Int16 bands
(log luminance, u' and v' scaled by 32768) and LogL as one Int16 band (the
stored log luminance). 32-bit float samples give CIE X, Y, Z (or Y), 32-bit
integers of one LogLuv sample the stored words.

Sources are written by libtiff itself, the library GDAL reads them with,
called through ctypes (float XYZ, or the stored words themselves to reach
every code), and by ``tiffcp`` (FillOrder 2, tiles, big-endian). The other
sample layouts are those files with BitsPerSample / SampleFormat rewritten.
Cut and corrupted strips must fail or read exactly as they do in GDAL.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import shutil
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest
from osgeo import gdal

from conftest import run_chunkref
from raster_checks import assert_pixels_equal, describe, odd_windows, open_chunkref
from test_tiff_fax import codec_of, cut_strip
from test_tiff_index import index_tiff

SGILOG, SGILOG24 = 34676, 34677
LOGL, LOGLUV = 32844, 32845
# libtiff's pseudo-tag choosing what the application passes, and its values.
SGILOGDATAFMT, FLOAT, INT16, RAW = 65560, 0, 1, 2


def libtiff() -> ctypes.CDLL | None:
    """The libtiff GDAL's GTiff driver links, if it can be loaded."""
    name = ctypes.util.find_library("tiff")
    if name is None:
        return None
    lib = ctypes.CDLL(name)
    lib.TIFFOpen.restype = ctypes.c_void_p
    lib.TIFFOpen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    lib.TIFFClose.argtypes = [ctypes.c_void_p]
    lib.TIFFWriteScanline.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint32,
                                      ctypes.c_uint16]
    lib.TIFFWriteTile.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint32,
                                  ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint16]
    return lib


LIBTIFF = libtiff()
pytestmark = pytest.mark.skipif(LIBTIFF is None, reason="libtiff cannot be loaded")


def write_logluv(path: Path, pixels: np.ndarray, compression: int, datafmt: int = FLOAT,
                 tile: int | None = None, rows_per_strip: int | None = None,
                 big_endian: bool = False) -> Path:
    """A LogLuv (3-sample ``pixels``) or LogL (2-D ``pixels``) TIFF written
    by libtiff with ``compression``, the pixels passed as ``datafmt`` says:
    float32 XYZ / Y, int16 (L, u, v) / L, or uint32 stored words (RAW, one
    sample)."""
    lib = LIBTIFF
    height, width = pixels.shape[:2]
    logl = pixels.ndim == 2 and datafmt != RAW
    tif = lib.TIFFOpen(str(path).encode(), b"wb" if big_endian else b"wl")
    assert tif

    def set_field(tag: int, value: int) -> None:
        assert lib.TIFFSetField(ctypes.c_void_p(tif), ctypes.c_uint32(tag), ctypes.c_int(value))

    set_field(256, width)
    set_field(257, height)
    set_field(259, compression)
    set_field(262, LOGL if logl else LOGLUV)
    set_field(277, 1 if logl else 3)
    set_field(284, 1)
    set_field(SGILOGDATAFMT, datafmt)
    data = np.ascontiguousarray(pixels)
    if tile:
        set_field(322, tile)
        set_field(323, tile)
        for y in range(0, height, tile):
            for x in range(0, width, tile):
                block = np.zeros((tile, tile) + data.shape[2:], data.dtype)
                part = data[y : y + tile, x : x + tile]
                block[: part.shape[0], : part.shape[1]] = part
                assert lib.TIFFWriteTile(tif, block.ctypes.data, x, y, 0, 0) > 0
    else:
        set_field(278, rows_per_strip or height)
        for y in range(height):
            row = np.ascontiguousarray(data[y])
            assert lib.TIFFWriteScanline(tif, row.ctypes.data, y, 0) == 1
    lib.TIFFClose(tif)
    return path


def xyz_pixels(width: int, height: int, seed: int = 5) -> np.ndarray:
    """CIE XYZ float32 pixels: noise over five orders of magnitude, a flat
    band (long runs), a black row and a column of one colour."""
    rng = np.random.default_rng(seed)
    xyz = (10.0 ** rng.uniform(-3, 2, (height, width, 1))
           * rng.uniform(0.2, 1.2, (height, width, 3))).astype(np.float32)
    xyz[: height // 4] = [0.5, 0.6, 0.7]
    xyz[height // 2] = 0
    xyz[:, width // 3] = [2.0, 1.0, 0.25]
    return xyz


def rewrite_tags(source: Path, out: Path, values: dict[int, int]) -> Path:
    """A copy of a classic TIFF (either byte order) with every value of
    the SHORT tags of ``values`` set to the value given."""
    data = bytearray(source.read_bytes())
    order = "<" if data[:2] == b"II" else ">"
    ifd = struct.unpack_from(order + "I", data, 4)[0]
    seen = set()
    for i in range(struct.unpack_from(order + "H", data, ifd)[0]):
        at = ifd + 2 + 12 * i
        tag, kind, count = struct.unpack_from(order + "HHI", data, at)
        if tag in values:
            assert kind == 3, tag
            where = at + 8 if count <= 2 else struct.unpack_from(order + "I", data, at + 8)[0]
            for k in range(count):
                struct.pack_into(order + "H", data, where + 2 * k, values[tag])
            seen.add(tag)
    assert seen == set(values), seen
    out.write_bytes(bytes(data))
    return out


def assert_reads_like_gdal(tif: Path, index: Path) -> np.ndarray:
    """Size, bands, types, colour interpretation, nodata, compression,
    interleaving (of several bands: ChunkRef reports none for one band,
    GTiff BAND) and pixels (whole, and odd windows, bit for bit) of the
    ChunkRef dataset equal GTiff's; returns GTiff's pixels."""
    native, ours = gdal.Open(str(tif)), open_chunkref(index)
    assert describe(ours) == describe(native)
    for item in ("COMPRESSION", "INTERLEAVE")[: 1 + (native.RasterCount > 1)]:
        assert ours.GetMetadataItem(item, "IMAGE_STRUCTURE") == native.GetMetadataItem(
            item, "IMAGE_STRUCTURE"
        ), item
    want = native.ReadAsArray()
    got = ours.ReadAsArray()
    assert_pixels_equal(got, want, f"{tif.name} whole")
    assert got.tobytes() == want.tobytes(), f"{tif.name}: not bit for bit"
    for xoff, yoff, w, h in odd_windows(native.RasterXSize, native.RasterYSize):
        assert_pixels_equal(
            ours.ReadAsArray(xoff, yoff, w, h), native.ReadAsArray(xoff, yoff, w, h),
            f"{tif.name} window {(xoff, yoff, w, h)}",
        )
    return want


def index_and_compare(chunkref_bin, tif: Path, tmp_path: Path) -> np.ndarray:
    index_tiff(chunkref_bin, tif, tmp_path / (tif.stem + ".json"))
    return assert_reads_like_gdal(tif, tmp_path / (tif.stem + ".json"))


KINDS = {
    "logluv32": (SGILOG, 3),
    "logluv24": (SGILOG24, 3),
    "logl16": (SGILOG, 1),
}


def write_kind(path: Path, kind: str, width: int, height: int, **layout) -> Path:
    compression, samples = KINDS[kind]
    xyz = xyz_pixels(width, height)
    return write_logluv(path, xyz if samples == 3 else xyz[..., 1], compression, **layout)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    "layout",
    [{"rows_per_strip": 5}, {}, {"tile": 16}],
    ids=["strips", "one-strip", "tiles"],
)
@pytest.mark.parametrize("big_endian", [False, True], ids=["le", "be"])
def test_libtiff_written_logluv_reads_like_gdal(tmp_path, chunkref_bin, kind, layout, big_endian):
    # 37 x 23: a last strip of 3 rows, partial edge tiles.
    tif = write_kind(tmp_path / f"{kind}.tif", kind, 37, 23, big_endian=big_endian, **layout)
    index = index_tiff(chunkref_bin, tif, tmp_path / f"{kind}.json")
    codec = codec_of(index)
    assert codec["compression"] == KINDS[kind][0]
    assert ("image_height" in codec) == ("tile" not in layout), codec
    want = assert_reads_like_gdal(tif, tmp_path / f"{kind}.json")
    # libtiff writes 16-bit signed samples: GDAL shows them as Int16.
    assert want.dtype == np.int16
    assert want.shape == ((3, 23, 37) if KINDS[kind][1] == 3 else (23, 37))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    "sample", [(32, 3, np.float32), (16, 1, np.uint16)], ids=["float32", "uint16"]
)
def test_sample_format_chooses_the_pixels_as_in_gdal(tmp_path, chunkref_bin, kind, sample):
    """32-bit floats: CIE XYZ or Y, as libtiff converts them; unsigned
    16-bit samples: the same (L, u, v) as signed ones, as UInt16."""
    bits, sample_format, dtype = sample
    tif = write_kind(tmp_path / "stored.tif", kind, 29, 17, rows_per_strip=4)
    tif = rewrite_tags(tif, tmp_path / f"{kind}.tif", {258: bits, 339: sample_format})
    want = index_and_compare(chunkref_bin, tif, tmp_path)
    assert want.dtype == dtype
    if dtype == np.float32 and kind != "logl16":
        # Y of the flat band is close to what was written.
        assert abs(want[1, 0, 0] - 0.6) < 0.01, want[:, 0, 0]


def all_words(compression: int) -> np.ndarray:
    """Stored words reaching every code: for SGILOG24 every 14-bit
    chromaticity index (those past the grid too) with every 10-bit
    luminance; for SGILOG 32-bit words of every luminance (negative ones
    too) with u and v codes of every value."""
    if compression == SGILOG24:
        chroma = np.arange(1 << 14, dtype=np.uint32)
        luminance = (np.arange(1 << 14, dtype=np.uint32) * 37) % (1 << 10)
        words = luminance << 14 | chroma
        words[: 1 << 10] = np.arange(1 << 10, dtype=np.uint32) << 14 | 5000
    else:
        luminance = np.arange(1 << 16, dtype=np.uint32)
        uv = (luminance * 2654435761) % (1 << 16) & 0xFFFF
        words = luminance << 16 | uv
    return words.reshape(-1, 128)


@pytest.mark.parametrize("compression", [SGILOG, SGILOG24], ids=["logluv32", "logluv24"])
@pytest.mark.parametrize("sample", ["int16", "float32", "raw"])
def test_every_stored_code_reads_like_gdal(tmp_path, chunkref_bin, compression, sample):
    """The words themselves, written raw by libtiff, read as (L, u, v), as
    XYZ and as the words: every luminance code and (SGILOG24) every cell of
    the (u', v') grid and the indexes past it, bit for bit."""
    words = all_words(compression)
    tif = write_logluv(tmp_path / "raw.tif", words, compression, datafmt=RAW,
                       rows_per_strip=16)
    tags = {"int16": {}, "float32": {258: 32, 339: 3}, "raw": {258: 32, 339: 1, 277: 1}}
    if tags[sample]:
        tif = rewrite_tags(tif, tmp_path / f"{sample}.tif", tags[sample])
    want = index_and_compare(chunkref_bin, tif, tmp_path)
    if sample == "raw":
        assert np.array_equal(want, words)


def test_every_log_luminance_reads_like_gdal(tmp_path, chunkref_bin):
    """Every 16-bit LogL word (negative luminances too), as written and
    as Y."""
    words = np.arange(-(1 << 15), 1 << 15, dtype=np.int16).reshape(-1, 256)
    tif = write_logluv(tmp_path / "logl.tif", words, SGILOG, datafmt=INT16, rows_per_strip=32)
    assert np.array_equal(index_and_compare(chunkref_bin, tif, tmp_path), words)
    y = rewrite_tags(tif, tmp_path / "y.tif", {258: 32, 339: 3})
    want = index_and_compare(chunkref_bin, y, tmp_path)
    assert (want[words < 0] <= 0).all() and want[128, 0] == 0


TIFFCP = shutil.which("tiffcp")


@pytest.mark.skipif(TIFFCP is None, reason="libtiff-tools (tiffcp) not installed")
@pytest.mark.parametrize(
    "args",
    [
        ("-f", "lsb2msb", "-r", "6"),
        ("-t", "-w", "16", "-l", "32", "-B"),
        ("-r", "1", "-B", "-f", "lsb2msb"),
    ],
    ids=["lsb2msb", "tiles-be", "row-strips-be-lsb2msb"],
)
@pytest.mark.parametrize("kind", ["logluv32", "logl16"])
def test_tiffcp_written_logluv_reads_like_gdal(tmp_path, chunkref_bin, args, kind):
    """tiffcp re-encodes a LogLuv or LogL file with FillOrder 2 (bits
    reversed in every byte, as libtiff then reads them), tiles or one row a
    strip, in either byte order."""
    plain = write_kind(tmp_path / "plain.tif", kind, 45, 33)
    tif = tmp_path / "copy.tif"
    subprocess.run([TIFFCP, "-c", "sgilog", *args, str(plain), str(tif)], check=True,
                   capture_output=True)
    index = index_tiff(chunkref_bin, tif, tmp_path / "copy.json")
    assert codec_of(index).get("fill_order", 1) == (2 if "lsb2msb" in args else 1)
    assert_reads_like_gdal(tif, tmp_path / "copy.json")


def both_read(tif: Path, index: Path) -> tuple[np.ndarray | None, np.ndarray | None]:
    """What GTiff and ChunkRef read of the whole image (None: it failed)."""
    out = []
    for open_ds in (lambda: gdal.Open(str(tif)), lambda: open_chunkref(index)):
        try:
            out.append(open_ds().ReadAsArray())
        except RuntimeError:
            out.append(None)
    return out[0], out[1]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("fraction", [0.5, 0.99])
def test_cut_strip_fails_as_in_gdal(tmp_path, chunkref_bin, kind, fraction):
    """A strip whose data ends before its last row: libtiff fails it (no
    rows kept), and so does ChunkRef."""
    full = write_kind(tmp_path / "full.tif", kind, 37, 23)
    cut = tmp_path / "cut.tif"
    cut_strip(full, cut, fraction)
    index_tiff(chunkref_bin, cut, tmp_path / "cut.json")
    native, ours = both_read(cut, tmp_path / "cut.json")
    assert native is None and ours is None


@pytest.mark.parametrize("kind", KINDS)
def test_corrupt_strips_read_or_fail_as_in_gdal(tmp_path, chunkref_bin, kind):
    """Random bytes of the strip overwritten (runs and literals running
    past rows and planes, data left over), some strips a few bytes short as
    well: each file fails in both readers or reads the same pixels in
    both."""
    full = write_kind(tmp_path / "full.tif", kind, 37, 23)
    data = full.read_bytes()
    native = gdal.Open(str(full))
    band = native.GetRasterBand(1)
    start = int(band.GetMetadataItem("BLOCK_OFFSET_0_0", "TIFF"))
    size = int(band.GetMetadataItem("BLOCK_SIZE_0_0", "TIFF"))
    rng = np.random.default_rng(11)
    outcomes = set()
    for trial in range(16):
        corrupt = bytearray(data)
        for at in rng.integers(start, start + size, size=1 + 4 * trial):
            corrupt[at] = int(rng.integers(0, 256))
        tif = tmp_path / f"corrupt{trial}.tif"
        tif.write_bytes(bytes(corrupt))
        if trial % 4 == 3:
            # A few bytes short as well.
            cut_strip(tif, tif, 1 - trial / size)
        index_tiff(chunkref_bin, tif, tmp_path / f"corrupt{trial}.json")
        native, ours = both_read(tif, tmp_path / f"corrupt{trial}.json")
        assert (native is None) == (ours is None), f"trial {trial}"
        if native is not None:
            assert native.tobytes() == ours.tobytes(), f"trial {trial}"
        outcomes.add(native is None)
    assert outcomes == {True, False}, "both failing and reading strips were tried"


@pytest.mark.parametrize(
    "tags,message",
    [
        ({258: 8, 339: 1}, "RGBA view"),
        ({262: 1}, "photometric"),
    ],
    ids=["8-bit", "not-logluv"],
)
def test_pixels_libtiff_serves_otherwise_are_refused(tmp_path, chunkref_bin, tags, message):
    """8-bit samples (libtiff's display RGB, which GDAL reads as RGBA
    through TIFFReadRGBAImage) and SGILOG data of another photometric
    (which libtiff does not decode) are refused at index time."""
    tif = write_kind(tmp_path / "plain.tif", "logluv32", 20, 10)
    bad = rewrite_tags(tif, tmp_path / "bad.tif", tags)
    done = run_chunkref(chunkref_bin, "index", bad, "-o", tmp_path / "x.json")
    assert done.returncode != 0 and message in done.stderr, done.stderr
