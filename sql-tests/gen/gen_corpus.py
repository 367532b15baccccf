"""corpus.slt: queries over a real CMS file of the corpus. Expected values computed by ROOT
(RDataFrame reads the file; VecOps computes the kinematics), printed by this script."""
import math, os
from common import *
import ROOT
HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.environ.get('RNTUPLE_CORPUS', os.path.join(HERE, '..', '..', '..', 'shared', 'corpus'))
FILE = 'Run2012BC_DoubleMuParked_Muons_1000evts_rntuple_v1-0-0-0.root'
V = ROOT.VecOps
def rv(xs): return ROOT.VecOps.RVec('double')([float(x) for x in xs])
df = ROOT.RDataFrame('Events', os.path.join(CORPUS, FILE))
cols = df.AsNumpy(['nMuon', 'Muon_pt', 'Muon_eta', 'Muon_phi', 'Muon_mass', 'Muon_charge'])
ev = [dict(n=int(cols['nMuon'][i]), pt=list(cols['Muon_pt'][i]), eta=list(cols['Muon_eta'][i]), phi=list(cols['Muon_phi'][i]), m=list(cols['Muon_mass'][i]), q=list(cols['Muon_charge'][i])) for i in range(len(cols['nMuon']))]
out=[]; w=out.append
w('''# requires: corpus
# A real CMS open-data file (1000 events, made by RNTupleImporter).
# Expected values: ROOT (RDataFrame and VecOps), printed by sql-tests/gen/gen_corpus.py.

control substitution on

statement ok
CREATE EXTERNAL TABLE run2012 STORED AS RNTUPLE LOCATION '$CORPUS/%s'
''' % FILE)
w(block('SELECT count(*), sum(nMuon), sum(cardinality(Muon_pt)) FROM run2012', [[len(ev), sum(e['n'] for e in ev), sum(len(e['pt']) for e in ev)]], src='RDataFrame Count, Sum(nMuon)'))
w(block('SELECT nMuon, count(*) FROM run2012 GROUP BY nMuon ORDER BY nMuon', [[n, sum(1 for e in ev if e['n']==n)] for n in sorted(set(e['n'] for e in ev))], src='RDataFrame: events per muon count'))
def mass2(e, i, j):
    return V.InvariantMasses(rv([e['pt'][i]]), rv([e['eta'][i]]), rv([e['phi'][i]]), rv([e['m'][i]]), rv([e['pt'][j]]), rv([e['eta'][j]]), rv([e['phi'][j]]), rv([e['m'][j]]))[0]
ms=[mass2(e,0,1) for e in ev if e['n']==2 and e['q'][0]!=e['q'][1]]
inwin=[m for m in ms if 60 <= m <= 120]
w(block('''SELECT count(*), round(sum(m), 2) FROM (
  SELECT inv_mass(Muon_pt[1], Muon_eta[1], Muon_phi[1], Muon_mass[1], Muon_pt[2], Muon_eta[2], Muon_phi[2], Muon_mass[2]) AS m
  FROM run2012 WHERE nMuon = 2 AND Muon_charge[1] <> Muon_charge[2]) WHERE m BETWEEN 60 AND 120''', [[len(inwin), F64(round(sum(inwin), 2))]], src='VecOps::InvariantMasses of opposite-charge dimuons, Z window'))
pm=[mass2(e,i,j) for e in ev for i in range(e['n']) for j in range(i+1, e['n']) if e['q'][i]!=e['q'][j]]
w(block('''SELECT count(*), count(DISTINCT ev) FROM (
  SELECT ev, inv_mass(Muon_pt[p.i], Muon_eta[p.i], Muon_phi[p.i], Muon_mass[p.i], Muon_pt[p.j], Muon_eta[p.j], Muon_phi[p.j], Muon_mass[p.j]) AS m
  FROM (SELECT row_number() OVER () AS ev, *, unnest(pairs(nMuon)) AS p FROM run2012)
  WHERE Muon_charge[p.i] <> Muon_charge[p.j]) WHERE m BETWEEN 60 AND 120''',
  [[sum(1 for m in pm if 60<=m<=120), sum(1 for e in ev if any(60<=mass2(e,i,j)<=120 for i in range(e['n']) for j in range(i+1,e['n']) if e['q'][i]!=e['q'][j]))]], src='every opposite-charge pair of every event'))
allm=[V.InvariantMass(rv(e['pt']), rv(e['eta']), rv(e['phi']), rv(e['m'])) for e in ev if e['n'] >= 2]
w(block('SELECT count(*), round(max(m), 3) FROM (SELECT inv_mass(Muon_pt, Muon_eta, Muon_phi, Muon_mass) AS m FROM run2012 WHERE nMuon >= 2)', [[len(allm), F64(round(max(allm), 3))]], src='VecOps::InvariantMass of all muons of an event'))
drs=[V.DeltaR(float(e['eta'][0]), float(e['eta'][1]), float(e['phi'][0]), float(e['phi'][1])) for e in ev if e['n']>=2]
w(block('SELECT count(*) FROM run2012 WHERE nMuon >= 2 AND delta_r(Muon_eta[1], Muon_phi[1], Muon_eta[2], Muon_phi[2]) < 0.5', [[sum(1 for d in drs if d < 0.5)]], src='VecOps::DeltaR of the two leading muons'))
open(os.path.join(HERE, '..', 'corpus.slt'),'w').write('\n'.join(out))
