"""A number turned into text is the literal the reply wrote (parse/literals.py), or, when that
spelling is not known, its shortest spelling recorded as lossy."""

from __future__ import annotations

from typing import Any

import pytest

import outform
from outform.parse.literals import Spellings

TEXT = {"type": "object", "properties": {"a": {"type": "string"}}}


def field(schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {"a": schema}}


@pytest.mark.parametrize(
    ("reply", "written"),
    [
        ('{"a": 1.10}', "1.10"),
        ('{"a": 1e2}', "1e2"),
        ('{"a": 1E2}', "1E2"),
        ('{"a": 0.1000000000000000000001}', "0.1000000000000000000001"),
        ('{"a": 12345678901234567890.5}', "12345678901234567890.5"),
        ('{"a": 123456789012345678901234567890}', "123456789012345678901234567890"),
        ('{"a": -0}', "-0"),
        ('{"a": -0.0}', "-0.0"),
        ('{"a": 42}', "42"),
    ],
)
@pytest.mark.parametrize("level", ["minimal", "full"])
def test_a_number_wanted_as_text_is_the_literal_the_reply_wrote(
    reply: str, written: str, level: str
) -> None:
    """`1.10` read as a float and written again was "1.1": a version number changed with no
    loss recorded."""
    result = outform.parse(reply, TEXT, level=level)
    assert result.data == {"a": written}
    (change,) = result.changes
    assert (change.transform, change.after, change.lost) == ("number_to_string", written, 0)
    assert not result.lossy


@pytest.mark.parametrize(
    ("reply", "written"),
    [
        ('{"a": 1.10,}', "1.10"),  # pyjson5
        ("{'a': 0x1F}", "0x1F"),  # JSON5's hexadecimal, as written
        ('{"a": 1.10 "b": true}', "1.10"),  # json-repair
        ('"{\\"a\\": 1.10}"', "1.10"),  # JSON inside a JSON string
    ],
)
def test_a_tolerant_reading_finds_the_literal_in_the_text_too(reply: str, written: str) -> None:
    result = outform.parse(reply, TEXT, level="full")
    assert result.data["a"] == written
    assert not result.lossy


def test_a_number_the_reply_spells_two_ways_is_written_shortest_and_recorded_lossy() -> None:
    """`1.10` and `1.1` are one float: which one this was is not known."""
    result = outform.parse('{"a": 1.10, "b": 1.1}', TEXT)
    assert result.data == {"a": "1.1", "b": 1.1}
    (change,) = result.changes
    assert change.lost == 1
    assert "spelling of the number is not known" in change.detail
    assert result.lossy


def test_json_text_made_of_a_container_keeps_its_numbers_as_written() -> None:
    result = outform.parse('{"a": [1.10, 1e2, 123456789012345678901234567890]}', TEXT, level="full")
    assert result.data == {"a": "[1.10,1e2,123456789012345678901234567890]"}
    assert not result.lossy


def test_json_text_writes_a_json5_spelling_as_json() -> None:
    """`.5` is no JSON number: the text JSON is made of says 0.5."""
    result = outform.parse("{'a': [.5, 2]}", TEXT, level="full")
    assert result.data == {"a": "[0.5,2]"}


@pytest.mark.parametrize(
    ("members", "value"), [(["1.10", "2"], {"a": "1.10"}), (["1.1", "2"], None)]
)
def test_a_number_matches_the_enum_member_that_writes_it_as_the_reply_did(
    members: list[str], value: Any
) -> None:
    """`1.10` names the member "1.10", not "1.1" (which it would be, read as a float)."""
    schema = field({"enum": members})
    if value is None:
        with pytest.raises(outform.OutputError):
            outform.parse('{"a": 1.10}', schema)
    else:
        assert outform.parse('{"a": 1.10}', schema).data == value


def test_the_spellings_of_a_text() -> None:
    spellings = Spellings('{"a": 1.10, "b": [1e2, -0, 7], "c": "1.5 and 1.50", "d": 0.5}')
    assert spellings.spell(1.1) == ("1.10", True)
    assert spellings.spell(100.0) == ("1e2", True)
    assert spellings.spell(0) == ("-0", True)
    assert spellings.spell(7) == ("7", True)
    assert spellings.spell(1.5) == ("1.5", False)  # written two ways
    assert spellings.spell(2.5) == ("2.5", False)  # not written at all
    assert spellings.spell(8) == ("8", True)  # an integer has one JSON spelling
    assert Spellings("v1.10 and 2024-05-01").spell(1.1) == ("1.1", False)


def test_a_number_in_a_word_is_no_literal() -> None:
    assert Spellings("v1.10 x2.5 2024-05-01").spell(5) == ("5", True)
    assert Spellings("v1.10").spell(1.1)[1] is False
