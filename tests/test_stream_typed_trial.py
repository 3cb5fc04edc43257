"""Typed snapshots agree with the final parse (docs/streaming.md, "Typed values"): a field holds
only a value of its declared type, a value shown never changes into another, and the changes a
snapshot records are the final parse's. Found by a trial: unions of models, tuples, sets, and
plain-text outputs."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, Field
from pydantic_core import to_jsonable_python

import outform
from outform.parse.partial import is_complete
from outform.parse.result import Change
from outform.streaming import Snapshot, StreamParser, parse_stream


class Cat(BaseModel):
    kind: Literal["cat"]
    n: int


class Dog(BaseModel):
    kind: Literal["dog"]
    n: str


def _stream(text: str, output: Any) -> tuple[list[Snapshot[Any]], Snapshot[Any]]:
    """The snapshots of `text` fed one character at a time, and the last one."""
    parser: StreamParser[Any] = StreamParser(output)
    snapshots = [s for ch in text for s in parser.feed(ch)]
    return snapshots, parser.final()


def _key(change: Change) -> tuple[Any, ...]:
    return (change.path, change.transform, repr(change.before), repr(change.after), change.lost)


def _agrees(shown: Any, final: Any) -> bool:
    """Whether a partial value (as JSON) is a part of the final one: each field shown holds
    the final value (a string may still grow), each list a prefix (None: an item not known)."""
    if shown is None:
        return True
    if isinstance(shown, dict):
        return isinstance(final, dict) and all(
            k in final and _agrees(v, final[k]) for k, v in shown.items() if v is not None
        )
    if isinstance(shown, list):
        return (
            isinstance(final, list)
            and len(shown) <= len(final)
            and all(_agrees(a, b) for a, b in zip(shown, final, strict=False))
        )
    if isinstance(shown, str) and isinstance(final, str):
        return final.startswith(shown)
    return type(shown) is type(final) and shown == final


def _check(text: str, output: Any) -> list[Snapshot[Any]]:
    """Every snapshot agrees with the final parse, which is `outform.parse` of the text."""
    snapshots, final = _stream(text, output)
    parsed = outform.parse(text, type=output)
    assert final.value == parsed.value
    expected = to_jsonable_python(final.value)
    recorded = {_key(c) for c in final.changes}
    for snapshot in snapshots:
        assert _agrees(to_jsonable_python(snapshot.value), expected), snapshot.value
        assert {_key(c) for c in snapshot.changes} <= recorded, snapshot.changes
    return snapshots


def test_a_union_of_models_is_shown_under_the_branch_its_tag_names() -> None:
    """`kind` tells Cat from Dog (each declares it as its own Literal): the object is shown
    under Dog once `"dog"` is complete, never as a Cat holding Dog's data."""

    class Owner(BaseModel):
        pet: Union[Cat, Dog]  # noqa: UP007 - the union as users write it
        x: int = 0

    snapshots = _check('{"pet": {"kind": "dog", "n": 5}, "x": 1}', Owner)
    assert type(snapshots[-1].value.pet).__name__ == "PartialDog"
    assert snapshots[-1].value.pet.n == "5"  # number_to_string, as the final parse records


def test_a_discriminated_union_waits_for_its_tag() -> None:
    """In a list, an item whose tag is not known yet keeps its place as None; a tag that names
    no branch as written (`"Dog"`, which coercion may match) leaves the item not known."""

    class Pets(BaseModel):
        pets: list[Annotated[Union[Cat, Dog], Field(discriminator="kind")]]  # noqa: UP007

    text = (
        '{"pets": [{"n": "7", "kind": "cat"}, {"kind": "Dog", "n": "x"}, {"kind": "dog", "n": 1}]}'
    )
    snapshots = _check(text, Pets)
    pets = snapshots[-1].value.pets
    assert [type(p).__name__ if p is not None else None for p in pets] == [
        "PartialCat",
        None,
        "PartialDog",
    ]
    untagged = [s for s in snapshots if s.data.get("pets") and "kind" not in s.data["pets"][0]]
    assert untagged and all(not s.value.pets for s in untagged)  # `{"n": "7"` may be a Dog


def test_an_untagged_union_shows_only_the_branch_the_data_leaves() -> None:
    """Without a tag, an open object that two branches may still take is not shown; a closed
    one is shown under the branch the final parse takes (here the first that fits)."""

    class A(BaseModel):
        n: int

    class B(BaseModel):
        m: str

    class Holder(BaseModel):
        v: Union[A, B]  # noqa: UP007

    snapshots = _check('{"v": {"n": "5"}}', Holder)
    assert type(snapshots[-1].value.v).__name__ == "PartialA" and snapshots[-1].value.v.n == 5
    open_ = [s for s in snapshots if "v" in s.data and not is_complete(s.data["v"])]
    assert open_ and all(s.value.v is None for s in open_)


def test_a_tuple_is_read_position_by_position() -> None:
    """`tuple[str, int]`: the 5 in second place is an integer, not the text "5"."""

    class Pair(BaseModel):
        pair: tuple[str, int]
        rest: tuple[int, ...] = ()

    snapshots = _check('{"pair": ["abc", 5], "rest": [1, "2"]}', Pair)
    assert snapshots[-1].value.pair == ("abc", 5)
    assert not any(c.transform == "number_to_string" for s in snapshots for c in s.changes)


def test_a_set_is_shown_once_closed_folded_as_the_final_parse_folds_it() -> None:
    """`set[str]` of `["a", "a"]` is `{"a"}` with the final parse's `fold_equal_items`
    change, never a list of two."""

    class Tags(BaseModel):
        tags: set[str] = set()
        z: int = 0

    snapshots = _check('{"tags": ["a", "a"], "z": 1}', Tags)
    shown = [s.value.tags for s in snapshots if s.value.tags is not None]
    assert shown and all(t == {"a"} for t in shown)
    assert [c.transform for c in snapshots[-1].changes] == ["fold_equal_items"]


def test_a_plain_text_output_streams_no_snapshots() -> None:
    """For `str` the reply's own text is the value (`"quoted"` with its quotes, as
    `outform.parse` reads it): a decoded string shown while it streams would change."""
    text = '"quoted"'
    snapshots = list(parse_stream(list(text), type=str))
    assert [s.final for s in snapshots] == [True]
    assert snapshots[0].value == outform.parse(text, type=str).value == text


class Counts(BaseModel):
    xs: list[int]


def test_a_list_item_not_shown_keeps_its_place_so_later_items_keep_their_index() -> None:
    """`"3 items"` is no integer the stream converts; the final parse (level full) reads 3 out
    of it. Left out, it moved 5 to index 0, which the final value then held 3."""
    text = '{"xs": ["3 items", 5, 7]}'
    parser: StreamParser[Counts] = StreamParser(Counts, level="full")
    shown = [s.value.xs for ch in text for s in parser.feed(ch)]
    final = parser.final().value.xs
    assert final == [3, 5, 7]
    assert [None, 5, 7] in shown
    for xs in shown:
        assert all(x is None or x == final[i] for i, x in enumerate(xs or []))


def test_a_literal_member_read_from_a_string_is_the_change_the_final_parse_records() -> None:
    """`"1"` for `Literal[1, 2]`: the stream recorded `string_to_integer`, the final parse
    `match_enum` (a snapshot's changes are the final parse's)."""
    snapshots = _check('["1", 2]', list[Literal[1, 2]])
    assert any(c.transform == "match_enum" for s in snapshots for c in s.changes)
