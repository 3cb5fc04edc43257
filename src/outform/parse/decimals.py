"""Decimal fields keep every digit the reply wrote.

Pydantic reads a JSON number as a float before it makes a `Decimal` of it, on both paths
(`validate_json`, and `validate_python` of the value outform decoded): `0.1000000000000000000001`
became `Decimal('0.1')` and `12345678901234567890.123456789` `Decimal('12345678901234567000')`,
the very digits a Decimal is chosen to keep. So for a type that holds a Decimal, the slow path
asks a copy of the type's validator in which every decimal is wrapped by a function that
compares the Decimal built from the float with the one the reply's literal spells (see
literals.py), and raises where they differ; the error carries the float's identity. Those
floats are then given to the type as `Decimal(literal)` (a Decimal, not a string, so that a
union with `str` still picks the Decimal). A float whose spelling is not known (written two
ways) keeps the float's digits and is recorded as lossy. The fast path sends a reply that
writes a fraction or an exponent here. Types without a Decimal get no check.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from pydantic import TypeAdapter
from pydantic_core import PydanticCustomError, SchemaValidator, ValidationError

from outform.parse.core_rewrite import wrap_where
from outform.parse.ignored import rewritten_validator
from outform.parse.literals import Spellings
from outform.schema import pointer

_ERROR = "outform_decimal"
FRACTION = re.compile(r"\d[.eE]")
"""A number with a fraction or an exponent (or a word that looks like one): what a float may
read otherwise than a Decimal."""


@dataclass(frozen=True, slots=True)
class Reading:
    """What the decimals of one value need: the exact Decimal of each float to replace (by the
    float's id), and the paths of the floats whose spelling is not known."""

    exact: dict[int, Decimal]
    unknown: list[str]


def decimal_validator(adapter: TypeAdapter[Any]) -> SchemaValidator | None:
    """A validator of the adapter's type, as plain data, that raises where a decimal is read
    from a float otherwise than the reply wrote it; None when the type holds no decimal."""
    return rewritten_validator(adapter, _wrap)


def read(validator: SchemaValidator, value: Any, spellings: Spellings) -> Reading:
    """The decimals of `value` (valid for the type) that a float reads otherwise than written."""
    try:
        validator.validate_python(value, context=spellings)
    except ValidationError as exc:
        exact: dict[int, Decimal] = {}
        unknown: set[int] = set()
        for error in exc.errors(include_url=False, include_input=False):
            ctx = error.get("ctx")
            if error["type"] != _ERROR or not ctx:
                continue
            literal = ctx["literal"]
            if literal is None:
                unknown.add(ctx["id"])
            else:
                exact[ctx["id"]] = Decimal(literal)
        paths = _paths(value, unknown) if unknown else {}
        return Reading(exact, sorted(paths.values()))
    return Reading({}, [])


def replaced(value: Any, exact: dict[int, Decimal]) -> Any:
    """`value` with each float whose id `exact` holds replaced by its Decimal (a copy of the
    containers on the way; the rest shared)."""
    if isinstance(value, float):
        return exact.get(id(value), value)
    if isinstance(value, dict):
        return {key: replaced(item, exact) for key, item in value.items()}
    if isinstance(value, list):
        return [replaced(item, exact) for item in value]
    return value


def _paths(value: Any, ids: set[int]) -> dict[int, str]:
    """The JSON pointer of each float of `value` whose id is in `ids`."""
    found: dict[int, str] = {}
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        item, path = stack.pop()
        if isinstance(item, float) and id(item) in ids:
            found[id(item)] = path
        elif isinstance(item, dict):
            stack.extend((child, pointer.join(path, key)) for key, child in item.items())
        elif isinstance(item, list):
            stack.extend((child, pointer.join(path, i)) for i, child in enumerate(item))
    return found


def _wrap(node: Any) -> Any:
    return wrap_where(
        node,
        lambda n: n.get("type") == "decimal",
        {"type": "with-info", "function": _compare},
    )


def _compare(given: Any, handler: Any, info: Any) -> Any:
    built = handler(given)
    spellings = info.context
    if not isinstance(given, float) or not isinstance(spellings, Spellings):
        return built
    literal, known = spellings.spell(given)
    if not known:
        raise PydanticCustomError(_ERROR, "decimal", {"id": id(given), "literal": None})
    try:
        written = Decimal(literal or "")
    except InvalidOperation:
        return built  # a spelling Decimal does not read (JSON5's hexadecimal is an integer)
    if written.as_tuple() != Decimal(built).as_tuple():
        raise PydanticCustomError(_ERROR, "decimal", {"id": id(given), "literal": literal})
    return built


__all__ = ["FRACTION", "Reading", "decimal_validator", "read", "replaced"]
