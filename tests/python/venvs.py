"""Throwaway virtual environments under ``<repo>/build/`` for test helpers
installed from PyPI (the Python peer, the moto S3 server).

An environment is reused between runs (a marker file records the
requirements it was built for).  It is made with the first ``python3`` on
PATH that has ``venv`` and ``ensurepip`` (the pyenv interpreter here;
Debian's /usr/bin/python3 may lack them).  Only an unreachable PyPI skips
the tests that need it; any other failure fails them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Sequence

import pytest

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


def _pip_failure(what: str, done: subprocess.CompletedProcess) -> None:
    text = done.stdout + done.stderr
    hit = next((e for e in NETWORK_ERRORS if e.lower() in text.lower()), None)
    if hit is not None:
        pytest.skip(f"PyPI is unreachable ({hit}); cannot install {what}:\n{text[-1500:]}")
    pytest.fail(f"pip install of {what} failed (exit {done.returncode}):\n{text[-4000:]}")


def venv_dir(venv: Path) -> Path:
    """Where the venv named ``venv`` lives: there, or its namesake under
    ``$CHUNKREF_VENVS`` when that is set (scripts/gdal-matrix.sh gives each
    Debian root its own: a venv belongs to the interpreter that made it)."""
    home = os.environ.get("CHUNKREF_VENVS")
    return Path(home) / venv.name if home else venv


def ensure_venv(
    venv: Path,
    requirements: Sequence[str],
    check_script: str,
    what: str,
    system_python: str | None = None,
) -> Path:
    """Create or reuse the venv at ``venv`` holding ``requirements`` (which
    ``check_script`` must import); return its python.  Skips only when PyPI
    is unreachable.  With ``system_python`` (e.g. Debian's /usr/bin/python3)
    the venv is made from that interpreter with ``--system-site-packages``,
    so its Debian packages (rasterio linked to the system GDAL) stay visible.
    ``venv`` is moved by :func:`venv_dir`."""
    venv = venv_dir(venv)
    python = venv / "bin" / "python"
    marker = venv / ".chunkref-venv-ready"
    wanted = "\n".join(requirements)
    if system_python is not None:
        wanted += f"\n# --system-site-packages from {system_python}"
    if marker.exists() and marker.read_text() == wanted and python.exists():
        check = subprocess.run([str(python), "-c", check_script], capture_output=True, timeout=300)
        if check.returncode == 0:
            return python
    cfg = venv / "pyvenv.cfg"
    if system_python is not None and python.exists() and (
        not cfg.exists() or "include-system-site-packages = true" not in cfg.read_text()
    ):
        shutil.rmtree(venv)  # made without the system packages: start again
    if not python.exists():
        if venv.exists():
            shutil.rmtree(venv)
        venv.parent.mkdir(parents=True, exist_ok=True)
        made = subprocess.run(
            [system_python or base_python(), "-m", "venv", str(venv)]
            + (["--system-site-packages"] if system_python is not None else []),
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert made.returncode == 0, f"python3 -m venv {venv} failed:\n{made.stderr}{made.stdout}"
    pip = [str(python), "-m", "pip", "--disable-pip-version-check"]
    done = subprocess.run(
        [*pip, "install", "--retries", "1", "--timeout", "20", *requirements],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if done.returncode != 0:
        _pip_failure(what, done)
    check = subprocess.run([str(python), "-c", check_script], capture_output=True, text=True)
    assert check.returncode == 0, f"{what} is installed but does not import:\n{check.stderr}"
    marker.write_text(wanted)
    return python


#: The kerchunk writers (HDF5/NetCDF4 and TIFF) and the stack that reads
#: their references, pinned together in one venv (kerchunk 0.2.10 needs
#: zarr 3; tifffile and imagecodecs are the newest for Python 3.11).
KERCHUNK_REQUIREMENTS = [
    "kerchunk==0.2.10",
    "zarr==3.1.6",
    "numcodecs==0.16.6",
    "fsspec==2026.9.0",
    "h5py==3.16.0",
    "netCDF4==1.7.5.1.post1",
    "cftime==1.6.6.1",
    "xarray==2026.9.0",
    "numpy==2.4.6",
    "pandas==3.1.1",
    "fastparquet==2026.9.0",
    "ujson==6.1.0",
    "tifffile==2026.3.3",
    "imagecodecs==2026.3.6",
]
KERCHUNK_CHECK = (
    "import kerchunk.hdf, kerchunk.combine, kerchunk.df, kerchunk.tiff, netCDF4, h5py, xarray, "
    "zarr, fastparquet, tifffile, imagecodecs.numcodecs"
)


def kerchunk_python() -> Path:
    """The python of ``build/hdf5-venv``, holding :data:`KERCHUNK_REQUIREMENTS`."""
    repo = Path(__file__).resolve().parents[2]
    return ensure_venv(repo / "build" / "hdf5-venv", KERCHUNK_REQUIREMENTS, KERCHUNK_CHECK,
                       "kerchunk, tifffile, imagecodecs, h5py, netCDF4, xarray and zarr")


#: icechunk 1.x with VirtualiZarr (and kerchunk for its to_kerchunk), the
#: venv of tests/python/test_icechunk.py and tests/wheel/test_foreign_stores.py.
ICECHUNK1_REQUIREMENTS = [
    "icechunk==1.1.21",
    "zarr==3.1.6",
    "numpy==2.4.6",
    "virtualizarr[hdf]==2.5.1",
    "kerchunk==0.2.10",
    "fastparquet==2026.9.0",
    "pandas==3.1.1",
    "fsspec==2026.9.0",
    "ujson==6.1.0",
    "h5py==3.16.0",
    "netCDF4==1.7.5.1.post1",
    "xarray==2026.9.0",
    "hdf5plugin==7.1.0",
]
#: The newest icechunk that installs on Python 3.11, writing spec 2.
ICECHUNK2_REQUIREMENTS = ["icechunk==2.0.0a4", "zarr==3.1.6", "numpy==2.4.6"]


#: pystac (catalogues), rustac (``rustac serve``, a STAC API; STAC-GeoParquet
#: writing) and pyarrow: the venv of tests/python/test_stac.py and the STAC
#: rows of tests/bench/timeseries_bench.py.
STAC_REQUIREMENTS = ["pystac==1.15.2", "rustac==0.9.18", "pyarrow==26.0.1"]
STAC_CHECK = "import pystac, rustac, pyarrow"


def stac_python() -> Path:
    """The python of ``build/stac-venv``, holding :data:`STAC_REQUIREMENTS`."""
    repo = Path(__file__).resolve().parents[2]
    return ensure_venv(repo / "build" / "stac-venv", STAC_REQUIREMENTS, STAC_CHECK,
                       "pystac, rustac and pyarrow")
