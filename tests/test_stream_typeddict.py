"""A TypedDict whose keys say `Required[...]` or `NotRequired[...]` streams as it parses
(streaming.py): the qualifier says whether the key may be missing, not what its value is, so
the stream plans and types the value without it (every key of a partial TypedDict is optional
anyway), and the final parse keeps the type's own rule."""

from __future__ import annotations

import typing
from typing import Annotated, Any, NotRequired, Required

import pytest
from typing_extensions import ReadOnly, TypedDict

import outform
from outform.errors import StreamAbortedError
from outform.streaming import StreamParser, partial_type


class Item(TypedDict):
    name: str
    count: NotRequired[int]


class Loose(TypedDict, total=False):
    sku: Required[str]
    note: str


class Order(TypedDict):
    items: list[Item]
    label: NotRequired[Annotated[str, outform.streaming.Done]]
    frozen: ReadOnly[NotRequired[int]]


def _stream(chunks: list[str], output: Any, level: str = "full") -> tuple[list[Any], Any]:
    parser: StreamParser[Any] = StreamParser(output, level=level)
    snapshots = [s.value for chunk in chunks for s in parser.feed(chunk)]
    return snapshots, parser.finish()


@pytest.mark.parametrize("level", ["off", "minimal", "full"])
@pytest.mark.parametrize("output", [Item, Loose])
def test_a_typed_dict_with_required_or_not_required_keys_streams(output: Any, level: str) -> None:
    reply = '{"name": "a", "count": 2}' if output is Item else '{"sku": "a", "note": "n"}'
    snapshots, final = _stream([reply[:13], reply[13:]], output, level)
    assert snapshots[-1] == final.value == outform.parse(reply, type=output, level=level).value


def test_a_not_required_key_is_typed_by_what_it_wraps() -> None:
    snapshots, final = _stream(['{"name": "a", "count": "2"', "}"], Item)
    assert snapshots == [{"name": "a", "count": 2}, {"name": "a", "count": 2}]
    assert [(c.path, c.transform) for c in final.changes] == [("/count", "string_to_integer")]


def test_a_missing_not_required_key_is_no_error() -> None:
    snapshots, final = _stream(['{"name": "a"', "}"], Item, "off")
    assert snapshots[-1] == final.value == {"name": "a"}


def test_a_missing_required_key_still_stops_the_stream() -> None:
    with pytest.raises(StreamAbortedError, match="missing required field 'sku'"):
        _stream(['{"note": "n"}'], Loose, "off")


@pytest.mark.filterwarnings("ignore:.*ReadOnly")
def test_policies_inside_a_qualifier_still_apply() -> None:
    """`NotRequired[Annotated[str, Done]]`: the label is shown only once complete."""
    snapshots, final = _stream(['{"items": [], "label": "ab', 'c", "frozen": 1}'], Order)
    assert "label" not in snapshots[0]
    assert final.value == {"items": [], "label": "abc", "frozen": 1}


@pytest.mark.filterwarnings("ignore:.*ReadOnly")
def test_the_partial_type_drops_the_qualifiers() -> None:
    partial = partial_type(Order)
    hints = typing.get_type_hints(partial)
    assert hints["frozen"] == int | None
    assert hints["label"] == str | None
    assert partial.__total__ is False
