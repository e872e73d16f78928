"""``chunkref index`` over GDAL-written TIFFs, read back through ChunkRef.

Every source is written by GDAL (COG driver, or GTiff plus internal
overviews built with ``BuildOverviews``), small (300x200, 64x64 tiles) so
that several overview levels exist and the right and bottom tiles are
partial.  ``chunkref index`` turns it into a Kerchunk JSON index in the
osml-imagery-io layout (levels ``0``, ``1``, ... each holding ``N/data``
decoded by the ``tiff-tile`` codec), and ChunkRef must return the pixels
GDAL's GTiff driver reads from the same file, at every level, for full
reads and odd windows.  JPEG is compared within a stated tolerance (GDAL
decodes with libjpeg, ChunkRef with a Rust decoder).

The source table :data:`TIFF_CASES` and :func:`write_tiff` are shared with
test_peer.py.
"""

from __future__ import annotations

import base64
import json
import shutil
import struct
import subprocess
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest
from osgeo import gdal

import kerchunk_builders as kb
from conftest import run_chunkref
from raster_checks import (
    assert_levels_close,
    assert_matches,
    assert_pixels_equal,
    config_options,
    native_levels,
    open_chunkref,
)

TIFF_TILE = "https://awslabs.github.io/osml-imagery-io/codecs/tiff-tile"

#: Source size (x, y) and tile size: 300x200 in 64x64 tiles gives partial
#: edge tiles and, for COGs, overviews of 150x100, 75x50 and 38x25.
WIDTH, HEIGHT, TILE = 300, 200, 64

#: Largest difference accepted between a JPEG decoder's and GDAL's reading
#: of the same JPEG tiles. ChunkRef decodes grey and YCbCr tiles with
#: libjpeg-turbo, as GDAL does, and measures 0; RGB-stored tiles go through
#: the Rust jpeg-decoder crate, and the peer uses its own decoder, whose
#: chroma upsampling differs (on 4:2:0 YCbCr tiles: 95.2% of values
#: identical, 4.9% off by 1, 1.5% by 2, 0.01% by 3; grey off by at most 1).
JPEG_TOLERANCE = 3

#: GDAL's internal masks are 1-bit IFDs; the builder does not index them yet
#: and the driver exposes no mask band (open work on issue 3).
@dataclass(frozen=True)
class TiffCase:
    """One GDAL-written source: pixel type, band count, writer and its
    creation options.  ``driver`` is ``COG`` (overviews made by the COG
    driver) or ``GTiff`` (tiled unless the options say ``TILED=NO``, with
    overviews 2 and 4 built afterwards).  ``mask`` adds an internal
    per-dataset mask.  ``tolerance`` is the largest pixel difference allowed
    against GDAL (0 = identical).  ``needs`` names a GTiff compression that
    this GDAL build must offer."""

    dtype: str
    bands: int
    driver: str
    options: tuple[str, ...]
    tolerance: int = 0
    mask: bool = False
    needs: str | None = None


TIFF_CASES: dict[str, TiffCase] = {
    "cog-deflate-pred2-3band": TiffCase("|u1", 3, "COG", ("COMPRESS=DEFLATE", "PREDICTOR=YES")),
    "cog-lzw-1band": TiffCase("|u1", 1, "COG", ("COMPRESS=LZW",)),
    "cog-none-3band": TiffCase("|u1", 3, "COG", ("COMPRESS=NONE",)),
    "gtiff-packbits-3band": TiffCase("|u1", 3, "GTiff", ("COMPRESS=PACKBITS",)),
    "cog-zstd-pred2-3band": TiffCase("|u1", 3, "COG", ("COMPRESS=ZSTD", "PREDICTOR=YES")),
    "cog-lzma-1band": TiffCase("|u1", 1, "COG", ("COMPRESS=LZMA",)),
    "cog-webp-lossless-3band": TiffCase(
        "|u1", 3, "COG", ("COMPRESS=WEBP", "QUALITY=100"), needs="WEBP"
    ),
    "cog-jpeg-ycbcr-3band": TiffCase("|u1", 3, "COG", ("COMPRESS=JPEG",), JPEG_TOLERANCE),
    "cog-jpeg-gray-1band": TiffCase("|u1", 1, "COG", ("COMPRESS=JPEG",), JPEG_TOLERANCE),
    "cog-u2-deflate-pred2-1band": TiffCase(
        "<u2", 1, "COG", ("COMPRESS=DEFLATE", "PREDICTOR=STANDARD")
    ),
    "cog-i2-lzw-pred2-3band": TiffCase("<i2", 3, "COG", ("COMPRESS=LZW", "PREDICTOR=STANDARD")),
    "cog-f4-deflate-pred3-1band": TiffCase(
        "<f4", 1, "COG", ("COMPRESS=DEFLATE", "PREDICTOR=FLOATING_POINT")
    ),
    "cog-f4-lzw-pred3-3band": TiffCase(
        "<f4", 3, "COG", ("COMPRESS=LZW", "PREDICTOR=FLOATING_POINT")
    ),
    "cog-f8-deflate-pred3-2band": TiffCase(
        "<f8", 2, "COG", ("COMPRESS=DEFLATE", "PREDICTOR=FLOATING_POINT")
    ),
    "gtiff-planar-u2-deflate-pred2": TiffCase(
        "<u2", 3, "GTiff", ("INTERLEAVE=BAND", "COMPRESS=DEFLATE", "PREDICTOR=2")
    ),
    "gtiff-planar-u1-lzw": TiffCase("|u1", 4, "GTiff", ("INTERLEAVE=BAND", "COMPRESS=LZW")),
    "gtiff-planar-u1-none": TiffCase("|u1", 2, "GTiff", ("INTERLEAVE=BAND", "COMPRESS=NONE")),
    "gtiff-strips7-lzw-3band": TiffCase(
        "|u1", 3, "GTiff", ("TILED=NO", "BLOCKYSIZE=7", "COMPRESS=LZW")
    ),
    "gtiff-strips16-deflate-pred2-i2": TiffCase(
        "<i2", 1, "GTiff", ("TILED=NO", "BLOCKYSIZE=16", "COMPRESS=DEFLATE", "PREDICTOR=2")
    ),
    "gtiff-strips64-none-planar": TiffCase(
        "|u1", 3, "GTiff", ("TILED=NO", "BLOCKYSIZE=64", "INTERLEAVE=BAND", "COMPRESS=NONE")
    ),
    "gtiff-strips48-none-f4": TiffCase(
        "<f4", 1, "GTiff", ("TILED=NO", "BLOCKYSIZE=48", "COMPRESS=NONE")
    ),
    "gtiff-nbits1-strips-1band": TiffCase("|u1", 1, "GTiff", ("NBITS=1", "TILED=NO", "BLOCKYSIZE=9")),
    "gtiff-nbits4-lzw-3band": TiffCase("|u1", 3, "GTiff", ("NBITS=4", "COMPRESS=LZW")),
    "gtiff-nbits12-deflate-1band": TiffCase("<u2", 1, "GTiff", ("NBITS=12", "COMPRESS=DEFLATE")),
    "gtiff-nbits12-planar-none": TiffCase("<u2", 2, "GTiff", ("NBITS=12", "INTERLEAVE=BAND")),
    "cog-bigtiff-deflate-3band": TiffCase(
        "|u1", 3, "COG", ("COMPRESS=DEFLATE", "PREDICTOR=YES", "BIGTIFF=YES")
    ),
    "gtiff-bigtiff-strips-lzw-u2": TiffCase(
        "<u2", 1, "GTiff", ("BIGTIFF=YES", "TILED=NO", "BLOCKYSIZE=9", "COMPRESS=LZW")
    ),
    "gtiff-bigendian-u2-deflate-pred2": TiffCase(
        ">u2", 3, "GTiff", ("ENDIANNESS=BIG", "COMPRESS=DEFLATE", "PREDICTOR=2")
    ),
    # GDAL 3.6.2 writes big-endian PREDICTOR=3 tiles with every value
    # byte-swapped (its own read of them does not give back the source array;
    # tifffile/imagecodecs decode them as GDAL does).  The oracle is what is
    # on disk, i.e. GDAL's read, so these still test the decoder.
    "gtiff-bigendian-f4-lzw-pred3": TiffCase(
        ">f4", 1, "GTiff", ("ENDIANNESS=BIG", "COMPRESS=LZW", "PREDICTOR=3")
    ),
    "gtiff-bigendian-i2-none": TiffCase(">i2", 2, "GTiff", ("ENDIANNESS=BIG", "COMPRESS=NONE")),
    "gtiff-bigendian-f8-deflate-pred3-planar": TiffCase(
        ">f8", 2, "GTiff", ("ENDIANNESS=BIG", "INTERLEAVE=BAND", "COMPRESS=DEFLATE", "PREDICTOR=3")
    ),
    "gtiff-mask-deflate-3band": TiffCase(
        "|u1", 3, "GTiff", ("COMPRESS=DEFLATE", "PREDICTOR=2"), mask=True
    ),
    "gtiff-mask-jpeg-3band": TiffCase(
        "|u1", 3, "GTiff", ("COMPRESS=JPEG", "PHOTOMETRIC=YCBCR"), JPEG_TOLERANCE, mask=True
    ),
}

MASK_CASES = [name for name, case in TIFF_CASES.items() if case.mask]


@lru_cache(maxsize=None)
def gtiff_compressions() -> str:
    """The ``COMPRESS`` values GDAL's GTiff driver offers in this build."""
    return gdal.GetDriverByName("GTiff").GetMetadataItem("DMD_CREATIONOPTIONLIST") or ""


def require_case(case: TiffCase) -> None:
    """Skip when this GDAL build cannot write the case (WebP is optional)."""
    if case.needs and f"<Value>{case.needs}</Value>" not in gtiff_compressions():
        pytest.skip(f"this GDAL's GTiff driver has no {case.needs} compression")


def mask_pattern(height: int, width: int) -> np.ndarray:
    """A per-dataset mask (0 or 255) with a hole, a diagonal band and a
    fully masked-out tile, so that tiles are all-valid, all-masked or mixed."""
    y, x = np.indices((height, width))
    valid = ((x - 150) ** 2 + (y - 90) ** 2 > 40**2) & ((x + 2 * y) % 53 > 6)
    valid[128:192, 0:64] = False
    return np.where(valid, 255, 0).astype(np.uint8)


def write_tiff(path: Path, case: TiffCase, size: tuple[int, int] = (WIDTH, HEIGHT)) -> Path:
    """Write ``case`` as a TIFF of ``size`` (x, y) at ``path`` with GDAL."""
    require_case(case)
    width, height = size
    data = kb.sample_pixels(case.dtype, (case.bands, height, width))
    source = kb.mem_dataset(data)
    if case.driver == "COG":
        assert not case.mask, "masks are written through GTiff"
        gdal.Translate(
            str(path),
            source,
            format="COG",
            creationOptions=[f"BLOCKSIZE={TILE}", *case.options],
        )
        return path
    options = list(case.options)
    if "TILED=NO" not in options:
        options += ["TILED=YES", f"BLOCKXSIZE={TILE}", f"BLOCKYSIZE={TILE}"]
    config = {"GDAL_TIFF_OVR_BLOCKSIZE": str(TILE), "GDAL_TIFF_INTERNAL_MASK": "YES"}
    with config_options(config):
        ds = gdal.GetDriverByName("GTiff").CreateCopy(str(path), source, options=options)
        if case.mask:
            ds.CreateMaskBand(gdal.GMF_PER_DATASET)
            ds.GetRasterBand(1).GetMaskBand().WriteArray(mask_pattern(height, width))
        ds.BuildOverviews("NEAREST", [2, 4])
        ds = None
    return path


def gdal_blocks(ds: gdal.Dataset) -> list[tuple[int, int]]:
    """GDAL's (x, y) block size of band 1 at every level of ``ds``."""
    return [tuple(bands[0].GetBlockSize()) for bands in kb.dataset_levels(ds)]


def gdal_masks(ds: gdal.Dataset) -> list[np.ndarray]:
    """The per-dataset mask of every level of ``ds``, as GDAL reads it."""
    return [bands[0].GetMaskBand().ReadAsArray() for bands in kb.dataset_levels(ds)]


def index_tiff(binary: Path, tif: Path, out: Path, *extra: str, cwd: Path | None = None) -> dict:
    """Run ``chunkref index tif -o out``; it must succeed.  Returns the
    parsed index."""
    done = run_chunkref(binary, "index", *extra, tif, "-o", out, cwd=cwd)
    assert done.returncode == 0, (
        f"chunkref index {tif.name} failed (exit {done.returncode}):\n{done.stderr}{done.stdout}"
    )
    out = out if cwd is None else cwd / out
    return json.loads(out.read_text())


def ref_doc(refs: dict, key: str) -> dict:
    """A metadata document of the refs (inline JSON text or base64)."""
    value = refs[key]
    if isinstance(value, str) and value.startswith("base64:"):
        value = base64.b64decode(value[7:]).decode()
    return json.loads(value) if isinstance(value, str) else value


def tiff_byte_order(path: Path) -> str:
    """``<`` or ``>`` from the TIFF header."""
    return {b"II": "<", b"MM": ">"}[path.read_bytes()[:2]]


def chunk_urls(refs: dict) -> list[str]:
    """The URL of every file reference in ``refs``."""
    return [value[0] for value in refs.values() if isinstance(value, list)]


def check_index_layout(index: dict, tif: Path) -> None:
    """The index has the osml-imagery-io layout the builder promises:
    Kerchunk v1, a root group whose ``multiscales.layout`` lists one asset
    per TIFF level, and per level an array ``N/data`` with axes (bands, y, x)
    in the file's byte order, no compressor and the tiff-tile filter."""
    assert index.get("version") == 1, "not a Kerchunk v1 index"
    refs = index["refs"]
    ds = gdal.Open(str(tif))
    levels = kb.dataset_levels(ds)
    attrs = ref_doc(refs, ".zattrs")
    assets = [entry["asset"] for entry in attrs["multiscales"]["layout"]]
    assert assets == [str(n) for n in range(len(levels))], f"levels {assets}"
    order = tiff_byte_order(tif)
    planar = ds.RasterCount > 1 and ds.GetMetadataItem("INTERLEAVE", "IMAGE_STRUCTURE") == "BAND"
    for n, bands in enumerate(levels):
        meta = ref_doc(refs, f"{n}/data/.zarray")
        assert meta["shape"] == [len(bands), bands[0].YSize, bands[0].XSize], f"level {n} shape"
        xblock, yblock = bands[0].GetBlockSize()
        assert meta["chunks"] == [1 if planar else len(bands), yblock, xblock], f"level {n} chunks"
        dtype = np.dtype(meta["dtype"])
        if dtype.itemsize > 1:
            # Floating-point predictor data is rebuilt from byte planes; the
            # builder declares it little-endian, as osml-imagery-io does.
            predictor = meta["filters"][0].get("predictor", 1)
            expected = "<" if predictor == 3 else order
            assert meta["dtype"][0] == expected, (
                f"level {n} dtype {meta['dtype']}, expected byte order {expected}"
            )
        assert meta["compressor"] is None
        assert [f["id"] for f in meta["filters"]] == [TIFF_TILE], f"level {n} filters"
        axes = ref_doc(refs, f"{n}/data/.zattrs")["_ARRAY_DIMENSIONS"]
        assert axes == ["bands", "y", "x"]


def assert_same_as_gdal(index_path: Path, tif: Path, tolerance: float, what: str) -> float:
    """Open ``index_path`` with ChunkRef and compare every level with GDAL's
    GTiff read of ``tif`` (exact, block sizes included, or within
    ``tolerance``).  Returns the largest difference."""
    native = gdal.Open(str(tif))
    expected = native_levels(native)
    ds = open_chunkref(index_path)
    if tolerance == 0:
        assert_matches(ds, expected, gdal_blocks(native))
        return 0.0
    worst = assert_levels_close(ds, expected, tolerance)
    print(f"\n{what}: max |ChunkRef - GDAL| = {worst} (tolerance {tolerance})")
    return worst


@pytest.mark.parametrize("name", list(TIFF_CASES))
def test_index_reads_like_gdal(tmp_path, chunkref_bin, name):
    case = TIFF_CASES[name]
    tif = write_tiff(tmp_path / f"{name}.tif", case)
    out = tmp_path / f"{name}.tile_index.json"
    index = index_tiff(chunkref_bin, tif, out)
    check_index_layout(index, tif)
    urls = chunk_urls(index["refs"])
    assert urls and all(Path(u).is_absolute() for u in urls), "plain URLs must be absolute paths"
    assert_same_as_gdal(out, tif, case.tolerance, name)
    datasets = [gdal.Open(str(path)) for path in (tif, out)]
    nbits = [ds.GetRasterBand(1).GetMetadataItem("NBITS", "IMAGE_STRUCTURE") for ds in datasets]
    assert nbits[1] == nbits[0], f"NBITS: ChunkRef {nbits[1]}, GDAL {nbits[0]}"


@pytest.mark.parametrize("name", MASK_CASES)
def test_mask_ifds_become_mask_arrays(tmp_path, chunkref_bin, name):
    """Mask IFDs are not levels: each level gets an array ``N/mask`` of
    shape [1, h, w] instead."""
    tif = write_tiff(tmp_path / "masked.tif", TIFF_CASES[name])
    index = index_tiff(chunkref_bin, tif, tmp_path / "masked.json")
    refs = index["refs"]
    src = gdal.Open(str(tif))  # kept open: GDAL >= 3.10 frees the bands with it
    levels = kb.dataset_levels(src)
    assert not any(key.startswith(f"{len(levels)}/") for key in refs), "a mask became a level"
    arrays = sorted(key[: -len("/.zarray")] for key in refs if key.endswith("/.zarray"))
    for n, bands in enumerate(levels):
        assert f"{n}/mask/.zarray" in refs, f"no array {n}/mask; arrays: {arrays}"
        meta = ref_doc(refs, f"{n}/mask/.zarray")
        assert meta["shape"] == [1, bands[0].YSize, bands[0].XSize], f"level {n} mask shape"


@pytest.mark.parametrize("name", MASK_CASES)
def test_mask_band_matches_gdal(tmp_path, chunkref_bin, name):
    """The internal mask is ChunkRef's per-dataset mask band, at every
    level, with GDAL's pixels."""
    tif = write_tiff(tmp_path / "masked.tif", TIFF_CASES[name])
    index_tiff(chunkref_bin, tif, tmp_path / "masked.json")
    expected = gdal_masks(gdal.Open(str(tif)))
    ds = open_chunkref(tmp_path / "masked.json")
    for n, bands in enumerate(kb.dataset_levels(ds)):
        for b, band in enumerate(bands):
            flags = band.GetMaskFlags()
            assert flags == gdal.GMF_PER_DATASET, f"level {n} band {b + 1}: mask flags {flags}"
            assert_pixels_equal(band.GetMaskBand().ReadAsArray(), expected[n], f"level {n} mask")
    assert len(expected) == len(kb.dataset_levels(ds)), "level count"
    mask = ds.GetRasterBand(1).GetMaskBand()
    assert mask.GetOverviewCount() == len(expected) - 1, "mask overviews"
    for n in range(1, len(expected)):
        got = mask.GetOverview(n - 1).ReadAsArray()
        assert_pixels_equal(got, expected[n], f"mask overview {n}")


def test_template_base_index_moves_with_its_tiff(tmp_path, chunkref_bin):
    case = TIFF_CASES["cog-deflate-pred2-3band"]
    here = tmp_path / "here"
    here.mkdir()
    tif = write_tiff(here / "img.tif", case)
    index = index_tiff(chunkref_bin, tif, here / "img.tile_index.json", "--template-base")
    assert index.get("templates") == {"base": ""}
    urls = chunk_urls(index["refs"])
    assert urls and set(urls) == {"{{base}}img.tif"}, f"URLs {sorted(set(urls))[:3]}"
    expected = gdal.Open(str(tif))
    expected_levels, blocks = native_levels(expected), gdal_blocks(expected)
    expected = None

    moved = shutil.move(str(here), str(tmp_path / "elsewhere"))
    assert_matches(open_chunkref(Path(moved) / "img.tile_index.json"), expected_levels, blocks)

    # Only the TIFF moves again: the index finds it through TEMPLATE_base.
    far = tmp_path / "far"
    far.mkdir()
    shutil.move(str(Path(moved) / "img.tif"), str(far / "img.tif"))
    ds = open_chunkref(Path(moved) / "img.tile_index.json", [f"TEMPLATE_base={far}/"])
    assert_matches(ds, expected_levels, blocks)


def test_plain_urls_are_absolute_from_relative_arguments(tmp_path, chunkref_bin):
    tif = write_tiff(tmp_path / "rel.tif", TIFF_CASES["cog-lzw-1band"])
    index = index_tiff(chunkref_bin, Path("rel.tif"), Path("rel.json"), cwd=tmp_path)
    urls = set(chunk_urls(index["refs"]))
    assert urls and all(Path(u).is_absolute() for u in urls), f"URLs {sorted(urls)[:3]}"
    assert {Path(u).resolve() for u in urls} == {tif.resolve()}
    assert_same_as_gdal(tmp_path / "rel.json", tif, 0, "relative arguments")


def find_index_for(outdir: Path, source: Path) -> Path:
    """The index written for ``source`` in ``outdir``: ``<name>.tile_index.json``
    with ``<name>`` the source's file name or its stem."""
    candidates = [
        outdir / f"{source.name}.tile_index.json",
        outdir / f"{source.stem}.tile_index.json",
    ]
    found = [c for c in candidates if c.exists()]
    assert found, f"no index for {source.name} in {sorted(p.name for p in outdir.iterdir())}"
    return found[0]


def test_several_sources_into_a_directory(tmp_path, chunkref_bin):
    names = ["cog-deflate-pred2-3band", "gtiff-planar-u2-deflate-pred2", "gtiff-strips7-lzw-3band"]
    sources = [
        write_tiff(tmp_path / f"src{n}.tif", TIFF_CASES[name]) for n, name in enumerate(names)
    ]
    outdir = tmp_path / "indexes"
    outdir.mkdir()
    done = run_chunkref(chunkref_bin, "index", *sources, "-o", f"{outdir}/")
    assert done.returncode == 0, f"exit {done.returncode}:\n{done.stderr}{done.stdout}"
    written = sorted(p.name for p in outdir.iterdir())
    assert len(written) == len(sources), f"wrote {written}"
    for name, source in zip(names, sources):
        path = find_index_for(outdir, source)
        check_index_layout(json.loads(path.read_text()), source)
        assert_same_as_gdal(path, source, 0, name)


# --------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------


def first_ifd_offset(tif: Path) -> int:
    """Offset of the first IFD of a classic (not Big) TIFF."""
    head = tif.read_bytes()[:8]
    order = "<" if head[:2] == b"II" else ">"
    return struct.unpack(order + "I", head[4:8])[0]


def truncated_tiffs(tmp_path: Path) -> dict[str, Path]:
    """TIFFs cut short: inside the header, and inside the first IFD's
    entries (its tile offset/count arrays are then out of reach too)."""
    full = write_tiff(tmp_path / "full.tif", TIFF_CASES["gtiff-packbits-3band"])
    data = full.read_bytes()
    cut_ifd = first_ifd_offset(full) + 2 + 12 * 3 + 5
    out = {}
    for label, length in {"header": 5, "ifd": cut_ifd}.items():
        path = tmp_path / f"truncated-{label}.tif"
        path.write_bytes(data[:length])
        out[label] = path
    return out


def assert_fails_naming(done: subprocess.CompletedProcess, source: Path) -> None:
    text = done.stderr + done.stdout
    assert done.returncode != 0, f"exit 0 for {source.name}; output:\n{text}"
    assert source.name in text, f"message does not name {source.name}:\n{text}"
    print(f"\n{source.name}: exit {done.returncode}: {text.strip()}")


def test_non_tiff_fails_naming_the_file(tmp_path, chunkref_bin):
    text_file = tmp_path / "notes-not-a-tiff.tif"
    text_file.write_text("hello, this is not a TIFF\n" * 10)
    png = tmp_path / "picture.png"
    gdal.Translate(str(png), kb.mem_dataset(kb.sample_pixels("|u1", (1, 20, 30))), format="PNG")
    for source in (text_file, png):
        done = run_chunkref(chunkref_bin, "index", source, "-o", tmp_path / "out.json")
        assert_fails_naming(done, source)


@pytest.mark.parametrize("where", ["header", "ifd"])
def test_truncated_tiff_fails_naming_the_file(tmp_path, chunkref_bin, where):
    source = truncated_tiffs(tmp_path)[where]
    done = run_chunkref(chunkref_bin, "index", source, "-o", tmp_path / "out.json")
    assert_fails_naming(done, source)


def test_missing_source_fails_naming_the_file(tmp_path, chunkref_bin):
    source = tmp_path / "no-such-image.tif"
    done = run_chunkref(chunkref_bin, "index", source, "-o", tmp_path / "out.json")
    assert_fails_naming(done, source)


def test_one_bad_source_among_several_is_named(tmp_path, chunkref_bin):
    good = write_tiff(tmp_path / "good.tif", TIFF_CASES["cog-lzw-1band"])
    bad = tmp_path / "bad-one.tif"
    bad.write_bytes(b"II*\x00" + b"\xff" * 4)
    outdir = tmp_path / "out"
    outdir.mkdir()
    done = run_chunkref(chunkref_bin, "index", good, bad, "-o", f"{outdir}/")
    assert_fails_naming(done, bad)


def test_tiff_cut_inside_its_last_tile_reads_like_gdal(tmp_path, chunkref_bin):
    # rasterio's corrupt.tif: its last JPEG tile runs past the end of the
    # file. GDAL reads the other tiles and fails on that one; so does ChunkRef.
    pixels = (np.arange(64 * 64, dtype=np.uint32) % 251).astype(np.uint8).reshape(1, 64, 64)
    full = tmp_path / "full.tif"
    gdal.Translate(str(full), kb.mem_dataset(pixels), format="COG",
                   creationOptions=["BLOCKSIZE=32", "COMPRESS=DEFLATE", "OVERVIEWS=NONE"])
    source = tmp_path / "cut.tif"
    source.write_bytes(full.read_bytes()[:-10])
    done = run_chunkref(chunkref_bin, "index", source, "-o", tmp_path / "i.json")
    assert done.returncode == 0, done.stderr
    assert "chunk 3 at" in done.stderr and "runs past the end of the file" in done.stderr
    native, ours = gdal.Open(str(source)), open_chunkref(tmp_path / "i.json")
    for x, y in [(0, 0), (32, 0), (0, 32)]:
        assert ours.ReadRaster(x, y, 32, 32) == native.ReadRaster(x, y, 32, 32)
    for ds in (native, ours):
        with pytest.raises(RuntimeError):
            ds.ReadRaster(32, 32, 32, 32)


@pytest.mark.parametrize("compression", [None, "tiff_lzw", "tiff_adobe_deflate", "packbits"])
def test_fill_order_2_reads_like_gdal(tmp_path, chunkref_bin, compression):
    """FillOrder 2 (bits least-significant first, tag 266) as Pillow writes
    it: libtiff reverses the bits of every stored byte before decoding, and
    so does the codec now (it read the bytes as they were)."""
    from PIL import Image, TiffImagePlugin

    tags = TiffImagePlugin.ImageFileDirectory_v2()
    tags[266] = 2
    pixels = (np.arange(64 * 48).reshape(48, 64) % 251).astype(np.uint8)
    tif = tmp_path / "lsb.tif"
    Image.fromarray(pixels).save(tif, tiffinfo=tags, compression=compression)
    assert gdal.Info(str(tif))  # GDAL reads it
    index = index_tiff(chunkref_bin, tif, tmp_path / "lsb.json")
    assert '"fill_order":2' in json.dumps(index, separators=(",", ":")).replace("\\", ""), index
    want = gdal.Open(str(tif)).ReadAsArray()
    np.testing.assert_array_equal(open_chunkref(tmp_path / "lsb.json").ReadAsArray(), want)


def test_fill_order_2_with_jpeg_is_refused(tmp_path, chunkref_bin):
    """libtiff leaves FillOrder to the JPEG codec: such a file is refused at
    index time with a message naming FillOrder, not served bit-reversed."""
    from PIL import Image, TiffImagePlugin

    tags = TiffImagePlugin.ImageFileDirectory_v2()
    tags[266] = 2
    tif = tmp_path / "lsb-jpeg.tif"
    Image.fromarray(np.full((32, 32), 7, np.uint8)).save(tif, tiffinfo=tags, compression="jpeg")
    done = run_chunkref(chunkref_bin, "index", tif, "-o", tmp_path / "x.json")
    assert done.returncode != 0 and "FillOrder 2" in done.stderr, done.stderr


def test_rpc_tag_fills_the_rpc_domain_like_gdal(tmp_path, chunkref_bin):
    """The RPCCoefficientTag (50844) GDAL writes for RPC metadata is shown
    in the index's RPC domain exactly as GTiff shows it (%.15g)."""
    rpc = {"ERR_BIAS": "0.5", "ERR_RAND": "0.25", "LINE_OFF": "3000.5", "SAMP_OFF": "2000.25",
           "LAT_OFF": "38.123456789", "LONG_OFF": "-77.987654321", "HEIGHT_OFF": "100",
           "LINE_SCALE": "3100", "SAMP_SCALE": "2100", "LAT_SCALE": "0.05",
           "LONG_SCALE": "0.0612345678901234", "HEIGHT_SCALE": "500",
           "LINE_NUM_COEFF": " ".join(str((i + 1) * 1e-3 + 1 / 3) for i in range(20)),
           "LINE_DEN_COEFF": " ".join(["1"] + ["0"] * 19),
           "SAMP_NUM_COEFF": " ".join(str(-(i + 1) * 2.5e-4) for i in range(20)),
           "SAMP_DEN_COEFF": " ".join(["1"] + ["1e-07"] * 19)}
    tif = tmp_path / "rpc.tif"
    ds = gdal.GetDriverByName("GTiff").Create(str(tif), 64, 48, 1)
    ds.SetMetadata(rpc, "RPC")
    ds = None
    assert not list(tmp_path.glob("rpc.*[!f]")), "GDAL wrote a sidecar: the tag is not what is read"
    index_tiff(chunkref_bin, tif, tmp_path / "rpc.json")
    want = gdal.Open(str(tif)).GetMetadata("RPC")
    assert want and open_chunkref(tmp_path / "rpc.json").GetMetadata("RPC") == want


@pytest.mark.parametrize("bits", [2, 4, 8, 12, 16])
def test_min_is_white_greys_like_gdal(tmp_path, chunkref_bin, bits):
    """A MinIsWhite image of 2 to 16 bits: GTiff shows an undefined band
    with a table of 2^bits greys from white to black (chunkref showed a
    grey band without it, a negative in viewers)."""
    dtype, gdal_type = (np.uint16, gdal.GDT_UInt16) if bits > 8 else (np.uint8, gdal.GDT_Byte)
    tif = tmp_path / f"white{bits}.tif"
    options = ["PHOTOMETRIC=MINISWHITE"] + ([] if bits in (8, 16) else [f"NBITS={bits}"])
    ds = gdal.GetDriverByName("GTiff").Create(str(tif), 40, 24, 1, gdal_type, options=options)
    ds.GetRasterBand(1).WriteArray((np.arange(40 * 24).reshape(24, 40) % (1 << bits)).astype(dtype))
    ds = None
    index_tiff(chunkref_bin, tif, tmp_path / "white.json")
    want_ds, got_ds = gdal.Open(str(tif)), open_chunkref(tmp_path / "white.json")
    want, got = want_ds.GetRasterBand(1), got_ds.GetRasterBand(1)
    assert got.GetColorInterpretation() == want.GetColorInterpretation() == gdal.GCI_Undefined
    wt, gt = want.GetColorTable(), got.GetColorTable()
    assert gt is not None and gt.GetCount() == wt.GetCount() == 1 << bits
    assert [gt.GetColorEntry(i) for i in range(gt.GetCount())] == [
        wt.GetColorEntry(i) for i in range(wt.GetCount())]
    np.testing.assert_array_equal(got.ReadAsArray(), want.ReadAsArray())



@pytest.mark.parametrize("predictor", [1, 2, 3])
@pytest.mark.parametrize("tiled", [True, False])
def test_half_floats_read_like_gdal(tmp_path, chunkref_bin, predictor, tiled):
    """16-bit floating-point samples (SampleFormat 3, BitsPerSample 16), as
    GDAL writes a Float32 GTiff with NBITS=16: indexed as ``<f2`` and
    served as GDAL serves it (Float32; Float16 from GDAL 3.11), infinities, NaN, subnormals and values rounded to
    half precision included, with any predictor (chunkref refused them)."""
    values = np.linspace(-65504, 65504, 40 * 24 * 2, dtype=np.float32).reshape(2, 24, 40)
    values[0, 0, :4] = [np.inf, -np.inf, np.nan, 1e-7]
    values[1, 1, :3] = [0.1, -0.0, 65504]
    tif = tmp_path / "half.tif"
    options = ["NBITS=16", "COMPRESS=DEFLATE", f"PREDICTOR={predictor}", "INTERLEAVE=PIXEL"]
    options += ["TILED=YES", "BLOCKXSIZE=16", "BLOCKYSIZE=16"] if tiled else ["BLOCKYSIZE=5"]
    ds = gdal.GetDriverByName("GTiff").Create(str(tif), 40, 24, 2, gdal.GDT_Float32, options=options)
    ds.WriteArray(values)
    ds.GetRasterBand(1).SetNoDataValue(0.1)
    ds = None
    index_tiff(chunkref_bin, tif, tmp_path / "half.json")
    want_ds, got_ds = gdal.Open(str(tif)), open_chunkref(tmp_path / "half.json")
    # Float32 before GDAL 3.11, Float16 from 3.11 (which has the type).
    assert got_ds.GetRasterBand(1).DataType == want_ds.GetRasterBand(1).DataType
    assert gdal.GetDataTypeName(want_ds.GetRasterBand(1).DataType) in ("Float32", "Float16")
    assert [got_ds.GetRasterBand(b).GetNoDataValue() for b in (1, 2)] == [
        want_ds.GetRasterBand(b).GetNoDataValue() for b in (1, 2)]
    want = want_ds.ReadAsArray()
    np.testing.assert_array_equal(got_ds.ReadAsArray(), want)
    np.testing.assert_array_equal(got_ds.ReadAsArray(3, 5, 21, 13), want[:, 5:18, 3:24])


def _ifd0_entries(data: bytes) -> dict[int, tuple[int, int, int, int]]:
    """Tag -> (entry offset, type, count, value field) of IFD 0 of a
    little-endian classic TIFF."""
    assert data[:4] == b"II*\0", "a little-endian classic TIFF"
    (ifd,) = struct.unpack("<I", data[4:8])
    (n,) = struct.unpack("<H", data[ifd : ifd + 2])
    entries = {}
    for at in range(ifd + 2, ifd + 2 + 12 * n, 12):
        tag, kind, count, value = struct.unpack("<HHII", data[at : at + 12])
        entries[tag] = (at, kind, count, value)
    return entries


def _write_gdal_tiff(path: Path, pixels: np.ndarray, *options: str) -> None:
    ds = gdal.GetDriverByName("GTiff").Create(str(path), pixels.shape[1], pixels.shape[0], 1,
                                              options=list(options))
    ds.WriteArray(pixels)
    ds = None


def _patch_ifd0(path: Path, patch) -> None:
    """Rewrites ``path`` with ``patch(data, entries)`` applied in place."""
    data = bytearray(path.read_bytes())
    patch(data, _ifd0_entries(data))
    path.write_bytes(bytes(data))


PIXELS = (np.arange(64 * 48).reshape(48, 64) % 251).astype(np.uint8)


def _rows_per_strip_past_the_image(tif: Path) -> None:
    _write_gdal_tiff(tif, PIXELS, "BLOCKYSIZE=48")

    def patch(data, entries):  # a LONG of 2^32 - 1, what libtiff writes for "one strip"
        at = entries[278][0]
        data[at + 2 : at + 12] = struct.pack("<HII", 4, 1, 2**32 - 1)

    _patch_ifd0(tif, patch)


def _tile_tables_under_strip_tags(tif: Path) -> None:
    _write_gdal_tiff(tif, PIXELS, "TILED=YES", "BLOCKXSIZE=16", "BLOCKYSIZE=16",
                     "COMPRESS=DEFLATE")

    def patch(data, entries):
        for tile_tag, strip_tag in ((324, 273), (325, 279)):
            data[entries[tile_tag][0] : entries[tile_tag][0] + 2] = struct.pack("<H", strip_tag)

    _patch_ifd0(tif, patch)


def _gdal_encoded(rows: np.ndarray, compress: str) -> bytes:
    """``rows`` compressed as one strip by GDAL's GTiff writer (libtiff)."""
    path = "/vsimem/encoded.tif"
    _write_gdal_tiff(path, rows, f"BLOCKYSIZE={rows.shape[0]}", f"COMPRESS={compress}")
    ds = gdal.Open(path)
    band = ds.GetRasterBand(1)
    offset = int(band.GetMetadataItem("BLOCK_OFFSET_0_0", "TIFF"))
    size = int(band.GetMetadataItem("BLOCK_SIZE_0_0", "TIFF"))
    ds = None
    f = gdal.VSIFOpenL(path, "rb")
    gdal.VSIFSeekL(f, offset, 0)
    stored = gdal.VSIFReadL(1, size, f)
    gdal.VSIFCloseL(f)
    gdal.Unlink(path)
    return stored


def _strips_decoding_past_the_strip(tif: Path, compress: str) -> None:
    """Three strips of 16 rows, each stored as 20 rows (encoded by GDAL):
    libtiff decodes what the strip needs and leaves the rest."""
    _write_gdal_tiff(tif, PIXELS, "BLOCKYSIZE=16", f"COMPRESS={compress}")

    def patch(data, entries):
        offsets, counts = [], []
        for strip in range(3):
            rows = np.vstack([PIXELS[16 * strip : 16 * strip + 16], np.full((4, 64), 200, np.uint8)])
            stored = _gdal_encoded(rows, compress) if compress != "NONE" else rows.tobytes()
            offsets.append(len(data))
            counts.append(len(stored))
            data.extend(stored)
        for tag, values in ((273, offsets), (279, counts)):
            _at, kind, count, value = entries[tag]
            form = {3: "<3H", 4: "<3I"}[kind]  # 6 or 12 bytes: out of line
            assert count == 3
            data[value : value + struct.calcsize(form)] = struct.pack(form, *values)

    _patch_ifd0(tif, patch)


def _ifd_chain_looping_back(tif: Path) -> None:
    """IFD 1 (an overview) points back to IFD 0: libtiff stops after it."""
    ds = gdal.GetDriverByName("GTiff").Create(str(tif), 64, 48, 1, options=[
        "TILED=YES", "BLOCKXSIZE=16", "BLOCKYSIZE=16"])
    ds.WriteArray(PIXELS)
    ds.BuildOverviews("NEAREST", [2])
    ds = None
    data = bytearray(tif.read_bytes())
    (first,) = struct.unpack("<I", data[4:8])
    (n,) = struct.unpack("<H", data[first : first + 2])
    (second,) = struct.unpack("<I", data[first + 2 + 12 * n : first + 6 + 12 * n])
    (m,) = struct.unpack("<H", data[second : second + 2])
    data[second + 2 + 12 * m : second + 6 + 12 * m] = struct.pack("<I", first)
    tif.write_bytes(bytes(data))


#: Compressions of the strips that go on past the strip.
LONG_STRIPS = ("DEFLATE", "NONE", "LZW", "PACKBITS", "LZMA", "ZSTD")


@pytest.mark.parametrize("case", ["rows-per-strip", "tiles-under-strip-tags", "ifd-loop",
                                  *(f"long-{c.lower()}-strips" for c in LONG_STRIPS)])
def test_odd_tiff_structures_read_like_gdal(tmp_path, chunkref_bin, case):
    """Structures GDAL's GTiff driver (libtiff) reads that chunkref refused
    or failed to decode: RowsPerStrip past the image, tile tables under the
    Strip tags, strips whose stored data goes on past the strip, an IFD
    chain looping back (the chain ends there, with a warning)."""
    tif = tmp_path / f"{case}.tif"
    {
        "rows-per-strip": _rows_per_strip_past_the_image,
        "tiles-under-strip-tags": _tile_tables_under_strip_tags,
        **{f"long-{c.lower()}-strips": lambda t, c=c: _strips_decoding_past_the_strip(t, c)
           for c in LONG_STRIPS},
        "ifd-loop": _ifd_chain_looping_back,
    }[case](tif)
    done = run_chunkref(chunkref_bin, "index", tif, "-o", tmp_path / "odd.json")
    assert done.returncode == 0, done.stderr
    if case == "ifd-loop":
        assert "points back" in done.stderr and "IFD 1" in done.stderr, done.stderr
    want_ds, got_ds = gdal.Open(str(tif)), open_chunkref(tmp_path / "odd.json")
    np.testing.assert_array_equal(want_ds.ReadAsArray(), PIXELS)
    np.testing.assert_array_equal(got_ds.ReadAsArray(), PIXELS)
    want_band, got_band = want_ds.GetRasterBand(1), got_ds.GetRasterBand(1)
    assert got_band.GetOverviewCount() == want_band.GetOverviewCount()
    for level in range(want_band.GetOverviewCount()):
        np.testing.assert_array_equal(got_band.GetOverview(level).ReadAsArray(),
                                      want_band.GetOverview(level).ReadAsArray())


def _pillow_pages(tif: Path) -> None:
    """Three pages by Pillow: grey, a smaller RGB one, grey again."""
    from PIL import Image

    grey = Image.fromarray(PIXELS)
    rgb = Image.fromarray(np.dstack([PIXELS[:20, :32], PIXELS[:20, :32] // 2, PIXELS[5:25, 1:33]]))
    grey.save(tif, save_all=True, append_images=[rgb, Image.fromarray(255 - PIXELS)],
              compression="tiff_deflate")


def _gdal_appended_pages(tif: Path) -> None:
    """Two georeferenced pages by GDAL (APPEND_SUBDATASET), each followed
    by its overview: GDAL takes both overviews for the first page."""
    for k, (width, height, epsg) in enumerate([(64, 48, 32631), (40, 30, 4326)]):
        src = gdal.GetDriverByName("MEM").Create("", width, height, 1, gdal.GDT_UInt16)
        src.WriteArray((np.arange(width * height).reshape(height, width) * (k + 3)).astype(np.uint16))
        src.SetGeoTransform([1000.0 * (k + 1), 2.0, 0, 5000.0, 0, -2.0])
        srs = gdal.osr.SpatialReference()
        srs.ImportFromEPSG(epsg)
        src.SetProjection(srs.ExportToWkt())
        src.GetRasterBand(1).SetNoDataValue(7 + k)
        src.BuildOverviews("NEAREST", [2])
        options = ["COPY_SRC_OVERVIEWS=YES", "TILED=YES", "BLOCKXSIZE=16", "BLOCKYSIZE=16"]
        gdal.GetDriverByName("GTiff").CreateCopy(
            str(tif), src, options=options + (["APPEND_SUBDATASET=YES"] if k else []))


def _same_raster(got: gdal.Dataset, want: gdal.Dataset, what: str) -> None:
    assert (got.RasterXSize, got.RasterYSize, got.RasterCount) == (
        want.RasterXSize, want.RasterYSize, want.RasterCount), what
    for b in range(1, want.RasterCount + 1):
        gb, wb = got.GetRasterBand(b), want.GetRasterBand(b)
        assert gb.DataType == wb.DataType, what
        assert gb.GetNoDataValue() == wb.GetNoDataValue(), what
        assert gb.GetColorInterpretation() == wb.GetColorInterpretation(), what
    np.testing.assert_array_equal(got.ReadAsArray(), want.ReadAsArray(), what)
    assert got.GetGeoTransform(can_return_null=True) == want.GetGeoTransform(can_return_null=True), what
    got_srs, want_srs = got.GetSpatialRef(), want.GetSpatialRef()
    assert (got_srs is None) == (want_srs is None), what
    if want_srs is not None:
        assert got_srs.IsSame(want_srs), what


@pytest.mark.parametrize("writer", ["pillow", "gdal-append"])
def test_pages_are_subdatasets_like_gdal(tmp_path, chunkref_bin, writer):
    """A multi-page TIFF: GDAL opens the first page (with every overview of
    the file that has its bands) and lists each page as ``GTIFF_DIR:N``;
    the index opens the same and lists its pages in the same order, each
    reading like its ``GTIFF_DIR:N`` (chunkref left later pages out)."""
    tif = tmp_path / "pages.tif"
    {"pillow": _pillow_pages, "gdal-append": _gdal_appended_pages}[writer](tif)
    index_tiff(chunkref_bin, tif, tmp_path / "pages.json")
    want, got = gdal.Open(str(tif)), open_chunkref(tmp_path / "pages.json")
    _same_raster(got, want, "default page")
    want_band, got_band = want.GetRasterBand(1), got.GetRasterBand(1)
    assert got_band.GetOverviewCount() == want_band.GetOverviewCount()
    for level in range(want_band.GetOverviewCount()):
        np.testing.assert_array_equal(got_band.GetOverview(level).ReadAsArray(),
                                      want_band.GetOverview(level).ReadAsArray())
    # GDAL numbers its subdatasets by IFD (1 and 3 when an overview sits
    # between), so Python's GetSubDatasets can stop early: read the domain.
    want_md, got_md = want.GetMetadata("SUBDATASETS"), got.GetMetadata("SUBDATASETS")
    want_names = [v for k, v in sorted(want_md.items(), key=lambda kv: int(kv[0].split("_")[1]))
                  if k.endswith("_NAME")]
    got_names = [v for k, v in sorted(got_md.items(), key=lambda kv: int(kv[0].split("_")[1]))
                 if k.endswith("_NAME")]
    assert len(want_names) > 1 and len(got_names) == len(want_names), (got_md, want_md)
    want_descs = sorted(v for k, v in want_md.items() if k.endswith("_DESC"))
    assert sorted(v for k, v in got_md.items() if k.endswith("_DESC")) == want_descs
    for got_name, want_name in zip(got_names, want_names):
        page = int(want_name.split(":")[1])
        assert got_name.endswith(f":page_{page}"), (got_name, want_name)
        _same_raster(gdal.Open(got_name), gdal.Open(want_name), want_name)
