"""What each provider and model supports for structured output, and the mode `auto` picks.

A profile is data: per provider, a list of model-name patterns (globs, first match wins), each
with its `Capabilities`. The facts come from the providers' documentation (cited per
provider); where the reference marks a fact unverified, the profile takes the conservative
side and says so in `note`.

`choose_mode` walks the modes from the strongest guarantee to the weakest: the provider's
native schema mode, a forced tool with a strict schema, the native mode when it is only
guidance, JSON-object mode with the schema in the instructions (the issue's order), then a
forced tool whose schema is only guidance (for models with no JSON-object mode, such as older
Claude models, it beats instructions alone), and finally the instructions alone. It returns
the first mode that the model supports in the call's situation (thinking, streaming, other
tools, a caller's `strict=False`) and whose dialect can express the schema, with the reason for
it and for every mode it passed over.

Thinking is a provider-level fact (`ProviderProfile.thinking_refuses`: the modes the provider
refuses while the model thinks); `thinking_table()` renders it as the table of
docs/generate.md, and a test keeps the two equal.
"""

from __future__ import annotations

import dataclasses
import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from outform.errors import DialectError, UsageError
from outform.schema.dialects import DialectResult, translate

Mode = Literal["native_schema", "forced_tool", "json_object", "instructions"]
MODES: tuple[Mode, ...] = ("native_schema", "forced_tool", "json_object", "instructions")


@dataclass(frozen=True)
class Capabilities:
    """What one model supports. Dialects name entries of `outform.schema.dialects`."""

    json_object: bool = False
    """A JSON-object mode (any JSON object, no schema)."""
    native_dialect: str | None = None
    """The dialect of the native schema mode; None when the model has none."""
    native_enforced: bool = True
    """outform can count on the native schema constraining decoding (False: guidance only, or
    enforcement that depends on what outform cannot see, such as a server's version)."""
    native_strict: bool = True
    """The native mode asks for strict decoding (`strict: true` where the wire has the flag)."""
    loose_dialect: str | None = None
    """The dialect of the native mode sent with `strict: false`, for a caller's `strict=False`
    (None: the native mode has no such flag and always constrains decoding)."""
    tool_dialect: str | None = None
    """The dialect of strict tool definitions; None when tools cannot be strict."""
    tool_forcing: bool = False
    """The caller can force the model to call one named tool."""
    schema_with_streaming: bool = True
    """Structured output (native or tool) works in a streaming call."""
    schema_with_tools: bool = True
    """The native schema mode works while the model also has the caller's tools."""
    json_word: bool = False
    """JSON-object mode needs the word "json" in the input messages."""
    schema_in_prompt: bool = False
    """The provider does not show the schema to the model: describe it in the prompt too."""
    note: str = ""


@dataclass(frozen=True)
class ModelRule:
    patterns: tuple[str, ...]
    capabilities: Capabilities


@dataclass(frozen=True)
class ProviderProfile:
    name: str
    source: str
    models: tuple[ModelRule, ...]
    """Tried in order; the last one should match every model (`*`)."""
    thinking_refuses: frozenset[Mode] = frozenset()
    """The output modes this provider refuses while the model thinks."""
    thinking_source: str = "no conflict documented"
    """Why: the documented fact behind `thinking_refuses` (a column of the doc's table)."""

    def modes(self) -> tuple[Mode, ...]:
        """The output modes some model of this provider has, strongest first."""
        rules = [rule.capabilities for rule in self.models]
        have = {
            "native_schema": any(c.native_dialect for c in rules),
            "forced_tool": any(c.tool_forcing for c in rules),
            "json_object": any(c.json_object for c in rules),
            "instructions": True,
        }
        return tuple(mode for mode in MODES if have[mode])

    def lookup(self, model: str) -> tuple[Capabilities, str]:
        """The capabilities of a model and the pattern that matched it."""
        name = model.lower()
        for rule in self.models:
            for pattern in rule.patterns:
                if fnmatch.fnmatchcase(name, pattern):
                    return rule.capabilities, pattern
        return Capabilities(note="no pattern matched: instructions only"), ""


def _rule(*patterns: str, base: Capabilities, **changes: Any) -> ModelRule:
    return ModelRule(patterns, dataclasses.replace(base, **changes))


_OPENAI = Capabilities(
    json_object=True,
    native_dialect="openai_strict",
    loose_dialect="openai",
    tool_dialect="openai_strict",
    tool_forcing=True,
    json_word=True,
)
_ANTHROPIC = Capabilities(
    native_dialect="anthropic",
    tool_dialect="anthropic",
    tool_forcing=True,
)
_GEMINI = Capabilities(
    json_object=True,
    native_dialect="gemini",
    tool_dialect="gemini",
    tool_forcing=True,
    schema_with_tools=False,
    note="structured output with function tools only on Gemini 3",
)
_BEDROCK_CLAUDE = Capabilities(
    native_dialect="bedrock",
    tool_dialect="bedrock",
    tool_forcing=True,
)
_GRAMMAR = Capabilities(json_object=True, schema_in_prompt=True)
_COMPATIBLE = Capabilities(json_object=True, tool_forcing=True, schema_in_prompt=True)


def _compatible(dialect: str, *patterns: str, **changes: Any) -> ModelRule:
    """A rule of an OpenAI-compatible server with its own `response_format` json_schema
    dialect, which also goes out with `strict: false` (catch-all unless patterns are given)."""
    return _rule(
        *(patterns or ("*",)),
        base=_COMPATIBLE,
        native_dialect=dialect,
        loose_dialect=dialect,
        **changes,
    )


_FORCED_TOOL: frozenset[Mode] = frozenset({"forced_tool"})

PROFILES: dict[str, ProviderProfile] = {
    profile.name: profile
    for profile in (
        ProviderProfile(
            "openai",
            "platform.openai.com/docs/guides/structured-outputs",
            (
                _rule(
                    "gpt-4",
                    "gpt-4-0613",
                    "gpt-4-0314",
                    base=_OPENAI,
                    json_object=False,
                    native_dialect=None,
                    note="no JSON mode before gpt-4-1106; strict tools work",
                ),
                _rule(
                    "gpt-3.5-turbo*",
                    "gpt-4-turbo*",
                    "gpt-4-1106*",
                    "gpt-4-0125*",
                    "gpt-4o-2024-05-13",
                    base=_OPENAI,
                    native_dialect=None,
                    note="json_schema response format arrived with gpt-4o-2024-08-06",
                ),
                _rule("*", base=_OPENAI),
            ),
            thinking_source="no conflict between reasoning and structured outputs",
        ),
        ProviderProfile(
            "anthropic",
            "docs.anthropic.com/en/docs/build-with-claude/structured-outputs, /extended-thinking",
            (
                _rule(
                    "claude-fable*",
                    "claude-mythos*",
                    base=_ANTHROPIC,
                    tool_forcing=False,
                    note="refuses a forced tool_choice; JSON outputs support is conflicting "
                    "(Anthropic's structured-outputs and extended-thinking docs)",
                ),
                _rule(
                    "claude-opus-4-1*",
                    "claude-opus-4-5*",
                    "claude-opus-4-6*",
                    "claude-opus-4-7*",
                    "claude-opus-4-8*",
                    "claude-opus-5*",
                    "claude-sonnet-4-5*",
                    "claude-sonnet-4-6*",
                    "claude-sonnet-5*",
                    "claude-haiku-4-5*",
                    base=_ANTHROPIC,
                ),
                _rule(
                    "*",
                    base=_ANTHROPIC,
                    native_dialect=None,
                    tool_dialect=None,
                    note="no JSON outputs before Claude 4.5 (Opus 4.1 excepted): forced tool, "
                    "not strict",
                ),
            ),
            thinking_refuses=_FORCED_TOOL,
            thinking_source="extended thinking refuses a forced `tool_choice` (HTTP 400)",
        ),
        ProviderProfile(
            "gemini",
            "ai.google.dev/gemini-api/docs/structured-output",
            (
                _rule("gemini-3*", base=_GEMINI, schema_with_tools=True, note=""),
                _rule(
                    "gemini-2.0*",
                    "gemini-1.5*",
                    base=_GEMINI,
                    native_dialect="gemini_openapi",
                    note="responseSchema with propertyOrdering (Gemini 2.0 needs it)",
                ),
                _rule("*", base=_GEMINI),
            ),
            thinking_source="no conflict documented",
        ),
        ProviderProfile(
            "bedrock",
            "docs.aws.amazon.com/bedrock/latest/userguide/structured-output.html",
            (
                _rule(
                    "*claude-haiku-4-5*",
                    "*claude-sonnet-4-5*",
                    "*claude-sonnet-4-6*",
                    "*claude-opus-4-5*",
                    "*claude-opus-4-6*",
                    base=_BEDROCK_CLAUDE,
                ),
                _rule(
                    "*anthropic.claude*",
                    base=_BEDROCK_CLAUDE,
                    native_dialect=None,
                    tool_dialect=None,
                ),
                _rule("*amazon.nova*", base=Capabilities(tool_forcing=True)),
                _rule(
                    "*qwen3*",
                    "*mistral-large-3*",
                    "*ministral-3*",
                    "*magistral-small*",
                    "*gemma-3-12b*",
                    "*gemma-3-27b*",
                    "*minimax-m2*",
                    "*nemotron-nano*",
                    "*moonshot*",
                    "*kimi*",
                    base=Capabilities(native_dialect="bedrock"),
                ),
                _rule("*", base=Capabilities(note="Converse has no JSON-object mode")),
            ),
            thinking_refuses=_FORCED_TOOL,
            thinking_source="Claude with thinking refuses a forced `toolChoice`",
        ),
        ProviderProfile(
            "ollama",
            "ollama/ollama docs: structured outputs, thinking",
            (
                _rule(
                    "*-cloud",
                    "*:cloud",
                    base=_GRAMMAR,
                    native_dialect="ollama",
                    native_enforced=False,
                    native_strict=False,
                    note="Ollama Cloud accepts a schema without enforcing it",
                ),
                _rule("*", base=_GRAMMAR, native_dialect="ollama"),
            ),
            thinking_source="the server applies the format once the thinking ends",
        ),
        ProviderProfile(
            "llama_cpp",
            "llama.cpp tools/server/README.md",
            (
                _rule(
                    "*",
                    base=_GRAMMAR,
                    native_dialect="llama_cpp",
                    schema_with_tools=False,
                    note="a grammar and tools together were refused by older servers",
                ),
            ),
            thinking_source="no conflict documented (unverified)",
        ),
        ProviderProfile(
            "deepseek",
            "api-docs.deepseek.com/guides/json_mode",
            (
                _rule(
                    "deepseek-reasoner*",
                    "*r1*",
                    base=Capabilities(json_object=True, json_word=True),
                    note="reasoning models refuse tool_choice required",
                ),
                _rule(
                    "*",
                    base=Capabilities(json_object=True, json_word=True, tool_forcing=True),
                    note="no json_schema response format: JSON mode or a forced tool",
                ),
            ),
            thinking_refuses=_FORCED_TOOL,
            thinking_source="thinking models refuse `tool_choice: required`",
        ),
        ProviderProfile(
            "mistral",
            "docs.mistral.ai structured output (strict semantics undocumented)",
            (_compatible("mistral", json_word=True),),
            thinking_source="no conflict documented (unverified)",
        ),
        ProviderProfile(
            "groq",
            "console.groq.com/docs/structured-outputs",
            (
                _rule(
                    "openai/gpt-oss-*",
                    "gpt-oss-*",
                    base=_COMPATIBLE,
                    native_dialect="groq",
                    loose_dialect="openai",
                    schema_with_streaming=False,
                    schema_with_tools=False,
                    schema_in_prompt=False,
                    note="strict structured outputs; neither streaming nor tools with them",
                ),
                _rule(
                    "moonshotai/kimi-k2*",
                    "meta-llama/llama-4*",
                    "openai/gpt-oss-safeguard*",
                    base=_COMPATIBLE,
                    native_dialect="openai",
                    native_enforced=False,
                    native_strict=False,
                    loose_dialect="openai",
                    schema_with_streaming=False,
                    schema_with_tools=False,
                    note="best-effort structured outputs (strict: false)",
                ),
                _rule("*", base=_COMPATIBLE),
            ),
            thinking_source="no conflict documented (unverified)",
        ),
        ProviderProfile(
            "together",
            "docs.together.ai/docs/json-mode",
            (_compatible("together"),),
            thinking_source="documented to work with reasoning models",
        ),
        ProviderProfile(
            "fireworks",
            "docs.fireworks.ai/structured-responses/structured-response-formatting",
            (_compatible("fireworks"),),
            thinking_source="no conflict documented (unverified)",
        ),
        ProviderProfile(
            "xai",
            "docs.x.ai/developers/model-capabilities/text/structured-outputs",
            (
                _compatible("xai", "grok-4*", tool_dialect="xai", schema_in_prompt=False),
                _compatible(
                    "xai",
                    tool_dialect="xai",
                    schema_with_tools=False,
                    schema_in_prompt=False,
                    note="structured output with tools only on Grok 4 models",
                ),
            ),
            thinking_source="no conflict documented (unverified)",
        ),
        ProviderProfile(
            "vllm",
            "docs.vllm.ai/en/latest/features/structured_outputs",
            (
                _compatible(
                    "vllm",
                    native_enforced=False,
                    note="response_format json_schema is constrained by the server's structured-"
                    "output backend, which depends on its version and configuration",
                ),
            ),
            thinking_source="the constraint applies to the answer, after the reasoning",
        ),
    )
}


@dataclass(frozen=True)
class ModeChoice:
    """The mode `auto` picked for one call, and why."""

    provider: str
    model: str
    mode: Mode
    enforced: bool
    """Whether the provider constrains the reply to the schema in this mode."""
    dialect: str | None
    reason: str
    skipped: tuple[tuple[str, str], ...] = ()
    """(mode, why not) for every stronger mode that was passed over."""
    prompt: tuple[str, ...] = ()
    """What the prompt must contain for this mode to work."""
    matched: str = ""
    """The model pattern of the profile that matched."""
    translation: DialectResult | None = None
    """The schema translated for the chosen dialect (when a schema was given)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            "model": self.model,
            "mode": self.mode,
            "enforced": self.enforced,
            "dialect": self.dialect,
            "reason": self.reason,
            "skipped": [{"mode": mode, "why": why} for mode, why in self.skipped],
            "prompt": list(self.prompt),
            "matched": self.matched,
        }


def profile(provider: str) -> ProviderProfile:
    found = PROFILES.get(provider)
    if found is None:
        raise UsageError(
            f"unknown provider {provider!r}",
            where="provider",
            fix=f"use one of: {', '.join(PROFILES)}",
        )
    return found


def capabilities(provider: str, model: str) -> Capabilities:
    return profile(provider).lookup(model)[0]


@dataclass(frozen=True)
class _Call:
    """What `choose_mode` knows of one call."""

    model: str
    caps: Capabilities
    refused: frozenset[Mode]
    """Modes the provider refuses in this call because thinking is on."""
    streaming: bool
    tools: bool
    strict: bool | None


def choose_mode(
    provider: str,
    model: str,
    *,
    thinking: bool = False,
    streaming: bool = False,
    tools: bool = False,
    schema: Mapping[str, Any] | None = None,
    strict: bool | None = None,
) -> ModeChoice:
    """The strongest structured-output mode this model supports in this call.

    `thinking`, `streaming` and `tools` describe the call (reasoning on, a streamed reply, the
    caller's own tools offered). With a `schema`, a mode whose dialect cannot express it
    (recursion for Anthropic, say) is passed over too, and the translation is returned.
    `strict=False` (the caller's `ResponseFormat(strict=False)`) passes over every mode that
    would ask the provider to constrain decoding.
    """
    found = profile(provider)
    caps, matched = found.lookup(model)
    call = _Call(
        model, caps, found.thinking_refuses if thinking else frozenset(), streaming, tools, strict
    )
    skipped: list[tuple[str, str]] = []
    steps: list[tuple[Mode, bool, tuple[str | None, str | None]]] = [
        ("native_schema", True, _native(call, enforced=True)),
        ("forced_tool", True, _tool(call, strict=True)),
        ("native_schema", False, _native(call, enforced=False)),
    ]
    for mode, enforced, (dialect, blocker) in steps:
        label = f"{mode} ({'enforced' if enforced else 'guidance'})"
        if blocker is not None:
            skipped.append((label, blocker))
            continue
        translation = None
        if schema is not None and dialect is not None:
            try:
                translation = translate(schema, dialect)
            except DialectError as error:
                skipped.append(
                    (label, f"the {dialect} dialect cannot express the schema: {error.what}")
                )
                continue
        reason = (
            f"{model} supports {mode.replace('_', ' ')} "
            + (f"with the {dialect} dialect" if dialect else "without a strict schema")
            + _enforcement(call, mode, enforced)
        )
        prompt: tuple[str, ...] = (
            ("describe the schema in the prompt too",) if caps.schema_in_prompt else ()
        )
        return ModeChoice(
            provider,
            model,
            mode,
            enforced,
            dialect,
            reason,
            tuple(skipped),
            prompt,
            matched,
            translation,
        )
    json_blocker = _json(call)
    if json_blocker is None:
        prompt = ("put the schema in the instructions",)
        if caps.json_word:
            prompt += ("the input messages must contain the word 'json'",)
        return ModeChoice(
            provider,
            model,
            "json_object",
            False,
            None,
            f"{model} has a JSON-object mode; the schema goes in the instructions and outform "
            "validates the reply",
            tuple(skipped),
            prompt,
            matched,
        )
    skipped.append(("json_object", json_blocker))
    # A forced tool without a strict schema: the schema is guidance, but the reply is a JSON
    # object shaped by it, which beats instructions alone.
    _, blocker = _tool(call, strict=False)
    if blocker is None:
        return ModeChoice(
            provider,
            model,
            "forced_tool",
            False,
            None,
            f"{model} can be forced to call a tool; its schema is guidance, outform validates",
            tuple(skipped),
            ("describe the schema in the prompt too",) if caps.schema_in_prompt else (),
            matched,
        )
    skipped.append(("forced_tool (guidance)", blocker))
    return ModeChoice(
        provider,
        model,
        "instructions",
        False,
        None,
        "no structured-output mode fits: the schema goes in the instructions and outform "
        "extracts, repairs and validates the reply",
        tuple(skipped),
        ("put the schema in the instructions", "ask for a single JSON value"),
        matched,
    )


def _enforcement(call: _Call, mode: Mode, enforced: bool) -> str:
    if enforced:
        return "; the provider enforces the schema"
    if call.strict is False:
        return "; strict=False was asked: the schema is guidance, outform validates the reply"
    if mode == "native_schema" and call.caps.native_strict:
        return (
            "; the server is asked to enforce the schema, but whether it does depends on its "
            "version and backend, which outform cannot see: outform validates the reply"
        )
    return "; the schema is guidance"


def _native(call: _Call, *, enforced: bool) -> tuple[str | None, str | None]:
    """(dialect, None) when the native schema mode fits this step, else (None, why not)."""
    caps = call.caps
    if caps.native_dialect is None:
        return None, "no native schema mode"
    if "native_schema" in call.refused:
        return None, "the native schema mode is refused while thinking is on"
    dialect: str | None = caps.native_dialect
    if enforced:
        if not caps.native_enforced:
            return None, "the native schema mode is only guidance, or its enforcement unverifiable"
        if call.strict is False:
            return None, "strict=False was asked"
    elif caps.native_enforced:
        if call.strict is not False:
            return None, "the native schema mode is enforced (considered first)"
        if caps.loose_dialect is None:
            return None, "strict=False was asked, and this native mode always constrains decoding"
        dialect = caps.loose_dialect
    elif call.strict is False:
        dialect = caps.loose_dialect or caps.native_dialect
    if call.streaming and not caps.schema_with_streaming:
        return None, "structured output does not work with streaming"
    if call.tools and not caps.schema_with_tools:
        return None, "the native schema mode does not work together with tools"
    return dialect, None


def _tool(call: _Call, *, strict: bool) -> tuple[str | None, str | None]:
    """(dialect, None) when a forced tool fits (a strict one, or one whose schema is
    guidance), else (None, why not)."""
    caps = call.caps
    if not caps.tool_forcing:
        return None, "the model cannot be forced to call a tool"
    if strict and caps.tool_dialect is None:
        return None, "tools cannot be strict"
    if strict and call.strict is False:
        return None, "strict=False was asked"
    if "forced_tool" in call.refused:
        return None, "a forced tool is refused while thinking is on"
    if call.tools:
        return None, "forcing the output tool would stop the model from calling your tools"
    if call.streaming and not caps.schema_with_streaming:
        return None, "structured output does not work with streaming"
    return (caps.tool_dialect if strict else None), None


def _json(call: _Call) -> str | None:
    if not call.caps.json_object:
        return f"{call.model} has no JSON-object mode"
    if "json_object" in call.refused:
        return "JSON-object mode is refused while thinking is on"
    return None


__all__ = [
    "MODES",
    "PROFILES",
    "Capabilities",
    "ModeChoice",
    "ModelRule",
    "ProviderProfile",
    "capabilities",
    "choose_mode",
    "profile",
]
