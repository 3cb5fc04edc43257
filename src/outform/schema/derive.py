"""Derive a JSON Schema from a Python type through Pydantic's TypeAdapter."""

from __future__ import annotations

import functools
import typing
from typing import Any

from pydantic import PydanticUserError, TypeAdapter
from pydantic.errors import PydanticSchemaGenerationError

from outform.errors import SchemaError, guarded


def adapter_for(output_type: Any) -> TypeAdapter[Any]:
    """A TypeAdapter for the type, built once per type (building one costs milliseconds)."""
    try:
        return _cached_adapter(output_type)
    except TypeError:  # an unhashable type expression (e.g. Annotated with a dict in it)
        return _build_adapter(output_type)


@functools.lru_cache(maxsize=512)
def _cached_adapter(output_type: Any) -> TypeAdapter[Any]:
    return _build_adapter(output_type)


def _build_adapter(output_type: Any) -> TypeAdapter[Any]:
    try:
        return TypeAdapter(output_type)
    except (PydanticSchemaGenerationError, PydanticUserError, TypeError, NameError) as exc:
        raise SchemaError(
            f"cannot build a schema for {type_name(output_type)!r}: {exc}",
            where=f"type {output_type!r}",
            fix="use a Pydantic model, dataclass, TypedDict or a type Pydantic's TypeAdapter "
            "accepts (forward references must be resolvable)",
        ) from exc


@guarded("schema")
def schema_of(output_type: Any) -> dict[str, Any]:
    """The JSON Schema (validation mode) Pydantic generates for the type."""
    adapter = adapter_for(output_type)
    try:
        return adapter.json_schema()
    except (PydanticSchemaGenerationError, PydanticUserError, TypeError) as exc:
        raise SchemaError(
            f"{type_name(output_type)!r} has no JSON Schema: {exc}",
            where=f"type {output_type!r}",
            fix="replace fields of arbitrary Python classes with JSON-representable types",
        ) from exc


def type_name(output_type: Any) -> str:
    """A readable name: the class name, or the type expression for generics and unions."""
    if typing.get_origin(output_type) is None:
        name = getattr(output_type, "__name__", None)
        if isinstance(name, str):
            return name
    return repr(output_type).replace("typing.", "")
