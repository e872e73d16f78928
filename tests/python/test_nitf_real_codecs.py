"""NITF compressions real producers write and GDAL 3.6 reads, indexed by
``chunkref index`` and read through ChunkRef with GDAL's NITF driver as the
oracle (issue 28):

- IC = C8 whose image data is a JP2 file (signature, ``ftyp``, ``jp2h``,
  ``jp2c`` boxes) rather than a bare codestream, as the JITC ``*_jp2.ntf``
  files hold: GDAL writes the NITF, our splicing code wraps its codestream
  in a JP2 file and fixes the length fields;
- IC = C4 / M4 vector quantisation of RPF products (CADRG, CIB), which GDAL
  cannot write: a small RPF-style NITF written here byte by byte (location
  table in an RPFIMG extension, compression lookup tables, colour map,
  subframes, NITF and RPF mask tables).
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest
from osgeo import gdal

from conftest import run_chunkref
from raster_checks import assert_matches, native_levels, open_chunkref

gdal.UseExceptions()


def index(binary: Path, source: Path, out: Path) -> dict:
    done = run_chunkref(binary, "index", source, "-o", out)
    assert done.returncode == 0, f"chunkref index failed:\n{done.stderr}"
    return json.loads(out.read_text())


def assert_reads_like_gdal(index_path: Path, source: Path) -> gdal.Dataset:
    """Pixels of every level, block sizes, colour interpretation, colour
    table and nodata of every band as GDAL's NITF driver reads ``source``."""
    native = gdal.OpenEx(str(source), allowed_drivers=["NITF"])
    ours = open_chunkref(index_path)
    blocks = [tuple(native.GetRasterBand(1).GetBlockSize())]
    band = native.GetRasterBand(1)
    blocks += [tuple(band.GetOverview(i).GetBlockSize()) for i in range(band.GetOverviewCount())]
    assert_matches(ours, native_levels(native), blocks)
    for b in range(1, native.RasterCount + 1):
        theirs, mine = native.GetRasterBand(b), ours.GetRasterBand(b)
        assert mine.GetColorInterpretation() == theirs.GetColorInterpretation(), f"band {b} colour"
        assert mine.GetNoDataValue() == theirs.GetNoDataValue(), f"band {b} nodata"
        want, got = theirs.GetColorTable(), mine.GetColorTable()
        assert (got is None) == (want is None), f"band {b} colour table presence"
        if want is not None:
            entries = lambda t: [t.GetColorEntry(i) for i in range(t.GetCount())]  # noqa: E731
            assert entries(got) == entries(want), f"band {b} colour table"
    return native


# --------------------------------------------------------------------------
# IC = C8 with a JP2 file as image data
# --------------------------------------------------------------------------

WIDTH, HEIGHT = 300, 200


def pattern(bands: int, dtype: str = "u1") -> np.ndarray:
    y, x = np.mgrid[0:HEIGHT, 0:WIDTH]
    return np.stack([((x * (b + 2) + y * 3 + (x * y) % 11) % 250) for b in range(bands)]).astype(
        dtype
    )


def write_c8(path: Path, data: np.ndarray, options: list[str]) -> Path:
    bands, height, width = data.shape
    kind = gdal.GDT_Byte if data.dtype == np.uint8 else gdal.GDT_UInt16
    mem = gdal.GetDriverByName("MEM").Create("", width, height, bands, kind)
    for b in range(bands):
        mem.GetRasterBand(b + 1).WriteArray(data[b])
    gdal.Translate(
        str(path), mem, format="NITF", creationOptions=["IC=C8", "QUALITY=100", *options]
    )
    return path


def box(kind: bytes, payload: bytes) -> bytes:
    return struct.pack(">I", 8 + len(payload)) + kind + payload


def jp2_file(codestream: bytes, width: int, height: int, bands: int, bits: int, enumcs: int) -> bytes:
    """A minimal JP2 file around ``codestream``: signature, file type,
    header (image header, enumerated colour space) and codestream boxes."""
    ihdr = box(b"ihdr", struct.pack(">IIHBBBB", height, width, bands, bits - 1, 7, 0, 0))
    colr = box(b"colr", struct.pack(">BBBI", 1, 0, 0, enumcs))
    return (
        box(b"jP  ", b"\r\n\x87\n")
        + box(b"ftyp", b"jp2 \0\0\0\0jp2 ")
        + box(b"jp2h", ihdr + colr)
        + box(b"jp2c", codestream)
    )


def wrap_codestream_in_jp2(source: Path, target: Path, enumcs: int, blank_ireps: bool) -> Path:
    """Copies the single-segment NITF ``source`` to ``target`` with the
    segment's codestream wrapped in a JP2 file, the file length (FL) and
    image data length (LI1) fixed; ``blank_ireps`` blanks every IREPBANDn
    (GDAL then takes the JP2 header's colours)."""
    f = bytearray(source.read_bytes())
    hl, lish, li = int(f[354:360]), int(f[363:369]), int(f[369:379])
    assert int(f[360:363]) == 1, "one image segment expected"
    sub = f[hl : hl + lish]
    rows, cols = int(sub[333:341]), int(sub[341:349])
    bands = 0
    # IREPBANDn of GDAL's subheaders: 2 characters, ISUBCAT, IFC 'N', IMFLT, NLUTS 0.
    at = 0
    while (at := sub.find(b"      N   0", at)) >= 0:
        if blank_ireps:
            sub[at - 2 : at] = b"  "
        bands += 1
        at += 11
    f[hl : hl + lish] = sub
    start = hl + lish
    codestream = bytes(f[start : start + li])
    bits = (codestream[42] & 0x7F) + 1  # Ssiz of the first component
    jp2 = jp2_file(codestream, cols, rows, bands, bits, enumcs)
    out = f[:start] + jp2 + f[start + li :]
    out[369:379] = b"%010d" % len(jp2)
    out[342:354] = b"%012d" % len(out)
    target.write_bytes(bytes(out))
    return target


#: name: (bands, dtype, creation options, JP2 enumerated colour space, blank IREPBANDs)
JP2_CASES = {
    "rgb": (3, "u1", ["IREP=RGB"], 16, False),
    "mono-u2": (1, "u2", [], 17, False),
    "blank-ireps-srgb": (3, "u1", ["IREP=MULTI"], 16, True),
    "blank-ireps-grey": (3, "u1", ["IREP=MULTI"], 17, True),
    "tiled-overviews": (3, "u1", ["IREP=RGB", "BLOCKXSIZE=128", "BLOCKYSIZE=128"], 16, False),
}


@pytest.mark.parametrize("name", list(JP2_CASES))
def test_c8_jp2_file_reads_like_gdal(tmp_path, chunkref_bin, name):
    bands, dtype, options, enumcs, blank = JP2_CASES[name]
    raw = write_c8(tmp_path / "raw.ntf", pattern(bands, dtype), options)
    source = wrap_codestream_in_jp2(raw, tmp_path / f"{name}.ntf", enumcs, blank)
    data = source.read_bytes()
    assert b"jp2c" in data and b"jp2h" in data
    index(chunkref_bin, source, tmp_path / f"{name}.json")
    native = assert_reads_like_gdal(tmp_path / f"{name}.json", source)
    # The JP2 wrapping changes nothing GDAL reads but the colours.
    assert np.array_equal(native.ReadAsArray(), gdal.Open(str(raw)).ReadAsArray())


def test_c8_jp2_file_without_codestream_box_is_refused(tmp_path, chunkref_bin):
    raw = write_c8(tmp_path / "raw.ntf", pattern(1), [])
    source = wrap_codestream_in_jp2(raw, tmp_path / "broken.ntf", 17, False)
    data = bytearray(source.read_bytes())
    at = data.find(b"jp2c")
    data[at : at + 4] = b"junk"
    source.write_bytes(bytes(data))
    done = run_chunkref(chunkref_bin, "index", source, "-o", tmp_path / "broken.json")
    assert done.returncode != 0
    assert "no contiguous codestream box (jp2c)" in done.stderr, done.stderr


# --------------------------------------------------------------------------
# IC = C4 / M4: RPF vector quantisation
# --------------------------------------------------------------------------

SUBFRAME = 256
CODED = 6144
#: RPF location IDs (MIL-STD-2411).
LOOKUP, COLOR_GRAY, COLORMAP, MASK, SPATIAL = 132, 134, 135, 138, 140


def field(value, width: int) -> bytes:
    text = value if isinstance(value, bytes) else str(value).encode()
    if isinstance(value, int):
        text = str(value).zfill(width).encode()
    assert len(text) <= width, (value, width)
    return text.ljust(width, b" ")


def file_header(segment_lengths: list[tuple[int, int]], total: int) -> bytes:
    """A NITF 2.1 file header with the given (LISH, LI) image segments."""
    head = b"NITF02.10" + b"03" + b"BF01" + field(b"CHUNKREF", 10) + b"20240101000000"
    head += field(b"VQ TEST", 80) + b"U" + b" " * (2 + 11 + 2 + 20 + 2 + 8 + 4 + 1 + 8 + 43 + 1 + 40 + 1 + 8 + 15)
    head += b"00000" + b"00000" + b"0" + b"\0\0\0" + b" " * 24 + b" " * 18
    assert len(head) == 342
    numi = b"%03d" % len(segment_lengths) + b"".join(
        b"%06d%010d" % pair for pair in segment_lengths
    )
    rest = numi + b"000" + b"000" + b"000" + b"000" + b"000" + b"00000" + b"00000"
    hl = 342 + 12 + 6 + len(rest)
    return head + b"%012d" % total + b"%06d" % hl + rest


def image_subheader(
    rows: int, cols: int, ic: bytes, lut: np.ndarray, tre: bytes, blocks: tuple[int, int]
) -> bytes:
    """An image subheader of one 8-bit band with a 3-table LUT, IMODE B,
    256 x 256 blocks and the extensions ``tre``."""
    sub = b"IM" + field(b"CADRG", 10) + b"20240101000000" + b" " * 17 + b" " * 80 + b"U"
    sub += b" " * (2 + 11 + 2 + 20 + 2 + 8 + 4 + 1 + 8 + 43 + 1 + 40 + 1 + 8 + 15)
    sub += b"0" + b" " * 42
    assert len(sub) == 333
    sub += b"%08d%08d" % (rows, cols) + b"INT" + field(b"RGB/LUT", 8) + field(b"MAP", 8)
    sub += b"08" + b"R" + b" " + b"0" + ic + b"0.75" + b"1"
    sub += b"LU" + b" " * 6 + b"N" + b"   " + b"3" + b"%05d" % lut.shape[1]
    sub += lut.astype(np.uint8).tobytes()
    sub += b"0" + b"B" + b"%04d%04d" % blocks + b"0256" + b"0256" + b"08"
    sub += b"001" + b"000" + b"0000000000" + b"1.0 " + b"00000"
    extensions = b"RPFIMG" + b"%05d" % len(tre) + tre
    sub += b"%05d" % (len(extensions) + 3) + b"000" + extensions
    return sub


def location_section(locations: list[tuple[int, int, int]]) -> bytes:
    """The RPF location section: a 14-byte header and (ID, size, offset)
    records of 10 bytes."""
    records = b"".join(struct.pack(">HII", *loc) for loc in locations)
    return struct.pack(">HIHHI", 14 + len(records), 14, len(locations), 10, 0) + records


def lookup_subsection(codebook: np.ndarray) -> bytes:
    """The compression lookup subsection: offset table of 4 records, then
    4 tables of 4096 rows of 4 bytes (table t is row t of each kernel)."""
    records = b"".join(
        struct.pack(">HIHHI", t + 1, 4096, 4, 8, 6 + 4 * 14 + t * 4096 * 4) for t in range(4)
    )
    return struct.pack(">IH", 6, 14) + records + codebook.astype(np.uint8).tobytes()


def colormap_subsection(colors: np.ndarray) -> tuple[bytes, bytes]:
    """The colour/grey section subheader (one offset record) and the colour
    map subsection holding ``colors`` as 216 RGBM entries."""
    section = bytes([1, 0]) + b" " * 12
    record = struct.pack(">HIBHII", 2, len(colors), 4, 4, 6 + 17, 0)
    rgbm = np.concatenate([colors, np.zeros((len(colors), 1), np.uint8)], axis=1)
    return section, struct.pack(">IH", 6, 17) + record + rgbm.astype(np.uint8).tobytes()


def encode_subframe(codes: np.ndarray) -> bytes:
    """64 x 64 12-bit codes, two in three bytes, row by row."""
    flat = codes.reshape(-1, 2).astype(np.uint32)
    out = np.empty((flat.shape[0], 3), np.uint8)
    out[:, 0] = flat[:, 0] >> 4
    out[:, 1] = ((flat[:, 0] & 0xF) << 4) | (flat[:, 1] >> 8)
    out[:, 2] = flat[:, 1] & 0xFF
    return out.tobytes()


def decode_subframe(codes: np.ndarray, codebook: np.ndarray) -> np.ndarray:
    """What a subframe decodes to: kernel rows from the four tables."""
    out = np.empty((SUBFRAME, SUBFRAME), np.uint8)
    for t in range(4):
        rows = codebook[t].reshape(4096, 4)[codes]  # (64, 64, 4)
        out[t::4, :] = rows.reshape(64, SUBFRAME)
    return out


def write_vq_nitf(
    path: Path,
    ic: bytes,
    blocks: tuple[int, int],
    absent: frozenset[int] = frozenset(),
    pad: int | None = None,
    rpf_mask: bool = False,
    lut_entries: int = 216,
    seed: int = 5,
) -> tuple[Path, np.ndarray]:
    """Writes an RPF-style VQ NITF of ``blocks`` (across, down) subframes;
    returns its path and the pixels the codes decode to (absent subframes
    zero). IC = M4 gets a NITF mask table (``absent`` subframes marked,
    ``pad`` as its 8-bit pad pixel); ``rpf_mask`` adds an RPF mask
    subsection marking the same subframes."""
    rng = np.random.default_rng(seed)
    across, down = blocks
    count = across * down
    codebook = rng.integers(0, 216, (4, 4096 * 4), dtype=np.uint8)
    lut = rng.integers(0, 256, (3, lut_entries), dtype=np.uint8)
    colors = rng.integers(0, 256, (216, 3), dtype=np.uint8)
    codes = [rng.integers(0, 4096, (64, 64)) for _ in range(count)]
    frames = [encode_subframe(c) for c in codes]

    present = [i for i in range(count) if i not in absent]
    offsets = {i: k * CODED for k, i in enumerate(present)}
    table = [offsets.get(i, 0xFFFFFFFF) for i in range(count)]
    nitf_mask = b""
    if ic == b"M4":
        pad_bits = 8 if pad is not None else 0
        nitf_mask = struct.pack(">IHHH", 0, 4, 0, pad_bits)
        nitf_mask += bytes([pad]) if pad is not None else b""
        nitf_mask += b"".join(struct.pack(">I", o) for o in table)
    rpf_mask_bytes = b""
    if rpf_mask:
        rpf_mask_bytes = struct.pack(">HHH", 4, 0, 0) + b"".join(struct.pack(">I", o) for o in table)
    lookup = lookup_subsection(codebook)
    section, colormap = colormap_subsection(colors)
    spatial = b"".join(frames[i] for i in present)

    def layout(data_start: int) -> tuple[bytes, bytes]:
        # Image data: [NITF mask] [RPF mask] lookup, colour section, colour
        # map, then the spatial data (IMDATOFF points at it).
        parts = [nitf_mask, rpf_mask_bytes, lookup, section, colormap]
        at = data_start
        where = []
        for p in parts:
            where.append(at)
            at += len(p)
        spatial_at = at
        locs = [
            (LOOKUP, len(lookup), where[2]),
            (COLOR_GRAY, len(section), where[3]),
            (COLORMAP, len(colormap), where[4]),
            (SPATIAL, len(spatial), spatial_at),
        ]
        if rpf_mask:
            locs.append((MASK, len(rpf_mask_bytes), where[1]))
        data = bytearray(b"".join(parts) + spatial)
        if ic == b"M4":
            data[0:4] = struct.pack(">I", spatial_at - data_start)
        return location_section(locs), bytes(data)

    rows, cols = down * SUBFRAME, across * SUBFRAME
    tre, data = layout(0)
    sub = image_subheader(rows, cols, ic, lut, tre, blocks)
    head = file_header([(len(sub), len(data))], 0)
    tre, data = layout(len(head) + len(sub))
    sub = image_subheader(rows, cols, ic, lut, tre, blocks)
    total = len(head) + len(sub) + len(data)
    head = file_header([(len(sub), len(data))], total)
    path.write_bytes(head + sub + data)

    pixels = np.zeros((rows, cols), np.uint8)
    for i in present:
        r, c = divmod(i, across)
        pixels[r * SUBFRAME : (r + 1) * SUBFRAME, c * SUBFRAME : (c + 1) * SUBFRAME] = (
            decode_subframe(codes[i], codebook)
        )
    return path, pixels


#: name: write_vq_nitf arguments
VQ_CASES = {
    "c4": dict(ic=b"C4", blocks=(3, 2)),
    "c4-rpf-mask": dict(ic=b"C4", blocks=(2, 2), absent=frozenset({1}), rpf_mask=True),
    "m4-absent-pad": dict(ic=b"M4", blocks=(3, 2), absent=frozenset({0, 4}), pad=100),
    "m4-rpf-mask-217": dict(
        ic=b"M4", blocks=(2, 3), absent=frozenset({5}), rpf_mask=True, lut_entries=217
    ),
}


@pytest.mark.parametrize("name", list(VQ_CASES))
def test_vq_reads_like_gdal(tmp_path, chunkref_bin, name):
    source, pixels = write_vq_nitf(tmp_path / f"{name}.ntf", **VQ_CASES[name])
    native = gdal.OpenEx(str(source), allowed_drivers=["NITF"])
    assert native.GetMetadataItem("COMPRESSION", "IMAGE_STRUCTURE") == "VECTOR QUANTIZATION"
    nodata = native.GetRasterBand(1).GetNoDataValue()
    expected = pixels.copy()
    absent = VQ_CASES[name].get("absent", frozenset())
    across = VQ_CASES[name]["blocks"][0]
    for i in absent:
        r, c = divmod(i, across)
        expected[r * SUBFRAME : (r + 1) * SUBFRAME, c * SUBFRAME : (c + 1) * SUBFRAME] = nodata
    # Our writer is what we think it is: GDAL decodes the expected pixels.
    assert np.array_equal(native.ReadAsArray(), expected)
    refs = index(chunkref_bin, source, tmp_path / f"{name}.json")["refs"]
    chunks = [k for k in refs if not k.split("/")[-1].startswith(".")]
    assert len(chunks) == across * VQ_CASES[name]["blocks"][1] - len(absent)
    assert_reads_like_gdal(tmp_path / f"{name}.json", source)


def test_vq_without_lookup_tables_is_refused(tmp_path, chunkref_bin):
    source, _ = write_vq_nitf(tmp_path / "nolut.ntf", ic=b"C4", blocks=(1, 1))
    data = bytearray(source.read_bytes())
    # The lookup subsection's location record loses its ID.
    at = data.find(struct.pack(">HI", LOOKUP, 6 + 4 * 14 + 4 * 4096 * 4))
    assert at > 0
    data[at : at + 2] = struct.pack(">H", 999)
    source.write_bytes(bytes(data))
    done = run_chunkref(chunkref_bin, "index", source, "-o", tmp_path / "nolut.json")
    assert done.returncode != 0
    assert "compression lookup" in done.stderr, done.stderr


def test_file_without_image_segment_is_refused(tmp_path, chunkref_bin):
    # JITC's graphics and text samples (U_1060A.NTF, ns3051v.nsf, ...): GDAL
    # opens them as a 1 x 1 dataset without bands.
    source = tmp_path / "no-image.ntf"
    source.write_bytes(file_header([], len(file_header([], 0))))
    gdal.PushErrorHandler("CPLQuietErrorHandler")
    try:
        native = gdal.Open(str(source))
    finally:
        gdal.PopErrorHandler()
    assert native.RasterCount == 0
    done = run_chunkref(chunkref_bin, "index", source, "-o", tmp_path / "i.json")
    assert done.returncode != 0
    assert "has no image segment" in done.stderr, done.stderr
    assert "no pixels to index" in done.stderr, done.stderr
