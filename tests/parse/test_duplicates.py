"""Keys written twice: JSON readers keep the last value; outform records what was dropped."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

import outform
from outform.parse.duplicates import find, may_repeat


class Invoice(BaseModel):
    total: float
    paid: bool = False


@pytest.mark.parametrize("level", ["off", "minimal", "full"])
@pytest.mark.parametrize("typed", [False, True])
def test_a_key_written_twice_is_a_recorded_lossy_change_at_every_level(
    level: str, typed: bool
) -> None:
    reply = '{"total": 1, "paid": true, "paid": false}'
    result = (
        outform.parse(reply, type=Invoice, level=level)
        if typed
        else outform.parse(reply, level=level)
    )
    assert result.data == {"total": 1, "paid": False}
    (change,) = result.changes
    assert (change.path, change.transform, change.before, change.after) == (
        "/paid",
        "drop_duplicate_key",
        "true",
        "false",
    )
    assert result.lossy and "written 2 times" in change.detail


def test_the_same_value_written_twice_is_recorded_but_loses_nothing() -> None:
    result = outform.parse('{"a": [{"b": 1, "b": 1}]}')
    assert [(c.path, c.lost) for c in result.changes] == [("/a/0/b", 0)]
    assert not result.lossy


def test_a_reply_without_repeated_keys_records_nothing() -> None:
    text = '{"a": "x: y", "b": {"c": "\\u003a"}, "d": [1, {"e": 2}]}'
    assert not may_repeat(text, outform.parse(text).data)
    assert outform.parse(text).changes == ()


def test_the_bound_never_misses_a_repeated_key() -> None:
    # An escaped colon in a string is one colon in the reading: it must not hide the repeat.
    text = '{"a": 1, "a": "\\u003a"}'
    assert may_repeat(text, {"a": ":"})
    (repeat,) = find(text)
    assert (repeat.pointer, repeat.written) == ("/a", (1, ":"))
