"""Decide, before a call, how the output will be enforced: the plan of one generate() call.

Input: the response format, the provider and model, the requested mode and thinking settings.
Output: the mechanism on the wire (`NativeSchema`, `ForcedTool`, `JsonObject`, `FreeText`),
the schema translated into the provider's dialect (and the ledger saying what the provider
enforces), the instructions to add to the conversation, and what happened to thinking.

Modes: `auto` asks the provider profile for the strongest mode the model supports in this call
(native schema, then a strict forced tool, then JSON-object mode with the schema in the
instructions, then instructions alone). `native`, `tool`, `json` and `prompted` force one, and
fail before any request when the model cannot do it. `off` sends nothing about the schema (the
caller's prompt carries it); the reply is still validated.

Strict: the format's `strict` is the caller's. Unset (or True), the plan asks for strict
decoding wherever the mode has it; `strict=False` asks for none: the strict flag goes out
false, the schema in the provider's plain (not strict) dialect, a native mode that always
constrains decoding is passed over (or refused when asked for), and the ledger lists every
keyword as checked by outform.

The thinking rule (one table, `profiles.ProviderProfile.thinking_refuses`, rendered into
docs/generate.md by `thinking_table`): thinking is kept as asked. `auto` passes over the modes
the provider refuses while thinking and says in the reason which mode it switched from; an
explicit mode the provider refuses while thinking is kept, and thinking is turned off.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

import orjson

from outform.errors import SchemaError, UsageError
from outform.format import JsonObjectFormat, JsonSchemaFormat, ResponseFormat, TextFormat
from outform.providers.base import (
    ForcedTool,
    FreeText,
    JsonObject,
    NativeSchema,
    Output,
    SchemaForm,
    Thinking,
)
from outform.providers.profiles import (
    PROFILES,
    Capabilities,
    ModeChoice,
    ProviderProfile,
    choose_mode,
    profile,
)
from outform.providers.profiles import Mode as ProfileMode
from outform.schema import compact
from outform.schema.dialects import DialectResult, translate
from outform.schema.ledger import Ledger

Mode = Literal["auto", "native", "tool", "json", "prompted", "off"]
MODES: tuple[Mode, ...] = ("auto", "native", "tool", "json", "prompted", "off")
_PROFILE_MODE: dict[Mode, ProfileMode] = {
    "native": "native_schema",
    "tool": "forced_tool",
    "json": "json_object",
    "prompted": "instructions",
}
_ASKED = {profile_mode: mode for mode, profile_mode in _PROFILE_MODE.items()}
_SAID: dict[ProfileMode, str] = {
    "native_schema": "the native schema mode",
    "forced_tool": "a forced tool",
    "json_object": "JSON-object mode",
    "instructions": "instructions",
}


@dataclass(frozen=True)
class Plan:
    mode: str
    """native_schema, forced_tool, json_object, instructions, unconstrained (mode='off': the
    reply is only validated), or text."""
    output: Output
    reason: str
    instructions: str | None = None
    """A system message to add: the schema, for modes where the wire does not carry it."""
    translation: DialectResult | None = None
    thinking: Thinking | None = None
    thinking_note: str = ""
    """Empty when thinking and the mode were left as they would be; else what the thinking
    rule switched (a mode passed over, or thinking turned off)."""
    choice: ModeChoice | None = None
    ledger: Ledger | None = None
    """Per keyword of the caller's schema: enforced by the provider, or checked by outform.
    In a mode with no translated schema (JSON-object mode, instructions, a forced tool whose
    schema is guidance) every keyword is checked by outform. None for free text."""

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
    found = profile(provider)
    caps = found.lookup(model)[0]
    thinking_on = bool(thinking and thinking.enabled)
    if isinstance(fmt, JsonObjectFormat):
        return _plan_json_object(found, caps, model, thinking)
    if not isinstance(fmt, JsonSchemaFormat):
        raise UsageError(f"outform cannot plan a call for response format type {fmt.type!r}")
    if mode == "off":
        reason = "mode='off' was asked for: nothing about the schema is sent; outform validates"
        return Plan(
            "unconstrained", FreeText(), reason, thinking=thinking, ledger=_checked_ledger(fmt)
        )
    note = ""
    if mode == "auto":
        options: dict[str, Any] = {
            "streaming": streaming,
            "tools": tools,
            "schema": fmt.schema,
            "strict": fmt.strict,
        }
        choice = choose_mode(provider, model, thinking=thinking_on, **options)
        if thinking_on and found.thinking_refuses:
            free = choose_mode(provider, model, **options)
            if (free.mode, free.enforced) != (choice.mode, choice.enforced):
                note = (
                    f"switched from {_SAID[free.mode]} to {_SAID[choice.mode]}: {provider} "
                    f"refuses {_SAID[free.mode]} while thinking, and thinking was asked for"
                )
    else:
        choice = _forced_choice(provider, model, caps, mode, fmt)
        if thinking_on and choice.mode in found.thinking_refuses:
            thinking = replace(thinking, enabled=False) if thinking else None
            note = (
                f"thinking turned off: {provider} refuses {_SAID[choice.mode]} while thinking, "
                f"and mode={mode!r} was asked for"
            )
    if note:
        choice = replace(choice, reason=f"{choice.reason}; {note}")
    return _plan_from_choice(fmt, caps, choice, thinking, note)


def _forced_choice(
    provider: str, model: str, caps: Capabilities, mode: Mode, fmt: JsonSchemaFormat
) -> ModeChoice:
    wanted = _PROFILE_MODE[mode]
    loose = fmt.strict is False
    dialect: str | None = None
    enforced = False
    if wanted == "native_schema":
        dialect = caps.native_dialect
        if dialect is None:
            raise UsageError(
                f"{model} has no native schema mode",
                where="mode='native'",
                fix="use mode='auto', or 'tool', 'json' or 'prompted'",
            )
        if loose and caps.native_enforced:
            if caps.loose_dialect is None:
                raise UsageError(
                    f"strict=False was asked, and the native schema mode of {model} always "
                    "constrains decoding",
                    where="mode='native' with strict=False",
                    fix="leave strict unset, or use mode='auto', 'tool', 'json' or 'prompted'",
                )
            dialect = caps.loose_dialect
        enforced = caps.native_enforced and not loose
    elif wanted == "forced_tool":
        if not caps.tool_forcing:
            raise UsageError(
                f"{model} cannot be forced to call a tool",
                where="mode='tool'",
                fix="use mode='auto', or 'native', 'json' or 'prompted'",
            )
        dialect = None if loose else caps.tool_dialect
        enforced = dialect is not None
    elif wanted == "json_object" and not caps.json_object:
        raise UsageError(
            f"{model} has no JSON-object mode",
            where="mode='json'",
            fix="use mode='auto', or 'native', 'tool' or 'prompted'",
        )
    translation = translate(fmt.schema, dialect) if dialect is not None else None
    how = "the provider enforces the schema" if enforced else "the schema is guidance"
    return ModeChoice(
        provider,
        model,
        wanted,
        enforced,
        dialect,
        f"mode={mode!r} was asked for; {how}",
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
    if translation is not None and not choice.enforced:
        translation = _as_guidance(translation, fmt)
    wire_schema: Any = translation.schema if translation is not None else fmt.schema
    instructions = schema_instructions(fmt) if caps.schema_in_prompt else None
    output: Output
    if choice.mode == "native_schema":
        output = NativeSchema(
            fmt.name,
            wire_schema,
            strict=fmt.strict is not False and caps.native_strict,
            description=fmt.description,
            form=_form(translation),
        )
    elif choice.mode == "forced_tool":
        output = ForcedTool(
            fmt.name,
            wire_schema,
            strict=fmt.strict is not False and choice.dialect is not None,
            description=fmt.description or f"Record the answer as {fmt.name}.",
        )
    elif choice.mode == "json_object":
        output, instructions = JsonObject(), schema_instructions(fmt)
    else:
        output, instructions = FreeText(), schema_instructions(fmt)
    if choice.mode not in ("native_schema", "forced_tool"):
        translation = None
    return Plan(
        choice.mode,
        output,
        choice.reason,
        instructions,
        translation,
        thinking,
        thinking_note,
        choice,
        translation.ledger if translation is not None else _checked_ledger(fmt),
    )


def _form(translation: DialectResult | None) -> SchemaForm:
    """The schema language of the wire schema (Gemini has a field for each)."""
    openapi = translation is not None and translation.rules.render == "openapi"
    return "openapi" if openapi else "json_schema"


def _as_guidance(translation: DialectResult, fmt: JsonSchemaFormat) -> DialectResult:
    """The translation with a ledger that claims no enforcement: in a mode the provider is not
    asked (or cannot be relied on) to enforce, every keyword is checked by outform."""
    if not translation.ledger.with_disposition("enforced"):
        return translation
    why = (
        "strict=False was asked"
        if fmt.strict is False
        else "the provider is not relied on to enforce the schema in this mode"
    )
    ledger = _checked(translation.ledger, f"sent as guidance ({why})", every=False)
    return replace(translation, ledger=ledger)


def _checked_ledger(fmt: JsonSchemaFormat) -> Ledger | None:
    """The ledger of a schema nobody on the wire enforces: every keyword checked by outform.
    The plain JSON Schema dialect (`openai`, which enforces nothing) walks the schema and
    lists each keyword; its wire schema is not used."""
    try:
        listed = translate(fmt.schema, "openai").ledger
    except SchemaError:
        return None
    return _checked(listed, "not enforced (no schema is enforced in this mode)", every=True)


def _checked(ledger: Ledger, why: str, *, every: bool) -> Ledger:
    """`ledger` with its enforced entries (or, `every`, all but the dropped ones) marked as
    checked by outform, saying `why`."""
    out = Ledger()
    for entry in ledger:
        if entry.disposition == "enforced" or (every and entry.disposition != "dropped"):
            reason = f"{why}; outform validates the reply"
            out.add(entry.path, entry.keyword, "checked_locally", reason, entry.kind)
        else:
            out.add(entry.path, entry.keyword, entry.disposition, entry.reason, entry.kind)
    return out


def _plan_json_object(
    found: ProviderProfile, caps: Capabilities, model: str, thinking: Thinking | None
) -> Plan:
    text = "Respond with a single JSON object, with no prose and no Markdown fences."
    if not caps.json_object:
        return Plan(
            "instructions", FreeText(), f"{model} has no JSON-object mode", text, thinking=thinking
        )
    if thinking and thinking.enabled and "json_object" in found.thinking_refuses:
        note = (
            f"switched from JSON-object mode to instructions: {found.name} refuses JSON-object "
            "mode while thinking, and thinking was asked for"
        )
        return Plan("instructions", FreeText(), note, text, thinking=thinking, thinking_note=note)
    return Plan(
        "json_object", JsonObject(), f"{model} has a JSON-object mode", text, thinking=thinking
    )


def schema_instructions(fmt: JsonSchemaFormat) -> str:
    """The instructions that carry the schema when the wire does not (and the word "JSON",
    which OpenAI's JSON-object mode requires in the input).

    The schema is written in the compact shape of `outform.schema.compact` (every constraint
    kept, the structure around it dropped), or as raw JSON Schema when that is not longer."""
    raw = orjson.dumps(fmt.schema).decode()
    shape = compact.render(fmt.schema)
    about = f" ({fmt.description})" if fmt.description else ""
    head = f"Respond with a single JSON value{about}, with no prose and no Markdown fences, "
    if len(shape) + len(_SHAPE_KEY) < len(raw):
        return f"{head}{_SHAPE_KEY}\n{shape}"
    return f"{head}that matches this JSON Schema:\n{raw}"


_SHAPE_KEY = (
    "of this shape (`?` marks an optional field, `// ` a note, `= x` a default, parentheses "
    "JSON Schema constraints, `type X = ...` a named type):"
)


def thinking_table() -> str:
    """The thinking rule as the Markdown table of docs/generate.md: per model prefix, the
    output modes that run with thinking, those refused while thinking, and what outform does
    then. Rendered from the profiles, so the code and the doc cannot disagree (a test checks
    the doc holds this table)."""
    from outform.providers.registry import PROVIDERS

    prefixes: dict[str, list[str]] = {}
    for spec in PROVIDERS.values():
        prefixes.setdefault(spec.profile_name, []).append(f"`{spec.name}:`")
    rows = [
        "| model prefix | modes that run with thinking | refused while thinking | "
        "what outform does then | why |",
        "|---|---|---|---|---|",
    ]
    for name, found in PROFILES.items():
        modes = found.modes()
        runs = [f"`{_ASKED[m]}`" for m in modes if m not in found.thinking_refuses]
        refused = [m for m in modes if m in found.thinking_refuses]
        then = (
            "; ".join(
                f"`auto` passes over {_SAID[m]}; `mode='{_ASKED[m]}'` turns thinking off"
                for m in refused
            )
            or "keeps both"
        )
        rows.append(
            f"| {', '.join(prefixes.get(name, [f'`{name}:`']))} | {', '.join(runs)} | "
            f"{', '.join(f'`{_ASKED[m]}`' for m in refused) or 'none'} | {then} | "
            f"{found.thinking_source} |"
        )
    return "\n".join(rows)
