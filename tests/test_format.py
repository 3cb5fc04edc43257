"""ResponseFormat: text, any JSON object, or JSON matching a schema; and its dictionary form."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel
from typing_extensions import TypedDict

from outform import (
    JsonObjectFormat,
    JsonSchemaFormat,
    ResponseFormat,
    SchemaError,
    TextFormat,
    UnknownFormat,
)
from outform.format import sanitize_name

NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}


class Invoice(BaseModel):
    number: str
    total: float


@dataclasses.dataclass
class Point:
    x: int
    y: int


class Movie(TypedDict):
    title: str


# -- the variants ---------------------------------------------------------------------------


def test_the_three_variants_have_their_types() -> None:
    assert ResponseFormat.text() == TextFormat()
    assert ResponseFormat.json_object() == JsonObjectFormat()
    assert ResponseFormat.json_schema(SCHEMA).type == "json_schema"
    assert (TextFormat().type, JsonObjectFormat().type) == ("text", "json_object")


def test_a_json_schema_format_defaults_its_name_and_leaves_strict_unset() -> None:
    fmt = ResponseFormat.json_schema(SCHEMA)
    assert (fmt.name, fmt.strict, fmt.description) == ("response", None, None)


def test_a_json_schema_format_keeps_a_copy_of_the_schema() -> None:
    schema: dict[str, Any] = {"type": "object"}
    fmt = ResponseFormat.json_schema(schema)
    schema["type"] = "array"
    assert fmt.schema == {"type": "object"}


def test_a_json_schema_format_needs_a_mapping() -> None:
    with pytest.raises(SchemaError, match="must be an object, got list"):
        ResponseFormat.json_schema([{"type": "object"}])  # type: ignore[arg-type]


def test_formats_compare_by_value_and_ignore_extra_keys() -> None:
    a = ResponseFormat.json_schema(SCHEMA, name="a", strict=True)
    assert a == ResponseFormat.json_schema(dict(SCHEMA), name="a", strict=True)
    assert a != ResponseFormat.json_schema(SCHEMA, name="a", strict=False)
    assert TextFormat(extra={"verbosity": "low"}) == TextFormat()


# -- the dictionary form --------------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        {"type": "text"},
        {"type": "json_object"},
        {"type": "json_schema", "name": "invoice", "schema": SCHEMA},
        {
            "type": "json_schema",
            "name": "invoice",
            "schema": SCHEMA,
            "strict": True,
            "description": "An invoice.",
        },
    ],
)
def test_the_flat_dictionary_form_round_trips(data: dict[str, Any]) -> None:
    assert ResponseFormat.from_dict(data).to_dict() == data


def test_extra_keys_are_kept_verbatim_for_forwarding() -> None:
    data = {"type": "text", "verbosity": "low", "vendor": {"x": [1, 2]}}
    fmt = ResponseFormat.from_dict(data)
    assert isinstance(fmt, TextFormat)
    assert fmt.extra == {"verbosity": "low", "vendor": {"x": [1, 2]}}
    assert fmt.to_dict() == data


def test_extra_keys_of_a_json_schema_format_are_kept_verbatim() -> None:
    data = {"type": "json_schema", "name": "n", "schema": SCHEMA, "x-cache": {"ttl": 5}}
    fmt = ResponseFormat.from_dict(data)
    assert isinstance(fmt, JsonSchemaFormat)
    assert fmt.extra == {"x-cache": {"ttl": 5}}
    assert fmt.to_dict() == data


def test_an_unknown_type_is_kept_verbatim_not_rejected() -> None:
    data = {"type": "grammar", "syntax": "lark", "definition": "start: WORD"}
    fmt = ResponseFormat.from_dict(data)
    assert isinstance(fmt, UnknownFormat)
    assert fmt.type == "grammar"
    assert fmt.to_dict() == data


def test_a_name_read_from_the_dictionary_form_is_kept_as_sent() -> None:
    data = {"type": "json_schema", "name": "my schema", "schema": {}}
    assert ResponseFormat.from_dict(data).to_dict() == data


def test_a_known_key_with_a_value_of_the_wrong_type_is_not_silently_lost() -> None:
    """`"strict": "yes"` is either refused or forwarded as sent, never dropped."""
    data = {"type": "json_schema", "name": "n", "schema": {}, "strict": "yes", "description": 5}
    try:
        fmt = ResponseFormat.from_dict(data)
    except SchemaError:
        return
    assert fmt.to_dict() == data


@pytest.mark.parametrize("data", [{}, {"type": 1}, [{"type": "text"}]])
def test_a_dictionary_without_a_string_type_is_refused(data: Any) -> None:
    with pytest.raises(SchemaError, match="needs a string 'type'"):
        ResponseFormat.from_dict(data)


@pytest.mark.parametrize("schema", [None, [1], "object"])
def test_a_json_schema_dictionary_needs_a_schema_object(schema: Any) -> None:
    data: dict[str, Any] = {"type": "json_schema", "name": "n"}
    if schema is not None:
        data["schema"] = schema
    with pytest.raises(SchemaError) as caught:
        ResponseFormat.from_dict(data)
    assert caught.value.where == "text.format.schema"


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=10),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=100, deadline=None)
@given(
    kind=st.sampled_from(["text", "json_object", "json_schema", "grammar", "x-vendor"]),
    extra=st.dictionaries(
        st.text(max_size=10).filter(
            lambda key: key not in {"type", "name", "schema", "strict", "description"}
        ),
        _json,
        max_size=3,
    ),
)
def test_any_dictionary_form_with_extra_keys_round_trips(kind: str, extra: dict[str, Any]) -> None:
    data: dict[str, Any] = {"type": kind, **extra}
    if kind == "json_schema":
        data.update(name="n", schema={"type": "object"})
    assert ResponseFormat.from_dict(data).to_dict() == data


# -- formats derived from types -------------------------------------------------------------


def test_a_pydantic_model_gives_its_schema_name_and_type() -> None:
    fmt = ResponseFormat.of(Invoice)
    assert fmt.name == "Invoice"
    assert fmt.output_type is Invoice
    assert fmt.schema["properties"]["total"]["type"] == "number"
    assert fmt.schema["required"] == ["number", "total"]


def test_a_dataclass_gives_its_schema() -> None:
    fmt = ResponseFormat.of(Point)
    assert (fmt.name, fmt.schema["type"], sorted(fmt.schema["properties"])) == (
        "Point",
        "object",
        ["x", "y"],
    )


def test_a_typed_dict_gives_its_schema() -> None:
    fmt = ResponseFormat.of(Movie)
    assert (fmt.name, fmt.schema["required"]) == ("Movie", ["title"])


@pytest.mark.parametrize(
    ("output_type", "name", "schema"),
    [
        (list[int], "list_int", {"type": "array", "items": {"type": "integer"}}),
        (
            dict[str, list[int]],
            "dict_str_list_int",
            {
                "type": "object",
                "additionalProperties": {"type": "array", "items": {"type": "integer"}},
            },
        ),
        (int | None, "int_None", {"anyOf": [{"type": "integer"}, {"type": "null"}]}),
    ],
)
def test_a_generic_alias_gives_a_schema_and_a_valid_name(
    output_type: Any, name: str, schema: dict[str, Any]
) -> None:
    fmt = ResponseFormat.of(output_type)
    assert (fmt.name, fmt.schema) == (name, schema)
    assert NAME.fullmatch(fmt.name)


def test_a_name_given_with_a_type_wins() -> None:
    assert ResponseFormat.of(Point, name="point v2", strict=True).name == "point_v2"


def test_a_type_with_no_schema_is_a_schema_error() -> None:
    class Opaque:
        pass

    with pytest.raises(SchemaError, match="Opaque"):
        ResponseFormat.of(Opaque)


# -- names ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "sanitized"),
    [
        ("invoice", "invoice"),
        ("ok-name_1", "ok-name_1"),
        ("my schema!", "my_schema"),
        ("a.b.c", "a_b_c"),
        ("héllo wörld", "h_llo_w_rld"),
        ("", "response"),
        ("!!!", "response"),
        ("x" * 100, "x" * 64),
    ],
)
def test_a_name_is_sanitised_to_what_every_provider_accepts(name: str, sanitized: str) -> None:
    assert sanitize_name(name) == sanitized
    assert ResponseFormat.json_schema({}, name=name).name == sanitized


@settings(max_examples=200, deadline=None)
@given(name=st.text())
def test_any_name_is_sanitised_into_the_allowed_pattern(name: str) -> None:
    assert NAME.fullmatch(sanitize_name(name))


@settings(max_examples=100, deadline=None)
@given(name=st.from_regex(NAME, fullmatch=True))
def test_a_name_that_is_already_valid_is_kept(name: str) -> None:
    assert sanitize_name(name) == name


# -- the schema hash ------------------------------------------------------------------------


def test_the_schema_hash_ignores_key_order() -> None:
    reordered = {"required": ["a"], "properties": {"a": {"type": "integer"}}, "type": "object"}
    assert (
        ResponseFormat.json_schema(SCHEMA).schema_hash
        == ResponseFormat.json_schema(reordered).schema_hash
    )


def test_the_schema_hash_differs_for_different_schemas() -> None:
    other = {**SCHEMA, "required": []}
    assert ResponseFormat.json_schema(SCHEMA).schema_hash != (
        ResponseFormat.json_schema(other).schema_hash
    )


def test_the_schema_hash_is_a_sha256_hex_digest_independent_of_the_name() -> None:
    a = ResponseFormat.json_schema(SCHEMA, name="a").schema_hash
    assert re.fullmatch(r"[0-9a-f]{64}", a)
    assert a == ResponseFormat.json_schema(SCHEMA, name="b").schema_hash


@settings(max_examples=100, deadline=None)
@given(
    schema=st.dictionaries(
        st.sampled_from(["type", "title", "description", "minimum", "x-a", "x-b"]),
        st.text(max_size=5) | st.integers(0, 9),
        max_size=6,
    ),
    seed=st.randoms(use_true_random=False),
)
def test_the_schema_hash_is_stable_across_key_order(schema: dict[str, Any], seed: Any) -> None:
    keys = list(schema)
    seed.shuffle(keys)
    shuffled = {key: schema[key] for key in keys}
    assert (
        JsonSchemaFormat(name="n", schema=schema).schema_hash
        == JsonSchemaFormat(name="n", schema=shuffled).schema_hash
    )
