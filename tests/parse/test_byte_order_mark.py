"""A reply that opens with a byte order mark (U+FEFF: text decoded from bytes that carry one).

JSON text has none (RFC 8259 lets a parser ignore one). At level `off` the reply is refused with
a violation that names the mark, and a fix that says how to read it (before: "the reply contains
no JSON value"). With the extract stage (`minimal`, `full`) it is removed and recorded as what it
is, `strip_bom` (before: dropped inside an `extract_from_prose` change, as if it were prose). A
plain string wanted keeps it, as the fast path does: the reply as written is the value
(docs/pipeline.md, Stages).
"""

from __future__ import annotations

import pytest

import outform
from outform import OutputError

OBJECT = {"type": "object"}
REPLY = '\ufeff{"a": 1}'


def test_at_off_the_violation_names_the_byte_order_mark() -> None:
    with pytest.raises(OutputError) as caught:
        outform.parse(REPLY, OBJECT, level="off")
    (violation,) = caught.value.hint.violations
    assert "byte order mark (U+FEFF)" in violation.found
    assert "byte order mark" in (caught.value.fix or "")
    assert "'extract' stage" in (caught.value.fix or "")


@pytest.mark.parametrize("level", ["minimal", "full"])
@pytest.mark.parametrize("reply", [REPLY, REPLY.encode()])
def test_with_extraction_it_is_removed_and_recorded_as_what_it_is(
    reply: str | bytes, level: str
) -> None:
    result = outform.parse(reply, OBJECT, level=level)
    assert result.data == {"a": 1}
    assert [(c.stage, c.transform) for c in result.changes] == [("extract", "strip_bom")]
    assert not result.lossy


def test_before_reasoning_it_is_recorded_with_the_reasoning_removed() -> None:
    result = outform.parse('\ufeff<think>hm</think>{"a": 1}', OBJECT)
    assert [c.transform for c in result.changes] == ["strip_bom", "strip_reasoning"]


def test_words_read_as_a_value_are_read_without_it() -> None:
    result = outform.parse("\ufeffTWO", {"enum": ["ONE", "TWO"]})
    assert result.data == "TWO"
    assert [c.transform for c in result.changes] == ["strip_bom"]


def test_a_plain_string_wanted_keeps_it_as_written() -> None:
    assert outform.parse("\ufeffhello", {"type": "string"}).data == "\ufeffhello"
    reasoned = outform.parse("\ufeff<think>hm</think>hello", {"type": "string"})
    assert reasoned.data == "\ufeffhello"
    assert [c.transform for c in reasoned.changes] == ["strip_reasoning"]
