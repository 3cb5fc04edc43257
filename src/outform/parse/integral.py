"""Integral floats read as the integers a type asks for, with the change recorded.

JSON Schema counts `1.0` as an integer, so a reply writing `1.0` for an integer passes the
schema. Pydantic's strict reading refuses it, and its lax reading picks, in a union, the first
branch that takes it after a conversion: `bool | int` read `1.0` as `True`, a value the reply
never wrote, with no change recorded. So on the slow path, a typed output's value is first read
the way the fast path reads a reply (strict, as JSON); every integral float that reading refuses
only for want of an integer becomes that integer (`number_to_integer`, as the stream records
it), and the type then reads the new value. A float where the type takes any number (`float`,
`Any`) is left alone, and so is one past 2**53 (which may not be the number written).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson
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


def wants_integers(schema: Any) -> bool:
    """Whether a (type's) JSON Schema may take an integer somewhere: `"integer"` written in it
    (as a type, or anywhere else: a false alarm only costs the check)."""
    try:
        return b'"integer"' in orjson.dumps(schema)
    except orjson.JSONEncodeError:  # (an integer past 64 bits in it, say): check every value
        return True


def integers_where_wanted(adapter: TypeAdapter[Any], value: Any, run: Run) -> Any:
    """`value` (valid for the type's schema) with each integral float the type wants as an
    integer replaced by it, every replacement recorded in `run`; `value` itself when none is."""
    try:
        adapter.validate_json(jsontext.dumps(value), strict=True)
    except PydanticValidationError as exc:
        errors = exc.errors(include_url=False, include_context=False)
        found = _integral_floats(value, errors, run.deadline)
    else:
        return value
    if not found:
        return value
    for path, number in found.items():
        run.change(path, "semantic", "number_to_integer", number, int(number))
    return _replaced(value, "", found, _containers(found))


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
