"""Reasoning written without its opening tag, in a stream.

Models whose chat template puts `<think>` in the prompt (R1-style) begin their reply inside
the reasoning and close it with `</think>`; `outform.parse` drops everything before that tag.
While the reply streams, the stream cannot know yet whether a `</think>` will come, so:

- a value that words come before (prose, or a block of code passed over), while no reasoning
  tag has been met, is *provisional*: shown as it grows, never `complete` before the end of
  the stream, and its violations do not stop the stream (the final validation decides);
- when a closing tag arrives after the value followed, the stream restarts there: the next
  snapshot says `restarted` (what was shown before was reasoning: clear it), and the value
  after the tag is read as `parse` reads it;
- a reply that begins with its value is taken for the answer, as before: it is checked, and
  stopped, as it streams (docs/streaming.md, "Reasoning written without its opening tag").
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import BaseModel

import outform
from outform import OutputError
from outform.parse.partial import plain
from outform.streaming import StreamAbortedError, StreamParser, parse_stream, stream_items


class Model(BaseModel):
    number: int
    label: str


ANSWER = '{"number": 5, "label": "x"}'
FINAL = {"number": 5, "label": "x"}
LEVELS = ["minimal", "full"]


def chunks(text: str, size: int) -> Iterator[str]:
    return (text[i : i + size] for i in range(0, len(text), size))


def _every_chunking(text: str) -> Iterator[int]:
    return iter(range(1, len(text) + 1))


@pytest.mark.parametrize("level", LEVELS)
def test_an_invalid_value_in_reasoning_does_not_stop_the_stream(level: str) -> None:
    """The trial's reply: `parse` drops the reasoning; the stream was stopped on `"old"`."""
    reply = 'Thinking... {"number": "old"} hmm.\n</think>\n' + ANSWER
    assert outform.parse(reply, type=Model, level=level).data == FINAL
    for size in _every_chunking(reply):
        snapshots = list(parse_stream(chunks(reply, size), type=Model, level=level))
        assert snapshots[-1].data == FINAL


@pytest.mark.parametrize("level", LEVELS)
def test_a_draft_in_reasoning_is_never_shown_complete(level: str) -> None:
    """The draft is valid and closes long before `</think>`: it is shown, provisional, and the
    snapshot after the tag says the stream restarted. No value shown complete ever changes."""
    reply = 'Okay, a draft: {"number": 1, "label": "draft"} then more.</think>\n\n' + ANSWER
    for size in _every_chunking(reply):
        snapshots = list(parse_stream(chunks(reply, size), type=Model, level=level))
        assert snapshots[-1].data == FINAL
        assert all(plain(s.data) == FINAL for s in snapshots if s.complete)
        shown = [plain(s.data) for s in snapshots]
        if {"number": 1, "label": "draft"} in shown:
            assert sum(s.restarted for s in snapshots) == 1


def test_the_snapshot_after_the_tag_says_the_stream_restarted() -> None:
    reply = 'Draft {"number": 1, "label": "d"} ok</think>' + ANSWER
    parser: StreamParser[Any] = StreamParser(Model)
    first = parser.feed(reply[:35])
    assert [plain(s.data) for s in first] == [{"number": 1, "label": "d"}]
    assert not first[0].complete and parser.provisional
    after = parser.feed(reply[35:])
    assert [(plain(s.data), s.restarted, s.complete) for s in after] == [(FINAL, True, True)]
    assert not parser.provisional
    assert after[0].offset == len(reply)


def test_a_value_after_the_closing_tag_is_not_provisional() -> None:
    """Once the reasoning has ended, the value after it is the answer: complete when it closes,
    and stopped on a violation."""
    parser: StreamParser[Any] = StreamParser(Model)
    (snapshot,) = parser.feed("I think so.</think>\n" + ANSWER)
    assert snapshot.complete and not snapshot.restarted
    with pytest.raises(StreamAbortedError):
        StreamParser(Model).feed('I think so.</think>\n{"number": "seven", "label": "x"} ')


def test_a_value_after_words_does_not_stop_the_stream_and_parse_decides() -> None:
    """Nothing says yet that `Here it is:` is not reasoning: the violation is left to the final
    validation, which reports it."""
    reply = 'Here it is: {"number": "seven", "label": "x"}'
    parser: StreamParser[Any] = StreamParser(Model)
    for piece in chunks(reply, 6):
        parser.feed(piece)
    assert parser.provisional
    with pytest.raises(OutputError) as caught:
        parser.finish()
    assert not isinstance(caught.value, StreamAbortedError)


def test_a_reply_that_begins_with_its_value_is_still_stopped_early() -> None:
    """The bet: reasoning begins with words, not with a bracket."""
    parser: StreamParser[Any] = StreamParser(Model)
    with pytest.raises(StreamAbortedError) as caught:
        for piece in chunks('{"number": "seven", "label": "x"} and more', 6):
            parser.feed(piece)
    assert caught.value.offset < 30


def test_a_reasoning_block_with_its_opening_tag_confirms_what_follows() -> None:
    parser: StreamParser[Any] = StreamParser(Model)
    (snapshot,) = parser.feed('<think>a {"number": "old"}</think>Answer: ' + ANSWER)
    assert snapshot.complete and not parser.provisional


@pytest.mark.parametrize("tag", ["think", "thinking", "reasoning", "THINK"])
def test_every_reasoning_tag_outform_knows_ends_it(tag: str) -> None:
    reply = f'Hmm [1, 2] and {{"number": 9, "label": "no"}}.</{tag}>' + ANSWER
    assert outform.parse(reply, type=Model).data == FINAL
    for size in (1, 3, 10):
        snapshots = list(parse_stream(chunks(reply, size), type=Model))
        assert snapshots[-1].data == FINAL
        assert all(plain(s.data) == FINAL for s in snapshots if s.complete)


def test_items_of_a_list_in_reasoning_are_not_yielded() -> None:
    class Row(BaseModel):
        n: int

    reply = 'Drafting [{"n": 1}, {"n": 2}] now.</think>[{"n": 7}]'
    got = [row.n for row in stream_items(chunks(reply, 4), list[Row])]
    assert got == [7]


class Note(BaseModel):
    a: str
    note: str


@pytest.mark.parametrize(
    "reply",
    [
        '{"a": "1", "note": "ends with </think> tag"}',
        'Here: {"a": "1", "note": "use </think> to close"}',
        '{"a": "1", "note": "</think>"}',
    ],
)
def test_a_closing_tag_inside_a_string_is_text_and_the_stream_goes_on(reply: str) -> None:
    """A tag inside a string of the value followed is the string's text, as `parse` reads it:
    the stream does not restart there, and its snapshots keep growing to the final value."""
    expected = outform.parse(reply, type=Note, level="full").data
    assert "</think>" in expected["note"]
    for size in _every_chunking(reply):
        snapshots = list(parse_stream(chunks(reply, size), type=Note, level="full"))
        assert not any(s.restarted for s in snapshots), size
        assert plain(snapshots[-1].data) == expected, size


def test_a_lone_closing_tag_after_a_tag_inside_a_string_still_ends_reasoning() -> None:
    reply = 'Draft {"number": 1, "label": "a </think> b"} then.</think>\n' + ANSWER
    assert outform.parse(reply, type=Model, level="full").data == FINAL
    for size in _every_chunking(reply):
        snapshots = list(parse_stream(chunks(reply, size), type=Model, level="full"))
        assert plain(snapshots[-1].data) == FINAL, size
        assert all(plain(s.data) == FINAL for s in snapshots if s.complete), size
