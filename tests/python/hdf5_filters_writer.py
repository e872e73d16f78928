"""Run by tests/python/test_hdf5_filters.py with the python of its venv
(h5py and hdf5plugin from PyPI), never imported by the test process.

``python hdf5_filters_writer.py OUTDIR`` writes, under OUTDIR:

- ``lzf.h5``: h5py's LZF filter (32000) alone, after shuffle, and between
  shuffle and fletcher32; ``mixed`` and ``mixed_checked`` hold chunks of
  random 32-bit values LZF cannot shrink (stored uncompressed, the LZF
  bit set in their filter mask) next to chunks it compresses;
- ``bitshuffle.h5``: hdf5plugin's Bitshuffle (32008) with LZ4, Zstandard
  and no compression, default and small block sizes, chunks whose element
  count leaves a last short block and a tail;
- ``ambiguous.h5``: an LZF chunk as long as the chunk uncompressed, its
  filter mask clear;
- ``expected/<file>/<dataset>.npy``: every dataset as h5py reads it;
- ``chunks.json``: per file and dataset, each stored chunk's key
  (``y.x``) -> [byte offset, stored size, filter mask] as h5py reports
  them (kerchunk refuses these filters, so this stands in for its ranges).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import h5py
import hdf5plugin  # noqa: F401 (registers the plugin filters with h5py)
import numpy as np


def ramp(dtype: str, shape: tuple[int, ...], seed: int) -> np.ndarray:
    """Deterministic values varying along every axis."""
    rng = np.random.default_rng(seed)
    grid = np.indices(shape).astype(np.float64)
    weights = np.array([1000.0, 37.0, 3.0][-len(shape):]).reshape((-1,) + (1,) * len(shape))
    values = (grid * weights).sum(axis=0) + rng.integers(0, 5, shape)
    return values.astype(dtype)


def half_random(seed: int) -> np.ndarray:
    """40 x 60 ``<u4``: random top rows (LZF cannot shrink them), a ramp below."""
    data = ramp("<u4", (40, 60), seed)
    data[:20] = np.random.default_rng(seed).integers(0, 2**32, (20, 60), dtype=np.uint64)
    return data


def write_lzf(path: Path) -> None:
    with h5py.File(path, "w") as f:
        f.create_dataset("plain", data=ramp("<i2", (40, 60), 1), chunks=(20, 30),
                         compression="lzf")
        f.create_dataset("shuffled", data=ramp("<f4", (40, 60), 2) / 7, chunks=(20, 31),
                         compression="lzf", shuffle=True)
        f.create_dataset("checked", data=ramp(">i4", (40, 60), 3), chunks=(16, 16),
                         compression="lzf", shuffle=True, fletcher32=True)
        f.create_dataset("mixed", data=half_random(4), chunks=(20, 30), compression="lzf")
        f.create_dataset("mixed_checked", data=half_random(5), chunks=(20, 30),
                         compression="lzf", shuffle=True, fletcher32=True)


def write_bitshuffle(path: Path) -> None:
    """hdf5plugin's Bitshuffle: LZ4, Zstandard and no compression, with
    the default block size and small ones (several blocks, a last shorter
    block and a tail of fewer than 8 elements: 20 x 31 = 620 elements)."""
    def bitshuffle(**kwargs):
        return dict(hdf5plugin.Bitshuffle(**kwargs))

    with h5py.File(path, "w") as f:
        f.create_dataset("lz4", data=ramp("<i2", (40, 60), 6), chunks=(20, 31),
                         **bitshuffle(cname="lz4"))
        f.create_dataset("lz4_blocks", data=ramp("<f8", (40, 60), 7) / 3, chunks=(20, 31),
                         **bitshuffle(nelems=64, cname="lz4"))
        f.create_dataset("zstd", data=ramp(">u4", (40, 60), 8), chunks=(20, 31),
                         **bitshuffle(nelems=128, cname="zstd", clevel=5))
        f.create_dataset("none", data=ramp("<f4", (40, 60), 9), chunks=(20, 31),
                         **bitshuffle(nelems=16, cname="none"))
        f.create_dataset("bytes", data=ramp("u1", (3, 40, 60), 10), chunks=(2, 33, 50),
                         **bitshuffle(cname="lz4"))


def write_lz4(path: Path) -> None:
    """hdf5plugin's LZ4 filter (32004): the default block size (one block
    per chunk), small blocks (several, a last shorter one), and random
    bytes LZ4 cannot shrink (blocks stored as they are)."""
    rng = np.random.default_rng(32004)
    with h5py.File(path, "w") as f:
        f.create_dataset("whole", data=ramp("<i2", (40, 60), 11), chunks=(20, 31),
                         **dict(hdf5plugin.LZ4()))
        f.create_dataset("blocks", data=ramp("<f8", (40, 60), 12) / 7, chunks=(20, 31),
                         **dict(hdf5plugin.LZ4(nbytes=1000)))
        f.create_dataset("random", data=rng.integers(0, 256, (40, 60), dtype="u1"),
                         chunks=(20, 30), **dict(hdf5plugin.LZ4(nbytes=256)))


def write_ambiguous(path: Path) -> None:
    """An LZF chunk exactly as long as the chunk, filter mask clear (written
    directly: liblzf could, in principle, make one)."""
    with h5py.File(path, "w") as f:
        dset = f.create_dataset("exact", shape=(4, 4), dtype="u1", chunks=(4, 4),
                                compression="lzf")
        dset.id.write_direct_chunk((0, 0), bytes(range(16)), 0)


def chunk_table(path: Path) -> dict:
    """Each chunked dataset's stored chunks as h5py reports them."""
    out = {}
    with h5py.File(path, "r") as f:
        for name, obj in f.items():
            dsid, table = obj.id, {}
            for i in range(dsid.get_num_chunks()):
                info = dsid.get_chunk_info(i)
                key = ".".join(str(o // c) for o, c in zip(info.chunk_offset, obj.chunks))
                table[key] = [info.byte_offset, info.size, info.filter_mask]
            out[name] = table
    return out


def save_expected(path: Path, out: Path) -> None:
    out.mkdir(parents=True)
    with h5py.File(path, "r") as f:
        for name, obj in f.items():
            np.save(out / f"{name}.npy", obj[()])


def main(outdir: Path) -> None:
    outdir.mkdir(parents=True, exist_ok=True)
    writers = {"lzf.h5": write_lzf, "bitshuffle.h5": write_bitshuffle, "lz4.h5": write_lz4}
    chunks = {}
    for name, write in writers.items():
        write(outdir / name)
        save_expected(outdir / name, outdir / "expected" / name)
        chunks[name] = chunk_table(outdir / name)
    (outdir / "chunks.json").write_text(json.dumps(chunks))
    write_ambiguous(outdir / "ambiguous.h5")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
