"""Streaming with types: partial snapshots, per-field policies, items one by one, early stop.

Read top to bottom, this is a tour of `outform.streaming`: what `stream` yields for a model,
a dataclass and a TypedDict; how `Done`, `Required` and `WithState` change what is shown;
`stream_items`; and the early stop, where a reply that goes wrong at 10% of its length is cut
there instead of being read to its end.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime
import itertools
import pickle
import warnings
from collections.abc import AsyncIterator, Iterator
from decimal import Decimal
from enum import Enum
from typing import Annotated, Any

import orjson
import pytest
from pydantic import BaseModel
from typing_extensions import TypedDict

import outform
from outform import InputError, OutputError, streaming
from outform.parse import context, unescape
from outform.parse.incremental import Degeneration
from outform.parse.partial import PartialList, extends, plain
from outform.streaming import (
    Done,
    Required,
    Snapshot,
    StreamAbortedError,
    StreamParser,
    StreamState,
    WithState,
    aparse_stream,
    parse_stream,
    partial_type,
    replay,
    stream_items,
)
from tests.parse.test_bounds import Clock


def chunks(text: str, size: int = 8) -> Iterator[str]:
    return (text[i : i + size] for i in range(0, len(text), size))


class Address(BaseModel):
    city: str
    postcode: str


class Person(BaseModel):
    name: str
    age: int
    address: Address | None = None
    languages: list[str] = []


PERSON = (
    '{"name": "Ada Lovelace", "age": 36, "address": {"city": "London", "postcode": "W1"},'
    ' "languages": ["English", "French"]}'
)


# -- typed snapshots --------------------------------------------------------------------------


def test_a_model_streams_as_its_partial_type_then_as_itself() -> None:
    snapshots = list(parse_stream(chunks(PERSON), type=Person))
    *partial, last = snapshots
    partial_person = partial_type(Person)
    assert all(isinstance(s.value, partial_person) for s in partial)
    assert partial[0].value.name is None  # the first chunk held '{"name":' and nothing more
    assert partial[1].value.name == "Ada Lo"  # the second, half the name
    assert partial[1].value.age is None  # every other field is not there yet
    middle = next(s.value for s in partial if s.value.address is not None)
    assert isinstance(middle.address, partial_type(Address))  # nested models are partial too
    assert last.final and isinstance(last.value, Person)
    assert last.value == outform.parse(PERSON, type=Person).value


def test_snapshots_only_grow() -> None:
    previous: Any = None
    for snapshot in parse_stream(chunks(PERSON, 3), type=Person):
        if previous is not None:
            assert extends(previous, snapshot.data)
        previous = snapshot.data
    assert previous == orjson.loads(PERSON)


class Colour(Enum):
    RED = "red"
    BLUE = "blue"


class Record(BaseModel):
    count: int
    ratio: float
    ok: bool
    when: datetime.date
    colour: Colour
    note: str


def shown(reply: str) -> tuple[Any, list[tuple[str, str, Any, Any]]]:
    """The last partial value of a streamed reply (its final validation aside), and its
    changes."""
    parser: StreamParser[Record] = StreamParser(Record, abort=False)
    for chunk in chunks(reply, 4):
        parser.feed(chunk)
    snapshot = parser.snapshot
    assert snapshot is not None
    changes = [(c.path, c.transform, c.before, c.after) for c in snapshot.changes]
    return snapshot.value, changes


def test_a_partial_field_holds_only_a_value_of_its_declared_type() -> None:
    value, changes = shown(
        '{"count": "36", "ratio": 2, "ok": "yes", "when": "1843-07-10", "colour": "red", '
        '"note": "fine", "x": 0}'
    )
    assert (value.count, value.ratio, value.ok) == (36, 2.0, True)
    assert value.when == datetime.date(1843, 7, 10) and value.colour is Colour.RED
    assert value.note == "fine"
    assert changes == [
        ("/count", "string_to_integer", "36", 36),
        ("/ok", "string_to_boolean", "yes", True),
    ]


def test_a_value_that_is_not_of_the_declared_type_is_not_shown() -> None:
    value, changes = shown(
        '{"count": "thirty", "ratio": "n/a?", "ok": 7, "when": "soon", "colour": "green", '
        '"note": 12, "x": 0}'
    )
    assert (value.count, value.ratio, value.ok, value.when, value.colour) == (None,) * 5
    assert value.note == "12"  # a number where a string goes: written as the string
    assert changes == [("/note", "number_to_string", 12, "12")]


class Exact(BaseModel):
    price: Decimal
    label: str = ""
    big: int = 0


def test_a_value_the_final_parse_reads_from_the_text_waits_for_it() -> None:
    """A float may not hold the digits of a Decimal (nor give the literal of a number written
    as text): shown only by the final parse, which reads them from the reply, never changed."""
    reply = (
        '{"price": 12345678901234567890.5, "label": 1.10, "big": 123456789012345678901234567890}'
    )
    snapshots = list(streaming.replay(reply, 8, type=Exact))
    *partial, last = snapshots
    assert all(s.value.price is None and s.value.label is None for s in partial)
    assert partial[-1].value.big == 123456789012345678901234567890  # an integer: every digit
    assert last.value.price == Decimal("12345678901234567890.5") and last.value.label == "1.10"


def test_the_last_snapshot_of_a_reply_cut_off_is_not_complete() -> None:
    """The final parse keeps what a cut reply wrote (closing it, recorded); the last snapshot
    says that the value was not closed by the reply."""
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "bio": {"type": "string"}},
    }
    cut = list(streaming.replay('{"name": "Ana", "bio": "hello wor', 5, schema, level="full"))[-1]
    assert cut.final and not cut.complete and cut.value == {"name": "Ana", "bio": "hello wor"}
    closed = list(streaming.replay('Sure: {"name": "Ana"} done', 5, schema))[-1]
    assert closed.final and closed.complete
    text = list(streaming.replay("hello", 2, {"type": "string"}))[-1]
    assert text.final and text.complete  # no JSON value to close: the reply is the value
    # Found by a second trial: JSON5 after prose, a JSON line or a fenced block cut off.
    for reply, level in (
        ("Result: {number: 'INV-9', tags: ['x', 'y", "full"),
        ('{"name": "apple"}\n{"name": "pe', None),
        ('```json\n{"name": "a"}\n```\n```json\n{"name": "b"', "full"),
    ):
        last = list(streaming.replay(reply, 5, None, level=level))[-1]
        assert last.final and not last.complete, reply


def test_a_string_being_written_shows_only_where_any_string_goes() -> None:
    value, _ = shown('{"note": "half a sent')
    assert value.note == "half a sent"
    value, _ = shown('{"count": "3')
    assert value.count is None  # "3" may yet be "36" or "3 dozen"


def test_the_partial_type_makes_every_field_optional_and_is_built_once() -> None:
    partial_person = partial_type(Person)
    assert partial_type(Person) is partial_person
    empty = partial_person()
    assert (empty.name, empty.age, empty.address, empty.languages) == (None, None, None, None)
    assert partial_person.__name__ == "PartialPerson"


@dataclasses.dataclass
class Point:
    x: float
    label: str


class Movie(TypedDict):
    title: str
    year: int


def test_dataclasses_and_typed_dicts_stream_too() -> None:
    *_, before, last = parse_stream(chunks('{"x": 1.5, "label": "origin"}', 4), type=Point)
    assert before.value == partial_type(Point)(x=1.5, label="origin")
    assert last.value == Point(1.5, "origin")
    snapshots = list(parse_stream(chunks('{"title": "Metropolis", "year": 1927}', 5), type=Movie))
    assert [s.value for s in snapshots[:3]] == [{}, {"title": "Metr"}, {"title": "Metropoli"}]
    assert snapshots[-1].value == {"title": "Metropolis", "year": 1927}


def test_without_a_type_snapshots_are_json() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "array"}}}
    *partial, last = parse_stream(chunks('{"a": [1, 2, 3]}', 5), schema)
    assert [plain(s.value) for s in partial] == [{}, {"a": [1]}, {"a": [1, 2, 3]}, {"a": [1, 2, 3]}]
    assert [s.complete for s in partial] == [False, False, False, True]  # "}" closed it
    assert last.result is not None and last.result.data == {"a": [1, 2, 3]}


# -- policies ---------------------------------------------------------------------------------


class Link(BaseModel):
    title: str
    url: Annotated[str, Done]


class Reply(BaseModel):
    answer: str
    sources: Annotated[list[Link], Done] = []


def test_done_fields_appear_only_complete() -> None:
    text = '{"title": "A guide", "url": "https://example.com/guide"}'
    shown = [(s.value.title, s.value.url) for s in parse_stream(chunks(text, 6), type=Link)]
    assert ("A", None) in shown  # the title streams...
    assert {url for _, url in shown} == {None, "https://example.com/guide"}  # ...the url does not


def test_a_done_list_appears_whole() -> None:
    text = (
        '{"answer": "yes", "sources": [{"title": "A", "url": "u1"}, {"title": "B", "url": "u2"}]}'
    )
    shown = [s.value.sources for s in parse_stream(chunks(text, 4), type=Reply)]
    assert all(v is None for v in shown[: shown.index(next(v for v in shown if v))])
    complete = [v for v in shown if v]
    assert all(len(v) == 2 for v in complete)


class Card(BaseModel):
    id: Annotated[int, Required]
    text: str = ""


class Board(BaseModel):
    cards: list[Card]


def test_required_holds_the_object_until_the_field_is_there() -> None:
    text = '{"cards": [{"text": "first", "id": 1}, {"text": "second", "id": 2}]}'
    for snapshot in parse_stream(chunks(text, 3), type=Board):
        cards = snapshot.value.cards or []
        # A card is never shown without its id, even though "text" comes first.
        assert all(card.id is not None for card in cards)
    parser: StreamParser[Board] = StreamParser(Board)
    parser.feed('{"cards": [{"text": "first"')
    assert snapshot_value(parser).cards == []
    parser.feed(', "id": 1}')
    assert [card.id for card in snapshot_value(parser).cards] == [1]


def snapshot_value(parser: StreamParser[Any]) -> Any:
    assert parser.snapshot is not None
    return parser.snapshot.value


class Essay(BaseModel):
    title: str
    body: Annotated[str, WithState] = ""


def test_with_state_says_whether_a_field_is_pending_incomplete_or_complete() -> None:
    parser: StreamParser[Essay] = StreamParser(Essay)
    parser.feed('{"title": "On streams"')
    assert snapshot_value(parser).body == StreamState(None, "pending")
    parser.feed(', "body": "Chunks arr')
    assert snapshot_value(parser).body == StreamState("Chunks arr", "incomplete")
    parser.feed('ive."}')
    assert snapshot_value(parser).body == StreamState("Chunks arrive.", "complete")
    assert parser.finish().value == Essay(title="On streams", body="Chunks arrive.")


# -- items one by one -------------------------------------------------------------------------


class Task(BaseModel):
    id: int
    title: str


def test_stream_items_yields_each_element_as_soon_as_it_is_complete() -> None:
    parts = [
        '[{"id": 1, "ti',
        'tle": "a"}, {"id": ',
        '2, "title": "b"}',
        ", ",
        '{"id": 3',
        ', "title": "c"}]',
    ]
    arrived: list[tuple[int, Any]] = []
    source = iter(parts)
    position = 0

    def counted() -> Iterator[str]:
        nonlocal position
        for part in source:
            position += 1
            yield part

    for item in stream_items(counted(), list[Task]):
        arrived.append((position, item))
    assert [item for _, item in arrived] == [
        Task(id=1, title="a"),
        Task(id=2, title="b"),
        Task(id=3, title="c"),
    ]
    assert [at for at, _ in arrived] == [2, 3, 6]  # each one with the chunk that closed it


class Plan(BaseModel):
    goal: str
    steps: list[Task]


def test_stream_items_follows_a_named_array() -> None:
    text = '{"goal": "ship", "steps": [{"id": 1, "title": "build"}, {"id": 2, "title": "test"}]}'
    items = list(stream_items(chunks(text, 7), Plan, "steps"))
    assert items == [Task(id=1, title="build"), Task(id=2, title="test")]
    plain_items = list(stream_items(chunks(text, 7), None, "/steps"))
    assert plain_items == [{"id": 1, "title": "build"}, {"id": 2, "title": "test"}]


def test_an_element_that_does_not_fit_the_item_type_raises() -> None:
    with pytest.raises(OutputError, match=r"\[1\]\.id"):
        list(
            stream_items(chunks('[{"id": 1, "title": "a"}, {"id": "x", "title": "b"}]'), list[Task])
        )


# -- the whole reply --------------------------------------------------------------------------


def test_replay_shows_a_stored_reply_in_small_chunks_and_ends_validated() -> None:
    reply = 'Here you go:\n```json\n{"name": "Ada", "age": 36}\n```'
    shown = list(replay(reply, 4, Person))
    assert [plain(s.data) for s in shown[:-1]] == [
        {},
        {"name": "A"},
        {"name": "Ada"},
        {"name": "Ada", "age": 36},
    ]
    assert shown[-1].final and shown[-1].value == Person(name="Ada", age=36)
    assert all(a.offset < b.offset for a, b in itertools.pairwise(shown))


def test_the_final_value_is_what_outform_parse_returns_for_the_whole_reply() -> None:
    reply = '<think>two numbers</think>{"name": "Ada", "age": "36"}'  # "36" is coerced
    last = list(parse_stream(chunks(reply, 5), type=Person))[-1]
    assert last.result is not None
    expected = outform.parse(reply, type=Person)
    assert last.value == expected.value
    assert last.result.changes == expected.changes


def test_every_n_characters_gathers_chunks_before_parsing() -> None:
    each = list(parse_stream(chunks(PERSON, 4), type=Person))
    batched = list(parse_stream(chunks(PERSON, 4), type=Person, every=64))
    assert len(batched) < len(each) / 4
    assert batched[-1].value == each[-1].value


def test_async_sources_stream_the_same() -> None:
    async def source() -> AsyncIterator[str]:
        for chunk in chunks(PERSON, 10):
            yield chunk

    async def collect() -> list[Snapshot[Any]]:
        return [s async for s in aparse_stream(source(), type=Person)]

    shown = asyncio.run(collect())
    assert [plain(s.data) for s in shown] == [
        plain(s.data) for s in parse_stream(chunks(PERSON, 10), type=Person)
    ]


# -- early stop -------------------------------------------------------------------------------


class Product(BaseModel):
    id: int
    name: str
    tags: list[str]
    price: float
    note: str


class Catalogue(BaseModel):
    items: list[Product]


def catalogue(size: int, *, broken_at: float | None = None) -> tuple[str, int]:
    """A ~`size`-character reply (the benchmark's shape) and where it goes wrong, if asked:
    the price of the item at that fraction of the text is a word no coercion reads as a number."""
    items: list[dict[str, Any]] = []
    text = ""
    while len(text) < size:
        i = len(items)
        items.append(
            {
                "id": i,
                "name": f"Item {i}",
                "tags": ["red", f"size-{i % 5}", "sale"],
                "price": round(3.5 + i * 0.25, 2),
                "note": f"A short note about item {i}, with some words.",
            }
        )
        text = orjson.dumps({"items": items}).decode()
    if broken_at is None:
        return text, -1
    cut = text.index('"price":', int(len(text) * broken_at)) + len('"price":')
    end = text.index(",", cut)
    return text[:cut] + '"ask us"' + text[end:], cut


def test_a_reply_that_goes_wrong_at_ten_percent_is_cut_there() -> None:
    text, wrong_at = catalogue(17_000, broken_at=0.10)
    size = 16
    with pytest.raises(StreamAbortedError) as caught:
        for _ in parse_stream(chunks(text, size), type=Catalogue):
            pass
    stop = caught.value.offset
    assert wrong_at < stop <= wrong_at + len('"ask us"') + 3 * size  # within a few chunks
    saved = len(text) - stop
    print(
        f"\nearly stop: cut at {stop} of {len(text)} characters ({stop / len(text):.0%}); "
        f"saved {saved} characters, about {saved // 4} tokens ({saved / len(text):.0%})"
    )
    assert saved > 0.85 * len(text)
    error = caught.value
    assert error.reason == "schema"
    assert error.hint.violations[0].path.endswith("/price")
    assert "price" in error.hint.message()  # ready to send back on the re-ask


def test_without_a_problem_the_same_reply_streams_to_its_end() -> None:
    text, _ = catalogue(17_000)
    last = list(parse_stream(chunks(text, 16), type=Catalogue))[-1]
    assert last.final and len(last.value.items) == len(orjson.loads(text)["items"])


def test_strict_level_off_stops_on_what_coercion_would_have_repaired() -> None:
    text = '{"id": 1, "name": "pen", "tags": [], "price": "3.50", "note": ""}'
    assert list(parse_stream(chunks(text), type=Product))[-1].value.price == 3.5  # minimal: coerced
    with pytest.raises(StreamAbortedError) as caught:
        list(parse_stream(chunks(text), type=Product, level="off"))
    assert caught.value.hint.violations[0].path == "/price"


def test_a_whitespace_loop_is_stopped() -> None:
    def looping() -> Iterator[str]:
        yield '{"id": 1, "name": "pen",'
        while True:
            yield "\n" * 16

    with pytest.raises(StreamAbortedError) as caught:
        list(parse_stream(looping(), type=Product, degeneration=Degeneration(inside=True)))
    assert caught.value.reason == "degenerate"
    assert caught.value.offset < 1100


def test_a_loop_inside_the_value_is_not_stopped_unless_asked() -> None:
    """A list of identical items is valid JSON: the stream ends as parse does."""
    item = '{"id": 1, "name": "the same pen, listed again", "tags": [], "price": 2, "note": ""}'
    text = '{"items": [' + ", ".join([item] * 200) + "]}"
    last = list(parse_stream(chunks(text, 16), type=Catalogue))[-1]
    assert last.final and last.value == outform.parse(text, type=Catalogue).value
    with pytest.raises(StreamAbortedError) as caught:
        list(parse_stream(chunks(text, 16), type=Catalogue, degeneration=Degeneration(inside=True)))
    assert caught.value.reason == "degenerate"


def test_a_loop_after_a_complete_value_just_ends_the_stream() -> None:
    def trailing() -> Iterator[str]:
        yield '{"id": 1, "name": "pen", "tags": [], "price": 2, "note": ""}'
        while True:
            yield " " * 64

    last = list(parse_stream(trailing(), type=Product))[-1]
    assert last.final and last.value.id == 1


def test_json_that_is_not_json_stops_a_minimal_stream_but_not_a_full_one() -> None:
    text = "{'id': 1, 'name': 'pen', 'tags': [], 'price': 2, 'note': ''}"
    with pytest.raises(StreamAbortedError) as caught:
        list(parse_stream(chunks(text), type=Product))
    assert caught.value.reason == "syntax"
    assert list(parse_stream(chunks(text), type=Product, level="full"))[-1].value.name == "pen"


def test_escaped_json_is_left_to_the_pipeline() -> None:
    text = (
        '{\\"id\\": 1, \\"name\\": \\"pen\\", \\"tags\\": [], \\"price\\": 2, \\"note\\": \\"\\"}'
    )
    assert list(parse_stream(chunks(text), type=Product))[-1].value.name == "pen"


@pytest.mark.parametrize(
    "text",
    [
        '{\\"a\\": 1, \\"b\\": \\"x\\"}',
        '  [{\\"a\\": 2, \\"b\\": \\"caf\\\\u00e9 \\\\\\"q\\\\\\"\\"}]',
        '{\\u0022a\\u0022: 3, \\"b\\": \\"\\u00e9\\"}',
        '{\\"a\\": 4, \\"b\\": \\"\\ud83d\\ude00\\"}',
        '{\\"a\\": 5 \\"b\\": 1}',
    ],
)
@pytest.mark.parametrize("level", ["off", "minimal"])
def test_a_chunk_ending_inside_an_escape_does_not_decide_an_escaped_reply(
    text: str, level: str
) -> None:
    """Whether a reply looks escaped is read from its first characters: a chunk that ends
    inside an escape (`{\\`, `{\\u00`) leaves the question open, so the stream ends as
    `outform.parse` does wherever the chunks are cut."""
    schema = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}}

    def streamed(parts: list[str]) -> Any:
        try:
            return list(parse_stream(parts, schema, level=level))[-1].value
        except OutputError:
            return OutputError

    expected = streamed([text])
    with pytest.raises(OutputError) if expected is OutputError else contextlib.nullcontext():
        assert outform.parse(text, schema=schema, level=level).data == expected
    cuts = [[text[:cut], text[cut:]] for cut in range(len(text) + 1)] + [list(text)]
    for parts in cuts:
        assert streamed(parts) == expected, parts


@pytest.mark.parametrize(
    ("text", "schema", "level"),
    [
        ('[42, "\\ud800x", "\\udc00x", ', {"type": "string", "format": "date"}, "minimal"),
        ('```json\n["\\ud800x"]\n```', {"type": "string"}, "off"),
        ('My answer: ["a", "b"]', {"type": ["string", "number"]}, "minimal"),
        ("Here: {not json} 42", {"type": "integer"}, "full"),
        (
            "{'a': 1} as text",
            {"anyOf": [{"type": "object", "required": ["b"]}, {"type": "string"}]},
            "off",
        ),
    ],
)
def test_a_reply_whose_text_may_be_the_value_is_never_stopped(
    text: str, schema: dict[str, Any], level: str
) -> None:
    """Where the schema takes a string at the root (or a scalar, and the reply does not start
    with JSON), the pipeline may take the reply's own text as the value: nothing its JSON does
    can doom it. Found by the fuzzer: such replies were stopped while `parse` accepted them."""
    expected = outform.parse(text, schema, level=level)
    for size in (1, 3, 64):
        last = list(parse_stream(chunks(text, size), schema, level=level))[-1]
        assert last.final and last.result is not None
        assert last.result.data == expected.data


@pytest.mark.parametrize(
    ("text", "schema", "level"),
    [
        # a fence the parser passes over (its body begins with a comment) holds a valid
        # value; the block it follows does not
        (
            '~~~json\n// note\n{}\n~~~\n{"code": "x = 1"}',
            {"type": "object", "additionalProperties": {"type": "string", "pattern": "^[a-z]+$"}},
            "minimal",
        ),
        # an object only json-repair reads; the parser follows the object nested in it
        (
            '# Result\n{"name": \'3/4\', "more": {"age": "high"}}',
            {"type": "object", "required": ["name"]},
            "full",
        ),
    ],
)
def test_a_value_after_another_region_does_not_decide_the_reply(
    text: str, schema: dict[str, Any], level: str
) -> None:
    """The pipeline tries every region of the reply; the parser follows one. A region before
    the one it follows (a bracket it passed over) may be the one the pipeline uses, so the
    followed value's violation no longer stops the stream. Found by the fuzzer."""
    expected = outform.parse(text, schema, level=level)
    for size in (1, 7, 64):
        last = list(parse_stream(chunks(text, size), schema, level=level))[-1]
        assert last.result is not None and last.result.data == expected.data


@pytest.mark.parametrize("level", ["minimal", "full"])
def test_a_bracket_in_a_closed_reasoning_block_does_not_spare_the_answer(level: str) -> None:
    """The pipeline removes reasoning blocks before it reads the reply, so a bracket written
    in one begins no region it tries: the answer after the block decides the reply and is
    stopped on its mistake. Found by a new-user trial: any bracket in the thinking turned the
    early stop off."""
    schema = {
        "type": "object",
        "properties": {"items": {"type": "array", "items": {"type": "integer"}}},
    }
    answer = '{"items": [1, 2, "seven", ' + ", ".join(map(str, range(4, 60))) + "]}"
    text = '<think>I will return {"items": [1]}</think>' + answer
    with pytest.raises(OutputError):
        outform.parse(text, schema, level=level)
    with pytest.raises(StreamAbortedError) as stopped:
        list(parse_stream(chunks(text, 7), schema, level=level))
    assert stopped.value.offset < text.index("seven") + 30 < len(text)  # (full: a chunk later)


PAIRS = {"type": "array", "items": {"type": "object"}, "minItems": 2}


@pytest.mark.parametrize("level", ["minimal", "full"])  # (level off reads one value)
def test_json_lines_for_a_list_root_are_not_stopped_on_their_first_value(level: str) -> None:
    """For a root that wants a list, the pipeline gathers the reply's values: a first value
    that is no array is one item of the answer, not the answer, so its schema violation (here
    one object where at least two are wanted) decides nothing. Found by a new-user trial:
    the stream stopped at the first line's end. A list the reply writes whole still stops."""
    text = '{"a": 1}\n{"a": 2}\n'
    expected = outform.parse(text, PAIRS, level=level)
    assert expected.data == [{"a": 1}, {"a": 2}]
    for size in (1, 7, len(text)):
        last = list(parse_stream(chunks(text, size), PAIRS, level=level))[-1]
        assert last.result is not None and last.result.data == expected.data
    with pytest.raises(StreamAbortedError):
        list(parse_stream(chunks('[{"a": 1}]\n' + "more words " * 20, 7), PAIRS, level=level))


@pytest.mark.parametrize("text", ["9" * 30, '"a \\"quoted\\" word"', "true", "-0.5"])
def test_a_scalar_reply_streams_at_level_off(text: str) -> None:
    """Found by the fuzzer: at level off the parser refused any reply that did not start with
    a bracket, a JSON scalar included, and stopped the stream."""
    expected = outform.parse(text, {}, level="off")
    last = list(parse_stream(chunks(text, 4), {}, level="off"))[-1]
    assert last.result is not None and last.result.data == expected.data


def test_integers_beyond_64_bits_are_read_exactly_while_streaming() -> None:
    """The checker compared orjson's float reading of 12345678901234567890123 with the enum
    member and stopped a valid reply."""
    schema = {"type": "array", "items": {"enum": [12345678901234567890123, "x"]}}
    text = '[12345678901234567890123, "x"]'
    snapshots = list(parse_stream(chunks(text, 5), schema))
    assert snapshots[-1].result is not None
    assert snapshots[-1].result.data == [12345678901234567890123, "x"]
    assert 12345678901234567890123 in plain(snapshots[-2].data)


def test_a_scalar_root_is_still_stopped_when_the_reply_starts_with_json() -> None:
    with pytest.raises(StreamAbortedError):
        list(parse_stream(chunks('{"a": 1, "b": 2, "c": 3}'), {"type": "integer"}))


# -- limits, as the reply is fed (loose ends 3 and 4) ------------------------------------------


@pytest.mark.parametrize("every", [0, 64])
def test_max_chars_is_enforced_at_the_chunk_that_crosses_it(every: int) -> None:
    parser: StreamParser[Any] = StreamParser({"type": "object"}, max_chars=30, every=every)
    fed = []
    with pytest.raises(InputError) as caught:
        for chunk in chunks('{"a": 1, "b": "' + "x" * 100 + '"}', 8):
            parser.feed(chunk)
            fed.append(chunk)
    assert len("".join(fed)) <= 30 < len("".join(fed)) + 8
    assert "over the limit of 30" in caught.value.what
    assert caught.value.fix is not None and "max_chars" in caught.value.fix


@pytest.mark.parametrize(
    "reply",
    ["Here: " + "[" * 201 + ' here is it {"a": 1}', "Here: " + "[" * 300 + "1" + "]" * 300],
)
def test_prose_brackets_nested_past_max_depth_end_as_parse_does(reply: str) -> None:
    """A bracket in prose is tentative: nested too deep, its run of openers is read as prose
    again, and the final parse judges the depth of what is JSON (the first reply reads
    `{"a": 1}`; the second is refused as too deep, at its end)."""
    try:
        expected: Any = outform.parse(reply, {"type": "object"}).data
    except InputError:
        expected = InputError
    try:
        got: Any = list(parse_stream(chunks(reply, 7), {"type": "object"}))[-1].value
    except InputError:
        got = InputError
    assert got == expected


def test_max_depth_is_enforced_as_the_parser_reads() -> None:
    parser: StreamParser[Any] = StreamParser({}, max_depth=5)
    parser.feed("[[[")
    with pytest.raises(InputError) as caught:
        parser.feed("[[[1")
    assert "deeper than the limit of 5 levels" in caught.value.what
    assert caught.value.where == "character 5"  # the sixth bracket, not the chunk's end
    assert caught.value.fix is not None and "max_depth" in caught.value.fix
    with pytest.raises(InputError):  # the final parse says the same of the whole reply
        outform.parse("[[[[[[1]]]]]]", {}, max_depth=5)


def test_time_limit_counts_the_time_spent_parsing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each chunk's parsing is timed (waiting for the next chunk is not): past the limit, the
    chunk that crosses it raises, naming the stream."""
    monkeypatch.setattr(context, "clock", Clock(step=1.0))
    parser: StreamParser[Any] = StreamParser({"type": "object"}, time_limit=2.5)
    parser.feed('{"a": ')  # 1 s
    parser.feed("1, ")  # 2 s
    with pytest.raises(InputError) as caught:
        parser.feed('"b": 2}')  # 3 s
    assert "time limit (2.5 s), in stage 'stream'" in caught.value.what


def test_the_checker_gets_the_callers_time_limit() -> None:
    parser: StreamParser[Any] = StreamParser({"type": "object"}, time_limit=0.25)
    assert parser.checker is not None and parser.checker.time_limit == 0.25


def test_a_syntax_error_the_pipeline_may_unescape_is_judged_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Found by the fuzzer (a stream of 320,000 characters took 3.8 s, twice 176,000 took 1 s):
    after a syntax error the parser may not stop on, the whole text received was joined again
    at every chunk to ask the same question."""
    asked: list[str] = []

    def looks_escaped(text: str) -> bool:
        asked.append(text)
        return unescape.looks_escaped(text)

    monkeypatch.setattr(streaming, "looks_escaped", looks_escaped)
    parser: StreamParser[Any] = StreamParser({"type": "object"})
    text = '{\\"a\\": \\"' + "x" * 2000 + '\\"}'
    parser.feed(text[:80])
    for chunk in chunks(text[80:], 2):
        parser.feed(chunk)
    assert len(asked) == 1
    assert parser.finish().data == {"a": "x" * 2000}


def test_abort_off_records_the_violation_and_reads_on() -> None:
    parser: StreamParser[Any] = StreamParser(Product, abort=False)
    for chunk in chunks('{"id": "one", "name": "pen"}'):
        parser.feed(chunk)
    assert parser.violation is not None and parser.violation.path == "/id"
    with pytest.raises(OutputError):
        parser.finish()


def test_stream_aborted_is_an_output_error_that_survives_pickling() -> None:
    with pytest.raises(StreamAbortedError) as caught:
        list(parse_stream(chunks('{"id": [1, 2], "name": "x"}'), type=Product))
    error = caught.value
    assert isinstance(error, OutputError)
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.offset, copy.reason, copy.hint) == (error.offset, error.reason, error.hint)


def test_schema_and_type_together_are_refused() -> None:
    with pytest.raises(outform.UsageError):
        list(parse_stream(["{}"], {"type": "object"}, type=Product))


def test_the_partial_list_view_shares_typed_items_between_snapshots() -> None:
    parser: StreamParser[Catalogue] = StreamParser(Catalogue)
    text, _ = catalogue(2_000)
    half = len(text) // 2
    parser.feed(text[:half])
    first = snapshot_value(parser).items
    parser.feed(text[half:-3])
    second = snapshot_value(parser).items
    assert isinstance(first, PartialList) and isinstance(second, PartialList)
    assert second[0] is first[0]  # the same typed object, built once


# -- a caller's mistakes are UsageErrors naming the argument (issue 10) ----------------------

OBJECT = {"type": "object"}
LISTS = {"type": "object", "properties": {"items": {"type": "array"}, "note": {"type": "string"}}}


def wrong(value: Any) -> Any:
    """A value of a type the function does not take (typed Any, for mypy)."""
    return value


@pytest.mark.parametrize(
    ("call", "what"),
    [
        (lambda: list(parse_stream(wrong(None), OBJECT)), "chunks must be an iterable of text"),
        (lambda: list(parse_stream(wrong([1, 2]), OBJECT)), "each chunk must be a str, got int 1"),
        (lambda: list(replay(wrong(None), 4, OBJECT)), "text must be a str, got NoneType None"),
        (lambda: list(replay("{}", wrong("4"), OBJECT)), "chunk_size must be a whole number ≥ 1"),
        (lambda: list(stream_items(["[1]"], OBJECT, wrong(5))), "path must be a str, got int 5"),
        (lambda: StreamParser(OBJECT).feed(wrong(5)), "each chunk must be a str, got int 5"),
        (lambda: StreamParser(OBJECT, every=-1), "every must be a whole number ≥ 0, got int -1"),
        (lambda: StreamParser(OBJECT, every=wrong("x")), "every must be a whole number ≥ 0"),
        (lambda: StreamParser(OBJECT, abort=wrong("no")), "abort must be True or False"),
        (
            lambda: StreamParser(OBJECT, degeneration=wrong(5)),
            "degeneration must be a Degeneration",
        ),
        (lambda: StreamParser(OBJECT, pipeline=wrong(5)), "pipeline must be an outform.Pipeline"),
        (lambda: partial_type(5), "partial_type's argument must be a type"),
    ],
    ids=[
        "chunks-none",
        "chunks-ints",
        "replay-none",
        "replay-size",
        "path-int",
        "feed-int",
        "every-negative",
        "every-text",
        "abort-text",
        "degeneration",
        "pipeline",
        "partial-type",
    ],
)
def test_a_wrong_argument_is_a_usage_error_naming_it(call: Any, what: str) -> None:
    """Each was a TypeError, an AttributeError or an InternalError, or was taken silently."""
    with pytest.raises(outform.UsageError) as caught:
        call()
    assert caught.value.what.startswith(what)


def test_a_chunk_of_bytes_is_refused_with_the_way_to_decode_a_stream() -> None:
    """`parse` takes a whole reply as UTF-8 bytes; a chunk of bytes may end inside a
    character, which no chunk-by-chunk decoding mends, so a stream takes text."""
    with pytest.raises(outform.UsageError) as caught:
        StreamParser(OBJECT).feed(wrong(b"{}"))
    assert caught.value.fix is not None
    assert "codecs.getincrementaldecoder('utf-8')" in caught.value.fix


def test_stream_items_refuses_a_path_the_schema_has_no_array_at() -> None:
    """`path="b"` streamed nothing, silently."""
    with pytest.raises(outform.UsageError) as caught:
        list(stream_items(['{"items": [1]}'], LISTS, path="b"))
    assert caught.value.what == "stream_items: the schema has no 'b' at the root"
    assert caught.value.fix == "name the array's path; the schema declares there: 'items', 'note'"
    with pytest.raises(outform.UsageError, match="the schema has string at 'note', not an array"):
        list(stream_items(['{"note": "x"}'], LISTS, path="note"))


def test_stream_items_takes_any_path_where_the_schema_does_not_say() -> None:
    assert list(stream_items(['{"b": [1, 2]}'], OBJECT, path="b")) == [1, 2]
    assert list(stream_items(['{"items": [1, 2]}'], LISTS, path="/items")) == [1, 2]


class _Tagged(BaseModel):
    name: str
    tags: list[str]
    info: dict[str, int]


def test_a_partial_model_dumps_what_it_shows_while_a_list_is_open() -> None:
    """Found by a new-user trial: `model_dump_json()` raised PydanticSerializationError on a
    snapshot whose list was still open (a view, not a list), and `model_dump()` warned."""
    parser: StreamParser[_Tagged] = StreamParser(_Tagged)
    dumped = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for part in ('{"name": "a", "tags": ["x", "y', '", "z"], "info": {"a": 1', "}}"):
            for snapshot in parser.feed(part):
                value = snapshot.value
                assert orjson.loads(value.model_dump_json()) == value.model_dump()
                dumped.append(value.model_dump())
    assert dumped[0]["tags"] == ["x", "y"]
    assert dumped[-1] == {"name": "a", "tags": ["x", "y", "z"], "info": {"a": 1}}


@pytest.mark.parametrize("every", [0, 8])
def test_a_lone_surrogate_stops_the_stream_where_it_arrives(every: int) -> None:
    """`parse` refuses a reply holding a lone surrogate; the stream parser refuses the chunk
    that brings one, naming the same character of the reply (it showed snapshots holding it,
    and only `finish()` refused them)."""
    reply = '{"a": "x\ud800y"}'
    with pytest.raises(InputError) as whole:
        outform.parse(reply, {"type": "object"})
    parser: StreamParser[Any] = StreamParser({"type": "object"}, every=every)
    with pytest.raises(InputError) as streamed:
        for chunk in ('{"a": ', '"x\ud800', 'y"}'):
            parser.feed(chunk)
    assert streamed.value.where == whole.value.where == "character 8"
