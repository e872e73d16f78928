"""NITF: ``chunkref index`` on GDAL-written NITF files (IC = NC, C3, M3 and C8,
several image segments, every IMODE, masked blocks with a pad value) read
through ChunkRef with GDAL's NITF driver as the oracle."""

from __future__ import annotations

import json
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest
from osgeo import gdal

import kerchunk_builders as kb
from conftest import run_chunkref
from peer import peer_index
from raster_checks import (
    assert_levels_close,
    assert_matches,
    failure_text,
    native_levels,
    open_chunkref,
)

#: Largest difference accepted between ChunkRef's and GDAL's JPEG decoding:
#: none, both decode with libjpeg-turbo.
JPEG_TOLERANCE = 0

WIDTH, HEIGHT, BLOCK = 300, 200, 128

#: name: (bands, numpy dtype, creation options)
NITF_CASES = {
    "nc-u1-1band": (1, "u1", ()),
    "nc-u1-3band": (3, "u1", ()),
    "nc-u2-2band": (2, "u2", ()),
    "nc-i2-1band": (1, "i2", ()),
    "nc-u4-1band": (1, "u4", ()),
    "nc-i4-2band": (2, "i4", ()),
    "nc-f4-1band": (1, "f4", ()),
    "nc-f8-1band": (1, "f8", ()),
    "c8-u1-3band": (3, "u1", ("IC=C8", "QUALITY=100", "REVERSIBLE=YES")),
    "c8-u2-1band-big": (1, "u2", ("IC=C8", "QUALITY=100", "REVERSIBLE=YES")),
}


def pattern(bands: int, dtype: str, height: int = HEIGHT, width: int = WIDTH) -> np.ndarray:
    y, x = np.mgrid[0:height, 0:width]
    planes = [((x * (b + 2) + y * 3 + (x * y) % 11) % 250).astype(dtype) for b in range(bands)]
    if np.dtype(dtype).kind in "if":
        planes = [(p.astype(dtype) - 100) * (3 if np.dtype(dtype).kind == "f" else 1) for p in planes]
    return np.stack(planes)


def mem_dataset(data: np.ndarray) -> gdal.Dataset:
    bands, height, width = data.shape
    ds = gdal.GetDriverByName("MEM").Create("", width, height, bands, kb.gdal_type_for(data.dtype))
    for b in range(bands):
        ds.GetRasterBand(b + 1).WriteArray(data[b])
    return ds


def write_nitf(path: Path, name: str) -> Path:
    bands, dtype, options = NITF_CASES[name]
    size = (1024, 600) if name.endswith("-big") else (WIDTH, HEIGHT)
    data = pattern(bands, dtype, size[1], size[0])
    options = [f"BLOCKXSIZE={BLOCK}", f"BLOCKYSIZE={BLOCK}", *options]
    gdal.Translate(str(path), mem_dataset(data), format="NITF", creationOptions=options)
    return path


def index(binary: Path, source: Path, out: Path) -> dict:
    done = run_chunkref(binary, "index", source, "-o", out)
    assert done.returncode == 0, f"chunkref index failed:\n{done.stderr}"
    return json.loads(out.read_text())


def assert_reads_like_gdal(index_path: Path, source: Path | str, target: str | None = None) -> None:
    native = gdal.Open(str(source))
    blocks = [tuple(bands[0].GetBlockSize()) for bands in kb.dataset_levels(native)]
    name = f'CHUNKREF:"{index_path}":{target}' if target else index_path
    assert_matches(open_chunkref(name), native_levels(native), blocks)


@pytest.mark.parametrize("name", list(NITF_CASES))
def test_index_reads_like_gdal(tmp_path, chunkref_bin, name):
    source = write_nitf(tmp_path / f"{name}.ntf", name)
    out = tmp_path / f"{name}.json"
    index(chunkref_bin, source, out)
    assert_reads_like_gdal(out, source)


def ramp12(bands: int) -> np.ndarray:
    """12-bit test pixels: ramps over 0..3999 (GDAL 3.6's 12-bit JPEG writer
    corrupts its heap when samples near 4095 clip after the DCT)."""
    ramp = np.arange(HEIGHT * WIDTH).reshape(HEIGHT, WIDTH)
    return np.stack([(ramp * (b + 1)) % 4000 for b in range(bands)]).astype(np.uint16)



#: Writes a NITF in a child process: argv DATA.npy OUT.ntf OPTION...
WRITE_NITF = r"""
import sys
import numpy as np
from osgeo import gdal
data = np.load(sys.argv[1])
mem = gdal.GetDriverByName("MEM").Create("", data.shape[2], data.shape[1], data.shape[0],
                                         gdal.GDT_UInt16)
for b in range(data.shape[0]):
    mem.GetRasterBand(b + 1).WriteArray(data[b])
gdal.Translate(sys.argv[2], mem, format="NITF", creationOptions=sys.argv[3:])
"""


def write_12bit_jpeg_nitf(path: Path, data: np.ndarray, options: list[str]) -> Path:
    """Writes ``data`` as a 12-bit JPEG NITF in one block, in a child
    process: GDAL 3.6's 12-bit JPEG NITF writer corrupts its heap on images
    of several blocks (crashing in most runs, the process that ran it or a
    later call), so only single-block images are a reliable oracle."""
    np.save(path.with_suffix(".npy"), data)
    for _ in range(3):
        done = subprocess.run(
            ["/usr/bin/python3", "-c", WRITE_NITF, str(path.with_suffix(".npy")), str(path),
             *options], capture_output=True, text=True, timeout=120,
        )
        if done.returncode == 0:
            return path
    raise AssertionError(f"GDAL could not write {path.name}: {done.stderr[-500:]}")


@pytest.mark.parametrize("bands", [1, 3])
@pytest.mark.parametrize("ic", ["C3", "M3"])
def test_jpeg_blocks_read_like_gdal_within_tolerance(tmp_path, chunkref_bin, ic, bands):
    source = tmp_path / f"{ic}.ntf"
    options = [f"IC={ic}", f"BLOCKXSIZE={BLOCK}", f"BLOCKYSIZE={BLOCK}", "QUALITY=90"]
    gdal.Translate(str(source), mem_dataset(pattern(bands, "u1")), format="NITF",
                   creationOptions=options)
    out = tmp_path / f"{ic}.json"
    doc = index(chunkref_bin, source, out)
    assert len([k for k in doc["refs"] if k.startswith("0/data/0.")]) == 6, "one chunk per block"
    worst = assert_levels_close(open_chunkref(out), native_levels(gdal.Open(str(source))),
                                JPEG_TOLERANCE)
    print(f"\n{ic} {bands} band(s): max |ChunkRef - GDAL| = {worst}")


@pytest.mark.parametrize("bands", [1, 3])
@pytest.mark.parametrize("ic", ["C3", "M3"])
def test_12bit_jpeg_blocks_read_like_gdal(tmp_path, chunkref_bin, ic, bands):
    """GDAL writes UInt16 images as 12-bit JPEG (NBPP 16); ChunkRef decodes
    them through libjpeg-turbo 3 into UInt16 bands. (Full resolution only
    here: the DCT-scaled overview GDAL offers for a single-block C3 image is
    checked in test_nitf_real_jpeg.py.)"""
    options = [f"IC={ic}", f"BLOCKXSIZE={WIDTH}", f"BLOCKYSIZE={HEIGHT}"]
    source = write_12bit_jpeg_nitf(tmp_path / f"{ic}.ntf", ramp12(bands), options)
    out = tmp_path / f"{ic}.json"
    index(chunkref_bin, source, out)
    ds = open_chunkref(out)
    assert ds.GetRasterBand(1).DataType == gdal.GDT_UInt16
    got = ds.ReadAsArray().astype(np.int32)
    want = gdal.Open(str(source)).ReadAsArray().astype(np.int32)
    assert got.shape == want.shape
    worst = int(np.abs(got - want).max())
    assert worst <= JPEG_TOLERANCE, worst
    print(f"\n12-bit {ic} {bands} band(s): max |ChunkRef - GDAL| = {worst}")


def test_corrupt_12bit_jpeg_block_is_a_clear_error(tmp_path, chunkref_bin):
    source = tmp_path / "c3.ntf"
    write_12bit_jpeg_nitf(source, ramp12(1), ["IC=C3", f"BLOCKXSIZE={WIDTH}", f"BLOCKYSIZE={HEIGHT}"])
    doc = index(chunkref_bin, source, tmp_path / "c3.json")
    key = "0/data/0.0.0"
    offset, length = doc["refs"][key][1:3]
    raw = bytearray(source.read_bytes())
    raw[offset + length // 2 : offset + length] = b"\x00" * (length - length // 2)
    raw[offset + 2 : offset + 40] = b"\xff" * 38  # break the headers too
    source.write_bytes(bytes(raw))
    band_ds = open_chunkref(tmp_path / "c3.json")
    message = failure_text(band_ds.GetRasterBand(1).ReadRaster, 0, 0, WIDTH, HEIGHT)
    assert "JPEG" in message and key in message, message


# --------------------------------------------------------------------------
# IMODE P, R and S, and masked blocks: GDAL writes IMODE B blocks; these
# tests rewrite the image data (and the subheader field) of such a file.
# --------------------------------------------------------------------------


def layout(raw: bytes) -> tuple[int, int, int]:
    """(offset of the image subheader, its length, offset of LI1 in the
    file header) of a single-segment GDAL-written NITF 2.1 file."""
    hl = int(raw[354:360])
    assert int(raw[360:363]) == 1, "one image segment"
    return hl, int(raw[363:369]), 369


def imode_at(subheader: bytes) -> int:
    """Offset of IMODE in a GDAL-written image subheader (no IGEOLO, no
    comments, IC = NC, no LUTs)."""
    nbands = int(subheader[375:376])
    at = 376 + 13 * nbands + 1
    assert subheader[at : at + 1] == b"B", "GDAL writes IMODE B"
    return at


def blocks_b(
    data: bytes, bands: int, size: int, shape: tuple[int, int] = (BLOCK, BLOCK)
) -> list[np.ndarray]:
    """The IMODE B blocks of an image, each (bands, *shape) (shape is (y, x))."""
    per = bands * shape[0] * shape[1] * size
    dtype = np.dtype(f">u{size}")
    return [
        np.frombuffer(data[i : i + per], dtype).reshape(bands, *shape)
        for i in range(0, len(data), per)
    ]


def rewrite(source: Path, out: Path, imode: str) -> Path:
    raw = source.read_bytes()
    hl, lish, _ = layout(raw)
    sub = bytearray(raw[hl : hl + lish])
    data = raw[hl + lish :]
    bands = int(sub[375:376])
    blocks = blocks_b(data, bands, 1)
    if imode == "P":
        new = b"".join(b.transpose(1, 2, 0).tobytes() for b in blocks)
    elif imode == "R":
        new = b"".join(b.transpose(1, 0, 2).tobytes() for b in blocks)
    else:  # S: every block of band 1, then band 2, ...
        new = b"".join(b[band].tobytes() for band in range(bands) for b in blocks)
    sub[imode_at(bytes(sub))] = ord(imode)
    out.write_bytes(raw[:hl] + bytes(sub) + new)
    return out


@pytest.mark.parametrize("imode", ["P", "R", "S"])
def test_every_imode_reads_like_gdal(tmp_path, chunkref_bin, imode):
    source = write_nitf(tmp_path / "b.ntf", "nc-u1-3band")
    changed = rewrite(source, tmp_path / f"{imode}.ntf", imode)
    assert gdal.Open(str(changed)).GetMetadataItem("NITF_IMODE") == imode
    out = tmp_path / f"{imode}.json"
    doc = index(chunkref_bin, changed, out)
    meta = json.loads(doc["refs"]["0/data/.zarray"])
    assert meta["chunks"][0] == (1 if imode == "S" else 3), meta["chunks"]
    assert_reads_like_gdal(out, changed)


def test_masked_blocks_read_as_the_pad_value(tmp_path, chunkref_bin):
    """IC = NM with a block mask: an absent block reads as the pad pixel
    value, which is the nodata value."""
    source = write_nitf(tmp_path / "nc.ntf", "nc-u1-1band")
    raw = bytearray(source.read_bytes())
    hl, lish, li_at = layout(bytes(raw))
    sub = bytearray(raw[hl : hl + lish])
    blocks = blocks_b(bytes(raw[hl + lish :]), 1, 1)
    ic_at = sub.index(b"NC", 372)
    sub[ic_at : ic_at + 2] = b"NM"
    absent, pad = 1, 7
    offsets, data, at = [], b"", 0
    for i, block in enumerate(blocks):
        if i == absent:
            offsets.append(0xFFFFFFFF)
            continue
        offsets.append(at)
        data += block.tobytes()
        at += block.nbytes
    table_len = 4 + 2 + 2 + 2 + 1 + 4 * len(blocks)
    table = struct.pack(">IHHHB", table_len, 4, 0, 8, pad) + struct.pack(
        f">{len(offsets)}I", *offsets
    )
    image = bytes(sub) + table + data
    raw[li_at : li_at + 10] = b"%010d" % (len(table) + len(data))
    head = bytearray(raw[:hl])
    head[342:354] = b"%012d" % (hl + len(image))
    masked = tmp_path / "nm.ntf"
    masked.write_bytes(bytes(head) + image)
    native = gdal.Open(str(masked))
    assert native.GetMetadataItem("NITF_IC") == "NM"
    out = tmp_path / "nm.json"
    doc = index(chunkref_bin, masked, out)
    assert "0/data/0.0.1" not in doc["refs"], "the masked block is not referenced"
    assert_reads_like_gdal(out, masked)
    ds = open_chunkref(out)
    assert ds.GetRasterBand(1).GetNoDataValue() == pad == native.GetRasterBand(1).GetNoDataValue()


# --------------------------------------------------------------------------
# PVTYPE / NBPP pairs GDAL does not write: SI with NBPP 8 (GDAL writes INT
# for signed bytes) and INT / SI with NBPP 64 (GDAL's NITF driver refuses
# them, so the expected pixels are the values written into the blocks).
# --------------------------------------------------------------------------

#: Offset of PVTYPE in a GDAL-written NITF 2.1 image subheader.
PVTYPE_AT = 349


def retyped(source: Path, out: Path, pvtype: str, values: np.ndarray | None = None) -> Path:
    """``source`` (one band, IMODE B) with PVTYPE set to ``pvtype`` and,
    given ``values`` of the same sample size, its blocks rewritten with
    them (big-endian)."""
    raw = bytearray(source.read_bytes())
    hl, lish, _ = layout(bytes(raw))
    raw[hl + PVTYPE_AT : hl + PVTYPE_AT + 3] = pvtype.ljust(3).encode()
    if values is not None:
        rows, cols = -(-HEIGHT // BLOCK), -(-WIDTH // BLOCK)
        padded = np.zeros((rows * BLOCK, cols * BLOCK), values.dtype.newbyteorder(">"))
        padded[:HEIGHT, :WIDTH] = values
        blocks = padded.reshape(rows, BLOCK, cols, BLOCK).transpose(0, 2, 1, 3)
        data = blocks.tobytes()
        assert len(data) == len(raw) - hl - lish
        raw[hl + lish :] = data
    out.write_bytes(bytes(raw))
    return out


def test_signed_bytes_read_like_gdal(tmp_path, chunkref_bin):
    """GDAL reads PVTYPE SI, NBPP 8 as plain (unsigned) bytes, and so does
    ChunkRef."""
    source = retyped(write_nitf(tmp_path / "u1.ntf", "nc-u1-1band"), tmp_path / "si8.ntf", "SI")
    native = gdal.Open(str(source))
    assert native.GetMetadataItem("NITF_PVTYPE") == "SI"
    out = tmp_path / "si8.json"
    index(chunkref_bin, source, out)
    assert_reads_like_gdal(out, source)
    ds = open_chunkref(out)
    assert ds.GetRasterBand(1).GetMetadataItem("PIXELTYPE", "IMAGE_STRUCTURE") is None


@pytest.mark.parametrize("pvtype,dtype", [("INT", "u8"), ("SI", "i8")])
def test_64_bit_integers_read_as_written(tmp_path, chunkref_bin, pvtype, dtype):
    values = pattern(1, "f8")[0].astype(dtype) * (1 << 40) + 12345
    if dtype == "i8":
        values = values - (1 << 50)
    source = retyped(write_nitf(tmp_path / "f8.ntf", "nc-f8-1band"), tmp_path / "int64.ntf",
                     pvtype, values)
    with pytest.raises(RuntimeError):
        gdal.Open(str(source))
    out = tmp_path / "int64.json"
    index(chunkref_bin, source, out)
    assert_matches(open_chunkref(out), [values[np.newaxis]], [(BLOCK, BLOCK)])


# --------------------------------------------------------------------------
# Bit-packed samples (NBPP 1 and 12): GDAL 3.6 cannot write them (its NITF
# driver has no NBITS option), so these tests repack the blocks of a
# GDAL-written 8- or 16-bit file and set NBPP/ABPP in its subheader.
# --------------------------------------------------------------------------

#: Offset of ABPP in a GDAL-written NITF 2.1 image subheader.
ABPP_AT = 368


def pack_bits(values: np.ndarray, nbpp: int) -> bytes:
    """``values`` as one big-endian bit stream of ``nbpp``-bit samples,
    padded to a whole byte."""
    pairs = values.astype(">u2").view(np.uint8).reshape(-1, 2)
    return np.packbits(np.unpackbits(pairs, axis=1)[:, 16 - nbpp :].reshape(-1)).tobytes()


def gdal_12bit(values: np.ndarray) -> np.ndarray:
    """What to store for GDAL 3.6's NITF driver to read ``values`` back:
    it reads each 12-bit sample of the bit stream with its nibbles rotated
    right by four bits (see the jbp-block codec)."""
    return ((values << 4) | (values >> 8)) & 0xFFF


def write_packed(tmp_path: Path, nbpp: int, imode: str, bands: int, block: tuple[int, int]) -> Path:
    """A NITF file of ``bands`` bands of ``nbpp``-bit samples in IMODE
    ``imode`` with blocks of ``block`` (x, y) pixels, whose pixels GDAL
    reads as the test pattern (modulo 2**nbpp)."""
    dtype = "u2" if nbpp > 8 else "u1"
    data = pattern(bands, dtype) % (1 << nbpp)
    base = tmp_path / "base.ntf"
    gdal.Translate(str(base), mem_dataset(data), format="NITF",
                   creationOptions=[f"BLOCKXSIZE={block[0]}", f"BLOCKYSIZE={block[1]}"])
    raw = base.read_bytes()
    hl, lish, li_at = layout(raw)
    sub = bytearray(raw[hl : hl + lish])
    at = imode_at(bytes(sub))
    sub[at : at + 1] = imode.encode()
    sub[at + 17 : at + 19] = b"%02d" % nbpp
    sub[ABPP_AT : ABPP_AT + 2] = b"%02d" % nbpp
    blocks = blocks_b(raw[hl + lish :], bands, int(dtype[1]), (block[1], block[0]))
    stored = [gdal_12bit(b) if nbpp == 12 else b for b in blocks]
    if imode == "S":
        planes = [b[band] for band in range(bands) for b in stored]
    else:
        planes = [b[band] for b in stored for band in range(bands)]
    image = b"".join(pack_bits(plane.reshape(-1), nbpp) for plane in planes)
    head = bytearray(raw[:hl])
    head[li_at : li_at + 10] = b"%010d" % len(image)
    head[342:354] = b"%012d" % (hl + lish + len(image))
    out = tmp_path / f"nbpp{nbpp}-{imode}-{bands}.ntf"
    out.write_bytes(bytes(head) + bytes(sub) + image)
    native = gdal.Open(str(out))
    assert native.GetRasterBand(1).GetMetadataItem("NBITS", "IMAGE_STRUCTURE") == str(nbpp)
    assert np.array_equal(native.ReadAsArray().reshape(data.shape), data), "GDAL reads the pattern"
    return out


#: (NBPP, IMODE, bands, block (x, y)); GDAL 3.6 reads 1-bit images of a
#: single block only.
PACKED_CASES = [
    (12, "B", 1, (BLOCK, BLOCK)),
    (12, "B", 3, (BLOCK, BLOCK)),
    (12, "S", 3, (BLOCK, BLOCK)),
    (12, "R", 1, (BLOCK, BLOCK)),
    (1, "B", 3, (WIDTH + 4, HEIGHT)),
    (1, "S", 2, (WIDTH + 4, HEIGHT)),
]


@pytest.mark.parametrize("nbpp,imode,bands,block", PACKED_CASES)
def test_bit_packed_samples_read_like_gdal(tmp_path, chunkref_bin, nbpp, imode, bands, block):
    source = write_packed(tmp_path, nbpp, imode, bands, block)
    out = tmp_path / "packed.json"
    doc = index(chunkref_bin, source, out)
    meta = json.loads(doc["refs"]["0/data/.zarray"])
    plane = (block[0] * block[1] * nbpp + 7) // 8
    assert doc["refs"]["0/data/0.0.0"][2] == plane * meta["chunks"][0], "packed block length"
    assert_reads_like_gdal(out, source)
    ds = open_chunkref(out)
    assert ds.GetRasterBand(1).GetMetadataItem("NBITS", "IMAGE_STRUCTURE") == str(nbpp)


def test_bit_packed_pixel_interleave_is_refused_like_gdal(tmp_path, chunkref_bin):
    source = write_packed(tmp_path, 12, "B", 3, (BLOCK, BLOCK))
    raw = bytearray(source.read_bytes())
    hl, lish, _ = layout(bytes(raw))
    at = hl + imode_at(bytes(raw[hl : hl + lish]))
    raw[at : at + 1] = b"P"
    source.write_bytes(bytes(raw))
    native = gdal.Open(str(source))
    with pytest.raises(RuntimeError, match="IMODE=P not supported"):
        native.ReadAsArray()
    done = run_chunkref(chunkref_bin, "index", source, "-o", tmp_path / "p.json")
    assert done.returncode != 0
    assert "12-bit samples of 3 bands in IMODE P" in done.stderr, done.stderr


# --------------------------------------------------------------------------
# R-sets: image.ntf.r1, .r2, ... (half-resolution NITF files written beside
# the image) are GDAL's overviews of the image, and ChunkRef's.
# --------------------------------------------------------------------------


def write_rsets(source: Path, bands: int, sizes: list[tuple[int, int]], options=()) -> list[Path]:
    """Companions ``source.r1``, ``.r2``, ... of the given (x, y) sizes, each
    a different pattern (so a level read from the wrong file shows)."""
    paths = []
    for k, (width, height) in enumerate(sizes, start=1):
        path = Path(f"{source}.r{k}")
        data = (pattern(bands, "u1", height, width) + 17 * k).astype("u1")
        gdal.Translate(str(path), mem_dataset(data), format="NITF",
                       creationOptions=[f"BLOCKXSIZE={BLOCK // 2}", f"BLOCKYSIZE={BLOCK // 2}",
                                        *options])
        paths.append(path)
    return paths


@pytest.mark.parametrize("name", ["nc-u1-3band", "c8-u1-3band"])
def test_rsets_are_overviews_like_gdal(tmp_path, chunkref_bin, name):
    source = write_nitf(tmp_path / f"{name}.ntf", name)
    # The first R-set is a pixel larger than half the image each way: GDAL
    # reads it cropped to half the image's size.
    rsets = write_rsets(source, 3, [(WIDTH // 2 + 1, HEIGHT // 2 + 1), (WIDTH // 4, HEIGHT // 4),
                                    (WIDTH // 8, HEIGHT // 8)])
    native = gdal.Open(str(source))
    assert set(map(str, rsets)) <= set(native.GetFileList()), "GDAL finds the R-sets"
    assert native.GetRasterBand(1).GetOverviewCount() == 3
    out = tmp_path / "rsets.json"
    doc = index(chunkref_bin, source, out)
    for level, rset in enumerate(rsets, start=1):
        urls = {v[0] for k, v in doc["refs"].items() if k.startswith(f"{level}/data/0.")}
        assert urls == {str(rset)}, f"level {level} points into {rset.name}"
    ds = open_chunkref(out)
    assert_matches(ds, native_levels(native))


def test_rset_smaller_than_half_the_image_is_an_error(tmp_path, chunkref_bin):
    source = write_nitf(tmp_path / "small.ntf", "nc-u1-1band")
    write_rsets(source, 1, [(WIDTH // 2 - 1, HEIGHT // 2)])
    done = run_chunkref(chunkref_bin, "index", source, "-o", tmp_path / "small.json")
    assert done.returncode != 0
    assert f"{source}.r1" in done.stderr and "smaller than half the image" in done.stderr, done.stderr


# --------------------------------------------------------------------------
# Several image segments
# --------------------------------------------------------------------------


def test_each_image_segment_is_a_subdataset(tmp_path, chunkref_bin):
    source = tmp_path / "multi.ntf"
    first = pattern(1, "u1")
    second = pattern(3, "u1", 90, 150)
    gdal.Translate(str(source), mem_dataset(first), format="NITF",
                   creationOptions=["NUMI=2", f"BLOCKXSIZE={BLOCK}", f"BLOCKYSIZE={BLOCK}"])
    gdal.Translate(str(source), mem_dataset(second), format="NITF",
                   creationOptions=["APPEND_SUBDATASET=YES", "IC=C8", "QUALITY=100",
                                    "REVERSIBLE=YES", "IDLVL=2"])
    subdatasets = gdal.Open(str(source)).GetSubDatasets()
    assert len(subdatasets) == 2, subdatasets
    out = tmp_path / "multi.json"
    index(chunkref_bin, source, out)
    listed = open_chunkref(out).GetSubDatasets()
    assert [name for name, _ in listed] == [
        f'CHUNKREF:"{out}":image_{n}' for n in range(2)
    ], listed
    for n, (gdal_name, _) in enumerate(subdatasets):
        assert_reads_like_gdal(out, gdal_name, f"image_{n}")
    # The file itself opens as its first image, as GDAL's NITF driver opens it.
    assert_reads_like_gdal(out, source)


# --------------------------------------------------------------------------
# Errors and the peer
# --------------------------------------------------------------------------


def test_truncated_nitf_fails_naming_the_file(tmp_path, chunkref_bin):
    source = write_nitf(tmp_path / "t.ntf", "nc-u1-3band")
    raw = source.read_bytes()
    source.write_bytes(raw[: len(raw) // 2])
    done = run_chunkref(chunkref_bin, "index", source, "-o", tmp_path / "t.json")
    assert done.returncode != 0
    assert str(source) in done.stderr and "NITF" in done.stderr, done.stderr


def test_peer_jpeg_index_opens_in_chunkref(tmp_path, peer):
    source = tmp_path / "c3.ntf"
    gdal.Translate(str(source), mem_dataset(pattern(3, "u1")), format="NITF",
                   creationOptions=["IC=C3", f"BLOCKXSIZE={BLOCK}", f"BLOCKYSIZE={BLOCK}"])
    out = tmp_path / "peer.json"
    peer_index(peer, source, out)
    expected = native_levels(gdal.Open(str(source)))[:1]
    assert_levels_close(open_chunkref(out), expected, JPEG_TOLERANCE)


@pytest.mark.parametrize("name", ["nc-u1-3band", "nc-u2-2band", "c8-u1-3band"])
def test_peer_index_opens_in_chunkref(tmp_path, peer, name):
    source = write_nitf(tmp_path / f"{name}.ntf", name)
    out = tmp_path / "peer.json"
    peer_index(peer, source, out)
    native = gdal.Open(str(source))
    block = tuple(native.GetRasterBand(1).GetBlockSize())
    assert_matches(open_chunkref(out), native_levels(native)[:1], [block])
