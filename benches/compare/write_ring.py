#!/usr/bin/env python3
"""What writing the full decode's output costs once it no longer fits the cache.

    python3 benches/compare/write_ring.py [TOTAL_MIB]

Writes TOTAL_MIB (default 415, the uncompressed pages of the 2,000,000-event
file) as copies of one 1 MiB block into a ring of buffers of 1 MiB, for rings
of several sizes, on one thread. The ring's memory is touched before the
timing, so no page faults are counted: only where the written lines live.
Printed per ring: the best of 5 passes. A ring that fits the L2 or L3 cache
takes the first figure; a ring past the L3 what a decode pays that writes its
batches into memory last written tens of megabytes ago.
"""

import sys
import time

import numpy as np

MIB = 1 << 20


def main():
    total = int(sys.argv[1]) if len(sys.argv) > 1 else 415
    block = np.ones(MIB, dtype=np.uint8)
    for ring_mib in (1, 4, 16, 32, 52, 104):
        ring = [np.zeros(MIB, dtype=np.uint8) for _ in range(ring_mib)]
        for buffer in ring:
            buffer[:] = 1
        best = float("inf")
        for _ in range(5):
            started = time.perf_counter()
            for i in range(total):
                np.copyto(ring[i % ring_mib], block)
            best = min(best, time.perf_counter() - started)
        print(
            f"ring {ring_mib:4d} MiB: {total} MiB written in {best * 1000:6.1f} ms"
            f"  ({total / 1024 / best:5.1f} GiB/s)"
        )


if __name__ == "__main__":
    main()
