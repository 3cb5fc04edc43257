import sys, traceback
from tests.fuzz.grammar import Case
from tests.fuzz.checks import check_parse, check_stream, parse_outcome
C = [
 (Case(family='hostile_schemas', text='18446744073709551616', schema={'oneOf': [{'type': 'integer'}, {'type': 'number'}]}), 'full', None),
 (Case(family='hostile_schemas', text='18446744073709551616', schema={'oneOf': [{'type': 'integer'}, {'type': 'number'}]}), 'minimal', None),
 (Case(family='fences', text='``json\n["""fixed""", "fixed"]', schema={'type': 'array', 'items': {'anyOf': [{'const': 'fixed'}, {'type': 'string', 'pattern': '^[a-z]+$'}]}, 'minItems': 2}), 'full', [2, 4, 7, 9, 24, 26, 29]),
 (Case(family='stray_brackets', text='"3/4 [772] {} Use { or [ here. }{]{{ ["d`a4', schema={'oneOf': [{'type': 'number'}, {'type': 'object', 'additionalProperties': {}}]}), 'full', [43]),
 (Case(family='stray_brackets', text='[{}, {"Name": 18446744073709551616,\n  "VALUE": {"result": "x"}}] [{"Name": 7.0 value: "\'b{\\t\\n0"\n}, {"value": "g\'R\\tc31h"}] done. The answer is [] [{"value": true}] Note: ', schema={'type': 'array', 'items': {'type': 'object', 'properties': {'Name': {'type': 'integer', 'minimum': 0, 'maximum': 100}, 'value': {'type': 'string', 'minLength': 2, 'maxLength': 5}}, 'required': ['Name', 'value'], 'additionalProperties': False}}), 'full', [1, 2, 3, 5, 6, 55, 110, 111, 136, 138, 140, 143, 144, 146, 148, 151, 153, 171]),
 (Case(family='stray_brackets', text='[[-898, null], "42", 18446744073709551616] } "café" False 0.1e9999 [null Infinity,]', schema={'type': 'array', 'items': {'oneOf': [{}, {'type': ['integer', 'null']}]}}), 'full', [2, 4, 5, 66, 68, 83]),
 (Case(family='fences', text='{"code": "~~~python\\nx = 1\\n~~~"}\n````text\n{}\n```json title=x\n{}', schema={'anyOf': [{'type': 'object', 'properties': {'price': {'const': 'fixed'}}, 'required': ['price'], 'additionalProperties': False}, {'type': 'object', 'additionalProperties': {'type': 'boolean'}}]}), 'minimal', [3, 4, 7, 11, 12, 21, 23, 26, 28, 30, 64]),
 (Case(family='fences', text='````json\n[1e400]\n````\nI think ] is odd } ``json title=x [112.75, "12%"] ``\n~~~jsonc\n["$4.25", [None, ". U-c`"]]\n```python\n["$4.25", "12%"]\n```JSON\n[26.5]\n{"code": "``python\\nx = 1\\n``"}', schema={'type': 'array', 'items': {'type': 'number'}, 'minItems': 1}), 'minimal', [3, 6, 21, 76, 77, 78, 81, 83, 84, 85, 86, 88, 89, 90, 93, 94, 129, 130, 131, 134, 185]),
 (Case(family='fences', text='````JSON\n01\n````\n~~~json\n[[]]\n~~~python\n0\n{"code": "````python\\nx = 1\\n````"}\nUse { or [ here.\nSure!  ~~~json -706 ~~~', schema={'$defs': {'it': {'type': 'object', 'properties': {'name': {'enum': ['LOW', 'MEDIUM', 'HIGH', 'café']}, 'tags': {'type': 'boolean'}}, 'additionalProperties': False}}, '$ref': '#/$defs/it'}), 'minimal', [1, 2, 19, 21, 28, 31, 32, 33, 94, 97, 118]),
 (Case(family='stray_brackets', text='{"value": 1e400,\n  "a": "42"} Note:  {"items": "*{"} }}} {"é": " {value: 190.0 // c\n"a\\n": 7.0 /* end */} true { False', schema={'anyOf': [{'type': 'boolean'}, {'type': 'object', 'properties': {'value': {'type': 'number'}, 'a': {'type': 'integer', 'maximum': 18446744073709551616}}, 'additionalProperties': False}]}), 'minimal', [46, 97, 118]),
 (Case(family='stray_brackets', text='[true, 1e400, 15.25] ["g#"] 1606938044258990275541962092341162602522202993782792835301376 [-0, {"result": "x"}, 42] it\'s  [true] 47 -48', schema={'type': 'array', 'items': {'anyOf': [{'type': 'string', 'minLength': 2, 'maxLength': 5}, {'type': ['string', 'number']}]}}), 'minimal', [2, 52, 62, 65, 67, 69, 71, 72, 74, 76, 121, 123, 129, 130, 131, 132, 135]),
]
only = set(map(int, sys.argv[1:]))
for i,(case,level,cuts) in enumerate(C):
    if only and i not in only: continue
    try:
        out = check_parse(case, level)
        print(i, 'parse', str(out)[:300])
        if cuts is not None:
            check_stream(case, level, cuts, out)
        print(i, 'OK')
    except AssertionError as e:
        print(i, 'FAIL', str(e)[:600])
