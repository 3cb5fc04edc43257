"""JSON values as outform holds them: exact integers, finite numbers, valid Unicode.

orjson, the strict decoder, reads an integer beyond 64 bits as a float (losing digits), and
json-repair reads `1e400` as infinity and `"\\ud800"` as a lone surrogate. None of these is a
JSON value a caller can use, so the decode stage reads long integers exactly
(:func:`decode_exact`) and refuses values with a :func:`flaw`; the coerce stage writes numbers
as text with every digit (:func:`number_text`).
"""

from __future__ import annotations

import functools
import json
import math
import re
import sys
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import jsonschema_rs
import orjson

from outform import jsontext
from outform.jsontext import dumps_text
from outform.parse.hint import clip

if TYPE_CHECKING:
    from outform.parse.context import Deadline

_UNREAD: Any = object()

decode_exact = jsontext.loads_exact
may_be_inexact = jsontext.may_be_inexact


def encode(value: Any) -> str:
    """Compact JSON text of a value, integers of any size included; a non-finite number (which
    no decode tier returns, but a processor may) is written as JSON5 spells it, never as
    `null`."""
    if _nonfinite(value):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return dumps_text(value)


def nonfinite_in(value: Any) -> bool:
    """Whether `value` (JSON-like) holds NaN or an infinity anywhere."""
    return _nonfinite(value)


def _nonfinite(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float):
            if not math.isfinite(item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def number_text(number: int | float) -> str | None:
    """A number written as JSON with every digit, or None when it cannot be (non-finite, or
    an integer longer than Python writes out)."""
    if isinstance(number, int):
        try:
            return str(int(number))
        except ValueError:
            return None
    if not math.isfinite(number):
        return None
    return orjson.dumps(number).decode()


def flaw(value: Any, deadline: Deadline | None = None) -> str | None:
    """What makes `value` not a JSON value (a lone surrogate, a key that is not a string, a
    non-finite number), or None. One walk, bounded by the deadline."""
    stack = [value]
    steps = 0
    while stack:
        item = stack.pop()
        steps += 1
        if deadline is not None and not steps & 1023:
            deadline.check()
        if isinstance(item, str):
            if not item.isascii() and (bad := _surrogate(item)) is not None:
                return (
                    f"a lone surrogate (\\u{ord(bad):04x}) in a string, which is not Unicode text"
                )
        elif isinstance(item, float):
            if not math.isfinite(item):
                return f"a number out of range ({item}), which JSON cannot hold"
        elif type(item) is int and item.bit_length() > _SHORTEST_UNWRITABLE_BITS:
            if number_text(item) is None:
                return f"an integer of {item.bit_length():,} bits, longer than Python writes out"
        elif isinstance(item, dict):
            for key in item:
                if not isinstance(key, str):
                    return f"a key that is not a string ({key!r})"
                stack.append(key)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return None


def depth(value: Any, limit: int, deadline: Deadline | None = None) -> int:
    """How deep `value` nests (a scalar: 0), when that is more than `limit`; else 0. One walk
    without recursion (a tolerant decoder may build a value deeper than orjson can write, or
    than the stages that recurse may walk), bounded by the deadline."""
    if not isinstance(value, dict | list):
        return 0
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    steps = 0
    while stack:
        item, level = stack.pop()
        steps += 1
        if deadline is not None and not steps & 1023:
            deadline.check()
        deepest = max(deepest, level)
        inner = item.values() if isinstance(item, dict) else item
        stack.extend((member, level + 1) for member in inner if isinstance(member, dict | list))
    return deepest if deepest > limit else 0


_SHORTEST_UNWRITABLE_BITS = 14_000
"""Below Python's default limit of 4300 decimal digits (about 14,284 bits) for writing an
integer out: JSON5's hexadecimal (`0x1F...`) reaches it with fewer characters."""


_NONFINITE = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\Z)|(?<![\w.])([+-]?(?:NaN|Infinity))(?!\w)')


def nonfinite_literal(text: str) -> tuple[int, str] | None:
    """Where `text` writes NaN, Infinity or -Infinity as a value (outside its strings), and
    which: JSON has no such numbers, so no level reads them (see docs/pipeline.md#values).
    Free unless one of the words occurs at all; then one linear scan."""
    if "NaN" not in text and "Infinity" not in text:
        return None
    for match in _NONFINITE.finditer(text):
        if match.group(1) is not None:
            return match.start(1), match.group(1)
    return None


_MARKS = bytes.maketrans(b"123456789.+-E{}", b"000000000000e[]")
MAY_ROUND = jsontext.MAY_ROUND
"""In `number_marks`: 17 digits or points in a row (or 16 digits before an exponent, see
`may_round`), a number a float may read otherwise than written (an integer past 64 bits, one
written with a fraction or an exponent past 2**53, a fraction a float drops: see
`jsontext.MAY_ROUND`)."""
may_round = jsontext.may_round
"""Whether `number_marks` hold `MAY_ROUND` or `jsontext.MAY_ROUND_EXPONENT` (a mantissa of 16
digits with an exponent, `9007199254740993e0`): two searches."""
LONG_EXPONENT = b"e000"
"""In `number_marks`: an exponent of three digits or more, signed or not."""
_LITERAL = re.compile(r"(?<![\w.])-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_NUMBER = re.compile(
    r'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\Z)|(?<![\w.])(-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)'
)


def number_marks(text: str) -> bytes:
    """`text` as UTF-8 with every digit, point and sign a `0`, `E` an `e` and braces as
    brackets: one translation in C whose result the fast path's checks share (each is then one
    search or count, also in C).

    - `MAY_ROUND`: 17 digits or points in a row, or 16 digits before an exponent, a number a
      float may read otherwise than written (a sign between digits, as in a date, may join two
      runs: a needless exact reading, never a missed one);
    - `LONG_EXPONENT`: `e400`, `e+400` and `e-400` alike (and `e-40`: a needless look);
    - `[` counts the opening brackets of both kinds, which bound the nesting (`within_depth`);
    - `:` counts the keys written, and the colons inside strings (`duplicates.may_repeat`)."""
    return text.encode("utf-8", "surrogatepass").translate(_MARKS)


def ordinary_numbers(text: str) -> bool:
    """Whether `text` has neither an exponent of three digits nor a run of 17 digits or
    points (in its `number_marks`): then every number in it is one a float holds and orjson
    reads as written, and `out_of_range` and `may_be_inexact` would both say so (a hot path's
    shortcut). The marks are searched as latin-1 text (one character per byte): `in` on bytes
    first tries its argument as an integer and clears the error, `bytes.find` parses its
    arguments, and either costs more than the translation itself."""
    marks = text.encode("utf-8", "surrogatepass").translate(_MARKS, b"+-").decode("latin-1")
    return (
        _LONG_EXPONENT_TEXT not in marks
        and _MAY_ROUND_TEXT not in marks
        and _MAY_ROUND_EXPONENT_TEXT not in marks
    )


_LONG_EXPONENT_TEXT = LONG_EXPONENT.decode()
_MAY_ROUND_TEXT = MAY_ROUND.decode()
_MAY_ROUND_EXPONENT_TEXT = jsontext.MAY_ROUND_EXPONENT.decode()


@dataclass(frozen=True, slots=True)
class OutOfRange:
    """A number literal a 64-bit float cannot hold, or an integer literal longer than Python
    reads from text (see `out_of_range`)."""

    position: int
    literal: str
    why: str
    """"too large" (a float reads it as infinity), "too small" (as zero, though not zero),
    "too precise" (as an integer, though it has a fraction), or "too long" (an integer of
    more digits than Python's int-string limit)."""

    def describe(self) -> str:
        if self.why == "too long":
            digits = len(self.literal.lstrip("+-"))
            return (
                f"{clip(self.literal, 24)} is an integer of {digits:,} digits, over the "
                f"{int_digits():,} Python reads from text (its int-string limit, which holds for "
                "the whole process and which outform does not change)"
            )
        if self.why == "too precise":
            return (
                f"{clip(self.literal, 24)} has more digits than a float holds: it would read as "
                f"{clip(str(int(float(self.literal))), 24)}, an integer, and lose its fraction"
            )
        reading = "infinity" if self.why == "too large" else "0"
        return (
            f"{clip(self.literal, 24)} is out of range: {self.why} for a float (read as {reading})"
        )

    @property
    def kind(self) -> str:
        """What the number is, for a message: "a number a float cannot hold", ..."""
        if self.why == "too long":
            return f"an integer of more than {int_digits():,} digits"
        if self.why == "too precise":
            return "a number whose fraction a float cannot hold"
        return "a number a float cannot hold"

    @property
    def advice(self) -> str:
        """What the reply should write instead."""
        if self.why == "too long":
            return f"write at most {int_digits():,} digits, or the number as a string"
        if self.why == "too precise":
            return "write at most 15 significant digits, or the number as a string"
        return "write a number a float holds (from 1e-308 to 1e308 in size), or 0"


def int_digits() -> int:
    """The most digits Python reads as an integer (`sys.get_int_max_str_digits()`, 4,300 by
    default; 0: no limit). A process-wide setting: outform reads it, never sets it."""
    return sys.get_int_max_str_digits()


def out_of_range(
    text: str, *, integers: bool = False, precise: bool = False, marks: bytes | None = None
) -> OutOfRange | None:
    """The first number literal of `text` (outside its strings) that a 64-bit float reads as
    infinity, or as zero although one of its digits is not zero, or an integer longer than
    Python reads (see docs/pipeline.md#values), or None. Integers (no fraction, no exponent)
    count as floats only with `integers`: outform keeps them exact, but a float field reads
    them as floats. With `precise`, also one a float reads as an integer although it has a
    fraction (which a decimal field keeps: the pipeline judges those, see `dropped_fractions`).

    Nearly free: such a literal has an exponent of three digits or a run of 17 digits or
    points (a float's range is 1e-324 to 1e308, its precision 15 to 17 digits), which two
    searches of `number_marks` rule out; then the literals are tried, and only when one is out
    of range is the text scanned again for whether it lies outside the strings (a UUID's
    "550e8400" is not a number)."""
    found = _out_of_range(text, integers, precise, marks, first=True)
    return found[0] if found else None


def dropped_fractions(text: str) -> list[OutOfRange]:
    """Every number literal of `text` (outside its strings) that a float reads as an integer
    although it has a fraction (`9007199254740993.5`): no field but a decimal holds it as
    written."""
    found = _out_of_range(text, False, True, None, first=False)
    return [out for out in found if out.why == "too precise"]


def _out_of_range(
    text: str, integers: bool, precise: bool, marks: bytes | None, *, first: bool
) -> list[OutOfRange]:
    if len(text) < 5:
        return []
    marks = number_marks(text) if marks is None else marks
    if marks.find(LONG_EXPONENT) < 0 and not may_round(marks):
        return []  # (`find`, not `in`: `in` first tries an integer, then clears the error)
    if not any(_reading(m.group(), integers, precise) for m in _LITERAL.finditer(text)):
        return []
    found = []
    for match in _NUMBER.finditer(text):
        literal = match.group(1)
        if literal is not None and (why := _reading(literal, integers, precise)):
            found.append(OutOfRange(match.start(1), literal, why))
            if first:
                break
    return found


def literal_range(literal: str) -> OutOfRange | None:
    """Why the number literal `literal` (written alone, as in a string: a sign, digits, a
    fraction, an exponent) is not read, as `out_of_range` judges one written as JSON: a float
    cannot hold it (a fraction or an exponent), or it is an integer longer than Python reads;
    None when it is read (an integer keeps every digit)."""
    why = _reading(literal, False, False)
    return OutOfRange(0, literal, why) if why else None


def _reading(literal: str, integers: bool, precise: bool) -> str:
    """ "too large" or "too small" when a float cannot hold the number `literal`, "too
    precise" (when asked) when a float reads it as an integer though it has a fraction, "too
    long" when it is an integer longer than Python reads, else ""."""
    if len(literal) < 5:
        return ""
    mantissa, exponent, _ = literal.replace("E", "e").partition("e")
    if not exponent and "." not in mantissa and 0 < int_digits() < len(mantissa.lstrip("+-")):
        return "too long"
    if not exponent and "." not in mantissa and not integers:
        return ""
    number = float(literal)
    if math.isinf(number):
        return "too large"
    if number == 0 and mantissa.strip("+-0.") != "":
        return "too small"
    # (Only a mantissa of 17 digits or more can lose its fraction to a float, which holds 15
    # to 17 significant digits: shorter ones cost one `len`.)
    if precise and len(mantissa) >= 17 and fraction_dropped(literal):
        return "too precise"
    return ""


def fraction_dropped(number: Decimal | str) -> bool:
    """Whether a float reads `number` (a decimal, or its literal) as an integer although it
    has a fraction: the float dropped it (`9007199254740993.5`, `1.00000000000000000001`)."""
    exact = Decimal(number)
    return exact != exact.to_integral_value() and float(exact).is_integer()


def _surrogate(text: str) -> str | None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return text[exc.start]
    return None


def first_surrogate(text: str) -> int | None:
    """The index of the first lone surrogate in `text`, or None when it is valid Unicode."""
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return exc.start
    return None


def within_depth(
    text: str, max_depth: int, value: Any = _UNREAD, marks: bytes | None = None
) -> bool:
    """Whether the JSON `text` (its reading `value`, and its `number_marks`, if at hand) nests
    at most `max_depth` levels. Free for a text too short to nest deeper (a level takes two
    characters); else counted on the text's brackets (see `_brackets_within`), and only where
    that cannot answer, one pass of jsonschema-rs over the value."""
    if len(text) <= 2 * max_depth:
        return True
    within = _brackets_within(number_marks(text) if marks is None else marks, max_depth)
    if within is not None:
        return within
    if value is _UNREAD:
        value = orjson.loads(text)
    return bool(_depth_validator(max_depth).is_valid(value))


_PEEL_ROUNDS = 32
"""At most this many levels are peeled off the brackets (each round copies what is left);
a reply nested deeper is measured by the validator, which costs one pass whatever the depth."""

_NOT_STRUCTURE = bytes(c for c in range(256) if c not in b'"\\[]')
_COUNT_FIRST = 16
"""A text up to this many characters per allowed level has its brackets counted before it is
cut to its structure: JSON seldom has more than one bracket in 16 characters, so the count
alone usually settles it, at half the cost of the cut; a longer text goes straight to the cut."""


def _brackets_within(marks: bytes, max_depth: int) -> bool | None:
    """Whether the brackets of a JSON text (its `number_marks`) nest at most `max_depth` deep,
    counted in C on the text's structure; None when that is not certain (a string holds a
    bracket or an escape, the brackets do not pair up, or they nest deeper than
    `_PEEL_ROUNDS`).

    The text is cut to its quotes and brackets (`{` and `}` counted as `[` and `]`: the JSON
    reader checks that they pair up). No more opening brackets than `max_depth` cannot nest
    deeper. Otherwise, with no escape in the text, quotes alternate opening and closing, so a
    string without brackets leaves `""`, and removing every `""` leaves a quote exactly when
    some string holds a bracket. What is left is the brackets alone, and each round of
    removing every innermost `[]` takes one level off."""
    if len(marks) <= _COUNT_FIRST * max_depth and marks.count(b"[") <= max_depth:
        return True  # a short text: counting its brackets is cheaper than cutting it down
    structure = marks.translate(None, _NOT_STRUCTURE)
    if structure.count(b"[") <= max_depth:
        return True
    if b"\\" in structure:
        return None
    brackets = structure.replace(b'""', b"")
    if b'"' in brackets:
        return None
    for _ in range(min(max_depth, _PEEL_ROUNDS)):
        peeled = brackets.replace(b"[]", b"")
        if len(peeled) == len(brackets):
            return None  # not paired: not JSON, which the caller's reader refuses
        if not peeled:
            return True
        brackets = peeled
    return False if max_depth <= _PEEL_ROUNDS else None


@functools.lru_cache(maxsize=8)
def _depth_validator(max_depth: int) -> Any:
    """A validator of nesting: level `i` holds containers only below `max_depth`."""
    levels: dict[str, Any] = {
        f"l{i}": {
            "items": {"$ref": f"#/$defs/l{i + 1}"},
            "additionalProperties": {"$ref": f"#/$defs/l{i + 1}"},
        }
        for i in range(max_depth)
    }
    levels[f"l{max_depth}"] = {"type": ["string", "number", "boolean", "null"]}
    return jsonschema_rs.validator_for({"$defs": levels, "$ref": "#/$defs/l0"})
