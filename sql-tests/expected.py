#!/usr/bin/env python3
"""Expected values for the .slt files, computed from ROOT's goldens (tests/data/*.json).

The .slt files must not take their expected results from this crate's own output: every
expected block was printed by this script from ROOT's reading of the fixtures, in the cell
format of sql-tests/main.rs (NULL, numbers as Rust prints them, [a, b], {x: 1}, {k: v}).

    python3 sql-tests/expected.py column importer.root Events MET_pt   # one column, one row per entry
    python3 sql-tests/expected.py show importer.root Events           # every column of the first rows
    python3 sql-tests/expected.py eval importer.root Events 'EXPR'     # a Python expression over rows `r`

`eval` gets `rows` (a list of dicts, field -> decoded value), `fmt` and `f32`/`f64`.
"""

import json
import math
import os
import struct
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "tests", "data")


def f32(hexbits):
    return float(np.frombuffer(struct.pack(">I", int(hexbits, 16)), dtype=">f4")[0])


def f64(hexbits):
    return struct.unpack(">d", struct.pack(">Q", int(hexbits, 16)))[0]


def decode(v):
    """Golden value -> Python value; floats stay tagged so they print as their C++ type."""
    if isinstance(v, str) and v.startswith("0x") and len(v) == 10:
        return F32(f32(v))
    if isinstance(v, str) and v.startswith("0x") and len(v) == 18:
        return F64(f64(v))
    if isinstance(v, list):
        return [decode(x) for x in v]
    if isinstance(v, dict):
        return {k: decode(x) for k, x in v.items()}
    return v


class F32(float):
    pass


class F64(float):
    pass


def fmt_float(x, single):
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    v = np.float32(x) if single else np.float64(x)
    return np.format_float_positional(v, unique=True, trim="-")


def fmt(v):
    """A value as the runner prints it."""
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, F32):
        return fmt_float(v, True)
    if isinstance(v, float):
        return fmt_float(v, False)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return v.replace("\n", "\\n").replace("\t", "\\t") if v else "(empty)"
    if isinstance(v, tuple):
        return " ".join(fmt(x) for x in v)
    if isinstance(v, list):
        return "[" + ", ".join(fmt(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join("%s: %s" % (k, fmt(x)) for k, x in v.items()) + "}"
    raise TypeError(type(v))


def load(file, ntuple):
    with open(os.path.join(DATA, file), encoding="utf-8") as f:
        golden = json.load(f) if file.endswith(".json") else None
    if golden is None:
        with open(os.path.join(DATA, os.path.splitext(file)[0] + ".json"), encoding="utf-8") as f:
            golden = json.load(f)
    for nt in golden["ntuples"]:
        if nt["path"] == ntuple or nt["name"] == ntuple:
            names = [f["name"] for f in nt["fields"]]
            rows = [{n: decode(nt["values"][n][i]) for n in names if n in nt["values"]} for i in range(nt["entries"])]
            return rows
    raise KeyError(ntuple)


def main(argv):
    cmd, file, ntuple = argv[0], argv[1], argv[2]
    rows = load(os.path.splitext(file)[0] + ".json", ntuple)
    if cmd == "column":
        for r in rows:
            print(fmt(r[argv[3]]))
    elif cmd == "show":
        for r in rows[: int(argv[3]) if len(argv) > 3 else 5]:
            print(" ".join(fmt(v) for v in r.values()))
    elif cmd == "eval":
        out = eval(argv[3], {"rows": rows, "fmt": fmt, "math": math, "np": np, "F32": F32, "F64": F64})
        if isinstance(out, list):
            for line in out:
                print(line if isinstance(line, str) else fmt(line))
        else:
            print(out if isinstance(out, str) else fmt(out))


if __name__ == "__main__":
    main(sys.argv[1:])
