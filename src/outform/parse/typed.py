"""How the slow path reads a typed output's value: as the fast path reads a reply.

The fast path reads a reply valid as sent with Pydantic's strict reading of JSON; the slow path
(a reply that needed a repair anywhere, a fence or a key in another case included) read the
repaired value with Pydantic's lax reading of Python objects, which differs, silently: in a
union it takes the first branch any conversion fits (`true` read as 1 by an `A | B` of models
where `A` takes the object as sent), it reads strings a strict field refuses or refuses strings
a strict model reads from JSON (`"2024-01-01"` for a `date` of a `strict=True` model), and a
`bool | IntEnum` gave `IE.A` for `{"x": 1}` and True for the same with a fence. So the slow path
reads the value as JSON, strictly, like the fast path: the same value, whatever path it took.
Pydantic's JSON reader keeps every digit of an integer, so a value holding long numbers is read
so too (outform writes them digit for digit).

One difference is the schema's, not the type's: JSON Schema counts `1.0` an integer, Pydantic's
strict reading refuses it. Every integral float that reading refuses only for want of an
integer becomes the integer it writes (`number_to_integer`, as the stream records it), and the
value is read again; past 2**53 too, where a float's spelling (`1e16`) writes the integer its
shortest spelling names. Past 64 bits Pydantic's integer takes none (`1e20`: refused, the
violation saying to write the digits). A value the strict reading still refuses is read laxly,
as before, so that its errors are Pydantic's own (a validator's, a constraint the schema does
not state).

Past 2**53 a float no longer holds every integer, and the decoder reads a float's spelling of an
integer no float holds (`9007199254740993.0`) as that integer (docs/pipeline.md#values). A
copy of the type's validator in which every float (and decimal) is wrapped (:func:`float_validator`)
tells where the type holds such integers as numbers of another kind:

- an integer a float field would hold as another integer (`9007199254740993` read as
  9007199254740992.0), written as such or as a float's spelling: refused, as a fraction a float
  drops is (the float would hold another number than the reply wrote);
- an integer written as a float's spelling that the type holds as an integer (an `int` field,
  `Any`, the integer branch of a union): recorded as `number_to_integer`, as `5.0` is.

Types without a float or a decimal, and values without a run of 16 digits, pay nothing more.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from decimal import Decimal
from typing import Any

from pydantic import TypeAdapter
from pydantic import ValidationError as PydanticValidationError
from pydantic_core import PydanticCustomError, SchemaValidator, ValidationError

from outform import jsontext
from outform.parse.context import Deadline, Run
from outform.parse.core_rewrite import wrap_where
from outform.parse.ignored import rewritten_validator, value_path
from outform.parse.values import number_marks
from outform.schema import pointer

_WANTS_INTEGER = frozenset({"int_type", "int_from_float"})
"""Pydantic's error types for a float given where an integer is wanted."""
_EXACT = 2**53
"""Past this a float no longer holds every integer."""
_INT64 = 2**63
"""Past this Pydantic's integer takes no float (`int_parsing_size`: its own words, explained)."""
LONG = b"0" * 16
"""In `values.number_marks`: a run of 16 digits or points, the shortest an integer no float
holds writes (9007199254740993, past 2**53)."""
_ROUNDED = "outform_float_rounds"
_OTHER_KIND = "outform_held_as_number"
_FLOAT_LITERAL = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?(?![\w.])")
"""A number literal as JSON writes it (those without a fraction or an exponent are passed
over where they are found)."""


def float_validator(adapter: TypeAdapter[Any]) -> SchemaValidator | None:
    """A validator of the adapter's type, as plain data, that raises where a float is given an
    integer it does not hold (it would read as another integer), and where a float or a decimal
    is given an integer the reply wrote as a float's spelling (its `context`): None when the
    type holds neither a float nor a decimal."""
    return rewritten_validator(
        adapter,
        lambda node: wrap_where(
            node,
            lambda n: n.get("type") in ("float", "decimal"),
            {"type": "with-info", "function": _held},
        ),
    )


def _held(given: Any, handler: Any, info: Any) -> Any:
    """A float's (or a decimal's) reading of `given`, raising where it holds an integer as
    another number (another integer, or none: past a float's range), or one the reply wrote as
    a float's spelling (`info.context`: those held as integers elsewhere are recorded)."""
    try:
        built = handler(given)
    except ValidationError:
        if type(given) is int and not _in_range(given):
            raise PydanticCustomError(
                _ROUNDED,
                "Input should be a number a float holds (from 1e-308 to 1e308 in size), a "
                "float reads it as infinity",
            ) from None
        raise
    if type(given) is int:
        if built != given:  # (an int and a float compare exactly)
            raise PydanticCustomError(
                _ROUNDED,
                "Input should be a number a float holds as written, a float reads it as "
                "{read}, another integer: write at most 15 significant digits",
                {"read": int(built)},
            )
        spelled = info.context
        if isinstance(spelled, frozenset) and given in spelled:
            raise PydanticCustomError(_OTHER_KIND, "held as a float or a decimal")
    return built


def _in_range(number: int) -> bool:
    try:
        float(number)
    except OverflowError:
        return False
    return True


def read(
    adapter: TypeAdapter[Any],
    value: Any,
    run: Run,
    text: str | None = None,
    floats: SchemaValidator | None = None,
) -> tuple[Any, Any]:
    """The type's reading of `value` (valid for the type's schema), and the value it read:
    `value`, or a copy with integral floats made the integers the type wants (each recorded in
    `run`). `text` is the reply's (its candidate's), `floats` the type's `float_validator`:
    together they tell the integers past 2**53 a float would change, and those the reply wrote
    as a float's spelling. Raises Pydantic's error when the type refuses the value (or a float
    field would hold another integer than written)."""
    try:
        written = jsontext.dumps(value)
    except (TypeError, ValueError):  # a processor's value that is no JSON: read as it is
        return adapter.validate_python(value), value
    typed, value = _strictly(adapter, value, written, run)
    if text is not None:
        _long_integers(value, text, run, floats)
    return typed, value


def _strictly(adapter: TypeAdapter[Any], value: Any, written: bytes, run: Run) -> tuple[Any, Any]:
    """`read`'s reading of `value` (as JSON, `written`), its integral floats made integers
    where they are wanted; laxly when the strict reading still refuses it."""
    try:
        return adapter.validate_json(written, strict=True), value
    except PydanticValidationError as exc:
        errors = exc.errors(include_url=False, include_context=False)
        found = _integral_floats(value, errors, run.deadline)
    if not found:
        return adapter.validate_python(value), value
    for path, (number, integer) in found.items():
        run.change(path, "semantic", "number_to_integer", number, integer)
    value = _replaced(value, "", found, _containers(found))
    try:
        return adapter.validate_json(jsontext.dumps(value), strict=True), value
    except PydanticValidationError:
        return adapter.validate_python(value), value


def _long_integers(value: Any, text: str, run: Run, floats: SchemaValidator | None) -> None:
    """Judge the integers of `value` past 2**53 (see the module): raises Pydantic's error for
    one a float field would hold as another integer; records `number_to_integer` for one the
    reply wrote as a float's spelling that the type holds as an integer."""
    marks = number_marks(text)
    if marks.find(LONG) < 0:
        return  # no integer past 2**53 is written (not even in a string coercion read)
    spelled = _spelled_as_floats(text) if jsontext.may_round(marks) else {}
    held = _integers(value, lambda n: n in spelled or not _float_holds(n), run.deadline)
    if not held:
        return
    other: set[str] = set()
    if floats is not None:
        try:
            floats.validate_json(jsontext.dumps(value), strict=True, context=frozenset(spelled))
        except ValidationError as exc:
            rounded = []
            for error in exc.errors(include_url=False):
                if error["type"] == _ROUNDED:
                    rounded.append(error)
                elif error["type"] == _OTHER_KIND:
                    other.add(value_path(error["loc"], value) or "")
            if rounded:
                raise ValidationError.from_exception_data(
                    "float", [_line_error(error, value) for error in rounded]
                ) from None
    # (A change recorded there already made the integer: a string coercion read it.)
    made = {change.path for change in run.changes if change.after is not None}
    for path, number in held:
        if number in spelled and path not in other and path not in made:
            run.change(
                path,
                "semantic",
                "number_to_integer",
                number,
                number,
                detail=f"written {spelled[number]}, a float's spelling of an integer no float "
                "holds: read as that integer",
            )


def _line_error(error: Any, value: Any) -> Any:
    """A Pydantic error of the float validator, as a line of a new error (its own type), at
    its place in `value` (a union's branch names passed over)."""
    path = value_path(error["loc"], value) or ""
    return {
        "type": PydanticCustomError(_ROUNDED, error["msg"]),
        "loc": tuple(pointer.parts(path)),
        "input": error["input"],
    }


def _float_holds(number: int) -> bool:
    """Whether a float holds `number` exactly (one past a float's range, not at all: a float
    field reads it as infinity)."""
    try:
        return float(number) == number
    except OverflowError:
        return False


def _spelled_as_floats(text: str) -> dict[int, str]:
    """The integers the decoder reads from a float's spelling in `text` (`9007199254740993.0`:
    no float holds it, see jsontext.loads_exact), each with the literal."""
    found: dict[int, str] = {}
    for match in _FLOAT_LITERAL.finditer(text):
        literal = match.group()
        if len(literal) < 17 or not any(c in literal for c in ".eE"):
            continue
        try:
            number = jsontext.loads_exact(literal)
        except ValueError:
            continue
        if type(number) is int:
            found.setdefault(number, literal)
    return found


def _integers(value: Any, wanted: Any, deadline: Deadline) -> list[tuple[str, int]]:
    """Each integer of `value` past 2**53 that `wanted` takes, with its JSON pointer."""
    found: list[tuple[str, int]] = []
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        deadline.tick()
        item, path = stack.pop()
        if isinstance(item, dict):
            stack.extend((child, pointer.join(path, key)) for key, child in item.items())
        elif isinstance(item, list):
            stack.extend((child, pointer.join(path, i)) for i, child in enumerate(item))
        elif type(item) is int and abs(item) > _EXACT and wanted(item):
            found.append((path, item))
    return sorted(found)


def _integral_floats(
    value: Any, errors: Iterable[Any], deadline: Deadline
) -> dict[str, tuple[float, int]]:
    """The paths (JSON pointers) of the integral floats of `value` that an error wants as
    integers, each with the integer it writes (past 2**53, the one its shortest spelling names:
    the decoder reads any other spelling as the integer it writes). An error's location may
    hold the names of a union's branches (`("a", "int")`): a part that is not a key or an index
    of the value there is such a name, and passed over."""
    found: dict[str, tuple[float, int]] = {}
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
        if type(node) is float and node.is_integer() and abs(node) < _INT64:
            found[path] = (node, int(node) if abs(node) <= _EXACT else int(Decimal(repr(node))))
    return found


def _replaced(value: Any, path: str, found: dict[str, tuple[float, int]], on_way: set[str]) -> Any:
    """A copy of `value` with the floats at `found`'s paths made their integers (only the
    containers on their way, `on_way`, copied)."""
    if path in found:
        return found[path][1]
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
