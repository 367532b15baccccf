#!/usr/bin/env python3
"""Writes the order in which the linker lays out the `rntuple` command's code.

    cargo build --release --bin rntuple
    python3 benches/link_order/generate.py            # rewrite the order file
    python3 benches/link_order/generate.py --check    # how much of it the binary still has
    cargo build --release --bin rntuple               # relink with the new order

The command's machine code is about 90 MB, most of it DataFusion's, and a
short run touches pieces of it all over: every 64 KiB piece of code it
enters costs a page fault that maps it. `build.rs` hands lld the functions
named in `src/bin/rntuple/link-order.txt` to place first and together, so
what a run executes sits in a few MB.

The list is every function that runs, under valgrind's callgrind, in a set
of typical commands on the files in the repository: a session's start
(`SELECT 1`), the ADL queries, and `ls`, `schema`, `info`, `cat`, `export`
and a grouping query. Names are the binary's own symbol names (with their
hashes), so a new compiler or new dependency versions leave names that the
binary no longer has: `--check` says how many still match, and a run of
this script brings the list up to date. The hashes also depend on the
features the dependencies are built with: build the command on its own
(as above), not together with examples, tests or benches, whose
dev-dependencies add features (then about 11% of the names match). Needs
valgrind and `nm`.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
ORDER = os.path.join(ROOT, "src", "bin", "rntuple", "link-order.txt")
EVENTS = os.path.join(ROOT, "tests", "data", "adl", "nanoaod_events.root")
ADL = os.path.join(ROOT, "benches", "adl")


def commands(out_dir):
    """The profiled runs, in the order their functions are laid out: a
    session's start first, then the queries, then the other subcommands."""
    yield ["sql", "-c", "SELECT 1"]
    for q in ["q1", "q2", "q3", "q4", "q5", "q6", "q7", "q8"]:
        yield ["sql", "--table", "events=" + EVENTS, "-f", os.path.join(ADL, q + ".sql"), "--format", "arrow"]
    yield ["sql", "--table", "events=" + EVENTS, "-c",
           "SELECT nJet, count(*) AS events, avg(MET_pt) AS met FROM events GROUP BY nJet ORDER BY nJet"]
    yield ["ls", EVENTS]
    yield ["schema", EVENTS]
    yield ["info", EVENTS]
    yield ["cat", "-n", "20", EVENTS]
    for fmt, ext in [("arrow", "arrow"), ("parquet", "parquet"), ("jsonl", "jsonl")]:
        yield ["export", "--format", fmt, "--output", os.path.join(out_dir, "events." + ext), EVENTS]


def defined_functions(binary):
    """The names of the functions the binary defines."""
    out = subprocess.run(["nm", "--defined-only", binary], capture_output=True, text=True, check=True).stdout
    names = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "tTwW":
            names.add(parts[2])
    return names


def executed_functions(binary, argv, out_dir):
    """The functions callgrind saw run in `binary argv`, in the order its
    profile first names them."""
    profile = os.path.join(out_dir, "callgrind.out")
    subprocess.run(
        ["valgrind", "--tool=callgrind", "--demangle=no", "--callgrind-out-file=" + profile, binary, *argv],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True,
    )
    names = []
    with open(profile) as f:
        for line in f:
            # `fn=(12) name` defines id 12; later mentions are `fn=(12)`.
            m = re.match(r"^c?fn=\(\d+\) (\S+)$", line.rstrip("\n"))
            if m:
                # Recursion levels are named `name'2`, `name'3`...
                names.append(re.sub(r"'\d+$", "", m.group(1)))
    os.unlink(profile)
    return names


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", default=os.path.join(ROOT, "target", "release", "rntuple"))
    parser.add_argument("--output", default=ORDER)
    parser.add_argument("--check", action="store_true", help="only report how many listed functions the binary defines")
    args = parser.parse_args()

    defined = defined_functions(args.binary)
    if args.check:
        with open(args.output) as f:
            listed = [line.strip() for line in f if line.strip()]
        found = sum(name in defined for name in listed)
        print(f"{found} of {len(listed)} listed functions are in {args.binary} ({100 * found / max(len(listed), 1):.0f}%)")
        return

    order, seen = [], set()
    with tempfile.TemporaryDirectory() as tmp:
        for argv in commands(tmp):
            print("profiling:", " ".join(os.path.relpath(a, ROOT) if a.startswith(ROOT) else a for a in argv),
                  file=sys.stderr)
            for name in executed_functions(args.binary, argv, tmp):
                if name in defined and name not in seen:
                    seen.add(name)
                    order.append(name)
    with open(args.output, "w") as f:
        f.write("\n".join(order) + "\n")
    print(f"{len(order)} functions written to {os.path.relpath(args.output, ROOT)}", file=sys.stderr)


if __name__ == "__main__":
    main()
