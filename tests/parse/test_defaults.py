"""Declared `default`s filled in for properties the reply left out, and recorded."""

from __future__ import annotations

import dataclasses
from typing import Any

import outform


def obj(required: tuple[str, ...] = (), **properties: Any) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    return schema


def filled(result: outform.ParseResult[Any]) -> list[tuple[str, Any]]:
    return [(c.path, c.after) for c in result.changes if c.transform == "fill_default"]


def test_an_absent_property_gets_its_default_and_the_change_is_recorded() -> None:
    result = outform.parse("{}", obj(a={"type": "integer", "default": 1}))
    assert result.value == {"a": 1}
    (change,) = result.changes
    assert (change.path, change.stage, change.transform) == ("/a", "semantic", "fill_default")
    assert (change.before, change.after) == (None, 1)


def test_a_value_present_in_the_reply_is_never_replaced_even_null() -> None:
    result = outform.parse('{"a": null}', obj(a={"type": ["integer", "null"], "default": 1}))
    assert result.value == {"a": None}
    assert result.changes == ()


def test_defaults_are_filled_in_nested_objects_items_and_additional_properties() -> None:
    inner = obj(b={"type": "string", "default": "x"})
    schema = obj(
        o=inner,
        items={"type": "array", "items": inner},
        map={"type": "object", "additionalProperties": inner},
    )
    result = outform.parse('{"o": {}, "items": [{}, {"b": "y"}], "map": {"k": {}}}', schema)
    assert result.value == {
        "o": {"b": "x"},
        "items": [{"b": "x"}, {"b": "y"}],
        "map": {"k": {"b": "x"}},
    }
    assert sorted(filled(result)) == [("/items/0/b", "x"), ("/map/k/b", "x"), ("/o/b", "x")]


def test_an_absent_parent_object_is_not_created_to_hold_a_default() -> None:
    result = outform.parse("{}", obj(o=obj(b={"type": "string", "default": "x"})))
    assert result.value == {}


def test_a_default_declared_behind_a_ref_is_used() -> None:
    schema = {
        **obj(a={"$ref": "#/$defs/A"}),
        "$defs": {"A": {"type": "integer", "default": 7}},
    }
    assert outform.parse("{}", schema).value == {"a": 7}


def test_in_a_union_the_defaults_of_the_branch_the_value_matches_are_used() -> None:
    schema = {
        "anyOf": [
            obj(("kind",), kind={"const": "a"}, x={"default": 1}),
            obj(("kind",), kind={"const": "b"}, y={"default": 2}),
        ]
    }
    assert outform.parse('{"kind": "b"}', schema).value == {"kind": "b", "y": 2}


def test_a_default_that_would_make_the_value_invalid_is_not_added() -> None:
    result = outform.parse("{}", obj(a={"type": "integer", "default": "not a number"}))
    assert result.value == {}
    assert result.changes == ()


def test_the_fill_defaults_option_turns_filling_off() -> None:
    result = outform.parse("{}", obj(a={"type": "integer", "default": 1}), fill_defaults=False)
    assert result.value == {}


def test_defaults_are_also_filled_after_repairs_on_the_slow_path() -> None:
    result = outform.parse('Here: {"b": "2"}', obj(a={"default": 1}, b={"type": "integer"}))
    assert result.value == {"a": 1, "b": 2}
    assert [c.transform for c in result.changes] == [
        "extract_from_prose",
        "string_to_integer",
        "fill_default",
    ]


def test_a_filled_default_is_a_copy_of_the_one_in_the_schema() -> None:
    schema = obj(tags={"type": "array", "default": []})
    first = outform.parse("{}", schema)
    first.value["tags"].append("mutated")
    assert schema["properties"]["tags"]["default"] == []
    assert outform.parse("{}", schema).value == {"tags": []}


@dataclasses.dataclass
class Person:
    name: str
    age: int = 3


def test_a_typed_result_gets_the_defaults_of_its_type() -> None:
    assert outform.parse('{"name": "Ann"}', type=Person).value == Person("Ann", 3)
