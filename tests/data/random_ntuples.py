#!/usr/bin/env python3
"""Random RNTuples written by ROOT, each with ROOT's reading of it.

    python3 tests/data/random_ntuples.py DIR [--seeds 1-200]
    RNTUPLE_RANDOM_DIR=DIR cargo test --test random_ntuples

For each seed, a random schema of nested standard types (vectors, RVecs,
arrays, optionals, unique_ptrs, variants, pairs, tuples, bitsets, strings and
every fundamental type), random page and cluster sizes and compression, and
random values (`fixtures::nested` of generate.py) go to DIR/rNNNN.root, and
ROOT's reading of it to DIR/rNNNN.json in the golden format. The test
compares every file of DIR with its golden and reads it in batches of several
sizes. The files are not committed: `nested.root` holds the cases these runs
found. Needs what generate.py needs (`pip install root`, a C++ compiler).
"""

import argparse
import os
import random
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import generate  # noqa: E402

SCALARS = ["bool", "char", "std::int8_t", "std::uint8_t", "std::int16_t", "std::uint16_t",
           "std::int32_t", "std::uint32_t", "std::int64_t", "std::uint64_t", "float", "double",
           "std::string"]


def random_type(r, depth, top=False):
    """A random C++ type of nesting depth at most `depth`. Maps and sets are
    left out (ROOT needs a dictionary to write them inside other types), and
    unique_ptr is only a field's own type (containers copy their items)."""
    if depth <= 0 or r.random() < 0.35:
        return r.choice(SCALARS)
    inner = lambda: random_type(r, depth - 1)  # noqa: E731
    k = r.randrange(11)
    if k == 0:
        return "ROOT::RVec<%s>" % inner()
    if k == 1:
        return "std::array<%s,%d>" % (inner(), r.choice([1, 2, 3, 5]))
    if k == 2:
        return "std::optional<%s>" % inner()
    if k == 3:
        return ("std::unique_ptr<%s>" if top else "std::optional<%s>") % inner()
    if k == 4:
        alternatives = sorted(set(inner() for _ in range(r.randint(2, 3))))
        if all(a.startswith(("std::optional<", "std::variant<")) for a in alternatives):
            # Every alternative could be null: an empty optional holding this
            # variant reads like an empty optional alternative (see STATUS.md).
            alternatives.append(r.choice(SCALARS))
        return "std::variant<%s>" % ",".join(alternatives)
    if k == 5:
        return "std::pair<%s,%s>" % (inner(), inner())
    if k == 6:
        return "std::tuple<%s>" % ",".join(inner() for _ in range(r.randint(1, 3)))
    if k == 7:
        return "std::bitset<%d>" % r.choice([1, 8, 65])
    return "std::vector<%s>" % inner()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dir")
    parser.add_argument("--seeds", default="1-100", help="a range FIRST-LAST (default 1-100)")
    args = parser.parse_args()
    first, last = (int(x) for x in args.seeds.split("-"))
    os.makedirs(args.dir, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="rntuple-random-") as build_dir:
        generate.init_root(build_dir)
        root = generate.ROOT
        for seed in range(first, last + 1):
            r = random.Random(seed)
            types = [random_type(r, 3, True) for _ in range(r.randint(1, 5))]
            n = r.choice([1, 5, 100, 1000, 3000])
            page = r.choice([16, 64, 200, 1024, 4096])
            cluster = r.choice([1000, 5000, 50000, 200000])
            compression = r.choice([0, 101, 207, 404, 505])
            name = "r%04d" % seed
            path = os.path.join(args.dir, name + ".root")
            code = """
void write_%s(const char *path) {
   auto file = fixtures::Recreate(path);
   fixtures::nested::Write<%s>(*file, "T", %d, %d, %d, %d, %d);
}""" % (name, ", ".join(types), n, page, cluster, compression, seed)
            if not root.gInterpreter.Declare(code):
                print("%s: ROOT cannot compile %s" % (name, types))
                continue
            getattr(root, "write_" + name)(path)
            golden = generate.dump(path)
            with open(os.path.join(args.dir, name + ".json"), "w", encoding="utf-8") as f:
                f.write(generate.format_golden(golden))
            print("%s: %d entries, pages <= %d B, clusters ~%d B, compression %d: %s"
                  % (name, n, page, cluster, compression, "; ".join(types)), flush=True)


if __name__ == "__main__":
    main()
