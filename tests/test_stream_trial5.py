"""A snapshot shown complete never changes (docs/streaming.md), for JSON lines too.

For a root that wants a list, the pipeline gathers the reply's values into it: a first object
closed is one item of the answer, and more may follow. It was shown `complete` as the object,
and the final value was the list.
"""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from outform.streaming import parse_stream


class Item(BaseModel):
    name: str
    qty: int = 0


@pytest.mark.parametrize("level", ["minimal", "full"])
@pytest.mark.parametrize(
    "chunks",
    [
        ['{"name":"a","qty":1}\n', '{"name":"b"}'],
        ['{"name":"a","qty":1}', '\n{"name":"b"}'],
        ['{"name":"a","qty":1}\n{"name":"b"}'],
        ['{"name":"a","qty":1}', "\n"],
    ],
)
def test_a_value_gathered_into_the_root_list_is_never_shown_complete(
    chunks: list[str], level: str
) -> None:
    snapshots = list(parse_stream(iter(chunks), type=list[Item], level=level))
    *partial, last = snapshots
    assert partial
    assert all(not s.complete for s in partial)
    assert last.final and last.complete
    assert isinstance(last.data, list)


def test_a_list_written_whole_is_still_shown_complete_once_closed() -> None:
    chunks = ['[{"name":"a","qty":1}', ',{"name":"b"}]']
    snapshots = list(parse_stream(iter(chunks), type=list[Item]))
    complete = [s for s in snapshots if s.complete]
    assert complete
    assert all(s.data == snapshots[-1].data for s in complete)


def test_an_object_root_is_still_shown_complete_once_closed() -> None:
    snapshots = list(parse_stream(iter(['{"name":"a","qty":1}', "\n"]), type=Item))
    assert snapshots[0].complete
    assert snapshots[0].data == snapshots[-1].data
