"""index.slt: cluster pruning with a sidecar index. Expected values from clusters.json; the
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
'''
def kept(pred): return sum(1 for a,b in CLUSTERS if any(pred(i) for i in range(a,b)))
for t in ['indexed', 'unindexed', 'stale']:
    out+=block('SELECT count(*), sum("index"), min(string) FROM %s WHERE "index" >= 180' % t, [[sum(1 for r in cl if r['index']>=180), sum(r['index'] for r in cl if r['index']>=180), min(r['string'] for r in cl if r['index']>=180)]], src='clusters.json index >= 180')
    out+=block('SELECT "index", "float" FROM %s WHERE "index" BETWEEN 100 AND 102 ORDER BY "index"' % t, [[r['index'], r['float']] for r in cl if 100<=r['index']<=102], src='clusters.json 100..102')
    out+=block('SELECT count(*) FROM %s WHERE "float" > 20 AND "bool"' % t, [[sum(1 for r in cl if r['float']>20 and r['bool'])]], src='clusters.json')
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
out+='''
query TT
EXPLAIN ANALYZE SELECT count(*) FROM stale WHERE "index" >= 180
----
<slt:ignore>clusters_pruned=0<slt:ignore>
'''
open(os.path.join(HERE, '..', 'index.slt'),'w').write(out)
