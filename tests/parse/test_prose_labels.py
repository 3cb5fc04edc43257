"""A bracket of the prose is no value of the reply: `[Answer]: {...}` is a label and a value.

A bracket whose opener cannot begin JSON (after `[` no value, after `{` no key: `[Answer]`,
`{braces}`, `- [x] done`) is prose, as extraction already judged an open one. So a reply that
starts with one is no JSON document (which the tolerant tiers would read whole, before the value
written after the label: `[["Answer"], {"name": "Ana"}]`), and such a bracket is neither
numbered among the reply's values nor gathered into a list (json-repair reads `[Answer]` as
`["Answer"]`, an item the reply never wrote as a value). Level `full` gives what `minimal` gives
(docs/pipeline.md, Stages and "Several values for a root that wants a list").
"""

from __future__ import annotations

import pytest
from pydantic import BaseModel

import outform

LEVELS = ["minimal", "full"]


class Person(BaseModel):
    name: str


@pytest.mark.parametrize("level", LEVELS)
def test_a_label_before_a_fenced_block_is_not_read_with_it(level: str) -> None:
    """The trial's reply: at full it was `['Answer', '["a","b"]']`."""
    result = outform.parse('[Answer]:\n```json\n["a", "b"]\n```', type=list[str], level=level)
    assert result.value == ["a", "b"]
    assert [c.transform for c in result.changes] == ["strip_fence"]


@pytest.mark.parametrize("level", LEVELS)
def test_a_label_before_an_object_is_prose_not_a_value(level: str) -> None:
    """At full it was `Person(name='[["Answer"],{"name":"Ana"}]')`; the label is prose, no
    content lost (it was lossy: "value 2 of 2", `Answer` counted)."""
    result = outform.parse('[Answer]: {"name": "Ana"}', type=Person, level=level)
    assert result.value == Person(name="Ana")
    assert not result.lossy
    assert [c.transform for c in result.changes] == ["extract_from_prose"]


@pytest.mark.parametrize("level", LEVELS)
def test_a_label_is_never_an_item_of_a_list(level: str) -> None:
    reply = '[Answer]: {"name": "Ana"}\n{"name": "Bo"}'
    result = outform.parse(reply, type=list[Person], level=level)
    assert [p.name for p in result.value] == ["Ana", "Bo"]
    assert not result.lossy
    assert "1 region(s) of the prose that do not read as JSON left out" in result.changes[0].detail


def test_a_checkbox_in_prose_is_not_one_of_the_reply_s_values() -> None:
    result = outform.parse('- [x] done\n{"a": 1}', {"type": "object"}, level="full")
    assert result.data == {"a": 1}
    assert not result.lossy and result.changes[0].detail == ""


def test_a_reply_of_bare_words_in_brackets_is_still_read_whole_at_full() -> None:
    """Prose read by a tolerant decoder is the last resort: with nothing else, `[a, b, c]` is
    json-repair's reading of it, as before."""
    assert outform.parse("[a, b, c]", type=list[str], level="full").value == ["a", "b", "c"]
