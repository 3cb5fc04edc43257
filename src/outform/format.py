"""`ResponseFormat`: the one knob a caller turns to say what shape the reply must have.

Three variants: free text, any JSON object, or JSON matching a schema. The dictionary form is
the flat shape of the OpenAI Responses API `text.format`, so a format received over HTTP can be
forwarded, stored and compared without loss; a `type` outform does not know is kept verbatim.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar

from outform.errors import SchemaError
from outform.schema.canonical import schema_hash
from outform.schema.derive import schema_of, type_name

_NAME_INVALID = re.compile(r"[^A-Za-z0-9_-]+")
_KNOWN_KEYS: dict[str, frozenset[str]] = {
    "text": frozenset({"type"}),
    "json_object": frozenset({"type"}),
    "json_schema": frozenset({"type", "name", "schema", "strict", "description"}),
}


@dataclass(frozen=True)
class ResponseFormat:
    """Base class of the three formats (and of formats outform does not know)."""

    TYPE: ClassVar[str] = ""
    extra: Mapping[str, Any] = field(default_factory=dict, kw_only=True, compare=False)
    """Keys received in the dictionary form that outform does not interpret, kept for forwarding."""

    @staticmethod
    def text() -> TextFormat:
        return TextFormat()

    @staticmethod
    def json_object() -> JsonObjectFormat:
        return JsonObjectFormat()

    @staticmethod
    def json_schema(
        schema: Mapping[str, Any],
        *,
        name: str = "response",
        strict: bool | None = None,
        description: str | None = None,
    ) -> JsonSchemaFormat:
        if not isinstance(schema, Mapping):
            raise SchemaError(
                f"a JSON schema must be an object, got {type(schema).__name__}",
                fix="pass a dict such as {'type': 'object', 'properties': {...}}",
            )
        return JsonSchemaFormat(
            name=sanitize_name(name), schema=dict(schema), strict=strict, description=description
        )

    @staticmethod
    def of(
        output_type: Any,
        *,
        name: str | None = None,
        strict: bool | None = None,
        description: str | None = None,
    ) -> JsonSchemaFormat:
        """Derive the format from a Pydantic model, dataclass, TypedDict or any type
        Pydantic's TypeAdapter accepts; the value parsed under it is returned as that type."""
        return JsonSchemaFormat(
            name=sanitize_name(name or type_name(output_type)),
            schema=schema_of(output_type),
            strict=strict,
            description=description,
            output_type=output_type,
        )

    @staticmethod
    def from_dict(data: Mapping[str, Any]) -> ResponseFormat:
        """Read the flat `text.format` shape. Unknown types are preserved, never rejected."""
        if not isinstance(data, Mapping) or not isinstance(data.get("type"), str):
            raise SchemaError(
                "a response format needs a string 'type'",
                where=f"got {data!r:.120}",
                fix="use {'type': 'text'}, {'type': 'json_object'} or "
                "{'type': 'json_schema', 'name': ..., 'schema': {...}}",
            )
        kind = data["type"]
        known = _KNOWN_KEYS.get(kind)
        if known is None:
            return UnknownFormat(raw=dict(data))
        extra = {k: v for k, v in data.items() if k not in known}
        if kind == "text":
            return TextFormat(extra=extra)
        if kind == "json_object":
            return JsonObjectFormat(extra=extra)
        schema = data.get("schema")
        if not isinstance(schema, Mapping):
            raise SchemaError(
                "a json_schema response format needs a 'schema' object",
                where="text.format.schema",
                fix="add 'schema': {...} with the JSON Schema the reply must match",
            )
        for key, kind in (("name", str), ("strict", bool), ("description", str)):
            if key in data and data[key] is not None and not isinstance(data[key], kind):
                raise SchemaError(
                    f"'{key}' of a json_schema response format must be a {kind.__name__}, "
                    f"got {data[key]!r}",
                    where=f"text.format.{key}",
                    fix=f"send a {kind.__name__} or leave '{key}' out",
                )
        return JsonSchemaFormat(
            name=data.get("name") or "response",
            schema=dict(schema),
            strict=data.get("strict"),
            description=data.get("description"),
            extra=extra,
        )

    @property
    def type(self) -> str:
        """The `type` of the dictionary form: text, json_object, json_schema or another."""
        return self.TYPE

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, **self.extra}


@dataclass(frozen=True)
class TextFormat(ResponseFormat):
    """Free text: the reply is returned as it is."""

    TYPE: ClassVar[str] = "text"


@dataclass(frozen=True)
class JsonObjectFormat(ResponseFormat):
    """Any JSON object."""

    TYPE: ClassVar[str] = "json_object"


@dataclass(frozen=True)
class JsonSchemaFormat(ResponseFormat):
    """JSON matching `schema`; values are returned as `output_type` when one was given."""

    TYPE: ClassVar[str] = "json_schema"
    name: str
    schema: dict[str, Any]
    strict: bool | None = None
    description: str | None = None
    output_type: Any = field(default=None, compare=False, repr=False)

    @cached_property
    def schema_hash(self) -> str:
        """sha256 of the schema's canonical JSON: stable across key order and processes."""
        return schema_hash(self.schema)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type, "name": self.name, "schema": self.schema}
        if self.strict is not None:
            out["strict"] = self.strict
        if self.description is not None:
            out["description"] = self.description
        out.update(self.extra)
        return out


@dataclass(frozen=True)
class UnknownFormat(ResponseFormat):
    """A `type` outform does not know: kept verbatim so it can be forwarded unchanged."""

    raw: dict[str, Any]

    @property
    def type(self) -> str:
        return str(self.raw["type"])

    def to_dict(self) -> dict[str, Any]:
        return dict(self.raw)


def sanitize_name(name: str) -> str:
    """Make `name` fit `[A-Za-z0-9_-]{1,64}`, the rule every provider's schema name shares."""
    cleaned = _NAME_INVALID.sub("_", name)
    if cleaned != name:
        cleaned = cleaned.strip("_")
    return cleaned[:64] or "response"


__all__ = [
    "JsonObjectFormat",
    "JsonSchemaFormat",
    "ResponseFormat",
    "TextFormat",
    "UnknownFormat",
    "sanitize_name",
]
