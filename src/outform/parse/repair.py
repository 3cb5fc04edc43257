"""json-repair (decode tier 2), interruptible by the time limit.

json-repair is pure Python and its time is not linear in its input (it rescans the text ahead
at every comma of an unquoted value, and rebuilds a string at every escape), so a cap on the
region's size does not bound its time. Its parser reads the text through one attribute,
`json_str`, at every step of every loop; here that attribute is a property that reads the
clock every `_EVERY` reads, so the deadline interrupts json-repair wherever its work grows.
The reading is otherwise json-repair's own: what `repair_json(text, return_objects=True,
skip_json_loads=True, logging=True)` returns (the version range in pyproject.toml is the one
whose parser this relies on; tests/parse/test_repair.py checks the hook).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from json_repair.json_parser import JSONParser

if TYPE_CHECKING:
    from outform.parse.context import Deadline

_EVERY = 16
"""Reads of the text between two reads of the clock. A step of json-repair between two reads
costs at most a pass over the region (bounded by `max_repair_chars`), so past the limit it
stops within a few such steps; a clock read costs far less than a step."""


class _Bounded(JSONParser):
    """json-repair's parser whose every read of the text counts toward a clock read."""

    def __init__(self, text: str, deadline: Deadline) -> None:
        self._deadline = deadline
        self._reads = 0
        super().__init__(text, None, True, try_valid_json_suffix=True)

    @property
    def json_str(self) -> Any:
        self._reads += 1
        if not self._reads % _EVERY:
            self._deadline.check()
        return self._text

    @json_str.setter
    def json_str(self, text: Any) -> None:
        self._text = text


def repair(text: str, deadline: Deadline) -> tuple[Any, list[dict[str, str]]]:
    """json-repair's reading of `text` and its log; raises the deadline's InputError when the
    time limit passes while it reads, and json-repair's own errors (RecursionError, ...)
    when it fails."""
    parser = _Bounded(text, deadline)
    return parser.parse(), parser.logger
