"""index.slt: cluster pruning with a sidecar index (values and list lengths) and by the value
ranges of Real32Quant columns. Expected values from clusters.json; the
cluster layout of clusters.root (14 clusters; entries [0,1) [1,8) [8,21) [21,23) [23,63) [63,64)
[64,65) [65,95) [95,100) [100,103) [103,163) [163,172) [172,173) [173,190)) from ROOT's
RNTupleDescriptor, so 'index' (= the entry number) >= 180 can only match the last cluster."""
import os
from common import *
HERE = os.path.dirname(os.path.abspath(__file__))
cl=load('clusters.json','Clusters')
CLUSTERS=[(0,1),(1,8),(8,21),(21,23),(23,63),(63,64),(64,65),(65,95),(95,100),(100,103),(103,163),(163,172),(172,173),(173,190)]
out='''# Cluster pruning by a sidecar index (events.root.rntidx): min / max / null counts per cluster.
# Expected values: clusters.json; the cluster layout from ROOT (see sql-tests/gen/gen_index.py).

control substitution on

statement ok
CREATE EXTERNAL TABLE indexed STORED AS RNTUPLE LOCATION '$TABLES/indexed/'

statement ok
CREATE EXTERNAL TABLE unindexed STORED AS RNTUPLE LOCATION '$TABLES/indexed/clusters.root' OPTIONS ('index' 'false')

statement ok
CREATE EXTERNAL TABLE stale STORED AS RNTUPLE LOCATION '$TABLES/stale/'

statement ok
CREATE EXTERNAL TABLE reals STORED AS RNTUPLE LOCATION '$DATA/reals.root' OPTIONS ('ntuple' 'Reals')
'''
def kept(pred): return sum(1 for a,b in CLUSTERS if any(pred(i) for i in range(a,b)))
for t in ['indexed', 'unindexed', 'stale']:
    out+=block('SELECT count(*), sum("index"), min(string) FROM %s WHERE "index" >= 180' % t, [[sum(1 for r in cl if r['index']>=180), sum(r['index'] for r in cl if r['index']>=180), min(r['string'] for r in cl if r['index']>=180)]], src='clusters.json index >= 180')
    out+=block('SELECT "index", "float" FROM %s WHERE "index" BETWEEN 100 AND 102 ORDER BY "index"' % t, [[r['index'], r['float']] for r in cl if 100<=r['index']<=102], src='clusters.json 100..102')
    out+=block('SELECT count(*) FROM %s WHERE "float" > 20 AND "bool"' % t, [[sum(1 for r in cl if r['float']>20 and r['bool'])]], src='clusters.json')
out+='''
# List lengths: cardinality(x) is pruned by the sidecar's x.len columns.
'''
LENGTH_PREDICATES=[('cardinality(vec) >= 8', lambda r: len(r['vec'])>=8),
                   ('cardinality(vec) = 0', lambda r: len(r['vec'])==0),
                   ('cardinality(vec_vec) > 2 AND cardinality(vec) < 2', lambda r: len(r['vec_vec'])>2 and len(r['vec'])<2)]
for t in ['indexed', 'unindexed']:
    for pred_sql, pred in LENGTH_PREDICATES:
        sel=[r for r in cl if pred(r)]
        out+=block('SELECT count(*), sum("index") FROM %s WHERE %s' % (t, pred_sql), [[len(sel), sum(r['index'] for r in sel)]], src='clusters.json')
out+='''
# Real32Quant columns bound their values by the range in the column description
# (quant8: [0, 1]; quant12_asym: [-0.5, 1000]; quant24_tiny: [1e-6, 2e-6] as floats).
'''
re=load('reals.json','Reals')
for pred_sql, pred in [('quant8 > 1', lambda r: r['quant8']>1), ('quant8 >= 1', lambda r: r['quant8']>=1),
                       ('quant12_asym < -0.5', lambda r: r['quant12_asym']<-0.5), ('quant12_asym <= -0.5', lambda r: r['quant12_asym']<=-0.5),
                       ('quant24_tiny < 0.000001', lambda r: r['quant24_tiny']<1e-6)]:
    out+=block('SELECT count(*) FROM reals WHERE %s' % pred_sql, [[sum(1 for r in re if pred(r))]], src='reals.json Reals')
out+='''
# The pruned clusters, in the scan's metrics.
'''
for pred_sql, pred in [('"index" >= 180', lambda i: i>=180), ('"index" < 8', lambda i: i<8), ('"index" BETWEEN 100 AND 102', lambda i: 100<=i<=102)]:
    out+='''
query TT
EXPLAIN ANALYZE SELECT count(*) FROM indexed WHERE %s
----
<slt:ignore>clusters_pruned=%d<slt:ignore>
''' % (pred_sql, len(CLUSTERS)-kept(pred))
# Min / max pruning keeps a cluster when each conjunct may hold in it.
CONJUNCTS={'cardinality(vec_vec) > 2 AND cardinality(vec) < 2': [lambda r: len(r['vec_vec'])>2, lambda r: len(r['vec'])<2]}
def kept_rows(pred_sql, pred):
    conj=CONJUNCTS.get(pred_sql, [pred])
    return sum(1 for a,b in CLUSTERS if all(any(c(cl[i]) for i in range(a,b)) for c in conj))
for pred_sql, pred in LENGTH_PREDICATES:
    out+='''
query TT
EXPLAIN ANALYZE SELECT count(*) FROM indexed WHERE %s
----
<slt:ignore>clusters_pruned=%d<slt:ignore>
''' % (pred_sql, len(CLUSTERS)-kept_rows(pred_sql, pred))
for pred_sql, pruned in [('quant8 > 1', 1), ('quant8 >= 1', 0), ('quant12_asym < -0.5', 1), ('quant24_tiny < 0.000001', 0)]:
    out+='''
query TT
EXPLAIN ANALYZE SELECT count(*) FROM reals WHERE %s
----
<slt:ignore>clusters_pruned=%d<slt:ignore>
''' % (pred_sql, pruned)
out+='''
query TT
EXPLAIN ANALYZE SELECT count(*) FROM stale WHERE "index" >= 180
----
<slt:ignore>clusters_pruned=0<slt:ignore>
'''
open(os.path.join(HERE, '..', 'index.slt'),'w').write(out)
