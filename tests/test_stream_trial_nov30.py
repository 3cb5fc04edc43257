"""What a new user met streaming typed replies (trial of Nov 30), as rules of docs/streaming.md:

- a model holding a TypedDict streams on Python 3.11 (`partial_type` builds a TypedDict
  Pydantic takes there), and `partial_type` lets only outform's errors out;
- a model read by alias and by name (`populate_by_name=True`) streams the key `parse` renames,
  however the chunks were cut, and a stop on such a model names the missing field;
- a value the type may change (a validator, string rules) is shown once complete, as the type
  makes it, never as written ("What a snapshot shows", "Typed values");
- `stream_items` types the items of a `RootModel` of a list, as of the list;
- an escaped lone surrogate stops the stream at the error below `full` ("Early stop");
- a bracket that begins no JSON value where the value may begin (`[Draft]`) is prose, read past
  as `parse` reads past it, not a reason to stop ("What a snapshot shows").
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Annotated, Any

import pytest
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PydanticUserError,
    RootModel,
    StringConstraints,
    TypeAdapter,
    field_validator,
    model_validator,
)
from typing_extensions import TypedDict

import outform
from outform import streaming
from outform.errors import OutformError, OutputError, StreamAbortedError
from outform.parse.partial import plain
from outform.streaming import Snapshot, parse_stream, partial_type, stream_items


def cuts(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def chunkings(text: str) -> Iterator[list[str]]:
    """The reply whole, split after its first character, and in pieces of 1, 3 and 7."""
    yield [text]
    yield [text[:1], text[1:]]
    for size in (1, 3, 7):
        yield cuts(text, size)


def fields_shown(snapshot: Snapshot[Any]) -> dict[str, Any]:
    """The fields a partial snapshot shows (None: not shown), as JSON."""
    value = snapshot.value
    if value is None:
        return {}
    dumped = plain(value.model_dump(mode="json")) if isinstance(value, BaseModel) else value
    return {k: v for k, v in dumped.items() if v is not None}


def agrees(shown: Any, final: Any) -> bool:
    """Whether a value shown (as JSON) is a part of the final one: a string may still grow, a
    list or object gain members (None: not shown yet); anything else is the final value."""
    if shown is None:
        return True
    if isinstance(shown, dict):
        return isinstance(final, dict) and all(
            k in final and agrees(v, final[k]) for k, v in shown.items()
        )
    if isinstance(shown, list):
        return (
            isinstance(final, list)
            and len(shown) <= len(final)
            and all(agrees(a, b) for a, b in zip(shown, final, strict=False))
        )
    if isinstance(shown, str) and isinstance(final, str):
        return final.startswith(shown)
    return type(shown) is type(final) and shown == final


def never_contradicted(snapshots: Sequence[Snapshot[Any]]) -> None:
    """Every field a partial snapshot shows is a part of the final value's (the no-flicker
    rule, for typed values)."""
    final = snapshots[-1]
    assert final.final
    expected = final.value.model_dump(mode="json")
    for snapshot in snapshots[:-1]:
        for name, shown in fields_shown(snapshot).items():
            assert agrees(shown, expected[name]), (snapshot, name, shown, expected[name])


# -- a model holding a TypedDict -----------------------------------------------------------


class Point(TypedDict):
    x: int


class Shape(BaseModel):
    name: str
    at: Point


def test_a_model_holding_a_typeddict_streams_and_ends_as_parse() -> None:
    """`partial_type` made the TypedDict with `typing.TypedDict`, which Pydantic refuses below
    Python 3.12: the stream's first step raised an InternalError where `parse` worked."""
    reply = '{"name": "dot", "at": {"x": 1}}'
    for chunks in chunkings(reply):
        snapshots = list(parse_stream(chunks, type=Shape))
        assert snapshots[-1].value == outform.parse(reply, type=Shape).value
        never_contradicted(snapshots)
    shown = parse_stream(['{"name": "dot", "at": {"x": 1', "}}"], type=Shape)
    assert [s.value.at for s in shown] == [{}, {"x": 1}, {"x": 1}]


def test_partial_type_of_a_model_holding_a_typeddict_is_a_type_pydantic_takes() -> None:
    partial = partial_type(Shape)
    assert TypeAdapter(partial).validate_python({"at": {"x": 1}}).at == {"x": 1}
    assert partial.model_fields["at"].default is None


def test_partial_type_lets_only_outform_errors_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only outform's errors leave a public function: a fault building the partial type is
    outform's error (here, the fault is this test's: a CallerCodeError naming it), chained to
    the original, not Pydantic's exception."""

    class Fresh(BaseModel):  # (not built before: partial types are cached)
        a: int

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise PydanticUserError("refused", code=None)

    monkeypatch.setattr(streaming, "create_model", refuse)
    with pytest.raises(OutformError) as caught:
        partial_type(Fresh)
    assert isinstance(caught.value.__cause__, PydanticUserError)


# -- a model read by alias and by name ------------------------------------------------------


class Account(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    user_name: str = Field(alias="userName")


class Team(BaseModel):
    owner: Account
    members: list[Account] = []


def test_a_key_parse_renames_is_not_a_reason_to_stop_in_any_chunking() -> None:
    """`{"Username": ...}` is renamed to `userName` by the coercion (the schema declares the
    property in the node and requires a spelling in an `if`/`else` part): a whole object in
    one chunk was judged part by part, and stopped ("expected object, found object")."""
    for reply, output in [
        ('{"Username": "bob"}', Account),
        ('{"owner": {"Username": "bob"}, "members": [{"USER_NAME": "ann"}]}', Team),
    ]:
        expected = outform.parse(reply, type=output).value
        for chunks in chunkings(reply):
            snapshots = list(parse_stream(chunks, type=output))
            assert snapshots[-1].value == expected, chunks


def test_a_stop_on_such_a_model_names_the_missing_field() -> None:
    with pytest.raises(StreamAbortedError) as caught:
        list(parse_stream(['{"owner": {"Nope": "bob"}', "}"], type=Team))
    message = caught.value.hint.message()
    assert "missing required field 'userName'" in message
    assert "expected object, found object" not in message


# -- values the type changes ----------------------------------------------------------------


class Counter(BaseModel):
    x: Annotated[int, AfterValidator(lambda v: v + 1)]
    note: str = ""


class Shouting(BaseModel):
    model_config = ConfigDict(str_strip_whitespace=True, str_to_upper=True)
    name: str
    tags: list[str] = []
    count: int = 0


class Quiet(BaseModel):
    word: Annotated[str, StringConstraints(strip_whitespace=True, to_lower=True)]


class Titled(BaseModel):
    title: str

    @field_validator("title")
    @classmethod
    def capitalised(cls, title: str) -> str:
        return title.capitalize()


class Sorted(BaseModel):
    ranks: Annotated[list[int], AfterValidator(sorted)]


@pytest.mark.parametrize(
    ("reply", "output", "final"),
    [
        ('{"x": 1, "note": "n"}', Counter, {"x": 2, "note": "n"}),
        ('{"x": "1"}', Counter, {"x": 2, "note": ""}),  # converted, then run through the type
        (
            '{"name": " ana ", "tags": [" a", "b "], "count": 3}',
            Shouting,
            {"name": "ANA", "tags": ["A", "B"], "count": 3},
        ),
        ('{"word": " HeLLo "}', Quiet, {"word": "hello"}),
        ('{"title": "the end"}', Titled, {"title": "The end"}),
        ('{"ranks": [3, 1, 2]}', Sorted, {"ranks": [1, 2, 3]}),
    ],
)
def test_a_value_the_type_changes_is_shown_as_the_type_makes_it(
    reply: str, output: Any, final: dict[str, Any]
) -> None:
    """Shown once complete, run through the type as the final parse runs it: never 1 then 2,
    never ' ana ' then 'ANA', never a partial string or list the type would change."""
    for chunks in chunkings(reply):
        snapshots = list(parse_stream(chunks, type=output))
        assert snapshots[-1].value.model_dump() == final
        never_contradicted(snapshots)
    shown = [fields_shown(s) for s in parse_stream(cuts(reply, 1), type=output)][:-1]
    written = {k: v for k, v in final.items() if f'"{k}"' in reply}
    assert shown[-1] == written  # shown before the end, as the type makes them


class Scored(BaseModel):
    score: int

    @model_validator(mode="after")
    def out_of_ten(self) -> Scored:
        self.score *= 10
        return self


def test_an_object_its_model_validator_changes_is_shown_once_complete() -> None:
    """A `model_validator` may change any field: its object is shown once complete, as the
    model makes it (the item being written is not shown)."""
    reply = '[{"score": 1}, {"score": 2}]'
    for chunks in chunkings(reply):
        snapshots = list(parse_stream(chunks, type=list[Scored]))
        final = snapshots[-1].value
        assert final == [Scored(score=1), Scored(score=2)]
        assert [s.score for s in final] == [10, 20]
        for snapshot in snapshots[:-1]:
            shown = [item.score for item in snapshot.value if item is not None]
            assert shown == [10, 20][: len(shown)]


class Adult(BaseModel):
    age: Annotated[int, AfterValidator(lambda age: age if age >= 18 else _too_young())]


def _too_young() -> int:
    raise ValueError("must be 18 or more")


def test_a_scalar_its_type_refuses_is_shown_as_read_and_the_reply_refused() -> None:
    """A validator that only checks: the value is shown as read, and the final parse, which
    reads that same value, refuses the reply."""
    parser: streaming.StreamParser[Any] = streaming.StreamParser(Adult)
    shown = [s.value.age for s in parser.feed('{"age": 12') + parser.feed("}")]
    assert shown[-1] == 12
    with pytest.raises(OutputError, match="must be 18 or more"):
        parser.finish()


class Pair(BaseModel):
    items: Annotated[list[int], AfterValidator(lambda items: [*items, len(items)])]


def test_a_list_its_type_refuses_as_read_is_not_shown() -> None:
    """`["3 items", 5]` for a `list[int]`: the stream shows the first item as None, the final
    parse (at `full`) reads 3 out of it; a list the type changes is shown only as the type
    makes the value the final parse reads, so not at all."""
    reply = '{"items": ["3 items", 5]}'
    snapshots = list(parse_stream(cuts(reply, 4), type=Pair, level="full"))
    assert snapshots[-1].value.items == [3, 5, 2]
    assert all(s.value.items is None for s in snapshots[:-1])


# -- stream_items of a RootModel ------------------------------------------------------------


class Item(BaseModel):
    n: int


def test_stream_items_types_the_items_of_a_root_model_of_a_list() -> None:
    reply = '[{"n": "2"}, {"n": 3}]'
    for output in (list[Item], RootModel[list[Item]]):
        for chunks in chunkings(reply):
            assert list(stream_items(chunks, output)) == [Item(n=2), Item(n=3)], output


class Shelf(BaseModel):
    books: RootModel[list[Item]]


def test_stream_items_reads_through_a_root_model_at_a_path() -> None:
    reply = '{"books": [{"n": "1"}, {"n": 4}]}'
    assert list(stream_items(cuts(reply, 5), Shelf, "books")) == [Item(n=1), Item(n=4)]


def test_snapshots_of_a_root_model_show_its_root_as_it_arrives() -> None:
    """Shown as a RootModel of the partial root type (`.root`), as the final value holds it,
    not None until the end."""
    snapshots = list(parse_stream(['[{"n": "2"}', ', {"n": 3', "}]"], type=RootModel[list[Item]]))
    assert [plain(s.value.model_dump()) for s in snapshots] == [
        [{"n": 2}],
        [{"n": 2}, {"n": None}],
        [{"n": 2}, {"n": 3}],
        [{"n": 2}, {"n": 3}],
    ]
    assert isinstance(snapshots[0].value, RootModel)


# -- an escaped lone surrogate --------------------------------------------------------------


class Pair2(BaseModel):
    a: str
    b: int = 0


@pytest.mark.parametrize("level", ["off", "minimal"])
@pytest.mark.parametrize("output", [Pair2, None])
def test_an_escaped_lone_surrogate_stops_the_stream_at_the_error(level: str, output: Any) -> None:
    """Not JSON (no UTF-8 text holds half a UTF-16 pair), and the value's quotes are not
    escaped, so no stage can read it: stopped in the chunk holding the error, not shown up to
    the end and refused there."""
    reply = '{"a": "x\\ud800yz", "b": 1' + ', "c": 2' * 20 + "}"
    with pytest.raises(OutputError):
        outform.parse(reply, output, level=level)
    for chunks in ([reply[:26], reply[26:]], cuts(reply, 4)):
        with pytest.raises(StreamAbortedError) as caught:
            list(parse_stream(chunks, output, level=level))
        assert caught.value.reason == "syntax"
        assert caught.value.offset <= 28, chunks


def test_escaped_json_still_waits_for_the_unescape_stage() -> None:
    """Escaped JSON, whose quotes are all escaped, is the unescape stage's: not stopped."""
    reply = '{\\"a\\": \\"x\\"}'
    assert list(parse_stream(cuts(reply, 3), level="minimal"))[-1].value == {"a": "x"}


# -- a leading bracket that is prose --------------------------------------------------------


class Person(BaseModel):
    name: str


@pytest.mark.parametrize("level", ["minimal", "full"])
@pytest.mark.parametrize(
    "reply",
    [
        '[Draft]\n{"name": "Ana"}',
        '{\n```json\n{"name": "Ana"}\n```',
        '[[see below]]\n{"name": "Ana"}',
        "[" * 230 + ' hi {"name": "Ana"}',  # past max_depth: judged when the run ends
    ],
)
def test_a_leading_bracket_that_begins_no_json_is_prose(reply: str, level: str) -> None:
    """The extraction reads `[Draft]` (a bracket then a word no JSON value begins) as prose,
    and `parse` takes the value after it: the stream must not stop at the first character."""
    assert outform.parse(reply, type=Person, level=level).value == Person(name="Ana")
    for chunks in chunkings(reply):
        snapshots = list(parse_stream(chunks, type=Person, level=level))
        assert snapshots[-1].value == Person(name="Ana")
        never_contradicted(snapshots)


def test_a_leading_bracket_is_shown_once_what_follows_says_it_is_json() -> None:
    parser: streaming.StreamParser[Any] = streaming.StreamParser(Person)
    assert parser.feed("{") == []
    assert parser.feed("\n  ") == []
    assert [s.data for s in parser.feed('"name": "A')] == [{"name": "A"}]


def test_a_leading_value_that_is_json_is_still_stopped_on_its_mistake() -> None:
    """The bet of the first value stands for a value that is JSON: `{"name": 5 x` is."""
    with pytest.raises(StreamAbortedError) as caught:
        list(parse_stream(['{"name": 5 x', '} {"name": "Ana"}'], type=Person, level="minimal"))
    assert caught.value.reason == "syntax"


def test_only_outform_errors_leave_a_stream_of_a_validator_that_fails_otherwise() -> None:
    class Strange(BaseModel):
        items: list[Annotated[int, AfterValidator(lambda v: {}[v])]]

    with pytest.raises(OutformError):
        list(stream_items(['{"items": [1', "]}"], Strange, "items"))
