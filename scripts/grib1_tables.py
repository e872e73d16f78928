#!/usr/bin/python3
"""Writes src/formats/grib1/gdal_tables.rs: what GDAL's GRIB driver shows
of GRIB edition 1 parameters and level types, asked of GDAL itself.

degrib (GDAL's GRIB library) compiles its GRIB1 parameter tables (code
table 2 of each centre and version) and its level types (code table 3)
into GDAL; no data file holds them.  This script writes one message per
parameter of each table (and one per level type), opens them with GDAL's
GRIB driver and records what it shows: a parameter's element, unit and
comment (with ``GRIB_NORMALIZE_UNITS=NO``), whether its values are
converted by default (Kelvin to Celsius or from a logarithm, told from the
pixel values), and each level type's name, unit, comment and whether its
value is two numbers.  Names are kept for the tables listed in
``NAMED``; the conversions of every table.

Run with the GDAL that is the reference (3.6):
    /usr/bin/python3 scripts/grib1_tables.py > src/formats/grib1/gdal_tables.rs
"""

from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path

from osgeo import gdal

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "python"))
from grib1_writer import Message  # noqa: E402

gdal.UseExceptions()
gdal.PushErrorHandler("CPLQuietErrorHandler")

#: degrib's parameter tables, each with a (centre, subcentre, table
#: version, generating process) that selects it (degrib1.cpp,
#: Choose_ParmTable).
TABLES = {
    "Undefined": (0, 0, 3, 0),
    "NcepOpn": (7, 0, 3, 0),
    "NcepReanal": (7, 1, 2, 0),
    "NcepTdl": (7, 11, 2, 0),
    "NcepMdl": (7, 14, 2, 0),
    "Omb": (7, 0, 128, 0),
    "Ncep129": (7, 0, 129, 0),
    "Ncep130": (7, 0, 130, 0),
    "Ncep131": (7, 0, 131, 0),
    "Ncep133": (7, 0, 133, 0),
    "Ncep140": (7, 0, 140, 0),
    "Ncep141": (7, 0, 141, 0),
    "Afwa000": (57, 0, 3, 0),
    "Afwa001": (57, 1, 3, 0),
    "Afwa002": (57, 2, 3, 0),
    "Afwa003": (57, 3, 3, 0),
    "Afwa010": (57, 10, 3, 0),
    "Afwa011": (57, 11, 3, 0),
    "Ecmwf128": (98, 0, 128, 0),
    "Ecmwf129": (98, 0, 129, 0),
    "Ecmwf130": (98, 0, 130, 0),
    "Ecmwf131": (98, 0, 131, 0),
    "Ecmwf140": (98, 0, 140, 0),
    "Ecmwf150": (98, 0, 150, 0),
    "Ecmwf160": (98, 0, 160, 0),
    "Ecmwf170": (98, 0, 170, 0),
    "Ecmwf180": (98, 0, 180, 0),
    "Ecmwf228": (98, 0, 228, 0),
    "Dwd002": (78, 0, 2, 0),
    "Dwd201": (78, 0, 201, 0),
    "Dwd202": (78, 0, 202, 0),
    "Dwd203": (78, 0, 203, 0),
    "Cptec254": (46, 0, 254, 0),
    "Nohrsc": (9, 163, 3, 0),
    "Athens": (96, 0, 3, 0),
    "Norway128": (88, 0, 128, 0),
    "Cmc": (54, 0, 3, 0),
}

#: The tables whose names, units and comments are kept.
NAMED = ["Undefined", "NcepOpn", "NcepReanal", "Ecmwf128", "Ecmwf228"]

#: The value every message holds (a constant field).
VALUE = 2.0


def open_all(messages: list[Message], normalize: bool) -> list[tuple[dict, float]]:
    """GDAL's metadata and first pixel of each message."""
    with tempfile.NamedTemporaryFile(suffix=".grib1") as f:
        f.write(b"".join(m.bytes() for m in messages))
        f.flush()
        gdal.SetConfigOption("GRIB_NORMALIZE_UNITS", "YES" if normalize else "NO")
        ds = gdal.Open(f.name)
        out = []
        for b in range(ds.RasterCount):
            band = ds.GetRasterBand(b + 1)
            out.append((band.GetMetadata(), band.GetDescription(), float(band.ReadAsArray()[0, 0])))
        ds = None
        return out


def constant(**fields) -> Message:
    """A one-point message holding VALUE."""
    return Message(ni=1, nj=1, last=(1000, 0), packed=[], nbits=0, reference=VALUE, **fields)


def rust_str(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def main() -> None:
    print("//! GDAL 3.6's GRIB1 tables as its GRIB driver shows them, written by")
    print("//! `scripts/grib1_tables.py` (which asks GDAL): do not edit.")
    print()
    print("use crate::formats::grib2::units::Conversion;")
    print()
    print("/// degrib's GRIB1 parameter tables (`Undefined`: the international")
    print("/// table, degrib's fallback), named as in degrib1.cpp.")
    print("#[allow(missing_docs)]")
    print("#[derive(Debug, Clone, Copy, PartialEq, Eq)]")
    print("pub enum Table {")
    for table in TABLES:
        print(f"    {table},")
    print("}")
    print()
    print("use Table::*;")
    print()
    names, conversions = [], []
    for table, (centre, sub, version, _process) in TABLES.items():
        messages = [
            constant(centre=centre, subcentre=sub, table=version, parameter=p) for p in range(256)
        ]
        raw = open_all(messages, normalize=False)
        shown = open_all(messages, normalize=True)
        for p in range(256):
            items, _, value = raw[p]
            converted = shown[p][2]
            if converted != value:
                kind = "KelvinToCelsius" if abs(converted - (value - 273.15)) < 1e-9 else "Exp10"
                conversions.append(f"    ({table}, {p}, Conversion::{kind}),")
            if table not in NAMED:
                continue
            element = re.sub(r"^(var\d+) of table \d+ of center .*$", r"\1", items["GRIB_ELEMENT"])
            unit = items["GRIB_UNIT"][1:-1]
            comment = items["GRIB_COMMENT"]
            suffix = f" [{unit}]"
            assert comment.endswith(suffix), (table, p, comment)
            comment = comment[: -len(suffix)]
            if (element, unit, comment) == (f"var{p}", "-", "undefined"):
                continue
            names.append(
                f"    ({table}, {p}, {rust_str(element)}, {rust_str(unit)}, {rust_str(comment)}),"
            )
    print("/// Parameters by table and number: element, unit, comment (those")
    print('/// not listed are `var<N>`, unit `-`, comment `undefined`).')
    print("pub(super) const PARAMETERS: &[(Table, u8, &str, &str, &str)] = &[")
    print("\n".join(names))
    print("];")
    print()
    print("/// The parameters whose values GDAL converts by default.")
    print("pub(super) const CONVERSIONS: &[(Table, u8, Conversion)] = &[")
    print("\n".join(conversions))
    print("];")
    print()
    surfaces = []
    levels = [constant(level_type=t, level=0x0102) for t in range(256)]
    for t, (items, description, _) in enumerate(open_all(levels, normalize=False)):
        short = items["GRIB_SHORT_NAME"]
        two_part = short.startswith("1-2-")
        name = short[4:] if two_part else short[len("258-"):]
        head = "1-2[" if two_part else "258["
        assert description.startswith(head), (t, description)
        unit, rest = description[len(head):].split("] ", 1)
        assert rest.startswith(name + " (") and rest.endswith(")"), (t, rest)
        comment = rest[len(name) + 2 : -1]
        surfaces.append(
            f"    ({rust_str(name)}, {rust_str(unit)}, {rust_str(comment)}, {str(two_part).lower()}),"
        )
    print("/// Level types (code table 3) by number: name, unit, comment, and")
    print("/// whether the level is two one-octet numbers.")
    print("pub(super) const SURFACES: [(&str, &str, &str, bool); 256] = [")
    print("\n".join(surfaces))
    print("];")


if __name__ == "__main__":
    main()
