#!/usr/bin/env python3
"""Where the CPU of scan-like runs goes, by kind of work, side by side.

    S=target/release/examples/scan
    python3 benches/compare/perf_categories.py 3 FILE "$S:--decompress-only" "$S:--batches-ahead 0" "$S"

Each SPEC is ``[ENV=VALUE ...|]BINARY[:ARGS]``, as for ``ab.py``. Every
round runs each SPEC once, in turn, as a fresh process under ``perf record
-e cycles -c 200000`` (one sample per 200,000 cycles, so counts compare
across SPECs), and the table shows the mean samples per process of each
kind of work. Needs ``perf`` with access to kernel symbols.
"""

import collections
import os
import subprocess
import sys
import tempfile

from ab import command

# (kind, words that put a symbol in it), checked in order; kernel symbols
# and user symbols are told apart by perf's dso column.
USER_KINDS = [
    ("zstd", ("ZSTD", "HUF_", "FSE_")),
    ("XXH3 (checksums)", ("xxh", "xxhash")),
    ("streaming stores", ("streaming",)),
    ("value kernels", ("decode_values_in", "zigzag_values", "unsplit", "narrow_index",
                       "delta", "extend_from_bits")),
    ("index and assembly", ("for_each_index", "read_inner", "read_primitive", "assemble",
                            "DecodedIndex")),
    ("memcpy / memset", ("memmove", "memcpy", "memset")),
    ("malloc / free", ("malloc", "free", "realloc", "calloc", "unlink_chunk", "sysmalloc",
                       "consolidate")),
    ("rayon", ("rayon", "crossbeam")),
]
KERNEL_KINDS = [
    ("kernel: file reads", ("copy_to_iter", "filemap", "xas_", "xa_load", "read", "touch_atime")),
    ("kernel: page faults", ("fault", "page", "folio", "memcg", "lru", "alloc", "clear", "rmap",
                             "pte", "list_del", "vma", "charge", "zone", "rcu", "pmd")),
    ("kernel: scheduling", ("sched", "switch", "futex", "wake", "spin", "idle", "tick", "irq",
                            "enqueue", "dequeue", "update_")),
]


def kind(dso, symbol):
    kernel = "kernel" in dso
    for name, words in KERNEL_KINDS if kernel else USER_KINDS:
        if any(w in symbol for w in words):
            return name
    return "kernel: other" if kernel else "other user code"


def profile(spec, path, out):
    argv, env = command(spec, path)
    subprocess.run(
        ["perf", "record", "-q", "-e", "cycles", "-c", "200000", "-o", out, *argv],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=True,
    )
    report = subprocess.run(
        ["perf", "report", "-i", out, "--no-children", "--stdio", "-F", "sample,dso,sym"],
        capture_output=True, text=True, check=True,
    ).stdout
    counts = collections.Counter()
    for line in report.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split(None, 2)
        if len(parts) < 3 or not parts[0].isdigit():
            continue
        counts[kind(parts[1], parts[2])] += int(parts[0])
    return counts


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    rounds, path, specs = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
    totals = {spec: collections.Counter() for spec in specs}
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "perf.data")
        for _ in range(rounds):
            for spec in specs:
                totals[spec].update(profile(spec, path, out))
    kinds = sorted({k for c in totals.values() for k in c},
                   key=lambda k: -max(c[k] for c in totals.values()))
    width = max(len(k) for k in kinds + ["total"])
    for i, spec in enumerate(specs):
        print(f"[{i}] {spec}")
    print(f"{'':{width}} " + " ".join(f"{f'[{i}]':>8}" for i in range(len(specs))))
    for k in kinds + ["total"]:
        cells = []
        for spec in specs:
            c = totals[spec]
            n = sum(c.values()) if k == "total" else c[k]
            cells.append(f"{n / rounds:8.1f}")
        print(f"{k:{width}} " + " ".join(cells))


if __name__ == "__main__":
    main()
