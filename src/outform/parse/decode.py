"""Stage *decode*: text to a JSON value, strict first, then (opt-in) tolerant tiers.

Tier 0 is orjson: exact JSON, fast. Tier 1 is pyjson5: JSON5 (comments, trailing commas, single
quotes, unquoted keys). Tier 2 is json-repair: anything it can salvage (missing quotes, commas
and brackets, truncation, Python literals). Each tolerant success records what it changed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import json_repair
import orjson
import pyjson5

from outform.parse.hint import preview
from outform.parse.literals import rewrite_literals

TIER_NAMES = ("orjson", "pyjson5", "json_repair")
_CONTEXT = 24


@dataclass(frozen=True, slots=True)
class Decoded:
    value: Any
    tier: int
    detail: str = ""


@dataclass(frozen=True, slots=True)
class DecodeFailure:
    """Why strict decoding stopped: the message and the character offset."""

    message: str
    position: int

    def around(self, text: str) -> str:
        """The text around the failure, for a before/after preview."""
        start = max(0, self.position - _CONTEXT)
        end = min(len(text), self.position + _CONTEXT)
        prefix = "…" if start else ""
        suffix = "…" if end < len(text) else ""
        return prefix + text[start:end] + suffix


def strict(text: str) -> Any:
    """orjson.loads; raises orjson.JSONDecodeError."""
    return orjson.loads(text)


def strict_failure(text: str) -> DecodeFailure | None:
    try:
        orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        return DecodeFailure(exc.msg, exc.pos)
    return None


def decode(text: str, max_tier: int) -> Decoded | DecodeFailure:
    """Decode with tiers 0..max_tier; the first that succeeds wins."""
    try:
        return Decoded(orjson.loads(text), 0)
    except orjson.JSONDecodeError as exc:
        failure = DecodeFailure(exc.msg, exc.pos)
    if max_tier >= 1:
        decoded = _json5(text)
        if decoded is not None:
            return decoded
    if max_tier >= 2:
        decoded = _repair(text)
        if decoded is not None:
            return decoded
    return failure


def decode_tier(text: str, tier: int) -> Decoded | DecodeFailure:
    """Decode with exactly one tolerant tier (1 or 2)."""
    decoded = _json5(text) if tier == 1 else _repair(text)
    return decoded if decoded is not None else DecodeFailure(f"{TIER_NAMES[tier]} failed", 0)


def _json5(text: str) -> Decoded | None:
    try:
        value = pyjson5.decode(text)
    except (pyjson5.Json5Exception, ValueError, RecursionError):
        return None
    return Decoded(value, 1, "accepted JSON5 syntax")


def _repair(text: str) -> Decoded | None:
    rewritten = rewrite_literals(text)
    if rewritten is not None:
        decoded = _repair_text(rewritten)
        if decoded is not None:
            note = "rewrote triple-quoted, backtick or fenced strings as JSON strings"
            return Decoded(decoded.value, 2, f"{note}; {decoded.detail}")
    return _repair_text(text)


def _repair_text(text: str) -> Decoded | None:
    try:
        value, log = json_repair.repair_json(
            text, return_objects=True, skip_json_loads=True, logging=True
        )
    except (RecursionError, ValueError, TypeError, IndexError):
        return None
    if value == "" and text.strip() not in ('""', "''"):
        return None  # json-repair's way of saying "nothing salvageable"
    actions = [entry.get("text", "") for entry in log if isinstance(entry, dict)]
    detail = "; ".join(dict.fromkeys(a for a in actions if a)) or "repaired"
    return Decoded(value, 2, detail)


def render(value: Any) -> str:
    """Canonical one-line JSON of a decoded value, for previews."""
    return preview(value, 80)
