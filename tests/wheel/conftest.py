"""pytest set-up for the tests of the `chunkref` wheel.

They run in a venv holding the wheel and packages from PyPI (made by
scripts/test-wheel.sh), with no GDAL in the process: GDAL, the oracle, is
asked through tests/wheel/gdal_oracle.py run by Debian's python3, which
makes the sources with GDAL's writers and dumps what GDAL's native drivers
and the ChunkRef plugin (``GDAL_DRIVER_PATH``) show.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
ORACLE = ["/usr/bin/python3", str(HERE / "gdal_oracle.py")]
#: The venv's console script: the engine's command shipped in the wheel.
CHUNKREF = str(Path(sys.executable).parent / "chunkref")

sys.path.insert(0, str(REPO / "tests" / "python"))  # servers.py, venvs.py


def _plugin_env() -> dict[str, str]:
    path = os.environ.get("GDAL_DRIVER_PATH", str(REPO / "build" / "gdalplugins"))
    assert (Path(path) / "gdal_ChunkRef.so").exists(), (
        f"the ChunkRef plugin is not in {path}: run gdal_plugin/install.sh build/gdalplugins"
    )
    return {**os.environ, "GDAL_DRIVER_PATH": path}


def run(*args: str, **kw) -> subprocess.CompletedProcess:
    """Runs a command, failing the test with its output when it fails."""
    p = subprocess.run(list(args), capture_output=True, text=True, timeout=600, **kw)
    assert p.returncode == 0, f"{' '.join(args)} failed:\n{p.stdout}\n{p.stderr}"
    return p


@dataclass
class Shown:
    """What GDAL shows of a dataset (see gdal_oracle.dump)."""

    meta: dict
    levels: list[np.ndarray]


def gdal_shows(name: str, out: Path, driver: str | None = None,
               oo: dict[str, str] | None = None) -> Shown:
    """Dumps ``name`` through GDAL (``driver`` only, if given)."""
    args = [*ORACLE, "dump", name, str(out)]
    if driver:
        args += ["--driver", driver]
    for k, v in (oo or {}).items():
        args += ["--oo", f"{k}={v}"]
    run(*args, env=_plugin_env())
    with np.load(out) as z:
        meta = json.loads(str(z["meta"]))
        levels = [z[f"level_{i}"] for i in range(len(meta.get("levels", [])))]
    return Shown(meta, levels)


def make_sources(kind: str, root: Path) -> Path:
    """The sources of fixture ``kind`` written by GDAL under ``root``."""
    run(*ORACLE, "make", kind, str(root))
    return root


@pytest.fixture(scope="session")
def chunkref_command() -> str:
    assert shutil.which(CHUNKREF), f"{CHUNKREF} is missing: is the wheel installed?"
    return CHUNKREF


#: kind -> (sources under its directory, extra `chunkref index` arguments,
#: whether GDAL's native driver opens the one source as the same raster).
KINDS = {
    "tiff-deflate": (["src.tif"], [], True),
    "tiff-lzw-int16": (["src.tif"], [], True),
    "tiff-zstd-float": (["src.tif"], [], True),
    "tiff-jpeg-rgb": (["src.tif"], [], True),
    "tiff-palette-strips": (["src.tif"], [], True),
    "cog-webp": (["src.tif"], [], True),
    "nitf-nc": (["src.ntf"], [], True),
    "nitf-c3": (["src.ntf"], [], True),
    "nitf-c8": (["src.ntf"], [], True),
    "jp2-tiles": (["src.jp2"], [], True),
    "j2k-interleaved": (["interleaved.j2k"], [], True),
    "tiff-lzma": (["src.tif"], [], True),
    "nitf-m3": (["src.ntf"], [], True),
    "dted-mosaic": (["e010_n50.dt1", "e011_n50.dt1"], [], False),
    "dted": (["src.dt1"], [], True),
    "netcdf4": (["src.nc"], [], False),
    "netcdf3": (["src.nc"], [], False),
    "grib2": (["src.grb2"], [], True),
    "zarr-v2": (["src.zarr"], [], True),
    # (Zarr v3: GDAL 3.6 writes only the v3 draft, which chunkref refuses;
    # final v3 stores are read in tests/python/test_zarr*.py through the plugin.)
    "stack": (["sst_20240101.tif", "sst_20240102.tif", "sst_20240105.tif"],
              ["--stack", "--datetime-from-name"], False),
    "mosaic": (["a.tif", "b.tif"], ["--mosaic"], False),
}


@pytest.fixture(scope="session")
def indexed(tmp_path_factory, chunkref_command):
    """kind -> (directory, index path), made once per kind."""
    made: dict[str, tuple[Path, Path]] = {}

    def get(kind: str, suffix: str = ".json") -> tuple[Path, Path]:
        if (kind, suffix) not in made:
            root = make_sources(kind, tmp_path_factory.mktemp(kind))
            sources, args, _ = KINDS[kind]
            index = root / f"index{suffix}"
            run(chunkref_command, "index", *args, *[str(root / s) for s in sources],
                "-o", str(index))
            made[(kind, suffix)] = (root, index)
        return made[(kind, suffix)]

    return get
