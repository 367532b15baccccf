#!/usr/bin/env python3
"""Writes benches/data/assemble.root for the assembly benchmarks (benches/assemble.rs).

    python3 benches/data/make_assemble.py        # needs ROOT (pip install root)

One RNTuple "assemble" of 2,048 entries, uncompressed (compression 0) so that the benchmarks measure building
Arrow arrays, not decompression. Fields: a list of floats (about 4 per entry), a string (0 to 15 characters), a
struct of three numbers (std::tuple), a variant of three alternatives and a list of lists.
"""

import os

import ROOT

CODE = r'''
#include <ROOT/RNTupleModel.hxx>
#include <ROOT/RNTupleWriter.hxx>
#include <ROOT/RNTupleWriteOptions.hxx>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

void WriteAssemble(const std::string &path)
{
   auto model = ROOT::RNTupleModel::Create();
   auto pt = model->MakeField<std::vector<float>>("pt");
   auto name = model->MakeField<std::string>("name");
   auto hit = model->MakeField<std::tuple<float, std::int32_t, double>>("hit");
   auto value = model->MakeField<std::variant<std::int32_t, float, std::string>>("value");
   auto tracks = model->MakeField<std::vector<std::vector<float>>>("tracks");
   ROOT::RNTupleWriteOptions options;
   options.SetCompression(0);
   auto writer = ROOT::RNTupleWriter::Recreate(std::move(model), "assemble", path, options);
   for (int i = 0; i < 2048; ++i) {
      pt->clear();
      for (int j = 0; j < (i * 7 + 3) % 9; ++j)
         pt->push_back(10.0f + 0.5f * j + 0.001f * i);
      *name = std::string((i * 5) % 16, char('a' + i % 26));
      *hit = {0.25f * i, i - 1024, 1e-3 * i};
      switch (i % 3) {
      case 0: *value = std::int32_t(i); break;
      case 1: *value = 0.5f * i; break;
      default: *value = std::string(i % 11, 'x');
      }
      tracks->clear();
      for (int j = 0; j < i % 4; ++j)
         tracks->push_back(std::vector<float>(j + 1, 1.0f * i));
      writer->Fill();
   }
}
'''

ROOT.gInterpreter.Declare(CODE)
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "assemble.root")
ROOT.WriteAssemble(out)
print(out, os.path.getsize(out), "bytes")
