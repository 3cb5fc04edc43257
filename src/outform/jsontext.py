"""JSON text of the values outform holds, integers of any size included.

orjson, outform's encoder, writes integers of up to 64 bits only; JSON has no such bound, and a
schema (`"maximum": 18446744073709551616`, an enum of long numbers) or a value read exactly from
a reply may hold a longer one. Such a value is written by the standard library's encoder
instead, with the same compact form, so that no caller meets orjson's TypeError.
"""

from __future__ import annotations

import json
import math
from decimal import Decimal
from typing import Any

import orjson

MAY_ROUND = b"0" * 17
"""17 digits or points in a row (each written `0`): the shortest literal a float may read
otherwise than written. An integer of 19 digits or more (orjson reads it as a float), an
integer written with a fraction past 2**53 (`9007199254740993.0`, which a float rounds), and a
number whose fraction a float drops (`9007199254740993.5` reads as an integer) all write one: a
float holds 15 to 17 significant digits, and its integers are exact up to 2**53, 16 digits."""
MAY_ROUND_EXPONENT = b"0" * 16 + b"e"
"""16 digits followed by an exponent (`E` is written `e`): the other shortest literal a float
may read otherwise than written. A mantissa of 16 digits past 2**53 with an exponent
(`9007199254740993e0`, `12345678901234567e1`) names an integer no float may hold; one of 15
digits or fewer is a float's own spelling of the number it writes, whatever its exponent."""
_DIGITS_AS_ZERO = bytes.maketrans(b"123456789.E", b"0000000000e")


def dumps(
    value: Any, *, sort_keys: bool = False, indent: bool = False, any_keys: bool = False
) -> bytes:
    """Compact JSON, UTF-8 (characters, not `\\u` escapes); keys sorted when asked; indented
    by two spaces when asked (for people: the CLI); keys that are numbers, booleans or null
    written as strings when asked (`any_keys`). Anything that is not JSON data (a set, an
    object) is a TypeError, as with orjson."""
    option = (
        (orjson.OPT_SORT_KEYS if sort_keys else 0)
        | (orjson.OPT_INDENT_2 if indent else 0)
        | (orjson.OPT_NON_STR_KEYS if any_keys else 0)
    )
    try:
        return orjson.dumps(value, option=option or None)
    except TypeError as exc:
        if "64-bit" not in str(exc):
            raise
        text = json.dumps(
            value,
            sort_keys=sort_keys,
            indent=2 if indent else None,
            separators=(",", ": ") if indent else (",", ":"),
            ensure_ascii=False,
        )
        return text.encode()


def dumps_text(value: Any, *, indent: bool = False, any_keys: bool = False) -> str:
    """`dumps` as a str."""
    return dumps(value, indent=indent, any_keys=any_keys).decode()


def loads(text: str) -> Any:
    """orjson's reading of JSON text, except that every integer keeps every digit. Raises
    ValueError (orjson.JSONDecodeError is one) for text that is not JSON, holds a non-finite
    number or an integer too long for Python to read (over 4300 digits)."""
    value = orjson.loads(text)
    return loads_exact(text) if may_be_inexact(text) else value


def may_be_inexact(text: str) -> bool:
    """Whether orjson's reading of `text` may have turned an integer into a float, rounded an
    integer written with a fraction or an exponent, or dropped a fraction: it holds `MAY_ROUND`
    or `MAY_ROUND_EXPONENT`. Searched
    for in its UTF-8 bytes with every digit and point made a zero (passes in C: a tenth of the
    cost of a regex, which tries a match at every digit)."""
    if len(text) < 17:
        return False
    return may_round(text.encode("utf-8", "surrogatepass").translate(_DIGITS_AS_ZERO))


def written_may_be_inexact(data: bytes) -> bool:
    """`may_be_inexact` of JSON already written as UTF-8 (no second encoding)."""
    return len(data) >= 17 and may_round(data.translate(_DIGITS_AS_ZERO))


def may_round(marks: bytes) -> bool:
    """Whether a text whose digits and points are all written `0` (and `E` as `e`) in `marks`
    holds `MAY_ROUND` or `MAY_ROUND_EXPONENT` (`find`, not `in`: `in` costs more, it tries an
    integer first). Both begin with `_SIXTEEN`: most texts are told by that one search."""
    at = marks.find(_SIXTEEN)
    return at >= 0 and (marks.find(MAY_ROUND, at) >= 0 or marks.find(MAY_ROUND_EXPONENT, at) >= 0)


_SIXTEEN = b"0" * 16
"""The run of digits both `MAY_ROUND` and `MAY_ROUND_EXPONENT` begin with."""


def loads_exact(text: str) -> Any:
    """Decode valid JSON keeping every digit of every integer (the standard library's reader).

    Raises ValueError for an integer too long for Python to read (over 4300 digits) and for
    non-finite numbers."""
    return json.loads(text, parse_constant=_refuse_constant, parse_float=float_literal)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def float_literal(text: str) -> float | int:
    """A number written with a fraction or an exponent: a float, but an integer past a float's
    exact integers (2**53) written with more digits than the float holds, as the integer it
    writes (`9007199254740993.0` would read as ...992.0, a digit lost). A float's own shortest
    spelling (`1.8446744073709552e19`, as every JSON writer spells the float) stays a float.
    Raises ValueError for a number out of a float's range (the decoder refuses it), and for
    text that is no number."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text} is out of range")
    if value.is_integer() and abs(value) >= _EXACT_FLOATS:
        exact = Decimal(text)
        if exact != Decimal(repr(value)) and exact == exact.to_integral_value():
            return int(exact)
    return value


_EXACT_FLOATS = 2**53
"""Every integer up to this is a float exactly; past it, a float holds only some of them."""


__all__ = [
    "MAY_ROUND",
    "MAY_ROUND_EXPONENT",
    "dumps",
    "dumps_text",
    "float_literal",
    "loads",
    "loads_exact",
    "may_be_inexact",
    "may_round",
    "written_may_be_inexact",
]
