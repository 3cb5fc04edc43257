"""`RetryHint`: what is wrong with a reply, as data, as a message a model can act on, and as
an explanation for people.

Each violation names the JSON path, what the schema expected there and what the reply had.
The model's message is short on purpose: it is sent back on a re-ask, and every token of it is
paid for. People (the CLI, the gateway's 422, an error's text) get the same lines without the
words addressed to the model.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Literal

import orjson

from outform.schema import pointer
from outform.schema.types import json_type

ViolationKind = Literal["syntax", "missing", "unexpected", "type", "enum", "constraint", "custom"]

_MAX_LINES = 20

CUT = "cut_off"
"""The keyword of the violation of a reply cut off before it was complete (at the token limit,
or a stream that stopped without a stop reason): see `outform.reask.cut_off`."""
JSON_UNENDED = "json_unended"
"""The keyword of a syntax violation where the JSON stops before it is complete (the end of
the text reached inside a value): in a reply known to be cut, the cut's doing."""


@dataclass(frozen=True, slots=True)
class Violation:
    """One reason the reply does not match. `path` is a JSON pointer ("" is the root)."""

    path: str
    kind: ViolationKind
    expected: str
    found: str
    keyword: str = ""
    field: str = ""
    """For `missing`: the name of the missing property (at `path`)."""

    def line(self) -> str:
        where = pointer.readable(self.path)
        if self.kind == "missing":
            return f"at {where}: missing required field {self.expected}"
        if self.kind == "unexpected":
            return f"at {where}: unexpected field(s) {self.found}; allowed: {self.expected}"
        if self.kind == "syntax":
            return f"{self.found}; expected {self.expected}"
        return f"at {where}: expected {self.expected}, found {self.found}"

    def to_dict(self) -> dict[str, str]:
        return {
            "path": self.path,
            "kind": self.kind,
            "expected": self.expected,
            "found": self.found,
            "keyword": self.keyword,
            "field": self.field,
        }


@dataclass(frozen=True, slots=True)
class RetryHint:
    """Every violation found, in document order."""

    violations: tuple[Violation, ...]

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(v.path for v in self.violations))

    @property
    def is_syntax(self) -> bool:
        """True when no JSON value could be read at all (as opposed to a value that is wrong)."""
        return any(v.kind == "syntax" for v in self.violations)

    @property
    def is_cut(self) -> bool:
        """True when the reply was cut off before it was complete: the whole reply is asked
        for again, whatever else was wrong with it."""
        return any(v.keyword == CUT for v in self.violations)

    def message(self, *, indent: str = "") -> str:
        """The short text sent back to a model."""
        if self.is_cut:
            head = "Your reply was cut off before it was complete:"
        elif self.is_syntax:
            head = "Your reply could not be read as JSON:"
        else:
            head = "Your reply did not match the required JSON schema:"
        lines = [f"{indent}{head}", self.explain(indent=indent)]
        if self.is_cut:  # the whole value again: no part of it was sent complete
            lines.append(f"{indent}Reply again with the whole JSON, complete.")
        else:
            lines.append(f"{indent}Reply again with only the corrected JSON.")
        return "\n".join(lines)

    def explain(self, *, indent: str = "") -> str:
        """The violations for people, one line each ("- at a: expected integer, ..."): what a
        CLI, an HTTP error or an exception shows under its own heading."""
        lines = [f"{indent}- {v.line()}" for v in self.violations[:_MAX_LINES]]
        if len(self.violations) > _MAX_LINES:
            lines.append(f"{indent}- … and {len(self.violations) - _MAX_LINES} more")
        return "\n".join(lines)

    def rewritten(self, edit: Callable[[str], str]) -> RetryHint:
        """The hint with `edit` applied to every text of its violations (what an error shows:
        the call's credentials masked); this very hint when `edit` changes none."""
        violations = tuple(
            replace(
                v,
                path=edit(v.path),
                expected=edit(v.expected),
                found=edit(v.found),
                field=edit(v.field),
            )
            for v in self.violations
        )
        return self if violations == self.violations else RetryHint(violations)

    def to_dict(self) -> dict[str, Any]:
        return {
            "violations": [v.to_dict() for v in self.violations],
            "message": self.message(),
            "explanation": self.explain(),
        }


def preview(value: Any, limit: int = 60) -> str:
    """A one-line JSON rendering, cut at `limit` characters (only the first `limit` members of
    a large container are written: a preview of a million-member enum costs no more than one
    of three)."""
    if isinstance(value, list) and len(value) > limit:
        value = value[:limit]
    elif isinstance(value, dict) and len(value) > limit:
        value = dict(itertools.islice(value.items(), limit))
    try:
        text = orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def clip(text: str, limit: int = 80) -> str:
    """Raw text on one line (whitespace runs become one space), cut at `limit` characters: the
    preview of a text (not JSON) stage."""
    text = " ".join(text[: limit * 4].split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe(value: Any) -> str:
    """`found` text for a value: its type and a preview ("null" alone: its preview is its type)."""
    if value is None:
        return "null"
    return f"{json_type(value)} {preview(value)}"
