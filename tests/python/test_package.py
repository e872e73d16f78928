"""The installed plugin and the binary package: small (stripped), loadable
by the real GDAL tools, and refusing a GDAL of another major.minor with a
message naming both versions."""

from __future__ import annotations

import os
import subprocess
import tarfile
from pathlib import Path

import pytest

from conftest import REPO_ROOT

#: The installed plugin must stay under this size.
MAX_PLUGIN_BYTES = 20 * 1024 * 1024


def formats(driver_path: Path) -> str:
    env = dict(os.environ, GDAL_DRIVER_PATH=str(driver_path))
    done = subprocess.run(["gdalinfo", "--formats"], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_install_script_puts_a_small_stripped_plugin(tmp_path):
    done = subprocess.run([REPO_ROOT / "gdal_plugin/install.sh", tmp_path],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    plugin = tmp_path / "gdal_ChunkRef.so"
    assert plugin.stat().st_size < MAX_PLUGIN_BYTES, plugin.stat().st_size
    assert "ChunkRef -raster,multidimensional raster-" in formats(tmp_path)


@pytest.fixture(scope="module")
def package(tmp_path_factory) -> Path:
    done = subprocess.run([REPO_ROOT / "scripts/package.sh"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    tarball = REPO_ROOT / done.stdout.strip().splitlines()[-1].split(" ")[0]
    out = tmp_path_factory.mktemp("pkg")
    with tarfile.open(tarball) as tar:
        tar.extractall(out)
    (root,) = out.iterdir()
    return root


def test_package_installs_and_gdal_loads_it(package, tmp_path):
    plugins, bin_dir = tmp_path / "plugins", tmp_path / "bin"
    done = subprocess.run([package / "install.sh", "--plugins", plugins, "--bin", bin_dir],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert (plugins / "gdal_ChunkRef.so").stat().st_size < MAX_PLUGIN_BYTES
    assert "ChunkRef -raster,multidimensional raster-" in formats(plugins)
    version = subprocess.run([bin_dir / "chunkref", "--help"], capture_output=True, text=True)
    assert "index" in version.stdout + version.stderr


def test_package_refuses_another_gdal(package, tmp_path):
    (package / "GDAL_VERSION").write_text("2.9\n")
    try:
        done = subprocess.run([package / "install.sh", "--plugins", tmp_path / "p"],
                              capture_output=True, text=True)
    finally:
        built = subprocess.run(["gdal-config", "--version"], capture_output=True, text=True)
        (package / "GDAL_VERSION").write_text(".".join(built.stdout.split(".")[:2]) + "\n")
    assert done.returncode != 0
    assert "built for GDAL 2.9" in done.stderr and "this machine has GDAL 3." in done.stderr
    assert not (tmp_path / "p").exists()
