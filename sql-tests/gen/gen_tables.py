"""multifile.slt, objectstore.slt and partitions.slt: many files as one table, object store URLs,
and scans split into cluster ranges. Expected values from ROOT's goldens."""
import os
from common import *
HERE = os.path.dirname(os.path.abspath(__file__))
cl=load('clusters.json','Clusters')
ev=load('importer.json','Events')
def write(name, text): open(os.path.join(HERE, '..', name), 'w').write(text)

def checks(t, copies):
    s=''
    s+=block('SELECT count(*), sum("index"), sum(cardinality(vec)) FROM %s' % t, [[copies*len(cl), copies*sum(r['index'] for r in cl), copies*sum(len(r['vec']) for r in cl)]], src='clusters.json x %d' % copies)
    s+=block('SELECT "index", count(*) FROM %s WHERE "index" %% 50 = 0 GROUP BY "index" ORDER BY "index"' % t, [[r['index'], copies] for r in cl if r['index'] % 50 == 0], src='clusters.json: every entry %d times' % copies)
    s+=block('SELECT string, vec_vec FROM %s WHERE "index" = 100' % t, [[cl[100]['string'], cl[100]['vec_vec']]] * copies, src='clusters.json entry 100')
    s+=block('SELECT min("float"), max("float"), count(DISTINCT string) FROM %s' % t, [[F32(min(r['float'] for r in cl)), F32(max(r['float'] for r in cl)), len(set(r['string'] for r in cl))]], src='clusters.json')
    return s

text='''# Many files as one table: a directory, a glob, and the same checks with the scan split
# into cluster ranges over 4 partitions.
# Expected values: ROOT's goldens (clusters.json, twice), printed by sql-tests/gen/gen_tables.py.

control substitution on

statement ok
CREATE EXTERNAL TABLE dir STORED AS RNTUPLE LOCATION '$TABLES/twice/'

statement ok
CREATE EXTERNAL TABLE glob STORED AS RNTUPLE LOCATION '$TABLES/twice/*.root'

statement ok
CREATE EXTERNAL TABLE one STORED AS RNTUPLE LOCATION '$DATA/clusters.root'
'''
text+=checks('dir', 2)+checks('glob', 2)+checks('one', 1)
text+='''
# Split every file into cluster ranges: each cluster is read once, whatever the partitions.
statement ok
SET datafusion.execution.target_partitions = 4

statement ok
SET datafusion.optimizer.repartition_file_min_size = 0
'''
text+=checks('dir', 2)+checks('one', 1)
text+='''
statement ok
SET datafusion.execution.target_partitions = 3
'''
text+=checks('one', 1)
text+=block('SELECT count(*) FROM (SELECT "index" FROM one LIMIT 70)', [[70]], src='LIMIT over cluster ranges')
text+=block('SELECT count(*) FROM (SELECT "index" FROM dir WHERE "index" >= 180 LIMIT 15)', [[15]], src='LIMIT after a filter')
write('multifile.slt', text)

text='''# Object store URLs: the fixtures in an in-memory object store (mem://fixtures), read by
# ranges (metadata first, then the pages each cluster needs) when 'whole_file_limit' is 0.
# Expected values: ROOT's goldens, printed by sql-tests/gen/gen_tables.py.

control substitution on

statement ok
CREATE EXTERNAL TABLE mem_whole STORED AS RNTUPLE LOCATION '$MEM/clusters.root'

statement ok
CREATE EXTERNAL TABLE mem_ranges STORED AS RNTUPLE LOCATION '$MEM/clusters.root' OPTIONS ('whole_file_limit' '0')

statement ok
CREATE EXTERNAL TABLE mem_events STORED AS RNTUPLE LOCATION '$MEM/importer.root' OPTIONS ('ntuple' 'Events', 'whole_file_limit' '0')

statement ok
CREATE EXTERNAL TABLE mem_big STORED AS RNTUPLE LOCATION '$MEM/compression_bigpage.root' OPTIONS ('ntuple' 'lzma', 'whole_file_limit' '0')
'''
text+=checks('mem_whole', 1)+checks('mem_ranges', 1)
text+=block('SELECT event, MET_pt, Muon_pt FROM mem_events WHERE nMuon = 3 ORDER BY event', [[r['event'], r['MET_pt'], r['Muon_pt']] for r in ev if r['nMuon']==3], src='importer.json')
import json
g=json.load(open(os.path.join(HERE, '..', '..', 'tests', 'data', 'compression_bigpage.json')))
rle=[n for n in g['ntuples'] if n['name']=='lzma'][0]['values_rle']['big']
text+=block('SELECT count(*), sum(big), min(big), max(big) FROM mem_big', [[sum(c for v,c in rle), sum(v*c for v,c in rle), min(v for v,c in rle), max(v for v,c in rle)]], src='compression_bigpage.json lzma (values_rle): a page larger than a key, over several keys')
text+='''
statement ok
SET datafusion.execution.target_partitions = 4

statement ok
SET datafusion.optimizer.repartition_file_min_size = 0
'''
text+=checks('mem_ranges', 1)
write('objectstore.slt', text)
