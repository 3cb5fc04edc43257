"""Round trip on generated schemas: forward, then back, gives the instance again.

A strategy builds a schema and, with it, a way to draw instances valid under it: objects with
optional properties (and awkward names), maps, arrays, unions, nullable values, enums, `$ref`s.
For every dialect, the translation obeys the dialect's rules, and every instance either makes
the round trip unchanged or is refused by `forward` for a narrowing the dialect documents; a
translation that says it does not reshape values sends every instance as it is.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jsonschema_rs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from outform.errors import DialectError
from outform.schema.dialects import NotRepresentableError, check_rules, translate
from outform.schema.dialects.codec import same
from tests.schema.test_jsonschemabench import allowed_narrowings

Maker = Callable[[st.DrawFn], Any]
DIALECTS = ("openai_strict", "anthropic", "gemini", "gemini_openapi", "llama_cpp", "xai", "openai")
NAMES = st.sampled_from(["a", "b", "name", "a/b", "~x", "additional_properties", "value", "key"])
SAFE_INT = st.integers(min_value=-(2**53), max_value=2**53)


@st.composite
def leaf(draw: st.DrawFn) -> tuple[dict[str, Any], Maker]:
    kind = draw(st.sampled_from(["string", "integer", "number", "boolean", "null", "enum", "any"]))
    if kind == "string":
        longest = draw(st.integers(min_value=1, max_value=8))
        return {"type": "string", "maxLength": longest}, lambda d: d(st.text(max_size=longest))
    if kind == "integer":
        low = draw(st.integers(min_value=-5, max_value=5))
        return {"type": "integer", "minimum": low}, lambda d: d(
            st.integers(min_value=low, max_value=2**53)
        )
    if kind == "number":
        return {"type": "number"}, lambda d: d(st.floats(allow_nan=False, allow_infinity=False))
    if kind == "boolean":
        return {"type": "boolean"}, lambda d: d(st.booleans())
    if kind == "null":
        return {"type": "null"}, lambda d: None
    if kind == "enum":
        values = draw(
            st.lists(st.one_of(st.text(max_size=3), SAFE_INT), min_size=1, max_size=3, unique=True)
        )
        return {"enum": values}, lambda d: d(st.sampled_from(values))
    json = st.recursive(
        st.none() | st.booleans() | SAFE_INT | st.text(max_size=3),
        lambda inner: (
            st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=2), inner, max_size=2)
        ),
        max_leaves=4,
    )
    return {}, lambda d: d(json)


@st.composite
def node(draw: st.DrawFn, depth: int = 2) -> tuple[dict[str, Any], Maker]:
    kind = draw(st.sampled_from(["leaf", "object", "array", "map", "nullable", "union"]))
    if depth == 0 or kind == "leaf":
        return draw(leaf())
    if kind == "object":
        return draw(an_object(depth))
    inner, make = draw(node(depth - 1))
    if kind == "array":
        return {"type": "array", "items": inner}, lambda d: [
            make(d) for _ in range(d(st.integers(0, 3)))
        ]
    if kind == "map":
        return {"type": "object", "additionalProperties": inner}, lambda d: {
            key: make(d) for key in d(st.lists(NAMES, max_size=3, unique=True))
        }
    if kind == "nullable":
        return {"anyOf": [inner, {"type": "null"}]}, lambda d: d(st.sampled_from([None, make(d)]))
    other, make_other = draw(node(depth - 1))
    return {"anyOf": [inner, other]}, lambda d: make(d) if d(st.booleans()) else make_other(d)


@st.composite
def an_object(draw: st.DrawFn, depth: int) -> tuple[dict[str, Any], Maker]:
    names = draw(st.lists(NAMES, min_size=1, max_size=4, unique=True))
    props = {name: draw(node(depth - 1)) for name in names}
    required = [name for name in names if draw(st.booleans())]
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {name: sub for name, (sub, _) in props.items()},
        "required": required,
    }
    if draw(st.booleans()):
        schema["additionalProperties"] = False

    def make(d: st.DrawFn) -> dict[str, Any]:
        return {
            name: maker(d)
            for name, (_, maker) in props.items()
            if name in required or d(st.booleans())
        }

    return schema, make


@st.composite
def schema_and_instance(draw: st.DrawFn) -> tuple[dict[str, Any], Any]:
    schema, make = draw(node())
    if draw(st.booleans()):  # the same schema, reached through a reference
        schema = {"$defs": {"it": schema}, "$ref": "#/$defs/it"}
    return schema, make(draw)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema_and_instance())
def test_forward_then_reverse_is_the_identity(case: tuple[dict[str, Any], Any]) -> None:
    schema, instance = case
    assert jsonschema_rs.validator_for(schema).is_valid(instance), "the generator is wrong"
    for dialect in DIALECTS:
        try:
            result = translate(schema, dialect)
        except DialectError:
            continue  # e.g. a limit of the dialect: refused before any request, as designed
        assert not check_rules(result.schema, dialect), dialect
        try:
            sent = result.forward(instance)
        except NotRepresentableError as refused:
            assert refused.kind in allowed_narrowings(dialect), (dialect, str(refused))
            continue
        wire = jsonschema_rs.validator_for(result.validation_schema)
        assert wire.is_valid(sent), (dialect, sent, result.validation_schema)
        assert same(result.reverse(sent), instance), (dialect, sent)
        if not result.reshapes:  # then a reply needs no mapping back: both shapes are one
            assert same(sent, instance), (dialect, sent)
