"""Rewrite string values written in other languages' syntax as JSON strings.

Models that write code into JSON often reach for the literal syntax of the code's language:
Python's `\"\"\"triple quotes\"\"\"`, JavaScript's `` `backticks` ``, or a Markdown fence used
as a value. JSON has none of these, so tolerant decoders split such values at the first inner
quote. This pass, run before the last decode tier, turns each into an ordinary JSON string:
the leading line break and the common indentation are removed, as a reader of the code expects.
Only literals standing where a JSON value may start (after `:`, `,` or `[`) are rewritten.
"""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING

import orjson

if TYPE_CHECKING:
    from outform.parse.context import Deadline


def rewrite_literals(text: str, deadline: Deadline | None = None) -> str | None:
    """The text with foreign string literals rewritten, or None when there were none."""
    if '"""' not in text and "`" not in text:
        return None
    out: list[str] = []
    i = 0
    n = len(text)
    changed = False
    steps = 0
    while i < n:
        steps += 1
        if deadline is not None and not steps & 4095:
            deadline.check()
        c = text[i]
        if c == '"' and not text.startswith('"""', i):
            end = _json_string_end(text, i)
            out.append(text[i:end])
            i = end
            continue
        if c in ('"', "`"):
            fence = '"""' if c == '"' else "```" if text.startswith("```", i) else "`"
            close = text.find(fence, i + len(fence))
            if close == -1 or not _value_expected(out):
                out.append(c)  # no closing delimiter: not a literal, leave it to the decoder
                i += 1
                continue
            body = text[i + len(fence) : close]
            if fence == "```":
                first, newline, rest = body.partition("\n")
                if newline and (not first.strip() or first.strip().isidentifier()):
                    body = rest  # drop the info string ("python") of a fenced value
            out.append(orjson.dumps(_tidy(body, fence)).decode())
            i = close + len(fence)
            changed = True
            continue
        out.append(c)
        i += 1
    return "".join(out) if changed else None


def _value_expected(out: list[str]) -> bool:
    """Whether the text so far ends where a JSON value may start (after `:`, `,` or `[`)."""
    for piece in reversed(out):
        stripped = piece.rstrip()
        if stripped:
            return stripped[-1] in ":,["
    return False


def _json_string_end(text: str, start: int) -> int:
    """Index just past the JSON string that opens at `start` (or the end of the text)."""
    i = start + 1
    n = len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
        elif c == '"':
            return i + 1
        else:
            i += 1
    return n


def _tidy(body: str, fence: str) -> str:
    if fence == "`":
        return body
    if body.startswith("\n"):
        body = body[1:]
    return textwrap.dedent(body).rstrip()
