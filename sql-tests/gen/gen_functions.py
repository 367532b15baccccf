"""functions.slt: the HEP functions. Expected values from ROOT's own VecOps (DeltaPhi, DeltaR,
InvariantMass) run by PyROOT, from the textbook formula for the transverse mass, and from the
importer.json golden for the inputs; the corpus part reads the corpus file with ROOT's RDataFrame."""
import math, os
from common import *
import ROOT
HERE = os.path.dirname(os.path.abspath(__file__))
V = ROOT.VecOps
def rv(xs): return ROOT.VecOps.RVec('double')([float(x) for x in xs])
def r6(x): return F64(round(x, 6))
out=[]; w=out.append
w('''# The HEP functions (delta_phi, delta_r, transverse_mass, inv_mass, pairs, triples).
# Expected values: ROOT's VecOps run by PyROOT and ROOT's goldens, printed by
# sql-tests/gen/gen_functions.py. Results are rounded to 6 decimals.

control substitution on

statement ok
CREATE EXTERNAL TABLE events STORED AS RNTUPLE LOCATION '$DATA/importer.root' OPTIONS ('ntuple' 'Events')
''')
w(block('SELECT round(delta_phi(3.0, -3.0), 6), round(delta_phi(-3.0, 3.0), 6), round(delta_phi(0.5, 0.25), 6), delta_phi(1, 1)',
  [[r6(V.DeltaPhi(3.0, -3.0)), r6(V.DeltaPhi(-3.0, 3.0)), r6(V.DeltaPhi(0.5, 0.25)), F64(V.DeltaPhi(1.0, 1.0))]], src='ROOT VecOps::DeltaPhi(phi1, phi2)'))
w(block('SELECT round(delta_r(0.5, 1.0, 0.1, 0.2), 6), round(delta_r(-2.0, 3.0, 1.0, -3.0), 6)',
  [[r6(V.DeltaR(0.5, 0.1, 1.0, 0.2)), r6(V.DeltaR(-2.0, 1.0, 3.0, -3.0))]], src='ROOT VecOps::DeltaR(eta1, eta2, phi1, phi2)'))
def mt(a,b,c,d): return math.sqrt(2*a*c*(1-math.cos(b-d)))
w(block('SELECT round(transverse_mass(45.0, 0.0, 45.0, pi()), 6), round(transverse_mass(30.0, 0.5, 20.0, -1.0), 6)',
  [[r6(mt(45,0,45,math.pi)), r6(mt(30,0.5,20,-1.0))]], src='sqrt(2 pt1 pt2 (1 - cos(phi1 - phi2)))'))
a=([45.0,45.0],[0.0,0.0],[0.0,math.pi],[0.0,0.0]); b=([30.0,20.0,10.0],[0.5,-1.0,2.0],[0.1,2.0,-2.5],[0.105,0.105,0.105])
w(block('SELECT round(inv_mass(make_array(45.0, 45.0), make_array(0.0, 0.0), make_array(0.0, pi()), make_array(0.0, 0.0)), 6), round(inv_mass(make_array(30.0, 20.0, 10.0), make_array(0.5, -1.0, 2.0), make_array(0.1, 2.0, -2.5), 0.105), 6)',
  [[r6(V.InvariantMass(*[rv(x) for x in a])), r6(V.InvariantMass(*[rv(x) for x in b]))]], src='ROOT VecOps::InvariantMass(pt, eta, phi, mass) of all elements; a number repeats along the list'))
w(block('SELECT round(inv_mass(30.0, 0.5, 0.1, 0.105, 20.0, -1.0, 2.0, 0.105), 6)',
  [[r6(V.InvariantMasses(rv([30.0]), rv([0.5]), rv([0.1]), rv([0.105]), rv([20.0]), rv([-1.0]), rv([2.0]), rv([0.105]))[0])]], src='ROOT VecOps::InvariantMasses of two four-vectors'))
em = V.InvariantMasses(rv([30.0, 45.0]), rv([0.5, 0.0]), rv([0.1, 0.0]), rv([0.105, 0.0]), rv([20.0, 45.0]), rv([-1.0, 0.0]), rv([2.0, math.pi]), rv([0.105, 0.0]))
w(block('SELECT round(unnest(inv_mass(make_array(30.0, 45.0), make_array(0.5, 0.0), make_array(0.1, 0.0), make_array(0.105, 0.0), make_array(20.0, 45.0), make_array(-1.0, 0.0), make_array(2.0, pi()), make_array(0.105, 0.0))), 6)',
  [[r6(x)] for x in em], src='ROOT VecOps::InvariantMasses, element by element'))
dp = [V.DeltaPhi(x, -3.0) for x in [0.0, 3.0, -1.0]]
w(block('SELECT round(unnest(delta_phi(make_array(0.0, 3.0, -1.0), -3.0)), 6)', [[r6(x)] for x in dp], src='ROOT VecOps::DeltaPhi per element, a number repeated along the list'))
w(block('SELECT delta_phi(NULL, 1.0), delta_r(1.0, NULL, 0.0, 0.0), transverse_mass(1.0, 1.0, 1.0, CAST(NULL AS DOUBLE))', [[None, None, None]], src='NULL in, NULL out'))
# pairs / triples
def pairs(n): return [{'i': i, 'j': j} for i in range(1, n+1) for j in range(i+1, n+1)]
def triples(n): return [{'i': i, 'j': j, 'k': k} for i in range(1, n+1) for j in range(i+1, n+1) for k in range(j+1, n+1)]
w(block('SELECT pairs(3), triples(4), pairs(1), pairs(0), pairs(CAST(NULL AS INT))', [[pairs(3), triples(4), pairs(1), pairs(0), None]], src='all distinct index combinations, 1-based'))
w(block('SELECT pairs(make_array(10, 20, 30)), cardinality(triples(make_array(1, 2, 3, 4, 5)))', [[pairs(3), len(triples(5))]], src='the combinations of a list\'s elements'))
ev=load('importer.json','Events')
w(block('SELECT event, pairs(nMuon) FROM events ORDER BY event', [[r['event'], pairs(r['nMuon'])] for r in ev], src='importer.json nMuon'))
rows=[]
for r in ev:
    for p in pairs(r['nMuon']):
        rows.append([r['event'], p['i'], p['j'], r['Muon_pt'][p['i']-1], r['Muon_pt'][p['j']-1], r['Muon_charge'][p['i']-1] * r['Muon_charge'][p['j']-1]])
w(block('SELECT event, p.i, p.j, Muon_pt[p.i], Muon_pt[p.j], Muon_charge[p.i] * Muon_charge[p.j] FROM (SELECT event, Muon_pt, Muon_charge, unnest(pairs(nMuon)) AS p FROM events) ORDER BY event, p.i, p.j',
  rows, src='importer.json: every muon pair of every event, through unnest and list access'))
tr=[[r['event'], len(triples(len(r['Muon_pt'])))] for r in ev]
w(block('SELECT event, cardinality(triples(Muon_pt)) FROM events ORDER BY event', tr, src='importer.json: triples of the muons'))
# vectorised over list columns from the file (eta used as an angle)
rows=[[r['event'], r6(V.DeltaPhi(float(x), float(r['Muon_eta'][0])))] for r in ev if r['nMuon']>0 for x in r['Muon_eta']]
w(block('SELECT event, round(d, 6) FROM (SELECT event, unnest(delta_phi(Muon_eta, Muon_eta[1])) AS d FROM events WHERE nMuon > 0) ORDER BY event, d', sorted(rows, key=lambda r: (r[0], r[1])), src='ROOT VecOps::DeltaPhi over the elements of a list column'))
rows=[[r['event'], r6(V.DeltaR(float(x), float(r['Muon_eta'][0]), float(y), float(r['Muon_eta'][-1])))] for r in ev if r['nMuon']>0 for x, y in zip(r['Muon_eta'], r['Muon_pt'])]
w(block('SELECT event, round(d, 6) FROM (SELECT event, unnest(delta_r(Muon_eta, Muon_pt, Muon_eta[1], Muon_eta[nMuon])) AS d FROM events WHERE nMuon > 0) ORDER BY event, d', sorted(rows, key=lambda r: (r[0], r[1])), src='ROOT VecOps::DeltaR: lists and per-row numbers mixed'))
open(os.path.join(HERE, '..', 'functions.slt'),'w').write('\n'.join(out))
