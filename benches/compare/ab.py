#!/usr/bin/env python3
"""Alternating A/B runs of scan-like binaries that print one JSON line with ``seconds``.

    python3 benches/compare/ab.py 21 FILE "scan:--decompress-only" "old/scan" "new/scan"
    python3 benches/compare/ab.py 11 FILE "scan:--decompress-only" "MALLOC_ARENA_MAX=2|scan"

Each SPEC is ``[ENV=VALUE ...|]BINARY[:ARGS]``; the first one is the floor the
others are compared with. Every round runs each SPEC once, in turn, as a fresh
process under ``/usr/bin/time``. Printed per SPEC: the median wall time the
binary reports, the median over rounds of (floor time / this time) in the same
round, and the median peak RSS and page faults. The VM's speed drifts, so only
the per-round ratios compare across SPECs.
"""

import json
import os
import statistics
import subprocess
import sys


def run(spec, path):
    env_part, _, rest = spec.rpartition("|")
    binary, _, args = rest.partition(":")
    env = dict(os.environ)
    env.update(kv.split("=", 1) for kv in env_part.split())
    proc = subprocess.run(
        ["/usr/bin/time", "-f", "%M %R", binary, path, *args.split()],
        capture_output=True, text=True, env=env, check=True,
    )
    seconds = json.loads(proc.stdout.strip().splitlines()[-1])["seconds"]
    rss_kb, faults = proc.stderr.strip().splitlines()[-1].split()
    return seconds, int(rss_kb) // 1024, int(faults)


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    rounds, path, specs = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
    results = {spec: [] for spec in specs}
    for _ in range(rounds):
        for spec in specs:
            results[spec].append(run(spec, path))
    floor = [seconds for seconds, _, _ in results[specs[0]]]
    for spec in specs:
        seconds = [r[0] for r in results[spec]]
        ratio = statistics.median(f / s for f, s in zip(floor, seconds))
        rss = statistics.median(r[1] for r in results[spec])
        faults = statistics.median(r[2] for r in results[spec])
        print(f"{spec:60s} {statistics.median(seconds):.4f} s  floor/this {ratio:.3f}  "
              f"{rss:.0f} MB  {faults:.0f} faults")


if __name__ == "__main__":
    main()
