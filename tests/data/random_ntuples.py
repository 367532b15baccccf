#!/usr/bin/env python3
"""Random RNTuples written by ROOT, each with ROOT's reading of it.

    python3 tests/data/random_ntuples.py DIR [--seeds 1-200]
    RNTUPLE_RANDOM_DIR=DIR cargo test --test random_ntuples

For each seed, a random schema of nested standard types (vectors, RVecs,
arrays, optionals, unique_ptrs, variants, pairs, tuples, bitsets, strings and
every fundamental type, atomics, and user classes, enums, sets and maps from a
random set compiled once), random column representations (reduced precision of
reals included; some fields keep two and switch between them from cluster to
cluster), fields that join late through a model extension, random page and
cluster sizes, compression and storage options (page checksums, same-page
merging, unbuffered writes, cluster groups, small keys, a parallel writer),
projected fields (aliases, cardinalities and members of records), classes
stored with ROOT's streamer and TObjects (`--streamed`), and random values
(`fixtures::nested` of generate.py) go to DIR/rNNNN.root, and ROOT's reading
of it to DIR/rNNNN.json in the golden format. Some (`--merged`) are merged
from two or three such files by ROOT's merger, as `hadd` merges them. The test
compares every file of DIR with its golden and reads it in batches of several
sizes. The files are not committed: `nested.root` holds the cases these runs
found. Needs what generate.py needs (`pip install root`, a C++ compiler).
"""

import argparse
import json
import os
import random
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import generate  # noqa: E402

SCALARS = ["bool", "char", "std::int8_t", "std::uint8_t", "std::int16_t", "std::uint16_t",
           "std::int32_t", "std::uint32_t", "std::int64_t", "std::uint64_t", "float", "double",
           "std::string"]


def random_type(r, depth, top=False, user=(), member=False):
    """A random C++ type of nesting depth at most `depth`, its leaves
    fundamental types, strings or the user types `user`. Maps and sets are
    left out (ROOT needs a dictionary to write them inside other types), and
    unique_ptr is only a field's or member's own type (containers copy their
    items). A class `member` holds no optional: ROOT 6.40 does not find the
    optional field for one ("optional<...> is not supported")."""
    if top and not member and r.random() < 0.05:
        return "std::atomic<%s>" % r.choice(SCALARS[:-1])
    if depth <= 0 or r.random() < 0.35:
        if user and r.random() < 0.3:
            return r.choice(user)
        return r.choice(SCALARS)
    inner = lambda: random_type(r, depth - 1, user=user, member=member)  # noqa: E731
    k = r.randrange(11)
    if k == 0:
        return "ROOT::RVec<%s>" % inner()
    if k == 1:
        return "std::array<%s,%d>" % (inner(), r.choice([1, 2, 3, 5]))
    if k == 2:
        return ("std::vector<%s>" if member else "std::optional<%s>") % inner()
    if k == 3:
        if top:
            return "std::unique_ptr<%s>" % inner()
        return ("std::vector<%s>" if member else "std::optional<%s>") % inner()
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


def class_code(name, base, members):
    """The declaration of the class `name`, deriving from `base` if given,
    with `members` (type, declarator, name), and its `Fill` (C++ for
    `fixtures::nested`)."""
    declaration = ["struct %s%s {" % (name, " : public " + base if base else "")]
    declaration.extend("   %s %s{};" % (t, d) for t, d, _ in members)
    declaration.append("};")
    body = ["Fill<%s>::Do(x, r);" % base] if base else []
    body.extend("Fill<decltype(x.%s)>::Do(x.%s, r);" % (m, m) for _, _, m in members)
    fill = ("template <>\nstruct Fill<%s> {\n   static void Do(%s &x, Rng &r)\n   {\n      %s\n   }\n};"
            % (name, name, "\n      ".join(body) or "(void)x, (void)r;"))
    return declaration, fill


def random_classes(r, n_classes, n_enums, n_associative):
    """Random user types: enums of every underlying width, classes whose
    members are random types of the enums and earlier classes, some derived
    from an earlier class, some with C arrays, sets and maps of random keys
    and values, classes stored with ROOT's streamer, and TObject. Returns the
    header, the LinkDef, the `Fill` of each class (C++ for
    `fixtures::nested`) and the type names."""
    header = ["#pragma once", "#include <ROOT/RVec.hxx>", "#include <array>", "#include <bitset>", "#include <cstdint>",
              "#include <map>", "#include <memory>", "#include <optional>", "#include <set>", "#include <string>",
              "#include <tuple>", "#include <unordered_map>", "#include <unordered_set>", "#include <utility>",
              "#include <variant>", "#include <vector>", ""]
    linkdef = ["#ifdef __CLING__"]
    fills = []
    names = []
    for k in range(n_enums):
        name = "RandomEnum%d" % k
        underlying = r.choice(["std::int8_t", "std::uint8_t", "std::int16_t", "std::uint16_t", "std::int32_t",
                               "std::uint32_t", "std::int64_t", "std::uint64_t"])
        header.append("enum class %s : %s { kA = 0, kB = 1, kC = 100 };" % (name, underlying))
        linkdef.append("#pragma link C++ enum %s;" % name)
        names.append(name)
    classes = []
    for k in range(n_classes):
        name = "RandomClass%d" % k
        base = r.choice(classes) if classes and r.random() < 0.3 else None
        members = []
        for m in range(r.choice([0, 1, 1, 2, 3, 4])):
            if r.random() < 0.1:
                members.append(("%s" % r.choice(SCALARS[1:12]), "m%d[%d]" % (m, r.choice([1, 3])), "m%d" % m))
            else:
                members.append((random_type(r, 2, True, names, True), "m%d" % m, "m%d" % m))
        declaration, fill = class_code(name, base, members)
        header.extend(declaration)
        linkdef.append("#pragma link C++ class %s+;" % name)
        fills.append(fill)
        classes.append(name)
        names.append(name)
    # Sets and maps, with compiled collection proxies: ROOT 6.40 aborts
    # writing some through the interpreted ones.
    for k in range(n_associative):
        kind = r.choice(["set", "multiset", "unordered_set", "map", "multimap", "unordered_map",
                         "unordered_multimap"])
        key = r.choice([t for t in SCALARS if t not in ("float", "double")])
        if "set" in kind:
            name = "std::%s<%s>" % (kind, key)
        else:
            name = "std::%s<%s,%s>" % (kind, key, random_type(r, 1, user=names, member=True))
        linkdef.append("#pragma link C++ class %s+;" % name)
        names.append(name)
    # Classes stored with ROOT's streamer, from a generator of their own
    # (the types above stay those of earlier runs).
    more_header, more_linkdef, more_fills, streamed = streamed_classes(random.Random(1), 6)
    header.extend(more_header)
    linkdef.extend(more_linkdef)
    fills.extend(more_fills)
    names.extend(streamed)
    names.append("TObject")
    linkdef.append("#endif")
    code = "namespace fixtures {\nnamespace nested {\n%s\n}\n}\n" % "\n".join(fills)
    return "\n".join(header) + "\n", "\n".join(linkdef) + "\n", code, names


def streamable_type(r, depth, streamed, pairs):
    """A random type that ROOT's streamer writes (fundamental types, strings,
    vectors, pairs and the classes `streamed`), of nesting depth at most
    `depth`: the members of a class stored with ROOT's streamer. The pairs
    go to the set `pairs`: the streamer needs a dictionary for each."""
    if depth <= 0 or r.random() < 0.4:
        if streamed and r.random() < 0.3:
            return r.choice(streamed)
        return r.choice(SCALARS)
    inner = lambda: streamable_type(r, depth - 1, streamed, pairs)  # noqa: E731
    if r.random() < 0.25:
        pair = "std::pair<%s,%s>" % (inner(), inner())
        pairs.append(pair)
        return pair
    return "std::vector<%s>" % inner()


def object_field(r, objects):
    """A random field type that holds one of the classes `objects` (classes
    stored with ROOT's streamer, TObject), alone or inside other types."""
    for _ in range(100):
        t = random_type(r, 2, True, objects)
        if any(name in t for name in objects):
            return t
    return r.choice(objects)


def streamed_classes(r, n_classes):
    """Random classes stored with ROOT's streamer (`rntupleStreamerMode`):
    each an RNTuple field of its streamed bytes wherever it appears. Their
    members are types the streamer writes, C arrays and earlier such
    classes; some derive from an earlier one. Returns the header, the
    LinkDef lines, the `Fill` of each class and the type names."""
    header, linkdef, fills, names, pairs = [], [], [], [], []
    for k in range(n_classes):
        name = "RandomStreamed%d" % k
        base = r.choice(names) if names and r.random() < 0.3 else None
        members = []
        for m in range(r.choice([0, 1, 2, 3, 4])):
            if r.random() < 0.15:
                members.append((r.choice(SCALARS[1:12]), "m%d[%d]" % (m, r.choice([1, 3])), "m%d" % m))
            else:
                members.append((streamable_type(r, 2, names, pairs), "m%d" % m, "m%d" % m))
        declaration, fill = class_code(name, base, members)
        header.extend(declaration)
        linkdef.append("#pragma link C++ options=rntupleStreamerMode(true) class %s+;" % name)
        fills.append(fill)
        names.append(name)
    linkdef.extend("#pragma link C++ class %s+;" % pair for pair in dict.fromkeys(pairs))
    return header, linkdef, fills, names


class File:
    """The writing options of one random file (the arguments of WriteRandom
    of generate.py after its seed)."""

    def __init__(self, n, page, cluster, compression, represent, late, at, commit_first,
                 storage, max_key, project):
        self.n, self.page, self.cluster, self.compression = n, page, cluster, compression
        self.represent, self.late, self.at, self.commit_first = represent, late, at, commit_first
        self.storage, self.max_key, self.project = storage, max_key, project

    def arguments(self, seed):
        """The arguments of WriteRandom from `n` on, with `seed`, as C++."""
        return "%d, %d, %d, %d, %d, %d, %d, %s, %s, %d, %d, %d" % (
            self.n, self.page, self.cluster, self.compression, seed, self.late, self.at,
            "true" if self.commit_first else "false", "true" if self.represent else "false",
            self.storage, self.max_key, self.project)

    @property
    def summary(self):
        extension = ""
        if self.late:
            extension = ", last %d late at entry %d%s" % (
                self.late, self.at, " after a cluster" if self.commit_first else "")
        options = [name for bit, name in ((1, "no checksums"), (2, "no same-page merging"),
                                          (4, "unbuffered"), (8, "cluster groups"),
                                          (16, "parallel writer"), (32, "one representation"))
                   if self.storage & bit]
        if self.max_key:
            options.append("keys <= %d B" % self.max_key)
        if self.project:
            options.append("projections %#x" % self.project)
        return "%d entries, pages <= %d B, clusters ~%d B, compression %d%s%s%s" % (
            self.n, self.page, self.cluster, self.compression,
            ", random representations" if self.represent else "", extension,
            "".join(", " + o for o in options))


def draw_file(r, types, projections):
    """Draws the writing options of one file of the fields `types`, with
    projected fields in a share `projections` of files."""
    n = r.choice([1, 5, 100, 1000, 3000])
    page = r.choice([16, 64, 200, 1024, 4096])
    cluster = r.choice([1000, 5000, 50000, 200000])
    compression = r.choice([0, 101, 207, 404, 505])
    # Random column representations (and reduced precision of reals)
    # most of the time; sometimes the last fields join late, through
    # a model extension after a committed cluster or inside one.
    represent = r.random() < 0.7
    late = r.randint(1, len(types)) if r.random() < 0.4 else 0
    # ROOT extends no model with a streamed class (it refuses a top-level
    # one, and reads a nested one's earlier entries by streaming an empty
    # buffer): the late fields stop before the last that holds one.
    late = min(late, next((k for k, t in enumerate(reversed(types)) if "RandomStreamed" in t), late))
    at = r.randrange(n)
    commit_first = r.random() < 0.5
    # Storage options (EStorage of generate.py): no page checksums,
    # no same-page merging, unbuffered writes, cluster groups; and
    # sometimes keys so small that pages and envelopes span several
    # (ROOT needs a blob's chunk offsets to fit its first key: keys of
    # K bytes hold blobs of up to K*K/8 bytes).
    storage = r.randrange(16) if r.random() < 0.5 else 0
    if r.random() < 0.15:
        # A parallel writer: clusters of three fill contexts
        # interleave; it writes buffered, extends no model and ends
        # no cluster group.
        storage = (storage & ~(4 | 8)) | 16
        late = 0
    max_key = r.choice([0, 0, 0, 2048, 4096, 16384])
    # Projected fields: a field's alias (bit k), a collection's
    # cardinality (bit k + 8) and a member of a record or of a
    # collection's records (bit k + 16), for some fields.
    project = 0
    if r.random() < projections:
        for k in range(len(types)):
            project |= ((r.random() < 0.5) << k | (r.random() < 0.5) << (k + 8)
                        | (r.random() < 0.5) << (k + 16))
    return File(n, page, cluster, compression, represent, late, at, commit_first, storage,
                max_key, project)


def draw_merge(r, name, seed, types, files, projections):
    """Draws a merge as hadd merges (`files` holds the first file's options;
    the others are drawn and added): two or three files of `types`, each
    written with options of its own, merged in a random mode; in Filter and
    Union modes the files may lack fields (Filter: the later ones have at
    least the first's). Returns the C++ function `write_NAME` and the
    summary."""
    files += [draw_file(r, types, projections) for _ in range(r.randint(1, 2))]
    # ROOT's merger needs the files' columns alike: the same representations
    # (drawn from the same seed, none switching), all compressed or none,
    # page checksums in all, the same projections. And ROOT 6.40's merger
    # writes a page list that does not follow the entries when a later file
    # lacks a field of several elements per entry (arrays, bitsets, classes
    # that may hold C arrays) in some of its clusters: such fields are in
    # every file, and only the first file has late fields.
    for file in files[1:]:
        file.late = 0
    for file in files:
        file.represent = files[0].represent
        file.storage = (file.storage & ~1) | 32
        file.project = files[0].project
        if (file.compression == 0) != (files[0].compression == 0):
            file.compression = 505 if files[0].compression else 0
    mode = r.choice(["Filter", "Union", "Union", "Strict"])
    compression = r.choice([-1, -1, 0, 101, 207, 404, 505])
    every = (1 << len(types)) - 1
    absent = [0] * len(files)
    repeated = sum(1 << k for k, t in enumerate(types) if any(
        word in t for word in ("std::array", "std::bitset", "Random")))
    if mode != "Strict" and len(types) > 1:
        absent = [r.randrange(every) & ~repeated if r.random() < 0.5 else 0 for _ in files]
        if mode == "Filter":
            absent = [absent[0]] + [a & absent[0] for a in absent[1:]]
    # The values of each file from a seed of its own; its layout (and so its
    # representations) from the RNTuple's seed.
    calls = []
    for j, (file, a) in enumerate(zip(files, absent)):
        calls.append("""
   sources.push_back(std::string(path) + ".%d.root");
   {
      auto file = fixtures::Recreate(sources.back());
      facts += std::string(%s) + fixtures::nested::WriteRandom<%s>(*file, "T", %s, %d, %d);
   }""" % (j, '""' if j == 0 else '", "', ", ".join(types), file.arguments(seed), a, seed + 100000 * j))
    code = """
std::string write_%s(const char *path) {
   std::vector<std::string> sources;
   std::string facts = "[";%s
   fixtures::nested::MergeRandom(sources, path, "%s", %d);
   for (const auto &source : sources)
      std::remove(source.c_str());
   return facts + "]";
}""" % (name, "".join(calls), mode, compression)
    parts = []
    for file, a in zip(files, absent):
        without = ["f%d" % k for k in range(len(types)) if a >> k & 1]
        parts.append("[%s%s]" % (file.summary, "; without " + ", ".join(without) if without else ""))
    summary = "merged in %s mode, %s, of %s: %s" % (
        mode, "the first file's compression" if compression < 0 else "compression %d" % compression,
        " + ".join(parts), "; ".join(types))
    return code, summary


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dir")
    parser.add_argument("--seeds", default="1-100", help="a range FIRST-LAST (default 1-100)")
    parser.add_argument("--projections", type=float, default=0.3, metavar="P",
                        help="the share of files with projected fields (default 0.3)")
    parser.add_argument("--merged", type=float, default=0.15, metavar="P",
                        help="the share of RNTuples merged from several files (default 0.15)")
    parser.add_argument("--streamed", type=float, default=0.15, metavar="P",
                        help="the share of RNTuples given one more field of a class stored with ROOT's "
                             "streamer or of TObject (default 0.15)")
    args = parser.parse_args()
    first, last = (int(x) for x in args.seeds.split("-"))
    os.makedirs(args.dir, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="rntuple-random-") as build_dir:
        generate.init_root(build_dir)
        root = generate.ROOT
        # One set of user types for every seed, from its own seed.
        header, linkdef, fills, user = random_classes(random.Random(0), 24, 4, 8)
        objects = [name for name in user if name.startswith("RandomStreamed") or name == "TObject"]
        generate.load_dictionary(build_dir, "RandomTypes", header, linkdef)
        if not root.gInterpreter.Declare(fills):
            sys.exit("cannot declare the Fill of the random classes")
        counts = {"written": 0}
        for seed in range(first, last + 1):
            r = random.Random(seed)
            types = [random_type(r, 3, True, user if r.random() < 0.4 else ())
                     for _ in range(r.randint(1, 5))]
            # One more field holding a streamed class or a TObject, first (a
            # streamed class cannot join late), drawn from a generator of
            # its own.
            extra = random.Random(-seed)
            if extra.random() < args.streamed:
                types.insert(0, object_field(extra, objects))
            name = "r%04d" % seed
            files = [draw_file(r, types, args.projections)]
            if r.random() < args.merged:
                code, summary = draw_merge(r, name, seed, types, files, args.projections)
            else:
                summary = "%s: %s" % (files[0].summary, "; ".join(types))
                code = """
std::string write_%s(const char *path) {
   auto file = fixtures::Recreate(path);
   return fixtures::nested::WriteRandom<%s>(*file, "T", %s);
}""" % (name, ", ".join(types), files[0].arguments(seed))
            # Each seed is written in a child process: ROOT fails on some
            # (exceptions, aborts), and then only that seed is lost.
            # The child tells what the RNTuple holds beyond the options drawn
            # here (RandomFacts of generate.py) through a pipe.
            sys.stdout.flush()
            read_end, write_end = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(read_end)
                os._exit(write_seed(root, args.dir, name, code, write_end))
            os.close(write_end)
            with os.fdopen(read_end) as pipe:
                facts = json.loads(pipe.read() or "{}")
            if isinstance(facts, list):
                facts = {key: sum(f[key] for f in facts) for key in (facts[0] if facts else {})}
            _, status = os.waitpid(pid, 0)
            code = os.waitstatus_to_exitcode(status)
            if code == 0:
                for key, what in (("switching", "fields switching representation"),
                                  ("members", "projected members of records"),
                                  ("item_members", "projected members of items")):
                    if facts.get(key):
                        summary += "; %s: %d" % (what, facts[key])
                        counts["with " + what] = counts.get("with " + what, 0) + 1
                for key, word in (("with streamed classes", "RandomStreamed"), ("with TObjects", "TObject")):
                    if any(word in t for t in types):
                        counts[key] = counts.get(key, 0) + 1
                if len(files) > 1:
                    counts["merged"] = counts.get("merged", 0) + 1
                print("%s: %s" % (name, summary), flush=True)
                counts["written"] += 1
                continue
            for ext in [".root", ".json"] + [".root.%d.root" % j for j in range(len(files))]:
                if os.path.exists(os.path.join(args.dir, name + ext)):
                    os.remove(os.path.join(args.dir, name + ext))
            reason = {2: "ROOT cannot compile it", 3: "ROOT's writer fails",
                      4: "ROOT's merger fails"}.get(code, "ROOT crashes (%d)" % code)
            print("%s: skipped, %s: %s" % (name, reason, summary), flush=True)
            counts[reason.split(" (")[0]] = counts.get(reason.split(" (")[0], 0) + 1
    print("; ".join("%s %d" % kv for kv in counts.items()))


def write_seed(root, directory, name, code, pipe):
    """Writes one random RNTuple and its golden (in a child process), and
    what it holds (RandomFacts, JSON) to the descriptor `pipe`; returns the exit code: 0, 2 if the code does not compile, 3 if
    ROOT throws."""
    try:
        if not root.gInterpreter.Declare(code):
            return 2
        path = os.path.join(directory, name + ".root")
        facts = str(getattr(root, "write_" + name)(path))
        golden = generate.dump(path)
        with open(os.path.join(directory, name + ".json"), "w", encoding="utf-8") as f:
            f.write(generate.format_golden(golden))
        os.write(pipe, facts.encode())
        return 0
    except Exception as e:  # noqa: BLE001 - any failure of ROOT's loses only this seed
        print("%s: %s" % (name, str(e).strip().splitlines()[:2]), file=sys.stderr)
        return 4 if "the merger fails" in str(e) else 3
    finally:
        sys.stdout.flush()
        sys.stderr.flush()

if __name__ == "__main__":
    main()
