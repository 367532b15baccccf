#!/usr/bin/env python3
"""Writes the container fixtures with real ROOT (pip install root; ROOT 6.40).

    python3 tests/data/container/generate.py

subdirs.root  RNTuples at the top and in nested TDirectories, a second cycle
              of the top-level anchor and a non-RNTuple key (TNamed):
                top;1 top;2   (both cycles point at the same header/footer)
                note          (TNamed, ignored)
                dir/inner
                dir/sub/deep
split.root    an uncompressed RNTuple written with a max key size of 128 bytes,
              so its header, footer, page list and pages are split over
              several RBlob keys (RMiniFile.cxx, RNTupleFileWriter::WriteBlob).
"""
import os

import ROOT

HERE = os.path.dirname(os.path.abspath(__file__))


def fill(n, write):
    model = ROOT.RNTupleModel.Create()
    model.MakeField["std::int32_t"]("x")
    writer = write(model)
    entry = writer.CreateEntry()
    for i in range(n):
        entry["x"] = i
        writer.Fill(entry)
    del writer


def subdirs():
    path = os.path.join(HERE, "subdirs.root")
    f = ROOT.TFile.Open(path, "RECREATE")
    opts = ROOT.RNTupleWriteOptions()
    opts.SetCompression(0)
    fill(3, lambda m: ROOT.RNTupleWriter.Append(m, "top", f, opts))
    ROOT.TNamed("note", "not an RNTuple").Write()
    d = f.mkdir("dir")
    fill(2, lambda m: ROOT.RNTupleWriter.Append(m, "inner", d, opts))
    s = d.mkdir("sub")
    fill(1, lambda m: ROOT.RNTupleWriter.Append(m, "deep", s, opts))
    f.Write()
    f.Close()
    # A second cycle of the top-level anchor.
    f = ROOT.TFile.Open(path, "UPDATE")
    anchor = f.Get("top")
    f.WriteObject(anchor, "top")
    f.Close()


def split():
    path = os.path.join(HERE, "split.root")
    opts = ROOT.RNTupleWriteOptions()
    opts.SetCompression(0)
    ROOT.Internal.RNTupleWriteOptionsManip.SetMaxKeySize(opts, 128)
    fill(100, lambda m: ROOT.RNTupleWriter.Recreate(m, "split", path, opts))


def check():
    """Prints what ROOT reads, in the form of FIXTURES in src/container/tests.rs
    (update that table after regenerating: offsets change)."""

    def walk(d, prefix, name):
        for k in d.GetListOfKeys():
            if k.GetClassName() in ("TDirectoryFile", "TDirectory"):
                walk(d.Get(k.GetName()), prefix + k.GetName() + "/", name)
            elif k.GetClassName() == "ROOT::RNTuple":
                a = k.ReadObject["ROOT::RNTuple"]()
                version = [a.GetVersionEpoch(), a.GetVersionMajor(), a.GetVersionMinor(), a.GetVersionPatch()]
                fields = [a.GetSeekHeader(), a.GetNBytesHeader(), a.GetLenHeader(), a.GetSeekFooter(),
                          a.GetNBytesFooter(), a.GetLenFooter(), a.GetMaxKeySize()]
                print(f'("{name}", "{prefix}{k.GetName()}", cycle {k.GetCycle()}, {k.GetSeekKey()}, {version}, {fields})')

    for name in ("subdirs.root", "split.root"):
        walk(ROOT.TFile.Open(os.path.join(HERE, name)), "", name)


if __name__ == "__main__":
    subdirs()
    split()
    check()
