#!/usr/bin/env python3
"""Writes call_cpython.jsonl: lact bodies and what CPython makes of them.

Usage: python3 call_cpython_gen.py 2000 1 > call_cpython.jsonl

Each line is {"body", "ok", "function"?, "arguments"?}. Bodies are drawn at
random from a small grammar of call expressions (string, number and
container literals, receivers, comments, continuations, and many invalid
forms). The expectation comes from CPython's own parser (ast.parse in eval
mode) and literal rules (ast.literal_eval, plus the names true/false/null),
the function naming of LNDL.md section 6 and the JSON check of LNDL-D12
applied to the final arguments. Bodies using the keyword argument names of
LNDL-D6 are skipped (CPython cannot parse them), and so are f-string
receivers (ParseCall rejects f-strings, a documented difference).
TestParseCall_cpython replays the file against ParseCall.
"""
import ast, json, math, random, sys

random.seed(int(sys.argv[2]) if len(sys.argv) > 2 else 1)
N = int(sys.argv[1])  # cases of each kind (accepted, rejected)

def rstr():
    q = random.choice(['"', "'", '"""', "'''"])
    pre = random.choice(['', '', '', 'r', 'u', 'R', 'b', 'f', 'rb', 'U'])
    parts = []
    for _ in range(random.randint(0, 6)):
        parts.append(random.choice([
            'a', 'a', 'a', 'b', ' ', 'é', '日', '🚀', '\\n', '\\t', '\\\\', '\\x41', '\\u00e9', '\\U0001F680', '\\101', '\\0',
            '\\q', '\\ud83d\\ude80', '\\ud800', '#', '{', '}', '(', ')', ',', '=', 'from=', '\\' + q[0], '\\\n',
            '\n' if len(q) == 3 else 'x', '\\N{DASH}', '\\x4', '\\u12',
        ]))
    return pre + q + ''.join(parts) + q

def rnum():
    return random.choice([
        '0', '00', '007', '1', '-1', '+7', '1_000', '1__0', '0x1F', '0X_ff', '0o17', '0b101', '0b2', '1.5', '-2.5',
        '.5', '5.', '1e3', '1E-3', '-3e-2', '1e400', '-1e999', '1e-400', '1j', '2.5J', '1_0.0_1', '123456789012345678901234567890',
        '-0', '-0.0', '0.0001', '1e16', '1e-5', '1.', '01', '1_', '0x', '9' * 30,
        '0_0', '1_000.000_1e1_0', '0xdead_beef', '0O17', '0B1', '0o8', '1e', '1e+', '1.e5', '00.5', '0e0', '1_e5', '- 1', '+ 2.5',
        '1if', '0x_', '1.5.2', '.e1', '1e1_0', '1E+0_1', '0b_1_0', '(-1)', '-(-1)', '+-1', '2j+1', '1+2j', '-1-2J', '1+(2j)',
    ])

def rval(d=0):
    r = random.random()
    if d > 3 or r < 0.35:
        if random.random() < 0.6:
            return random.choice(['1', '"s"', "'t'", '2.5', 'True', 'None', 'null', '-3', '0x10', '[1, 2]', '{"k": 1}'])
        return random.choice([rnum, rstr, lambda: random.choice(['True', 'False', 'None', 'true', 'false', 'null', 'x', '...', '-true', '--1', '-(1)', '(1)', 'if', 'lambda: 0', 'f(1)', 'a.b', 'a[0]', '1+2', '1+2j', '*a', '**a'])])()
    if r < 0.5:
        return '[' + ', '.join(rval(d + 1) for _ in range(random.randint(0, 3))) + random.choice(['', ',']) + ']'
    if r < 0.65:
        n = random.randint(0, 3)
        inner = ', '.join(rval(d + 1) for _ in range(n))
        if n == 1 and random.random() < 0.5:
            inner += ','
        return '(' + inner + ')'
    if r < 0.85:
        items = []
        for _ in range(random.randint(0, 3)):
            k = random.choice([rstr, rnum, lambda: random.choice(['True', 'None', '(1, 2)', 'true', 'null', '[1]', 'x'])])()
            items.append(k + ': ' + rval(d + 1))
        return '{' + ', '.join(items) + '}'
    if r < 0.9:
        return '{' + ', '.join(rval(d + 1) for _ in range(random.randint(1, 2))) + '}'
    return rstr() + ' ' + rstr()

def rcall():
    fn = random.choice(['fn', 'svc.fn', 'a.b.c.tool', 'x[0].tool', '"s".join', '(fn)', 'fn()', 'None', 'größe', 'print', 'if', 'f.class',
        'a().b', 'a[1:2].b', 'a[::2, 1].b', '(a).b', 'a . b', 'x.y.z.w', 'True.fn', '1 .real', '1.5.hex', '[1].pop', '{}.get', '(1,).count',
        'await fn', '-fn', 'not fn', 'lambda: fn', 'a.b(c=1).d', 'f(x)(y)', 'match', 'type', '_', 'a[b].c', "b''.join", "rb'x'.hex", 'f"x".y'])
    args = []
    for _ in range(random.randint(0, 4)):
        if random.random() < 0.5:
            args.append(rval())
        else:
            name = random.choice(['x', 'y', '_pos_0', 'print', 'True', 'if', 'from_', 'ünï', 'x'])
            args.append(name + random.choice(['=', ' = ', '=\n ']) + rval())
    sep = random.choice([', ', ',', ',\n    ', ', # c\n', ' ,\\\n', ',\t', ',\x0c'])
    body = fn + '(' + sep.join(args) + random.choice(['', ',', ' ']) + ')'
    body += random.choice(['', '', ' # tail', '\n', ';', '.x', '()', ' \\\n', ' if x else y', ',', ' + 1', '\n\n# done\n', '\n  ', '[0]'])
    if random.random() < 0.05:
        body = '(' + body + ')'
    if random.random() < 0.03:
        body = '# lead\n' + body
    if random.random() < 0.05:
        body = ' ' + body
    return body

class Bad(Exception):
    pass

def conv(node):
    try:
        return ast.literal_eval(node)
    except Exception:
        pass
    if isinstance(node, ast.Name) and node.id in ('true', 'false', 'null'):
        return {'true': True, 'false': False, 'null': None}[node.id]
    if isinstance(node, ast.List):
        return [conv(e) for e in node.elts]
    if isinstance(node, ast.Tuple):
        return tuple(conv(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        out = {}
        for k, v in zip(node.keys, node.values):
            if k is None:
                raise Bad('unpack')
            out[conv(k)] = conv(v)
        return out
    raise Bad(type(node).__name__)

def jsonable(v):
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, int):
        if len(str(abs(v))) > 4300:
            raise Bad('big')
        return v
    if isinstance(v, float):
        if math.isinf(v) or math.isnan(v):
            raise Bad('inf')
        return v
    if isinstance(v, (list, tuple)):
        return [jsonable(e) for e in v]
    if isinstance(v, dict):
        out = {}
        for k, e in v.items():
            if isinstance(k, bool):
                ks = 'true' if k else 'false'
            elif k is None:
                ks = 'null'
            elif isinstance(k, int):
                ks = str(k)
            elif isinstance(k, float):
                if math.isinf(k) or math.isnan(k):
                    raise Bad('inf key')
                ks = repr(k)
            elif isinstance(k, str):
                ks = k
            else:
                raise Bad('key')
            out[ks] = jsonable(e)
        return out
    raise Bad(type(v).__name__)

def oracle(body):
    if 'f"x"' in body:
        return None  # f-string receivers: a documented divergence
    if any(w in body for w in ('from=', 'import=', 'class=', 'def=', 'return=', 'yield=', 'async=', 'await=')):
        return None
    try:
        tree = ast.parse(body, mode='eval')
    except Exception:
        return {'ok': False}
    call = tree.body
    if not isinstance(call, ast.Call):
        return {'ok': False}
    f = call.func
    if isinstance(f, ast.Name):
        name = f.id
    elif isinstance(f, ast.Attribute):
        name = f.attr
        if isinstance(f.value, ast.Name):
            name = f.value.id + '.' + name
        elif isinstance(f.value, ast.Attribute):
            name = f.value.attr + '.' + name
    else:
        return {'ok': False}
    args = {}
    try:
        for i, a in enumerate(call.args):
            if isinstance(a, ast.Starred):
                return {'ok': False}
            args['_pos_%d' % i] = conv(a)
        for kw in call.keywords:
            if kw.arg is None:
                return {'ok': False}
            args[kw.arg] = conv(kw.value)
    except (Bad, ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return {'ok': False}
    try:
        args = jsonable(args)
        text = json.dumps(args, allow_nan=False)
    except Exception:
        return {'ok': False}
    res = json.loads(text)
    try:
        json.dumps(res, ensure_ascii=False).encode('utf-8')
    except UnicodeEncodeError:
        return {'ok': False, 'surrogate': True}
    return {'ok': True, 'function': name, 'arguments': res}

import warnings
warnings.simplefilter('ignore')
seen = set()
oks, errs = [], []
while len(oks) < N or len(errs) < N:
    b = rcall()
    if b in seen:
        continue
    seen.add(b)
    o = oracle(b)
    if o is None:
        continue
    o['body'] = b
    line = json.dumps(o)
    if o['ok'] and len(oks) < N:
        oks.append(line)
    elif not o['ok'] and len(errs) < N:
        errs.append(line)
cases = oks + errs
random.shuffle(cases)
for line in cases:
    print(line)
