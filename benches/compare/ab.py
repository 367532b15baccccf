#!/usr/bin/env python3
"""Alternating A/B runs of scan-like binaries that print one JSON line with ``seconds``.

    python3 benches/compare/ab.py 21 FILE "scan:--decompress-only" "old/scan" "new/scan"
    python3 benches/compare/ab.py 11 FILE "scan:--decompress-only" "MALLOC_ARENA_MAX=2|scan"

Each SPEC is ``[ENV=VALUE ...|]BINARY[:ARGS]``; the first one is the floor the
others are compared with. Every round runs each SPEC once, in turn, as a fresh
process. Printed per SPEC: the median wall time the binary reports, the median
over rounds of (floor time / this time) in the same round, and the median peak
RSS, page faults and CPU time (user + system, from ``wait4``). The VM's speed
drifts, so only the per-round ratios compare across SPECs.
"""

import json
import os
import statistics
import subprocess
import sys


def command(spec, path):
    """The command line and environment of ``SPEC`` run on ``path``."""
    env_part, _, rest = spec.rpartition("|")
    binary, _, args = rest.partition(":")
    env = dict(os.environ)
    env.update(kv.split("=", 1) for kv in env_part.split())
    return [binary, path, *args.split()], env


def run(spec, path):
    argv, env = command(spec, path)
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, env=env)
    stdout = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    # Reaped here, so Popen must not wait for it again.
    proc.returncode = code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.exit(f"{spec} failed with exit code {code}")
    seconds = json.loads(stdout.strip().splitlines()[-1])["seconds"]
    cpu = usage.ru_utime + usage.ru_stime
    return seconds, usage.ru_maxrss // 1024, usage.ru_minflt, cpu


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    rounds, path, specs = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
    results = {spec: [] for spec in specs}
    for _ in range(rounds):
        for spec in specs:
            results[spec].append(run(spec, path))
    report(results, "floor")


def report(results, first="first"):
    """Prints, per key of ``results`` (lists of (seconds, MB, faults, CPU) per
    round, in order), the medians and the median of each round's time of the
    first key over this key's."""
    keys = list(results)
    base = [r[0] for r in results[keys[0]]]
    for key in keys:
        seconds = [r[0] for r in results[key]]
        ratio = statistics.median(b / s for b, s in zip(base, seconds))
        rss = statistics.median(r[1] for r in results[key])
        faults = statistics.median(r[2] for r in results[key])
        cpu = statistics.median(r[3] for r in results[key])
        print(f"{key:60s} {statistics.median(seconds):.4f} s  {first}/this {ratio:.3f}  "
              f"{rss:.0f} MB  {faults:.0f} faults  {cpu:.3f} s CPU")

if __name__ == "__main__":
    main()
