"""pytest set-up for the ChunkRef end-to-end tests.

Every test needs the ChunkRef plugin, found through GDAL_DRIVER_PATH; when it
is missing the tests fail (they do not skip) with instructions.  Tests marked
``builders_only`` check the fixture builders themselves and run without it.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from osgeo import gdal

import kerchunk_builders as kb

gdal.UseExceptions()
gdal.AllRegister()

BUILD_HINT = (
    "Build and install the plugin, then point GDAL_DRIVER_PATH at it:\n"
    "    cargo build --release && gdal_plugin/install.sh <dir>\n"
    "    GDAL_DRIVER_PATH=<dir> /usr/bin/python3 -m pytest tests/python"
)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "builders_only: checks the test builders; does not need the ChunkRef driver"
    )


@pytest.fixture(scope="session")
def chunkref_driver() -> gdal.Driver:
    """The registered ChunkRef driver; fails the test if it is absent."""
    path = os.environ.get("GDAL_DRIVER_PATH")
    assert path, "GDAL_DRIVER_PATH is not set: GDAL cannot find gdal_ChunkRef.so.\n" + BUILD_HINT
    driver = gdal.GetDriverByName("ChunkRef")
    plugin = os.path.join(path, "gdal_ChunkRef.so")
    assert driver is not None, (
        f"GDAL has no ChunkRef driver (GDAL_DRIVER_PATH={path!r}, "
        f"{plugin} {'exists' if os.path.exists(plugin) else 'does not exist'}).\n" + BUILD_HINT
    )
    return driver


@pytest.fixture(autouse=True)
def _require_driver(request: pytest.FixtureRequest) -> None:
    """Make every test depend on :func:`chunkref_driver` unless it is
    marked ``builders_only``."""
    if request.node.get_closest_marker("builders_only") is None:
        request.getfixturevalue("chunkref_driver")


@pytest.fixture
def simple_store(tmp_path: Path) -> kb.Store:
    """:func:`kerchunk_builders.write_simple_store` under tmp_path/src."""
    return kb.write_simple_store(tmp_path / "src")


#: The repository root (tests/python/ is two levels below it).
REPO_ROOT = Path(__file__).resolve().parents[2]

CHUNKREF_BIN_HINT = (
    "Build the index builder (or point CHUNKREF_BIN at it):\n"
    "    cargo build --release    # writes target/release/chunkref"
)


@pytest.fixture(scope="session")
def chunkref_bin() -> Path:
    """The ``chunkref`` command-line tool: ``$CHUNKREF_BIN``, else
    ``<repo>/target/release/chunkref``.  Fails (does not skip) when absent."""
    path = Path(os.environ.get("CHUNKREF_BIN") or REPO_ROOT / "target/release/chunkref")
    assert path.is_file() and os.access(path, os.X_OK), (
        f"no chunkref binary at {path}.\n" + CHUNKREF_BIN_HINT
    )
    return path


def run_chunkref(
    binary: Path, *args: str | Path, cwd: Path | None = None
) -> subprocess.CompletedProcess:
    """Run ``binary *args`` (text output captured, no check of the exit
    status) with a timeout, so a hung builder fails the test."""
    return subprocess.run(
        [str(binary), *map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=300
    )


@pytest.fixture(scope="session")
def peer():
    """osml-imagery-io in its venv (skips only when PyPI is unreachable)."""
    from peer import ensure_peer

    installed = ensure_peer(REPO_ROOT / "build" / "peer-venv")
    version = installed.version()
    assert version.startswith("0.2."), f"peer version {version}"
    return installed
