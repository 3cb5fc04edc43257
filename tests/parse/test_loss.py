"""The loss rule: no repair discards what the reply said without saying so (issue 9)."""

from __future__ import annotations

from typing import Any

import pytest

import outform
from outform import OutputError
from outform.parse.decode import Decoded, DecodeFailure, decode, decode_tier
from outform.parse.loss import Loss, assess, content_size, region

# json-repair reads this as {"name": "x"}: the stray closers end the object early.
BROKEN = '{"name": "x", }}}, "items": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]}'
WITH_DEFAULT = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "items": {"type": "array", "default": []}},
}


def test_content_leaves_out_whitespace_and_comments_and_counts_an_escape_once() -> None:
    assert content_size('{ "a" : 1 }') == len('{"a":1}')
    assert content_size('{"a": 1, // why\n /* more */ "b": "x//y"}') == len('{"a":1,"b":"x//y"}')
    assert content_size('["\\u00e9"]') == len('["é"]')


def test_the_region_read_runs_from_the_first_bracket_to_the_last() -> None:
    assert region('Sure! {"a": [1]} Hope it helps.') == '{"a": [1]}'
    assert region('Cut: {"a": [1') == '{"a": [1'
    assert region("no brackets") == "no brackets"


def test_respelling_is_no_loss_and_keeping_less_than_half_is_refused() -> None:
    assert Loss(100, 99).lost == 0  # within the slack
    assert not Loss(100, 60).refused and Loss(100, 60).lost == 40
    assert Loss(100, 40).refused
    assert assess('{"a": 1, "b": 2,}', '{"a":1,"b":2}').lost == 0


def test_a_tolerant_reading_that_keeps_less_than_half_is_refused() -> None:
    reply = '{"name": "x", }}}, "other": "' + "y" * 40 + '"}'  # json-repair: {"name": "x"}
    outcome = decode_tier(reply, 2)
    assert isinstance(outcome, DecodeFailure)
    assert outcome.refused
    assert (
        outcome.message
        == "json_repair's reading keeps 12 of 67 characters of content (55 discarded)"
    )
    assert isinstance(decode('{"name": "x",}', 2), Decoded)


def test_a_default_never_replaces_what_the_reply_held() -> None:
    """Issue 9: json-repair read the reply as a smaller object and the defaults stage filled
    the rest; the reply's items were gone, with exit code 0."""
    with pytest.raises(OutputError) as caught:
        outform.parse(BROKEN, WITH_DEFAULT, level="full")
    assert "keeps 12 of 62 characters" in caught.value.what


def test_a_smaller_loss_is_recorded_with_its_size() -> None:
    kept = '"big": "' + "a" * 80 + '"'
    reply = '{"name": "x", ' + kept + ', }}}, "other": "yyyyyyyyyyyyyyyyyyyyyy"}'
    result = outform.parse(reply, {"type": "object"}, level="full")
    assert "other" not in result.value
    assert result.lossy
    (change,) = [c for c in result.changes if c.lossy]
    assert change.transform == "json_repair"
    assert change.lost == content_size(', }}}, "other": "yyyyyyyyyyyyyyyyyyyyyy"')
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
    assert (change.transform, change.lost) == ("drop_unexpected_key", len('"note":"hellothere"'))


def test_a_reply_read_without_loss_has_no_lossy_change() -> None:
    result = outform.parse("{'a': 1, /* why */ 'b': [1, 2,],}", {"type": "object"}, level="full")
    assert result.value == {"a": 1, "b": [1, 2]}
    assert result.changes and not result.lossy
