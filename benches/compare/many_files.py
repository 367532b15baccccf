#!/usr/bin/env python3
"""Time SQL over a table of many files: N links to one RNTuple file, queried
through ``rntuple sql --table e=DIR/*.root``, alternating between binaries.

    python3 benches/compare/many_files.py --file F.root --copies 1000 --runs 5 old/rntuple new/rntuple

Every query runs once per binary per round, as a fresh process; printed per
binary and query: the median wall time and the median peak RSS. The links
share one file, so the page cache holds it and the times are those of
opening, planning and reading many files' metadata, not of the disk.
"""

import argparse
import os
import statistics
import subprocess
import tempfile
import time

QUERIES = [
    "SELECT count(*) FROM e",
    "SELECT avg(MET_pt) FROM e",
    "SELECT run, event FROM e LIMIT 3",
]


def run(binary, table, query):
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(
            [binary, "sql", "-q", "--table", table, "-c", query],
            stdout=out,
        )
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = code = os.waitstatus_to_exitcode(status)
        seconds = time.perf_counter() - start
        out.seek(0)
        answer = out.read()
    if code != 0:
        raise SystemExit(f"{binary} failed on {query!r} with exit code {code}")
    return seconds, usage.ru_maxrss / 1024, answer


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--file", required=True, help="the RNTuple file to link")
    ap.add_argument("--copies", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--query", action="append", help="instead of the default queries (table e)")
    ap.add_argument("binaries", nargs="+")
    args = ap.parse_args()
    queries = args.query or QUERIES
    with tempfile.TemporaryDirectory() as tmp:
        target = os.path.abspath(args.file)
        for i in range(args.copies):
            os.symlink(target, os.path.join(tmp, f"f{i:06d}.root"))
        table = "e=" + os.path.join(tmp, "*.root")
        results = {(b, q): [] for b in args.binaries for q in queries}
        for _ in range(args.runs):
            for q in queries:
                for b in args.binaries:
                    results[(b, q)].append(run(b, table, q))
    print(f"{args.copies} links to {args.file}, medians of {args.runs} runs")
    disagree = []
    for q in queries:
        print(q)
        answers = {a for b in args.binaries for _, _, a in results[(b, q)]}
        if len(answers) > 1:
            disagree.append(q)
        for b in args.binaries:
            times = [t for t, _, _ in results[(b, q)]]
            rss = [r for _, r, _ in results[(b, q)]]
            print(f"  {b:40s} {statistics.median(times):7.3f} s {statistics.median(rss):8.0f} MB")
    if disagree:
        raise SystemExit(f"the binaries' answers differ: {disagree}")
    print("every run of every binary gave the same answers")


if __name__ == "__main__":
    main()
