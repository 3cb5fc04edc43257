"""Regular expressions from schemas run on the validator's linear-time engine (issue 9)."""

from __future__ import annotations

import re
from typing import Any

import pytest

import outform
from outform import SchemaError
from outform.schema import patterns
from outform.schema.dialects import translate

CATASTROPHIC = "^(a+)+$"
HOSTILE_KEY = "a" * 29 + "!"  # Python's re backtracks 2**29 times on this key


def keyed(pattern: str, **extra: Any) -> dict[str, Any]:
    return {"type": "object", "patternProperties": {pattern: {"type": "integer"}}, **extra}


def test_a_schema_pattern_matches_as_json_schema_says_anywhere_in_the_text() -> None:
    assert patterns.search("b+", "abbc")
    assert not patterns.search("^b", "abbc")


def test_the_ecma_syntax_of_json_schema_is_understood() -> None:
    """`\\p{Lu}` is ECMA 262 (the dialect of JSON Schema) and is not Python's: the match is made
    by the validator's engine, not by `re`."""
    with pytest.raises(re.error):
        re.compile(r"^\p{Lu}")
    assert patterns.search(r"^\p{Lu}", "Éclair")
    assert not patterns.search(r"^\p{Lu}", "éclair")


def test_a_pattern_the_engine_cannot_compile_is_a_schema_error() -> None:
    with pytest.raises(SchemaError, match="cannot be compiled"):
        patterns.search("((", "x")


def test_a_catastrophic_pattern_on_a_hostile_key_is_answered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Coercion looks up the key's schema through patternProperties: the answer comes from the
    linear engine (no call reaches Python's re with the schema's pattern)."""
    seen: list[str] = []
    real = re.compile

    def spy(pattern: Any, flags: int = 0) -> Any:
        seen.append(str(pattern))
        return real(pattern, flags)

    monkeypatch.setattr(re, "compile", spy)
    schema = keyed(CATASTROPHIC, additionalProperties={"type": "string"})
    result = outform.parse(f'{{"{HOSTILE_KEY}": 5, "aaa": "7"}}', schema)
    assert result.value == {HOSTILE_KEY: "5", "aaa": 7}
    assert CATASTROPHIC not in seen


def test_the_dialect_translator_matches_required_names_on_the_linear_engine() -> None:
    schema = keyed(CATASTROPHIC, required=["aaa", HOSTILE_KEY])
    properties = translate(schema, "gemini").schema["properties"]
    assert properties == {"aaa": {"type": "integer"}, HOSTILE_KEY: {}}


# -- \p{...} and the other ECMA readings, everywhere a schema's pattern is read --------------


def test_a_unicode_property_class_validates_replies() -> None:
    schema = {"type": "object", "properties": {"name": {"type": "string", "pattern": r"^\p{L}+$"}}}
    assert outform.parse('{"name": "Zoë"}', schema).value == {"name": "Zoë"}
    with pytest.raises(outform.OutputError):
        outform.parse('{"name": "Z1"}', schema)


@pytest.mark.parametrize(
    ("pattern", "name"),
    [
        (r"^\d$", "٣"),  # Python's \d matches an Arabic-Indic digit; ECMA's only 0-9
        (r"^a$", "a\n"),  # Python's $ matches before a final newline; ECMA's does not
    ],
)
def test_a_valid_schema_is_not_proved_empty_by_pythons_reading_of_a_pattern(
    pattern: str, name: str
) -> None:
    """The required name does not match the pattern, as the validator reads it, so `false`
    under the pattern does not apply to it: the schema accepts `{name: 1}`."""
    schema = {"type": "object", "required": [name], "patternProperties": {pattern: False}}
    assert outform.parse(orjson_dumps({name: 1}), schema).value == {name: 1}


def test_a_schema_proved_empty_through_a_unicode_class_says_where() -> None:
    """`1` is no letter: under `additionalProperties: false` the required key cannot exist."""
    schema = {
        "type": "object",
        "required": ["1"],
        "patternProperties": {r"^\p{L}+$": {}},
        "additionalProperties": False,
    }
    with pytest.raises(SchemaError, match="the required property '1' accepts no value") as caught:
        outform.parse("{}", schema)
    assert caught.value.where == "schema at /"


def test_a_pattern_the_validator_cannot_compile_is_named_at_its_place() -> None:
    schema = {"type": "object", "required": ["a"], "patternProperties": {r"\p{Nope}": False}}
    with pytest.raises(SchemaError, match="cannot be compiled") as caught:
        translate(schema, "gemini")
    assert caught.value.where == r"schema at /patternProperties/\p{Nope}"


@pytest.mark.parametrize(
    ("dialect", "disposition"),
    [("llama_cpp", "checked_locally"), ("ollama", "checked_locally"), ("xai", "checked_locally")],
)
def test_a_dialect_without_unicode_classes_checks_the_pattern_locally(
    dialect: str, disposition: str
) -> None:
    schema = {"type": "object", "properties": {"n": {"type": "string", "pattern": r"^\p{L}+$"}}}
    result = translate(schema, dialect)
    found = result.ledger.get("/properties/n", "pattern")
    assert found is not None and found.disposition == disposition
    assert "pattern" not in result.schema["properties"]["n"]


def orjson_dumps(value: Any) -> str:
    import orjson

    return orjson.dumps(value).decode()
