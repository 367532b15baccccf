#!/usr/bin/env python3
"""Synthetic NanoAOD-style events as an RNTuple (and Parquet), and ROOT's own answers to the ADL benchmark queries.

    pip install root numpy pyarrow        # ROOT 6.40 from PyPI (needs a C++ compiler at run time)

    # 2M events into DIR/nanoaod_2000000.root (+ .parquet), RDataFrame timings per query
    python3 benches/nanoaod/generate.py --events 2000000 -o /tmp/nanoaod --parquet \\
        --timings /tmp/nanoaod/rdf_timings.json

    # the committed fixture (see tests/data/adl/README.md)
    python3 benches/nanoaod/generate.py --events 5000 --seed 1 -o tests/data/adl --name nanoaod_events \\
        --small-clusters nanoaod_clusters --answers tests/data/adl/answers.json --with-values --info --crosscheck

Pipeline
--------
1. Events are drawn with numpy (``np.random.default_rng([seed, chunk])``) in chunks of CHUNK events; event ``i``
   depends only on the seed and on ``i // CHUNK``, so a smaller file holds exactly the first events of a larger one
   made with the same seed.
2. A C++ writer declared to ROOT's interpreter fills a TTree ``Events`` with NanoAOD's branch layout (a counter
   branch ``nMuon/i`` and leaf-count arrays ``Muon_pt[nMuon]/F``...) into an uncompressed temporary file.
3. ``ROOT::Experimental::RNTupleImporter`` converts it into the RNTuple ``Events`` of ``DIR/<name>.root`` with
   compression 505 (zstd, level 5) and otherwise ROOT's default write options (cluster and page sizes), as real
   NanoAOD RNTuples are made. Each leaf-count array group becomes an untyped collection ``_collectionN`` with
   projected fields ``Muon_pt`` (``ROOT::VecOps::RVec<float>``) ... and a projected cardinality ``nMuon``.
   ``--small-clusters NAME`` imports the same TTree a second time into ``DIR/NAME.root`` with small clusters.
4. ``--parquet`` writes ``DIR/<name>.parquet`` (zstd level 5, one row group per chunk): the scalars as columns and each
   collection as a list of structs, e.g. ``Muon: list<struct<pt, eta, phi, mass, charge, pfRelIso03_all,
   tightId>>`` (no ``nMuon`` column: it is the list length).
5. ``--answers`` / ``--timings`` run the ADL queries with RDataFrame (single thread, typed C++ lambdas, no JIT in
   the event loop) over the RNTuple just written.

Branches (NanoAOD types)
------------------------
run, luminosityBlock (UInt_t); event (ULong64_t); MET_pt, MET_phi, MET_sumet (Float_t); PV_npvs (Int_t);
HLT_IsoMu24 (Bool_t); nMuon (UInt_t) with Muon_pt, Muon_eta, Muon_phi, Muon_mass, Muon_pfRelIso03_all (Float_t),
Muon_charge (Int_t), Muon_tightId (Bool_t); nElectron (UInt_t) with Electron_pt, _eta, _phi, _mass,
_pfRelIso03_all (Float_t), Electron_charge, Electron_cutBased (Int_t, 0 fail .. 4 tight); nJet (UInt_t) with
Jet_pt, Jet_eta, Jet_phi, Jet_mass, Jet_btag (Float_t), Jet_puId (Int_t). Objects of an event are sorted by
descending pt (as float32; equal pts keep generation order).

Queries and the exact arithmetic of the answers
-----------------------------------------------
Every stored float is promoted to double; all arithmetic is IEEE double, without FMA contraction, in the written
order (C++ evaluates ``a + b + c`` as ``(a + b) + c``). Functions are the C library's (glibc) cos, sin, sinh, sqrt.

* four-vector of an object: ``px = pt*cos(phi)``, ``py = pt*sin(phi)``, ``pz = pt*sinh(eta)``,
  ``E = sqrt(px*px + py*py + pz*pz + m*m)``.
* sum of objects: component-wise, in object order (lower index first; for leptons muons before electrons):
  ``(a + b) + c``.
* invariant mass: ``m2 = E*E - (px*px + py*py + pz*pz)``; ``M = sqrt(m2)`` if ``m2 >= 0`` else ``-sqrt(-m2)``.
* pt of a sum: ``sqrt(px*px + py*py)``.
* delta phi: ``d = phi1 - phi2``; if ``d > pi`` then ``d -= 2*pi``, else if ``d < -pi`` then ``d += 2*pi``
  (pi = M_PI; one step suffices since stored phis lie in [-pi, pi] up to float rounding).
  delta R = ``sqrt(deta*deta + dphi*dphi)`` with ``deta = eta1 - eta2`` (jet first, lepton second).

Q1  MET_pt of every event.
Q2  Jet_pt of every jet.
Q3  Jet_pt of every jet with ``abs(Jet_eta) < 1``.
Q4  MET_pt of events with at least two jets with ``Jet_pt > 40``.
Q5  MET_pt of events having a pair of distinct muons i < j with ``Muon_charge[i] != Muon_charge[j]`` and invariant
    mass ``60 <= M <= 120`` (bounds included); one fill per event however many pairs qualify.
Q6  events with ``nJet >= 3``: over all triples i < j < k in lexicographic order, the trijet minimising
    ``abs(M - 172.5)``; ties keep the first triple (strict ``<``). q6a = pt of that trijet, q6b = the largest
    Jet_btag of its three jets. One fill each per event.
Q7  every event: sum of Jet_pt (double, from 0.0, in jet order) over jets with ``Jet_pt > 30`` that have no light
    lepton (muon or electron with ``pt > 10``) at ``deltaR < 0.4``; 0 when no jet qualifies. One fill per event.
Q8  light leptons = muons (in index order) followed by electrons (in index order). Events with >= 3 of them and at
    least one same-flavour opposite-charge pair (a < b in that order, same collection, ``charge[a] != charge[b]``):
    the pair minimising ``abs(M - 91.2)``, ties keep the first pair in (a, b) lexicographic order (strict ``<``);
    then the highest-pt lepton not in the pair, ties keep the first (strict ``>``). One fill per event:
    ``mT = sqrt(((2.0*pt)*MET_pt)*(1.0 - cos(phi - MET_phi)))`` with the raw (unwrapped) phi difference.

Histograms are ROOT's TH1D filled by RDataFrame, 100 bins over the fixed ranges of QUERIES (lo, hi): a value goes to
the underflow when ``x < lo``, to the overflow when ``x >= hi``, else to bin ``floor(100*(x - lo)/(hi - lo))``
(0-based; the script checks ROOT's counts against this rule). check_answers.py beside this script recomputes the
values from the same rules in plain Python (uproot, no ROOT) and compares them bit for bit. ``fills`` counts every fill
(underflow and overflow included). With ``--with-values`` each query also lists its filled values, in event order
then object order, as the IEEE-754 bits of the double in hex (``"0x405e000000000000"``).
"""

import argparse
import json
import math
import os
import sys
import tempfile
import time
import warnings

import numpy as np

CHUNK = 100_000  # events per generation chunk (and per Parquet row group)

MAX_MUON = 8
MAX_ELECTRON = 8
MAX_JET = 20

MUON_MASS = 0.1056583745
ELECTRON_MASS = 0.00051099895

# query -> histograms it fills: (name, lo, hi); 100 bins each
QUERIES = {
    "q1": [("q1", 0.0, 200.0)],
    "q2": [("q2", 0.0, 200.0)],
    "q3": [("q3", 0.0, 200.0)],
    "q4": [("q4", 0.0, 200.0)],
    "q5": [("q5", 0.0, 200.0)],
    "q6": [("q6a", 0.0, 400.0), ("q6b", 0.0, 1.0)],
    "q7": [("q7", 0.0, 800.0)],
    "q8": [("q8", 0.0, 200.0)],
}
BINS = 100

# ---------------------------------------------------------------------------------------------------------------
# C++ declared to ROOT's interpreter
# ---------------------------------------------------------------------------------------------------------------

WRITER_CXX = r'''
#include <ROOT/RNTupleImporter.hxx>
#include <ROOT/RNTupleReader.hxx>
#include <ROOT/RNTupleWriteOptions.hxx>
#include <TFile.h>
#include <TTree.h>

#include <cstdint>
#include <iostream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>

namespace nanogen {

constexpr int kMaxObjects = 64;

/// Fills a NanoAOD-layout TTree from flat numpy buffers (one chunk of events at a time).
class TreeWriter {
   TFile *fFile = nullptr;
   TTree *fTree = nullptr;

   UInt_t fRun = 0, fLumi = 0;
   ULong64_t fEvent = 0;
   Float_t fMetPt = 0, fMetPhi = 0, fMetSumet = 0;
   Int_t fNpvs = 0;
   Bool_t fHlt = false;

   UInt_t fNMuon = 0;
   Float_t fMuPt[kMaxObjects], fMuEta[kMaxObjects], fMuPhi[kMaxObjects], fMuMass[kMaxObjects], fMuIso[kMaxObjects];
   Int_t fMuCharge[kMaxObjects];
   Bool_t fMuTight[kMaxObjects];

   UInt_t fNElectron = 0;
   Float_t fElPt[kMaxObjects], fElEta[kMaxObjects], fElPhi[kMaxObjects], fElMass[kMaxObjects], fElIso[kMaxObjects];
   Int_t fElCharge[kMaxObjects], fElCutBased[kMaxObjects];

   UInt_t fNJet = 0;
   Float_t fJetPt[kMaxObjects], fJetEta[kMaxObjects], fJetPhi[kMaxObjects], fJetMass[kMaxObjects],
      fJetBtag[kMaxObjects];
   Int_t fJetPuId[kMaxObjects];

   // current chunk
   long fN = 0;
   const std::uint32_t *fRunIn = nullptr, *fLumiIn = nullptr;
   const std::uint64_t *fEventIn = nullptr;
   const float *fMetPtIn = nullptr, *fMetPhiIn = nullptr, *fMetSumetIn = nullptr;
   const std::int32_t *fNpvsIn = nullptr;
   const std::uint8_t *fHltIn = nullptr;
   const std::uint32_t *fMuN = nullptr;
   const float *fMuPtIn = nullptr, *fMuEtaIn = nullptr, *fMuPhiIn = nullptr, *fMuMassIn = nullptr, *fMuIsoIn = nullptr;
   const std::int32_t *fMuChargeIn = nullptr;
   const std::uint8_t *fMuTightIn = nullptr;
   const std::uint32_t *fElN = nullptr;
   const float *fElPtIn = nullptr, *fElEtaIn = nullptr, *fElPhiIn = nullptr, *fElMassIn = nullptr, *fElIsoIn = nullptr;
   const std::int32_t *fElChargeIn = nullptr, *fElCutBasedIn = nullptr;
   const std::uint32_t *fJetN = nullptr;
   const float *fJetPtIn = nullptr, *fJetEtaIn = nullptr, *fJetPhiIn = nullptr, *fJetMassIn = nullptr,
               *fJetBtagIn = nullptr;
   const std::int32_t *fJetPuIdIn = nullptr;

public:
   TreeWriter(const std::string &path, int compression)
   {
      fFile = TFile::Open(path.c_str(), "RECREATE", "", compression);
      if (!fFile || fFile->IsZombie())
         throw std::runtime_error("cannot create " + path);
      fTree = new TTree("Events", "Events");
      fTree->SetDirectory(fFile);
      fTree->Branch("run", &fRun, "run/i");
      fTree->Branch("luminosityBlock", &fLumi, "luminosityBlock/i");
      fTree->Branch("event", &fEvent, "event/l");
      fTree->Branch("MET_pt", &fMetPt, "MET_pt/F");
      fTree->Branch("MET_phi", &fMetPhi, "MET_phi/F");
      fTree->Branch("MET_sumet", &fMetSumet, "MET_sumet/F");
      fTree->Branch("PV_npvs", &fNpvs, "PV_npvs/I");
      fTree->Branch("HLT_IsoMu24", &fHlt, "HLT_IsoMu24/O");
      fTree->Branch("nMuon", &fNMuon, "nMuon/i");
      fTree->Branch("Muon_pt", fMuPt, "Muon_pt[nMuon]/F");
      fTree->Branch("Muon_eta", fMuEta, "Muon_eta[nMuon]/F");
      fTree->Branch("Muon_phi", fMuPhi, "Muon_phi[nMuon]/F");
      fTree->Branch("Muon_mass", fMuMass, "Muon_mass[nMuon]/F");
      fTree->Branch("Muon_charge", fMuCharge, "Muon_charge[nMuon]/I");
      fTree->Branch("Muon_pfRelIso03_all", fMuIso, "Muon_pfRelIso03_all[nMuon]/F");
      fTree->Branch("Muon_tightId", fMuTight, "Muon_tightId[nMuon]/O");
      fTree->Branch("nElectron", &fNElectron, "nElectron/i");
      fTree->Branch("Electron_pt", fElPt, "Electron_pt[nElectron]/F");
      fTree->Branch("Electron_eta", fElEta, "Electron_eta[nElectron]/F");
      fTree->Branch("Electron_phi", fElPhi, "Electron_phi[nElectron]/F");
      fTree->Branch("Electron_mass", fElMass, "Electron_mass[nElectron]/F");
      fTree->Branch("Electron_charge", fElCharge, "Electron_charge[nElectron]/I");
      fTree->Branch("Electron_pfRelIso03_all", fElIso, "Electron_pfRelIso03_all[nElectron]/F");
      fTree->Branch("Electron_cutBased", fElCutBased, "Electron_cutBased[nElectron]/I");
      fTree->Branch("nJet", &fNJet, "nJet/i");
      fTree->Branch("Jet_pt", fJetPt, "Jet_pt[nJet]/F");
      fTree->Branch("Jet_eta", fJetEta, "Jet_eta[nJet]/F");
      fTree->Branch("Jet_phi", fJetPhi, "Jet_phi[nJet]/F");
      fTree->Branch("Jet_mass", fJetMass, "Jet_mass[nJet]/F");
      fTree->Branch("Jet_btag", fJetBtag, "Jet_btag[nJet]/F");
      fTree->Branch("Jet_puId", fJetPuId, "Jet_puId[nJet]/I");
   }

   void SetEvents(long n, const std::uint32_t *run, const std::uint32_t *lumi, const std::uint64_t *event,
                  const float *metPt, const float *metPhi, const float *metSumet, const std::int32_t *npvs,
                  const std::uint8_t *hlt)
   {
      fN = n;
      fRunIn = run;
      fLumiIn = lumi;
      fEventIn = event;
      fMetPtIn = metPt;
      fMetPhiIn = metPhi;
      fMetSumetIn = metSumet;
      fNpvsIn = npvs;
      fHltIn = hlt;
   }

   void SetMuons(const std::uint32_t *counts, const float *pt, const float *eta, const float *phi, const float *mass,
                 const std::int32_t *charge, const float *iso, const std::uint8_t *tight)
   {
      fMuN = counts;
      fMuPtIn = pt;
      fMuEtaIn = eta;
      fMuPhiIn = phi;
      fMuMassIn = mass;
      fMuChargeIn = charge;
      fMuIsoIn = iso;
      fMuTightIn = tight;
   }

   void SetElectrons(const std::uint32_t *counts, const float *pt, const float *eta, const float *phi,
                     const float *mass, const std::int32_t *charge, const float *iso, const std::int32_t *cutBased)
   {
      fElN = counts;
      fElPtIn = pt;
      fElEtaIn = eta;
      fElPhiIn = phi;
      fElMassIn = mass;
      fElChargeIn = charge;
      fElIsoIn = iso;
      fElCutBasedIn = cutBased;
   }

   void SetJets(const std::uint32_t *counts, const float *pt, const float *eta, const float *phi, const float *mass,
                const float *btag, const std::int32_t *puId)
   {
      fJetN = counts;
      fJetPtIn = pt;
      fJetEtaIn = eta;
      fJetPhiIn = phi;
      fJetMassIn = mass;
      fJetBtagIn = btag;
      fJetPuIdIn = puId;
   }

   /// Fills the n events of the current chunk
   void Fill()
   {
      long mu = 0, el = 0, jet = 0;
      for (long i = 0; i < fN; ++i) {
         fRun = fRunIn[i];
         fLumi = fLumiIn[i];
         fEvent = fEventIn[i];
         fMetPt = fMetPtIn[i];
         fMetPhi = fMetPhiIn[i];
         fMetSumet = fMetSumetIn[i];
         fNpvs = fNpvsIn[i];
         fHlt = fHltIn[i] != 0;
         fNMuon = fMuN[i];
         fNElectron = fElN[i];
         fNJet = fJetN[i];
         if (fNMuon > kMaxObjects || fNElectron > kMaxObjects || fNJet > kMaxObjects)
            throw std::runtime_error("too many objects in an event");
         for (UInt_t k = 0; k < fNMuon; ++k, ++mu) {
            fMuPt[k] = fMuPtIn[mu];
            fMuEta[k] = fMuEtaIn[mu];
            fMuPhi[k] = fMuPhiIn[mu];
            fMuMass[k] = fMuMassIn[mu];
            fMuCharge[k] = fMuChargeIn[mu];
            fMuIso[k] = fMuIsoIn[mu];
            fMuTight[k] = fMuTightIn[mu] != 0;
         }
         for (UInt_t k = 0; k < fNElectron; ++k, ++el) {
            fElPt[k] = fElPtIn[el];
            fElEta[k] = fElEtaIn[el];
            fElPhi[k] = fElPhiIn[el];
            fElMass[k] = fElMassIn[el];
            fElCharge[k] = fElChargeIn[el];
            fElIso[k] = fElIsoIn[el];
            fElCutBased[k] = fElCutBasedIn[el];
         }
         for (UInt_t k = 0; k < fNJet; ++k, ++jet) {
            fJetPt[k] = fJetPtIn[jet];
            fJetEta[k] = fJetEtaIn[jet];
            fJetPhi[k] = fJetPhiIn[jet];
            fJetMass[k] = fJetMassIn[jet];
            fJetBtag[k] = fJetBtagIn[jet];
            fJetPuId[k] = fJetPuIdIn[jet];
         }
         fTree->Fill();
      }
   }

   void Close()
   {
      fFile->cd();
      fTree->Write();
      fFile->Close();
      delete fFile;
      fFile = nullptr;
      fTree = nullptr;
   }
};

/// Converts the TTree `Events` of treePath into the RNTuple `Events` of outPath (compression 505). A non-zero
/// approxZippedClusterSize / maxUnzippedClusterSize replaces ROOT's default; everything else keeps the defaults.
void Import(const std::string &treePath, const std::string &outPath, long approxZippedClusterSize,
            long maxUnzippedClusterSize)
{
   auto importer = ROOT::Experimental::RNTupleImporter::Create(treePath, "Events", outPath);
   auto options = importer->GetWriteOptions();
   options.SetCompression(505);
   if (approxZippedClusterSize > 0)
      options.SetApproxZippedClusterSize(approxZippedClusterSize);
   if (maxUnzippedClusterSize > 0)
      options.SetMaxUnzippedClusterSize(maxUnzippedClusterSize);
   importer->SetWriteOptions(options);
   importer->SetIsQuiet(true);
   importer->Import();
}

std::string StructureName(ROOT::ENTupleStructure s)
{
   switch (s) {
   case ROOT::ENTupleStructure::kPlain: return "plain";
   case ROOT::ENTupleStructure::kCollection: return "collection";
   case ROOT::ENTupleStructure::kRecord: return "record";
   case ROOT::ENTupleStructure::kVariant: return "variant";
   case ROOT::ENTupleStructure::kStreamer: return "streamer";
   default: return "other";
   }
}

void DescribeField(const ROOT::RNTupleDescriptor &desc, const ROOT::RFieldDescriptor &f, const std::string &prefix,
                   std::ostringstream &os)
{
   std::string name = prefix.empty() ? f.GetFieldName() : prefix + "." + f.GetFieldName();
   os << name << "\t" << f.GetTypeName() << "\t" << StructureName(f.GetStructure());
   if (f.IsProjectedField())
      os << "\tprojected from " << desc.GetQualifiedFieldName(f.GetProjectionSourceId());
   os << "\n";
   for (const auto &child : desc.GetFieldIterable(f))
      DescribeField(desc, child, name, os);
}

/// One line per field (sub-fields included): qualified name, type, structure, projection source; then a summary.
std::string Describe(const std::string &path)
{
   auto reader = ROOT::RNTupleReader::Open("Events", path);
   const auto &desc = reader->GetDescriptor();
   std::ostringstream os;
   for (const auto &f : desc.GetTopLevelFields())
      DescribeField(desc, f, "", os);
   os << "entries " << desc.GetNEntries() << ", clusters " << desc.GetNClusters() << ", cluster groups "
      << desc.GetNClusterGroups() << "\n";
   return os.str();
}

void PrintInfo(const std::string &path)
{
   auto reader = ROOT::RNTupleReader::Open("Events", path);
   reader->PrintInfo();
   std::cout << std::flush;
}

} // namespace nanogen
'''

QUERIES_CXX = r'''
#include <ROOT/RDataFrame.hxx>
#include <ROOT/RVec.hxx>
#include <Math/Vector4D.h>
#include <TH1D.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#pragma clang fp contract(off)

namespace adl {

using ROOT::RVecF;
using ROOT::RVecI;
using ROOT::RVecD;

struct P4 {
   double px, py, pz, e;
};

inline P4 MakeP4(double pt, double eta, double phi, double m)
{
   P4 p;
   p.px = pt * std::cos(phi);
   p.py = pt * std::sin(phi);
   p.pz = pt * std::sinh(eta);
   p.e = std::sqrt(p.px * p.px + p.py * p.py + p.pz * p.pz + m * m);
   return p;
}

inline P4 Add(const P4 &a, const P4 &b)
{
   return P4{a.px + b.px, a.py + b.py, a.pz + b.pz, a.e + b.e};
}

inline double Mass(const P4 &p)
{
   double m2 = p.e * p.e - (p.px * p.px + p.py * p.py + p.pz * p.pz);
   return m2 >= 0 ? std::sqrt(m2) : -std::sqrt(-m2);
}

inline double Pt(const P4 &p)
{
   return std::sqrt(p.px * p.px + p.py * p.py);
}

inline double DeltaPhi(double a, double b)
{
   double d = a - b;
   if (d > M_PI)
      d -= 2 * M_PI;
   else if (d < -M_PI)
      d += 2 * M_PI;
   return d;
}

inline double DeltaR(double eta1, double phi1, double eta2, double phi2)
{
   double deta = eta1 - eta2;
   double dphi = DeltaPhi(phi1, phi2);
   return std::sqrt(deta * deta + dphi * dphi);
}

// Kinematics through ROOT::Math::PtEtaPhiMVector (GenVector), used only to cross-check the explicit formulas.
struct GenVectorKin {
   using V = ROOT::Math::PtEtaPhiMVector;
   static V Make(double pt, double eta, double phi, double m) { return V(pt, eta, phi, m); }
   static V Add(const V &a, const V &b) { return a + b; }
   static double Mass(const V &v) { return v.M(); }
   static double Pt(const V &v) { return v.Pt(); }
};

struct ExplicitKin {
   using V = P4;
   static V Make(double pt, double eta, double phi, double m) { return MakeP4(pt, eta, phi, m); }
   static V Add(const V &a, const V &b) { return adl::Add(a, b); }
   static double Mass(const V &v) { return adl::Mass(v); }
   static double Pt(const V &v) { return adl::Pt(v); }
};

// Q3: pts of the jets with |eta| < 1
inline RVecF Q3Select(const RVecF &pt, const RVecF &eta)
{
   RVecF out;
   for (std::size_t i = 0; i < pt.size(); ++i)
      if (std::abs(double(eta[i])) < 1.0)
         out.push_back(pt[i]);
   return out;
}

// Q4: at least two jets with pt > 40
inline bool Q4Pass(const RVecF &pt)
{
   int n = 0;
   for (auto x : pt)
      if (double(x) > 40.0)
         ++n;
   return n >= 2;
}

// Q5: an opposite-charge muon pair with 60 <= M <= 120
template <typename K>
bool Q5Pass(const RVecF &pt, const RVecF &eta, const RVecF &phi, const RVecF &mass, const RVecI &charge)
{
   const std::size_t n = pt.size();
   for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = i + 1; j < n; ++j) {
         if (charge[i] == charge[j])
            continue;
         double m = K::Mass(K::Add(K::Make(pt[i], eta[i], phi[i], mass[i]), K::Make(pt[j], eta[j], phi[j], mass[j])));
         if (m >= 60.0 && m <= 120.0)
            return true;
      }
   }
   return false;
}

// Q6: the trijet with mass closest to 172.5 -> {pt, max btag}; requires >= 3 jets
template <typename K>
RVecD Q6Best(const RVecF &pt, const RVecF &eta, const RVecF &phi, const RVecF &mass, const RVecF &btag)
{
   const std::size_t n = pt.size();
   std::vector<typename K::V> p;
   p.reserve(n);
   for (std::size_t i = 0; i < n; ++i)
      p.push_back(K::Make(pt[i], eta[i], phi[i], mass[i]));
   double best = std::numeric_limits<double>::infinity();
   double bestPt = 0, bestBtag = 0;
   for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = i + 1; j < n; ++j) {
         for (std::size_t k = j + 1; k < n; ++k) {
            auto s = K::Add(K::Add(p[i], p[j]), p[k]);
            double d = std::abs(K::Mass(s) - 172.5);
            if (d < best) {
               best = d;
               bestPt = K::Pt(s);
               bestBtag = std::max(double(btag[i]), std::max(double(btag[j]), double(btag[k])));
            }
         }
      }
   }
   return RVecD{bestPt, bestBtag};
}

// Q7: scalar sum of pt of jets with pt > 30 not within deltaR 0.4 of a lepton with pt > 10
inline double Q7Sum(const RVecF &jpt, const RVecF &jeta, const RVecF &jphi, const RVecF &mpt, const RVecF &meta,
                    const RVecF &mphi, const RVecF &ept, const RVecF &eeta, const RVecF &ephi)
{
   double sum = 0.0;
   for (std::size_t j = 0; j < jpt.size(); ++j) {
      if (!(double(jpt[j]) > 30.0))
         continue;
      bool near = false;
      for (std::size_t m = 0; m < mpt.size() && !near; ++m)
         if (double(mpt[m]) > 10.0 && DeltaR(jeta[j], jphi[j], meta[m], mphi[m]) < 0.4)
            near = true;
      for (std::size_t e = 0; e < ept.size() && !near; ++e)
         if (double(ept[e]) > 10.0 && DeltaR(jeta[j], jphi[j], eeta[e], ephi[e]) < 0.4)
            near = true;
      if (!near)
         sum += double(jpt[j]);
   }
   return sum;
}

// Q8: transverse mass of MET and the leading lepton outside the SFOS pair closest to the Z mass (0 or 1 value)
template <typename K>
RVecD Q8Mt(const RVecF &mpt, const RVecF &meta, const RVecF &mphi, const RVecF &mmass, const RVecI &mcharge,
           const RVecF &ept, const RVecF &eeta, const RVecF &ephi, const RVecF &emass, const RVecI &echarge,
           float metPt, float metPhi)
{
   const std::size_t nm = mpt.size(), n = mpt.size() + ept.size();
   if (n < 3)
      return RVecD{};
   std::vector<double> pt(n), eta(n), phi(n), mass(n);
   std::vector<int> charge(n), flavour(n);
   for (std::size_t i = 0; i < n; ++i) {
      const bool isMu = i < nm;
      const std::size_t k = isMu ? i : i - nm;
      pt[i] = isMu ? mpt[k] : ept[k];
      eta[i] = isMu ? meta[k] : eeta[k];
      phi[i] = isMu ? mphi[k] : ephi[k];
      mass[i] = isMu ? mmass[k] : emass[k];
      charge[i] = isMu ? mcharge[k] : echarge[k];
      flavour[i] = isMu ? 13 : 11;
   }
   double best = std::numeric_limits<double>::infinity();
   long ba = -1, bb = -1;
   for (std::size_t a = 0; a < n; ++a) {
      for (std::size_t b = a + 1; b < n; ++b) {
         if (flavour[a] != flavour[b] || charge[a] == charge[b])
            continue;
         double m = K::Mass(K::Add(K::Make(pt[a], eta[a], phi[a], mass[a]), K::Make(pt[b], eta[b], phi[b], mass[b])));
         double d = std::abs(m - 91.2);
         if (d < best) {
            best = d;
            ba = a;
            bb = b;
         }
      }
   }
   if (ba < 0)
      return RVecD{};
   long lead = -1;
   for (std::size_t k = 0; k < n; ++k) {
      if ((long)k == ba || (long)k == bb)
         continue;
      if (lead < 0 || pt[k] > pt[lead])
         lead = k;
   }
   double met = metPt;
   double dphi = phi[lead] - double(metPhi);
   return RVecD{std::sqrt(((2.0 * pt[lead]) * met) * (1.0 - std::cos(dphi)))};
}

template <typename T>
void Append(std::vector<double> &out, const std::vector<T> &in)
{
   for (const auto &x : in)
      out.push_back(double(x));
}

template <typename T>
void Append(std::vector<double> &out, const std::vector<ROOT::RVec<T>> &in)
{
   for (const auto &v : in)
      for (const auto &x : v)
         out.push_back(double(x));
}

struct QueryOutput {
   std::vector<TH1D> hists;                 // one per histogram of the query
   std::vector<std::vector<double>> values; // filled values per histogram (if requested)
   double seconds = 0;                      // the event loop only
};

/// Runs one query over path in one event loop. ranges = {lo0, hi0, lo1, hi1, ...}, one pair per histogram.
/// takeValues also books Take actions in the same loop. genVector computes the kinematics with PtEtaPhiMVector.
template <typename K>
QueryOutput RunQueryK(const std::string &query, const std::string &path, const std::vector<double> &ranges,
                      int bins, bool takeValues)
{
   const std::vector<std::string> kJet{"Jet_pt", "Jet_eta", "Jet_phi", "Jet_mass", "Jet_btag"};
   const std::vector<std::string> kMuon5{"Muon_pt", "Muon_eta", "Muon_phi", "Muon_mass", "Muon_charge"};
   const std::vector<std::string> kLeptons{"Muon_pt",       "Muon_eta",        "Muon_phi",    "Muon_mass",
                                           "Muon_charge",   "Electron_pt",     "Electron_eta", "Electron_phi",
                                           "Electron_mass", "Electron_charge", "MET_pt",      "MET_phi"};
   ROOT::RDataFrame df("Events", path);
   std::vector<ROOT::RDF::RResultPtr<TH1D>> hists;
   std::vector<std::function<std::vector<double>()>> takes;
   auto model = [&](std::size_t i) {
      std::string name = query + "_" + std::to_string(i);
      return ROOT::RDF::TH1DModel(name.c_str(), name.c_str(), bins, ranges.at(2 * i), ranges.at(2 * i + 1));
   };
   auto take = [&](ROOT::RDF::RNode node, const std::string &column, auto tag) {
      using T = decltype(tag);
      if (!takeValues)
         return;
      auto r = node.Take<T>(column);
      takes.push_back([r]() mutable {
         std::vector<double> out;
         Append(out, *r);
         return out;
      });
   };
   if (query == "q1") {
      hists.push_back(df.Histo1D<float>(model(0), "MET_pt"));
      take(df, "MET_pt", float{});
   } else if (query == "q2") {
      hists.push_back(df.Histo1D<RVecF>(model(0), "Jet_pt"));
      take(df, "Jet_pt", RVecF{});
   } else if (query == "q3") {
      auto d = df.Define("x", Q3Select, {"Jet_pt", "Jet_eta"});
      hists.push_back(d.Histo1D<RVecF>(model(0), "x"));
      take(d, "x", RVecF{});
   } else if (query == "q4") {
      auto d = df.Filter(Q4Pass, {"Jet_pt"});
      hists.push_back(d.Histo1D<float>(model(0), "MET_pt"));
      take(d, "MET_pt", float{});
   } else if (query == "q5") {
      auto d = df.Filter(Q5Pass<K>, kMuon5);
      hists.push_back(d.template Histo1D<float>(model(0), "MET_pt"));
      take(d, "MET_pt", float{});
   } else if (query == "q6") {
      auto d = df.Filter([](const RVecF &pt) { return pt.size() >= 3; }, {"Jet_pt"})
                  .Define("trijet", Q6Best<K>, kJet)
                  .Define("trijet_pt", [](const RVecD &t) { return t[0]; }, {"trijet"})
                  .Define("trijet_btag", [](const RVecD &t) { return t[1]; }, {"trijet"});
      hists.push_back(d.template Histo1D<double>(model(0), "trijet_pt"));
      hists.push_back(d.template Histo1D<double>(model(1), "trijet_btag"));
      take(d, "trijet_pt", double{});
      take(d, "trijet_btag", double{});
   } else if (query == "q7") {
      auto d = df.Define("ht", Q7Sum,
                         {"Jet_pt", "Jet_eta", "Jet_phi", "Muon_pt", "Muon_eta", "Muon_phi", "Electron_pt",
                          "Electron_eta", "Electron_phi"});
      hists.push_back(d.Histo1D<double>(model(0), "ht"));
      take(d, "ht", double{});
   } else if (query == "q8") {
      auto d = df.Define("mt", Q8Mt<K>, kLeptons);
      hists.push_back(d.template Histo1D<RVecD>(model(0), "mt"));
      take(d, "mt", RVecD{});
   } else {
      throw std::runtime_error("unknown query " + query);
   }
   QueryOutput out;
   auto start = std::chrono::steady_clock::now();
   hists[0].GetValue(); // runs the event loop (all booked actions)
   out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
   for (auto &h : hists)
      out.hists.push_back(*h);
   for (auto &t : takes)
      out.values.push_back(t());
   if (df.GetNRuns() != 1)
      throw std::runtime_error("expected exactly one event loop");
   return out;
}

QueryOutput RunQuery(const std::string &query, const std::string &path, const std::vector<double> &ranges, int bins,
                     bool takeValues, bool genVector)
{
   if (genVector)
      return RunQueryK<GenVectorKin>(query, path, ranges, bins, takeValues);
   return RunQueryK<ExplicitKin>(query, path, ranges, bins, takeValues);
}

/// The values of a QueryOutput as a flat buffer (for numpy): copies values[i] into out, returns the count
std::size_t ValueCount(const QueryOutput &o, int i) { return o.values.at(i).size(); }
void CopyValues(const QueryOutput &o, int i, double *out)
{
   const auto &v = o.values.at(i);
   std::copy(v.begin(), v.end(), out);
}

} // namespace adl
'''

_ROOT = None


def root():
    """Imports ROOT once (quietly) and declares the C++ helpers."""
    global _ROOT
    if _ROOT is None:
        warnings.filterwarnings("ignore", message=r"(?s).*alpha stage")
        import ROOT  # noqa: PLC0415

        ROOT.gROOT.SetBatch(True)
        ROOT.gErrorIgnoreLevel = ROOT.kWarning
        ROOT.TH1.AddDirectory(False)
        for code in (WRITER_CXX, QUERIES_CXX):
            if not ROOT.gInterpreter.Declare(code):
                sys.exit("ROOT could not compile the C++ helpers")
        _ROOT = ROOT
    return _ROOT


# ---------------------------------------------------------------------------------------------------------------
# Event generation (numpy)
# ---------------------------------------------------------------------------------------------------------------


def breit_wigner(rng, mean, width, lo, hi, n):
    """Relativistic-looking (Cauchy) line shape truncated to [lo, hi], by inverse CDF."""
    half = width / 2
    f_lo = 0.5 + math.atan((lo - mean) / half) / math.pi
    f_hi = 0.5 + math.atan((hi - mean) / half) / math.pi
    u = rng.uniform(f_lo, f_hi, n)
    return mean + half * np.tan(math.pi * (u - 0.5))


def parent_p4(pt, y, phi, m):
    mt = np.sqrt(pt * pt + m * m)
    return (pt * np.cos(phi), pt * np.sin(phi), mt * np.sinh(y), mt * np.cosh(y))


def boost(q, parent, m_parent):
    """Boosts the rest-frame four-vectors q = (px, py, pz, E) into the frame where the parent has four-momentum parent."""
    qx, qy, qz, qe = q
    px, py, pz, pe = parent
    gamma = pe / m_parent
    bx, by, bz = px / pe, py / pe, pz / pe
    b2 = bx * bx + by * by + bz * bz
    bq = bx * qx + by * qy + bz * qz
    g2 = np.where(b2 > 0, (gamma - 1) / np.where(b2 > 0, b2, 1), 0.0)
    k = g2 * bq + gamma * qe
    return (qx + k * bx, qy + k * by, qz + k * bz, gamma * (qe + bq))


def two_body(rng, parent, m_parent, m1, m2):
    """Isotropic two-body decay of the parent (four-vector arrays) into daughters of masses m1, m2."""
    n = len(m_parent)
    m1 = np.broadcast_to(np.asarray(m1, dtype=np.float64), (n,))
    m2 = np.broadcast_to(np.asarray(m2, dtype=np.float64), (n,))
    mm = m_parent * m_parent
    pstar = np.sqrt(np.maximum((mm - (m1 + m2) ** 2) * (mm - (m1 - m2) ** 2), 0.0)) / (2 * m_parent)
    cost = rng.uniform(-1.0, 1.0, n)
    sint = np.sqrt(1.0 - cost * cost)
    ph = rng.uniform(-math.pi, math.pi, n)
    qx, qy, qz = pstar * sint * np.cos(ph), pstar * sint * np.sin(ph), pstar * cost
    d1 = boost((qx, qy, qz, np.sqrt(pstar * pstar + m1 * m1)), parent, m_parent)
    d2 = boost((-qx, -qy, -qz, np.sqrt(pstar * pstar + m2 * m2)), parent, m_parent)
    return d1, d2


def pt_eta_phi(p4):
    px, py, pz, _ = p4
    pt = np.hypot(px, py)
    return pt, np.arcsinh(pz / pt), np.arctan2(py, px)


class Objects:
    """Objects of one collection for one chunk, accumulated from several sources, then sorted per event."""

    def __init__(self, fields):
        self.fields = fields
        self.parts = {f: [] for f in ("evt",) + fields}

    def add(self, evt, **values):
        n = len(evt)
        self.parts["evt"].append(np.asarray(evt, dtype=np.int64))
        for f in self.fields:
            v = values[f]
            self.parts[f].append(np.broadcast_to(np.asarray(v), (n,)).copy() if np.ndim(v) == 0 else np.asarray(v))

    def finish(self, n_events, dtypes, cap, keep):
        """Concatenates, applies the acceptance mask function keep, sorts by (event, -pt), caps the multiplicity."""
        cols = {f: np.concatenate(self.parts[f]) if self.parts[f] else np.zeros(0) for f in self.parts}
        cols["evt"] = cols["evt"].astype(np.int64)
        for f, dt in dtypes.items():
            cols[f] = cols[f].astype(dt)
        mask = keep(cols) & (cols["evt"] < n_events)
        cols = {f: v[mask] for f, v in cols.items()}
        order = np.lexsort((-cols["pt"].astype(np.float64), cols["evt"]))  # stable: primary evt, then pt desc
        cols = {f: v[order] for f, v in cols.items()}
        evt = cols["evt"]
        counts = np.bincount(evt, minlength=n_events)
        starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
        rank = np.arange(len(evt)) - starts[evt]
        sel = rank < cap
        cols = {f: np.ascontiguousarray(v[sel]) for f, v in cols.items()}
        counts = np.minimum(counts, cap).astype(np.uint32)
        return counts, cols


def generate_chunk(seed, chunk_index, n_keep):
    """CHUNK events of chunk chunk_index (of which the first n_keep are kept)."""
    rng = np.random.default_rng([seed, chunk_index])
    n = CHUNK
    first = chunk_index * CHUNK

    # 0 generic (QCD / W+jets), 1 Z->mumu, 2 Z->ee, 3 ttbar
    kind = rng.choice(4, size=n, p=[0.70, 0.10, 0.08, 0.12])
    lep_fields = ("pt", "eta", "phi", "mass", "charge", "iso", "id")
    muons = Objects(lep_fields)
    electrons = Objects(lep_fields)
    jets = Objects(("pt", "eta", "phi", "mass", "btag", "puId"))
    nu_px = np.zeros(n)
    nu_py = np.zeros(n)

    def add_prompt_lepton(evt, p4, flavour, charge):
        """flavour: array of 13 / 11 per lepton"""
        pt, eta, phi = pt_eta_phi(p4)
        for fl, coll, mass in ((13, muons, MUON_MASS), (11, electrons, ELECTRON_MASS)):
            s = flavour == fl
            m = s.sum()
            if fl == 13:
                ident = rng.random(m) < 0.96
            else:
                ident = rng.choice(5, size=m, p=[0.03, 0.04, 0.08, 0.25, 0.60])
            coll.add(evt[s], pt=pt[s], eta=eta[s], phi=phi[s], mass=mass, charge=charge[s],
                     iso=rng.exponential(0.03, m), id=ident)

    def add_parton_jets(evt, p4, is_b):
        pt, eta, phi = pt_eta_phi(p4)
        m = len(evt)
        scale = np.clip(rng.normal(1.0, 0.12, m), 0.5, 1.5)
        jpt = pt * scale
        parton_mass = np.where(is_b, 4.18, 0.0)
        jmass = np.sqrt(parton_mass ** 2 + (jpt * rng.uniform(0.04, 0.16, m)) ** 2)
        btag = np.where(is_b, rng.beta(5.0, 1.2, m), rng.beta(0.7, 7.0, m))
        jets.add(evt, pt=jpt, eta=eta, phi=phi, mass=jmass, btag=btag, puId=jet_puid(jpt))

    def jet_puid(pt):
        m = len(pt)
        low = rng.choice(np.array([0, 4, 6, 7]), size=m, p=[0.25, 0.15, 0.10, 0.50])
        return np.where(pt < 50, low, 7)

    def add_w_leptonic(evt, w_p4, w_mass):
        m = len(evt)
        flavour = np.where(rng.random(m) < 0.5, 13, 11)
        lmass = np.where(flavour == 13, MUON_MASS, ELECTRON_MASS)
        lep, nu = two_body(rng, w_p4, w_mass, lmass, 0.0)
        charge = np.where(rng.random(m) < 0.5, -1, 1)
        add_prompt_lepton(evt, lep, flavour, charge)
        np.add.at(nu_px, evt, nu[0])
        np.add.at(nu_py, evt, nu[1])

    def make_w(m):
        mass = breit_wigner(rng, 80.379, 2.085, 60.0, 100.0, m)
        p4 = parent_p4(rng.exponential(20.0, m), rng.normal(0.0, 1.2, m), rng.uniform(-math.pi, math.pi, m), mass)
        return p4, mass

    # Z -> ll (+ a W -> l nu in a quarter of them: trilepton events)
    for k, flavour_id, lmass in ((1, 13, MUON_MASS), (2, 11, ELECTRON_MASS)):
        evt = np.nonzero(kind == k)[0]
        m = len(evt)
        zmass = breit_wigner(rng, 91.1876, 2.4952, 50.0, 150.0, m)
        zp4 = parent_p4(rng.exponential(12.0, m), rng.normal(0.0, 1.4, m), rng.uniform(-math.pi, math.pi, m), zmass)
        l1, l2 = two_body(rng, zp4, zmass, lmass, lmass)
        q = np.where(rng.random(m) < 0.5, -1, 1)
        fl = np.full(m, flavour_id)
        add_prompt_lepton(evt, l1, fl, q)
        add_prompt_lepton(evt, l2, fl, -q)
        wz = evt[rng.random(m) < 0.25]
        w_p4, w_mass = make_w(len(wz))
        add_w_leptonic(wz, w_p4, w_mass)

    # W -> l nu in 15% of the generic events
    gen = np.nonzero(kind == 0)[0]
    wev = gen[rng.random(len(gen)) < 0.15]
    w_p4, w_mass = make_w(len(wev))
    add_w_leptonic(wev, w_p4, w_mass)

    # ttbar: t -> b W, one W hadronic, the other leptonic (65%) or hadronic
    evt = np.nonzero(kind == 3)[0]
    m = len(evt)
    top_pt = rng.exponential(90.0, m)
    top_phi = rng.uniform(-math.pi, math.pi, m)
    pts = (top_pt, top_pt * rng.uniform(0.6, 1.4, m))
    phis = (top_phi, top_phi + math.pi + rng.normal(0.0, 0.5, m))
    leptonic = rng.random(m) < 0.65
    for t in range(2):
        tmass = breit_wigner(rng, 172.5, 1.42, 150.0, 195.0, m)
        tp4 = parent_p4(pts[t], rng.normal(0.0, 1.0, m), phis[t], tmass)
        wmass = breit_wigner(rng, 80.379, 2.085, 60.0, 100.0, m)
        b, w = two_body(rng, tp4, tmass, 4.18, wmass)
        add_parton_jets(evt, b, np.ones(m, dtype=bool))
        had = np.ones(m, dtype=bool) if t == 0 else ~leptonic
        q1, q2 = two_body(rng, tuple(c[had] for c in w), wmass[had], 0.0, 0.0)
        add_parton_jets(evt[had], q1, np.zeros(had.sum(), dtype=bool))
        add_parton_jets(evt[had], q2, np.zeros(had.sum(), dtype=bool))
        if t == 1:
            add_w_leptonic(evt[leptonic], tuple(c[leptonic] for c in w), wmass[leptonic])

    # other jets (QCD, ISR, pile-up)
    mean_jets = np.choose(kind, [4.0, 1.8, 1.8, 1.0])
    njet = rng.poisson(mean_jets)
    evt = np.repeat(np.arange(n), njet)
    m = len(evt)
    jpt = 15.0 * (1.0 + rng.pareto(2.3, m))
    jeta = rng.normal(0.0, 1.9, m)
    outside = np.abs(jeta) > 4.7
    jeta[outside] = rng.uniform(-4.7, 4.7, outside.sum())
    is_b = rng.random(m) < 0.05
    jets.add(evt, pt=np.minimum(jpt, 3000.0), eta=jeta, phi=rng.uniform(-math.pi, math.pi, m),
             mass=jpt * rng.uniform(0.05, 0.2, m),
             btag=np.where(is_b, rng.beta(5.0, 1.2, m), rng.beta(0.7, 7.0, m)), puId=jet_puid(jpt))

    # non-prompt / fake leptons
    for coll, mean, ptmin, etamax, lmass in ((muons, 1.15, 3.0, 2.4, MUON_MASS),
                                              (electrons, 0.70, 5.0, 2.5, ELECTRON_MASS)):
        cnt = rng.poisson(mean, n)
        evt = np.repeat(np.arange(n), cnt)
        m = len(evt)
        if coll is muons:
            ident = rng.random(m) < 0.35
        else:
            ident = rng.choice(5, size=m, p=[0.50, 0.25, 0.12, 0.08, 0.05])
        coll.add(evt, pt=ptmin * (1.0 + rng.pareto(2.5, m)), eta=rng.uniform(-etamax, etamax, m),
                 phi=rng.uniform(-math.pi, math.pi, m), mass=lmass, charge=np.where(rng.random(m) < 0.5, -1, 1),
                 iso=rng.exponential(0.4, m), id=ident)

    # Finish the collections: float32 storage, acceptance, pt order, caps.
    lep_types = {"pt": np.float32, "eta": np.float32, "phi": np.float32, "mass": np.float32, "charge": np.int32,
                 "iso": np.float32}
    mu_counts, mu = muons.finish(n_keep, dict(lep_types, id=np.uint8), MAX_MUON,
                                 lambda c: (c["pt"] >= 3.0) & (np.abs(c["eta"]) < 2.4))
    el_counts, el = electrons.finish(n_keep, dict(lep_types, id=np.int32), MAX_ELECTRON,
                                     lambda c: (c["pt"] >= 5.0) & (np.abs(c["eta"]) < 2.5))
    jet_types = {"pt": np.float32, "eta": np.float32, "phi": np.float32, "mass": np.float32, "btag": np.float32,
                 "puId": np.int32}
    jet_counts, jet = jets.finish(n_keep, jet_types, MAX_JET,
                                  lambda c: (c["pt"] >= 15.0) & (np.abs(c["eta"]) < 4.7))

    # event-level quantities (first n_keep events)
    k = n_keep
    sumet = (np.bincount(jet["evt"], weights=jet["pt"], minlength=k)
             + np.bincount(mu["evt"], weights=mu["pt"], minlength=k)
             + np.bincount(el["evt"], weights=el["pt"], minlength=k)
             + rng.gamma(3.0, 120.0, n)[:k])
    sigma = 0.9 * np.sqrt(sumet)  # MET resolution per component
    met_x = nu_px[:k] + rng.normal(0.0, 1.0, n)[:k] * sigma
    met_y = nu_py[:k] + rng.normal(0.0, 1.0, n)[:k] * sigma
    good_mu = (mu["pt"] > 24.0) & (mu["iso"] < 0.15) & (mu["id"] != 0)
    has_mu = np.bincount(mu["evt"][good_mu], minlength=k) > 0
    u_trig = rng.random(n)[:k]
    hlt = np.where(has_mu, u_trig < 0.93, u_trig < 0.003)
    global_index = first + np.arange(k, dtype=np.int64)

    events = {
        "run": np.full(k, 1, dtype=np.uint32),
        "luminosityBlock": (1 + global_index // 1000).astype(np.uint32),
        "event": (global_index + 1).astype(np.uint64),
        "MET_pt": np.hypot(met_x, met_y).astype(np.float32),
        "MET_phi": np.arctan2(met_y, met_x).astype(np.float32),
        "MET_sumet": sumet.astype(np.float32),
        "PV_npvs": np.maximum(rng.poisson(28.0, n)[:k], 1).astype(np.int32),
        "HLT_IsoMu24": hlt.astype(np.uint8),
    }
    return events, (mu_counts, mu), (el_counts, el), (jet_counts, jet)


# ---------------------------------------------------------------------------------------------------------------
# Writers
# ---------------------------------------------------------------------------------------------------------------


def parquet_table(events, muons, electrons, jets):
    import pyarrow as pa  # noqa: PLC0415

    def collection(counts, cols, names):
        offsets = np.concatenate(([0], np.cumsum(counts, dtype=np.int64))).astype(np.int32)
        arrays, fields = [], []
        for out_name, (col, typ) in names.items():
            v = cols[col]
            arr = pa.array(v.astype(bool) if typ == pa.bool_() else v, type=typ)
            arrays.append(arr)
            fields.append(pa.field(out_name, typ, nullable=False))
        struct = pa.StructArray.from_arrays(arrays, fields=fields)
        return pa.ListArray.from_arrays(pa.array(offsets, type=pa.int32()), struct,
                                        type=pa.list_(pa.field("item", struct.type, nullable=False)))

    f32, i32 = pa.float32(), pa.int32()
    lep = {"pt": ("pt", f32), "eta": ("eta", f32), "phi": ("phi", f32), "mass": ("mass", f32),
           "charge": ("charge", i32), "pfRelIso03_all": ("iso", f32)}
    columns = {
        "run": pa.array(events["run"], pa.uint32()),
        "luminosityBlock": pa.array(events["luminosityBlock"], pa.uint32()),
        "event": pa.array(events["event"], pa.uint64()),
        "MET_pt": pa.array(events["MET_pt"], f32),
        "MET_phi": pa.array(events["MET_phi"], f32),
        "MET_sumet": pa.array(events["MET_sumet"], f32),
        "PV_npvs": pa.array(events["PV_npvs"], i32),
        "HLT_IsoMu24": pa.array(events["HLT_IsoMu24"].astype(bool), pa.bool_()),
        "Muon": collection(*muons, dict(lep, tightId=("id", pa.bool_()))),
        "Electron": collection(*electrons, dict(lep, cutBased=("id", i32))),
        "Jet": collection(*jets, {"pt": ("pt", f32), "eta": ("eta", f32), "phi": ("phi", f32),
                                  "mass": ("mass", f32), "btag": ("btag", f32), "puId": ("puId", i32)}),
    }
    schema = pa.schema([pa.field(name, arr.type, nullable=False) for name, arr in columns.items()])
    return pa.Table.from_arrays(list(columns.values()), schema=schema)


def generate(args, rntuple_path, small_path, parquet_path):
    ROOT = root()
    n_total = args.events
    n_chunks = (n_total + CHUNK - 1) // CHUNK
    stats = {"events": 0, "muons": 0, "electrons": 0, "jets": 0}
    with tempfile.TemporaryDirectory(prefix="nanoaod-gen-") as tmp:
        tree_path = os.path.join(tmp, "events_tree.root")
        writer = ROOT.nanogen.TreeWriter(tree_path, 0)
        pq_writer = None
        t0 = time.time()
        t_gen = t_fill = t_pq = 0.0
        for c in range(n_chunks):
            n_keep = min(CHUNK, n_total - c * CHUNK)
            t = time.time()
            events, (mc, mu), (ec, el), (jc, jet) = generate_chunk(args.seed, c, n_keep)
            t_gen += time.time() - t
            t = time.time()
            writer.SetEvents(n_keep, events["run"], events["luminosityBlock"], events["event"], events["MET_pt"],
                             events["MET_phi"], events["MET_sumet"], events["PV_npvs"], events["HLT_IsoMu24"])
            writer.SetMuons(mc, mu["pt"], mu["eta"], mu["phi"], mu["mass"], mu["charge"], mu["iso"], mu["id"])
            writer.SetElectrons(ec, el["pt"], el["eta"], el["phi"], el["mass"], el["charge"], el["iso"], el["id"])
            writer.SetJets(jc, jet["pt"], jet["eta"], jet["phi"], jet["mass"], jet["btag"], jet["puId"])
            writer.Fill()
            t_fill += time.time() - t
            if parquet_path:
                import pyarrow.parquet as pq  # noqa: PLC0415

                t = time.time()
                table = parquet_table(events, (mc, mu), (ec, el), (jc, jet))
                if pq_writer is None:
                    pq_writer = pq.ParquetWriter(parquet_path + ".part", table.schema, compression="zstd",
                                                 compression_level=5)
                pq_writer.write_table(table, row_group_size=CHUNK)
                t_pq += time.time() - t
            stats["events"] += n_keep
            stats["muons"] += int(mc.sum())
            stats["electrons"] += int(ec.sum())
            stats["jets"] += int(jc.sum())
            if n_chunks > 1:
                print("  chunk %d/%d done (%.0f s)" % (c + 1, n_chunks, time.time() - t0), flush=True)
        writer.Close()
        if pq_writer is not None:
            pq_writer.close()
            os.replace(parquet_path + ".part", parquet_path)
        print("generated %d events: %.2f muons, %.2f electrons, %.2f jets per event" % (
            stats["events"], stats["muons"] / stats["events"], stats["electrons"] / stats["events"],
            stats["jets"] / stats["events"]))
        print("  numpy %.1f s, TTree fill %.1f s, Parquet %.1f s; TTree file %.1f MB" % (
            t_gen, t_fill, t_pq, os.path.getsize(tree_path) / 1e6))

        t = time.time()
        for path, approx, max_unzipped in ((rntuple_path, 0, 0),
                                           (small_path, args.small_cluster_bytes, 0)):
            if not path:
                continue
            if os.path.exists(path):
                os.remove(path)
            ROOT.nanogen.Import(tree_path, path, approx, max_unzipped)
        print("  RNTupleImporter %.1f s" % (time.time() - t))
    return stats


# ---------------------------------------------------------------------------------------------------------------
# Answers
# ---------------------------------------------------------------------------------------------------------------


def hex_bits(values):
    bits = np.ascontiguousarray(values, dtype=np.float64).view(np.uint64)
    return ["0x%016x" % b for b in bits.tolist()]


def bin_counts(values, lo, hi, bins):
    """The binning rule documented above, independent of ROOT (for the cross-check)."""
    v = np.asarray(values, dtype=np.float64)
    under = int(np.count_nonzero(v < lo))
    over = int(np.count_nonzero(~(v < hi)))
    inside = v[(v >= lo) & (v < hi)]
    idx = np.floor((bins * (inside - lo)) / (hi - lo)).astype(np.int64)
    idx = np.minimum(idx, bins - 1)
    return np.bincount(idx, minlength=bins).tolist(), under, over


def run_queries(path, with_values, repeat, crosscheck):
    """Returns (answers, timings): answers[name] = histogram dict (+ values); timings[query] = loop seconds."""
    ROOT = root()
    if ROOT.ROOT.IsImplicitMTEnabled():
        ROOT.ROOT.DisableImplicitMT()
    answers, timings = {}, {}
    for query, hists in QUERIES.items():
        ranges = [x for _, lo, hi in hists for x in (lo, hi)]
        # 1. the timed loop(s): histograms only
        seconds = []
        timed = None
        for _ in range(repeat):
            timed = ROOT.adl.RunQuery(query, path, ranges, BINS, False, False)
            seconds.append(timed.seconds)
        timings[query] = seconds
        # 2. the loop with the values (histograms + Take)
        full = ROOT.adl.RunQuery(query, path, ranges, BINS, True, False)
        gv = None
        for i, (name, lo, hi) in enumerate(hists):
            h = full.hists[i]
            counts = [int(h.GetBinContent(b)) for b in range(1, BINS + 1)]
            under, over = int(h.GetBinContent(0)), int(h.GetBinContent(BINS + 1))
            hc = timed.hists[i]
            if [int(hc.GetBinContent(b)) for b in range(0, BINS + 2)] != [under] + counts + [over]:
                raise SystemExit("%s: the timed loop and the values loop disagree" % name)
            nvals = ROOT.adl.ValueCount(full, i)
            values = np.zeros(nvals, dtype=np.float64)
            if nvals:
                ROOT.adl.CopyValues(full, i, values)
            fills = int(h.GetEntries())
            if fills != nvals:
                raise SystemExit("%s: %d fills but %d values" % (name, fills, nvals))
            if bin_counts(values, lo, hi, BINS) != (counts, under, over):
                raise SystemExit("%s: ROOT's bin counts differ from the documented binning rule" % name)
            entry = {"lo": lo, "hi": hi, "bins": BINS, "counts": counts, "underflow": under, "overflow": over,
                     "fills": fills}
            if with_values:
                entry["values"] = hex_bits(values)
            answers[name] = entry
            if crosscheck and query in ("q5", "q6", "q8"):
                if gv is None:
                    gv = ROOT.adl.RunQuery(query, path, ranges, BINS, True, True)
                gvals = np.zeros(ROOT.adl.ValueCount(gv, i), dtype=np.float64)
                if len(gvals):
                    ROOT.adl.CopyValues(gv, i, gvals)
                if len(gvals) != len(values):
                    print("  crosscheck %s: GenVector gives %d fills, explicit formulas %d" % (
                        name, len(gvals), len(values)))
                else:
                    rel = np.abs(gvals - values) / np.maximum(np.abs(values), 1e-300)
                    same_bins = bin_counts(gvals, lo, hi, BINS) == (counts, under, over)
                    print("  crosscheck %s vs PtEtaPhiMVector: %d values, %d bit-identical, max rel diff %.2e, "
                          "histogram %s" % (name, len(values), int(np.count_nonzero(gvals == values)),
                                            float(rel.max()) if len(rel) else 0.0,
                                            "identical" if same_bins else "DIFFERENT"))
        print("  %-3s loop %s s; fills %s" % (
            query, ", ".join("%.3f" % s for s in seconds),
            ", ".join("%s=%d" % (name, answers[name]["fills"]) for name, _, _ in hists)), flush=True)
    return answers, timings


def write_answers(path, answers, meta):
    """JSON with one query per block; counts on one line, values wrapped 6 per line."""
    lines = ["{", '  "meta": %s,' % json.dumps(meta, sort_keys=True)]
    names = list(answers)
    for qi, name in enumerate(names):
        a = answers[name]
        lines.append('  "%s": {' % name)
        lines.append('    "lo": %s, "hi": %s, "bins": %d, "underflow": %d, "overflow": %d, "fills": %d,' % (
            json.dumps(a["lo"]), json.dumps(a["hi"]), a["bins"], a["underflow"], a["overflow"], a["fills"]))
        tail = "," if "values" in a else ""
        lines.append('    "counts": %s%s' % (json.dumps(a["counts"]), tail))
        if "values" in a:
            vals = a["values"]
            if not vals:
                lines.append('    "values": []')
            else:
                lines.append('    "values": [')
                for i in range(0, len(vals), 6):
                    chunk = ", ".join('"%s"' % v for v in vals[i:i + 6])
                    lines.append("      " + chunk + ("," if i + 6 < len(vals) else ""))
                lines.append("    ]")
        lines.append("  }" + ("," if qi + 1 < len(names) else ""))
    lines.append("}")
    text = "\n".join(lines) + "\n"
    json.loads(text)  # well-formed
    with open(path, "w") as f:
        f.write(text)


# ---------------------------------------------------------------------------------------------------------------


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=2_000_000, help="number of events (default 2,000,000)")
    parser.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    parser.add_argument("-o", "--output", metavar="DIR", default=".", help="output directory")
    parser.add_argument("--name", help="file stem (default nanoaod_<N>)")
    parser.add_argument("--parquet", action="store_true", help="also write DIR/<name>.parquet")
    parser.add_argument("--small-clusters", metavar="NAME",
                        help="also write DIR/NAME.root: the same events with small clusters")
    parser.add_argument("--small-cluster-bytes", type=int, default=48 * 1024,
                        help="approximate zipped cluster size of --small-clusters (default 48 KiB)")
    parser.add_argument("--no-generate", action="store_true",
                        help="reuse the existing DIR/<name>.root (for --answers / --timings / --info)")
    parser.add_argument("--answers", metavar="FILE.json", help="write ROOT's histograms of the ADL queries")
    parser.add_argument("--with-values", action="store_true", help="include every filled value in --answers")
    parser.add_argument("--timings", metavar="FILE.json", help="write the RDataFrame event-loop time per query")
    parser.add_argument("--repeat", type=int, default=1, help="timed event loops per query (default 1)")
    parser.add_argument("--crosscheck", action="store_true",
                        help="also compute Q5, Q6, Q8 with ROOT::Math::PtEtaPhiMVector and compare")
    parser.add_argument("--info", action="store_true", help="print the RNTuple's fields and PrintInfo()")
    args = parser.parse_args()
    if args.events <= 0:
        sys.exit("--events must be positive")

    os.makedirs(args.output, exist_ok=True)
    stem = args.name or "nanoaod_%d" % args.events
    rntuple_path = os.path.join(args.output, stem + ".root")
    small_path = os.path.join(args.output, args.small_clusters + ".root") if args.small_clusters else None
    parquet_path = os.path.join(args.output, stem + ".parquet") if args.parquet else None

    start = time.time()
    if not args.no_generate:
        generate(args, rntuple_path, small_path, parquet_path)
        print("generation done in %.1f s" % (time.time() - start))
    for path in (rntuple_path, small_path, parquet_path):
        if path and os.path.exists(path):
            print("  %s: %d bytes" % (path, os.path.getsize(path)))

    ROOT = root()
    if args.info:
        for path in (rntuple_path, small_path):
            if path:
                print("fields of %s:" % path)
                print(ROOT.nanogen.Describe(path))
        ROOT.nanogen.PrintInfo(rntuple_path)

    if args.answers or args.timings:
        answers, timings = run_queries(rntuple_path, args.with_values, max(args.repeat, 1), args.crosscheck)
        if small_path:
            small_answers, _ = run_queries(small_path, args.with_values, 1, False)
            if small_answers != answers:
                sys.exit("the small-cluster copy gives different answers")
            print("  the small-cluster copy gives the same answers")
        meta = {
            "file": os.path.basename(rntuple_path),
            "events": args.events,
            "seed": args.seed,
            "root_version": str(ROOT.gROOT.GetVersion()),
            "histograms": "TH1D filled by ROOT::RDataFrame; rules in benches/nanoaod/generate.py",
        }
        if args.answers:
            write_answers(args.answers, answers, meta)
            print("wrote %s (%d bytes)" % (args.answers, os.path.getsize(args.answers)))
        if args.timings:
            doc = {
                "file": rntuple_path,
                "events": args.events,
                "threads": 1,
                "load_average_after": list(os.getloadavg()),
                "root_version": str(ROOT.gROOT.GetVersion()),
                "what": "seconds of each single-threaded RDataFrame event loop filling the query's histograms",
                "seconds": timings,
                "best": {q: min(s) for q, s in timings.items()},
            }
            with open(args.timings, "w") as f:
                json.dump(doc, f, indent=2)
                f.write("\n")
            print("wrote %s" % args.timings)
    print("total %.1f s" % (time.time() - start))


if __name__ == "__main__":
    main()
