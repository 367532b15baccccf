#!/usr/bin/env python3
"""Recomputes the ADL query values of generate.py in plain Python and compares them with an answers file.

    python3 benches/nanoaod/check_answers.py tests/data/adl/nanoaod_events.root tests/data/adl/answers.json

An independent implementation of the rules documented in generate.py: the RNTuple is read with uproot (no ROOT), each
event is processed with Python floats (IEEE double) and the math module (the C library's cos, sin, sinh, sqrt). Every
value must equal the one in the answers file bit for bit (the file must have been written with --with-values), and
the histograms must match. Exits non-zero on any difference. Slow (pure Python): meant for the small fixture.
"""

import json
import math
import struct
import sys

import uproot

Q8_Z_MASS = 91.2
Q6_TOP_MASS = 172.5


def p4(pt, eta, phi, m):
    px = pt * math.cos(phi)
    py = pt * math.sin(phi)
    pz = pt * math.sinh(eta)
    return (px, py, pz, math.sqrt(px * px + py * py + pz * pz + m * m))


def add(a, b):
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3])


def mass(p):
    m2 = p[3] * p[3] - (p[0] * p[0] + p[1] * p[1] + p[2] * p[2])
    return math.sqrt(m2) if m2 >= 0 else -math.sqrt(-m2)


def delta_phi(a, b):
    d = a - b
    if d > math.pi:
        d -= 2 * math.pi
    elif d < -math.pi:
        d += 2 * math.pi
    return d


def delta_r(eta1, phi1, eta2, phi2):
    deta = eta1 - eta2
    dphi = delta_phi(phi1, phi2)
    return math.sqrt(deta * deta + dphi * dphi)


def objects(arrays, prefix, members, i):
    cols = [arrays[prefix + "_" + m][i] for m in members]
    return [tuple(float(c[k]) for c in cols) for k in range(len(cols[0]))]


def event_values(met, met_phi, jets, muons, electrons, out):
    """jets: (pt, eta, phi, mass, btag); leptons: (pt, eta, phi, mass, charge)"""
    out["q1"].append(met)
    out["q2"].extend(j[0] for j in jets)
    out["q3"].extend(j[0] for j in jets if abs(j[1]) < 1.0)
    if sum(1 for j in jets if j[0] > 40.0) >= 2:
        out["q4"].append(met)

    mu_p4 = [p4(*m[:4]) for m in muons]
    if any(muons[a][4] != muons[b][4] and 60.0 <= mass(add(mu_p4[a], mu_p4[b])) <= 120.0
           for a in range(len(muons)) for b in range(a + 1, len(muons))):
        out["q5"].append(met)

    if len(jets) >= 3:
        jp = [p4(*j[:4]) for j in jets]
        best = None
        for a in range(len(jets)):
            for b in range(a + 1, len(jets)):
                for c in range(b + 1, len(jets)):
                    s = add(add(jp[a], jp[b]), jp[c])
                    d = abs(mass(s) - Q6_TOP_MASS)
                    if best is None or d < best[0]:
                        best = (d, s, max(jets[a][4], jets[b][4], jets[c][4]))
        s = best[1]
        out["q6a"].append(math.sqrt(s[0] * s[0] + s[1] * s[1]))
        out["q6b"].append(best[2])

    leptons10 = [lep for lep in muons + electrons if lep[0] > 10.0]
    ht = 0.0
    for j in jets:
        if j[0] > 30.0 and not any(delta_r(j[1], j[2], lep[1], lep[2]) < 0.4 for lep in leptons10):
            ht += j[0]
    out["q7"].append(ht)

    leptons = [m + (13,) for m in muons] + [e + (11,) for e in electrons]
    if len(leptons) >= 3:
        best = None
        for a in range(len(leptons)):
            for b in range(a + 1, len(leptons)):
                if leptons[a][5] != leptons[b][5] or leptons[a][4] == leptons[b][4]:
                    continue
                d = abs(mass(add(p4(*leptons[a][:4]), p4(*leptons[b][:4]))) - Q8_Z_MASS)
                if best is None or d < best[0]:
                    best = (d, a, b)
        if best is not None:
            lead = None
            for k in range(len(leptons)):
                if k in best[1:]:
                    continue
                if lead is None or leptons[k][0] > leptons[lead][0]:
                    lead = k
            pt, phi = leptons[lead][0], leptons[lead][2]
            out["q8"].append(math.sqrt(((2.0 * pt) * met) * (1.0 - math.cos(phi - met_phi))))


def histogram(values, lo, hi, bins):
    counts = [0] * bins
    under = over = 0
    for x in values:
        if x < lo:
            under += 1
        elif not x < hi:
            over += 1
        else:
            counts[min(int(math.floor((bins * (x - lo)) / (hi - lo))), bins - 1)] += 1
    return counts, under, over


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    path, answers_path = sys.argv[1:]
    with open(answers_path) as f:
        answers = json.load(f)
    lep = ("pt", "eta", "phi", "mass", "charge")
    jet = ("pt", "eta", "phi", "mass", "btag")
    columns = (["MET_pt", "MET_phi"] + ["Muon_" + m for m in lep] + ["Electron_" + m for m in lep]
               + ["Jet_" + m for m in jet])
    arrays = uproot.open(path)["Events"].arrays(columns, library="np")
    out = {name: [] for name in ("q1", "q2", "q3", "q4", "q5", "q6a", "q6b", "q7", "q8")}
    for i in range(len(arrays["MET_pt"])):
        event_values(float(arrays["MET_pt"][i]), float(arrays["MET_phi"][i]), objects(arrays, "Jet", jet, i),
                     objects(arrays, "Muon", lep, i), objects(arrays, "Electron", lep, i), out)
    failed = False
    for name, values in out.items():
        a = answers[name]
        expected = [struct.unpack(">d", bytes.fromhex(h[2:]))[0] for h in a["values"]]
        same_values = len(expected) == len(values) and all(
            struct.pack(">d", x) == struct.pack(">d", y) for x, y in zip(expected, values))
        same_hist = histogram(values, a["lo"], a["hi"], a["bins"]) == (a["counts"], a["underflow"], a["overflow"])
        same_hist = same_hist and len(values) == a["fills"]
        failed = failed or not (same_values and same_hist)
        print("%-4s %8d values: %s, histogram %s" % (name, len(values), "bit-identical" if same_values else "DIFFER",
                                                     "identical" if same_hist else "DIFFERS"))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
