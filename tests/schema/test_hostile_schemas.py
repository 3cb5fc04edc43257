"""Schemas written to attack the work, or by mistake: reference cycles, left recursion, chains
and nestings hundreds of levels deep. Each is translated or refused with a SchemaError; none
reaches Python's recursion limit (an InternalError). Found by the fuzzer (tests/fuzz)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import outform
from outform.errors import SchemaError
from outform.schema.compiled import compile_schema
from outform.schema.dialects import names, translate
from outform.schema.dialects.normalize import Document

CYCLES: list[dict[str, Any]] = [
    {"$ref": "#"},
    {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"},
    # `#/$defs/it` is the root's `$defs/it`: the definition refers to itself
    {"$defs": {"it": {"$defs": {"it": {"enum": [1]}}, "$ref": "#/$defs/it"}}, "$ref": "#/$defs/it"},
]


@pytest.mark.parametrize("schema", CYCLES)
def test_a_cycle_of_references_alone_means_any_value_as_validators_read_it(
    schema: dict[str, Any],
) -> None:
    """`{"$ref": "#"}` never reaches a keyword: jsonschema-rs (and so `parse`) accepts any
    value, and the translators translate it as the empty schema. Following it as a reference
    made `forward` recurse until Python gave up."""
    assert outform.parse("[{}]", schema).data == [{}]
    for dialect in names():
        result = translate(schema, dialect)
        assert result.reverse(result.forward([{"a": 1}])) == [{"a": 1}]


@pytest.mark.parametrize(
    "schema",
    [
        {"anyOf": [{"$ref": "#"}, {"type": "integer"}]},
        {
            "$defs": {"it": {"oneOf": [{"$ref": "#/$defs/it"}, {"type": "object"}]}},
            "$ref": "#/$defs/it",
        },
        {"allOf": [{"$ref": "#/$defs/a"}], "$defs": {"a": {"anyOf": [{"$ref": "#"}]}}},
    ],
)
def test_a_schema_that_refers_back_to_itself_without_descending_is_refused(
    schema: dict[str, Any],
) -> None:
    """`a = anyOf[a, ...]` checks a value against the schema checking it: validators disagree on
    what that means, so no dialect is given one."""
    for dialect in names():
        with pytest.raises(SchemaError, match="without descending into the value"):
            translate(schema, dialect)


def test_recursion_through_an_item_or_a_property_is_still_translated() -> None:
    schema = {"anyOf": [{"type": "integer"}, {"type": "array", "items": {"$ref": "#"}}]}
    result = translate(schema, "openai_strict")
    assert result.reverse(result.forward([[1], 2])) == [[1], 2]


def chain(length: int) -> dict[str, Any]:
    """`$defs` d0 -> d1 -> ... -> d<length>, an integer."""
    defs: dict[str, Any] = {f"d{i}": {"$ref": f"#/$defs/d{i + 1}"} for i in range(length)}
    defs[f"d{length}"] = {"type": "integer"}
    return {"$defs": defs, "$ref": "#/$defs/d0"}


def nested(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "integer"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"a": schema}, "required": ["a"]}
    return schema


@pytest.mark.parametrize("schema", [chain(1000), nested(190)], ids=["chain", "nested"])
def test_a_schema_nested_too_deeply_is_a_schema_error_saying_so(schema: dict[str, Any]) -> None:
    calls: list[Callable[[], Any]] = [
        lambda: compile_schema(schema),
        lambda: outform.parse("1", schema),
        lambda: translate(schema, "openai_strict"),
    ]
    for call in calls:
        with pytest.raises(SchemaError) as caught:
            call()
        assert "nests too deeply" in caught.value.what
        assert caught.value.fix is not None and "$ref" in caught.value.fix


def test_a_long_chain_of_references_within_reach_is_followed() -> None:
    assert outform.parse('"7"', chain(150)).data == 7
    for dialect in ("openai_strict", "gemini", "anthropic"):
        result = translate(chain(150), dialect)
        assert result.reverse(result.forward(7)) == 7


def test_the_reference_analyses_visit_each_location_of_a_chain_a_bounded_number_of_times(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Found by the fuzzer: the cycle analyses walked the rest of a chain from each of its
    references (a chain of 550 took 4.5 s to translate). Counted, not timed: the lookups of
    schema locations grow with the chain, not with its square."""
    lookups = 0
    original = Document.node

    def counted(self: Document, loc: str) -> Any:
        nonlocal lookups
        lookups += 1
        return original(self, loc)

    monkeypatch.setattr(Document, "node", counted)
    counts = []
    for length in (100, 200, 400):
        lookups = 0
        translate(chain(length), "gemini")
        counts.append(lookups)
    assert counts[2] <= 2.2 * counts[1] and counts[1] <= 2.2 * counts[0], counts


def test_required_names_merged_from_several_parts_are_each_sent_once_in_order() -> None:
    """The names `required` in the parts of a conjunction are merged as an ordered set (a list
    searched for each name made 20,000 names 200 million comparisons; the fuzzer's dialects
    family grew 2.6× a doubling on such schemas)."""
    names_ = [f"k{i}" for i in range(20_000)]
    schema = {
        "type": "object",
        "properties": {name: {"type": "integer"} for name in names_},
        "required": names_[::2],
        "allOf": [{"required": names_[::-1]}],
    }
    wire = translate(schema, "gemini").schema
    assert wire["required"] == names_[::2] + names_[-1::-2]  # (the odd ones, as listed)
