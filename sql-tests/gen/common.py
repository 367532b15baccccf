import sys; import os; sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
from expected import load, fmt, F32, F64
def block(sql, rows, sort=None, src=None):
    out=[]
    if src: out.append('# expected: ' + src)
    ncols = len(rows[0]) if rows else 1
    out.append('query ' + 'T'*ncols + (' ' + sort if sort else ''))
    out.append(sql)
    out.append('----')
    for r in rows:
        out.append(' '.join(fmt(v) if not isinstance(v, str) or True else v for v in r))
    return '\n' + '\n'.join(out) + '\n'
def fmtrow(r): return r
