"""Derive a JSON Schema from a Python type through Pydantic's TypeAdapter."""

from __future__ import annotations

import functools
import inspect
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
    if isinstance(output_type, str | bytes | bool | int | float | list):
        # schema="..." reaches here too: a value that is no schema and no type (a boolean
        # schema, true or false, is read as one before; ResponseFormat.of(True) is not)
        raise SchemaError(
            f"neither a schema nor a type: {type(output_type).__name__} {_short(output_type)}",
            where="the output (schema= or type=)",
            fix="pass a JSON Schema as a dict (json.loads one written as text), a "
            "ResponseFormat, or a type (a class or a type expression such as list[Invoice])",
        )
    if not is_type(output_type):
        raise SchemaError(
            f"not a type: {type_name(output_type)!r} is {_kind(output_type)}",
            where=f"type {output_type!r}",
            fix="pass a class (a Pydantic model, dataclass, TypedDict, int, ...) or a type "
            "expression such as list[Invoice] or Invoice | None",
        )
    try:
        return TypeAdapter(output_type)
    except (PydanticSchemaGenerationError, PydanticUserError, TypeError, NameError) as exc:
        raise SchemaError(
            f"cannot build a schema for {type_name(output_type)!r}: {exc}",
            where=f"type {output_type!r}",
            fix="use a Pydantic model, dataclass, TypedDict or a type Pydantic's TypeAdapter "
            "accepts (forward references must be resolvable)",
        ) from exc


def _short(value: Any) -> str:
    written = repr(value)
    return written if len(written) <= 40 else written[:39] + "…"


def is_type(candidate: Any) -> bool:
    """Whether `candidate` can describe values: a class, a parametrised or special typing form
    (`list[int]`, `A | B`, `Literal[...]`, `Annotated[...]`, `Any`), a NewType or a `type`
    alias; not a function, a module, a string or another value. Pydantic would read a string
    as a forward reference and a function as a call signature; both are mistakes here."""
    if isinstance(candidate, type) or candidate is None or candidate is typing.Any:
        return True
    if typing.get_origin(candidate) is not None:
        return True
    if isinstance(candidate, typing.NewType):
        return True
    alias = getattr(typing, "TypeAliasType", None)  # Python 3.12+: `type Name = ...`
    return alias is not None and isinstance(candidate, alias)


def _kind(value: Any) -> str:
    if callable(value):
        return "a function" if inspect.isroutine(value) else "a callable object"
    if inspect.ismodule(value):
        return "a module"
    return f"a value of type {type(value).__name__}"


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
