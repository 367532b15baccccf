#!/usr/bin/env python3
"""Synthetic events with the full width of a real CMS NanoAOD file, as an RNTuple made by ROOT's RNTupleImporter.

    pip install root                      # ROOT 6.40 from PyPI (needs a C++ compiler at run time)
    python3 benches/nanoaod/generate_wide.py --events 200000 -o /tmp/wide

writes ``DIR/nanoaod_wide_<N>.root``. Its layout is taken from a NanoAOD RNTuple (by default the CMS open-data ttbar
file of the shared corpus, 969 top-level fields): every scalar branch of that file and every leaf-count collection
with all of its members, with their types. The events themselves are drawn at random:

* a collection's multiplicity is Poisson with the mean the template file has for it (at least 0.5), capped at
  3 x mean + 10;
* a float member is one of an angle in [-pi, pi], a log-normal or a normal value, kept to 10, 12, 14 or 23
  mantissa bits (NanoAOD stores many floats with reduced precision), the choice fixed per branch;
* an integer member takes values in [-1, k) for a k fixed per branch (indices, ids, flags), an unsigned char in
  [0, k); a bool is true with a probability fixed per branch (trigger bits are mostly false);
* ``run`` is 1, ``luminosityBlock`` grows every 1,000 events, ``event`` counts from 1.

Branch parameters depend on ``--seed`` and the branch name, events on ``--seed`` and their index. The TTree is
written with LZ4 to a temporary file and then converted by ``RNTupleImporter`` with compression 505 (zstd, level 5)
and ROOT's default cluster and page sizes, as real NanoAOD RNTuples are made.
"""

import argparse
import os
import sys
import tempfile
import time
import warnings
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_TEMPLATE = os.path.join(
    HERE, "..", "..", "..", "shared", "corpus",
    "cmsopendata2015_ttbar_19980_NANOAOD_RNTupleImporter_rntuple_v1-0-0-1.root")

# C++ type of an RNTuple leaf field -> (TTree leaf code, C++ type, kind of values)
LEAF_TYPES = {
    "bool": ("O", "Bool_t", "bool"),
    "float": ("F", "Float_t", "float"),
    "std::int32_t": ("I", "Int_t", "int"),
    "std::uint8_t": ("b", "UChar_t", "uint"),
    "std::uint32_t": ("i", "UInt_t", "uint"),
    "std::uint64_t": ("l", "ULong64_t", "uint"),
    "std::int16_t": ("S", "Short_t", "int"),
    "std::uint16_t": ("s", "UShort_t", "uint"),
    "std::int64_t": ("L", "Long64_t", "int"),
    "double": ("D", "Double_t", "float"),
}

WRITER_CXX = r'''
#include <ROOT/RNTupleImporter.hxx>
#include <TFile.h>
#include <TTree.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace widegen {

// One branch: a scalar (count < 0) or the members of a collection (count = index of its counter).
struct Branch {
   std::string name, leaf;   // branch name, TTree leaf code
   int kind;                 // 0 bool, 1 float, 2 signed, 3 unsigned
   int bytes;                // size of one value
   int counter;              // collection index, or -1 for a scalar
   int shape;                // floats: 0 angle, 1 log-normal, 2 normal; ints: range k
   double p;                 // bools: probability of true; floats: scale
   int mantissa;             // floats: mantissa bits kept
   std::vector<unsigned char> buffer;
};

struct Collection {
   std::string counter;      // e.g. nJet
   double mean;
   UInt_t cap;
   UInt_t n = 0;
};

class Writer {
   std::vector<Collection> fCollections;
   std::vector<Branch> fBranches;
public:
   void AddCollection(const std::string &counter, double mean)
   {
      Collection c;
      c.counter = counter;
      c.mean = mean;
      c.cap = static_cast<UInt_t>(3 * mean + 10);
      fCollections.push_back(c);
   }
   void AddBranch(const std::string &name, const std::string &leaf, int kind, int bytes, int counter, int shape,
                  double p, int mantissa)
   {
      Branch b{name, leaf, kind, bytes, counter, shape, p, mantissa, {}};
      std::size_t cap = counter < 0 ? 1 : fCollections[counter].cap;
      b.buffer.assign(cap * bytes + 8, 0);
      fBranches.push_back(std::move(b));
   }

   void Write(const std::string &path, long events, std::uint64_t seed)
   {
      TFile file(path.c_str(), "RECREATE", "", 404);
      if (file.IsZombie())
         throw std::runtime_error("cannot create " + path);
      auto tree = new TTree("Events", "Events");
      tree->SetDirectory(&file);
      for (auto &c : fCollections)
         tree->Branch(c.counter.c_str(), &c.n, (c.counter + "/i").c_str());
      for (auto &b : fBranches) {
         std::string leaflist = b.name;
         if (b.counter >= 0)
            leaflist += "[" + fCollections[b.counter].counter + "]";
         leaflist += "/" + b.leaf;
         tree->Branch(b.name.c_str(), b.buffer.data(), leaflist.c_str());
      }
      std::mt19937_64 rng(seed);
      std::uniform_real_distribution<double> uniform(0.0, 1.0);
      std::normal_distribution<double> normal(0.0, 1.0);
      for (long i = 0; i < events; ++i) {
         for (auto &c : fCollections) {
            std::poisson_distribution<int> poisson(c.mean);
            c.n = std::min<UInt_t>(poisson(rng), c.cap);
         }
         for (auto &b : fBranches) {
            UInt_t n = b.counter < 0 ? 1 : fCollections[b.counter].n;
            if (b.name == "run") {
               UInt_t v = 1;
               std::memcpy(b.buffer.data(), &v, 4);
               continue;
            }
            if (b.name == "luminosityBlock") {
               UInt_t v = 1 + i / 1000;
               std::memcpy(b.buffer.data(), &v, 4);
               continue;
            }
            if (b.name == "event") {
               ULong64_t v = i + 1;
               std::memcpy(b.buffer.data(), &v, 8);
               continue;
            }
            for (UInt_t j = 0; j < n; ++j) {
               unsigned char *out = b.buffer.data() + j * b.bytes;
               switch (b.kind) {
               case 0: {
                  bool v = uniform(rng) < b.p;
                  std::memcpy(out, &v, 1);
                  break;
               }
               case 1: {
                  double x;
                  if (b.shape == 0)
                     x = (2 * uniform(rng) - 1) * M_PI;
                  else if (b.shape == 1)
                     x = b.p * std::exp(normal(rng));
                  else
                     x = b.p * normal(rng);
                  if (b.bytes == 8) {
                     std::memcpy(out, &x, 8);
                  } else {
                     float f = static_cast<float>(x);
                     std::uint32_t bits;
                     std::memcpy(&bits, &f, 4);
                     bits &= ~((1u << (23 - b.mantissa)) - 1);
                     std::memcpy(out, &bits, 4);
                  }
                  break;
               }
               default: {
                  long lo = b.kind == 2 ? -1 : 0;
                  long v = lo + static_cast<long>(uniform(rng) * (b.shape - lo));
                  std::memcpy(out, &v, b.bytes);   // little-endian: the low bytes
                  break;
               }
               }
            }
         }
         tree->Fill();
      }
      file.cd();
      tree->Write();
      file.Close();
   }
};

void Import(const std::string &treePath, const std::string &outPath)
{
   auto importer = ROOT::Experimental::RNTupleImporter::Create(treePath, "Events", outPath);
   auto options = importer->GetWriteOptions();
   options.SetCompression(505);
   importer->SetWriteOptions(options);
   importer->SetIsQuiet(true);
   importer->Import();
}

} // namespace widegen
'''


def branch_rng(seed, name):
    """Parameters of a branch: fixed by the seed and its name alone."""
    import random
    return random.Random(seed * 1_000_003 + zlib.crc32(name.encode()))


def layout(ROOT, template):
    """(scalars, collections) of the template RNTuple: [(name, type)], [(counter, prefix, [(member, type)])]."""
    reader = ROOT.RNTupleReader.Open("Events", template)
    desc = reader.GetDescriptor()
    scalars, collections = [], []
    counters = {}
    for field in desc.GetTopLevelFields():
        name, type_name = str(field.GetFieldName()), str(field.GetTypeName())
        if field.IsProjectedField():
            if type_name.startswith("ROOT::RNTupleCardinality"):
                counters[name[1:]] = name  # nJet -> Jet
            continue
        if type_name == "":  # untyped collection of an untyped record
            members = []
            for record in desc.GetFieldIterable(field):
                for member in desc.GetFieldIterable(record):
                    members.append((str(member.GetFieldName()), str(member.GetTypeName())))
            collections.append(members)
        else:
            scalars.append((name, type_name))
    result = []
    for members in collections:
        prefix = members[0][0].split("_", 1)[0]
        counter = counters.get(prefix)
        if counter is None:
            raise SystemExit("no counter for the collection of %s" % members[0][0])
        result.append((counter, prefix, members))
    return scalars, result


def means(ROOT, template, counters):
    df = ROOT.RDataFrame("Events", template)
    booked = [df.Mean(c) for c in counters]
    return [max(0.5, float(b.GetValue())) for b in booked]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("-o", "--out-dir", required=True)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--template", default=DEFAULT_TEMPLATE, help="a NanoAOD RNTuple whose layout to copy")
    args = parser.parse_args()

    if not os.path.exists(args.template):
        raise SystemExit("template %s not found (see --template)" % args.template)
    warnings.filterwarnings("ignore")
    import ROOT
    ROOT.gInterpreter.Declare(WRITER_CXX)

    scalars, collections = layout(ROOT, args.template)
    writer = ROOT.widegen.Writer()
    for (counter, _, _), mean in zip(collections, means(ROOT, args.template, [c for c, _, _ in collections])):
        writer.AddCollection(counter, mean)

    def add(name, type_name, counter):
        if type_name not in LEAF_TYPES:
            raise SystemExit("%s: type %s not handled" % (name, type_name))
        leaf, _, kind = LEAF_TYPES[type_name]
        rng = branch_rng(args.seed, name)
        bytes_ = {"O": 1, "b": 1, "S": 2, "s": 2, "F": 4, "I": 4, "i": 4, "D": 8, "l": 8, "L": 8}[leaf]
        code = {"bool": 0, "float": 1, "int": 2, "uint": 3}[kind]
        shape, p, mantissa = 0, 0.0, 23
        if kind == "bool":
            p = rng.choice([0.001, 0.01, 0.05, 0.2, 0.5])
        elif kind == "float":
            shape = rng.randrange(3)
            p = rng.choice([0.01, 1.0, 30.0, 100.0])
            mantissa = rng.choice([10, 12, 14, 23])
        else:
            shape = rng.choice([2, 5, 20, 100, 1000]) if bytes_ > 1 else rng.choice([2, 4, 16, 256])
        writer.AddBranch(name, leaf, code, bytes_, counter, shape, p, mantissa)

    for name, type_name in scalars:
        add(name, type_name, -1)
    for index, (_, _, members) in enumerate(collections):
        for name, type_name in members:
            add(name, type_name, index)
    n_branches = len(scalars) + len(collections) + sum(len(m) for _, _, m in collections)
    print("%d scalar branches, %d collections, %d branches in all" % (len(scalars), len(collections), n_branches))

    os.makedirs(args.out_dir, exist_ok=True)
    out = os.path.join(args.out_dir, "nanoaod_wide_%d.root" % args.events)
    with tempfile.TemporaryDirectory(dir=args.out_dir) as tmp:
        tree_path = os.path.join(tmp, "tree.root")
        t = time.time()
        writer.Write(tree_path, args.events, args.seed)
        print("TTree %.1f s, %.1f MB" % (time.time() - t, os.path.getsize(tree_path) / 1e6))
        t = time.time()
        if os.path.exists(out):
            os.remove(out)
        ROOT.widegen.Import(tree_path, out)
        print("RNTupleImporter %.1f s" % (time.time() - t))
    print("%s: %.1f MB" % (out, os.path.getsize(out) / 1e6))
    return 0


if __name__ == "__main__":
    sys.exit(main())
