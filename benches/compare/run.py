#!/usr/bin/env python3
"""Side-by-side benchmark: this project against ROOT RDataFrame, DuckDB, uproot and pyarrow on the same events.

    pip install root uproot awkward duckdb pyarrow numpy
    python3 benches/nanoaod/generate.py --events 2000000 -o /tmp/nanoaod --parquet
    cargo build --release --bin rntuple    # on its own (the link order of build.rs)
    cargo build --release --example scan
    python3 benches/compare/run.py --data /tmp/nanoaod --events 2000000 --runs 3

Every measurement is a fresh process; the systems alternate within each run (run 1: every system on every task,
then run 2, ...), and the table shows medians. Within a task of a run the systems go in a shuffled order (seeded by
run and task, so reruns repeat it; ``--fixed-order`` keeps the listed one): on a VM, a process that starts right after
another one freed much memory can pay more for its page faults, and a fixed order would put that on the same system
every time. Peak RSS is the process's maximum resident set (GNU time where
installed, else wait4, which also counts the harness's own memory at the fork).

Tasks
-----
q1 .. q8   the ADL queries (benches/adl and the docstring of benches/nanoaod/generate.py). Each system produces the
           values ROOT fills into its histogram, and the harness checks their histogram against ROOT's answers
           (DATA/answers.json, written by generate.py --answers) when that file exists. q6 is two histograms: systems
           that answer them separately (q6a, q6b) are timed as the sum of both.
decode     every column of every event into memory: this project into Arrow record batches (examples/scan.rs),
           uproot ``arrays()``, RDataFrame reading every column in one event loop, pyarrow reading the Parquet file.
zstd       (this project's line only) read and decompress every page, decode nothing: the floor for ``decode``.

Systems and what is timed
-------------------------
rntuple    ``rntuple sql --table events=FILE -f benches/adl/qN.sql --format arrow`` (output to a file in /dev/shm), end to end:
           the whole process, from exec to exit, including opening the file and planning. q6 runs q6.sql, which
           answers both histograms in one pass, as RDataFrame's q6 loop does.
rdf        ROOT RDataFrame, one thread, typed C++ lambdas; only the event loop (JIT and file opening excluded).
rdf-mt     the same with ROOT.EnableImplicitMT(2).
duckdb     DuckDB over the Parquet file (2 threads); the query's execution and fetch, in process.
uproot     uproot + awkward: open, read the needed fields, compute; in process.
pyarrow    (decode only) pyarrow.parquet.read_table, in process.
"""

import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
ADL = os.path.join(REPO, "benches", "adl")
QUERIES = ["q1", "q2", "q3", "q4", "q5", "q6", "q7", "q8"]
PARTS = {"q6": ["q6a", "q6b"]}  # histograms of a query; the others have one, named as the query
SYSTEMS = ["rntuple", "rdf", "rdf-mt", "duckdb", "uproot", "pyarrow"]
TASK_SYSTEMS = {
    **{q: ["rntuple", "rdf", "rdf-mt", "duckdb", "uproot"] for q in QUERIES},
    "decode": ["rntuple", "rdf", "rdf-mt", "uproot", "pyarrow"],
    "zstd": ["rntuple"],
}


def parts(query):
    return PARTS.get(query, [query])


# ---------------------------------------------------------------------------------------------------------------
# Running one measurement in a fresh process
# ---------------------------------------------------------------------------------------------------------------


# Peak RSS comes from GNU time when it is there: the process forked from this
# harness starts with the harness's own resident set (it holds every system's
# values), and Linux counts that in the child's ru_maxrss even after exec.
# time(1) is small, so the process it forks is measured alone.
GNU_TIME = "/usr/bin/time" if os.path.exists("/usr/bin/time") else None


def measure(argv, stdout_path=None):
    """Spawn argv, wait4 it: (wall seconds, peak RSS MB, stdout text)."""
    rss_file = None
    if GNU_TIME:
        rss_file = tempfile.NamedTemporaryFile(delete=False)
        rss_file.close()
        argv = [GNU_TIME, "-f", "%M", "-o", rss_file.name] + list(argv)
    out_file = open(stdout_path, "wb") if stdout_path else tempfile.TemporaryFile()
    err_file = tempfile.TemporaryFile()
    # subprocess spawns with vfork/posix_spawn: the child does not copy the
    # harness's page tables (a fork of this process, which holds pyarrow and
    # the answers, cost the measured command 5-13 ms).
    start = time.perf_counter()
    child = subprocess.Popen(argv, stdout=out_file, stderr=err_file, close_fds=True)
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - start
    rss_mb = usage.ru_maxrss / 1024.0
    if rss_file:
        with open(rss_file.name) as f:
            lines = [l for l in f.read().split() if l.isdigit()]
        os.unlink(rss_file.name)
        if lines:
            rss_mb = int(lines[-1]) / 1024.0
    err_file.seek(0)
    err = err_file.read().decode(errors="replace")
    text = ""
    if not stdout_path:
        out_file.seek(0)
        text = out_file.read().decode(errors="replace")
    out_file.close()
    err_file.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError("%s failed: %s" % (" ".join(argv), err.strip()[-2000:]))
    return seconds, rss_mb, text


def worker(system, task, args):
    """A Python worker process (benches/compare/worker.py) that prints JSON {seconds, values_file?}."""
    argv = [sys.executable, os.path.join(HERE, "worker.py"), system, task, "--data", args.data,
            "--events", str(args.events)]
    return argv


def scratch_dir():
    """Where the measured processes write their values: memory (/dev/shm) where there is one. Every system writes
    or hands back values in memory then, as the in-process peers do. On this VM's ext4 disk, Q1 writing its 16 MB
    to a new file each time took 0.017-0.053 s end to end (medians 0.026-0.031 s), against 0.022-0.027 s in
    /dev/shm; in the harness 0.033-0.048 s against 0.019-0.027 s."""
    shm = "/dev/shm"
    if os.path.isdir(shm) and os.access(shm, os.W_OK):
        return shm
    return None


def warm(paths):
    """Reads files into the page cache. This VM pages out memory it sees as
    cold (DAMON), so between the minutes-apart runs of one system its
    executable and the data files could be re-read from disk; every
    measurement starts with the data and the program's files cached (the
    Python peers' libraries are loaded before their timers start)."""
    for path in paths:
        try:
            with open(path, "rb") as f:
                while f.read(16 << 20):
                    pass
        except OSError:
            pass


def run_one(system, task, args, tmp):
    """Returns (seconds, rss_mb, values) where values maps histogram name -> numpy array (or None)."""
    import numpy as np

    root_file = os.path.join(args.data, "nanoaod_%d.root" % args.events)
    warm([root_file, os.path.join(args.data, "nanoaod_%d.parquet" % args.events),
          os.path.join(args.bin_dir, "rntuple"), os.path.join(args.bin_dir, "examples", "scan")])
    if system == "rntuple" and task == "q6":
        # q6.sql answers both histograms in one pass (x: q6a, y: q6b)
        out = os.path.join(tmp, "q6.arrow")
        argv = [os.path.join(args.bin_dir, "rntuple"), "sql", "--table", "events=" + root_file, "-f",
                os.path.join(ADL, "q6.sql"), "--format", "arrow"]
        seconds, rss, _ = measure(argv, stdout_path=out)
        values = {"q6a": read_arrow_x(out, 0), "q6b": read_arrow_x(out, 1)}
        os.unlink(out)
        return seconds, rss, values
    if system == "rntuple" and task in QUERIES:
        total, rss, values = 0.0, 0.0, {}
        for name in parts(task):
            out = os.path.join(tmp, name + ".arrow")
            argv = [os.path.join(args.bin_dir, "rntuple"), "sql", "--table", "events=" + root_file, "-f", os.path.join(ADL, name + ".sql"),
                    "--format", "arrow"]
            seconds, r, _ = measure(argv, stdout_path=out)
            total += seconds
            rss = max(rss, r)
            values[name] = read_arrow_x(out)
            os.unlink(out)
        return total, rss, values
    if system == "rntuple":
        argv = [os.path.join(args.bin_dir, "examples", "scan"), root_file]
        if task == "zstd":
            argv.append("--decompress-only")
        seconds, rss, text = measure(argv)
        report = json.loads(text.strip().splitlines()[-1])
        if report["entries"] != args.events:
            raise RuntimeError("scan read %d entries, expected %d" % (report["entries"], args.events))
        return seconds, rss, None
    # Python peers: the worker reports its in-process time and writes the values as .npy
    argv = worker(system, task, args) + ["--values-dir", tmp]
    _, rss, text = measure(argv)
    report = json.loads(text.strip().splitlines()[-1])
    values = None
    if task in QUERIES and report.get("values"):
        values = {name: np.load(path) for name, path in report["values"].items()}
        for path in report["values"].values():
            os.unlink(path)
    return report["seconds"], rss, values


def read_arrow_x(path, column=0):
    import numpy as np
    import pyarrow as pa

    with pa.OSFile(path, "rb") as f:
        table = pa.ipc.open_stream(f).read_all()
    if table.num_rows == 0:
        return np.zeros(0)
    return table.column(column).to_numpy().astype(np.float64)


# ---------------------------------------------------------------------------------------------------------------
# Checking answers against ROOT's histograms
# ---------------------------------------------------------------------------------------------------------------


def check(values, answers):
    """'ok' when every histogram matches ROOT's (fills and bin counts), else a short description."""
    if values is None or answers is None:
        return ""
    sys.path.insert(0, os.path.join(REPO, "benches", "nanoaod"))
    from generate import bin_counts  # noqa: PLC0415

    problems = []
    for name, v in values.items():
        a = answers[name]
        counts, under, over = bin_counts(v, a["lo"], a["hi"], a["bins"])
        if len(v) != a["fills"]:
            problems.append("%s: %d fills, ROOT %d" % (name, len(v), a["fills"]))
        elif (counts, under, over) != (a["counts"], a["underflow"], a["overflow"]):
            diff = sum(abs(x - y) for x, y in zip(counts, a["counts"]))
            problems.append("%s: histogram differs from ROOT's in %d entries" % (name, diff))
    return "; ".join(problems) or "ok"


# ---------------------------------------------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------------------------------------------


def fmt_s(x):
    return "-" if x is None else ("%.3f" % x if x < 10 else "%.1f" % x)


def table(results, tasks, systems):
    """Markdown: per task, median seconds and peak RSS per system, and each peer's time over this project's."""
    lines = []
    head = "| task | " + " | ".join(systems) + " |"
    lines.append(head)
    lines.append("|" + "---|" * (len(systems) + 1))
    for task in tasks:
        base = median(results, task, "rntuple", "seconds")
        cells = []
        for s in systems:
            m = median(results, task, s, "seconds")
            rss = median(results, task, s, "rss")
            if m is None:
                cells.append("")
                continue
            cell = "%s s" % fmt_s(m)
            if s != "rntuple" and base:
                cell += " (%.1fx)" % (m / base)
            cell += " · %d MB" % round(rss)
            cells.append(cell)
        lines.append("| %s | %s |" % (task, " | ".join(cells)))
    return "\n".join(lines)


def median(results, task, system, key):
    xs = [r[key] for r in results if r["task"] == task and r["system"] == system and r.get(key) is not None]
    return statistics.median(xs) if xs else None


def machine():
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = ""
    try:
        with open("/proc/meminfo") as f:
            mem = "%.0f GB" % (int(f.readline().split()[1]) / 1024 / 1024)
    except OSError:
        pass
    return "%s, %d cores, %s, %s" % (cpu, os.cpu_count(), mem, platform.platform())


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default="/tmp/nanoaod", help="folder of nanoaod_N.root / .parquet / answers.json")
    parser.add_argument("--events", type=int, default=2_000_000)
    parser.add_argument("--runs", type=int, default=3, help="fresh processes per system and task (median)")
    parser.add_argument("--tasks", default=",".join(QUERIES + ["decode", "zstd"]))
    parser.add_argument("--systems", default=",".join(SYSTEMS))
    parser.add_argument("--bin-dir", default=os.path.join(REPO, "target", "release"))
    parser.add_argument("--json", metavar="FILE", help="also write every measurement as JSON")
    parser.add_argument("--fixed-order", action="store_true", help="run the systems of a task in the listed order")
    args = parser.parse_args()

    tasks = args.tasks.split(",")
    systems = [s for s in args.systems.split(",") if s]
    answers = None
    answers_path = os.path.join(args.data, "answers.json")
    if os.path.exists(answers_path):
        with open(answers_path) as f:
            answers = json.load(f)
        if answers.get("meta", {}).get("events") not in (None, args.events):
            answers = None
    if answers is None:
        print("note: no ROOT answers for %d events in %s; results are not checked" % (args.events, args.data))

    results = []
    with tempfile.TemporaryDirectory(dir=scratch_dir()) as tmp:
        for run in range(args.runs):
            for task in tasks:
                order = list(systems)
                if not args.fixed_order:
                    random.Random("%d %s" % (run, task)).shuffle(order)
                for system in order:
                    if system not in TASK_SYSTEMS.get(task, []):
                        continue
                    try:
                        seconds, rss, values = run_one(system, task, args, tmp)
                        verdict = check(values, answers)
                        results.append({"run": run, "task": task, "system": system, "seconds": seconds,
                                        "rss": rss, "check": verdict})
                        print("run %d %-6s %-8s %8.3f s %7.0f MB %s" % (run + 1, task, system, seconds, rss, verdict),
                              flush=True)
                    except Exception as e:  # a peer failing must not hide the others
                        results.append({"run": run, "task": task, "system": system, "error": str(e)})
                        print("run %d %-6s %-8s failed: %s" % (run + 1, task, system, str(e)[:300]), flush=True)

    shown = [s for s in systems if any(r["system"] == s and "seconds" in r for r in results)]
    print()
    print("%d events, median of %d runs; machine: %s" % (args.events, args.runs, machine()))
    print("(Nx) = the system's time over rntuple's; MB = peak RSS")
    print()
    print(table(results, tasks, shown))
    bad = [r for r in results if r.get("check") not in (None, "", "ok")]
    for r in bad:
        print("check failed: %s %s: %s" % (r["task"], r["system"], r["check"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"events": args.events, "runs": args.runs, "machine": machine(), "results": results}, f,
                      indent=1)


if __name__ == "__main__":
    main()
