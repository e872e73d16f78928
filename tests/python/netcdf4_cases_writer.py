"""Writes NetCDF files with the netCDF4 library (run in the kerchunk venv,
see venvs.kerchunk_python) from a JSON description, one file per case:

    python netcdf4_cases_writer.py OUT_DIR '{"case": {...}, ...}'

A case is ``{"format": "NETCDF4" | "NETCDF4_CLASSIC" | "NETCDF3_CLASSIC"
| "NETCDF3_64BIT_OFFSET", "globals": {attr: value}, "dims": {name: size},
"vars": [var, ...]}`` and a var ``{"name", "dtype" (numpy), "dims":
[names], "attrs": {attr: value}, "values": list (flattened, C order) or
null (a ramp 0, 1, 2, ... cast to dtype) or "unwritten" (never written)
or "first" (ones written in the first two rows and three columns only),
"chunks": [sizes] or null, "fill_value": value or null (none)}``.  A
``"values"`` list on a zero-dimension variable is its one value.  Text
attributes stay text; lists become arrays of ``float64`` unless
``"attr_dtypes"`` names a dtype for them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import netCDF4
import numpy as np


def write(path: Path, case: dict) -> None:
    with netCDF4.Dataset(path, "w", format=case.get("format", "NETCDF4")) as nc:
        for key, value in case.get("globals", {}).items():
            nc.setncattr(key, value)
        for name, size in case["dims"].items():
            nc.createDimension(name, size)
        for spec in case["vars"]:
            dtype = np.dtype(spec["dtype"])
            kwargs = {}
            if spec.get("chunks") is not None:
                kwargs["chunksizes"] = spec["chunks"]
            if spec.get("fill_value") is not None:
                kwargs["fill_value"] = np.array(spec["fill_value"], dtype=dtype)
            var = nc.createVariable(spec["name"], dtype, tuple(spec["dims"]), **kwargs)
            var.set_auto_maskandscale(False)
            types = spec.get("attr_dtypes", {})
            for key, value in spec.get("attrs", {}).items():
                if isinstance(value, str):
                    var.setncattr(key, value)
                else:
                    var.setncattr(key, np.array(value, dtype=types.get(key, "f8")))
            values = spec.get("values")
            if values == "unwritten":
                continue
            if values == "first":
                var[0:2, 0:3] = np.ones((2, 3), dtype=dtype)
                continue
            shape = var.shape
            if values is None:
                data = np.arange(int(np.prod(shape)), dtype=np.float64) % 100
            else:
                data = np.array(values, dtype=np.float64)
            var[...] = data.astype(dtype).reshape(shape)


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for name, case in json.loads(sys.argv[2]).items():
        write(out / f"{name}.nc", case)


if __name__ == "__main__":
    main()
