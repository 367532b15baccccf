#!/usr/bin/env python3
"""The ADL benchmark queries with uproot and awkward, over the RNTuple of benches/nanoaod/generate.py.

    python3 benches/compare/uproot_adl.py FILE.root answers.json

BRANCHES maps each histogram name (q1 .. q5, q6a, q6b, q7, q8) to the RNTuple fields its query reads; compute(name,
arrays) returns the values ROOT fills into that histogram, computed column-wise with awkward (ak.combinations,
ak.argmin with keepdims, ...), no Python loop over events. The arithmetic follows the rules in generate.py's
docstring: float32 fields are converted to float64 first, sums are written in object order, and ties of the
minimum / maximum keep the first candidate (ak.argmin / ak.argmax return the first extremum; ak.combinations lists
pairs and triples in lexicographic index order).

Caveat: numpy's float64 sin, cos and sqrt give the C library's results, but on CPUs with AVX-512 numpy computes
float64 sinh with its own SIMD code, which differs from glibc's sinh in the last bit for about a quarter of the
inputs. sinh enters only pz, hence only the invariant masses, which decide selections (Q5's mass window, the
closest trijet or pair in Q6 and Q8) without being filled; a value lying within an ulp of a cut or a near-tie could
then select differently from ROOT. Setting NPY_DISABLE_CPU_FEATURES="X86_V4 AVX512_ICL AVX512_SPR" before numpy is
imported makes numpy call glibc's sinh.

The __main__ runs all nine queries and compares them with ROOT's histograms in an answers file of generate.py
(validation helpers shared with duckdb_adl.py).
"""

import os
import sys
import time

import awkward as ak
import numpy as np
import uproot

LEPTON = ["pt", "eta", "phi", "mass", "charge"]
JET = ["pt", "eta", "phi", "mass"]


def fields(collection, members):
    return ["%s_%s" % (collection, m) for m in members]


BRANCHES = {
    "q1": ["MET_pt"],
    "q2": ["Jet_pt"],
    "q3": ["Jet_pt", "Jet_eta"],
    "q4": ["MET_pt", "Jet_pt"],
    "q5": ["MET_pt"] + fields("Muon", LEPTON),
    "q6a": fields("Jet", JET),
    "q6b": fields("Jet", JET + ["btag"]),
    "q7": fields("Jet", ["pt", "eta", "phi"]) + fields("Muon", ["pt", "eta", "phi"])
    + fields("Electron", ["pt", "eta", "phi"]),
    "q8": ["MET_pt", "MET_phi"] + fields("Muon", LEPTON) + fields("Electron", LEPTON),
}


def f64(x):
    return ak.values_astype(x, np.float64)


def four_vectors(arrays, collection, **keep):
    """Per event, the records {px, py, pz, e, <keep>} of a collection (float64); keep maps names to arrays."""
    pt, eta, phi, m = (f64(arrays["%s_%s" % (collection, f)]) for f in ("pt", "eta", "phi", "mass"))
    px = pt * np.cos(phi)
    py = pt * np.sin(phi)
    pz = pt * np.sinh(eta)
    e = np.sqrt(px * px + py * py + pz * pz + m * m)
    return ak.zip(dict(px=px, py=py, pz=pz, e=e, **keep))


def add(*vectors):
    """The component-wise sum, left to right: ((a + b) + c)."""
    total = {c: vectors[0][c] for c in ("px", "py", "pz", "e")}
    for v in vectors[1:]:
        total = {c: total[c] + v[c] for c in total}
    return total


def mass(s):
    m2 = s["e"] * s["e"] - (s["px"] * s["px"] + s["py"] * s["py"] + s["pz"] * s["pz"])
    root = np.sqrt(np.abs(m2))
    return ak.where(m2 >= 0, root, -root)


def delta_phi(a, b):
    d = a - b
    return ak.where(d > np.pi, d - 2 * np.pi, ak.where(d < -np.pi, d + 2 * np.pi, d))


def numpy_values(x):
    return np.asarray(ak.to_numpy(ak.flatten(x, axis=None)), dtype=np.float64)


def q5(a):
    mu = four_vectors(a, "Muon", q=a["Muon_charge"])
    m1, m2 = ak.unzip(ak.combinations(mu, 2))
    m = mass(add(m1, m2))
    found = ak.any((m1.q != m2.q) & (m >= 60) & (m <= 120), axis=1)
    return a["MET_pt"][found]


def q6(a, btag):
    """The trijet closest to 172.5 GeV in events with >= 3 jets: its pt, or the largest btag of its jets."""
    a = a[ak.num(a["Jet_pt"]) >= 3]
    keep = {"btag": a["Jet_btag"]} if btag else {}
    j1, j2, j3 = ak.unzip(ak.combinations(four_vectors(a, "Jet", **keep), 3))
    s = add(j1, j2, j3)
    best = ak.argmin(abs(mass(s) - 172.5), axis=1, keepdims=True)  # first minimum
    if btag:
        return np.maximum(np.maximum(j1.btag[best], j2.btag[best]), j3.btag[best])
    px, py = s["px"][best], s["py"][best]
    return np.sqrt(px * px + py * py)


def q7(a):
    jet = ak.zip({c: f64(a["Jet_" + c]) for c in ("pt", "eta", "phi")})
    jet = jet[jet.pt > 30]
    muon = ak.zip({c: f64(a["Muon_" + c]) for c in ("pt", "eta", "phi")})
    electron = ak.zip({c: f64(a["Electron_" + c]) for c in ("pt", "eta", "phi")})
    lepton = ak.concatenate([muon[muon.pt > 10], electron[electron.pt > 10]], axis=1)
    j, lep = ak.unzip(ak.cartesian([jet, lepton], nested=True))  # per jet, all leptons
    deta = j.eta - lep.eta
    dphi = delta_phi(j.phi, lep.phi)
    near = ak.any(np.sqrt(deta * deta + dphi * dphi) < 0.4, axis=2)
    return ak.sum(jet.pt[~near], axis=1)  # in jet order from 0.0


def q8(a):
    def leptons(collection, flavour):
        c = a[collection + "_charge"]
        return four_vectors(a, collection, pt=f64(a[collection + "_pt"]), phi=f64(a[collection + "_phi"]), q=c,
                            f=ak.full_like(c, flavour))

    lep = ak.concatenate([leptons("Muon", 13), leptons("Electron", 11)], axis=1)  # muons, then electrons
    lep = ak.with_field(lep, ak.local_index(lep, axis=1), "i")
    enough = ak.num(lep) >= 3
    lep, met, met_phi = lep[enough], f64(a["MET_pt"][enough]), f64(a["MET_phi"][enough])
    l1, l2 = ak.unzip(ak.combinations(lep, 2))
    sfos = (l1.f == l2.f) & (l1.q != l2.q)
    l1, l2 = l1[sfos], l2[sfos]
    has_pair = ak.num(l1) > 0
    lep, met, met_phi, l1, l2 = lep[has_pair], met[has_pair], met_phi[has_pair], l1[has_pair], l2[has_pair]
    best = ak.argmin(abs(mass(add(l1, l2)) - 91.2), axis=1, keepdims=True)  # first minimum
    others = lep[(lep.i != ak.firsts(l1.i[best])) & (lep.i != ak.firsts(l2.i[best]))]
    lead = ak.firsts(others[ak.argmax(others.pt, axis=1, keepdims=True)])  # first maximum
    return np.sqrt(((2.0 * lead.pt) * met) * (1.0 - np.cos(lead.phi - met_phi)))


COMPUTE = {
    "q1": lambda a: a["MET_pt"],
    "q2": lambda a: a["Jet_pt"],
    "q3": lambda a: a["Jet_pt"][abs(a["Jet_eta"]) < 1],
    "q4": lambda a: a["MET_pt"][ak.sum(a["Jet_pt"] > 40, axis=1) >= 2],
    "q5": q5,
    "q6a": lambda a: q6(a, btag=False),
    "q6b": lambda a: q6(a, btag=True),
    "q7": q7,
    "q8": q8,
}


def compute(name, arrays):
    """The values of query ``name`` as a float64 numpy array (event order, then object order)."""
    return numpy_values(COMPUTE[name](arrays))


def run(path, name):
    """Opens the RNTuple ``Events`` of path, reads the fields of query ``name`` and computes its values."""
    with uproot.open(path) as f:
        arrays = f["Events"].arrays(BRANCHES[name])
    return compute(name, arrays)


def main():
    import argparse  # noqa: PLC0415
    import json  # noqa: PLC0415

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from duckdb_adl import compare  # noqa: PLC0415

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("root")
    parser.add_argument("answers")
    args = parser.parse_args()
    with open(args.answers) as f:
        answers = json.load(f)
    ok = True
    for name in BRANCHES:
        t = time.perf_counter()
        values = run(args.root, name)
        seconds = time.perf_counter() - t
        passed, line = compare(name, values, answers[name])
        ok = ok and passed
        print("%s  [%.3f s]" % (line, seconds), flush=True)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
