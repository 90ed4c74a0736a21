#!/usr/bin/env python3
"""Writes validate_pydantic.jsonl: inputs for a target model and what
pydantic 2 (lax mode, Model.model_validate on the decoded JSON) makes of
them.

Usage: python3 validate_pydantic_gen.py 3000 1 > validate_pydantic.jsonl

The first line is {"schema": ...}, the model's model_json_schema(). Every
other line is {"input", "ok", "value"? (model_dump(mode="json")),
"errors"? ([{"loc", "type"}])}. Inputs mix plausible values for each field
(numeric strings, boolean words, integral floats, nested models, lists,
dicts, unions, enums, literals, constraints) with wrong ones. Non-finite
numbers are left out: pydantic accepts "inf" for a float field, which
Target.Validate rejects because JSON cannot hold it.
TestValidate_pydantic replays the file against Target.Validate.
"""
import json, random, sys, warnings
from enum import Enum
from typing import Any, Literal, Optional, Union
from pydantic import BaseModel, Field, ValidationError

warnings.simplefilter('ignore')
random.seed(int(sys.argv[2]))
N = int(sys.argv[1])

class Status(str, Enum):
    open = 'open'
    closed = 'closed'

class Level(int, Enum):
    low = 1
    high = 2

class Item(BaseModel):
    name: str
    score: float

class M(BaseModel):
    s: str
    i: int
    f: float
    b: bool
    os: Optional[str] = None
    oi: Optional[int] = None
    tags: list[str] = []
    nums: list[int] = []
    d: dict[str, float] = {}
    items: list[Item] = []
    item: Optional[Item] = None
    u: Union[int, str] = 0
    st: Status = Status.open
    lv: Level = Level.low
    c: int = Field(default=0, ge=0, le=100)
    name: str = Field(default='x', min_length=1, max_length=5)
    anything: Any = None
    lit: Literal['a', 'b'] = 'a'
    ob: Optional[bool] = None

SCALARS = ['42', ' 42 ', '4.0', '4.5', '1e3', '1_000', '+5', '-0', '0x10', '', ' ', 'abc', 'yes', 'No', 'ON', 'off', 't', 'F', 'y', 'n',
           '1', '0', 'true', 'False', 'TRUE', ' true', '-1', '101', '1.5e2', '.5', '5.', '00', '007', '١٢', '\u00a042',
           'open', 'closed', 'OPEN', 'a', 'b', 'abcdef', '2', '3', '1.0', '-1.5', '١']
NUMS = [0, 1, 2, -1, 42, 101, 1.0, 2.0, 2.5, -0.0, 1e3, 1e20, 12345678901234567890123, 0.1, 3, 1.5e300]

def scalar():
    r = random.random()
    if r < 0.45:
        return random.choice(SCALARS)
    if r < 0.8:
        return random.choice(NUMS)
    if r < 0.9:
        return random.choice([True, False, None])
    return random.choice([[], {}, ['x'], {'k': 1}, '["a", "b"]', '{"name": "n", "score": 1}'])

def item():
    r = random.random()
    if r < 0.7:
        d = {}
        if random.random() < 0.9:
            d['name'] = random.choice(['n', 'n', 'x y', 1, None])
        if random.random() < 0.9:
            d['score'] = random.choice([0.5, '0.5', 1, '1', scalar()])
        if random.random() < 0.2:
            d['extra'] = 1
        return d
    return scalar()

PLAUSIBLE = {
    's': ['text', '', 'a b', 'é'], 'os': ['x', None], 'name': ['ab', '', 'abcdef', 'x'],
    'i': [1, '42', ' 42 ', '4.0', 2.0, '1_000', '+5', True, '-0', '1e3', 2.5, '007', '00'],
    'oi': [None, 3, '3', 3.0], 'c': [0, 100, 101, -1, '50', 50.0],
    'f': [1.5, 2, '0.5', ' 1e3 ', '.5', '5.', True, '1_0.5', '-0', 1e20, 12345678901234567890123],
    'b': [True, False, 'yes', 'No', 'ON', 'off', 't', 'F', 'y', 'n', '1', '0', 1, 0, 1.0, 'TRUE', ' true', 2],
    'ob': [None, True, 'no'], 'u': [1, 'x', '5', 2.0, 2.5, True, None],
    'st': ['open', 'closed', 'OPEN', 1], 'lv': [1, 2, '2', 2.0, 3, True], 'lit': ['a', 'b', 'c'],
}

def value(key):
    if key in PLAUSIBLE and random.random() < 0.85:
        return random.choice(PLAUSIBLE[key])
    if key == 'lv':
        return random.choice([1, 2, 3, '2', 2.0, True, None, 'x', [1]])
    if key in ('tags', 'nums'):
        if random.random() < 0.85:
            pool = ['a', 'b', 1, '2', 2.0] if key == 'nums' else ['a', 'b', 'c d']
            if key == 'nums':
                pool = [1, '2', 2.0, ' 3 ', True]
            return [random.choice(pool) for _ in range(random.randint(0, 3))]
        return random.choice([[scalar() for _ in range(random.randint(0, 3))], scalar()])
    if key == 'd':
        if random.random() < 0.85:
            return {random.choice('abc'): random.choice([1, '0.5', 2.5, 'x']) for _ in range(random.randint(0, 3))}
        return random.choice([{random.choice('abc'): scalar() for _ in range(random.randint(0, 3))}, scalar()])
    if key == 'items':
        return random.choice([[item() for _ in range(random.randint(0, 3))], scalar()])
    if key == 'item':
        return item()
    if key == 'anything':
        return random.choice([scalar(), [scalar()], {'k': scalar()}])
    return scalar()

KEYS = list(M.model_fields)
print(json.dumps({'schema': M.model_json_schema()}))
for _ in range(N):
    d = {}
    for k in KEYS:
        if k in ('s', 'i', 'f', 'b'):
            if random.random() < 0.97:
                d[k] = value(k)
        elif random.random() < 0.15:
            d[k] = value(k)
    if random.random() < 0.1:
        d['zzz'] = 1
    try:
        m = M.model_validate(d)
        out = {'input': d, 'ok': True, 'value': m.model_dump(mode='json')}
    except ValidationError as e:
        out = {'input': d, 'ok': False, 'errors': [{'loc': list(x['loc']), 'type': x['type']} for x in e.errors()]}
    try:
        print(json.dumps(out, allow_nan=False))
    except ValueError:
        pass
