"""Map values between the original shape and the wire shape of a translated schema.

Most translations keep the shape of values: inlining a `$ref` or turning `oneOf` into `anyOf`
changes the schema, not the JSON the model writes. A few change it, and each has a codec here:

* the root wrapped in an object (`{"value": ...}`), for dialects that need an object root;
* an optional property made required and nullable (OpenAI strict): absent <-> null;
* a map (`additionalProperties` with a schema) written as a list of `{"key", "value"}` pairs,
  for dialects whose objects must be closed;
* a value of any type written as a JSON-encoded string, for dialects that need a type.

`forward` turns an original value into what the provider would produce; `reverse` turns what
the provider produced back into the original shape. `reverse` never raises: a reply that does
not fit the wire shape is returned as it is, and validation against the original schema says
what is wrong. `forward` raises `NotRepresentableError` for a value the wire schema cannot express
(for example a key that a closed object leaves out); the ledger lists every such narrowing.

A codec of `None` is the identity, so trees stay small: only the paths that change shape carry
codecs. Some codecs only narrow what `forward` accepts and read every wire value back as it
is; `reshapes` says whether a tree maps any value back to another.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import jsonschema_rs

from outform.jsontext import dumps_text, loads
from outform.schema import pointer

Narrowing = Literal["closed_object", "absent_or_null", "type", "ambiguous"]


class NotRepresentableError(ValueError):
    """The value is valid under the original schema but the wire schema cannot express it.

    `kind` names the narrowing (each is listed in the ledger): an undeclared key of an object
    the dialect closes, an optional key that may be absent *or* null when the wire can only say
    null, a type the wire does not allow (a type read from the node's keywords), or a value of a
    union that would read back as another branch's value (an empty map written as pairs, in a
    union that also allows an empty array).
    """

    def __init__(self, path: str, reason: str, kind: Narrowing) -> None:
        self.path = path
        self.reason = reason
        self.kind = kind
        super().__init__(f"{pointer.readable(path)}: {reason}")


class Context:
    """What codecs need at run time: the wire document (for union branches) and definitions."""

    def __init__(self, wire: Mapping[str, Any], definitions: Mapping[str, Codec | None]) -> None:
        self._defs = wire.get("$defs", {})
        self.definitions = definitions
        self._validators: dict[int, jsonschema_rs.Validator] = {}

    def fits(self, schema: Mapping[str, Any], value: Any) -> bool:
        """Whether `value` is valid under `schema`, a sub-schema of the wire document."""
        validator = self._validators.get(id(schema))
        if validator is None:
            document = {**schema, "$defs": self._defs} if self._defs else dict(schema)
            validator = self._validators[id(schema)] = jsonschema_rs.validator_for(document)
        return bool(validator.is_valid(value))


class Codec(Protocol):
    def forward(self, value: Any, ctx: Context, path: str) -> Any: ...

    def reverse(self, value: Any, ctx: Context) -> Any: ...


def forward(codec: Codec | None, value: Any, ctx: Context, path: str) -> Any:
    return value if codec is None else codec.forward(value, ctx, path)


def reverse(codec: Codec | None, value: Any, ctx: Context) -> Any:
    return value if codec is None else codec.reverse(value, ctx)


def same(a: Any, b: Any) -> bool:
    """JSON equality: like ==, but true is not 1 and 1.0 is 1 only as numbers."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, dict):
        return (
            isinstance(b, dict)
            and a.keys() == b.keys()
            and all(same(value, b[key]) for key, value in a.items())
        )
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(same, a, b))
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    return type(a) is type(b) and bool(a == b)


@dataclass(frozen=True)
class Wrap:
    """The root inside `{"value": ...}`."""

    inner: Codec | None
    key: str = "value"

    def forward(self, value: Any, ctx: Context, path: str) -> Any:
        return {self.key: forward(self.inner, value, ctx, path)}

    def reverse(self, value: Any, ctx: Context) -> Any:
        if isinstance(value, dict) and self.key in value and len(value) == 1:
            return reverse(self.inner, value[self.key], ctx)
        return value


@dataclass(frozen=True)
class Prop:
    """One declared property. `null_for_absent`: the wire requires it although the original does
    not, so the provider writes null for "no value", and a null maps back to an absent key.

    A null the model writes for an optional property therefore never reaches the caller: the
    key is left out, which the original allows, and its default (if any) applies. The one
    original value this cannot carry is an explicit null for an optional property that
    accepts null: it reads back as absent (`forward` reports it)."""

    codec: Codec | None = None
    null_for_absent: bool = False


@dataclass(frozen=True)
class Pairs:
    """A map written as `[{"key": k, "value": v}, ...]` (duplicate keys: the last one wins)."""

    value: Codec | None = None

    def forward(self, value: Any, ctx: Context, path: str) -> Any:
        if not isinstance(value, dict):
            return value
        return [
            {"key": key, "value": forward(self.value, item, ctx, pointer.join(path, key))}
            for key, item in value.items()
        ]

    def reverse(self, value: Any, ctx: Context) -> Any:
        if not isinstance(value, list) or not all(
            isinstance(pair, dict) and isinstance(pair.get("key"), str) and "value" in pair
            for pair in value
        ):
            return value
        return {pair["key"]: reverse(self.value, pair["value"], ctx) for pair in value}


@dataclass(frozen=True)
class Extras:
    """Keys an object allows beyond its declared ones, gathered under one declared key as pairs."""

    key: str
    pairs: Pairs
    required_on_wire: bool


@dataclass(frozen=True)
class Object:
    """An object whose properties (or undeclared keys) change shape.

    `open_codec` maps undeclared keys the wire still allows; `extras` gathers them under one key;
    with neither and `closed`, an undeclared key cannot be expressed.
    """

    props: Mapping[str, Prop]
    extras: Extras | None = None
    open_codec: Codec | None = None
    closed: bool = False

    def forward(self, value: Any, ctx: Context, path: str) -> Any:
        if not isinstance(value, dict):
            return value
        out: dict[str, Any] = {}
        gathered: dict[str, Any] = {}
        for name, prop in self.props.items():
            where = pointer.join(path, name)
            if name in value:
                item = value[name]
                if item is None and prop.null_for_absent:
                    raise NotRepresentableError(
                        where, "an explicit null here reads back as an absent key", "absent_or_null"
                    )
                out[name] = forward(prop.codec, item, ctx, where)
            elif prop.null_for_absent:
                out[name] = None
        for key, item in value.items():
            if key in self.props:
                continue
            if self.extras is not None:
                gathered[key] = item
            elif self.closed:
                raise NotRepresentableError(
                    pointer.join(path, key), "the wire schema closes this object", "closed_object"
                )
            else:
                out[key] = forward(self.open_codec, item, ctx, pointer.join(path, key))
        if self.extras is not None and (gathered or self.extras.required_on_wire):
            out[self.extras.key] = self.extras.pairs.forward(gathered, ctx, path)
        return out

    def reverse(self, value: Any, ctx: Context) -> Any:
        if not isinstance(value, dict):
            return value
        out: dict[str, Any] = {}
        for key, item in value.items():
            prop = self.props.get(key)
            if prop is not None:
                if item is None and prop.null_for_absent:
                    continue
                out[key] = reverse(prop.codec, item, ctx)
            elif self.extras is not None and key == self.extras.key:
                restored = self.extras.pairs.reverse(item, ctx)
                if isinstance(restored, dict):
                    out.update((k, v) for k, v in restored.items() if k not in self.props)
                else:
                    out[key] = item
            else:
                out[key] = reverse(self.open_codec, item, ctx)
        return out


@dataclass(frozen=True)
class Array:
    """Items that change shape; `prefix` for positional items, `rest` for the others."""

    rest: Codec | None = None
    prefix: tuple[Codec | None, ...] = ()

    def forward(self, value: Any, ctx: Context, path: str) -> Any:
        if not isinstance(value, list):
            return value
        return [
            forward(self._at(i), item, ctx, pointer.join(path, i)) for i, item in enumerate(value)
        ]

    def reverse(self, value: Any, ctx: Context) -> Any:
        if not isinstance(value, list):
            return value
        return [reverse(self._at(i), item, ctx) for i, item in enumerate(value)]

    def _at(self, index: int) -> Codec | None:
        return self.prefix[index] if index < len(self.prefix) else self.rest


@dataclass(frozen=True)
class JsonText:
    """Any JSON value written as a JSON-encoded string (a string that does not decode stays)."""

    def forward(self, value: Any, ctx: Context, path: str) -> Any:
        return dumps_text(value)

    def reverse(self, value: Any, ctx: Context) -> Any:
        if not isinstance(value, str):
            return value
        try:
            return loads(value)
        except ValueError:
            return value


@dataclass(frozen=True)
class Union:
    """A union whose branches change shape differently: the branch is chosen by validation.

    `forward` takes the first branch whose mapped value fits that branch's wire schema and
    reads back to the same value.
    `reverse` takes the first branch the wire value fits whose mapping reads back to the same
    wire value, so that overlapping branches do not swap values.
    """

    branches: tuple[tuple[Mapping[str, Any], Codec | None], ...]

    def forward(self, value: Any, ctx: Context, path: str) -> Any:
        problem: NotRepresentableError | None = None
        for schema, codec in self.branches:
            try:
                mapped = forward(codec, value, ctx, path)
            except NotRepresentableError as exc:
                problem = problem or exc
                continue
            if not ctx.fits(schema, mapped):
                continue
            if same(self.reverse(mapped, ctx), value):
                return mapped
            problem = NotRepresentableError(
                path, "on the wire this value reads back as another branch's", "ambiguous"
            )
        raise problem or NotRepresentableError(
            path, "no branch of the union fits the value", "type"
        )

    def reverse(self, value: Any, ctx: Context) -> Any:
        first: Any = None
        found = False
        for schema, codec in self.branches:
            if not ctx.fits(schema, value):
                continue
            restored = reverse(codec, value, ctx)
            if not found:
                first, found = restored, True
            try:
                if same(forward(codec, restored, ctx, ""), value):
                    return restored
            except NotRepresentableError:
                continue
        return first if found else value


@dataclass(frozen=True)
class Narrowed:
    """A node whose wire schema allows fewer types than the original (a type read from its
    keywords, for a dialect that needs one)."""

    types: frozenset[str]
    inner: Codec | None = None

    def forward(self, value: Any, ctx: Context, path: str) -> Any:
        kind = _json_type(value)
        if kind not in self.types and not (kind == "integer" and "number" in self.types):
            allowed = " or ".join(sorted(self.types))
            raise NotRepresentableError(path, f"the wire schema only allows {allowed} here", "type")
        return forward(self.inner, value, ctx, path)

    def reverse(self, value: Any, ctx: Context) -> Any:
        return reverse(self.inner, value, ctx)


@dataclass(frozen=True)
class Chain:
    """Several codecs on one node (an untyped node with both object and array keywords): each
    leaves values of other types alone."""

    codecs: tuple[Codec, ...]

    def forward(self, value: Any, ctx: Context, path: str) -> Any:
        for codec in self.codecs:
            value = codec.forward(value, ctx, path)
        return value

    def reverse(self, value: Any, ctx: Context) -> Any:
        for codec in self.codecs:
            value = codec.reverse(value, ctx)
        return value


def chain(codecs: list[Codec | None]) -> Codec | None:
    present = [codec for codec in codecs if codec is not None]
    if not present:
        return None
    return present[0] if len(present) == 1 else Chain(tuple(present))


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


@dataclass(frozen=True)
class Defined:
    """A reference to a definition; its codec is looked up when used (definitions may recurse)."""

    name: str

    def forward(self, value: Any, ctx: Context, path: str) -> Any:
        return forward(ctx.definitions.get(self.name), value, ctx, path)

    def reverse(self, value: Any, ctx: Context) -> Any:
        return reverse(ctx.definitions.get(self.name), value, ctx)


def reshapes(
    codec: Codec | None, definitions: Mapping[str, Codec | None], seen: frozenset[str] = frozenset()
) -> bool:
    """Whether `reverse` can return anything but the value it is given. Some codecs only
    narrow what `forward` accepts (a closed object, a type read from keywords) and map every
    wire value back as it is: a translation made of those needs no reverse step at all."""
    if codec is None:
        return False
    if isinstance(codec, Object):
        return (
            codec.extras is not None
            or reshapes(codec.open_codec, definitions, seen)
            or any(
                p.null_for_absent or reshapes(p.codec, definitions, seen)
                for p in codec.props.values()
            )
        )
    if isinstance(codec, Array):
        return any(reshapes(c, definitions, seen) for c in (codec.rest, *codec.prefix))
    if isinstance(codec, Union):
        return any(reshapes(c, definitions, seen) for _, c in codec.branches)
    if isinstance(codec, Narrowed):
        return reshapes(codec.inner, definitions, seen)
    if isinstance(codec, Chain):
        return any(reshapes(c, definitions, seen) for c in codec.codecs)
    if isinstance(codec, Defined):
        if codec.name in seen:  # a recursion: the definition's other paths decide
            return False
        return reshapes(definitions.get(codec.name), definitions, seen | {codec.name})
    return True  # Wrap, Pairs, JsonText: the wire value is another value


__all__ = [
    "Array",
    "Chain",
    "Codec",
    "Context",
    "Defined",
    "Extras",
    "JsonText",
    "Narrowed",
    "Narrowing",
    "NotRepresentableError",
    "Object",
    "Pairs",
    "Prop",
    "Union",
    "Wrap",
    "chain",
    "forward",
    "reshapes",
    "reverse",
    "same",
]
