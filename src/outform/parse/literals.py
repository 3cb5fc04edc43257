"""How the reply spelled its numbers, so that a number turned into text is the one it wrote.

A decoder reads `1.10`, `1e2` and `0.1000000000000000000001` as the floats 1.1, 100.0 and 0.1;
written out again they would read "1.1", "100.0" and "0.1": a version number changed without a
word. The coercion stage asks this table instead: every number literal the candidate's text
writes, by the value a decoder reads from it (the text is scanned whole, strings included, so
JSON written inside a string counts too). A value written one way is written back that way. A
value the text spells in several ways (`1.1` and `1.10`), or a float it does not write at all
(a processor's), has no known spelling: its shortest spelling is used, and the caller records
the change as lossy. An integer the text does not write is its digits (the only spelling JSON
has for it). The table is built on first use, by one scan of the text, so a reply that needs
no such conversion pays nothing.

A float outform itself read out of a string (`"$1,234.50"` → 1234.5) is spelled as that string
wrote it (`1234.50`): the coercion stage tells the table so, by the float's identity
(:meth:`Spellings.made`), and a decimal field is then given the digits written (see
decimals.py).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import orjson

from outform.jsontext import float_literal
from outform.parse.values import number_text

if TYPE_CHECKING:
    from outform.parse.context import Deadline

_LITERAL = re.compile(
    r"(?<![\w.$+-])[+-]?(?:0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)(?![\w.])"
)
"""A number as JSON or JSON5 writes it, as a whole word (`v1.10` and `2024-05-01` hold none)."""
_JSON_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
_LONG = 1 << 63
"""Integers from here on are beyond what orjson writes."""
_Key = int | str
"""An integer by its value, a float by its `hex()` (which tells -0.0 from 0.0)."""


class Spellings:
    """The number literals of one text, by value (see the module)."""

    __slots__ = ("_deadline", "_made", "_table", "_text")

    def __init__(
        self,
        text: str | None = None,
        deadline: Deadline | None = None,
        made: dict[int, tuple[float, str]] | None = None,
    ) -> None:
        self._text = text or ""
        self._deadline = deadline
        self._table: dict[_Key, set[str]] | None = None
        self._made: dict[int, tuple[float, str]] = {} if made is None else made
        """The floats read out of strings, by identity: (the float, the literal it was read
        from). The float is held, so that its identity stays its own."""

    def made(self, number: float, literal: str) -> None:
        """`number` was read from `literal` (a string the reply wrote, less its currency sign,
        percent sign and thousands separators): that is its spelling."""
        self._made[id(number)] = (number, literal)

    @property
    def made_floats(self) -> dict[int, tuple[float, str]]:
        """The floats read out of strings (see `made`), by identity."""
        return self._made

    def spell(self, number: int | float) -> tuple[str | None, bool]:
        """The text of `number` and whether it is the reply's own spelling: (its literal, True)
        when the reply writes it one way; (its shortest spelling, False) when not known; (None,
        False) when it cannot be written (a non-finite float, an integer of more digits than
        Python writes out)."""
        shortest = number_text(number)
        if shortest is None:
            return None, False
        made = self._made.get(id(number)) if self._made else None
        if made is not None and made[0] is number:
            return made[1], True
        written = self._literals().get(key(number))
        if written is None:
            return shortest, isinstance(number, int)
        if len(written) == 1:
            return next(iter(written)), True
        return shortest, False

    def encode(self, value: Any) -> tuple[str, bool]:
        """The compact JSON text of `value`, each number as the reply wrote it when that
        spelling is JSON (`1.10`, `1e2`; not JSON5's `0x1F` or `.5`, which are written as JSON
        writes them), and whether every number's spelling is known."""
        unknown: list[int | float] = []
        text = orjson.dumps(self._written(value, unknown)).decode()
        return text, not unknown

    def _written(self, value: Any, unknown: list[int | float]) -> Any:
        if isinstance(value, dict):
            return {key: self._written(item, unknown) for key, item in value.items()}
        if isinstance(value, list):
            return [self._written(item, unknown) for item in value]
        if isinstance(value, bool) or not isinstance(value, int | float):
            return value
        text, known = self.spell(value)
        if not known:
            unknown.append(value)
        if text is None or not _JSON_NUMBER.fullmatch(text):
            return value  # JSON5's spelling (or none): as JSON writes the number
        if isinstance(value, int) and -_LONG <= value < _LONG and text == str(value):
            return value  # as orjson writes it
        return orjson.Fragment(text)

    def _literals(self) -> dict[_Key, set[str]]:
        if self._table is None:
            self._table = _scan(self._text, self._deadline)
        return self._table


def _scan(text: str, deadline: Deadline | None) -> dict[_Key, set[str]]:
    table: dict[_Key, set[str]] = {}
    for count, match in enumerate(_LITERAL.finditer(text)):
        if deadline is not None and not count & 1023:
            deadline.check()
        literal = match.group()
        number = read(literal)
        if number is not None:
            table.setdefault(key(number), set()).add(literal)
    return table


def read(literal: str) -> int | float | None:
    """The number a decoder reads from `literal` (JSON5's hexadecimal and signs included), or
    None when it reads none (out of a float's range, or too many digits for Python). A float's
    spelling of an integer no float holds (`9007199254740993.0`, `12345678901234567e1`) is that
    integer, as the decoder reads it (see jsontext.float_literal): so it is spelled as written."""
    try:
        if literal.lstrip("+-")[:2] in ("0x", "0X"):
            return int(literal, 16)
        if any(c in literal for c in ".eE"):
            return float_literal(literal)
        return int(literal)
    except (ValueError, ArithmeticError):
        return None


def spelled(text: str) -> _Key | None:
    """The key of the number `text` is a literal of (see `key`), or None when it is none."""
    if not _LITERAL.fullmatch(text):
        return None
    number = read(text)
    return None if number is None else key(number)


def key(number: int | float) -> _Key:
    """A number as the table knows it: an integer by its value, a float by its `hex()`."""
    return number.hex() if isinstance(number, float) else int(number)


__all__ = ["Spellings", "key", "read", "spelled"]
