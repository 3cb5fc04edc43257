"""The pipeline's verdict on one reply, as plain data that crosses a process boundary.

Enforcement mode runs `check_reply` in a worker process (`gateway.workers`), never on the
event loop: a hostile reply can make the pipeline slow, and the loop must keep answering
everyone else. What comes back is a `Verdict` of strings and trace records, so nothing but
outform's own small dataclasses is pickled (no exception with a payload, no ParseResult).
The worker records nothing itself: the request's run, in the gateway's process, records the
verdict's changes and violations.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from outform.errors import InputError, OutputError
from outform.format import ResponseFormat
from outform.jsontext import dumps_text
from outform.parse import RetryHint, Violation, pipeline_for
from outform.reask import complete_at_cut, cut_off
from outform.trace.events import Event, Validation


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
    """`unreadable`: why the reply could not be checked (over the time limit)."""
    changes: tuple[Event, ...] = ()
    """`repaired`: the `output.change` event of each change (without their run)."""
    validation: Validation | None = None
    """`invalid`: what was wrong, as a trace record."""
    schema_hash: str | None = None


@dataclass(frozen=True, slots=True)
class CheckSettings:
    """The parse settings of one check (they cross the process boundary with the reply)."""

    level: str
    time_limit: float
    profile: str | None = None
    """The `[profiles.NAME]` whose parse settings apply (the x-outform-profile header)."""


def check_reply(text: str, fmt: Mapping[str, Any], settings: CheckSettings, cut: bool) -> Verdict:
    """Run the pipeline on `text` against the flat format dict `fmt`; `cut`: the backend
    stopped at its token limit, so the reply is taken only when it was complete as sent
    (`reask.complete_at_cut`: no repair closed what was cut, and its JSON ends with a
    delimiter nothing could have continued; `12` may have been `120`)."""
    try:
        pipeline = pipeline_for(
            ResponseFormat.from_dict(fmt),
            level=settings.level,
            time_limit=settings.time_limit,
            profile=settings.profile,
        )
        result = pipeline.run(text, record=False)
        if cut and not complete_at_cut(text, result.data, result.changes):
            raise OutputError("the reply was cut off", hint=cut_off(text))
    except OutputError as error:
        # A cut reply is told as cut, never as one missing what the cut left out.
        hint = cut_off(text, error.hint) if cut and not error.hint.is_cut else error.hint
        return Verdict(
            "invalid",
            hint=hint.message(),
            explanation=hint.explain(),
            validation=Validation.of(hint.violations),
        )
    except InputError as error:
        return _refused(error)
    if not result.changes:
        return Verdict("valid", schema_hash=result.schema_hash)
    changes = tuple(change.event(schema_hash=result.schema_hash) for change in result.changes)
    text = dumps_text(result.data)  # every digit of an integer beyond 64 bits
    return Verdict("repaired", text=text, changes=changes, schema_hash=result.schema_hash)


def _refused(error: InputError) -> Verdict:
    """The verdict on a reply the pipeline refused before reading it. Over the time limit,
    `unreadable` (the check is what cost too much: asking again may cost as much); else
    (nested too deep, too long, NUL, not Unicode) `invalid`, the model being asked again as
    for any reply it can do better, and the explanation naming the setting of the limit."""
    if error.limit == "time_limit":
        return Verdict("unreadable", what=f"{error.what} (enforce_time_limit, set in [gateway])")
    setting = error.limit
    limit = f" (the limit is {setting}, set in [parse] of outform.toml)" if setting else ""
    expected = "JSON text within the limit" if setting else "JSON text"
    hint = RetryHint((Violation("", "syntax", expected, error.what),))
    return Verdict(
        "invalid",
        hint=hint.message(),
        explanation=f"- {error.what}{limit}",
        validation=Validation.of(hint.violations),
    )


__all__ = ["CheckSettings", "Verdict", "check_reply"]
