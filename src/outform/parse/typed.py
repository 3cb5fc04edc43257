"""How the slow path reads a typed output's value: as the fast path reads a reply.

The fast path reads a reply valid as sent with Pydantic's strict reading of JSON; the slow path
(a reply that needed a repair anywhere, a fence or a key in another case included) read the
repaired value with Pydantic's lax reading of Python objects, which differs, silently: in a
union it takes the first branch any conversion fits (`true` read as 1 by an `A | B` of models
where `A` takes the object as sent), it reads strings a strict field refuses or refuses strings
a strict model reads from JSON (`"2024-01-01"` for a `date` of a `strict=True` model), and a
`bool | IntEnum` gave `IE.A` for `{"x": 1}` and True for the same with a fence. So the slow path
reads the value as JSON, strictly, like the fast path: the same value, whatever path it took.

One difference is the schema's, not the type's: JSON Schema counts `1.0` an integer, Pydantic's
strict reading refuses it. Every integral float that reading refuses only for want of an
integer becomes that integer (`number_to_integer`, as the stream records it), and the value is
read again. A float where the type takes any number (`float`, `Any`) is left alone, and so is
one past 2**53 (which may not be the number written). A value the strict reading still refuses
is read laxly, as before, so that its errors are Pydantic's own (a validator's, a constraint
the schema does not state); so is a value holding a number of 17 digits or more, which
Pydantic's JSON reader may read otherwise than the integer held.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import TypeAdapter
from pydantic import ValidationError as PydanticValidationError

from outform import jsontext
from outform.parse.context import Deadline, Run
from outform.schema import pointer

_WANTS_INTEGER = frozenset({"int_type", "int_from_float"})
"""Pydantic's error types for a float given where an integer is wanted."""
_EXACT = 2**53
"""Past this a float no longer holds every integer: a larger one may not be the number the reply
wrote, and is left to the checks of long numbers (see docs/pipeline.md#values)."""


def read(adapter: TypeAdapter[Any], value: Any, run: Run) -> tuple[Any, Any]:
    """The type's reading of `value` (valid for the type's schema), and the value it read:
    `value`, or a copy with integral floats made the integers the type wants (each recorded in
    `run`). Raises Pydantic's error when the type refuses the value."""
    try:
        text = jsontext.dumps(value)
    except (TypeError, ValueError):  # a processor's value that is no JSON: read as it is
        return adapter.validate_python(value), value
    if jsontext.written_may_be_inexact(text):
        # A number of 17 digits or more: Pydantic's JSON reader may read it otherwise than the
        # Python integer held (10**400 as infinity for a float): the value is read as it is,
        # and the checks of long numbers judge it (see docs/pipeline.md#values).
        return adapter.validate_python(value), value
    try:
        return adapter.validate_json(text, strict=True), value
    except PydanticValidationError as exc:
        errors = exc.errors(include_url=False, include_context=False)
        found = _integral_floats(value, errors, run.deadline)
    if found:
        for path, number in found.items():
            run.change(path, "semantic", "number_to_integer", number, int(number))
        value = _replaced(value, "", found, _containers(found))
        try:
            return adapter.validate_json(jsontext.dumps(value), strict=True), value
        except PydanticValidationError:
            pass
    return adapter.validate_python(value), value


def _integral_floats(value: Any, errors: Iterable[Any], deadline: Deadline) -> dict[str, float]:
    """The paths (JSON pointers) of the integral floats of `value` that an error wants as
    integers. An error's location may hold the names of a union's branches (`("a", "int")`):
    a part that is not a key or an index of the value there is such a name, and passed over."""
    found: dict[str, float] = {}
    for error in errors:
        deadline.tick()
        if error.get("type") not in _WANTS_INTEGER:
            continue
        node, path = value, ""
        for part in error.get("loc", ()):
            inside = (isinstance(node, dict) and isinstance(part, str) and part in node) or (
                isinstance(node, list) and type(part) is int and 0 <= part < len(node)
            )
            if inside:
                node, path = node[part], pointer.join(path, part)
        if type(node) is float and node.is_integer() and abs(node) <= _EXACT:
            found[path] = node
    return found


def _replaced(value: Any, path: str, found: dict[str, float], on_way: set[str]) -> Any:
    """A copy of `value` with the floats at `found`'s paths made integers (only the containers
    on their way, `on_way`, copied)."""
    if path in found:
        return int(value)
    if path not in on_way:
        return value
    if isinstance(value, dict):
        return {k: _replaced(v, pointer.join(path, k), found, on_way) for k, v in value.items()}
    if isinstance(value, list):
        return [_replaced(v, pointer.join(path, i), found, on_way) for i, v in enumerate(value)]
    return value


def _containers(paths: Iterable[str]) -> set[str]:
    """Every proper ancestor of the paths (JSON pointers), the root's `""` included."""
    out: set[str] = set()
    for path in paths:
        rest = path
        while rest:
            rest = rest.rpartition("/")[0]
            if rest in out:
                break
            out.add(rest)
    return out
