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
