"""json-repair (decode tier 2), interruptible by the time limit, and stopped in a long string.

json-repair is pure Python and its time is not linear in its input (it rescans the text ahead
at every comma of an unquoted value, and rebuilds a string at every escape), so a cap on the
region's size does not bound its time. Its parser reads the text through one attribute,
`json_str`, at every step of every loop; here that attribute is a property that reads the
clock every `_EVERY` reads, so the deadline interrupts json-repair wherever its work grows.

One of those costs is certain, not a matter of time: json-repair builds a string by copying
what it has built at every character it adds and at every escape it reads (its
`string_acc`), so one string costs it the square of its length. The property also stops it,
with `LongString`, when it reads the text more than `longest` characters past where the string
it is reading began (every string it reads goes through its `parse_string`, which records
where): what the square of `longest` costs is the most one string may cost it. Strings held
out of its text (held.py) are placeholders of a few characters; what is left is a string
whose end json-repair must find itself.

The reading is otherwise json-repair's own: what `repair_json(text, return_objects=True,
skip_json_loads=True, logging=True)` returns (the version range in pyproject.toml is the one
whose parser this relies on; tests/parse/test_repair.py checks the hooks).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from json_repair.json_parser import JSONParser

if TYPE_CHECKING:
    from outform.parse.context import Deadline

_EVERY = 16
"""Reads of the text between two reads of the clock. A step of json-repair between two reads
costs at most a pass over the region (bounded by `max_repair_chars`), so past the limit it
stops within a few such steps; a clock read costs far less than a step."""


_NOWHERE = sys.maxsize
"""Where json-repair is stopped when it reads no string: nowhere."""


class LongString(Exception):  # noqa: N818 - a bound reached, not a fault: decode.py records it
    """json-repair read more than `longest` characters of the text as one string: stopped,
    before the square of the string's length is spent. Caught by decode.py, which records the
    tier as skipped; never leaves outform."""

    def __init__(self, longest: int) -> None:
        super().__init__(f"json-repair read a string of more than {longest:,} characters")
        self.longest = longest


class _Bounded(JSONParser):
    """json-repair's parser whose every read of the text counts toward a clock read, and is
    refused (`LongString`) more than `longest` characters past the start of the string it is
    reading."""

    def __init__(self, text: str, deadline: Deadline, longest: int) -> None:
        self._deadline = deadline
        self._reads = 0
        self._longest = longest
        self._stop = _NOWHERE
        """Past this index json-repair has read more than `longest` characters of the string
        it is reading (one comparison at every read: cheaper than a subtraction)."""
        super().__init__(text, None, True, try_valid_json_suffix=True)

    def parse_string(self) -> Any:
        """json-repair's reading of a string (quoted or not, a key or a value) that begins
        here; the one it may be inside waits (its copying does not grow meanwhile)."""
        outer = self._stop
        self._stop = self.index + self._longest
        try:
            return super().parse_string()
        finally:
            self._stop = outer

    @property
    def json_str(self) -> Any:
        self._reads += 1
        if not self._reads % _EVERY:
            self._deadline.check()
        if self.index > self._stop:
            raise LongString(self._longest)
        return self._text

    @json_str.setter
    def json_str(self, text: Any) -> None:
        self._text = text


def repair(text: str, deadline: Deadline, longest: int) -> tuple[Any, list[dict[str, str]]]:
    """json-repair's reading of `text` and its log; raises the deadline's InputError when the
    time limit passes while it reads, `LongString` when it reads more than `longest`
    characters as one string, and json-repair's own errors (RecursionError, ...) when it
    fails."""
    parser = _Bounded(text, deadline, longest)
    return parser.parse(), parser.logger
