"""The registry: names, aliases for the OpenAI-compatible families, unknown names."""

from __future__ import annotations

import pytest

from outform.errors import SchemaError
from outform.schema.dialects import DIALECTS, get, names, translate
from tests.schema.helpers import entry

SCHEMA = {
    "type": "object",
    "properties": {"word": {"type": "string", "maxLength": 5}},
    "required": ["word"],
}


def test_every_issue_dialect_is_registered() -> None:
    expected = {
        "openai_strict",
        "openai",
        "anthropic",
        "bedrock",
        "gemini",
        "gemini_openapi",
        "ollama",
        "llama_cpp",
        "xai",
        "groq",
        "mistral",
        "fireworks",
        "together",
        "vllm",
    }
    assert expected <= set(names())
    assert all(DIALECTS[name].name == name for name in names())


def test_an_unknown_dialect_lists_the_known_ones() -> None:
    with pytest.raises(SchemaError) as caught:
        get("gemni")
    assert caught.value.fix is not None
    assert "gemini" in caught.value.fix and "openai_strict" in caught.value.fix


def test_groq_follows_openai_strict_rules() -> None:
    groq = translate(SCHEMA, "groq")
    assert groq.dialect == "groq"
    assert groq.schema == translate(SCHEMA, "openai_strict").schema


@pytest.mark.parametrize("family", ["mistral", "fireworks", "together", "vllm"])
def test_compatible_families_send_the_schema_and_claim_only_the_core(family: str) -> None:
    result = translate(SCHEMA, family)
    assert result.dialect == family
    assert result.schema["properties"]["word"] == {"type": "string", "maxLength": 5}
    assert entry(result, "/properties/word", "type").disposition == "enforced"
    assert entry(result, "/properties/word", "maxLength").disposition == "checked_locally"


def test_openai_without_strict_enforces_nothing() -> None:
    result = translate(SCHEMA, "openai")
    assert result.schema["properties"]["word"] == {"type": "string", "maxLength": 5}
    assert result.ledger.counts()["enforced"] == 0
