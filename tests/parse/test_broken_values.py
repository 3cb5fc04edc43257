"""A value written broken is a value of the reply: never dropped silently from a list.

A quote left out (`x": 1`) or one too many (`"a"b"`) leaves a region open that stops reading as
JSON before its end; the regions that close after that point inside it read as JSON as written.
Gathering only those made a list of the later items: `[{"name": "Ana", x": 1}, {"name": "Bob"},
{"name": "Cy"}]` was `[Bob, Cy]`, Ana gone and nothing recorded, at every level.

The rule (docs/pipeline.md, "Several values for a root that wants a list"): the gathering holds
the broken value whole, to be repaired at `full`; the gathering of the regions alone leaves the
rest of it out, is tried only after every reading that holds it, and counts what it leaves out
as `lost`. In a reply that is one broken JSON document that loss is judged as any region read
alone is (a digit lost is refused); in prose it is recorded (lossy).
"""

from __future__ import annotations

import pytest
from pydantic import BaseModel

import outform
from outform import OutputError

ARRAY = {"type": "array"}


class P(BaseModel):
    name: str


def _ids(reply: str, level: str) -> list[int]:
    return [item["id"] for item in outform.parse(reply, ARRAY, level=level).data]


# -- at full: the broken value is repaired, with its siblings -----------------------------------


def test_a_list_with_one_malformed_item_keeps_every_item_at_full() -> None:
    """The trial's reply: before, `[P(name='Bob'), P(name='Cy')]`, not lossy."""
    reply = '[{"name": "Ana", x": 1}, {"name": "Bob"}, {"name": "Cy"}]'
    result = outform.parse(reply, type=list[P], level="full")
    assert [p.name for p in result.value] == ["Ana", "Bob", "Cy"]
    assert "collect_values" not in [c.transform for c in result.changes]


@pytest.mark.parametrize(
    "reply",
    [
        '[{"id": 1}, {"id": 2, note": "x"}, {"id": 3}, {"id": 4}]',
        '{"id": 1}\n{"id": 2, x": 3}\n{"id": 3}\n{"id": 4}',
        '{"id": 1}\n{"id": 2}\n{"id": 3, x": 3}',
        'Here:\n{"id": 1}\n{"id": 2, x": 3}\n{"id": 3}\nThanks!',
        '```jsonl\n{"id": 1}\n{"id": 2, x": 3}\n{"id": 3}\n```',
    ],
    ids=["array", "json-lines", "last-line", "lines-in-prose", "fenced-lines"],
)
def test_json_lines_or_items_with_one_broken_value_keep_every_value_at_full(reply: str) -> None:
    assert _ids(reply, "full") == [1, 2, 3, 4][: reply.count('"id"')]


@pytest.mark.parametrize(
    "reply",
    [
        '[{"t": "a"b"}, {"t": "c"}, {"t": "d"}]',
        '{"t": "a"b"}\n{"t": "c"}\n{"t": "d"}',
        '```jsonl\n{"t": "a"b"}\n{"t": "c"}\n{"t": "d"}\n```',
    ],
    ids=["array", "json-lines", "fenced-lines"],
)
def test_a_quote_inside_a_string_is_repaired_with_the_other_values(reply: str) -> None:
    """The first value's string holds a quote: the scan reads the rest of the reply as inside
    it, the later values as regions closed inside it. Before, `[c, d]`, not lossy."""
    expected = [{"t": 'a"b'}, {"t": "c"}, {"t": "d"}]
    assert outform.parse(reply, ARRAY, level="full").data == expected
    at_minimal = outform.parse(reply, ARRAY, level="minimal")
    assert at_minimal.data == expected[1:]
    assert at_minimal.lossy and at_minimal.changes[0].lost == 3  # t, a, b


# -- without a repair: refused in a document, recorded in prose ---------------------------------


@pytest.mark.parametrize(
    "reply",
    [
        '[{"id": 1}, {"id": 2, note": "x"}, {"id": 3}, {"id": 4}]',
        '{"id": 1}\n{"id": 2, x": 3}\n{"id": 3}\n{"id": 4}',
        '{"id": 1}\n{"id": 2}\n{"id": 3, x": 3}',
    ],
)
def test_at_minimal_a_broken_document_is_refused_not_cut_short(reply: str) -> None:
    """Before, `[{'id': 3}, {'id': 4}]` (or `[1, 3, 4]`, `[1, 2]`), not lossy. The gathering
    without the broken value loses its digits: refused, as one region of a broken document read
    alone is, and the model is asked again (or level full repairs it)."""
    with pytest.raises(OutputError) as caught:
        outform.parse(reply, ARRAY, level="minimal")
    assert "gathering the values without the one written broken" in caught.value.what
    assert caught.value.hint.is_syntax


def test_at_minimal_the_typed_trial_reply_is_refused() -> None:
    reply = '[{"name": "Ana", x": 1}, {"name": "Bob"}, {"name": "Cy"}]'
    with pytest.raises(OutputError):
        outform.parse(reply, type=list[P], level="minimal")


def test_a_broken_value_that_loses_only_letters_is_recorded_with_its_size() -> None:
    """No digit lost, more than half kept: the loss rule records it (lossy), never silently."""
    reply = '{"n": "a"}\n{"n": "b", x": "y"}\n{"n": "c"}\n{"n": "d"}'
    result = outform.parse(reply, ARRAY, level="minimal")
    assert result.data == [{"n": "a"}, {"n": "c"}, {"n": "d"}]
    assert result.lossy
    (change,) = result.changes
    assert change.transform == "collect_values"
    assert change.lost == 4  # n, b, x, y
    assert "stops reading as JSON before its end is left out" in change.detail


def test_in_prose_the_values_without_the_broken_one_are_lossy_by_its_size() -> None:
    """In prose, a bracket left open may be prose: the gathering is taken, its loss recorded
    (`id`, `2`, `x`, `3`: 5) and its detail saying what was left out."""
    reply = 'Here:\n{"id": 1}\n{"id": 2, x": 3}\n{"id": 4}\nThanks!'
    result = outform.parse(reply, ARRAY, level="minimal")
    assert result.data == [{"id": 1}, {"id": 4}]
    (change,) = result.changes
    assert (change.transform, change.lost) == ("collect_values", 5)
    assert "but for the 1 region(s) closed inside it" in change.detail


def test_a_fenced_block_of_json_lines_with_a_broken_line_is_lossy_at_minimal() -> None:
    """Before, the block's first value alone was the list."""
    result = outform.parse(
        '```jsonl\n{"id": 1}\n{"id": 2, x": 3}\n{"id": 4}\n```', ARRAY, level="minimal"
    )
    assert result.data == [{"id": 1}, {"id": 4}]
    assert result.changes[0].transform == "collect_fences"
    assert result.changes[0].lost == 5


@pytest.mark.parametrize("level", ["minimal", "full"])
def test_a_fenced_block_of_json_lines_cut_off_keeps_the_lines_before_the_cut(level: str) -> None:
    """As unfenced JSON lines are: the line cut off is left out and counted (`a`, `3`)."""
    result = outform.parse('```json\n{"a": 1}\n{"a": 2}\n{"a": 3', ARRAY, level=level)
    assert result.data == [{"a": 1}, {"a": 2}]
    assert (result.changes[0].transform, result.changes[0].lost) == ("collect_fences", 2)
    assert "cut off" in result.changes[0].detail
