"""JSON values as outform holds them: exact integers, finite numbers, valid Unicode.

orjson, the strict decoder, reads an integer beyond 64 bits as a float (losing digits), and
json-repair reads `1e400` as infinity and `"\\ud800"` as a lone surrogate. None of these is a
JSON value a caller can use, so the decode stage reads long integers exactly
(:func:`decode_exact`) and refuses values with a :func:`flaw`; the coerce stage writes numbers
as text with every digit (:func:`number_text`).
"""

from __future__ import annotations

import functools
import json
import math
import re
from typing import TYPE_CHECKING, Any

import jsonschema_rs
import orjson

from outform import jsontext
from outform.jsontext import dumps_text

if TYPE_CHECKING:
    from outform.parse.context import Deadline

_UNREAD: Any = object()

decode_exact = jsontext.loads_exact
may_be_inexact = jsontext.may_be_inexact


def encode(value: Any) -> str:
    """Compact JSON text of a value, integers of any size included; a non-finite number (which
    no decode tier returns, but a processor may) is written as JSON5 spells it, never as
    `null`."""
    if _nonfinite(value):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return dumps_text(value)


def _nonfinite(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float):
            if not math.isfinite(item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def number_text(number: int | float) -> str | None:
    """A number written as JSON with every digit, or None when it cannot be (non-finite, or
    an integer longer than Python writes out)."""
    if isinstance(number, int):
        try:
            return str(int(number))
        except ValueError:
            return None
    if not math.isfinite(number):
        return None
    return orjson.dumps(number).decode()


def flaw(value: Any, deadline: Deadline | None = None) -> str | None:
    """What makes `value` not a JSON value (a lone surrogate, a key that is not a string, a
    non-finite number), or None. One walk, bounded by the deadline."""
    stack = [value]
    steps = 0
    while stack:
        item = stack.pop()
        steps += 1
        if deadline is not None and not steps & 1023:
            deadline.check()
        if isinstance(item, str):
            if not item.isascii() and (bad := _surrogate(item)) is not None:
                return (
                    f"a lone surrogate (\\u{ord(bad):04x}) in a string, which is not Unicode text"
                )
        elif isinstance(item, float):
            if not math.isfinite(item):
                return f"a number out of range ({item}), which JSON cannot hold"
        elif isinstance(item, dict):
            for key in item:
                if not isinstance(key, str):
                    return f"a key that is not a string ({key!r})"
                stack.append(key)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return None


_NONFINITE = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\Z)|(?<![\w.])([+-]?(?:NaN|Infinity))(?!\w)')


def nonfinite_literal(text: str) -> tuple[int, str] | None:
    """Where `text` writes NaN, Infinity or -Infinity as a value (outside its strings), and
    which: JSON has no such numbers, so no level reads them (see docs/pipeline.md#values).
    Free unless one of the words occurs at all; then one linear scan."""
    if "NaN" not in text and "Infinity" not in text:
        return None
    for match in _NONFINITE.finditer(text):
        if match.group(1) is not None:
            return match.start(1), match.group(1)
    return None


def _surrogate(text: str) -> str | None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return text[exc.start]
    return None


def first_surrogate(text: str) -> int | None:
    """The index of the first lone surrogate in `text`, or None when it is valid Unicode."""
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return exc.start
    return None


_INT64_MIN = -(2**63)
_UINT64_MAX = 2**64 - 1
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_NODES = (
    "allOf",
    "anyOf",
    "oneOf",
    "prefixItems",
    "items",
    "additionalItems",
    "additionalProperties",
    "unevaluatedItems",
    "unevaluatedProperties",
    "propertyNames",
    "contains",
    "not",
    "if",
    "then",
    "else",
)


def within_64_bits(schema: Any) -> Any:
    """`schema` with every integer-typed node also bounded to 64-bit integers, or None when no
    node is integer-typed.

    The fast path validates orjson's reading of a reply, in which an integer beyond 64 bits is
    already a float that an `integer` node accepts (its value is whole): a validator of this
    schema sends such a reply to the slow path instead, which reads it exactly.
    """
    changed = False

    def walk(node: Any) -> Any:
        nonlocal changed
        if isinstance(node, list):
            return [walk(item) for item in node]
        if not isinstance(node, dict):
            return node
        out = dict(node)
        for key in _SCHEMA_MAPS:
            if isinstance(node.get(key), dict):
                out[key] = {name: walk(child) for name, child in node[key].items()}
        for key in _SCHEMA_NODES:
            if isinstance(node.get(key), dict | list):
                out[key] = walk(node[key])
        kind = node.get("type")
        if kind == "integer" or (isinstance(kind, list) and "integer" in kind):
            for keyword, bound, tighter in (
                ("minimum", _INT64_MIN, max),
                ("maximum", _UINT64_MAX, min),
            ):
                own = node.get(keyword)
                if own is None or (isinstance(own, int | float) and not isinstance(own, bool)):
                    out[keyword] = bound if own is None else tighter(own, bound)
                    changed = True
        return out

    bounded = walk(schema)
    return bounded if changed else None


def holds_long_integers(schema: Any) -> bool:
    """Whether `schema` holds an integer beyond 64 bits anywhere (an `enum` or `const` member,
    a bound). orjson reads such a number in a reply as a float, which compares otherwise with
    it (a member it no longer equals can leave another branch of a `oneOf` the only match), so
    the fast path reads a reply that may hold one exactly under such a schema."""
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, int) and not _INT64_MIN <= node <= _UINT64_MAX:
            return True
    return False


def within_depth(text: str, max_depth: int, value: Any = _UNREAD) -> bool:
    """Whether the JSON `text` (its reading `value`, if at hand) nests at most `max_depth`
    levels. Free for a text too short to nest deeper (a level takes two characters) or with
    fewer brackets than the limit; otherwise one pass of jsonschema-rs over the value."""
    if len(text) <= 2 * max_depth or text.count("[") + text.count("{") <= max_depth:
        return True
    if value is _UNREAD:
        value = orjson.loads(text)
    return bool(_depth_validator(max_depth).is_valid(value))


@functools.lru_cache(maxsize=8)
def _depth_validator(max_depth: int) -> Any:
    """A validator of nesting: level `i` holds containers only below `max_depth`."""
    levels: dict[str, Any] = {
        f"l{i}": {
            "items": {"$ref": f"#/$defs/l{i + 1}"},
            "additionalProperties": {"$ref": f"#/$defs/l{i + 1}"},
        }
        for i in range(max_depth)
    }
    levels[f"l{max_depth}"] = {"type": ["string", "number", "boolean", "null"]}
    return jsonschema_rs.validator_for({"$defs": levels, "$ref": "#/$defs/l0"})
