"""The slow path reads a typed value as the fast path reads a reply: strictly, as JSON. A reply
that needed any repair (a fence, an ignored key, a key in another case) was read with
Pydantic's lax reading of Python objects, which converted silently and chose other union
branches: found by a trial, at every level, `off` included."""

from __future__ import annotations

from datetime import date, datetime
from enum import IntEnum
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

import outform
from outform.streaming import StreamParser

FENCED = "```json\n{}\n```"


class Named(BaseModel):
    name: str


class Aged(BaseModel):
    name: str
    age: int


class Pet(BaseModel):
    p: Named | Aged


class Level(IntEnum):
    LOW = 1


class Flag(BaseModel):
    x: bool | Level


class When(BaseModel):
    x: date | datetime


class StrictDay(BaseModel):
    model_config = ConfigDict(strict=True)
    d: date


def fenced(reply: str) -> str:
    return FENCED.replace("{}", reply)


@pytest.mark.parametrize(
    ("output", "reply", "expected"),
    [
        (Flag, '{"x": 1}', Flag(x=Level.LOW)),
        (When, '{"x": "2024-01-01T00:00:00"}', When(x=datetime(2024, 1, 1))),
        (StrictDay, '{"d": "2024-01-01"}', StrictDay(d=date(2024, 1, 1))),
    ],
)
def test_a_fence_or_an_ignored_key_does_not_change_the_value(
    output: Any, reply: str, expected: Any
) -> None:
    """`bool | IntEnum` was IE.A as sent and True fenced; `date | datetime` lost its time
    beside an ignored key; a `strict=True` model refused its own date once fenced."""
    assert outform.parse(reply, type=output).value == expected
    assert outform.parse(fenced(reply), type=output).value == expected
    with_key = reply[:-1] + ', "other": 0}'
    result = outform.parse(with_key, type=output, level="off")
    assert result.value == expected
    assert [(c.path, c.transform) for c in result.changes] == [("/other", "ignore_extra_key")]


@pytest.mark.parametrize("age", ["true", '"1_000"', "1.0", '"7"'])
@pytest.mark.parametrize("level", ["off", "minimal", "full"])
def test_a_union_of_models_is_the_branch_that_takes_the_object_as_sent(
    age: str, level: str
) -> None:
    """`Named` takes the object (it ignores `age`); `Aged` would only after a conversion, which
    Pydantic's lax reading made silently (`true` as 1, `"1_000"` as 1000)."""
    reply = f'{{"p": {{"name": "x", "age": {age}}}}}'
    for text in (reply, fenced(reply)) if level != "off" else (reply,):  # (no fence at off)
        result = outform.parse(text, type=Pet, level=level)
        assert result.value == Pet(p=Named(name="x"))
        assert ("/p/age", "ignore_extra_key") in [(c.path, c.transform) for c in result.changes]


def test_the_stream_shows_the_branch_the_final_value_holds() -> None:
    parser: StreamParser[Pet] = StreamParser(Pet)
    reply = '{"p": {"name": "x", "age": "7"}}'
    shown = [s.value.p for ch in reply for s in parser.feed(ch)]
    final = parser.final().value
    assert final == Pet(p=Named(name="x"))
    assert all(p is None or type(p).__name__ == "PartialNamed" for p in shown)
