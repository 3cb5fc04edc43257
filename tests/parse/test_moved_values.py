"""A value moved under a field is never written into it as its JSON text.

`wrap_in_object` gives the one field of an object a value the reply wrote without a key there
(`17` is `{"answer": "17"}`). An object or list so moved was then `json_to_string`'s, at level
full: `{"text": "hello"}` for a model whose one field is `answer: str` became
`answer='{"text":"hello"}'`, a string the reply never wrote, where it wrote an object whose key is
wrong (at minimal: `answer` missing). The rule (docs/pipeline.md, Coercions, *Keys*): an object or
list is written as its JSON text only where the reply wrote it, at the field's own key or as an
item; one moved there by `wrap_in_object` is not, and the field is reported missing, at every
level.
"""

from __future__ import annotations

import pytest
from pydantic import BaseModel

import outform
from outform import OutputError

LEVELS = ["minimal", "full"]


class Out(BaseModel):
    answer: str


class Person(BaseModel):
    name: str


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize(
    ("reply", "output", "field"),
    [
        ('{"text": "hello"}', Out, "answer"),
        ('{"data": {"x": 1}}', Out, "answer"),
        ('[{"x": 1}, {"y": 2}]', Out, "answer"),
        ('{"nam": "Ana"}', Person, "name"),
    ],
)
def test_an_object_or_list_is_not_moved_into_a_string_field_as_text(
    reply: str, output: type[BaseModel], field: str, level: str
) -> None:
    with pytest.raises(OutputError) as caught:
        outform.parse(reply, type=output, level=level)
    found = [(v.path, v.kind) for v in caught.value.hint.violations]
    assert found in ([("", "missing")], [("", "type")])
    tried = caught.value.result
    assert tried is not None
    assert "json_to_string" not in [c.transform for c in tried.changes]


def test_an_object_written_at_the_field_s_own_key_is_still_its_json_text_at_full() -> None:
    result = outform.parse('{"answer": {"text": "hello"}}', type=Out, level="full")
    assert result.value == Out(answer='{"text":"hello"}')
    assert [(c.path, c.transform) for c in result.changes] == [("/answer", "json_to_string")]


@pytest.mark.parametrize("level", LEVELS)
def test_a_scalar_is_still_wrapped_into_the_one_field(level: str) -> None:
    assert outform.parse("17", type=Out, level=level).value == Out(answer="17")


# -- a comma written twice ----------------------------------------------------------------------


class A(BaseModel):
    a: str


def test_a_comma_written_twice_is_one_separator_not_text_of_the_number_before_it() -> None:
    """json-repair read `12,,` as the string "12,", which the field took: a string the reply
    never wrote. The delimiting pass drops the second comma (said in the detail), and the number
    turned into text is the literal the reply wrote."""
    result = outform.parse('{"a": 12,, "b": 2}', type=A, level="full")
    assert result.value == A(a="12")
    (tolerant,) = [c for c in result.changes if c.stage == "tolerant"]
    assert tolerant.detail == "dropped a ',' written twice"
    assert not tolerant.lost
    data = outform.parse('{"a": 12,, "b": 2}', {"type": "object"}, level="full").data
    assert data == {"a": 12, "b": 2}
