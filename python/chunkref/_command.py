"""The ``chunkref`` command of the wheel: the engine's own command (``index``,
``convert``), built without GDAL and shipped in ``chunkref/bin/``."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def main() -> None:
    """Runs the bundled ``chunkref`` command with this process's arguments."""
    exe = Path(__file__).parent / "bin" / "chunkref"
    if not exe.exists():
        sys.exit(f"chunkref: the command is missing from this installation ({exe})")
    os.execv(exe, [str(exe), *sys.argv[1:]])
