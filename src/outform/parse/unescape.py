"""Stage *unescape*: undo JSON that was encoded as a JSON string, once or twice.

Models (and tools in between) sometimes return `"{\\"k\\": 1}"`: a string whose content is the
JSON that was wanted, or the same text without the outer quotes. Decoding is bounded by depth
(default 2) and by the size of the string, so a hostile reply cannot make it loop or balloon.
"""

from __future__ import annotations

from typing import Any

import orjson

_MAX_UNESCAPE_CHARS = 10_000_000


def looks_escaped(text: str) -> bool:
    """Text like `{\\"k\\": 1}`: JSON whose quotes are all backslash-escaped."""
    head = text[:3]
    return head in ('{\\"', '[\\"', "[{\\") or (head[:1] in "{[" and '\\"' in text[:64])


def unescape_text(text: str) -> str | None:
    """Read `text` as the body of a JSON string literal; None when it is not one."""
    if len(text) > _MAX_UNESCAPE_CHARS:
        return None
    try:
        inner = orjson.loads(b'"' + text.encode() + b'"')
    except orjson.JSONDecodeError:
        return None
    return inner if isinstance(inner, str) and inner != text else None


def unescape_value(value: Any, depth: int) -> tuple[Any, int]:
    """Decode a string holding an object or array, up to `depth` levels.

    Returns the value and how many levels were decoded (0 when nothing was done).
    """
    levels = 0
    while levels < depth and isinstance(value, str) and len(value) <= _MAX_UNESCAPE_CHARS:
        inner = value.strip()
        if inner[:1] not in ("{", "[", '"'):
            break
        try:
            decoded = orjson.loads(inner)
        except orjson.JSONDecodeError:
            break
        if isinstance(decoded, str) and decoded.strip()[:1] not in ("{", "["):
            break
        value = decoded
        levels += 1
    return value, levels
