"""Several top-level values for a root that takes one: the first that validates is the value,
in order of appearance (valid as written before repaired), in parse at every level, in the
stream's final result and in the gateway's enforcement verdict."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

import outform
from outform.errors import StreamAbortedError
from outform.gateway.checks import CheckSettings, check_reply
from outform.streaming import StreamParser

PAIR = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
    "required": ["a", "b"],
}
FIRST = {"a": 1, "b": "x"}
SECOND = {"a": 2, "b": "y"}
BOTH_VALID = [
    '{"a": 1, "b": "x"}\n{"a": 2, "b": "y"}',
    '{"a": 1, "b": "x"}{"a": 2, "b": "y"}',
    'Draft: {"a": 1, "b": "x"}\nFinal: {"a": 2, "b": "y"}',
    '```json\n{"a": 1, "b": "x"}\n```\n```json\n{"a": 2, "b": "y"}\n```',
    '{"a": 1, "b": "x"}\n{"a": 2, "b": "y"',
]


def _stream(reply: str, level: str, *, abort: bool = True) -> Any:
    parser: StreamParser[Any] = StreamParser(PAIR, level=level, abort=abort)
    for start in range(0, len(reply), 5):
        parser.feed(reply[start : start + 5])
    return parser.finish().data


@pytest.mark.parametrize("reply", BOTH_VALID)
@pytest.mark.parametrize("level", ["minimal", "full"])
def test_of_two_valid_objects_the_first_is_the_value(reply: str, level: str) -> None:
    result = outform.parse(reply, PAIR, level=level)
    assert result.data == FIRST
    assert " 1 of 2 in the reply" in result.changes[-1].detail
    assert _stream(reply, level) == FIRST


@pytest.mark.parametrize("level", ["minimal", "full"])
def test_an_invalid_first_object_gives_way_to_the_next_that_validates(level: str) -> None:
    reply = '{"a": "one", "b": "x"}\n{"a": 2, "b": "y"}'
    result = outform.parse(reply, PAIR, level=level)
    assert result.data == SECOND
    assert result.changes[-1].detail == "value 2 of 2 in the reply"
    assert _stream(reply, level, abort=False) == SECOND


def test_a_stream_is_stopped_on_its_first_value_when_that_cannot_validate() -> None:
    """The early stop bets that the first value is the answer (docs/streaming.md, Limits)."""
    with pytest.raises(StreamAbortedError):
        _stream('{"a": "one", "b": "x"}\n{"a": 2, "b": "y"}', "full")


def test_a_value_valid_as_written_comes_before_one_that_needs_repair() -> None:
    reply = "{'a': 1, 'b': 'x'}\n{\"a\": 2, \"b\": \"y\"}"
    assert outform.parse(reply, PAIR, level="full").data == SECOND


@pytest.mark.parametrize("level", ["minimal", "full"])
def test_the_gateway_enforces_the_same_choice(level: str) -> None:
    verdict = check_reply(BOTH_VALID[0], _format(), CheckSettings(level, 5.0), False)
    assert verdict.kind == "repaired"
    assert orjson.loads(verdict.text) == FIRST


def test_a_list_root_still_gathers_every_value() -> None:
    reply = BOTH_VALID[0]
    assert outform.parse(reply, {"type": "array", "items": PAIR}).data == [FIRST, SECOND]


def _format() -> dict[str, Any]:
    return {"type": "json_schema", "name": "pair", "schema": PAIR, "strict": False}


def test_a_value_before_an_unclosed_fence_is_gathered_with_it() -> None:
    """`{"a": 0}` in the prose, then a fence left open: both are the reply's values."""
    result = outform.parse('{"a": 0}\n```\n{"a": 1}', {"type": "array"}, level="full")
    assert result.data == [{"a": 0}, {"a": 1}]
    assert [c.transform for c in result.changes] == ["collect_values"]


def test_values_in_prose_and_in_blocks_are_gathered_in_order_of_appearance() -> None:
    reply = 'First {"a": 0}\n```json\n{"a": 1}\n```\nthen {"a": 2}'
    assert outform.parse(reply, {"type": "array"}).data == [{"a": 0}, {"a": 1}, {"a": 2}]


def test_a_bracket_in_prose_that_is_no_json_is_not_gathered_with_a_block() -> None:
    reply = 'Fill in {name} like this:\n```json\n[{"a": 1}]\n```'
    assert outform.parse(reply, {"type": "array"}).data == [{"a": 1}]


def test_a_block_taken_for_a_single_root_says_what_else_the_reply_holds() -> None:
    result = outform.parse('{"a": 0}\n```\n{"a": 1}', {"type": "object"}, level="full")
    assert result.data == {"a": 1}
    assert "1 more value(s) in the reply outside its fenced blocks" in result.changes[-1].detail


@pytest.mark.parametrize("size", [1, 3, 7, 8, 16, 25, 46])
def test_whether_a_stream_stops_does_not_depend_on_its_chunks(size: int) -> None:
    """At full, a violation waited for a character after it that is no quote or bracket; with
    chunks that all ended on one, the reply ran to its end and `finish` took the second value.
    A container the parser has closed is read by the pipeline as written: its violation stands."""
    reply = '{"a": "one", "b": "x"}{"a": 2, "b": "y"}'
    parser: StreamParser[Any] = StreamParser(PAIR, level="full")
    with pytest.raises(StreamAbortedError) as caught:
        for start in range(0, len(reply), size):
            parser.feed(reply[start : start + size])
        parser.finish()
    assert caught.value.reason == "schema"
    assert outform.parse(reply, PAIR, level="full").data == SECOND


@pytest.mark.parametrize("reply", BOTH_VALID[:4])
def test_the_values_left_out_are_the_loss_of_the_one_taken(reply: str) -> None:
    """Found by a new-user trial: a template before the answer was taken with nothing lost
    (`Format: {...} Answer: {...}`). The one taken records the letters and digits of the
    others, and is lossy (never refused: the rule still takes the first that validates)."""
    result = outform.parse(reply, PAIR)
    assert result.value == FIRST and result.lossy
    (change,) = [c for c in result.changes if c.stage == "extract"]
    assert change.lost == len("a2by")  # the second value's letters and digits
    alone = outform.parse('{"a": 1, "b": "x"}', PAIR)
    assert not alone.lossy


@pytest.mark.parametrize(
    "reply",
    [
        '```json\n{"a": 1}\n{"a": 2}\n```',
        '```jsonl\n{"a": 1}\n{"a": 2}\n```',
        'Here:\n```json\n{"a": 1},\n{"a": 2}\n```\nDone.',
    ],
)
def test_a_fenced_block_of_json_lines_gives_each_value_to_the_list(reply: str) -> None:
    """Found by a new-user trial: the lines of one fenced block were read as the first value
    alone, the others dropped. A block of JSON lines is gathered as the same lines unfenced
    are."""
    result = outform.parse(reply, {"type": "array", "items": {"type": "object"}}, level="full")
    assert result.data == [{"a": 1}, {"a": 2}]
    assert not result.lossy
