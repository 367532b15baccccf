#!/usr/bin/env python3
"""Alternating A/B runs of ``open_phases`` binaries on the wide NanoAOD file.

    python3 benches/compare/ab_open.py 15 old/open_phases new/open_phases

Each round runs every binary once, in turn (the order alternates between
rounds), as a fresh process: ``BIN FILE 100``, with FILE the 1,680-field CMS
NanoAOD file of the corpus (``RNTUPLE_CORPUS``, by default ../shared/corpus).
Printed per binary: the median of each phase's mean time, and for the others
the median over rounds of (this total / the first binary's total) in the
same round. The VM's speed drifts, so only the per-round ratios compare.
"""

import os
import statistics
import subprocess
import sys

NANOAOD = "cmsopendata2015_ttbar_19980_NANOAOD_RNTupleImporter_rntuple_v1-0-0-1.root"


def phases(binary, path):
    out = subprocess.run([binary, path, "100"], capture_output=True, text=True, check=True).stdout
    # Lines like "logical -> physical  1.232 ms".
    return {line.rsplit(None, 2)[0].strip(): float(line.split()[-2]) for line in out.splitlines()}


def main():
    rounds, binaries = int(sys.argv[1]), sys.argv[2:]
    corpus = os.environ.get("RNTUPLE_CORPUS", os.path.join(os.path.dirname(__file__), "../../../shared/corpus"))
    path = os.path.join(corpus, NANOAOD)
    results = {b: [] for b in binaries}
    for r in range(rounds):
        for b in binaries if r % 2 == 0 else binaries[::-1]:
            results[b].append(phases(b, path))
    for b in binaries:
        names = results[b][0].keys()
        print(b, "  ".join(f"{n}: {statistics.median(x[n] for x in results[b]):.3f}" for n in names))
    first = binaries[0]
    for b in binaries[1:]:
        ratio = statistics.median(
            results[b][i]["total"] / results[first][i]["total"] for i in range(rounds)
        )
        print(f"{b} / {first}: median ratio of totals {ratio:.3f}")


if __name__ == "__main__":
    main()
