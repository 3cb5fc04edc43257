"""Rewrites that must keep every constraint, or say in the ledger that outform checks it: allOf
members merged (only `properties` beside a `$ref`; `additionalProperties` across members),
tuples folded into one item schema, `items: false`, values carried as JSON strings,
`properties: {"b": false}`, the size of inlined `$ref`s, and integers too long for JSON text.
Found by a new-user trial; each test failed before its fix (see docs/dialects.md).
"""

from __future__ import annotations

from typing import Any

import jsonschema_rs
import pytest

from outform.errors import DialectError, SchemaError
from outform.schema.dialects import NotRepresentableError, translate
from tests.schema.helpers import entry, obeys_rules, round_trip

ALL = (
    "openai_strict",
    "groq",
    "anthropic",
    "bedrock",
    "gemini",
    "gemini_openapi",
    "llama_cpp",
    "ollama",
    "xai",
    "openai_compatible",
)
BASE = {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}
INHERITED: dict[str, Any] = {
    "$defs": {"base": BASE},
    "allOf": [{"$ref": "#/$defs/base"}, {"properties": {"name": {"type": "string"}}}],
}


def _wire_valid(result: Any, value: Any) -> bool:
    return bool(jsonschema_rs.validator_for(result.validation_schema).is_valid(value))


@pytest.mark.parametrize("dialect", ALL)
@pytest.mark.parametrize(
    "schema, value",
    [
        (INHERITED, {"id": 1, "name": "x"}),
        (
            {"$defs": {"base": BASE}, "type": "object", "properties": {"p": INHERITED["allOf"]}},
            None,
        ),
    ],
    ids=["root", "property"],
)
def test_an_allof_member_with_only_properties_beside_a_ref_is_merged(
    dialect: str, schema: dict[str, Any], value: Any
) -> None:
    if value is None:  # one level down
        schema = {
            "$defs": {"base": BASE},
            "type": "object",
            "properties": {"p": {"allOf": INHERITED["allOf"]}},
            "required": ["p"],
        }
        value = {"p": {"id": 1, "name": "x"}}
        where = "/properties/p/allOf/1/properties/name"
    else:
        where = "/allOf/1/properties/name"
    result = translate(schema, dialect)
    obeys_rules(result)
    assert entry(result, where, "type").disposition == "enforced"
    round_trip(result, value)


@pytest.mark.parametrize("dialect", ALL)
def test_additional_properties_of_one_allof_member_applies_to_another_members_keys(
    dialect: str,
) -> None:
    schema = {
        "allOf": [
            {
                "type": "object",
                "properties": {"a": {"type": "integer"}},
                "additionalProperties": False,
            },
            {"properties": {"b": {"type": "string"}}},
        ]
    }
    result = translate(schema, dialect)
    obeys_rules(result)
    found = entry(result, "/allOf/1/properties/b", "type")
    assert "never valid" in found.reason
    try:
        sent = result.forward({"a": 1, "b": "x"})  # invalid under the original
    except NotRepresentableError:
        pass
    else:
        assert not _wire_valid(result, sent) or found.disposition == "checked_locally"
    round_trip(result, {"a": 1})


@pytest.mark.parametrize("dialect", ["gemini", "llama_cpp", "openai_compatible"])
def test_an_additional_properties_schema_applies_to_another_members_keys(dialect: str) -> None:
    schema = {
        "allOf": [
            {"type": "object", "additionalProperties": {"type": "integer"}},
            {"properties": {"n": {"type": "string"}}},
        ]
    }
    result = translate(schema, dialect)
    # "n" must be an integer and a string: the key can never be present
    assert not _wire_valid(result, {"n": "x"}) or (
        entry(result, "/allOf/1/properties/n", "type").disposition == "checked_locally"
    )
    merged = {
        "allOf": [
            {"type": "object", "additionalProperties": {"type": "integer"}},
            {"properties": {"n": {"type": ["string", "integer"]}}},
        ]
    }
    result = translate(merged, dialect)
    assert not _wire_valid(result, {"n": "x"})
    round_trip(result, {"n": 3, "m": 4})


def test_additional_properties_beside_another_members_patterns_is_checked_locally() -> None:
    schema = {
        "allOf": [
            {"type": "object", "additionalProperties": False},
            {"patternProperties": {"^x": {"type": "integer"}}},
        ]
    }
    for dialect in ("openai_strict", "gemini"):
        result = translate(schema, dialect)
        found = entry(result, "/allOf/0", "additionalProperties")
        assert found.disposition == "checked_locally", dialect


TUPLES = [
    {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}]},
    {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "array",
        "items": [{"type": "integer"}, {"type": "string"}],
    },
]


@pytest.mark.parametrize("dialect", ["llama_cpp", "ollama", "xai", "openai_strict", "anthropic"])
@pytest.mark.parametrize("tuple_schema", TUPLES, ids=["prefixItems", "draft7_items"])
def test_a_folded_tuple_keeps_the_items_after_the_positions(
    dialect: str, tuple_schema: dict[str, Any]
) -> None:
    schema = {
        "type": "object",
        "properties": {"t": {k: v for k, v in tuple_schema.items() if k != "$schema"}},
        "required": ["t"],
    }
    if "$schema" in tuple_schema:
        schema["$schema"] = tuple_schema["$schema"]
    result = translate(schema, dialect)
    obeys_rules(result)
    round_trip(result, {"t": [1, "a", True]})
    # a position's keywords hold for some item, not for that position: checked locally
    keyword = "prefixItems" if "prefixItems" in tuple_schema else "items"
    position = entry(result, f"/properties/t/{keyword}/0", "type")
    assert position.disposition == "checked_locally"


@pytest.mark.parametrize(
    "dialect, disposition",
    [
        ("openai_strict", "enforced"),
        ("groq", "enforced"),
        ("gemini_openapi", "enforced"),
        ("gemini", "enforced"),
        ("llama_cpp", "enforced"),
        ("anthropic", "checked_locally"),
        ("bedrock", "checked_locally"),
    ],
)
def test_items_false_is_max_items_zero_or_checked_locally(dialect: str, disposition: str) -> None:
    schema = {"type": "object", "properties": {"a": {"type": "array", "items": False}}}
    schema["required"] = ["a"]
    result = translate(schema, dialect)
    obeys_rules(result)
    assert entry(result, "/properties/a", "items").disposition == disposition
    if disposition == "enforced":
        assert not _wire_valid(result, result.forward({"a": []}) | {"a": [1]})
    round_trip(result, {"a": []})


STRING_CARRIED = [
    ({"type": "object", "properties": {"c": {"const": {"x": 1}}}, "required": ["c"]},
     "/properties/c", ("const",)),
    ({"type": "object"}, "", ("type",)),
    ({"type": "object", "additionalProperties": {}}, "", ("type",)),
    ({"type": "object", "properties": {"c": {"type": ["object", "array"]}}, "required": ["c"]},
     "/properties/c", ("type",)),
    ({"type": "object", "properties": {"c": {"enum": [{"a": 1}, "x"]}}, "required": ["c"]},
     "/properties/c", ("enum",)),
]  # fmt: skip


@pytest.mark.parametrize(
    "dialect", ["openai_strict", "groq", "anthropic", "bedrock", "gemini_openapi"]
)
@pytest.mark.parametrize("schema, where, keywords", STRING_CARRIED)
def test_a_value_written_as_a_json_string_is_checked_locally(
    dialect: str, schema: dict[str, Any], where: str, keywords: tuple[str, ...]
) -> None:
    result = translate(schema, dialect)
    obeys_rules(result)
    for keyword in keywords:
        assert entry(result, where, keyword).disposition == "checked_locally", keyword


@pytest.mark.parametrize("dialect", ["openai_strict", "anthropic", "bedrock"])
def test_a_json_string_branch_makes_the_other_string_branches_checked_locally(
    dialect: str,
) -> None:
    schema = {
        "type": "object",
        "properties": {"c": {"anyOf": [{"type": "string", "pattern": "^a+$"}, {"type": "object"}]}},
        "required": ["c"],
    }
    result = translate(schema, dialect)
    assert _wire_valid(result, {"c": "zzz"})  # the object branch is any string
    assert entry(result, "/properties/c/anyOf/0", "pattern").disposition == "checked_locally"
    round_trip(result, {"c": "aa"})
    round_trip(result, {"c": {"k": 1}})


@pytest.mark.parametrize(
    "dialect, disposition",
    [
        ("gemini", "checked_locally"),
        ("openai_compatible", "checked_locally"),
        ("openai_strict", "enforced"),
        ("anthropic", "enforced"),
        ("llama_cpp", "enforced"),
        ("xai", "enforced"),
    ],
)
def test_a_property_that_is_false_has_a_ledger_entry(dialect: str, disposition: str) -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}, "b": False}}
    result = translate(schema, dialect)
    found = entry(result, "/properties/b", "false")
    assert found.disposition == disposition
    if disposition == "enforced":
        assert "omission" in found.reason
        assert not _wire_valid(result, {"a": 1, "b": 1.5})
    round_trip(result, {"a": 1})


def _doubling(n: int) -> dict[str, Any]:
    """n definitions, each an object whose two properties refer to the next: 2^n copies."""
    defs: dict[str, Any] = {
        f"d{i}": {
            "type": "object",
            "properties": {"a": {"$ref": f"#/$defs/d{i + 1}"}, "b": {"$ref": f"#/$defs/d{i + 1}"}},
            "required": ["a", "b"],
        }
        for i in range(n)
    }
    defs[f"d{n}"] = {"type": "integer"}
    return {"$defs": defs, "$ref": "#/$defs/d0"}


@pytest.mark.parametrize("dialect", ["llama_cpp", "ollama", "gemini_openapi"])
def test_inlining_past_the_limit_is_refused_naming_the_ref(dialect: str) -> None:
    with pytest.raises(DialectError, match="limit on the inlined size") as raised:
        translate(_doubling(30), dialect)
    assert "where: schema at /$defs/d" in str(raised.value)
    assert "/properties/" in str(raised.value)
    translate(_doubling(6), dialect)  # small enough: translated
    assert translate(_doubling(30), "gemini").schema["$defs"]  # kept as references


def test_an_integer_too_long_for_json_text_is_a_schema_error_naming_it() -> None:
    with pytest.raises(SchemaError, match="digits") as raised:
        translate({"type": "integer", "maximum": 10**5000}, "gemini")
    assert "schema at /maximum" in str(raised.value)
