"""Incremental schema checks: stop a streamed reply as soon as it can no longer become valid.

Two promises, both tested here: a reply that violates the schema is caught at the chunk where
the violation becomes certain (not at the end), and a reply that could still become valid is
never stopped (checked against every valid instance of the JSON Schema Bench corpus, in several
chunkings, in both modes).
"""

from __future__ import annotations

from typing import Any, Literal

import orjson
import pytest
from pydantic import BaseModel

from outform import SchemaError
from outform.parse.hint import Violation
from outform.parse.incremental import (
    DEFAULT_DEGENERATION,
    Checker,
    Degeneration,
    DegenerationGuard,
)
from outform.parse.partial import PartialParser
from outform.schema.compiled import CompiledSchema, compile_schema
from tests.vendored import corpus


class Item(BaseModel):
    id: int
    name: str
    color: Literal["red", "green", "blue"]
    tags: list[str] = []
    note: str | None = None


class Order(BaseModel):
    items: list[Item]


def _order_schema() -> dict[str, Any]:
    schema = Order.model_json_schema()
    item = schema["$defs"]["Item"]
    item["additionalProperties"] = False
    item["properties"]["tags"]["maxItems"] = 2
    item["properties"]["name"]["maxLength"] = 10
    return schema


ORDER = compile_schema(_order_schema())


def stop_at(
    text: str,
    schema: CompiledSchema = ORDER,
    *,
    strict: bool = True,
    lenient: bool = False,
    size: int = 1,
) -> tuple[int | None, Violation | None]:
    """Stream `text` through the parser and the checker: where it was stopped, and why."""
    checker = Checker(schema, strict=strict, lenient=lenient)
    parser = PartialParser(listener=checker)
    for start in range(0, len(text), size):
        parser.feed(text[start : start + size])
        if checker.violation is not None:
            return start + size, checker.violation
    return None, None


VALID = (
    '{"items": [{"id": 1, "name": "pen", "color": "red", "tags": ["a"], "note": null},'
    ' {"id": 2, "name": "ink", "color": "blue", "note": "dark"}]}'
)


@pytest.mark.parametrize("strict", [True, False])
@pytest.mark.parametrize("size", [1, 7, 1000])
def test_a_valid_reply_is_never_stopped(strict: bool, size: int) -> None:
    assert stop_at(VALID, strict=strict, size=size) == (None, None)


# -- strict: the JSON as written ----------------------------------------------------------------


def test_a_wrong_type_is_caught_when_the_value_starts() -> None:
    text = '{"items": [{"id": "x1", "name": "pen"}]}'
    at, violation = stop_at(text)
    assert at == text.index('"x1"') + 1  # the opening quote says "string"
    assert violation is not None
    assert (violation.path, violation.kind, violation.expected) == (
        "/items/0/id",
        "type",
        "integer",
    )


def test_an_enum_value_no_member_starts_with_is_caught_at_its_first_wrong_character() -> None:
    text = '{"items": [{"id": 1, "name": "pen", "color": "grey"}]}'
    at, violation = stop_at(text)
    assert at == text.index("grey") + 4  # "g", "gr", "gre" could still become "green"
    assert violation is not None and violation.kind == "enum"
    assert violation.path == "/items/0/color"
    text = '{"items": [{"id": 1, "color": "purple"'
    at, _ = stop_at(text)
    assert at == text.index("purple") + 1


def test_an_unexpected_key_is_caught_as_soon_as_its_name_is_complete() -> None:
    text = '{"items": [{"id": 1, "price": 3}]}'
    at, violation = stop_at(text)
    assert at == text.index('"price"') + len('"price"')
    assert violation is not None
    assert (violation.path, violation.kind, violation.found) == (
        "/items/0",
        "unexpected",
        "'price'",
    )


def test_a_string_past_max_length_is_caught_before_it_ends() -> None:
    text = '{"items": [{"id": 1, "name": "a very long name indeed"}]}'
    at, violation = stop_at(text)
    assert at == text.index("a very") + 11  # the 11th character
    assert violation is not None and violation.keyword == "maxLength"


def test_too_many_items_are_caught_when_the_extra_item_starts() -> None:
    text = '{"items": [{"id": 1, "tags": ["a", "b", "c"]}]}'
    at, violation = stop_at(text)
    assert at == text.index('"c"') + 1
    assert violation is not None
    assert (violation.path, violation.keyword) == ("/items/0/tags", "maxItems")


def test_a_missing_required_field_is_caught_when_the_object_closes() -> None:
    text = '{"items": [{"id": 1, "name": "pen"}, {"id": 2}]}'
    at, violation = stop_at(text)
    assert at == text.index("}") + 1
    assert violation is not None
    assert (violation.path, violation.kind) == ("/items/0", "missing")
    assert "color" in violation.expected


def test_a_completed_value_is_checked_whole() -> None:
    # Arrived in one chunk: the item is checked as one value, and the message still points
    # at the member that is wrong.
    text = '{"items": [{"id": 1, "name": "pen", "color": "red", "note": 5}'
    at, violation = stop_at(text, size=len(text))
    assert at == len(text)
    assert violation is not None
    assert (violation.path, violation.kind) == ("/items/0/note", "type")


# -- unions -----------------------------------------------------------------------------------

SHAPES = compile_schema(
    {
        "$defs": {
            "circle": {
                "type": "object",
                "properties": {"kind": {"const": "circle"}, "radius": {"type": "number"}},
                "required": ["kind", "radius"],
                "additionalProperties": False,
            },
            "square": {
                "type": "object",
                "properties": {"kind": {"const": "square"}, "side": {"type": "number"}},
                "required": ["kind", "side"],
                "additionalProperties": False,
            },
        },
        "type": "array",
        "items": {"anyOf": [{"$ref": "#/$defs/circle"}, {"$ref": "#/$defs/square"}]},
    }
)


def test_union_branches_are_dropped_as_they_are_ruled_out() -> None:
    assert stop_at('[{"kind": "circle", "radius": 1}, {"side": 2, "kind": "square"}]', SHAPES) == (
        None,
        None,
    )
    # "side" rules out the circle, then "circle" rules out the square: nothing is left.
    text = '[{"side": 2, "kind": "circle"}]'
    at, violation = stop_at(text, SHAPES)
    assert at == text.index("circle") + 1
    assert violation is not None and violation.path == "/0/kind"


def test_a_key_no_branch_allows_is_caught() -> None:
    text = '[{"kind": "circle", "side": 1}]'
    at, violation = stop_at(text, SHAPES)
    assert at == text.index('"side"') + len('"side"')
    assert violation is not None and violation.kind == "unexpected"


def test_recursive_schemas_are_followed_lazily() -> None:
    tree = compile_schema(
        {
            "$defs": {
                "node": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "children": {"type": "array", "items": {"$ref": "#/$defs/node"}},
                    },
                    "additionalProperties": False,
                }
            },
            "$ref": "#/$defs/node",
        }
    )
    deep = '{"name": "a", "children": [{"name": "b", "children": [{"name": "c", "size": 1}]}]}'
    at, violation = stop_at(deep, tree)
    assert violation is not None
    assert violation.path == "/children/0/children/0"
    assert at == deep.index('"size"') + len('"size"')


# -- repairable: what the pipeline could still make of it ------------------------------------


def test_what_coercion_repairs_does_not_stop_a_repairable_reply() -> None:
    repairable = [
        '{"items": [{"id": "7", "name": "pen", "color": "red"}]}',  # "7" -> 7
        '{"items": [{"id": 1, "name": "pen", "color": "RED"}]}',  # a member in another case
        '{"items": [{"id": 1, "name": "pen", "color": "red", "price": 3}]}',  # dropped
        '{"items": [{"id": 1, "name": "pen", "color": "red", "note": 5}]}',  # 5 -> "5"
        '{"items": {"id": 1, "name": "pen", "color": "red"}}',  # wrapped in a list
    ]
    for text in repairable:
        assert stop_at(text, strict=False) == (None, None), text
        assert stop_at(text, strict=True)[1] is not None, text


def test_what_no_coercion_repairs_stops_a_repairable_reply_too() -> None:
    cases = {
        '{"items": [{"id": "seven", "name": "pen"': "/items/0/id",
        '{"items": [{"id": 1, "name": "far too long a name': "/items/0/name",
        '{"items": [{"id": 1, "tags": ["a", "b", "c"': "/items/0/tags",
        '{"items": [{"id": 1, "name": "pen"}]': "/items/0",
    }
    for text, path in cases.items():
        at, violation = stop_at(text, strict=False)
        assert violation is not None and violation.path == path, text
        assert at is not None and at <= len(text)


# -- never a false stop ------------------------------------------------------------------------


def _bench() -> list[tuple[str, CompiledSchema, Any, bool]]:
    cases = []
    for record in corpus("jsonschemabench_dev.jsonl"):
        try:
            compiled = CompiledSchema(record["schema"])
        except SchemaError:
            continue
        for test in record.get("tests", []):
            cases.append((record["id"], compiled, test["data"], compiled.is_valid(test["data"])))
    return cases


def test_no_valid_instance_of_the_schema_bench_is_ever_stopped() -> None:
    cases = _bench()
    valid = [c for c in cases if c[3]]
    stopped = []
    for ident, compiled, data, _ in valid:
        text = orjson.dumps(data).decode()
        # strict (level off), repairable (minimal), repairable with the full level's coercions
        for strict, lenient in ((True, False), (False, False), (False, True)):
            for size in (1, 5, len(text)):
                _, violation = stop_at(text, compiled, strict=strict, lenient=lenient, size=size)
                if violation is not None:
                    stopped.append((ident, strict, lenient, size, violation))
    print(f"jsonschemabench: {len(valid)} valid instances streamed, {len(stopped)} stopped")
    assert len(valid) > 300
    assert not stopped


def test_most_invalid_instances_of_the_schema_bench_are_stopped_before_their_end() -> None:
    invalid = [c for c in _bench() if not c[3]]
    caught = 0
    for _, compiled, data, _ in invalid:
        text = orjson.dumps(data).decode()
        at, _ = stop_at(text, compiled, size=5)
        caught += at is not None
    rate = caught / len(invalid)
    print(f"jsonschemabench: {caught}/{len(invalid)} invalid instances stopped ({rate:.0%})")
    assert rate >= 0.85


# -- degeneration -----------------------------------------------------------------------------


def _guard(chunks: list[str], limits: Degeneration = DEFAULT_DEGENERATION) -> tuple[int, Violation]:
    guard = DegenerationGuard(limits)
    for index, chunk in enumerate(chunks):
        found = guard.feed(chunk)
        if found is not None:
            return index, found
    raise AssertionError("not degenerate")


def test_a_run_of_whitespace_past_the_limit_is_degenerate() -> None:
    index, found = _guard(['{"a": 1,'] + ["\n" * 16] * 200)
    assert index == 1 + 1024 // 16  # the chunk that takes the run past 1024 characters
    assert found.keyword == "degenerate"
    assert "whitespace" in found.found


def test_a_fragment_repeated_over_and_over_is_degenerate() -> None:
    loop = '"and so on", ' * 400
    chunks = ['{"notes": ['] + [loop[i : i + 16] for i in range(0, len(loop), 16)]
    index, found = _guard(chunks)
    assert 16 * index < 2048 + 256 + 16  # caught once the repetition spans 2,048 characters
    assert "repeated" in found.found


def test_regular_but_legitimate_output_is_not_degenerate() -> None:
    guard = DegenerationGuard()
    rows = [f'{{"id": {i}, "name": "row {i}", "ok": true}},\n  ' for i in range(2000)]
    assert all(guard.feed(row) is None for row in rows)
    indented = DegenerationGuard()
    assert indented.feed("{\n" + " " * 200 + '"deep": 1}') is None


def test_limits_can_be_raised_or_switched_off() -> None:
    zeros = "[" + "0, " * 2000
    assert DegenerationGuard(Degeneration(repeats=None)).feed(zeros) is None
    relaxed = Degeneration(repeats=10_000, whitespace=None)
    assert DegenerationGuard(relaxed).feed(zeros + " " * 5000) is None
