"""Decide, before a call, how the output will be enforced: the plan of one generate() call.

Input: the response format, the provider and model, the requested mode and thinking settings.
Output: the mechanism on the wire (`NativeSchema`, `ForcedTool`, `JsonObject`, `FreeText`),
the schema translated into the provider's dialect (and the ledger saying what the provider
enforces), the instructions to add to the conversation, and what happened to thinking.

Modes: `auto` asks the provider profile for the strongest mode the model supports in this call
(native schema, then a strict forced tool, then JSON-object mode with the schema in the
instructions, then instructions alone). `native`, `tool`, `json` and `prompted` force one, and
fail before any request when the model cannot do it.

The thinking rule: a provider that refuses a forced tool while thinking (Claude) gets the
native schema mode instead when it has one ("switched"), otherwise thinking is turned off
("disabled"); either way the plan records it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

import orjson

from outform.errors import UsageError
from outform.format import JsonObjectFormat, JsonSchemaFormat, ResponseFormat, TextFormat
from outform.providers.base import (
    ForcedTool,
    FreeText,
    JsonObject,
    NativeSchema,
    Output,
    Thinking,
)
from outform.providers.profiles import Capabilities, ModeChoice, capabilities, choose_mode
from outform.schema.dialects import DialectResult, translate

Mode = Literal["auto", "native", "tool", "json", "prompted"]
MODES: tuple[Mode, ...] = ("auto", "native", "tool", "json", "prompted")
_PROFILE_MODE = {
    "native": "native_schema",
    "tool": "forced_tool",
    "json": "json_object",
    "prompted": "instructions",
}


@dataclass(frozen=True)
class Plan:
    mode: str
    """native_schema, forced_tool, json_object, instructions, or text."""
    output: Output
    reason: str
    instructions: str | None = None
    """A system message to add: the schema, for modes where the wire does not carry it."""
    translation: DialectResult | None = None
    thinking: Thinking | None = None
    thinking_note: str = ""
    """Empty when thinking was left as asked; else how the thinking rule changed it."""
    choice: ModeChoice | None = None

    @property
    def enforced(self) -> bool:
        return self.choice.enforced if self.choice is not None else self.mode == "native_schema"


def plan(
    fmt: ResponseFormat,
    *,
    provider: str,
    model: str,
    mode: Mode = "auto",
    thinking: Thinking | None = None,
    tools: bool = False,
    streaming: bool = False,
) -> Plan:
    """The plan of a call; UsageError or DialectError (before any request) when it cannot be
    carried out as asked."""
    if mode not in MODES:
        raise UsageError(
            f"unknown mode {mode!r}", where="mode", fix=f"use one of: {', '.join(MODES)}"
        )
    if isinstance(fmt, TextFormat):
        return Plan("text", FreeText(), "free text was asked for", thinking=thinking)
    caps = capabilities(provider, model)
    thinking_on = bool(thinking and thinking.enabled)
    if isinstance(fmt, JsonObjectFormat):
        return _plan_json_object(caps, model, thinking)
    if not isinstance(fmt, JsonSchemaFormat):
        raise UsageError(f"outform cannot plan a call for response format type {fmt.type!r}")
    if mode == "auto":
        choice = choose_mode(
            provider,
            model,
            thinking=thinking_on,
            streaming=streaming,
            tools=tools,
            schema=fmt.schema,
        )
    else:
        choice = _forced_choice(provider, model, caps, mode, fmt)
    thinking_note = ""
    if choice.mode == "forced_tool" and thinking_on and not caps.forcing_with_thinking:
        if caps.native_dialect is not None:
            native = _forced_choice(provider, model, caps, "native", fmt)
            thinking_note = (
                f"switched from a forced tool to the native schema mode: {model} refuses a "
                "forced tool while thinking"
            )
            choice = native
        else:
            thinking = replace(thinking, enabled=False) if thinking else None
            thinking_note = f"thinking turned off: {model} refuses a forced tool while thinking"
    return _plan_from_choice(fmt, caps, choice, thinking, thinking_note)


def _forced_choice(
    provider: str, model: str, caps: Capabilities, mode: Mode, fmt: JsonSchemaFormat
) -> ModeChoice:
    wanted = _PROFILE_MODE[mode]
    dialect: str | None = None
    if wanted == "native_schema":
        dialect = caps.native_dialect
        if dialect is None:
            raise UsageError(
                f"{model} has no native schema mode",
                where="mode='native'",
                fix="use mode='auto', or 'tool', 'json' or 'prompted'",
            )
    elif wanted == "forced_tool":
        if not caps.tool_forcing:
            raise UsageError(
                f"{model} cannot be forced to call a tool",
                where="mode='tool'",
                fix="use mode='auto', or 'native', 'json' or 'prompted'",
            )
        dialect = caps.tool_dialect
    elif wanted == "json_object" and not caps.json_object:
        raise UsageError(
            f"{model} has no JSON-object mode",
            where="mode='json'",
            fix="use mode='auto', or 'native', 'tool' or 'prompted'",
        )
    translation = translate(fmt.schema, dialect) if dialect is not None else None
    native = wanted == "native_schema" and caps.native_enforced
    enforced = native or (wanted == "forced_tool" and dialect is not None)
    return ModeChoice(
        provider,
        model,
        wanted,  # type: ignore[arg-type]
        enforced,
        dialect,
        f"mode={mode!r} was asked for",
        translation=translation,
    )


def _plan_from_choice(
    fmt: JsonSchemaFormat,
    caps: Capabilities,
    choice: ModeChoice,
    thinking: Thinking | None,
    thinking_note: str,
) -> Plan:
    translation = choice.translation
    wire_schema: Any = translation.schema if translation is not None else fmt.schema
    instructions = schema_instructions(fmt) if caps.schema_in_prompt else None
    output: Output
    if choice.mode == "native_schema":
        output = NativeSchema(
            fmt.name, wire_schema, strict=_strict(choice), description=fmt.description
        )
    elif choice.mode == "forced_tool":
        output = ForcedTool(
            fmt.name,
            wire_schema,
            strict=_strict(choice),
            description=fmt.description or f"Record the answer as {fmt.name}.",
        )
    elif choice.mode == "json_object":
        output, instructions = JsonObject(), schema_instructions(fmt)
    else:
        output, instructions = FreeText(), schema_instructions(fmt)
    return Plan(
        choice.mode,
        output,
        choice.reason,
        instructions,
        translation if choice.mode in ("native_schema", "forced_tool") else None,
        thinking,
        thinking_note,
        choice,
    )


def _strict(choice: ModeChoice) -> bool:
    """The strict flag on the wire: whether the provider constrains decoding to the schema.
    Adapters of APIs without such a flag leave it out."""
    return choice.enforced


def _plan_json_object(caps: Capabilities, model: str, thinking: Thinking | None) -> Plan:
    text = "Respond with a single JSON object, with no prose and no Markdown fences."
    if caps.json_object:
        return Plan(
            "json_object", JsonObject(), f"{model} has a JSON-object mode", text, thinking=thinking
        )
    return Plan(
        "instructions", FreeText(), f"{model} has no JSON-object mode", text, thinking=thinking
    )


def schema_instructions(fmt: JsonSchemaFormat) -> str:
    """The instructions that carry the schema when the wire does not (and the word "JSON",
    which OpenAI's JSON-object mode requires in the input)."""
    schema = orjson.dumps(fmt.schema).decode()
    about = f" ({fmt.description})" if fmt.description else ""
    return (
        f"Respond with a single JSON value{about}, with no prose and no Markdown fences, that "
        f"matches this JSON Schema:\n{schema}"
    )
