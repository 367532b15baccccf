#!/usr/bin/env python3
"""The ADL benchmark queries in DuckDB SQL, over the Parquet file of benches/nanoaod/generate.py.

    python3 benches/compare/duckdb_adl.py FILE.parquet answers.json [--threads N]

QUERIES maps each histogram name (q1 .. q5, q6a, q6b, q7, q8) to a query over a view ``events`` of the Parquet file
(scalar columns and the lists of structs ``Muon``, ``Electron``, ``Jet``) returning one DOUBLE column ``x``: the
values ROOT fills into that histogram. The arithmetic follows the rules in generate.py's docstring: every float is
cast to DOUBLE before use (in DuckDB FLOAT * FLOAT stays FLOAT), sums are written in object order with explicit
parentheses, and cos/sin/sinh/sqrt are the C library's, so the values are meant to be bit-identical to ROOT's.

Per event, objects are lists built with list comprehensions; a nested comprehension stands in for a local
variable (the four-vector of an object is ``[{..., e: sqrt(v.px * v.px + ...)} FOR v IN [{px: ..., ...} FOR o IN
Muon]]``). Q5, Q6 and Q8 unnest the candidate pairs or triples of each event into rows and decide per event with
GROUP BY (run, event); ``arg_min(value, (d, a, b, c))`` gives the first candidate in index order on a tie. (Keeping
the candidates as lists and taking ``list_position(d, list_min(d))`` gives the same values but is about twice as
slow in DuckDB 2.0.)

The __main__ runs all nine queries and compares them with ROOT's histograms in an answers file of generate.py.
"""

import functools
import importlib.util
import os
import sys
import time

import duckdb
import numpy as np


def four_vectors(collection, **keep):
    """The objects of a list-of-structs column as a list of {px, py, pz, e, <keep>} in DOUBLE.

    keep maps output field names to expressions of the object ``o`` (e.g. q="o.charge"). The inner comprehension
    computes px, py, pz once; the outer one adds E."""
    extra = "".join(", %s: %s" % (name, expr) for name, expr in keep.items())
    kept = "".join(", %s: v.%s" % (name, name) for name in keep)
    return ("[{px: v.px, py: v.py, pz: v.pz, e: sqrt(v.px * v.px + v.py * v.py + v.pz * v.pz + v.m * v.m)%s}\n"
            "            FOR v IN [{px: o.pt::DOUBLE * cos(o.phi::DOUBLE), py: o.pt::DOUBLE * sin(o.phi::DOUBLE),\n"
            "                      pz: o.pt::DOUBLE * sinh(o.eta::DOUBLE), m: o.mass::DOUBLE%s}\n"
            "                     FOR o IN %s]]" % (kept, extra, collection))


def sum_columns(*objects):
    """Columns px, py, pz, e: the sum of the four-vectors ``objects``, left to right ((a + b) + c)."""
    def chain(c):
        expr = "%s.%s" % (objects[0], c)
        for o in objects[1:]:
            expr = "(%s + %s.%s)" % (expr, o, c)
        return expr
    return ",\n           ".join("%s AS %s" % (chain(c), c) for c in ("px", "py", "pz", "e"))


# m2 of a row of summed four-vector columns, and the signed invariant mass from it
M2 = "e * e - (px * px + py * py + pz * pz)"
MASS = "CASE WHEN m2 >= 0 THEN sqrt(m2) ELSE -sqrt(-m2) END"

# Index pairs a < b and triples a < b < c of a list ``l``, in lexicographic order, as a list of structs
PAIRS = "flatten([[{a: a, b: b} FOR b IN range(a + 1, len(%(l)s) + 1)] FOR a IN range(1, len(%(l)s) + 1)])"
TRIPLES = ("flatten(flatten([[[{a: a, b: b, c: c} FOR c IN range(b + 1, len(%(l)s) + 1)]\n"
           "                                          FOR b IN range(a + 1, len(%(l)s) + 1)]\n"
           "                                         FOR a IN range(1, len(%(l)s) + 1)]))")

# Q5, Q6 and Q8: one row per candidate pair or triple, then GROUP BY (run, event), which identifies an event.

Q5 = """
WITH muons AS (
    SELECT run, event, MET_pt, %(mu)s AS mu
    FROM events
    WHERE len(Muon) >= 2
), pairs AS (
    -- opposite-charge pairs a < b and their four-vector sums
    SELECT run, event, MET_pt,
           %(sum)s
    FROM (SELECT run, event, MET_pt, mu, unnest(%(pairs)s) AS p FROM muons)
    WHERE mu[p.a].q <> mu[p.b].q
)
SELECT any_value(MET_pt)::DOUBLE AS x
FROM (SELECT run, event, MET_pt, %(mass)s AS m FROM (SELECT *, %(m2)s AS m2 FROM pairs))
GROUP BY run, event
HAVING bool_or(m BETWEEN 60 AND 120)
""" % {"mu": four_vectors("Muon", q="o.charge"), "pairs": PAIRS % {"l": "mu"},
       "sum": sum_columns("mu[p.a]", "mu[p.b]"), "mass": MASS, "m2": M2}

# Q6: the trijet closest to the top mass; q6a and q6b differ only in the value taken from it
Q6 = """
WITH jets AS (
    SELECT run, event, %(jet)s AS jet
    FROM events
    WHERE len(Jet) >= 3
), triples AS (
    -- all triples a < b < c, their four-vector sums and largest btag
    SELECT run, event, t.a, t.b, t.c,
           %(sum)s,
           greatest(jet[t.a].btag, jet[t.b].btag, jet[t.c].btag)::DOUBLE AS btag
    FROM (SELECT run, event, jet, unnest(%(triples)s) AS t
          FROM jets)
), scored AS (
    SELECT run, event, a, b, c, btag, sqrt(px * px + py * py) AS pt, abs(%(mass)s - 172.5) AS d
    FROM (SELECT *, %(m2)s AS m2 FROM triples)
)
SELECT arg_min(%%(value)s, (d, a, b, c)) AS x
FROM scored
GROUP BY run, event
""" % {"jet": four_vectors("Jet", btag="o.btag"), "triples": TRIPLES % {"l": "jet"},
       "sum": sum_columns("jet[t.a]", "jet[t.b]", "jet[t.c]"), "mass": MASS, "m2": M2}

Q8 = """
WITH leptons AS (
    -- muons then electrons; f = flavour
    SELECT run, event, MET_pt::DOUBLE AS met, MET_phi::DOUBLE AS met_phi,
           list_concat(%(mu)s,
                       %(el)s) AS l
    FROM events
    WHERE len(Muon) + len(Electron) >= 3
), pairs AS (
    -- same-flavour opposite-charge pairs a < b and their four-vector sums
    SELECT run, event, p.a, p.b,
           %(sum)s
    FROM (SELECT run, event, l, unnest(%(pairs)s) AS p FROM leptons)
    WHERE l[p.a].f = l[p.b].f AND l[p.a].q <> l[p.b].q
), best AS (
    -- per event, the pair closest to the Z mass
    SELECT run, event, arg_min({a: a, b: b}, (d, a, b)) AS p
    FROM (SELECT run, event, a, b, abs(%(mass)s - 91.2) AS d FROM (SELECT *, %(m2)s AS m2 FROM pairs))
    GROUP BY run, event
), others AS (
    -- the pts of the leptons outside the pair (NULL for the pair)
    SELECT met, met_phi, l,
           [CASE WHEN k = p.a OR k = p.b THEN NULL ELSE l[k].pt END FOR k IN range(1, len(l) + 1)] AS pt
    FROM best JOIN leptons USING (run, event)
), third AS (
    -- the leading one (first on a tie)
    SELECT met, met_phi, l[list_position(pt, list_max(pt))] AS lep
    FROM others
)
SELECT sqrt(((2.0 * lep.pt) * met) * (1.0 - cos(lep.phi - met_phi))) AS x
FROM third
""" % {"mu": four_vectors("Muon", pt="o.pt::DOUBLE", phi="o.phi::DOUBLE", q="o.charge", f="13"),
       "el": four_vectors("Electron", pt="o.pt::DOUBLE", phi="o.phi::DOUBLE", q="o.charge", f="11"),
       "pairs": PAIRS % {"l": "l"}, "sum": sum_columns("l[p.a]", "l[p.b]"), "mass": MASS, "m2": M2}

QUERIES = {
    # Q1: MET of every event
    "q1": "SELECT MET_pt::DOUBLE AS x FROM events",
    # Q2: pt of every jet
    "q2": "SELECT j.pt::DOUBLE AS x FROM (SELECT unnest(Jet) AS j FROM events)",
    # Q3: pt of the jets with |eta| < 1
    "q3": "SELECT j.pt::DOUBLE AS x FROM (SELECT unnest(Jet) AS j FROM events) WHERE abs(j.eta) < 1",
    # Q4: MET of events with at least two jets above 40 GeV
    "q4": "SELECT MET_pt::DOUBLE AS x FROM events WHERE len(list_filter(Jet, lambda j: j.pt > 40)) >= 2",
    # Q5: MET of events with an opposite-charge muon pair of mass in [60, 120]
    "q5": Q5,
    # Q6a: pt of the trijet closest to 172.5 GeV
    "q6a": Q6 % {"value": "pt"},
    # Q6b: the largest btag among its three jets
    "q6b": Q6 % {"value": "btag"},
    # Q7: per event, sum of the pts (from 0.0, in jet order) of the jets above 30 GeV with no light lepton above
    # 10 GeV within delta R 0.4; the inner comprehension binds the raw eta and phi differences
    "q7": """
WITH objects AS (
    SELECT [{pt: o.pt::DOUBLE, eta: o.eta::DOUBLE, phi: o.phi::DOUBLE} FOR o IN Jet IF o.pt > 30] AS jets,
           list_concat([{eta: o.eta::DOUBLE, phi: o.phi::DOUBLE} FOR o IN Muon IF o.pt > 10],
                       [{eta: o.eta::DOUBLE, phi: o.phi::DOUBLE} FOR o IN Electron IF o.pt > 10]) AS leptons
    FROM events
)
SELECT list_reduce(
           [j.pt FOR j IN jets
            IF len([1 FOR d IN [{deta: j.eta - l.eta, dphi: j.phi - l.phi} FOR l IN leptons]
                    IF sqrt(d.deta * d.deta
                            + (CASE WHEN d.dphi > pi() THEN d.dphi - 2 * pi()
                                    WHEN d.dphi < -pi() THEN d.dphi + 2 * pi() ELSE d.dphi END)
                            * (CASE WHEN d.dphi > pi() THEN d.dphi - 2 * pi()
                                    WHEN d.dphi < -pi() THEN d.dphi + 2 * pi() ELSE d.dphi END)) < 0.4]) = 0],
           lambda acc, pt: acc + pt, 0.0::DOUBLE) AS x
FROM objects
""",
    # Q8: transverse mass of MET and the leading lepton outside the SFOS pair closest to the Z mass
    "q8": Q8,
}


def connect(parquet_path, threads=2):
    """An in-memory DuckDB connection with the view ``events`` over parquet_path."""
    con = duckdb.connect(config={"threads": threads})
    con.execute("CREATE VIEW events AS SELECT * FROM read_parquet('%s')" % parquet_path.replace("'", "''"))
    return con


def run(con, name):
    """The values of query ``name`` as a float64 numpy array (in no particular order)."""
    return np.asarray(con.execute(QUERIES[name]).fetchnumpy()["x"], dtype=np.float64)


# ---------------------------------------------------------------------------------------------------------------
# Validation against ROOT's answers (shared with uproot_adl.py)
# ---------------------------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def nanoaod_generate():
    """benches/nanoaod/generate.py as a module, for its bin_counts (the binning rule of ROOT's histograms)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "nanoaod", "generate.py")
    spec = importlib.util.spec_from_file_location("nanoaod_generate", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def compare(name, values, answer):
    """(passed, line): fills and bin counts against ROOT's histogram; sorted values if the answers have them."""
    counts, under, over = nanoaod_generate().bin_counts(values, answer["lo"], answer["hi"], answer["bins"])
    same_fills = len(values) == answer["fills"]
    same_bins = (counts, under, over) == (answer["counts"], answer["underflow"], answer["overflow"])
    line = "%-4s %s  fills %d/%d" % (name, "PASS" if same_fills and same_bins else "FAIL", len(values),
                                      answer["fills"])
    if not same_bins:
        diff = sum(abs(a - b) for a, b in zip(counts, answer["counts"]))
        line += ", bins differ (%d entries moved, underflow %d/%d, overflow %d/%d)" % (
            diff, under, answer["underflow"], over, answer["overflow"])
    if "values" in answer and same_fills:
        ref = np.sort(np.array([int(h, 16) for h in answer["values"]], dtype=np.uint64).view(np.float64))
        got = np.sort(np.asarray(values, dtype=np.float64))
        n_diff = int(np.count_nonzero(ref != got))
        rel = np.abs(got - ref) / np.maximum(np.abs(ref), np.finfo(np.float64).tiny)
        line += ", sorted values: %s (max rel diff %.2e)" % (
            "bit-identical" if n_diff == 0 else "%d differ" % n_diff, float(rel.max()) if len(rel) else 0.0)
    return same_fills and same_bins, line


def main():
    import argparse  # noqa: PLC0415
    import json  # noqa: PLC0415

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("parquet")
    parser.add_argument("answers")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    with open(args.answers) as f:
        answers = json.load(f)
    con = connect(args.parquet, args.threads)
    ok = True
    for name in QUERIES:
        t = time.perf_counter()
        values = run(con, name)
        seconds = time.perf_counter() - t
        passed, line = compare(name, values, answers[name])
        ok = ok and passed
        print("%s  [%.3f s]" % (line, seconds), flush=True)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
