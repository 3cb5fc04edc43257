"""Reading a provider's reply safely: its shape checked first, its errors without secrets.

Adapters read provider JSON with `.get()` and iteration, trusting it to have the API's shape.
A body that is JSON but not that shape (`"choices": [null]`, a number where text goes, a
string where a list goes) would otherwise surface as an AttributeError deep inside an adapter,
or worse, as a value of the wrong type handed on as if it were the reply. So each adapter
describes, with the small vocabulary below, the fields it reads of a body and of each stream
event, and checks them before reading: a mismatch raises a `ProviderError` (a
`StreamInterruptedError` for a stream event, as for an event that is not JSON at all) naming
the provider, the path where the shape broke and what the API has there, with a scrubbed
excerpt of the body. A well-formed body passes the check untouched, so an exception raised
while it is read afterwards is a bug in outform, and shows as one.

The shapes are lenient where the APIs and the servers that copy them vary: every field is
optional, a `null` field counts as absent (unless the API never sends one there, such as a
tool-call `index`), unknown fields pass, and only what the adapter reads is described. They
are strict about what it reads: objects must be objects, arrays arrays, text text and counts
numbers.

An error the provider reports inside a reply (a streamed error event, a Responses reply whose
status is `failed`) is raised with its message and body scrubbed of secrets as transport does
for an HTTP error status: keys outform knows and the shapes of common provider keys
(`outform.trace.redact`) never reach an error's message or body.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import jsonschema_rs
import orjson

from outform.errors import ProviderError, RateLimitError, StreamInterruptedError
from outform.trace import redact

EXCERPT: Final = 2_000
"""The longest body kept on an error, as transport keeps it."""
_SHORT: Final = 60
"""The longest piece of a value quoted in a message."""

# -- secrets -------------------------------------------------------------------------------


def hidden(text: str) -> str:
    """`text`, from a provider's reply, without any secret outform knows of or recognizes."""
    return redact.scrub_text(text)


def excerpt(value: Any) -> str:
    """A provider's JSON as text, scrubbed, then cut to `EXCERPT` characters (scrubbed first,
    so that a cut cannot leave a key too short to be recognized)."""
    if isinstance(value, str):
        text = value
    else:
        text = orjson.dumps(value, default=str, option=orjson.OPT_NON_STR_KEYS).decode()
    text = hidden(text)
    return text[:EXCERPT] + ("…" if len(text) > EXCERPT else "")


# -- errors the provider reports -----------------------------------------------------------

_RATE_LIMITED: Final = ("throttl", "rate_limit", "rate limit", "overloaded", "resource_exhausted")


def reported(
    provider: str,
    message: Any,
    *,
    kind: Any = None,
    body: Any,
    stream: bool = True,
    limited: bool = False,
    fix: str | None = None,
) -> ProviderError:
    """The error for a failure the provider reported inside a reply: a `RateLimitError` when
    it says (or `limited` says) it is overloaded or rate limited, else a
    `StreamInterruptedError` in a stream or a `ProviderError` for a whole reply. Message and
    body are scrubbed."""
    label = f" ({kind})" if kind not in (None, "") else ""
    what = hidden(f"{provider} {'stream' if stream else 'response'} failed{label}: {message}")
    words = f"{kind} {message}".lower()
    if limited or str(kind) == "429" or any(word in words for word in _RATE_LIMITED):
        return RateLimitError(
            what,
            provider=provider,
            body=excerpt(body),
            fix="slow down, or retry later; the provider's limit was reached",
        )
    error = StreamInterruptedError if stream else ProviderError
    return error(
        what,
        provider=provider,
        body=excerpt(body),
        fix=fix or ("the reply so far is incomplete; retry the call" if stream else None),
    )


def error_message(error: Any) -> tuple[Any, Any]:
    """`(message, kind)` of an error object in the usual shapes (`{"message", "code" | "type" |
    "status"}`), or of a bare string."""
    if isinstance(error, Mapping):
        kind = next((error[k] for k in ("code", "type", "status") if error.get(k)), None)
        return error.get("message", error), kind
    return error, None


# -- shapes --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Mismatch:
    path: str
    expected: str
    value: Any


class Shape:
    """What one value of a reply must be. `nullable`: as a field of an object, whether `null`
    counts as the field being absent (array items are never null).

    A shape is checked twice over, the same way: as a JSON Schema by jsonschema-rs (`schema`,
    compiled once: the check every reply takes, in C) and, only when that fails, by `mismatch`,
    which says where and what, in the words of the errors."""

    expected: str = "anything"
    nullable: bool = True
    _compiled: Any = None

    def mismatch(self, value: Any, path: str) -> Mismatch | None:
        return None

    def schema(self) -> dict[str, Any]:
        return {}

    def accepts(self, value: Any) -> bool:
        """Whether `value` has this shape (one validator call)."""
        compiled = self._compiled
        if compiled is None:
            compiled = self._compiled = jsonschema_rs.validator_for(self.schema())
        return bool(compiled.is_valid(value))


def _field(shape: Shape) -> dict[str, Any]:
    """`shape` as the schema of an object's field: null taken as absent when it is nullable."""
    schema = shape.schema()
    if not shape.nullable or not schema:
        return schema
    return {"anyOf": [{"type": "null"}, schema]}


_JSON_TYPES: Final = {str: "string", int: "integer", float: "number", bool: "boolean"}


class Kind(Shape):
    """A JSON scalar of the given Python types (a boolean is not a number)."""

    def __init__(self, expected: str, *types: type, nullable: bool = True) -> None:
        self.expected = expected
        self.types = types
        self.nullable = nullable

    def mismatch(self, value: Any, path: str) -> Mismatch | None:
        if isinstance(value, bool) and bool not in self.types:
            return Mismatch(path, self.expected, value)
        if isinstance(value, self.types):
            return None
        if int in self.types and isinstance(value, float) and value.is_integer():
            return None  # (JSON's integer, as JSON Schema reads it: 1.0 is 1)
        return Mismatch(path, self.expected, value)

    def schema(self) -> dict[str, Any]:
        return {"type": sorted({_JSON_TYPES[kind] for kind in self.types})}


class Obj(Shape):
    """A JSON object; the fields named are checked when present."""

    expected = "an object"

    def __init__(self, fields: Mapping[str, Shape] | None = None, *, nullable: bool = True):
        self.fields = dict(fields or {})
        self.nullable = nullable

    def mismatch(self, value: Any, path: str) -> Mismatch | None:
        if not isinstance(value, Mapping):
            return Mismatch(path, self.expected, value)
        for key, shape in self.fields.items():
            if key not in value:
                continue
            item = value[key]
            where = f"{path}.{key}" if path else key
            if item is None:
                if not shape.nullable:
                    return Mismatch(where, shape.expected, item)
                continue
            found = shape.mismatch(item, where)
            if found is not None:
                return found
        return None

    def schema(self) -> dict[str, Any]:
        fields = {key: _field(shape) for key, shape in self.fields.items()}
        return {"type": "object", "properties": fields}


class Arr(Shape):
    """A JSON array whose every item has the item's shape."""

    expected = "an array"

    def __init__(self, item: Shape, *, nullable: bool = True) -> None:
        self.item = item
        self.nullable = nullable

    def mismatch(self, value: Any, path: str) -> Mismatch | None:
        if not isinstance(value, list):
            return Mismatch(path, self.expected, value)
        for index, item in enumerate(value):
            where = f"{path}[{index}]"
            found = (
                Mismatch(where, self.item.expected, item)
                if item is None
                else self.item.mismatch(item, where)
            )
            if found is not None:
                return found
        return None

    def schema(self) -> dict[str, Any]:
        return {"type": "array", "items": {"not": {"type": "null"}, **self.item.schema()}}


class Either(Shape):
    """One of several shapes. When the value is of one arm's kind but wrong inside, the
    mismatch inside is the one reported."""

    def __init__(self, *arms: Shape, nullable: bool = True) -> None:
        self.arms = arms
        self.expected = " or ".join(arm.expected for arm in arms)
        self.nullable = nullable

    def mismatch(self, value: Any, path: str) -> Mismatch | None:
        deeper: Mismatch | None = None
        for arm in self.arms:
            found = arm.mismatch(value, path)
            if found is None:
                return None
            if found.path != path and deeper is None:
                deeper = found
        return deeper or Mismatch(path, self.expected, value)

    def schema(self) -> dict[str, Any]:
        return {"anyOf": [arm.schema() for arm in self.arms]}


class Tagged(Shape):
    """A JSON object whose shape depends on its `type` (or another key); an object of a type
    not listed is not looked into."""

    expected = "an object"

    def __init__(
        self, cases: Mapping[str, Shape], *, key: str = "type", nullable: bool = True
    ) -> None:
        self.cases = dict(cases)
        self.key = key
        self.nullable = nullable

    def mismatch(self, value: Any, path: str) -> Mismatch | None:
        if not isinstance(value, Mapping):
            return Mismatch(path, self.expected, value)
        tag = value.get(self.key)
        shape = self.cases.get(tag) if isinstance(tag, str) else None
        return shape.mismatch(value, path) if shape is not None else None

    def schema(self) -> dict[str, Any]:
        key = self.key
        cases = [
            {"if": {"properties": {key: {"const": tag}}, "required": [key]}, "then": shape.schema()}
            for tag, shape in self.cases.items()
        ]
        return {"type": "object", "allOf": cases}


ANY: Final = Shape()
TEXT: Final = Kind("a string", str)
STRING: Final = Kind("a string", str, nullable=False)
"""Text the API always sends as a string when the field is there (a text block's text)."""
NUMBER: Final = Kind("a number", int, float)
FLAG: Final = Kind("a boolean", bool)
INTEGER: Final = Kind("an integer", int)
INDEX: Final = Kind("an integer", int, nullable=False)
"""A position the API always sends as an integer (a tool call's or a content block's index)."""
OBJECT: Final = Obj()


def check_body(provider: str, shape: Shape, body: Any) -> None:
    """Raise ProviderError unless `body` (a whole reply) has `shape`."""
    if shape.accepts(body):
        return
    found = shape.mismatch(body, "")
    if found is not None:
        raise ProviderError(
            f"{provider} answered with a body that is not its API's shape: {_said(found)}",
            provider=provider,
            body=excerpt(body),
            where=found.path or None,
            fix="check that the base URL points at a server speaking this provider's API "
            "(a proxy may rewrite replies); if it does, retry the call",
        )


def check_event(provider: str, shape: Shape, event: Any) -> None:
    """Raise StreamInterruptedError unless `event` (one stream event) has `shape`."""
    if shape.accepts(event):
        return
    found = shape.mismatch(event, "")
    if found is not None:
        raise StreamInterruptedError(
            f"{provider} sent a stream event that is not its API's shape: {_said(found)}",
            provider=provider,
            body=excerpt(event),
            where=found.path or None,
            fix="the reply so far is incomplete; check that the base URL points at a server "
            "speaking this provider's API, or retry the call",
        )


def _said(found: Mismatch) -> str:
    where = found.path or "the whole of it"
    return f"{where} is {_described(found.value)}, where the API has {found.expected}"


def _described(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        text = hidden(value)
        quoted = orjson.dumps(text[:_SHORT]).decode()
        return f"the string {quoted}{'…' if len(text) > _SHORT else ''}"
    if isinstance(value, int | float):
        return f"the number {value}"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, Mapping):
        return "an object"
    return f"a {type(value).__name__}"


__all__ = [
    "ANY",
    "FLAG",
    "INDEX",
    "INTEGER",
    "NUMBER",
    "OBJECT",
    "STRING",
    "TEXT",
    "Arr",
    "Either",
    "Kind",
    "Obj",
    "Shape",
    "Tagged",
    "check_body",
    "check_event",
    "error_message",
    "excerpt",
    "hidden",
    "reported",
]
