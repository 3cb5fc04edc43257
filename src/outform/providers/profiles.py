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
tools) and whose dialect can express the schema, with the reason for it and for every mode it
passed over.
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


@dataclass(frozen=True)
class Capabilities:
    """What one model supports. Dialects name entries of `outform.schema.dialects`."""

    json_object: bool = False
    """A JSON-object mode (any JSON object, no schema)."""
    native_dialect: str | None = None
    """The dialect of the native schema mode; None when the model has none."""
    native_enforced: bool = True
    """The native schema constrains decoding (False: the schema is only guidance)."""
    tool_dialect: str | None = None
    """The dialect of strict tool definitions; None when tools cannot be strict."""
    tool_forcing: bool = False
    """The caller can force the model to call one named tool."""
    forcing_with_thinking: bool = True
    """Forcing a tool still works with thinking / reasoning on."""
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
    tool_dialect="openai_strict",
    tool_forcing=True,
    json_word=True,
)
_ANTHROPIC = Capabilities(
    native_dialect="anthropic",
    tool_dialect="anthropic",
    tool_forcing=True,
    forcing_with_thinking=False,
    note="extended thinking refuses a forced tool_choice",
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
    forcing_with_thinking=False,
    note="Claude with thinking refuses a forced toolChoice",
)
_GRAMMAR = Capabilities(json_object=True, schema_in_prompt=True)
_COMPATIBLE = Capabilities(json_object=True, tool_forcing=True, schema_in_prompt=True)

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
                    "not strict; thinking refuses forcing",
                ),
            ),
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
                    note="Ollama Cloud accepts a schema without enforcing it",
                ),
                _rule("*", base=_GRAMMAR, native_dialect="ollama"),
            ),
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
                    base=Capabilities(
                        json_object=True,
                        json_word=True,
                        tool_forcing=True,
                        forcing_with_thinking=False,
                    ),
                    note="no json_schema response format: JSON mode or a forced tool",
                ),
            ),
        ),
        ProviderProfile(
            "mistral",
            "docs.mistral.ai structured output (strict semantics undocumented)",
            (_rule("*", base=_COMPATIBLE, native_dialect="mistral", json_word=True),),
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
                    schema_with_streaming=False,
                    schema_with_tools=False,
                    note="best-effort structured outputs (strict: false)",
                ),
                _rule("*", base=_COMPATIBLE),
            ),
        ),
        ProviderProfile(
            "together",
            "docs.together.ai/docs/json-mode",
            (_rule("*", base=_COMPATIBLE, native_dialect="together"),),
        ),
        ProviderProfile(
            "fireworks",
            "docs.fireworks.ai/structured-responses/structured-response-formatting",
            (_rule("*", base=_COMPATIBLE, native_dialect="fireworks"),),
        ),
        ProviderProfile(
            "xai",
            "docs.x.ai/developers/model-capabilities/text/structured-outputs",
            (
                _rule(
                    "grok-4*",
                    base=_COMPATIBLE,
                    native_dialect="xai",
                    tool_dialect="xai",
                    schema_in_prompt=False,
                ),
                _rule(
                    "*",
                    base=_COMPATIBLE,
                    native_dialect="xai",
                    tool_dialect="xai",
                    schema_with_tools=False,
                    schema_in_prompt=False,
                    note="structured output with tools only on Grok 4 models",
                ),
            ),
        ),
        ProviderProfile(
            "vllm",
            "docs.vllm.ai/en/latest/features/structured_outputs",
            (_rule("*", base=_COMPATIBLE, native_dialect="vllm"),),
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


def choose_mode(
    provider: str,
    model: str,
    *,
    thinking: bool = False,
    streaming: bool = False,
    tools: bool = False,
    schema: Mapping[str, Any] | None = None,
) -> ModeChoice:
    """The strongest structured-output mode this model supports in this call.

    `thinking`, `streaming` and `tools` describe the call (reasoning on, a streamed reply, the
    caller's own tools offered). With a `schema`, a mode whose dialect cannot express it
    (recursion for Anthropic, say) is passed over too, and the translation is returned.
    """
    caps, matched = profile(provider).lookup(model)
    skipped: list[tuple[str, str]] = []
    steps: list[tuple[Mode, bool, str | None, str | None]] = [
        ("native_schema", True, caps.native_dialect, _native_blocker(caps, True, streaming, tools)),
        (
            "forced_tool",
            True,
            caps.tool_dialect,
            _tool_blocker(caps, True, thinking, streaming, tools),
        ),
        (
            "native_schema",
            False,
            caps.native_dialect,
            _native_blocker(caps, False, streaming, tools),
        ),
    ]
    for mode, enforced, dialect, blocker in steps:
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
            + ("; the provider enforces the schema" if enforced else "; the schema is guidance")
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
    if caps.json_object:
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
    skipped.append(("json_object", f"{model} has no JSON-object mode"))
    # A forced tool without a strict schema: the schema is guidance, but the reply is a JSON
    # object shaped by it, which beats instructions alone.
    blocker = _tool_blocker(caps, False, thinking, streaming, tools)
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


def _native_blocker(caps: Capabilities, enforced: bool, streaming: bool, tools: bool) -> str | None:
    if caps.native_dialect is None:
        return "no native schema mode"
    if caps.native_enforced != enforced:
        return (
            "the native schema mode is only guidance"
            if enforced
            else "the native schema mode is enforced (considered first)"
        )
    if streaming and not caps.schema_with_streaming:
        return "structured output does not work with streaming"
    if tools and not caps.schema_with_tools:
        return "the native schema mode does not work together with tools"
    return None


def _tool_blocker(
    caps: Capabilities, strict: bool, thinking: bool, streaming: bool, tools: bool
) -> str | None:
    if not caps.tool_forcing:
        return "the model cannot be forced to call a tool"
    if strict and caps.tool_dialect is None:
        return "tools cannot be strict"
    if thinking and not caps.forcing_with_thinking:
        return "a forced tool is refused while thinking is on"
    if tools:
        return "forcing the output tool would stop the model from calling your tools"
    if streaming and not caps.schema_with_streaming:
        return "structured output does not work with streaming"
    return None


__all__ = [
    "PROFILES",
    "Capabilities",
    "ModeChoice",
    "ModelRule",
    "ProviderProfile",
    "capabilities",
    "choose_mode",
    "profile",
]
