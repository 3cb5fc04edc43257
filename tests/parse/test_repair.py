"""json-repair under the time limit (parse/repair.py): its reading is json-repair's own, and
the deadline interrupts it from inside its parser, wherever its work grows.

Nothing here measures time: the clock is a fake that stands still until json-repair's parser
reads it, then jumps past the limit.
"""

from __future__ import annotations

import json_repair
import pytest

import outform
from outform import InputError
from outform.parse import context
from outform.parse.context import Deadline
from outform.parse.repair import repair
from tests.parse.clocks import ExpiresInside, in_module, raised_inside

UNQUOTED_ITEMS = "[" + ",".join("{name: x price: 1}" for _ in range(1000)) + "]"
"""json-repair's time grows with the square of this (it rescans the rest of the text at every
comma of an unquoted value): 2.9 s at 19 KB, 11 s at twice that (issue 10)."""

ESCAPED_STRING = '{"log": "' + 'line \\"q\\" \\u00e9\\n' * 20000
"""An unterminated string full of escapes: json-repair rebuilds the string at every escape
(5.1 s, blamed on stage 'unescape', in issue 10)."""


@pytest.mark.parametrize(
    ("reply", "schema"),
    [(UNQUOTED_ITEMS, {"type": "array"}), (ESCAPED_STRING, {"type": "object"})],
    ids=["unquoted-items", "escaped-string"],
)
def test_the_time_limit_interrupts_json_repair_from_inside_its_parser(
    monkeypatch: pytest.MonkeyPatch, reply: str, schema: dict[str, str]
) -> None:
    """The limit is found while json-repair reads, not after it returns: the error is raised
    from inside its parser, and names the limit and the stage doing the work."""
    monkeypatch.setattr(context, "clock", ExpiresInside(in_module("json_repair")))
    with pytest.raises(InputError) as caught:
        outform.parse(reply, schema, level="full", time_limit=0.2)
    assert "time limit (0.2 s), in stage 'decode'" in caught.value.what
    assert caught.value.fix is not None and "time_limit" in caught.value.fix
    assert raised_inside(caught.value.__traceback__, in_module("json_repair"))


def test_an_expired_deadline_stops_json_repair_at_once() -> None:
    expired = Deadline(-1.0)
    expired.stage = "decode"
    with pytest.raises(InputError, match="in stage 'decode'"):
        repair(UNQUOTED_ITEMS, expired)


@pytest.mark.parametrize(
    "text",
    [
        "{'a': True, 'b': None}",
        '{"a": [1, 2,',
        "{name: x price: 1}",
        '{"key": "v"alue"}',
        'Here: {"a": 1} and [2, 3',
        '{"log": "line \\"q\\" \\u00e9\\n',
        "",
    ],
)
def test_the_reading_and_its_log_are_json_repairs_own(text: str) -> None:
    expected = json_repair.repair_json(
        text, return_objects=True, skip_json_loads=True, logging=True
    )
    assert repair(text, Deadline.never()) == expected
