"""What to send back to a model whose reply did not validate.

The conversation stays bounded: the original messages, the last bad reply, and the hint; never
the history of every attempt. When the reply is an object whose other fields are valid, only
the failing fields are asked for again (with a schema of just those fields), and the answer is
merged into the rest.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import orjson

from outform.format import JsonSchemaFormat
from outform.parse.hint import CUT, JSON_UNENDED, RetryHint, Violation
from outform.parse.result import Change
from outform.providers.base import Message, Response
from outform.schema import pointer
from outform.schema.compiled import CompiledSchema

CUT_OFF = RetryHint(
    (
        Violation(
            "",
            "syntax",
            "a complete reply",
            "the reply was cut off at the token limit (finish_reason=length)",
            CUT,
        ),
    )
)
"""The hint for a reply that stopped at the token limit (where is unknown: `cut_off` says)."""
UNENDED = RetryHint(
    (
        Violation(
            "",
            "syntax",
            "a complete reply",
            "the reply stream stopped without the provider saying the reply was complete",
            CUT,
        ),
    )
)
"""The hint for a streamed reply that stopped without a stop reason."""


def cut_off(text: str, found: RetryHint | None = None, *, unended: bool = False) -> RetryHint:
    """The hint for a reply that may have been cut off and was not accepted: it was cut (at
    the token limit, or, `unended`, a stream that stopped without a stop reason) and where
    (the last field it wrote), then what else `found` holds that the cut does not explain.

    A cut explains the fields missing after it and anything at, around or above the field it
    cut (a number dropped, an array short of items), so those are not named: naming them
    would tell the model its other fields were fine and to send those alone, when the whole
    reply must come again. A syntax violation stays (a reply with no JSON in it is still
    that); so do a wrong value the reply wrote in full before the cut, and a key it should
    not have written."""
    base = UNENDED if unended else CUT_OFF
    where = cut_path(text)
    cut = base.violations[0]
    if where is not None:
        last = f"; the last field it wrote was {pointer.readable(where)}"
        cut = replace(cut, found=cut.found + last)
    kept = [v for v in (found.violations if found else ()) if _not_the_cut(v, where)]
    return RetryHint((cut, *kept))


def _not_the_cut(violation: Violation, where: str | None) -> bool:
    """Whether `violation` is more than the cut at `where` made of the reply."""
    if violation.kind == "syntax":
        return violation.keyword not in (CUT, JSON_UNENDED)  # (JSON that stops: the cut's doing)
    if violation.kind == "unexpected":
        return True  # a key written whole, that the schema does not allow
    if violation.kind == "missing" or where is None:
        return False
    path = violation.path
    return not (where == path or where.startswith(path + "/") or path.startswith(where + "/"))


_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)|[][{},:]', re.DOTALL)
"""What the shape of a reply is made of: a string (or one the end cuts), a bracket, a comma,
a colon. Anything else (numbers, literals, prose) is passed over."""


def cut_path(text: str) -> str | None:
    """The JSON pointer of the member a reply was writing when it stopped (the last key read
    in each object left open, the index of the item in each array): None when the reply ends
    outside any object or array. Read from the text alone, so it holds for a reply no stage
    could read (prose before the value, brackets in it, are passed over as well as may be)."""
    open_: list[list[Any]] = []  # each container left open: [is array, its member now]
    previous = ""
    match = None
    for match in _TOKEN.finditer(text):
        token = match.group()
        if token in ("{", "["):
            open_.append([token == "[", 0 if token == "[" else None])
        elif token in ("}", "]"):
            if open_:
                open_.pop()
        elif token == "," and open_ and open_[-1][0]:
            open_[-1][1] += 1
        elif token == ":" and open_ and not open_[-1][0] and previous.startswith('"'):
            open_[-1][1] = _key(previous)
        previous = token
    after_comma = previous == "," and match is not None and not text[match.end() :].strip()
    if after_comma and open_ and open_[-1][0]:  # cut after an item's comma: no item begun
        open_[-1][1] -= 1
    members: list[str | int] = []
    for _, member in open_:
        if member is None:
            break
        members.append(member)
    return pointer.from_parts(members) if members else None


def _key(token: str) -> str:
    """A key as written in the reply (its escapes read), or as it stands if they cannot be."""
    try:
        key = orjson.loads(token)
    except orjson.JSONDecodeError:
        return token.strip('"')
    return key if isinstance(key, str) else token.strip('"')


def refusal_of(response: Response) -> str | None:
    """Why the reply is a refusal (the model's words, or the stop reason's), or None. The
    model refused (a refusal text, or the stop reason `refusal`) or a content filter stopped
    the reply, before or after some text: such a reply is never the value, whatever text
    came before the stop (it may be the start of an answer cut short)."""
    if response.refusal:
        return response.refusal
    if response.finish_reason not in ("refusal", "content_filter"):
        return None
    written = len(response.text)
    after = f" after {written:,} characters of reply" if response.text.strip() else ""
    if response.finish_reason == "content_filter":
        return f"the provider's content filter stopped the reply{after}"
    return f"the model refused (stop reason: refusal){after}"


def complete_at_cut(text: str, data: Any, changes: Sequence[Change]) -> bool:
    """Whether a reply that may have been cut off (at the token limit, or a stream that
    stopped without a stop reason) where its `text` ends was complete as sent, its value
    `data` read with `changes`: it needed no repair and lost nothing (`repaired_after_cut`),
    and its JSON is closed by a delimiter that nothing after the cut could have continued, a
    `}`, a `]` or a string's closing quote. The reply ends with one (trailing whitespace and
    a closing code fence aside), or its value is an object or array read out of prose that
    goes on after the bracket closing it.

    A value running to the end of the text with anything else is not known to be complete:
    a number (`12` may be the start of `120` or `12.5`), a literal (`true`: no delimiter
    closes it either), a word read as a string, the reply itself read as a string."""
    if repaired_after_cut(changes):
        return False
    tail = text.rstrip()
    fence = _CLOSING_FENCE.search(tail)
    if fence is not None:
        tail = tail[: fence.start()].rstrip()
    if isinstance(data, str) and data.strip() and tail.endswith(data.rstrip()):
        return False  # the reply read as a string: it runs to where the reply stopped
    if tail.endswith(("}", "]", '"')):
        return True
    return (
        isinstance(data, dict | list)
        and any(c.stage == "extract" for c in changes)
        and ("}" in tail or "]" in tail)
    )


_CLOSING_FENCE = re.compile(r"(?:`{3,}|~{3,})\Z")
"""A code fence closing the reply (the value inside it ended before it)."""


def repaired_after_cut(changes: Sequence[Change]) -> bool:
    """Whether a reply that may have been cut off (at the token limit, or a stream that
    stopped without a stop reason) needed repair or lost content: such a reply is accepted
    only if it was complete as sent (a repaired truncation may have lost the end of the
    value, and a dropped piece, such as the last of several values gathered, may be the cut
    one)."""
    return any(
        c.stage == "tolerant" or c.transform == "extract_truncated" or c.lost for c in changes
    )


@dataclass(frozen=True)
class FieldAsk:
    """Ask again for some fields of an object only."""

    fields: tuple[str, ...]
    format: JsonSchemaFormat
    kept: Mapping[str, Any]
    """The valid fields of the last reply, merged back with the answer."""
    order: tuple[str, ...]
    """Key order of the last reply, kept in the merged value."""

    def merge(self, answer: Mapping[str, Any]) -> dict[str, Any]:
        merged = dict(self.kept)
        merged.update({k: answer[k] for k in self.fields if k in answer})
        ordered = {k: merged[k] for k in self.order if k in merged}
        ordered.update({k: v for k, v in merged.items() if k not in ordered})
        return ordered


def field_ask(
    fmt: JsonSchemaFormat, compiled: CompiledSchema, value: Any, hint: RetryHint
) -> FieldAsk | None:
    """A FieldAsk when every violation lies inside some (not all) top-level fields of an
    object reply; None when the whole reply must be asked for again."""
    _, root = compiled.resolve("")
    if not isinstance(value, dict) or not isinstance(root, dict):
        return None
    properties = root.get("properties")
    if not isinstance(properties, dict) or not properties:
        return None
    failing: set[str] = set()
    for violation in hint.violations:
        parts = pointer.parts(violation.path)
        if parts:
            failing.add(parts[0])
        elif violation.kind == "missing" and violation.field:
            failing.add(violation.field)
        else:
            return None  # a problem with the object as a whole
    if not failing or not failing <= properties.keys() or len(failing) >= len(properties):
        return None
    fields = tuple(name for name in properties if name in failing)
    required = root.get("required")
    required = required if isinstance(required, list) else []
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {name: properties[name] for name in fields},
        "required": [name for name in fields if name in required],
        "additionalProperties": False,
    }
    for key in ("$defs", "definitions"):
        if key in compiled.root:
            schema[key] = compiled.root[key]
    if "$schema" in compiled.root:
        schema["$schema"] = compiled.root["$schema"]
    sub = JsonSchemaFormat(name=f"{fmt.name}_fields"[:64], schema=schema, strict=fmt.strict)
    kept = {k: v for k, v in value.items() if k not in failing}
    return FieldAsk(fields, sub, kept, tuple(value))


def reask_messages(
    base: Sequence[Message],
    bad_reply: str,
    hint: RetryHint,
    ask: FieldAsk | None,
    instructions: str | None = None,
) -> list[Message]:
    """The original conversation, the last bad reply, and what to fix.

    What to fix is one user turn: the hint, and for a field re-ask the fields to send again
    and `instructions` (the schema of just those fields, in modes where the wire does not
    carry it). No system message is added after the first turn: the chat templates of many
    open models refuse a system message anywhere but first.
    """
    text = hint.message()
    if ask is not None:
        names = ", ".join(ask.fields)
        text += (
            f"\nThe other fields were fine. Reply with a JSON object containing only the "
            f"corrected field(s): {names}."
        )
    if instructions:
        text += f"\n{instructions}"
    return [*base, Message.assistant(bad_reply or "(empty reply)"), Message.user(text)]


def with_instructions(messages: Sequence[Message], instructions: str | None) -> list[Message]:
    """`messages` with `instructions` in the system turn: merged into the caller's first
    message when it is a system message (one system turn, first, is what every chat template
    accepts), else as a new first message."""
    out = list(messages)
    if not instructions:
        return out
    if out and out[0].role == "system":
        first = out[0]
        text = f"{first.text}\n\n{instructions}" if first.text else instructions
        out[0] = Message.system(text)
    else:
        out.insert(0, Message.system(instructions))
    return out
