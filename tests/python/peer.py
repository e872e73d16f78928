"""The Python peer, osml-imagery-io 0.2.x, run from a throwaway virtual
environment for the interoperability tests (test_peer.py).

The environment lives in ``<repo>/build/peer-venv`` (made and reused by
:func:`venvs.ensure_venv`).

The peer's API, as found in osml-imagery-io 0.2.2:

- ``aws.osml.io.virtualizarr_parsers.OversightMLParser()`` takes no
  arguments; calling it with a path or URL, ``parser(url)``, returns a
  VirtualiZarr ``ManifestStore`` (chunk references point at ``url``, which
  must be absolute).  It reads only headers, through fsspec range reads.
- ``write_tile_index(store, "x.json", zarr_format=2|3,
  template_base="{{base}}" | url_overrides={...})`` writes Kerchunk JSON v1
  (``.parquet`` for Kerchunk Parquet).
- ``aws.osml.io.multi_reference_fs.MultiReferenceFileSystem(fo=index,
  template_overrides={"base": dir}, ...)`` is fsspec's ReferenceFileSystem
  plus multi-range references; wrap it in
  ``zarr.storage._fsspec.FsspecStore(fs=fs, read_only=True, path="")`` and
  ``zarr.open_group(store, mode="r", zarr_format=2|3)``; the pyramid levels
  are ``root["N/data"]``.
- The codecs (tiff-tile, jpeg, jpeg2000, jbp-block, dted) register
  themselves through the ``numcodecs.codecs`` and ``zarr.codecs`` entry
  points of the installed distribution; no import is needed.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

from venvs import ensure_venv, venv_dir

#: What is installed: the peer with the extras its indexer (virtualizarr)
#: and reader stack (zarr 3, fsspec, pyarrow; numpy comes with the peer) need.
PEER_REQUIREMENTS = ("osml-imagery-io[virtualizarr,zarr]>=0.2,<0.3", "fsspec", "numpy")


@dataclass(frozen=True)
class Peer:
    """The peer's virtual environment."""

    venv: Path

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    def run(
        self, script: str, *args: str | Path, timeout: float = 600
    ) -> subprocess.CompletedProcess:
        """Run ``script`` (Python source) in the venv with ``args``; it must
        succeed."""
        done = subprocess.run(
            [str(self.python), "-c", script, *map(str, args)],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        assert done.returncode == 0, (
            f"peer script failed (exit {done.returncode}) with args {list(map(str, args))}:\n"
            f"{done.stderr[-4000:]}{done.stdout[-2000:]}"
        )
        return done

    def version(self) -> str:
        done = self.run("import importlib.metadata as m; print(m.version('osml-imagery-io'))")
        return done.stdout.strip()


_CHECK_SCRIPT = (
    "import aws.osml.io.virtualizarr_parsers, aws.osml.io.multi_reference_fs, "
    "zarr, fsspec, numpy, zarr.storage._fsspec"
)


def ensure_peer(venv: Path) -> Peer:
    """Create or reuse the peer's venv at ``venv``; skip only when PyPI is
    unreachable, fail on any other problem."""
    ensure_venv(venv, PEER_REQUIREMENTS, _CHECK_SCRIPT, "the peer osml-imagery-io")
    return Peer(venv_dir(venv))


# --------------------------------------------------------------------------
# Scripts run inside the venv
# --------------------------------------------------------------------------

#: argv: SOURCE OUT.json ZARR_FORMAT TEMPLATE(0|1).  Prints JSON with the
#: seconds spent parsing and writing (interpreter start-up and imports
#: excluded) and the seconds spent importing.
INDEX_SCRIPT = r"""
import json, sys, time
t0 = time.perf_counter()
from aws.osml.io.virtualizarr_parsers import OversightMLParser, write_tile_index
t1 = time.perf_counter()
source, out, zarr_format, template = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1"
store = OversightMLParser()(source)
kwargs = {"template_base": "{{base}}"} if template else {}
write_tile_index(store, out, zarr_format=zarr_format, **kwargs)
t2 = time.perf_counter()
print(json.dumps({"seconds": t2 - t1, "import_seconds": t1 - t0}))
"""

#: argv: INDEX.json OUTDIR [BASE].  Opens the index with
#: MultiReferenceFileSystem + zarr (v2 or v3, detected from the keys), reads
#: every level of the root multiscales layout (``N/data``) fully and saves
#: it as OUTDIR/level<N>.npy.  Prints JSON with the levels' shapes/dtypes.
READ_SCRIPT = r"""
import json, sys
from pathlib import Path
import numpy as np
import zarr
from aws.osml.io.multi_reference_fs import MultiReferenceFileSystem
from zarr.storage._fsspec import FsspecStore

index, outdir = sys.argv[1], Path(sys.argv[2])
kwargs = {"template_overrides": {"base": sys.argv[3]}} if len(sys.argv) > 3 else {}
with open(index) as f:
    doc = json.load(f)
refs = doc.get("refs", doc)
zarr_format = 3 if "zarr.json" in refs else 2
fs = MultiReferenceFileSystem(
    fo=index, asynchronous=True, remote_protocol="file",
    remote_options={"asynchronous": True}, skip_instance_cache=True, **kwargs,
)
store = FsspecStore(fs=fs, read_only=True, path="")
root = zarr.open_group(store, mode="r", zarr_format=zarr_format)
layout = root.attrs["multiscales"]["layout"]
report = []
for n, level in enumerate(layout):
    array = root[level["asset"] + "/data"]
    data = np.asarray(array[...])
    np.save(outdir / f"level{n}.npy", data)
    report.append({"asset": level["asset"], "shape": list(data.shape), "dtype": str(data.dtype)})
print(json.dumps(report))
"""


def peer_index(
    peer: Peer, source: Path, out: Path, zarr_format: int = 2, template: bool = False
) -> float:
    """The peer indexes ``source`` (an absolute path) into ``out``; returns
    the seconds it spent parsing and writing."""
    done = peer.run(INDEX_SCRIPT, source.resolve(), out, zarr_format, int(template))
    return json.loads(done.stdout.strip().splitlines()[-1])["seconds"]


def peer_read_levels(peer: Peer, index: Path, outdir: Path, base: str | None = None) -> list:
    """Every level of ``index`` as the peer's stack reads it (numpy arrays,
    level 0 first)."""
    import numpy as np

    outdir.mkdir(parents=True, exist_ok=True)
    args = [index, outdir] + ([base] if base is not None else [])
    done = peer.run(READ_SCRIPT, *args)
    report = json.loads(done.stdout.strip().splitlines()[-1])
    return [np.load(outdir / f"level{n}.npy") for n in range(len(report))]
