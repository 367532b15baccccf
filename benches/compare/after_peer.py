#!/usr/bin/env python3
"""Times ``rntuple sql`` on one query as the harness finds it: after a peer's process has exited.

    python3 benches/compare/after_peer.py 6 benches/adl/q1.sql BIN [BIN ...] [--peer uproot:q1] [--sleep 3]

Each round runs the peer through the harness (``run.py``'s ``run_one``: a fresh
Python worker, its values read back), waits ``--sleep`` seconds, reads the
data file and the binary into the page cache as the harness does, then runs
``BIN sql --table events=$F -f QUERY --format arrow`` with the output to a
file. ``--peer none`` leaves the peer out. Printed per binary: the median wall
time, page faults and system time.

On the VM of BENCHMARKS.md, memory a process frees is reported to the host
within seconds (virtio-balloon free page reporting), and a page the host has
taken back costs a later process more to fault in. In some phases of the VM,
Q1 then took about 0.05 s after an uproot worker and ``--sleep 3`` instead of
0.02 s; in others the peer made no difference.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import run as harness  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("rounds", type=int)
    parser.add_argument("query")
    parser.add_argument("binaries", nargs="+")
    parser.add_argument("--peer", default="uproot:q1", help="SYSTEM:TASK of run.py, or none")
    parser.add_argument("--sleep", type=float, default=3.0)
    parser.add_argument("--data", default="/tmp/nanoaod")
    parser.add_argument("--events", type=int, default=2000000)
    args = parser.parse_args()
    path = os.path.join(args.data, "nanoaod_%d.root" % args.events)
    tmp = tempfile.mkdtemp()
    results = {b: [] for b in args.binaries}
    for _ in range(args.rounds):
        for binary in args.binaries:
            if args.peer != "none":
                system, task = args.peer.split(":")
                args.bin_dir = os.path.dirname(binary)
                harness.run_one(system, task, args, tmp)
            time.sleep(args.sleep)
            harness.warm([path, binary])
            argv = [binary, "sql", "--table", "events=" + path, "-f", args.query, "--format", "arrow"]
            with open(os.path.join(tmp, "out.arrow"), "wb") as out:
                started = time.perf_counter()
                proc = subprocess.Popen(argv, stdout=out)
                _, status, usage = os.wait4(proc.pid, 0)
                seconds = time.perf_counter() - started
            proc.returncode = code = os.waitstatus_to_exitcode(status)
            if code != 0:
                sys.exit(f"{binary} failed with exit code {code}")
            results[binary].append((seconds, usage.ru_minflt, usage.ru_stime))
    for binary, runs in results.items():
        print(
            "%-40s %.4f s  %d faults  %.3f s system"
            % (
                binary,
                statistics.median(r[0] for r in runs),
                statistics.median(r[1] for r in runs),
                statistics.median(r[2] for r in runs),
            )
        )


if __name__ == "__main__":
    main()
