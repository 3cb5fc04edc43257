"""Provider profiles and the mode `auto` picks (facts from the providers' documentation)."""

from __future__ import annotations

import pytest

from outform.errors import UsageError
from outform.providers import PROFILES, capabilities, choose_mode
from outform.schema.dialects import names

RECURSIVE = {"type": "object", "properties": {"next": {"$ref": "#"}}}


def test_openai_current_models_get_the_native_strict_schema() -> None:
    choice = choose_mode("openai", "gpt-5.2")
    assert (choice.mode, choice.enforced, choice.dialect) == (
        "native_schema",
        True,
        "openai_strict",
    )
    assert choice.skipped == ()


def test_older_openai_models_fall_back_to_a_strict_forced_tool() -> None:
    choice = choose_mode("openai", "gpt-4-turbo-2024-04-09")
    assert (choice.mode, choice.enforced, choice.dialect) == ("forced_tool", True, "openai_strict")
    assert choice.skipped[0] == ("native_schema (enforced)", "no native schema mode")


def test_json_mode_records_the_word_json_requirement() -> None:
    choice = choose_mode("deepseek", "deepseek-chat", tools=True)
    assert choice.mode == "json_object"
    assert "the input messages must contain the word 'json'" in choice.prompt


def test_claude_with_thinking_uses_native_output_not_a_forced_tool() -> None:
    assert choose_mode("anthropic", "claude-sonnet-4-5", thinking=True).mode == "native_schema"
    older = choose_mode("anthropic", "claude-3-5-sonnet-20241022", thinking=True)
    assert older.mode == "instructions"
    assert (
        "forced_tool (guidance)",
        "a forced tool is refused while thinking is on",
    ) in older.skipped
    assert choose_mode("anthropic", "claude-3-5-sonnet-20241022").mode == "forced_tool"


def test_a_schema_the_dialect_cannot_express_moves_auto_to_the_next_mode() -> None:
    choice = choose_mode("anthropic", "claude-opus-4-6", schema=RECURSIVE)
    assert (choice.mode, choice.enforced) == ("forced_tool", False)
    assert "recursive" in choice.skipped[0][1]
    native = choose_mode("openai", "gpt-4.1", schema=RECURSIVE)
    assert native.translation is not None
    assert native.translation.dialect == "openai_strict"


def test_groq_structured_outputs_do_not_stream() -> None:
    assert choose_mode("groq", "openai/gpt-oss-120b").dialect == "groq"
    streamed = choose_mode("groq", "openai/gpt-oss-120b", streaming=True)
    assert streamed.mode == "json_object"
    assert (
        "native_schema (enforced)",
        "structured output does not work with streaming",
    ) in streamed.skipped


def test_gemini_schema_and_tools_together_only_on_gemini_3() -> None:
    assert choose_mode("gemini", "gemini-2.5-flash", tools=True).mode == "json_object"
    assert choose_mode("gemini", "gemini-3-pro-preview", tools=True).mode == "native_schema"
    assert choose_mode("gemini", "gemini-2.0-flash").dialect == "gemini_openapi"


def test_ollama_cloud_takes_the_schema_only_as_guidance() -> None:
    local = choose_mode("ollama", "qwen3:8b")
    cloud = choose_mode("ollama", "gpt-oss:120b-cloud")
    assert (local.mode, local.enforced) == ("native_schema", True)
    assert (cloud.mode, cloud.enforced) == ("native_schema", False)
    assert "describe the schema in the prompt too" in local.prompt


def test_bedrock_has_no_json_mode() -> None:
    assert choose_mode("bedrock", "anthropic.claude-sonnet-4-5-20250929-v1:0").dialect == "bedrock"
    assert choose_mode("bedrock", "meta.llama3-70b-instruct-v1:0").mode == "instructions"


def test_every_profile_names_known_dialects_and_ends_with_a_catch_all() -> None:
    for profile in PROFILES.values():
        assert profile.models[-1].patterns == ("*",), profile.name
        for rule in profile.models:
            caps = rule.capabilities
            for dialect in (caps.native_dialect, caps.tool_dialect):
                assert dialect is None or dialect in names(), (profile.name, dialect)
        assert capabilities(profile.name, "some-future-model") == profile.models[-1].capabilities


def test_an_unknown_provider_is_a_usage_error() -> None:
    with pytest.raises(UsageError) as caught:
        choose_mode("openia", "gpt-5")
    assert caught.value.fix is not None and "openai" in caught.value.fix


def test_a_choice_serialises_with_its_reasons() -> None:
    data = choose_mode("xai", "grok-3", tools=True).to_dict()
    assert data["mode"] == "json_object"
    assert {
        "mode": "native_schema (enforced)",
        "why": "the native schema mode does not work together with tools",
    } in data["skipped"]
