#!/usr/bin/python3
"""Reads files other people wrote through `chunkref index` + ChunkRef and
through GDAL's own driver, and says where they differ.

    GDAL_DRIVER_PATH=build/gdalplugins scripts/corpus_check.py DIR_OR_FILE... \
        [--json OUT.json] [--jobs 2] [--timeout 120]

Every file under the given directories whose first bytes say NITF, JPEG 2000,
TIFF, NetCDF/HDF5, GRIB or DTED is checked in a child process of its own
(a crash or hang is reported, not fatal). A file is one of:

- ``match``: size, bands, data types, geotransform or GCPs, CRS, nodata, mask
  flags, colour interpretation and table, overview count and every pixel of
  every level both have are the same (for several images or subdatasets:
  each of them, in order; subdatasets paired by name when both list the same
  names, and for GDAL's netCDF and HDF5 drivers listed in the same order
  with the same descriptions; one GDAL lists but cannot open must not open
  in ChunkRef either);
- ``differ``: both read it; the first differences are listed;
- ``refused``: GDAL reads it, chunkref refuses it (the message is kept);
- ``both-refuse``: GDAL cannot read it either;
- ``gdal-fails``: chunkref refuses it, and GDAL opens it but has no pixels
  to give: no band and no subdataset (a NITF of graphics and text only, an
  HDF5 file of 1-D datasets), or an error reading its first band whole (its
  first block, for images over 64 megapixels).

The corpora are public repositories (docs/real-files.md names them); this
script only reads them, it does not fetch them.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHUNKREF = ROOT / "target" / "release" / "chunkref"
sys.path.insert(0, str(ROOT / "tests" / "python"))

MAGICS = [
    (b"NITF", "nitf"),
    (b"NSIF", "nitf"),
    (b"\x00\x00\x00\x0cjP  \r\n\x87\n", "jp2"),
    (b"\xff\x4f\xff\x51", "j2k"),
    (b"II*\x00", "tiff"),
    (b"MM\x00*", "tiff"),
    (b"II+\x00", "tiff"),
    (b"MM\x00+", "tiff"),
    (b"CDF\x01", "netcdf3"),
    (b"CDF\x02", "netcdf3"),
    (b"CDF\x05", "netcdf3"),
    (b"\x89HDF\r\n\x1a\n", "hdf5"),
    (b"GRIB", "grib"),
    (b"UHL1", "dted"),
]


def kind_of(path: Path) -> str | None:
    """The format the file's first bytes announce, or None."""
    try:
        with open(path, "rb") as f:
            head = f.read(16)
    except OSError:
        return None
    for magic, kind in MAGICS:
        if head.startswith(magic):
            return kind
    return None


def candidates(roots: list[str]) -> list[tuple[Path, str]]:
    """Every file under ``roots`` of a kind chunkref indexes."""
    out = []
    for root in roots:
        p = Path(root)
        files = [p] if p.is_file() else sorted(q for q in p.rglob("*") if q.is_file())
        for f in files:
            kind = kind_of(f)
            if kind:
                out.append((f, kind))
    return out


# ---------------------------------------------------------------- one file


def describe(ds) -> dict:
    """The properties compared, of one dataset: the tests' ``describe``
    plus the CRSs, which are compared with ``IsSame``."""
    import raster_checks  # tests/python, beside GDAL's bindings in the child

    props = raster_checks.describe(ds)
    props.update(srs=ds.GetSpatialRef(), gcp_srs=ds.GetGCPSpatialRef())
    return props


def same_srs(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return bool(a.IsSame(b))


def close(a, b, tol) -> bool:
    return all(abs(x - y) <= tol * max(1.0, abs(x), abs(y)) for x, y in zip(a, b))


def shown(key: str, ours, theirs) -> str:
    """A band property that differs, ours first: a colour table by its
    size, or by its first differing entry when the sizes agree."""
    if key != "ct":
        return f"{ours} != {theirs}"
    if ours is None or theirs is None or len(ours) != len(theirs):
        return f"{len(ours or [])} entries != {len(theirs or [])}"
    k = next(k for k, (a, b) in enumerate(zip(ours, theirs)) if a != b)
    return f"entry {k} {ours[k]} != {theirs[k]}"


def compare_props(n: dict, c: dict, what: str) -> list[str]:
    """Differences of two ``describe`` results."""
    diffs = []
    if n["size"] != c["size"]:
        return [f"{what}size {list(c['size'])} != {list(n['size'])}"]
    if (n["gt"] is None) != (c["gt"] is None) or (n["gt"] and not close(n["gt"], c["gt"], 1e-9)):
        diffs.append(f"{what}geotransform {c['gt']} != {n['gt']}")
    if not same_srs(n["srs"], c["srs"]):
        name = lambda s: s.GetName() if s is not None else None  # noqa: E731
        diffs.append(f"{what}CRS {name(c['srs'])} != {name(n['srs'])}")
    if len(n["gcps"]) != len(c["gcps"]):
        diffs.append(f"{what}{len(c['gcps'])} GCPs != {len(n['gcps'])}")
    elif n["gcps"] and not all(close(x[:5], y[:5], 1e-9) for x, y in zip(n["gcps"], c["gcps"])):
        diffs.append(f"{what}GCP values differ")
    for i, (nb, cb) in enumerate(zip(n["bands"], c["bands"]), 1):
        for key in ("type", "nodata", "mask", "colour", "ct", "pixeltype", "overviews"):
            if nb[key] != cb[key] and not (
                key == "nodata" and nb[key] != nb[key] and cb[key] != cb[key]
            ):
                diffs.append(f"{what}band {i} {key} " + shown(key, cb[key], nb[key]))
    return diffs


def compare_pixels(nds, cds, what: str) -> list[str]:
    """Every pixel of level 0 and of each overview level both have."""
    import numpy as np

    diffs = []
    for i in range(1, nds.RasterCount + 1):
        nb, cb = nds.GetRasterBand(i), cds.GetRasterBand(i)
        levels = [(nb, cb)] + [
            (nb.GetOverview(k), cb.GetOverview(k))
            for k in range(min(nb.GetOverviewCount(), cb.GetOverviewCount()))
        ]
        for lev, (x, y) in enumerate(levels):
            if (x.XSize, x.YSize) != (y.XSize, y.YSize):
                diffs.append(f"{what}band {i} level {lev} size {y.XSize}x{y.YSize} != {x.XSize}x{x.YSize}")
                continue
            try:
                a = x.ReadAsArray()
            except Exception:
                continue  # GDAL cannot read this level: nothing to compare with
            try:
                b = y.ReadAsArray()
            except Exception as e:
                diffs.append(f"{what}band {i} level {lev} read fails: {str(e)[:200]}")
                continue
            if a is None or b is None:
                continue
            if a.dtype.kind == "f":
                same = np.array_equal(a, b, equal_nan=True)
            else:
                same = np.array_equal(a, b)
            if not same:
                bad = np.argwhere(a != b)
                y0, x0 = bad[0]
                diffs.append(
                    f"{what}band {i} level {lev}: {len(bad)} pixels differ, first at "
                    f"({x0},{y0}) {b[y0, x0]} != {a[y0, x0]}"
                )
    return diffs


def subdatasets(ds) -> list[str]:
    md = ds.GetMetadata("SUBDATASETS") or {}
    return [v for k, v in sorted(md.items(), key=lambda kv: _sd_key(kv[0])) if k.endswith("_NAME")]


def descriptions(ds) -> list[str]:
    md = ds.GetMetadata("SUBDATASETS") or {}
    return [v for k, v in sorted(md.items(), key=lambda kv: _sd_key(kv[0])) if k.endswith("_DESC")]


def _sd_key(k: str):
    parts = k.split("_")
    return (int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0, k)


def gdal_fails(ds) -> bool:
    """True if GDAL's dataset ``ds`` has no band and no subdataset, or fails
    to read its first band whole (its first block, past 64 megapixels)."""
    if ds.RasterCount == 0:
        return not ds.GetMetadata("SUBDATASETS")
    band = ds.GetRasterBand(1)
    width, height = ds.RasterXSize, ds.RasterYSize
    if width * height > 1 << 26:
        width, height = (min(a, b) for a, b in zip(band.GetBlockSize(), (width, height)))
    try:
        # GDAL 3.6's bindings return None for some failures, without raising.
        return band.ReadRaster(0, 0, width, height) is None
    except Exception:
        return True


def check_one(path: str) -> dict:
    """Compare one file; returns the verdict record."""
    from osgeo import gdal

    gdal.UseExceptions()
    result = {"file": path, "kind": kind_of(Path(path))}
    try:
        nds = gdal.Open(path)
        native_driver = nds.GetDriver().ShortName
    except Exception as e:
        result.update(verdict="both-refuse", gdal_error=str(e)[:300])
        return result
    result["driver"] = native_driver
    with tempfile.TemporaryDirectory() as tmp:
        index = os.path.join(tmp, "index.json")
        run = subprocess.run(
            [str(CHUNKREF), "index", path, "-o", index], capture_output=True, text=True, timeout=120
        )
        if run.returncode != 0:
            result.update(verdict="gdal-fails" if gdal_fails(nds) else "refused", stage="index",
                          error=(run.stderr or run.stdout).strip()[-400:])
            return result
        try:
            cds = gdal.OpenEx(index, gdal.OF_RASTER, allowed_drivers=["ChunkRef"])
        except Exception as e:
            result.update(verdict="refused", stage="open", error=str(e)[:400])
            return result
        pairs = [(nds, cds, "")] if nds.RasterCount or not subdatasets(nds) else []
        nsub, csub = subdatasets(nds), subdatasets(cds)
        if nsub:
            if len(nsub) != len(csub):
                result.update(verdict="differ", diffs=[f"{len(csub)} subdatasets != {len(nsub)}"])
                return result
            # The netCDF and HDF5 drivers' listings: the same order and
            # descriptions (chunkref index records both).
            if native_driver in ("netCDF", "HDF5"):
                ndesc, cdesc = descriptions(nds), descriptions(cds)
                if ndesc != cdesc:
                    k = next(k for k, (a, b) in enumerate(zip(ndesc, cdesc)) if a != b)
                    result.update(verdict="differ",
                                  diffs=[f"sd{k + 1} described '{cdesc[k]}' != '{ndesc[k]}'"])
                    return result
            # Paired by the name after the last ':' when both list the
            # same names; else in listing order.
            name = lambda s: s.rsplit(":", 1)[-1].strip('"')  # noqa: E731
            if sorted(map(name, nsub)) == sorted(map(name, csub)) and len(set(map(name, nsub))) == len(nsub):
                by_name = {name(b): b for b in csub}
                csub = [by_name[name(a)] for a in nsub]
            for k, (a, b) in enumerate(zip(nsub, csub)):
                try:
                    native = gdal.Open(a)
                except Exception:
                    native = None  # GDAL lists it but cannot open it: nor may we
                try:
                    ours = gdal.OpenEx(b, allowed_drivers=["ChunkRef"])
                except Exception as e:
                    if native is None:
                        continue
                    result.update(verdict="refused", stage="open subdataset", error=str(e)[:400])
                    return result
                if native is None:
                    result.update(verdict="differ", diffs=[f"sd{k + 1}: GDAL cannot open it, ChunkRef can"])
                    return result
                pairs.append((native, ours, f"sd{k + 1} "))
        diffs = []
        for a, b, what in pairs:
            try:
                d = compare_props(describe(a), describe(b), what)
                if not any("size" in x for x in d):
                    d += compare_pixels(a, b, what)
            except Exception as e:
                d = [f"{what}comparison failed: {str(e)[:300]}"]
            diffs += d
        result.update(verdict="differ" if diffs else "match", diffs=diffs[:8])
    return result


def run_child(path: Path, timeout: int) -> dict:
    try:
        p = subprocess.run(
            [sys.executable, __file__, "--one", str(path)], capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return {"file": str(path), "kind": kind_of(path), "verdict": "hang", "diffs": [f"no answer in {timeout} s"]}
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode != 0 or not lines:
        return {
            "file": str(path),
            "kind": kind_of(path),
            "verdict": "crash",
            "diffs": [f"exit {p.returncode}: {p.stderr.strip()[-300:]}"],
        }
    return json.loads(lines[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("paths", nargs="*")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--json", help="write every verdict to this file")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=int, default=180)
    ap.add_argument("--quiet", action="store_true", help="print only files that do not match")
    args = ap.parse_args()
    if args.one:
        print(json.dumps(check_one(args.one), default=str))
        return 0
    from osgeo import gdal

    if gdal.GetDriverByName("ChunkRef") is None:
        sys.exit("no ChunkRef driver: set GDAL_DRIVER_PATH to the installed plugin's directory")
    files = candidates(args.paths)
    with ThreadPoolExecutor(args.jobs) as pool:
        results = list(pool.map(lambda fk: run_child(fk[0], args.timeout), files))
    counts: dict[tuple[str, str], int] = {}
    for r in results:
        counts[(r["kind"], r["verdict"])] = counts.get((r["kind"], r["verdict"]), 0) + 1
        if args.quiet and r["verdict"] in ("match", "both-refuse"):
            continue
        detail = r.get("error") or "; ".join(r.get("diffs") or []) or r.get("gdal_error", "")
        print(f"{r['verdict']:11} {r['kind']:7} {r['file']}: {detail[:600]}")
    verdicts = ["match", "differ", "refused", "both-refuse", "gdal-fails", "crash", "hang"]
    print("\n| format | " + " | ".join(verdicts) + " |")
    print("|---" * (len(verdicts) + 1) + "|")
    for kind in sorted({k for k, _ in counts}):
        print(f"| {kind} | " + " | ".join(str(counts.get((kind, v), 0)) for v in verdicts) + " |")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
