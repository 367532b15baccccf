import os
from common import *
out=[]
w=out.append
w('''# Every Arrow type of the mapping, read through SQL.
# Expected values: ROOT's goldens (tests/data/*.json), printed by sql-tests/expected.py.

control substitution on

statement ok
CREATE EXTERNAL TABLE split STORED AS RNTUPLE LOCATION '$DATA/fundamentals.root' OPTIONS ('ntuple' 'Split')

statement ok
CREATE EXTERNAL TABLE plain STORED AS RNTUPLE LOCATION '$DATA/fundamentals.root' OPTIONS ('ntuple' 'Plain')

statement ok
CREATE EXTERNAL TABLE containers STORED AS RNTUPLE LOCATION '$DATA/containers.root'

statement ok
CREATE EXTERNAL TABLE classes STORED AS RNTUPLE LOCATION '$DATA/classes.root'

statement ok
CREATE EXTERNAL TABLE projections STORED AS RNTUPLE LOCATION '$DATA/projections.root'

statement ok
CREATE EXTERNAL TABLE reals STORED AS RNTUPLE LOCATION '$DATA/reals.root' OPTIONS ('ntuple' 'Reals')
''')
# types of fundamentals: from the mapping table of ARCHITECTURE.md
w('''# The Arrow types, from the mapping table (not from a golden).
query TTTTTTTTTTTTT
SELECT arrow_typeof("bool"), arrow_typeof("char"), arrow_typeof(int8), arrow_typeof(uint8), arrow_typeof(int16), arrow_typeof(uint16), arrow_typeof(int32), arrow_typeof(uint32), arrow_typeof(int64), arrow_typeof(uint64), arrow_typeof("float"), arrow_typeof("double"), arrow_typeof("byte") FROM split LIMIT 1
----
Boolean Int8 Int8 UInt8 Int16 UInt16 Int32 UInt32 Int64 UInt64 Float32 Float64 UInt8
''')
cols=['bool','char','int8','uint8','int16','uint16','int32','uint32','int64','uint64','float','double','byte']
for nt in ['Split','Plain']:
    rows=load('fundamentals.json',nt)
    w(block('SELECT "bool", "char", int8, uint8, int16, uint16, int32, uint32, int64, uint64, "float", "double", "byte" FROM %s' % nt.lower(), [[r[c] for c in cols] for r in rows], src='fundamentals.json %s, every field' % nt))
# reals
rows=load('reals.json','Reals')
rc=['half','double_half','trunc10','quant8','quant16','double32','double_as_real32']
w(block('SELECT half, double_half, trunc10, quant8, quant16, double32, double_as_real32 FROM reals', [[r[c] for c in rc] for r in rows], src='reals.json Reals'))
w('''query TT
SELECT arrow_typeof(half), arrow_typeof(double32) FROM reals LIMIT 1
----
Float32 Float64
''')
# containers
rows=load('containers.json','Containers')
w(block('SELECT character_length(string), vec_int, vec_vec_float, vec_bool, vec_byte, rvec_double, rvec_rvec_int16 FROM containers', [[len(r['string']), r['vec_int'], r['vec_vec_float'], r['vec_bool'], r['vec_byte'], r['rvec_double'], r['rvec_rvec_int16']] for r in rows], src='containers.json: strings and lists'))
w(block('SELECT array_float, array_array_int16, vec_array_int, bitset1, bitset8 FROM containers', [[r[c] for c in ['array_float','array_array_int16','vec_array_int','bitset1','bitset8']] for r in rows], src='containers.json: std::array and std::bitset as FixedSizeList'))
w(block("SELECT bitset33[33], bitset100[1], bitset100[100] FROM containers", [[r['bitset33'][32], r['bitset100'][0], r['bitset100'][99]] for r in rows], src='containers.json: bit i of a bitset at position i (1-based in SQL)'))
w(block("SELECT pair['_0'], tuple['_0'], tuple['_1'], tuple['_2'], vec_pair FROM containers", [[r['pair']['_0'], r['tuple']['_0'], r['tuple']['_1'], r['tuple']['_2'], r['vec_pair']] for r in rows], src='containers.json: pair and tuple as structs'))
# maps: golden lists of [k, v]
def m(kv): return '{' + ', '.join('%s: %s' % (fmt(k), fmt(v)) for k,v in kv) + '}'
w('# expected: containers.json: std::map as Map (printed {key: value})\nquery TT\nSELECT map, cardinality(map) FROM containers\n----\n' + '\n'.join('%s %d' % (m(r['map']), len(r['map'])) for r in rows) + '\n')
def get(kv, key):
    for k,v in kv:
        if k == key: return v
    return None
w(block("SELECT map['key0'], map['key2'], map['key4'] FROM containers", [[get(r['map'],'key0'), get(r['map'],'key2'), get(r['map'],'key4')] for r in rows], src='containers.json: map access'))
w(block("SELECT map_vec FROM containers", [[m(r['map_vec'])] for r in rows], src='containers.json: std::map<int, vector<int>>').replace('\nSELECT', '\nSELECT').replace("query T\n","query T\n"))
# sets
w(block("SELECT \"set\", multiset FROM containers", [[r['set'], r['multiset']] for r in rows], src='containers.json: set, multiset as lists'))
# unions
names = {0:'_0',1:'_1',2:'_2',3:'_3'}
w(block("SELECT union_tag(variant), union_extract(variant, '_0'), union_extract(variant, '_1'), union_extract(variant, '_3') FROM containers",
  [[names[r['variant']['tag']], r['variant']['value'] if r['variant']['tag']==0 else None, r['variant']['value'] if r['variant']['tag']==1 else None, r['variant']['value'] if r['variant']['tag']==3 else None] for r in rows], src='containers.json: std::variant as a dense union'))
w(block("SELECT variant FROM containers WHERE union_tag(variant) <> '_2'", [[r['variant']] for r in rows if r['variant']['tag']!=2], src='containers.json: union values, printed {tag: i, value: v}'))
# optionals
w(block("SELECT optional_int, optional_string, vec_optional, unique_ptr_int, unique_ptr_vec FROM containers", [[r[c] for c in ['optional_int','optional_string','vec_optional','unique_ptr_int','unique_ptr_vec']] for r in rows], src='containers.json: optional and unique_ptr as nullable values'))
w(block("SELECT count(optional_int), count(*) - count(optional_int) FROM containers", [[sum(r['optional_int'] is not None for r in rows), sum(r['optional_int'] is None for r in rows)]], src='containers.json: nulls of optional_int'))
w(block("SELECT atomic_int64, atomic_float, atomic_bool, enum_plain, enum_uint8 FROM containers", [[r[c] for c in ['atomic_int64','atomic_float','atomic_bool','enum_plain','enum_uint8']] for r in rows], src='containers.json: atomics and enums as their values'))
# unnest
flat=[x for r in rows for x in r['vec_int']]
w(block("SELECT unnest(vec_int) FROM containers", [[x] for x in flat], src='containers.json: unnest of a list, in entry order'))
w(block("SELECT sum(v), count(v) FROM (SELECT unnest(rvec_double) AS v FROM containers)", [[F64(sum(x for r in rows for x in r['rvec_double'])), sum(len(r['rvec_double']) for r in rows)]], src='containers.json: aggregates over unnested elements'))
# classes
rows=load('classes.json','Classes')
w(block("SELECT derived['fDouble'], derived['fInner']['fShort'], derived['fInner']['fTags'], derived[':_0']['fBaseInt'], derived[':_1']['fLabel'], derived['fArr'] FROM classes",
  [[r['derived']['fDouble'], r['derived']['fInner']['fShort'], r['derived']['fInner']['fTags'], r['derived'][':_0']['fBaseInt'], r['derived'][':_1']['fLabel'], r['derived']['fArr']] for r in rows], src='classes.json: struct members, base classes as :_0, :_1'))
w(block("SELECT outer['fNested'], outer['fNestedVec'], templ['fData'] FROM classes", [[r['outer']['fNested'], r['outer']['fNestedVec'], r['templ']['fData']] for r in rows], src='classes.json: nested records'))
w(block("SELECT points, optional_point FROM classes", [[r['points'], r.get('optional_point')] for r in rows], src='classes.json: vector<Point>, optional<Point>'))
w(block("SELECT p['x'], p['id'] FROM (SELECT unnest(points) AS p FROM classes)", [[p['x'], p['id']] for r in rows for p in r['points']], src='classes.json: unnest of a list of structs'))
# projections
rows=load('projections.json','Projections')
w(block("SELECT met_alias, point_alias['id'], v_size32, v_size64, points_size, vv_size, points_x, points_id FROM projections", [[r[c] if c!='point_alias' else r['point_alias']['id'] for c in ['met_alias','point_alias','v_size32','v_size64','points_size','vv_size','points_x','points_id']] for r in rows], src='projections.json: projected fields and cardinalities'))
w('''query TT
SELECT arrow_typeof(v_size32), arrow_typeof(v_size64) FROM projections LIMIT 1
----
UInt32 UInt64
''')
open(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'types.slt'), 'w').write('\n'.join(out))
