"""Types Pydantic reads from a string (dates, times, durations, UUIDs, decimals, enums,
literals, constrained strings) as the whole reply: a reply that is one JSON string is the string
it spells, and one that is no such value is an OutputError saying why, at every level, in `parse`
and in a stream alike; never an InternalError."""

from __future__ import annotations

import enum
import uuid
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Annotated, Any, Literal

import pytest
from pydantic import StringConstraints

import outform
from outform.streaming import parse_stream

LEVELS = ("off", "minimal", "full")


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


Slug = Annotated[str, StringConstraints(pattern=r"^[a-z]+$")]

SPELLED: list[tuple[Any, str, Any]] = [
    (datetime, "2024-05-01T10:00:00Z", datetime(2024, 5, 1, 10, tzinfo=UTC)),
    (date, "2024-05-01", date(2024, 5, 1)),
    (time, "10:30:00", time(10, 30)),
    (timedelta, "PT1H", timedelta(hours=1)),
    (uuid.UUID, str(uuid.UUID(int=2**100)), uuid.UUID(int=2**100)),
    (Decimal, "1.5", Decimal("1.5")),
    (Colour, "red", Colour.RED),
    (Literal["x", "y"], "y", "y"),
    (Slug, "abc", "abc"),
]


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize(("kind", "spelled", "value"), SPELLED)
def test_a_json_string_reply_is_the_string_it_spells(
    kind: Any, spelled: str, value: Any, level: str
) -> None:
    quoted = f'"{spelled}"'
    assert outform.parse(quoted, type=kind, level=level).value == value
    assert outform.parse(spelled, type=kind, level=level).value == value


@pytest.mark.parametrize(("kind", "spelled", "value"), SPELLED)
def test_a_streamed_json_string_is_the_string_it_spells(
    kind: Any, spelled: str, value: Any
) -> None:
    quoted = f'"{spelled}"'
    for size in (1, 4, len(quoted)):
        chunks = [quoted[i : i + size] for i in range(0, len(quoted), size)]
        assert list(parse_stream(chunks, type=kind))[-1].value == value


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize(
    ("kind", "reply", "found"),
    [
        (datetime, '"May 1st 2024"', 'found string "May 1st 2024"'),
        (date, '"2024-05-01T10:00:00Z"', 'found string "2024-05-01T10:00:00Z"'),
        (date, "2024-05-01T10:00:00Z", 'found string "2024-05-01T10:00:00Z"'),
        (uuid.UUID, '"not-a-uuid"', 'found string "not-a-uuid"'),
        (timedelta, '"an hour"', 'found string "an hour"'),
        (Colour, '"green"', 'found string "green"'),
        (Slug, '"ABC"', 'found string "ABC"'),
    ],
)
def test_a_string_that_is_not_such_a_value_is_an_output_error_about_what_it_spells(
    kind: Any, reply: str, found: str, level: str
) -> None:
    """The failure is judged on the string the JSON spells (no quote inside it), with a hint
    for the model."""
    with pytest.raises(outform.OutputError) as caught:
        outform.parse(reply, type=kind, level=level)
    assert caught.value.hint is not None
    line = caught.value.hint.explain()
    assert found in line and '\\"' not in line, line


def test_a_bad_date_in_a_stream_is_an_output_error() -> None:
    with pytest.raises(outform.OutputError, match='found string "May 1st 2024"'):
        list(parse_stream(['"May 1', 'st 2024"'], type=datetime))
