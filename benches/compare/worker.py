#!/usr/bin/env python3
"""One measurement of a Python-driven peer, in its own process (run by run.py).

    worker.py SYSTEM TASK --data DIR --events N [--values-dir DIR]

Prints one line of JSON: {"seconds": in-process time of the timed part, "values": {histogram: file.npy}}.
"""

import argparse
import ctypes
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "benches", "nanoaod"))

PARTS = {"q6": ["q6a", "q6b"]}

# RDataFrame reading every column of the file in one event loop: a typed C++ lambda per column type adds the
# values into a checksum, so nothing can be skipped. Written per file by rdf_decode_code().
RDF_DECODE = r'''
#include <ROOT/RDataFrame.hxx>
#include <ROOT/RVec.hxx>
#include <chrono>
namespace adl_decode {
template <typename T> double Add(const T &x) { return double(x); }
template <typename T> double Add(const ROOT::RVec<T> &v) { double s = 0; for (auto x : v) s += double(x); return s + v.size(); }
double Run(const std::string &path, double &checksum)
{
   ROOT::RDataFrame df("Events", path);
   %(body)s
   auto start = std::chrono::steady_clock::now();
   checksum = sum.GetValue();
   return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}
}
'''


def rdf_decode_code(ROOT, path):
    """C++ that books one Aggregate over every top-level data column of the RNTuple."""
    df = ROOT.RDataFrame("Events", path)
    columns = []
    for name in df.GetColumnNames():
        name = str(name)
        if "." in name or name.startswith("_") or name.startswith("R_rdf"):
            continue  # sub-fields and the untyped collections: their data is read through the projected fields
        columns.append((name, str(df.GetColumnType(name))))
    params = ", ".join("const %s &c%d" % (t, i) for i, (_, t) in enumerate(columns))
    adds = " + ".join("Add(c%d)" % i for i in range(len(columns)))
    names = ", ".join('"%s"' % n for n, _ in columns)
    body = ("auto sum = df.Define(\"adl_all\", [](%s) { return %s; }, {%s}).Sum<double>(\"adl_all\");"
            % (params, adds, names))
    return RDF_DECODE % {"body": body}, len(columns)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("system")
    parser.add_argument("task")
    parser.add_argument("--data", required=True)
    parser.add_argument("--events", type=int, required=True)
    parser.add_argument("--values-dir")
    args = parser.parse_args()
    root_file = os.path.join(args.data, "nanoaod_%d.root" % args.events)
    parquet_file = os.path.join(args.data, "nanoaod_%d.parquet" % args.events)
    names = PARTS.get(args.task, [args.task])
    values = {}
    report = {}

    if args.system in ("rdf", "rdf-mt"):
        import generate  # noqa: PLC0415

        ROOT = generate.root()
        if args.system == "rdf-mt":
            ROOT.EnableImplicitMT(2)
        if args.task == "decode":
            code, n = rdf_decode_code(ROOT, root_file)
            if not ROOT.gInterpreter.Declare(code):
                sys.exit("could not compile the decode loop")
            c = ctypes.c_double(0.0)
            seconds = ROOT.adl_decode.Run(root_file, c)
            report["columns"] = n
            report["checksum"] = c.value
        else:
            hists = generate.QUERIES[args.task]
            ranges = [x for _, lo, hi in hists for x in (lo, hi)]
            out = ROOT.adl.RunQuery(args.task, root_file, ranges, generate.BINS, False, False)
            seconds = out.seconds
    elif args.system == "duckdb":
        import duckdb_adl  # noqa: PLC0415

        con = duckdb_adl.connect(parquet_file, threads=2)
        seconds = 0.0
        for name in names:
            start = time.perf_counter()
            values[name] = duckdb_adl.run(con, name)
            seconds += time.perf_counter() - start
    elif args.system == "uproot" and args.task == "decode":
        import uproot  # noqa: PLC0415

        start = time.perf_counter()
        arrays = uproot.open(root_file)["Events"].arrays()
        seconds = time.perf_counter() - start
        report["entries"] = len(arrays)
    elif args.system == "uproot":
        import uproot_adl  # noqa: PLC0415

        seconds = 0.0
        for name in names:
            start = time.perf_counter()
            values[name] = uproot_adl.run(root_file, name)
            seconds += time.perf_counter() - start
    elif args.system == "pyarrow" and args.task == "decode":
        import pyarrow.parquet as pq  # noqa: PLC0415

        start = time.perf_counter()
        table = pq.read_table(parquet_file)
        seconds = time.perf_counter() - start
        report["entries"] = table.num_rows
    else:
        sys.exit("no such measurement: %s %s" % (args.system, args.task))

    report["seconds"] = seconds
    if values and args.values_dir:
        import numpy as np  # noqa: PLC0415

        report["values"] = {}
        for name, v in values.items():
            path = os.path.join(args.values_dir, "%s_%s_%d.npy" % (args.system, name, os.getpid()))
            np.save(path, np.asarray(v, dtype=np.float64))
            report["values"][name] = path
    print(json.dumps(report))


if __name__ == "__main__":
    main()
