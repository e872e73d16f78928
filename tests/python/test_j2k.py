"""JPEG 2000 (.j2k codestreams and .jp2 files): ``chunkref index`` and the
``jpeg2000`` codec against GDAL's JP2OpenJPEG driver.

Every source is written by GDAL (or by ``opj_compress``), indexed by
``chunkref index``, and read through ChunkRef at full resolution and at each
resolution level GDAL shows as an overview; pixels must be identical.  The
interleaved-tile-part case reorders an ``opj_compress -TP R`` codestream so
tiles' parts alternate: its chunks must become multi-range references, and
only a fetch of each range on its own (concatenated in order) yields a valid
tile, so identical pixels show the ranges were fetched separately.
"""

from __future__ import annotations

import base64
import json
import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from osgeo import gdal

import kerchunk_builders as kb
from conftest import run_chunkref
from peer import peer_index
from raster_checks import assert_matches, native_levels, open_chunkref


@dataclass(frozen=True)
class J2kCase:
    """A GDAL-written JPEG 2000 file: bands, numpy dtype, size, tile size and
    JP2OpenJPEG creation options (``CODEC=J2K`` makes a raw codestream)."""

    bands: int
    dtype: str
    size: tuple[int, int]
    tile: int
    options: tuple[str, ...]
    suffix: str = ".j2k"


LOSSLESS = ("REVERSIBLE=YES", "QUALITY=100")

J2K_CASES: dict[str, J2kCase] = {
    "j2k-rpcl-3band": J2kCase(3, "u1", (300, 200), 128, ("PROGRESSION=RPCL", "RESOLUTIONS=3")),
    "j2k-lrcp-1band-6res": J2kCase(1, "u1", (1100, 700), 256, ("RESOLUTIONS=6",)),
    "jp2-rpcl-3band": J2kCase(3, "u1", (520, 390), 256, ("PROGRESSION=RPCL",), ".jp2"),
    "jp2-single-tile": J2kCase(1, "u1", (333, 222), 512, ("RESOLUTIONS=3",), ".jp2"),
    "j2k-u2-12bit": J2kCase(1, "u2", (300, 300), 128, ("NBITS=12", "RESOLUTIONS=3")),
    "j2k-u2-2band": J2kCase(2, "u2", (260, 130), 64, ("RESOLUTIONS=2",)),
    "j2k-i2": J2kCase(1, "i2", (200, 200), 128, ()),
    "j2k-tlm-tileparts": J2kCase(
        3, "u1", (400, 300), 128, ("TLM=YES", "TILEPARTS=RESOLUTIONS", "PROGRESSION=RPCL")
    ),
    "jp2-irreversible": J2kCase(3, "u1", (300, 200), 128, ("QUALITY=50", "REVERSIBLE=NO"), ".jp2"),
}


def pattern(bands: int, height: int, width: int, dtype: str) -> np.ndarray:
    """Smooth gradients with some texture, compressible but not trivial."""
    y, x = np.mgrid[0:height, 0:width]
    out = []
    for b in range(bands):
        v = (x * (b + 1) + y * 2 + (x * y) % (7 + b)) % 251
        if dtype == "u2":
            v = v * 16 + (x % 13)
        if dtype == "i2":
            v = v * 8 - 1000
        out.append(v.astype(dtype))
    return np.stack(out)


def write_j2k(path: Path, case: J2kCase) -> Path:
    width, height = case.size
    data = pattern(case.bands, height, width, case.dtype)
    mem = gdal.GetDriverByName("MEM").Create(
        "", width, height, case.bands, kb.gdal_type_for(np.dtype(case.dtype))
    )
    for b in range(case.bands):
        mem.GetRasterBand(b + 1).WriteArray(data[b])
    options = [f"BLOCKXSIZE={case.tile}", f"BLOCKYSIZE={case.tile}"]
    if case.suffix == ".j2k":
        options.append("CODEC=J2K")
    if "REVERSIBLE=NO" not in case.options:
        options += LOSSLESS
    gdal.Translate(
        str(path), mem, format="JP2OpenJPEG", creationOptions=options + list(case.options)
    )
    return path


def index(binary: Path, source: Path, out: Path) -> dict:
    done = run_chunkref(binary, "index", source, "-o", out)
    assert done.returncode == 0, f"chunkref index failed:\n{done.stderr}"
    return json.loads(out.read_text())


def native_blocks(ds: gdal.Dataset) -> list[tuple[int, int]]:
    return [tuple(bands[0].GetBlockSize()) for bands in kb.dataset_levels(ds)]


def assert_reads_like_gdal(index_path: Path, source: Path) -> None:
    native = gdal.Open(str(source))
    assert_matches(open_chunkref(index_path), native_levels(native), native_blocks(native))


@pytest.mark.parametrize("name", list(J2K_CASES))
def test_index_reads_like_gdal(tmp_path, chunkref_bin, name):
    case = J2K_CASES[name]
    source = write_j2k(tmp_path / f"{name}{case.suffix}", case)
    out = tmp_path / f"{name}.json"
    refs = index(chunkref_bin, source, out)["refs"]
    meta = json.loads(refs["0/data/.zarray"])
    assert meta["filters"][0]["id"].endswith("/codecs/jpeg2000")
    assert_reads_like_gdal(out, source)
    nbits = [
        ds.GetRasterBand(1).GetMetadataItem("NBITS", "IMAGE_STRUCTURE")
        for ds in (gdal.Open(str(source)), open_chunkref(out))
    ]
    assert nbits[1] == nbits[0], f"NBITS: ChunkRef {nbits[1]}, GDAL {nbits[0]}"


# --------------------------------------------------------------------------
# Interleaved tile-parts (opj_compress -TP R, reordered)
# --------------------------------------------------------------------------


def tile_parts(codestream: bytes) -> tuple[bytes, list[tuple[int, int, bytes]]]:
    """Main header and (tile, part index, bytes) of every tile-part."""
    at = codestream.index(b"\xff\x90")
    header, parts = codestream[:at], []
    while codestream[at : at + 2] == b"\xff\x90":
        _, _, tile, length, part, _ = struct.unpack(">HHHIBB", codestream[at : at + 12])
        parts.append((tile, part, codestream[at : at + length]))
        at += length
    assert codestream[at:] == b"\xff\xd9", "codestream should end with EOC"
    return header, parts


def interleaved_j2k(tmp_path: Path, resolutions: int = 4) -> Path:
    """An RPCL codestream with one tile-part per resolution, reordered so
    that all tiles' first parts come first, then all second parts, ..."""
    data = pattern(3, 300, 260, "u1")
    tif = tmp_path / "in.tif"
    mem = gdal.GetDriverByName("GTiff").Create(str(tif), 260, 300, 3, gdal.GDT_Byte)
    for b in range(3):
        mem.GetRasterBand(b + 1).WriteArray(data[b])
    mem = None
    plain = tmp_path / "plain.j2k"
    subprocess.run(
        ["opj_compress", "-i", tif, "-o", plain, "-t", "64,64", "-n", str(resolutions),
         "-TP", "R", "-p", "RPCL"],
        check=True, capture_output=True,
    )
    header, parts = tile_parts(plain.read_bytes())
    assert {p[1] for p in parts} == set(range(resolutions)), "tile-parts split by resolution"
    parts.sort(key=lambda p: (p[1], p[0]))
    out = tmp_path / "interleaved.j2k"
    out.write_bytes(header + b"".join(p[2] for p in parts) + b"\xff\xd9")
    return out


def test_interleaved_tile_parts_become_multi_range_references(tmp_path, chunkref_bin):
    source = interleaved_j2k(tmp_path)
    out = tmp_path / "interleaved.json"
    refs = index(chunkref_bin, source, out)["refs"]
    levels = kb.dataset_levels(gdal.Open(str(source)))
    for level in range(len(levels)):
        chunks = {k: v for k, v in refs.items() if k.startswith(f"{level}/data/0.")}
        assert chunks, f"level {level} has no chunks"
        for key, ref in chunks.items():
            assert isinstance(ref[1], list), f"{key}: {ref} is not a multi-range reference"
            # Level r needs the parts of resolutions 0 .. 3 - r only.
            assert len(ref[1]) == 4 - level, f"{key}: {len(ref[1])} ranges at level {level}"
    assert_reads_like_gdal(out, source)


# --------------------------------------------------------------------------
# Sub-sampled components (opj_compress from raw planes): GDAL's JP2OpenJPEG
# reads 8-bit YCbCr 4:2:0 as RGB and refuses any other sub-sampling.
# --------------------------------------------------------------------------


def subsampled_j2k(path: Path, size: tuple[int, int], factors: list[tuple[int, int]]) -> Path:
    """An 8-bit codestream of one component per (dx, dy) in ``factors``,
    tiles of 128, three resolution levels."""
    width, height = size
    planes = []
    for c, (dx, dy) in enumerate(factors):
        h, w = -(-height // dy), -(-width // dx)
        planes.append(pattern(1, h, w, "u1")[0] // (c + 1) + 40 * c)
    raw = path.with_suffix(".raw")
    raw.write_bytes(b"".join(p.tobytes() for p in planes))
    sampling = ":".join(f"{dx}x{dy}" for dx, dy in factors)
    subprocess.run(
        ["opj_compress", "-i", raw, "-o", path, "-F", f"{width},{height},{len(factors)},8,u@{sampling}",
         "-t", "128,128", "-n", "3"],
        check=True, capture_output=True,
    )
    return path


def test_ycbcr420_reads_as_rgb_like_gdal(tmp_path, chunkref_bin):
    # 300 x 200 in tiles of 128: the edge tiles are 44 x 72 pixels.
    source = subsampled_j2k(tmp_path / "420.j2k", (300, 200), [(1, 1), (2, 2), (2, 2)])
    native = gdal.OpenEx(str(source), allowed_drivers=["JP2OpenJPEG"])
    assert native.GetRasterBand(1).GetOverviewCount() == 2
    out = tmp_path / "420.json"
    index(chunkref_bin, source, out)
    assert_reads_like_gdal(out, source)


@pytest.mark.parametrize(
    "size,factors",
    [((300, 200), [(1, 1), (2, 1)]), ((301, 200), [(1, 1), (2, 2), (2, 2)])],
    ids=["two-components-2x1", "420-odd-width"],
)
def test_other_subsampling_is_refused_like_gdal(tmp_path, chunkref_bin, size, factors):
    source = subsampled_j2k(tmp_path / "422.j2k", size, factors)
    with pytest.raises(RuntimeError):
        gdal.OpenEx(str(source), allowed_drivers=["JP2OpenJPEG"])
    done = run_chunkref(chunkref_bin, "index", source, "-o", tmp_path / "422.json")
    assert done.returncode != 0
    assert str(source) in done.stderr and "sub-sampled components" in done.stderr, done.stderr


# --------------------------------------------------------------------------
# Images whose origin is not (0, 0) (opj_compress -d, tiles placed by -T)
# --------------------------------------------------------------------------


def offset_j2k(path: Path, tile_origin: str, tile_size: str) -> Path:
    """260 x 300 pixels at (150, 300) on the reference grid, tiles of
    ``tile_size`` from ``tile_origin``, three resolution levels."""
    tif = path.with_suffix(".tif")
    data = pattern(3, 300, 260, "u1")
    mem = gdal.GetDriverByName("GTiff").Create(str(tif), 260, 300, 3, gdal.GDT_Byte)
    for b in range(3):
        mem.GetRasterBand(b + 1).WriteArray(data[b])
    mem = None
    subprocess.run(["opj_compress", "-i", tif, "-o", path, "-d", "150,300", "-T", tile_origin,
                    "-t", tile_size, "-n", "3"], check=True, capture_output=True)
    return path


def test_offset_image_in_one_tile_reads_like_gdal(tmp_path, chunkref_bin):
    """The tile grid starts at (0, 0), the image at (150, 300), as in
    openjpeg-data's Bretagne2_4.j2k: one tile holding the whole image is
    one chunk, and every level reads as GDAL reads it."""
    source = offset_j2k(tmp_path / "one.j2k", "0,0", "420,620")
    index(chunkref_bin, source, tmp_path / "one.json")
    assert_reads_like_gdal(tmp_path / "one.json", source)


def test_offset_image_in_one_column_of_tiles_reads_like_gdal(tmp_path, chunkref_bin):
    """Tiles from column 0 and the image's row: one column of tiles, each a
    full-width block. GDAL reports the tile width (420) as its block width,
    wider than the image; the pixels are compared."""
    source = offset_j2k(tmp_path / "column.j2k", "0,300", "420,64")
    index(chunkref_bin, source, tmp_path / "column.json")
    assert_matches(open_chunkref(tmp_path / "column.json"), native_levels(gdal.Open(str(source))))


def test_offset_image_cut_into_partial_tiles_is_refused_like_gdal(tmp_path, chunkref_bin):
    """Tiles from (100, 250) over an image at (150, 300): the first row and
    column of tiles are cut short, no regular grid of chunks; GDAL's
    JP2OpenJPEG driver fails to read it too."""
    source = offset_j2k(tmp_path / "many.j2k", "100,250", "64,64")
    with pytest.raises(RuntimeError):
        gdal.Open(str(source)).ReadAsArray()
    done = run_chunkref(chunkref_bin, "index", source, "-o", tmp_path / "many.json")
    assert done.returncode != 0
    assert str(source) in done.stderr and "not aligned" in done.stderr, done.stderr


# --------------------------------------------------------------------------
# Bad codestreams: clear errors, no crash inside OpenJPEG
# --------------------------------------------------------------------------


def read_error(index_path: Path) -> str:
    """The error GDAL raises reading every pixel of the index."""
    ds = open_chunkref(index_path)
    with pytest.raises(RuntimeError) as failure:
        ds.ReadAsArray()
    return str(failure.value)


def small_case(tmp_path: Path, chunkref_bin: Path) -> tuple[Path, Path, dict]:
    source = write_j2k(tmp_path / "small.j2k", J2K_CASES["j2k-rpcl-3band"])
    out = tmp_path / "small.json"
    return source, out, index(chunkref_bin, source, out)


def test_truncated_tile_part_is_a_clear_error(tmp_path, chunkref_bin):
    _, out, doc = small_case(tmp_path, chunkref_bin)
    url, offset, length = doc["refs"]["0/data/0.0.1"]
    doc["refs"]["0/data/0.0.1"] = [url, offset, length - 100]
    out.write_text(json.dumps(doc))
    message = read_error(out)
    assert "0/data/0.0.1" in message and "claims" in message, message


def test_lying_tile_part_length_is_a_clear_error(tmp_path, chunkref_bin):
    source, out, doc = small_case(tmp_path, chunkref_bin)
    _, offset, length = doc["refs"]["0/data/0.1.0"]
    raw = bytearray(source.read_bytes())
    struct.pack_into(">I", raw, offset + 6, length + 5000)
    source.write_bytes(bytes(raw))
    message = read_error(out)
    assert "0/data/0.1.0" in message and "claims" in message, message


def test_wrong_main_header_is_a_clear_error(tmp_path, chunkref_bin):
    _, out, doc = small_case(tmp_path, chunkref_bin)
    meta = json.loads(doc["refs"]["0/data/.zarray"])
    header = bytearray(base64.b64decode(meta["filters"][0]["main_header"]))
    header[2:4] = b"\xff\x5c"  # SIZ becomes QCD: the header has no SIZ
    meta["filters"][0]["main_header"] = base64.b64encode(bytes(header)).decode()
    doc["refs"]["0/data/.zarray"] = json.dumps(meta)
    out.write_text(json.dumps(doc))
    with pytest.raises(RuntimeError, match="main_header"):
        open_chunkref(out).ReadAsArray()


def test_garbage_packets_never_crash(tmp_path, chunkref_bin):
    """Entropy-coded garbage is OpenJPEG's to judge: the read returns (an
    error or pixels) and the process survives."""
    source, out, doc = small_case(tmp_path, chunkref_bin)
    _, offset, length = doc["refs"]["0/data/0.0.0"]
    raw = bytearray(source.read_bytes())
    rng = np.random.default_rng(7)
    raw[offset + 14 : offset + length] = rng.integers(0, 256, length - 14, dtype=np.uint8).tobytes()
    source.write_bytes(bytes(raw))
    ds = open_chunkref(out)
    try:
        ds.ReadAsArray()
    except RuntimeError as e:
        assert "0/data/0.0.0" in str(e)


def test_not_jpeg2000_fails_naming_the_file(tmp_path, chunkref_bin):
    bad = tmp_path / "bad.jp2"
    bad.write_bytes(b"\x00\x00\x00\x0cjP  \r\n\x87\n" + b"\x00" * 20)
    done = run_chunkref(chunkref_bin, "index", bad, "-o", tmp_path / "bad.json")
    assert done.returncode != 0
    assert str(bad) in done.stderr and "JPEG 2000" in done.stderr, done.stderr


# --------------------------------------------------------------------------
# Peer-written indexes
# --------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["j2k-rpcl-3band", "jp2-rpcl-3band", "j2k-u2-2band"])
def test_peer_index_opens_in_chunkref(tmp_path, peer, name):
    case = J2K_CASES[name]
    source = write_j2k(tmp_path / f"{name}{case.suffix}", case)
    out = tmp_path / "peer.json"
    peer_index(peer, source, out)
    native = gdal.Open(str(source))
    expected = native_levels(native)[:1]  # the peer indexes full resolution only
    assert_matches(open_chunkref(out), expected, native_blocks(native)[:1])
