"""The pipeline's verdict on one reply, as plain data that crosses a process boundary.

Enforcement mode runs `check_reply` in a worker process (`gateway.workers`), never on the
event loop: a hostile reply can make the pipeline slow, and the loop must keep answering
everyone else. What comes back is a `Verdict` of strings, so nothing but outform's own
small dataclass is pickled (no exception with a payload, no ParseResult).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import orjson

from outform.errors import InputError, OutputError
from outform.format import ResponseFormat
from outform.parse import parse
from outform.reask import CUT_OFF, repaired_after_cut


@dataclass(frozen=True, slots=True)
class Verdict:
    kind: Literal["valid", "repaired", "invalid", "unreadable"]
    text: str = ""
    """`repaired`: the valid JSON to send instead of the reply."""
    hint: str = ""
    """`invalid`: what was wrong, path by path, written for the model (the re-ask)."""
    explanation: str = ""
    """`invalid`: the same violations written for people (the final 422)."""
    what: str = ""
    """`unreadable`: why the reply could not be parsed at all (the time limit included)."""


@dataclass(frozen=True, slots=True)
class CheckSettings:
    """The parse settings of one check (they cross the process boundary with the reply)."""

    level: str
    time_limit: float
    profile: str | None = None
    """The `[profiles.NAME]` whose parse settings apply (the x-outform-profile header)."""


def check_reply(text: str, fmt: Mapping[str, Any], settings: CheckSettings, cut: bool) -> Verdict:
    """Run the pipeline on `text` against the flat format dict `fmt`; `cut`: the backend
    stopped at its token limit, so a repair that closed what was cut off is refused."""
    try:
        result = parse(
            text,
            ResponseFormat.from_dict(fmt),
            level=settings.level,
            time_limit=settings.time_limit,
            profile=settings.profile,
        )
        if cut and repaired_after_cut(result.changes):
            raise OutputError("the reply was cut off", hint=CUT_OFF)
    except OutputError as error:
        return Verdict("invalid", hint=error.hint.message(), explanation=error.hint.explain())
    except InputError as error:
        return Verdict("unreadable", what=error.what)
    if not result.changes:
        return Verdict("valid")
    return Verdict("repaired", text=orjson.dumps(result.data).decode())


__all__ = ["CheckSettings", "Verdict", "check_reply"]
