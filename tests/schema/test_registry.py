"""The registry: names, aliases for the OpenAI-compatible families, unknown names."""

from __future__ import annotations

import pytest

from outform.errors import SchemaError
from outform.schema.dialects import DIALECTS, get, names, translate, vocabulary
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


@pytest.mark.parametrize("family", ["mistral", "fireworks", "together"])
def test_compatible_families_send_the_schema_and_claim_only_the_core(family: str) -> None:
    result = translate(SCHEMA, family)
    assert result.dialect == family
    assert result.schema["properties"]["word"] == {"type": "string", "maxLength": 5}
    assert entry(result, "/properties/word", "type").disposition == "enforced"
    assert entry(result, "/properties/word", "maxLength").disposition == "checked_locally"


@pytest.mark.parametrize("name", ["vllm", "sglang"])
def test_vllm_sends_the_schema_and_claims_no_enforcement(name: str) -> None:
    """Whether a vLLM or SGLang server constrains decoding depends on its version and backend,
    which the request cannot see: the ledger agrees with the profile and claims nothing."""
    result = translate(SCHEMA, name)
    assert result.schema["properties"]["word"] == {"type": "string", "maxLength": 5}
    assert result.ledger.counts()["enforced"] == 0


def test_openai_without_strict_enforces_nothing() -> None:
    result = translate(SCHEMA, "openai")
    assert result.schema["properties"]["word"] == {"type": "string", "maxLength": 5}
    assert result.ledger.counts()["enforced"] == 0


# -- one vocabulary: model prefixes name dialects too ---------------------------------------


def test_every_model_prefix_is_in_the_vocabulary_and_nothing_else() -> None:
    from outform.providers.registry import PROVIDERS

    assert set(vocabulary.PROVIDERS) == set(PROVIDERS), (
        "a model prefix of providers/registry.py needs its dialect in "
        "schema/dialects/vocabulary.py (None when the provider takes no schema)"
    )


@pytest.mark.parametrize("prefix", sorted(vocabulary.PROVIDERS))
def test_a_prefix_names_a_dialect_its_provider_uses(prefix: str) -> None:
    from outform.providers.profiles import profile
    from outform.providers.registry import PROVIDERS

    used = {
        rule.capabilities.native_dialect for rule in profile(PROVIDERS[prefix].profile_name).models
    }
    dialect = vocabulary.PROVIDERS[prefix]
    if dialect is None:
        assert used == {None}
        with pytest.raises(SchemaError, match="takes no schema on the wire"):
            get(prefix)
    else:
        assert dialect in used
        expected = DIALECTS.get(prefix, DIALECTS[dialect])  # a dialect name is read first
        assert get(prefix) is expected
        assert translate(SCHEMA, prefix).dialect == expected.name


@pytest.mark.parametrize(("prefix", "dialect"), [("llamacpp", "llama_cpp"), ("sglang", "vllm")])
def test_the_local_servers_prefixes_translate_like_their_dialects(
    prefix: str, dialect: str
) -> None:
    assert translate(SCHEMA, prefix).schema == translate(SCHEMA, dialect).schema
