"""The loss rule: no repair discards what the reply said without saying so (issue 9)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import outform
from outform import OutputError
from outform.parse.decode import (
    MAX_REPAIR_STRING,
    Decoded,
    DecodeFailure,
    _repair_text,
    decode,
    decode_tier,
)
from outform.parse.loss import Loss, Measure, assess, measure, region

# json-repair reads this as {"name": "x"}: the stray closers end the object early.
BROKEN = '{"name": "x", }}}, "items": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]}'
WITH_DEFAULT = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "items": {"type": "array", "default": []}},
}
ANY: dict[str, Any] = {"type": "object"}


# -- the measure: letters and digits, each re-spelling counted alike ----------------------


def test_content_is_letters_and_digits_without_comments_an_escape_counting_as_what_it_means() -> (
    None
):
    assert measure('{ "a" : 1 }') == Measure(letters=1, digits=1)
    assert measure('{"a": 1, // why\n /* more */ "b": "x//y"}') == measure('{"a":1,"b":"x//y"}')
    assert measure('["\\u00e9", "a\\nb"]') == measure('["é", "ab"]')


def test_a_number_counts_the_digits_of_its_shortest_spelling() -> None:
    for written, read in [("1.50", "1.5"), ("1e3", "1000.0"), ("100e-2", "1.0"), ("0x1F", "31")]:
        assert measure(f"[{written}]") == measure(f"[{read}]"), written


def test_python_literals_have_as_many_letters_as_json_ones() -> None:
    assert measure("[None, True, False]") == measure("[null,true,false]")


def test_the_region_read_runs_from_the_first_bracket_to_the_last_unless_left_open() -> None:
    assert region('Sure! {"a": [1]} Hope it helps.') == '{"a": [1]}'
    assert region('Cut: {"a": [1') == '{"a": [1'
    assert region('{"items": [], "total": 12') == '{"items": [], "total": 12'
    assert region('{"a": "[x"} thanks') == '{"a": "[x"}'
    assert region("no brackets") == "no brackets"


def test_punctuation_is_no_loss_letters_are_recorded_digits_and_halves_are_refused() -> None:
    assert assess('{"a": 1, "b": 2,}', '{"a":1,"b":2}').lost == 0
    letters = Loss(Measure(10, 0), Measure(8, 0))
    assert (letters.lost, letters.refused) == (2, False)
    assert Loss(Measure(10, 5), Measure(10, 4)).refused  # one digit
    assert Loss(Measure(100, 0), Measure(40, 0)).refused  # less than half


def test_forty_thousand_trailing_commas_are_no_loss() -> None:
    """The old character count called each trailing comma a discarded character."""
    items = ",\n".join(f'{{"name": "item{i}", "price": "$1.50",}}' for i in range(40_000))
    reply = '{"items": [' + items + ",]}"
    result = outform.parse(reply, ANY, level="full")
    assert len(result.value["items"]) == 40_000
    assert result.changes and not result.lossy


# -- a number cut short is refused --------------------------------------------------------


@pytest.mark.parametrize(
    "written",
    ["1 234 567", "1 000 000", "+47 123 45 678", "10:30", "9 / 10", "1 2"],
)
def test_a_reading_that_cuts_a_number_short_is_refused(written: str) -> None:
    """json-repair reads `1 234 567` as 1 (and `10:30` as 10): the digits it drops are few,
    but the number is another. No tier's reading that drops a digit counts."""
    reply = '{"name": "Ana", "n": ' + written + ', "city": "Oslo"}'
    outcome = decode_tier(reply, 2)
    assert isinstance(outcome, DecodeFailure) and outcome.refused
    assert "a number cut short or dropped" in outcome.message
    with pytest.raises(OutputError) as caught:
        outform.parse(reply, ANY, level="full")
    assert "digits" in caught.value.what


def test_a_reading_that_merges_two_members_is_refused() -> None:
    """json-repair reads `"b": "x" "y", "c": true` as {"b": "x", 'y", "c': true}: `c` is gone
    and a key is invented, with every letter kept. (The key is refused before the loss rule
    is asked: the reply does not write `y", "c` as a key; see keys.py.)"""
    schema = {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "string"}, "c": {"type": "boolean"}},
    }
    reply = '{"a": 1, "b": "x" "y", "c": true}'
    outcome = decode_tier(reply, 2)
    assert isinstance(outcome, DecodeFailure) and outcome.refused
    merged = assess(reply, '{"a":1,"b":"x","y\\", \\"c":true}')
    assert merged.refused and "merged" in merged.describe("json_repair's reading")
    with pytest.raises(OutputError):
        outform.parse(reply, schema, level="full")
    # A key that holds a quote the reply escaped is no merge.
    assert outform.parse('{"say \\"hi\\"": 1,}', ANY, level="full").value == {'say "hi"': 1}


@pytest.mark.parametrize("reply", ['{"w": 10, "h": 2.\n5}', '{"a": 3. 7, "b": 1}', '{"a": -0. 9}'])
def test_a_digit_dropped_beside_a_number_re_spelled_is_refused(reply: str) -> None:
    """`2.` is re-spelled `2.0`: the same count of digits as `2.` and a dropped `5`. The
    quick count as written is trusted only when the same digits are written as often."""
    with pytest.raises(OutputError, match="digits"):
        outform.parse(reply, level="full")
    assert outform.parse('{"a": 2., "b": 1}', level="full").value == {"a": 2.0, "b": 1}


@pytest.mark.parametrize(
    ("reply", "level"),
    [
        ('{"id": 7, "ok":} true, "dims": {"w": 10}}', None),  # the default level
        ('{"id": 1, "name": "W", "price": -12.}75, "qty": 3, "tags": ["a"]}', "full"),
        ('{"id": 1, "name": "W", "price": 12}5}', "full"),
        ('{"id": 1, "name": "W"} 3, "tags": ["red"]}', "full"),
        ('{"id": 1, "name": "W"} true, "b": 2', "full"),
        ('{"id": 1, "name": "W"} true, "b": 2', "minimal"),
    ],
)
def test_more_json_after_the_first_value_is_content_of_the_document(
    reply: str, level: str | None
) -> None:
    """A number or a literal and a separator after the first value continue the document (a
    stray closer in it): a piece of it is no answer, nor a reading that stops at the closer."""
    with pytest.raises(OutputError, match="letters and digits"):
        outform.parse(reply, level=level) if level is None else outform.parse(
            reply, ANY, level=level
        )


@pytest.mark.parametrize(
    "reply",
    ['{"id": 1, "name": "W"}\n2. Next we see', '{"id": 1, "name": "W"}, as requested.'],
)
def test_prose_after_the_first_value_is_not_content(reply: str) -> None:
    assert outform.parse(reply, ANY, level="full").value == {"id": 1, "name": "W"}
    assert region(reply) == '{"id": 1, "name": "W"}'


# -- the end of a cut reply ---------------------------------------------------------------


def test_a_number_cut_off_at_the_end_is_dropped_and_recorded_as_lossy() -> None:
    """A number nothing ends may be the start of a longer one (`12` of `1234.56`): as in a
    stream, it is not a value. Dropped with its key, like a key left without a value."""
    schema = {
        "type": "object",
        "properties": {"items": {"type": "array"}, "total": {"type": "number"}},
    }
    result = outform.parse('{"items": [], "total": 12', schema, level="full")
    assert result.value == {"items": []}
    (change,) = result.changes
    assert "dropped the number 12 cut off at the end" in change.detail
    assert change.lost == len("total12") and result.lossy

    ints = {"type": "array", "items": {"type": "integer"}}
    result = outform.parse("[1, 2, 34", ints, level="full")
    assert result.value == [1, 2] and result.lossy
    # What ends the number (a comma) makes it whole; whitespace before the end does not.
    assert outform.parse("[1, 2, 34,", ints, level="full").value == [1, 2, 34]
    assert outform.parse("[1, 2, 34 \n", ints, level="full").value == [1, 2]


def test_a_required_number_cut_off_at_the_end_is_a_violation_not_a_prefix() -> None:
    schema = {"type": "object", "properties": {"total": {"type": "number"}}, "required": ["total"]}
    with pytest.raises(OutputError) as caught:
        outform.parse('{"total": 1234', schema, level="full")
    assert "total" in str(caught.value)


def test_a_key_left_without_a_value_at_the_end_is_dropped_and_recorded_as_lossy() -> None:
    result = outform.parse('{"a": 1, "b": ', ANY, level="full")
    assert result.value == {"a": 1}
    assert [c.lost for c in result.changes] == [1]


# -- json-repair's own failures ------------------------------------------------------------


def test_a_failure_inside_json_repair_is_a_tier_that_could_not_read_not_a_crash() -> None:
    """json-repair asserts on this fuzz input (`assert isinstance(raw_key, str)`)."""
    reply = '{r"""""```json```}1'
    assert _repair_text(reply, MAX_REPAIR_STRING) is None
    with pytest.raises(OutputError):
        outform.parse(reply, {"enum": ["red", "green"]}, level="full")


def test_a_tolerant_reading_that_keeps_less_than_half_is_refused() -> None:
    reply = '{"name": "x", }}}, "other": "' + "y" * 40 + '"}'  # json-repair: {"name": "x"}
    outcome = decode_tier(reply, 2)
    assert isinstance(outcome, DecodeFailure)
    assert outcome.refused
    assert outcome.message == (
        "json_repair's reading keeps 5 of 50 letters and digits of content (45 discarded)"
    )
    assert isinstance(decode('{"name": "x",}', 2), Decoded)


def test_a_default_never_replaces_what_the_reply_held() -> None:
    """Issue 9: json-repair read the reply as a smaller object and the defaults stage filled
    the rest; the reply's items were gone, with exit code 0."""
    with pytest.raises(OutputError) as caught:
        outform.parse(BROKEN, WITH_DEFAULT, level="full")
    assert "keeps 5 of" in caught.value.what


def test_a_smaller_loss_is_recorded_with_its_size() -> None:
    kept = '"big": "' + "a" * 80 + '"'
    reply = '{"name": "x", ' + kept + ', }}}, "other": "yyyyyyyyyyyyyyyyyyyyyy"}'
    result = outform.parse(reply, {"type": "object"}, level="full")
    assert "other" not in result.value
    assert result.lossy
    (change,) = [c for c in result.changes if c.lossy]
    assert change.transform == "json_repair"
    assert change.lost == len("otheryyyyyyyyyyyyyyyyyyyyyy")
    assert "discarded" in change.detail
    assert change.to_dict()["lossy"] is True


def test_a_dropped_key_is_recorded_as_a_loss_of_its_size() -> None:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {"a": {"type": "integer"}},
        "additionalProperties": False,
    }
    result = outform.parse('{"a": 1, "note": "hello there"}', schema)
    (change,) = result.changes
    assert (change.transform, change.lost) == ("drop_unexpected_key", len("notehellothere"))


def test_a_reply_read_without_loss_has_no_lossy_change() -> None:
    result = outform.parse("{'a': 1, /* why */ 'b': [1, 2,],}", {"type": "object"}, level="full")
    assert result.value == {"a": 1, "b": [1, 2]}
    assert result.changes and not result.lossy


def test_a_number_re_spelled_by_a_tolerant_reading_is_no_loss() -> None:
    result = outform.parse("{'p': 1.50, 'q': 1e3, 'r': 3.14159265358979323846,}", ANY, level="full")
    assert result.value == {"p": 1.5, "q": 1000.0, "r": 3.141592653589793}
    assert result.changes and not result.lossy


@given(st.text(alphabet=["\\", "\\", "\\", "d", "n", "t", "u", "0", "7", "é", "\n", " "]))
def test_only_the_letter_of_an_escape_json_knows_stands_for_no_letter(text: str) -> None:
    """`\\n` stands for no letter; `\\d` (an escape JSON does not know) is a backslash and a
    `d`, as the tolerant readers are given it: counted in bulk, checked here against the text
    with those escapes removed one match at a time."""
    from outform.parse.loss import _letters_and_digits, _unescaped

    assume("\\u" not in text)  # (`\\uXXXX` counts as the character it stands for)
    letters, digits = _letters_and_digits(text)
    known = re.sub(r"\\[bfnrtu]", "", text.replace("\\\\", " "))
    assert _unescaped(text, letters, digits) == _letters_and_digits(known)


@pytest.mark.parametrize(
    "reply",
    [
        '{"re": "\\1\\2\\3", "n": 1 234}',  # a number cut short beside escaped digits
        '{"s": "\\d", "n": 1 234}',
    ],
)
def test_escapes_json_does_not_know_hide_no_lost_digit(reply: str) -> None:
    """Found by a new-user trial: `\\1` counted as nothing in the reply but as `1` in the
    value, which made up for the digits of `1 234` read as 1."""
    with pytest.raises(OutputError, match="a number cut short"):
        outform.parse(reply, {"type": "object"}, level="full")


def test_escapes_json_does_not_know_hide_no_lost_word() -> None:
    result = outform.parse('{"a": "x\\d\\d\\d\\d", oops "b": "y"}', level="full")
    assert result.data == {"a": "x\\d\\d\\d\\d", "b": "y"}
    (change,) = result.changes
    assert change.lost == 4 and change.lossy


@pytest.mark.parametrize("reply", ["Answer: {", "```json\n{", 'Sure. [{"', "<think>hm</think>["])
def test_a_reply_cut_right_after_its_opener_is_refused_whatever_comes_before(reply: str) -> None:
    """Found by a new-user trial: prose before the opener let `{}` through."""
    with pytest.raises(OutputError, match="cut off before it wrote a value"):
        outform.parse(reply, level="full")


@pytest.mark.parametrize(
    ("reply", "kept"),
    [
        ('{"a": [1], "b": [', {"a": [1]}),
        ('{"lines": [{', {}),
        ('{"a": 1, "b": [2, {"c": 3', {"a": 1, "b": [2]}),
    ],
)
def test_a_container_cut_before_its_first_item_is_dropped_with_its_key(
    reply: str, kept: dict[str, Any]
) -> None:
    """`"b": [` at the end held nothing the reply wrote: `[]` would be invented."""
    result = outform.parse(reply, level="full")
    assert result.value == kept and result.lossy


@pytest.mark.parametrize(
    ("member", "written"),
    [("qty", '"3'), ("price", '"$1'), ("paid", '"n'), ("price", '"-0.')],
)
def test_a_string_the_reply_ended_inside_is_not_read_as_another_type(
    member: str, written: str
) -> None:
    """Found by a new-user trial: `"qty": "3` (of `"36"`) became 3, `"paid": "n` (of "n/a")
    False, nothing lost. The text is kept where a string goes; it is never converted."""
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "qty": {"type": "integer"},
            "paid": {"type": "boolean"},
            "price": {"type": "number"},
        },
    }
    with pytest.raises(OutputError) as caught:
        outform.parse('{"name": "a", "' + member + '": ' + written, schema, level="full")
    (violation,) = caught.value.hint.violations
    assert violation.path == "/" + member and "ended inside this string" in violation.found
    done = outform.parse('{"name": "a", "' + member + '": ' + written + '"}', schema, level="full")
    assert done.value[member] is not None  # written whole, the same text converts
    assert outform.parse('{"name": "Ada Love', schema, level="full").value == {"name": "Ada Love"}
