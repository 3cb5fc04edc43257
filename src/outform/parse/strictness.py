"""Where a typed output's reading of JSON is looser than the JSON Schema outform checks.

A reply valid as sent takes the typed fast path: Pydantic reads and validates the text in one
call, in strict mode, and outform records nothing. That is right only where Pydantic's strict
reading accepts no value the type's JSON Schema refuses. Three places of a type break it:

- **Members compared by equality.** A `Literal` or an `Enum` (an `IntEnum`, a `Literal[1, 2]`,
  a `Literal[True]`, a float enum) is matched by Python's `==`, for which `True == 1` and
  `False == 0.0`: `{"x": true}` passed for `Literal[1, 2]` as 1, with no change, while the
  schema (`enum: [1, 2]`) says a boolean is no member, and the slow path refuses it (or records
  a coercion: `1` → `true` for `Literal[True]`). :func:`compares_numbers` finds such a place
  (an `enum` or `const` holding a number or a boolean) in the schema.
- **Decimals read from strings.** A `Decimal` is written `anyOf: [number, string]`: any string
  passes, and Pydantic reads whatever Python's `Decimal` reads (`" 1.5"`, `"1_000"`, digits of
  any script) and refuses the rest (`"$1,234.50"`) only after the schema said it is valid, so
  the coercion stage never saw it. :func:`decimal_schema` writes the type's schema with each
  decimal's string a decimal literal (`pattern`), so that the schema says what the type reads
  as JSON writes numbers, and anything else is converted by the rules of a number field (and
  recorded) or refused.

- **Validators that read the input.** A before, wrap or plain validator of the type's own code
  (`BeforeValidator`, `WrapValidator`, `PlainValidator`, `field_validator` or
  `model_validator` in those modes, at any depth) is given the reply's value before the type
  reads it, and may take what the schema refuses (`"1,2,3"` split into `list[int]`), which the
  slow path coerces (recorded) or refuses first. :func:`own_readers` finds one in the type's
  core schema. (Pydantic's own functions, for the types whose reading it writes them for, a
  URL, an IP address, a `Sequence`, read what the schema it writes for them says.)

For a type with any such place, the fast path also checks the reply's plain JSON against the
schema (one orjson call, one validator call), and a reply it refuses takes the slow path,
whose answer (a recorded coercion, or a violation) then holds at every level. Types without
one pay nothing more.
"""

from __future__ import annotations

import functools
from typing import Any

from pydantic import TypeAdapter
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

from outform.parse import by_name

DECIMAL = r"^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$"
"""A decimal written as a number literal: ASCII digits, a point, an exponent (what Pydantic's
own decimal pattern, `GenerateJsonSchema.build_decimal_pattern`, accepts without constraints)."""
DECIMAL_OR_NONFINITE = (
    r"^[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
    r"|[iI][nN][fF](?:[iI][nN][iI][tT][yY])?|[sS]?[nN][aA][nN][0-9]*)$"
)
"""The same, with the words a decimal that allows infinity and NaN (`allow_inf_nan`) reads."""

_NOT_COMPARED = frozenset({"default", "examples", "title", "description", "$comment"})
"""Keywords whose values are no schema and compare nothing."""
_NAMED = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})
"""Keywords whose values map names (not keywords) to schemas."""
_NUMERIC = (bool, int, float)


def compares_numbers(schema: Any) -> bool:
    """Whether an `enum` or `const` of `schema` holds a number or a boolean (alone, or inside
    an array or object member): a place where Python's `==` (`True == 1`) lets a typed output
    take a value the schema refuses. One walk of the schema; an enum's members are told apart
    by type in one pass in C (enums may have a million members)."""
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(item for item in node if isinstance(item, dict | list))
            continue
        if not isinstance(node, dict):
            continue
        for key, child in node.items():
            if key in _NOT_COMPARED:
                continue
            if key == "const" and _holds_numbers(child):
                return True
            if key == "enum" and isinstance(child, list) and _holds_numbers(child):
                return True
            if key in _NAMED and isinstance(child, dict):
                stack.extend(item for item in child.values() if isinstance(item, dict))
            elif key not in ("const", "enum") and isinstance(child, dict | list):
                stack.append(child)
    return False


_READERS = frozenset({"function-before", "function-wrap", "function-plain"})
"""Core schemas of a validator that is given the input before (or instead of) the type."""
_NOT_VALIDATING = frozenset({"config", "metadata", "cls", "serialization"})
"""Keys of a core schema node whose values hold no validator (a serializer's functions are
written as validators are)."""


def own_readers(adapter: TypeAdapter[Any]) -> bool:
    """Whether the type runs a before, wrap or plain validator of code other than Pydantic's
    own anywhere (a model's, a field's, an `Annotated` one): one that may read a value the
    type's schema refuses (see the module). One walk of the core schema."""
    stack: list[Any] = [adapter.core_schema]
    while stack:
        node = stack.pop()
        if isinstance(node, list | tuple):
            stack.extend(node)
            continue
        if not isinstance(node, dict):
            continue
        function = node.get("function")
        if node.get("type") in _READERS and not _pydantics(
            function.get("function") if isinstance(function, dict) else None
        ):
            return True
        stack.extend(v for k, v in node.items() if k not in _NOT_VALIDATING)
    return False


def _pydantics(function: Any) -> bool:
    """Whether `function` is Pydantic's own (how it reads a URL, an IP address, a
    `Sequence`); a function it cannot tell the module of is not."""
    while isinstance(function, functools.partial):
        function = function.func
    module = getattr(function, "__module__", None)
    return isinstance(module, str) and (module == "pydantic" or module.startswith("pydantic."))


def _holds_numbers(value: Any) -> bool:
    if isinstance(value, _NUMERIC):
        return True
    if isinstance(value, list):
        kinds = set(map(type, value))
        if kinds & {bool, int, float}:
            return True
        return any(_holds_numbers(item) for item in value if isinstance(item, dict | list))
    if isinstance(value, dict):
        return any(_holds_numbers(item) for item in value.values())
    return False


def decimal_schema(adapter: TypeAdapter[Any], published: Any) -> dict[str, Any] | None:
    """The type's JSON Schema with each decimal's string written as a decimal literal (see the
    module), or None when the type holds no decimal, or `published` (the format's schema) is
    not the one Pydantic generates for the type (a schema written by hand is taken as it is)."""
    return _generated(adapter, published, _DecimalStrings)


def checked_schema(
    adapter: TypeAdapter[Any], published: Any, *, decimals: bool, one: bool = False
) -> dict[str, Any] | None:
    """The schema outform checks a type against where it is not `published`: each decimal's
    string a decimal literal (when `decimals`: the type holds one), and each field the type
    reads by its name as well as its alias a property under both (see by_name.py). None when
    neither changes the type's JSON Schema, or `published` is not the one Pydantic generates
    for it (a schema written by hand is taken as it is). `one`: the same with each field under
    one of its spellings at a time (the fast path's check for ignored keys); None when no field
    is read by name."""
    if not by_name.applies(adapter):
        return _generated(adapter, published, _DecimalStrings) if decimals and not one else None
    names = by_name.OneSpelling if one else by_name.ByName
    generator = _WITH_DECIMALS[names] if decimals else names
    return _generated(adapter, published, generator)


def _generated(
    adapter: TypeAdapter[Any], published: Any, generator: type[GenerateJsonSchema]
) -> dict[str, Any] | None:
    """The type's JSON Schema as `generator` writes it, when it differs from `published` and
    `published` is what Pydantic generates for the type; else None."""
    try:
        if adapter.json_schema() != published:
            return None
        tightened = adapter.json_schema(schema_generator=generator)
    except Exception:  # a type without a schema: the format says so where it is made
        return None
    return tightened if tightened != published else None


class _DecimalStrings(GenerateJsonSchema):
    """Pydantic's schema generator, but for the string a decimal is read from."""

    def decimal_schema(self, schema: core_schema.DecimalSchema) -> JsonSchemaValue:
        generated = super().decimal_schema(schema)
        nonfinite = schema.get("allow_inf_nan")
        if nonfinite is None:
            config = getattr(self, "_config", None)
            nonfinite = bool(getattr(config, "config_dict", {}).get("allow_inf_nan", False))
        return _with_pattern(generated, DECIMAL_OR_NONFINITE if nonfinite else DECIMAL)


class _DecimalsByNameEither(_DecimalStrings, by_name.ByName):
    """Both: decimals' strings as literals, and fields under their names too."""


class _DecimalsByNameSpelling(_DecimalStrings, by_name.OneSpelling):
    """Both, each field under one of its spellings at a time."""


_WITH_DECIMALS: dict[type[by_name.ByName], type[GenerateJsonSchema]] = {
    by_name.ByName: _DecimalsByNameEither,
    by_name.OneSpelling: _DecimalsByNameSpelling,
}


def _with_pattern(node: JsonSchemaValue, pattern: str) -> JsonSchemaValue:
    """`node` (a decimal's schema: a string, or a union holding one) with `pattern` on each
    string it allows that has none yet."""
    if node.get("type") == "string" and "pattern" not in node:
        return {**node, "pattern": pattern}
    for keyword in ("anyOf", "oneOf"):
        branches = node.get(keyword)
        if isinstance(branches, list):
            node = {
                **node,
                keyword: [
                    _with_pattern(b, pattern) if isinstance(b, dict) else b for b in branches
                ],
            }
    return node


__all__ = [
    "DECIMAL",
    "DECIMAL_OR_NONFINITE",
    "checked_schema",
    "compares_numbers",
    "decimal_schema",
    "own_readers",
]
