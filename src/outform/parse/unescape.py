"""Stage *unescape*: undo JSON that was encoded as a JSON string, once or several times.

Models (and tools in between) sometimes return `"{\\"k\\": 1}"`: a string whose content is the
JSON that was wanted, or the same text without the outer quotes; a chain of tools can quote it
again at every step. Decoding goes as deep as `unescape_depth` says; every level is one linear
decode of a shorter string, and the deadline is checked before each.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    from outform.parse.context import Deadline

_OPENERS = ("{", "[")

ESCAPE_WINDOW = 64
"""How many characters from a value's start `looks_escaped` reads."""


def looks_escaped(text: str) -> bool:
    """Text like `{\\"k\\": 1}`: JSON whose quotes are all backslash-escaped."""
    head = text[:3]
    return head in ('{\\"', '[\\"', "[{\\") or (head[:1] in "{[" and '\\"' in text[:ESCAPE_WINDOW])


def may_look_escaped(prefix: str) -> bool:
    """Whether more text after `prefix` (a value's start, still arriving) could make it look
    escaped. While fewer than `ESCAPE_WINDOW` characters are known, the verdict waits when
    the text holds a backslash: a chunk may end inside the first escape (`{\\`, `{\\u00`), and
    `{\\u0022k\\u0022: \\"v\\"}` shows its first `\\"` only later. Up to the first backslash
    unescaping changes nothing, so a syntax error before it is final."""
    return len(prefix) < ESCAPE_WINDOW and prefix[:1] in "{[" and "\\" in prefix


def unescape_text(text: str) -> str | None:
    """Read `text` as the body of a JSON string literal; None when it is not one."""
    try:
        inner = orjson.loads(b'"' + text.encode() + b'"')
    except (orjson.JSONDecodeError, UnicodeEncodeError):
        return None
    return inner if isinstance(inner, str) and inner != text else None


def unescape_value(value: Any, depth: int, deadline: Deadline | None = None) -> tuple[Any, int]:
    """Decode a string holding an object or array (possibly quoted again, level after level),
    up to `depth` levels.

    Returns the value and how many levels were decoded (0 when nothing was done). A chain that
    ends in plain text, not an object or array, is left as it was.
    """
    levels = 0
    current = value
    while levels < depth and isinstance(current, str):
        if deadline is not None:
            deadline.check()
        inner = current.strip()
        if inner[:1] not in ("{", "[", '"'):
            break
        try:
            decoded = orjson.loads(inner)
        except orjson.JSONDecodeError:
            break
        if isinstance(decoded, str) and decoded.strip()[:1] not in ("{", "[", '"'):
            break
        current = decoded
        levels += 1
    if isinstance(current, str) and not current.strip().startswith(_OPENERS):
        return value, 0  # only quotes were removed: no JSON value came out
    return current, levels
