"""The Python peer, osml-imagery-io 0.2.x, run from a throwaway virtual
environment for the interoperability tests (test_peer.py).

The environment lives in ``<repo>/build/peer-venv`` and is reused between
runs (a marker file records the requirement it was built for).  It is made
with the first ``python3`` on PATH that has ``venv`` and ``ensurepip`` (the
pyenv interpreter here; Debian's /usr/bin/python3 may lack them).

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
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

#: What is installed: the peer with the extras its indexer (virtualizarr)
#: and reader stack (zarr 3, fsspec, pyarrow; numpy comes with the peer) need.
PEER_REQUIREMENTS = ("osml-imagery-io[virtualizarr,zarr]>=0.2,<0.3", "fsspec", "numpy")

#: Fragments of pip output that mean "PyPI could not be reached" (the only
#: failure that skips instead of failing).
NETWORK_ERRORS = (
    "NewConnectionError",
    "Failed to establish a new connection",
    "Temporary failure in name resolution",
    "Name or service not known",
    "Network is unreachable",
    "No route to host",
    "Connection refused",
    "ConnectTimeoutError",
    "ReadTimeoutError",
    "Read timed out",
    "connection timed out",
    "ProxyError",
    "Could not fetch URL",
    "Max retries exceeded",
)


def _has_venv(python: str) -> bool:
    done = subprocess.run(
        [python, "-c", "import venv, ensurepip"], capture_output=True, text=True, timeout=60
    )
    return done.returncode == 0


def base_python() -> str:
    """The first ``python3`` on PATH able to create a virtual environment
    (with pip), else this interpreter if it can; fails otherwise."""
    candidates = []
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        candidate = Path(directory) / "python3"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            candidates.append(str(candidate))
    candidates.append(sys.executable)
    for candidate in dict.fromkeys(candidates):
        if _has_venv(candidate):
            return candidate
    pytest.fail(f"no python3 with the venv and ensurepip modules among {candidates}")


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


def _pip_failure(what: str, done: subprocess.CompletedProcess) -> None:
    text = done.stdout + done.stderr
    hit = next((e for e in NETWORK_ERRORS if e.lower() in text.lower()), None)
    if hit is not None:
        pytest.skip(f"PyPI is unreachable ({hit}); cannot install the peer osml-imagery-io:\n"
                    f"{text[-1500:]}")
    pytest.fail(f"{what} failed (exit {done.returncode}):\n{text[-4000:]}")


def ensure_peer(venv: Path) -> Peer:
    """Create or reuse the peer's venv at ``venv``; skip only when PyPI is
    unreachable, fail on any other problem."""
    peer = Peer(venv)
    marker = venv / ".chunkref-peer-ready"
    wanted = "\n".join(PEER_REQUIREMENTS)
    if marker.exists() and marker.read_text() == wanted and peer.python.exists():
        check = subprocess.run(
            [str(peer.python), "-c", _CHECK_SCRIPT], capture_output=True, timeout=300
        )
        if check.returncode == 0:
            return peer
    if not peer.python.exists():
        if venv.exists():
            shutil.rmtree(venv)
        venv.parent.mkdir(parents=True, exist_ok=True)
        made = subprocess.run(
            [base_python(), "-m", "venv", str(venv)], capture_output=True, text=True, timeout=600
        )
        assert made.returncode == 0, f"python3 -m venv {venv} failed:\n{made.stderr}{made.stdout}"
    pip = [str(peer.python), "-m", "pip", "--disable-pip-version-check"]
    done = subprocess.run(
        [*pip, "install", "--retries", "1", "--timeout", "20", *PEER_REQUIREMENTS],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if done.returncode != 0:
        _pip_failure("pip install " + " ".join(PEER_REQUIREMENTS), done)
    check = subprocess.run([str(peer.python), "-c", _CHECK_SCRIPT], capture_output=True, text=True)
    assert check.returncode == 0, f"the peer is installed but does not import:\n{check.stderr}"
    marker.write_text(wanted)
    return peer


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
