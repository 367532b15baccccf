import os
from common import *
HERE = os.path.dirname(os.path.abspath(__file__))
out=[]; w=out.append
w('''# Filters, aggregates, GROUP BY, joins, ORDER BY and LIMIT on NanoAOD-style data
# (importer.root, made by RNTupleImporter) and a many-cluster file (clusters.root).
# Expected values: ROOT's goldens, printed by sql-tests/gen/gen_queries.py.

control substitution on

statement ok
CREATE EXTERNAL TABLE events STORED AS RNTUPLE LOCATION '$DATA/importer.root' OPTIONS ('ntuple' 'Events')

statement ok
CREATE EXTERNAL TABLE clusters STORED AS RNTUPLE LOCATION '$DATA/clusters.root'
''')
ev=load('importer.json','Events')
cl=load('clusters.json','Clusters')
w(block('SELECT count(*) FROM events', [[len(ev)]], src='importer.json entries'))
w(block('SELECT count(*) FROM clusters', [[len(cl)]], src='clusters.json entries'))
w(block('SELECT event, MET_pt, nMuon FROM events WHERE MET_pt > 300 ORDER BY event', [[r['event'], r['MET_pt'], r['nMuon']] for r in ev if r['MET_pt']>300], src='importer.json: filter on a float, mixed-case names unquoted'))
w(block('SELECT nMuon, count(*), min(MET_pt), max(MET_pt) FROM events GROUP BY nMuon ORDER BY nMuon',
  [[n, sum(1 for r in ev if r['nMuon']==n), F32(min(r['MET_pt'] for r in ev if r['nMuon']==n)), F32(max(r['MET_pt'] for r in ev if r['nMuon']==n))] for n in sorted(set(r['nMuon'] for r in ev))], src='importer.json: GROUP BY a cardinality'))
w(block('SELECT sum(nJet), sum(nMuon), sum(cardinality(Muon_pt)) FROM events', [[sum(r['nJet'] for r in ev), sum(r['nMuon'] for r in ev), sum(len(r['Muon_pt']) for r in ev)]], src='importer.json: cardinalities agree with the list lengths'))
w(block('SELECT event, Muon_pt[1], Muon_charge[1] FROM events WHERE nMuon >= 2 ORDER BY event', [[r['event'], r['Muon_pt'][0], r['Muon_charge'][0]] for r in ev if r['nMuon']>=2], src='importer.json: list element access'))
w(block('SELECT event, "_collection0" FROM events WHERE nJet > 0 ORDER BY event LIMIT 3', [[r['event'], r['_collection0']] for r in ev if r['nJet']>0][:3], src='importer.json: the untyped collection as a list of structs'))
mu=[(r['event'], pt, q) for r in ev for pt,q in zip(r['Muon_pt'], r['Muon_charge'])]
w(block('SELECT count(*), sum(CASE WHEN q > 0 THEN 1 ELSE 0 END) FROM (SELECT unnest(Muon_charge) AS q FROM events)', [[len(mu), sum(1 for m in mu if m[2]>0)]], src='importer.json: unnest'))
w(block('SELECT event, pt FROM (SELECT event, unnest(Muon_pt) AS pt FROM events) WHERE pt > 80 ORDER BY pt DESC', [[m[0], m[1]] for m in sorted([m for m in mu if m[1]>80], key=lambda m: -m[1])], src='importer.json: filter on unnested muons'))
w(block('SELECT event, MET_pt FROM events ORDER BY MET_pt DESC LIMIT 3', [[r['event'], r['MET_pt']] for r in sorted(ev, key=lambda r: -r['MET_pt'])[:3]], src='importer.json: top 3 by MET'))
w(block('SELECT count(*) FROM (SELECT * FROM events LIMIT 5)', [[5]], src='LIMIT'))
w(block('SELECT count(*) FROM (SELECT "index" FROM clusters LIMIT 100)', [[100]], src='LIMIT across clusters'))
# join: events with jets joined to the events with muons by event number
j=[(r['event'], r['nJet'], r['nMuon']) for r in ev if r['nJet']>0 and r['nMuon']>0]
w(block('SELECT a.event, a.nJet, b.nMuon FROM events a JOIN events b ON a.event = b.event WHERE a.nJet > 0 AND b.nMuon > 0 ORDER BY a.event', [list(x) for x in j], src='importer.json: self join on the event number'))
# join across two RNTuple tables: clusters index vs events small
w(block('SELECT c."index", c.string FROM clusters c JOIN events e ON c."index" = e.nJet + 100 ORDER BY c."index"', [[cl[i]['index'], cl[i]['string']] for i in sorted(r['nJet']+100 for r in ev)], src='clusters.json x importer.json join'))
# clusters aggregates
w(block('SELECT count(*), sum("index"), min("float"), max("float"), sum(CASE WHEN "bool" THEN 1 ELSE 0 END) FROM clusters',
  [[len(cl), sum(r['index'] for r in cl), F32(min(r['float'] for r in cl)), F32(max(r['float'] for r in cl)), sum(1 for r in cl if r['bool'])]], src='clusters.json aggregates'))
w(block('SELECT sum(cardinality(vec)), sum(array_length(vec_vec)), count(DISTINCT string) FROM clusters', [[sum(len(r['vec']) for r in cl), sum(len(r['vec_vec']) for r in cl), len(set(r['string'] for r in cl))]], src='clusters.json list sizes'))
w(block('SELECT "index", "float", string, vec, vec_vec, "bool" FROM clusters WHERE "index" IN (0, 63, 64, 127, 128, 189) ORDER BY "index"', [[r[c] for c in ['index','float','string','vec','vec_vec','bool']] for r in cl if r['index'] in (0,63,64,127,128,189)], src='clusters.json rows at cluster borders'))
w(block('SELECT "index" % 7 AS k, count(*), sum(cardinality(vec)) FROM clusters GROUP BY k ORDER BY k', [[k, sum(1 for r in cl if r['index']%7==k), sum(len(r['vec']) for r in cl if r['index']%7==k)] for k in range(7)], src='clusters.json GROUP BY an expression'))
open(os.path.join(HERE, '..', 'queries.slt'),'w').write('\n'.join(out))
