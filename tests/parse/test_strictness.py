"""A typed output's strict reading of JSON is never looser than its schema
(parse/strictness.py): Pydantic matches a `Literal` or an `Enum` member by Python's `==`, for
which `True == 1` and `False == 0`, so the typed fast path took `{"x": true}` for `Literal[1, 2]`
as 1, recording nothing, with `data` saying `true` and `value` 1, while the slow path (the same
reply in a fence) refused it. Every level, every path, and the stream now give the slow path's
answer: a violation, or a recorded coercion."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum, IntEnum
from typing import Any, Literal

import pytest
from pydantic import BaseModel, TypeAdapter

import outform
from outform import OutputError, Pipeline
from outform.errors import StreamAbortedError
from outform.parse import strictness
from outform.streaming import parse_stream

LEVELS = ["off", "minimal", "full"]


class Lt(BaseModel):
    x: Literal[1, 2]


class Priority(IntEnum):
    LOW = 0
    HIGH = 1


class Task(BaseModel):
    p: Priority


class Zero(BaseModel):
    x: Literal[0, 5]


class Flag(BaseModel):
    x: Literal[True]


class Half(float, Enum):
    HALF = 0.5
    ONE = 1.0


class Scaled(BaseModel):
    f: Half


@dataclass
class Tagged:
    tags: list[Literal[1, 2]]


REFUSED = [
    (Lt, '{"x": true}', "/x"),
    (Task, '{"p": true}', "/p"),
    (Zero, '{"x": false}', "/x"),
    (Scaled, '{"f": true}', "/f"),
    (Tagged, '{"tags": [1, true]}', "/tags/1"),
]


def fenced(text: str) -> str:
    return f"```json\n{text}\n```"


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize(("output", "reply", "path"), REFUSED)
def test_a_boolean_is_no_number_member_at_any_level(
    output: Any, reply: str, path: str, level: str
) -> None:
    """Valid as sent, it was `x=1` (`HIGH`, 0, ...) with `data` holding the boolean and no
    change; the same reply in a fence (which takes the slow path) was refused."""
    for text in (reply,) if level == "off" else (reply, fenced(reply)):
        with pytest.raises(OutputError) as caught:
            outform.parse(text, type=output, level=level)
        hint = caught.value.hint
        assert hint is not None
        assert {v.path for v in hint.violations} == {path}
        assert all(v.found.startswith("boolean ") for v in hint.violations)


def test_a_number_for_a_boolean_member_is_a_recorded_coercion() -> None:
    """`Literal[True]` given 1: `number_to_boolean` where coercion runs, as in a fence; refused
    at level off (no coercion), where it was `x=True` with `data` 1 and nothing recorded."""
    for level in ("minimal", "full"):
        for text in ('{"x": 1}', fenced('{"x": 1}')):
            result = outform.parse(text, type=Flag, level=level)
            assert result.value == Flag(x=True)
            assert result.data == {"x": True}
            assert [c.transform for c in result.changes if c.stage == "semantic"] == [
                "number_to_boolean"
            ]
    with pytest.raises(OutputError, match="expected boolean, found integer 1"):
        outform.parse('{"x": 1}', type=Flag, level="off")


@pytest.mark.parametrize(
    ("output", "reply"),
    [
        (Lt, '{"x": 2}'),
        (Task, '{"p": 1}'),
        (Zero, '{"x": 0}'),
        (Flag, '{"x": true}'),
        (Scaled, '{"f": 1}'),
        (Tagged, '{"tags": [2, 1]}'),
    ],
)
def test_a_member_as_written_is_valid_as_sent_with_value_and_data_agreeing(
    output: Any, reply: str
) -> None:
    result = outform.parse(reply, type=output, level="off")
    assert result.changes == ()
    assert TypeAdapter(output).dump_python(result.value, mode="json") == result.data


@pytest.mark.parametrize(("output", "reply", "path"), REFUSED[:3])
def test_the_stream_agrees_with_parse(output: Any, reply: str, path: str) -> None:
    """The stream stopped at the boolean, while parse took it: now both refuse."""
    for level in LEVELS:
        with pytest.raises(StreamAbortedError):
            list(parse_stream(iter(reply), type=output, level=level))
        shown: list[Any] = []
        with pytest.raises(OutputError):
            for snapshot in parse_stream(iter(reply), type=output, level=level, abort=False):
                shown.append(getattr(snapshot.value, path.strip("/"), None))
        # No snapshot showed the member `==` would have matched.
        assert shown and set(shown) == {None}


def test_a_streamed_number_for_a_boolean_member_is_recorded_as_in_parse() -> None:
    reply = '{"x": 1}'
    for level in ("minimal", "full"):
        final = list(parse_stream(iter(reply), type=Flag, level=level))[-1].result
        assert final is not None
        assert final.changes == outform.parse(reply, type=Flag, level=level).changes
        assert final.data == {"x": True}


def test_the_places_are_found_in_the_schema() -> None:
    assert strictness.compares_numbers(TypeAdapter(Lt).json_schema())
    assert strictness.compares_numbers(TypeAdapter(Task).json_schema())
    assert strictness.compares_numbers(TypeAdapter(Flag).json_schema())
    assert strictness.compares_numbers({"enum": [[1, 2], "a"]})
    assert strictness.compares_numbers({"const": {"a": 0.5}})
    # Strings only, or numbers where nothing compares them by equality: none.
    assert not strictness.compares_numbers({"enum": ["a", "b"], "default": 1})
    assert not strictness.compares_numbers(
        {"properties": {"enum": {"type": "integer"}, "const": {"examples": [1]}}}
    )


class Plain(BaseModel):
    name: str
    count: int


def test_types_without_such_a_place_keep_the_fast_path_as_it_was(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One Pydantic call and no second reading of the reply: `data` is read when asked."""
    pipeline = Pipeline(Plain)
    assert not pipeline._loose
    assert Pipeline(Lt)._loose
    calls: list[Any] = []
    validator = pipeline._fast_validator

    class Spy:
        def is_valid(self, value: Any) -> bool:
            calls.append(value)
            return bool(validator.is_valid(value))

    monkeypatch.setattr(pipeline, "_fast_validator", Spy())
    result = pipeline.run('{"name": "a", "count": 1}')
    assert result.value == Plain(name="a", count=1) and not result.changes
    assert calls == []
