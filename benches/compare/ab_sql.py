#!/usr/bin/env python3
"""Alternating A/B runs of ``rntuple sql`` binaries on one query, timed from spawn to exit.

    python3 benches/compare/ab_sql.py 5 benches/adl/q6.sql old/rntuple new/rntuple
    F=/tmp/nanoaod10/nanoaod_10000000.root python3 benches/compare/ab_sql.py 3 benches/adl/q8.sql rntuple

Each round runs every binary once, in turn, as a fresh process:
``BIN sql --table events=$F -f QUERY --format arrow`` with the output to a file
in /dev/shm where there is one (``F`` defaults to /tmp/nanoaod/nanoaod_2000000.root). Printed per binary: the
median wall time, the median over rounds of (first binary's time / this time)
in the same round, and the median peak RSS, page faults and CPU time (user +
system, from ``wait4``), as ``ab.py`` prints them. Compare copies of the binaries made the same way: a binary just
written by the linker maps more of its pages per fault (more RSS).
"""

import os
import subprocess
import sys
import time

from ab import report
from run import scratch_dir

# In memory where there is one, as the harness writes (run.py's scratch_dir).
OUT = os.path.join(scratch_dir() or "/tmp", "ab_sql.out")


def run(binary, query, path):
    with open(OUT, "wb") as out:
        started = time.perf_counter()
        proc = subprocess.Popen(
            [binary, "sql", "--table", "events=" + path, "-f", query, "--format", "arrow"],
            stdout=out,
        )
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - started
    # Reaped here, so Popen must not wait for it again.
    proc.returncode = code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.exit(f"{binary} failed with exit code {code}")
    return seconds, usage.ru_maxrss // 1024, usage.ru_minflt, usage.ru_utime + usage.ru_stime


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    rounds, query, binaries = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
    path = os.environ.get("F", "/tmp/nanoaod/nanoaod_2000000.root")
    results = {b: [] for b in binaries}
    for _ in range(rounds):
        for b in binaries:
            results[b].append(run(b, query, path))
    report(results)


if __name__ == "__main__":
    main()
