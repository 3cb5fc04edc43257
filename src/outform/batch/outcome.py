"""What becomes of one reply: a final status for the row, or a re-ask in the next round.

Statuses: `ok` (valid as sent), `repaired` (valid after the recorded changes), `failed` (not
valid after the last round, or refused), `provider_error` (the provider did not answer the
request), `expired` (the batch ran out of time before the request ran). The rules are those
of generate(): a refusal is final, a reply cut at the token limit that only repairs made
whole is re-asked, and an invalid reply is re-asked with its hint while rounds remain.

No secret the job sends is written: a model may echo the key it was called with (in a reply
that then fails validation, say), and what the job writes comes from its replies. A verdict is
`hidden` as soon as it is made (the reply and hint kept for a re-ask, the history), and all
that a row's output line holds of replies is masked as it is written (`output_line`), as
`generate()` masks its error: the call's key as `***`, every other secret outform knows
(`trace.redact`) as `[redacted]`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from outform.errors import OutformError, OutputError
from outform.errors import masked as _masked
from outform.parse.hint import RetryHint
from outform.parse.pipeline import Pipeline
from outform.parse.result import Change
from outform.providers.base import Response, Usage
from outform.reask import complete_at_cut, cut_off, refusal_of
from outform.trace import redact
from outform.trace.events import Event

Status = Literal["ok", "repaired", "failed", "provider_error", "expired"]
STATUSES: tuple[Status, ...] = ("ok", "repaired", "failed", "provider_error", "expired")


@dataclass(frozen=True)
class Verdict:
    status: Status | Literal["reask"]
    data: Any = None
    changes: tuple[Change, ...] = ()
    hint: RetryHint | None = None
    error: str = ""
    text: str = ""
    """The reply (kept for a re-ask: the model sees what it said)."""
    usage: Usage = field(default_factory=Usage)
    refused: bool = False
    events: tuple[Event, ...] = ()
    """The parse's events, for the row's run (`batch.runs`)."""

    def hidden(self, hide: Callable[[str], str]) -> Verdict:
        """The verdict with the reply, the error and the hint masked by `hide` (what is
        stored for a re-ask, and told in the row's history); this very verdict when `hide`
        changes none of them."""
        text, error = hide(self.text), hide(self.error)
        hint = self.hint.rewritten(hide) if self.hint is not None else None
        if text == self.text and error == self.error and hint is self.hint:
            return self
        return dataclasses.replace(self, text=text, error=error, hint=hint)


def judge(response: Response, pipeline: Pipeline[Any], *, can_reask: bool) -> Verdict:
    """The verdict on one parsed provider reply."""
    usage = response.usage
    refusal = refusal_of(response)
    if refusal is not None:
        return Verdict("failed", error=f"refused: {refusal[:500]}", usage=usage, refused=True)
    cut = response.finish_reason == "length"
    try:
        result = pipeline.run(response.text, record=False)  # recorded as the row's run
        if cut and not complete_at_cut(response.text, result.data, result.changes):
            raise OutputError("the reply was cut off", hint=cut_off(response.text), result=result)
    except OutputError as error:
        events = error.result.events if error.result is not None else ()
        given_up: Literal["reask", "failed"] = "reask" if can_reask else "failed"
        # A cut reply is told as cut, never as one missing what the cut left out.
        hint = cut_off(response.text, error.hint) if cut and not error.hint.is_cut else error.hint
        return Verdict(given_up, hint=hint, text=response.text, usage=usage, events=events)
    except OutformError as error:  # binary, too large, too deep: the model may do better
        hint = RetryHint(())
        if can_reask:
            return Verdict("reask", hint=hint, error=error.what, text=response.text, usage=usage)
        return Verdict("failed", error=error.what, text=response.text, usage=usage)
    status: Status = "repaired" if result.changes else "ok"
    return Verdict(status, result.data, result.changes, usage=usage, events=result.events)


def output_line(
    row_id: str,
    line: int,
    verdict: Verdict,
    *,
    attempts: int,
    rounds: Sequence[Mapping[str, Any]] | None = None,
    hide: Callable[[str], str] = redact.scrub_text,
) -> bytes:
    """The row's line in OUT.jsonl (without the newline). It goes to the manifest and
    OUT.jsonl, so everything in it that comes from a reply or a provider is masked by `hide`
    (the job's `Prepared.hide`; by default every secret outform knows): the value and its
    changes, the hint, the error, the reply and the rounds."""
    verdict = verdict.hidden(hide)  # (a verdict hidden already is left as it is)
    out: dict[str, Any] = {"id": row_id, "line": line, "status": verdict.status}
    if verdict.status in ("ok", "repaired"):
        out["value"] = masked(verdict.data, hide)
        # The changes belong to the attempt whose reply gave the value: the last one.
        changes = (
            c if c.attempt == attempts else dataclasses.replace(c, attempt=attempts)
            for c in verdict.changes
        )
        out["changes"] = [masked(c.to_dict(), hide) for c in changes]
    if verdict.hint is not None:
        out["hint"] = verdict.hint.to_dict()
    if verdict.error:
        out["error"] = verdict.error  # (a provider's message may quote the key it was sent)
    if verdict.status == "failed" and verdict.text:
        out["reply"] = verdict.text[:2000]  # (masked whole, before the cut)
    out["attempts"] = attempts
    if rounds:
        out["rounds"] = masked(rounds, hide)  # (as stored: by an older outform, unmasked)
    # What the row cost: every reply asked for, the ones re-asked about (in its rounds) too.
    total = sum((Usage(**r["usage"]) for r in rounds or () if "usage" in r), verdict.usage)
    if total.total_tokens:
        out["usage"] = tokens(total)
    return orjson.dumps(out)


def masked(value: Any, hide: Callable[[str], str]) -> Any:
    """`value` (JSON-like) with `hide` applied to each of its strings, keys included
    (`errors.masked`), passing over a string shorter than any secret or piece of one that is
    masked (`trace.redact` masks none, and `hide_secrets` no key, shorter): a row's value
    holds many short strings."""
    return _masked(value, lambda text: hide(text) if len(text) >= _SHORTEST else text)


_SHORTEST = redact.MIN_PIECE


def tokens(usage: Usage) -> dict[str, int]:
    """A reply's usage as the output and a round's entry write it."""
    return {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens}
