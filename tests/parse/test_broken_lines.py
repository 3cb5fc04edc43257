"""A broken line of JSON lines is a value of the reply: repaired, or its loss recorded.

JSON lines (values one after another, nothing but whitespace or commas between them) with one
line that reads as JSON at no tier of the level (`{"name": "X" "qty": 9}` at `minimal`) were
read as the other lines, the broken one left out as if it were a bracket of the prose: no loss,
not lossy. A line whose first key lost its opening quote (`{name": "X"}`) was even taken for
a prose label (`{braces}`) at `full`, and dropped unrepaired.

The rule (docs/pipeline.md, "Several values for a root that wants a list"): among JSON lines a
region whose opener begins JSON, or an object whose first key lost its opening quote, is a
value. `full` repairs it with its siblings; a gathering without it counts its letters and
digits as `lost` (lossy), its detail saying how many values it left out. A prose label
(`[Answer]`, `{braces}`) stays prose.
"""

from __future__ import annotations

import pytest
from pydantic import BaseModel

import outform


class Item(BaseModel):
    name: str
    qty: int = 0


A = '{"name": "A", "qty": 1}'
B = '{"name": "B", "qty": 2}'
BROKEN_AT_MINIMAL = [
    '{"name": "X" "qty": 9}',  # a comma left out
    '{"name": \'X\', "qty": 9}',  # single quotes
    '{"name": "X", "qty": 9,}',  # a trailing comma
    '{"name": X, "qty": 9}',  # an unquoted value
    '{"name": "X",, "qty": 9}',  # a comma written twice
    '{name": "X", "qty": 9}',  # the first key's opening quote left out
]


def _lines(broken: str, position: int) -> str:
    lines = [A, B]
    lines.insert(position, broken)
    return "\n".join(lines)


@pytest.mark.parametrize("position", [0, 1, 2])
def test_a_line_whose_first_key_lost_its_quote_is_repaired_at_full(position: int) -> None:
    """Before: `[A, B]`, not lossy: `{name": …` was judged a prose label, like `{braces}`."""
    reply = _lines('{name": "X", "qty": 9}', position)
    result = outform.parse(reply, type=list[Item], level="full")
    names = [item.name for item in result.value]
    assert names == [["X", "A", "B"], ["A", "X", "B"], ["A", "B", "X"]][position]
    assert not result.lossy


@pytest.mark.parametrize("broken", BROKEN_AT_MINIMAL)
@pytest.mark.parametrize("position", [0, 1, 2])
def test_a_line_minimal_cannot_read_is_a_recorded_loss(broken: str, position: int) -> None:
    """Before: `[A, B]`, not lossy, the line gone unsaid."""
    result = outform.parse(_lines(broken, position), type=list[Item], level="minimal")
    assert [item.name for item in result.value] == ["A", "B"]
    assert result.lossy
    gathering = result.changes[0]
    assert gathering.transform == "collect_values"
    assert gathering.lost >= 2  # at least X and 9
    assert "1 value(s) that read as JSON at no tier left out" in (gathering.detail or "")


def test_a_prose_label_among_json_lines_is_still_prose() -> None:
    """`[Answer]` on a line of its own is no value: leaving it out loses nothing."""
    result = outform.parse(f"[Answer]\n{A}\n{B}", type=list[Item], level="minimal")
    assert [item.name for item in result.value] == ["A", "B"]
    assert not result.lossy


def test_a_bracket_in_prose_that_reads_at_no_tier_is_still_prose() -> None:
    """In prose (not JSON lines), a bracket minimal cannot read stays prose, as documented."""
    reply = f"Use {{'name': 'b'}} like this: {A} and {B}"
    result = outform.parse(reply, type=list[Item], level="minimal")
    assert [item.name for item in result.value] == ["A", "B"]
    assert not result.lossy


# -- a prose label beside a broken value --------------------------------------------------------


class P1(BaseModel):
    name: str


@pytest.mark.parametrize("label", ["{braces}", "[x]"])
def test_a_label_after_a_broken_value_is_no_item(label: str) -> None:
    """json-repair read the whole reply, the label with it: `[F"g, P1(name='braces}')]`.
    Labels closed after the value's break are cut out of what a tolerant tier reads."""
    result = outform.parse('{"name": "F"g"} ' + label, type=list[P1], level="full")
    assert result.value == [P1(name='F"g')]


def test_a_label_after_a_broken_value_is_no_object() -> None:
    """Before: `P1(name='braces}')`, the label read as the value."""
    result = outform.parse('{"name": "F"g"} {braces}', type=P1, level="full")
    assert result.value == P1(name='F"g')


def test_a_label_after_broken_json_lines_keeps_every_line() -> None:
    """Before: `[F"g, Answer]`, Ana dropped and the label an item."""
    reply = '{"name": "Ana"}\n{"name": "F"g"}\n[Answer]'
    result = outform.parse(reply, type=list[P1], level="full")
    assert result.value == [P1(name="Ana"), P1(name='F"g')]


def test_a_bracket_where_a_value_goes_is_the_value_s_text() -> None:
    """`tags: [x]` inside a broken value is a value, not a label: it is never cut out."""
    reply = '{"items": [{name: a tags: [x]},{name: b tags: [x]}'
    result = outform.parse(reply, {"type": "object"}, level="full")
    assert result.data == {"items": [{"name": "a", "tags": ["x"]}, {"name": "b", "tags": ["x"]}]}


# -- prose after a broken value -----------------------------------------------------------------


class Box(BaseModel):
    items: list[Item]
    note: str | None = None


def test_prose_after_a_value_with_a_quote_too_many_is_no_loss() -> None:
    """Before: json_repair lost 6 (the letters of `Thanks`), lossy. The quote before `}]}`
    closes the string; the next line is prose after the value."""
    reply = '{"items": [{"name": "Ana"}, {"name": "F"g"}]}\nThanks'
    result = outform.parse(reply, type=Box, level="full")
    assert [item.name for item in result.value.items] == ["Ana", 'F"g']
    assert not result.lossy


def test_the_tail_of_a_reply_cut_in_a_string_holding_a_bracket_is_content() -> None:
    """The rule above is for a quote followed only by closers: `"x} y` is one string."""
    from outform.parse import loss

    assert loss.region('{"s": "x} y') == '{"s": "x} y'


# -- a value written broken after prose ---------------------------------------------------------


def test_a_broken_list_after_prose_keeps_every_item_at_full() -> None:
    """Before: `[Bob]`, "value 2 of 2", lost 32: `{"name": "Bob", …}`, closed after the
    list's break, was read as written before the list was repaired. Without `Here:` the reply
    is one document, read whole: the same list either way."""
    body = '[{"name": "Ana", "qty": 1}, {"name": "F"g", "qty": 6}, {"name": "Bob", "qty": 2}]'
    for reply in (body, "Here:\n" + body):
        result = outform.parse(reply, type=list[Item], level="full")
        assert [item.name for item in result.value] == ["Ana", 'F"g', "Bob"]
        assert not result.lossy


def test_a_broken_object_after_prose_is_repaired_not_replaced_by_its_part() -> None:
    """Before: `Box(items=[], note=None)`: `{"name": "Ana"}` was coerced into the Box."""
    reply = 'Here: {"items": [{"name": "F"g"}, {"name": "Ana"}], "note": "x"}'
    result = outform.parse(reply, type=Box, level="full")
    assert [item.name for item in result.value.items] == ['F"g', "Ana"]
    assert result.value.note == "x"
    assert not result.lossy


def test_a_part_of_a_broken_value_read_alone_counts_the_rest_as_lost() -> None:
    """At `minimal` nothing repairs the list: its last item, read alone, is lossy (it leaves
    out Ana and F"g), never a silent `[Bob]`."""
    body = '[{"name": "Ana", "qty": 1}, {"name": "F"g", "qty": 6}, {"name": "Bob", "qty": 2}]'
    result = outform.parse("Here:\n" + body, type=list[Item], level="minimal")
    assert result.lossy
    taken = result.changes[0]
    assert taken.detail == "a part of the value that stops reading as JSON before its end"
    assert taken.lost > 0
