"""Stage *extract*: reasoning blocks, fences and JSON regions found in a reply."""

from __future__ import annotations

import re
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import outform
from outform.parse.extract import (
    RootKind,
    candidates,
    find_fences,
    scan_spans,
    strip_reasoning,
)
from tests.parse.strategies import json_objects, json_values, prose

OBJECT = {"type": "object"}
OBJECTS: frozenset[RootKind] = frozenset({"object"})
ARRAYS: frozenset[RootKind] = frozenset({"array"})


def transforms(result: outform.ParseResult[Any]) -> list[str]:
    return [change.transform for change in result.changes]


# -- reasoning blocks -----------------------------------------------------------------------


def test_a_think_block_is_removed() -> None:
    assert strip_reasoning("<think>let me see</think>answer") == ("answer", ["think"])


def test_every_known_reasoning_tag_is_removed() -> None:
    for tag in ("think", "thinking", "reasoning", "reflection", "thought", "scratchpad"):
        assert strip_reasoning(f"<{tag}>x</{tag}>answer") == ("answer", [tag])


def test_reasoning_tags_match_in_any_case_and_with_attributes() -> None:
    assert strip_reasoning('<THINK mode="deep">x</THINK>answer') == ("answer", ["think"])


def test_a_close_tag_without_open_tag_drops_everything_before_it() -> None:
    assert strip_reasoning("the model forgot the open tag</think>answer") == ("answer", ["think"])


def test_an_unclosed_reasoning_block_runs_to_the_end() -> None:
    assert strip_reasoning("answer<thinking>and then it was cut") == ("answer", ["thinking"])


def test_text_without_reasoning_is_returned_unchanged() -> None:
    text = "no tags <b>here</b>"
    assert strip_reasoning(text) == (text, [])


def test_json_inside_reasoning_is_not_taken_for_the_answer() -> None:
    result = outform.parse('<think>maybe {"a": 0}?</think>{"a": 1}', OBJECT)
    assert result.value == {"a": 1}
    assert transforms(result) == ["strip_reasoning"]


NOTED = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "note": {"type": "string"}},
    "required": ["a"],
}


@pytest.mark.parametrize(
    "reply",
    [
        'I thought a lot.</think>{"a":1}',
        'I thought a lot.</think>\n\n{"a": "1"}',
        'She said "hi {" and left.</THINK>{"a": 1}',  # quotes and a bracket in the reasoning
        'x</thinking> {"a": 1}',
        'Draft: {"a": 0} no, wait.</think>{"a": 1}',
    ],
)
def test_a_lone_closing_tag_makes_what_precedes_it_reasoning(reply: str) -> None:
    """Some models omit the opening tag: text before a closing tag that is the reply's first
    reasoning tag is reasoning, stripped and recorded, as a whole `<think>…</think>` block."""
    result = outform.parse(reply, NOTED, level="full")
    assert result.data == {"a": 1}
    assert "strip_reasoning" in transforms(result)
    assert not result.lossy


def test_the_first_tag_decides_as_the_stream_reads_it() -> None:
    """The reasoning ends at the first closing tag (as `reasoning_tag` finds it for the
    stream), not at the first of a list of tag names (`</think>` after `</thought>`)."""
    assert strip_reasoning("a</thought> b</think>{}") == (" b</think>{}", ["thought"])


@pytest.mark.parametrize(
    ("reply", "note"),
    [
        ('{"a": "1", "note": "ends with </think> here"}', "ends with </think> here"),
        ('Here: {"a": "1", "note": "use <think> tags"}', "use <think> tags"),
        ('```json\n{"a": "1", "note": "a </think> b"}\n```', "a </think> b"),
        ('<think>x</think>{"a": "1", "note": "x <think> y"}', "x <think> y"),
        ('{"a": "1", "note": "cut after </think> he', "cut after </think> he"),
        ('<think>I would write {"note": "</think>"} here</think>{"a": 1, "note": "n"}', "n"),
    ],
)
def test_a_tag_inside_a_json_string_is_text(reply: str, note: str) -> None:
    """Found by a trial: a tag written in a field's text was read as a reasoning tag, so the
    reply was cut there (`{"note": "use <think> tags"}` gave `"use "`, recorded as no loss, or
    nothing read at all). A tag inside a string of a JSON value (a region closed, or the one
    left open at the end that reads as JSON to its end) is the value's text."""
    result = outform.parse(reply, NOTED, level="full")
    assert result.data == {"a": 1, "note": note}
    assert not result.lossy


# -- fences ---------------------------------------------------------------------------------


def test_a_fence_gives_its_language_and_content() -> None:
    (fence,) = find_fences('text\n```json\n{"a": 1}\n```\nmore')
    assert (fence.lang, fence.content, fence.closed) == ("json", '{"a": 1}\n', True)


def test_tilde_fences_are_fences() -> None:
    (fence,) = find_fences("~~~\n[1]\n~~~\n")
    assert (fence.lang, fence.content, fence.closed) == ("", "[1]\n", True)


def test_an_unclosed_fence_runs_to_the_end_of_a_truncated_reply() -> None:
    (fence,) = find_fences('```json\n{"a": 1')
    assert (fence.content, fence.closed) == ('{"a": 1', False)


def test_a_fence_closes_only_with_a_marker_at_least_as_long_as_its_opener() -> None:
    (fence,) = find_fences("````\n```\ninner\n```\n````\n")
    assert fence.content == "```\ninner\n```\n"


def test_a_fence_opened_and_closed_on_one_line_is_found() -> None:
    (fence,) = find_fences('look: ```json {"a": 1}``` done')
    assert fence.lang == "json"
    assert fence.content.strip() == '{"a": 1}'


def test_text_without_fence_markers_has_no_fences() -> None:
    assert find_fences("just {prose}") == []


def test_a_fenced_reply_is_unwrapped_and_the_fence_recorded() -> None:
    result = outform.parse('Sure!\n```json\n{"a": 1}\n```', OBJECT)
    assert result.value == {"a": 1}
    assert transforms(result) == ["strip_fence"]


def test_an_unclosed_fence_is_unwrapped_and_recorded_as_such() -> None:
    result = outform.parse('```json\n{"a": 1}', OBJECT)
    assert result.value == {"a": 1}
    assert transforms(result) == ["strip_unclosed_fence"]


def test_a_json_tagged_fence_is_preferred_to_a_fence_in_another_language() -> None:
    reply = '```python\nx = {"b": 1}\n```\n```json\n{"a": 1}\n```'
    assert outform.parse(reply, OBJECT).value == {"a": 1}


@settings(max_examples=100, deadline=None)
@given(value=json_values)
def test_wrapping_a_valid_document_in_a_json_fence_never_changes_its_value(value: Any) -> None:
    document = orjson.dumps(value).decode()
    result = outform.parse(f"```json\n{document}\n```", {})
    assert orjson.dumps(result.value) == orjson.dumps(value)


# -- bracketed regions ----------------------------------------------------------------------


def test_a_span_covers_one_top_level_region_with_its_nesting_depth() -> None:
    (span,), deepest = scan_spans('say {"a": [1, {"b": 2}]} ok')
    assert (span.start, span.end, span.root, span.depth, span.closed) == (4, 24, "object", 3, True)
    assert deepest == 3


def test_brackets_inside_json_strings_are_not_structure() -> None:
    text = '{"a": "}]{["}'
    (span,), _ = scan_spans(text)
    assert (span.start, span.end) == (0, len(text))


def test_an_apostrophe_or_quote_in_prose_does_not_swallow_the_rest() -> None:
    text = 'it\'s a "quote {"a": 1}'
    (span,), _ = scan_spans(text)
    assert text[span.start : span.end] == '{"a": 1}'


def test_a_closer_with_no_opener_is_prose() -> None:
    assert scan_spans("}} ]] no json") == ([], 0)


def test_a_mismatched_closer_closes_the_opener_it_matches() -> None:
    (span,), _ = scan_spans('{"a": [1, 2} tail')
    assert (span.start, span.end, span.closed) == (0, 12, True)


@pytest.mark.parametrize("level", ["minimal", "full"])
@pytest.mark.parametrize(
    "reply",
    [
        'Use { or [ here. {"a": 1}',
        'Write [ for a list. Answer: {"a": 1}',
        'Braces { like this { matter. {"a": 1} Done.',
    ],
)
def test_a_stray_bracket_in_prose_does_not_hide_the_json_after_it(reply: str, level: str) -> None:
    """Issue 9: an opener that cannot begin JSON ("{ or", "[ for") is prose; what closes
    inside it is found as if it stood alone."""
    assert outform.parse(reply, OBJECT, level=level).value == {"a": 1}


def test_a_truncated_reply_after_a_stray_bracket_is_still_the_truncated_candidate() -> None:
    found = candidates('Use [ here. Result: {"a": [1, 2', OBJECTS, collect=False).candidates
    assert [(c.kind, c.text) for c in found[1:]] == [("unclosed", '{"a": [1, 2')]


def test_a_region_still_open_at_the_end_is_reported_unclosed() -> None:
    spans, _ = scan_spans('[1] then {"a": [1')
    assert [(s.root, s.closed) for s in spans] == [("array", True), ("object", False)]


@settings(max_examples=200, deadline=None)
@given(
    text=st.text()
    | st.text(alphabet='{}[]"\\ a:,')
    | st.lists(st.sampled_from(['{"', "[", "{", "}", "]", '"', "\\", "x"]), max_size=300).map(
        "".join
    )
)
def test_scan_spans_reads_any_text_and_its_spans_are_ordered_and_disjoint(text: str) -> None:
    """The regions found inside the one left open (after it stops reading as JSON) come last,
    inside it, ordered and disjoint among themselves."""
    found, deepest = scan_spans(text)
    spans = [span for span in found if not span.inside]
    inside = found[len(spans) :]
    assert all(span.inside for span in inside)
    end = 0
    for span in spans:
        assert span.start >= end
        assert text[span.start] in "{["
        assert span.root == ("object" if text[span.start] == "{" else "array")
        assert span.end <= len(text)
        if span.closed:
            assert text[span.end - 1] in "}]"
        else:
            assert span is spans[-1]
            assert span.end == len(text)
        assert 1 <= span.depth <= deepest
        end = span.end
    if inside:
        assert not spans[-1].closed
        end = spans[-1].start + 1
    for span in inside:
        assert span.start >= end and span.closed and text[span.end - 1] in "}]"
        assert 1 <= span.depth <= deepest
        end = span.end


# -- candidates -----------------------------------------------------------------------------


def test_the_whole_reply_is_the_first_candidate() -> None:
    found = candidates('Here {"a": 1}', OBJECTS, collect=False).candidates
    assert [(c.kind, c.text) for c in found] == [
        ("whole", 'Here {"a": 1}'),
        ("span", '{"a": 1}'),
    ]


def test_regions_whose_root_the_schema_wants_come_first() -> None:
    found = candidates('Here [1] and {"a": 1}', OBJECTS, collect=False).candidates
    assert [c.text for c in found[1:]] == ['{"a": 1}', "[1]"]


def test_several_regions_are_gathered_into_one_array_when_collecting() -> None:
    extraction = candidates('{"a": 1} {"a": 2}', ARRAYS, collect=True)
    gathered = extraction.candidates[-1]
    assert (gathered.kind, gathered.text) == ("collected", '[{"a": 1},{"a": 2}]')
    assert gathered.transforms == ("collect_values",)


def test_a_region_left_open_is_a_truncated_candidate() -> None:
    found = candidates('Result: {"a": [1, 2', OBJECTS, collect=False).candidates
    assert [(c.kind, c.transforms) for c in found[1:]] == [("unclosed", ("extract_truncated",))]


def test_a_reply_that_starts_with_json_and_continues_as_json_is_one_document() -> None:
    assert candidates('{"a": 1}, {"a": 2}', OBJECTS, collect=False).document
    assert not candidates('{"a": 1} and that is all', OBJECTS, collect=False).document


def test_values_one_after_another_are_candidates_of_their_own_for_a_single_root() -> None:
    """`{...}\n{...}` for a root that takes one value: never read together by a tolerant
    decoder (json-repair keeps the last); when collecting, it is gathered as before."""
    extraction = candidates('{"a": 1}\n{"a": 2}', OBJECTS, collect=False)
    assert not extraction.document
    assert [c.text for c in extraction.candidates[1:]] == ['{"a": 1}', '{"a": 2}']
    assert [c.detail for c in extraction.candidates[1:]] == [
        "value 1 of 2 in the reply",
        "value 2 of 2 in the reply",
    ]
    assert candidates('{"a": 1}\n{"a": 2}', ARRAYS, collect=True).document


def test_a_reply_cut_inside_a_string_keeps_its_final_line_breaks() -> None:
    found = candidates('Log: {"a": "line\n\n', OBJECTS, collect=False).candidates
    assert [c.text for c in found] == ['Log: {"a": "line\n\n', '{"a": "line\n\n']
    closed = candidates('{"a": "line"}\n\n', OBJECTS, collect=False).candidates
    assert closed[0].text == '{"a": "line"}'


def test_an_object_in_prose_is_extracted_and_recorded() -> None:
    result = outform.parse('The answer is {"a": 1}. Hope that helps!', OBJECT)
    assert result.value == {"a": 1}
    assert result.changes[0].stage == "extract"
    assert transforms(result) == ["extract_from_prose"]


def test_an_array_schema_gathers_several_values_of_the_reply() -> None:
    result = outform.parse('First {"a": 1} then {"a": 2}', {"type": "array"})
    assert result.value == [{"a": 1}, {"a": 2}]
    assert transforms(result) == ["collect_values"]


def test_an_array_schema_gathers_several_fenced_blocks() -> None:
    reply = '```json\n{"a": 1}\n```\n```json\n{"a": 2}\n```'
    assert outform.parse(reply, {"type": "array"}).value == [{"a": 1}, {"a": 2}]


def test_an_object_schema_picks_the_first_object_of_several() -> None:
    assert outform.parse('First {"a": 1} then {"a": 2}', OBJECT).value == {"a": 1}


def test_a_truncated_object_is_completed_at_level_full() -> None:
    result = outform.parse('Result: {"a": [1, 2,', OBJECT, level="full")
    assert result.value == {"a": [1, 2]}
    assert transforms(result) == ["extract_truncated", "json_repair"]


def test_without_the_extract_stage_prose_around_json_is_not_removed() -> None:
    with pytest.raises(outform.OutputError) as caught:
        outform.parse('Here: {"a": 1}', OBJECT, stages=("decode", "coerce"))
    assert caught.value.hint.is_syntax


@settings(max_examples=150, deadline=None)
@given(before=prose, value=json_objects, after=prose)
def test_an_object_embedded_in_prose_is_found(
    before: str, value: dict[str, Any], after: str
) -> None:
    reply = f"{before}{orjson.dumps(value).decode()}{after}"
    result = outform.parse(reply, OBJECT)
    assert orjson.dumps(result.value) == orjson.dumps(value)


def test_a_fence_written_inside_a_json_string_is_not_taken_for_the_answer() -> None:
    """Markdown in a string value (`"use ```{...}``` here"`) is content, not the reply's fence."""
    reply = 'Here: {"a": "use ```{\\"x\\": 1}``` here"}'
    assert outform.parse(reply, OBJECT).value == {"a": 'use ```{"x": 1}``` here'}


# -- a stray bracket in prose -----------------------------------------------------------------

STRAY = [
    'Math: [0, 1) then {"a": 1}',
    'Use [ 1 here. {"a": 1}',
    'Interval [0, 5[ and {"a": 1}',
    'Use { "a" here. {"a": 1}',
    'Brackets [ like { this: {"a": 1}',
]


@pytest.mark.parametrize("reply", STRAY)
@pytest.mark.parametrize("level", ["minimal", "full"])
def test_a_bracket_that_stops_reading_as_json_does_not_hide_the_json_after_it(
    reply: str, level: str
) -> None:
    """The bracket left open stops reading as JSON before `{"a": 1}`: it may not swallow it."""
    assert outform.parse(reply, OBJECT, level=level).value == {"a": 1}


@pytest.mark.parametrize("reply", STRAY)
def test_the_region_after_the_break_wins_as_written_for_any_schema(reply: str) -> None:
    assert outform.parse(reply, {}, level="full").value == {"a": 1}


def test_the_regions_after_the_break_are_candidates_after_the_open_region() -> None:
    found = candidates('Math: [0, 1) then {"a": 1}', OBJECTS, collect=False).candidates
    assert [(c.kind, c.text) for c in found[1:]] == [
        ("unclosed", '[0, 1) then {"a": 1}'),
        ("inside", '{"a": 1}'),
    ]


def test_a_reply_cut_off_in_prose_holds_its_parts() -> None:
    """Read as JSON to its end, the open region is the value: its parts are no candidates."""
    found = candidates('Here: {"items": [{"a": 1}, {"a": 2}, {"a"', OBJECTS, collect=False)
    assert [c.kind for c in found.candidates[1:]] == ["unclosed"]
    result = outform.parse('Here: {"items": [{"a": 1}, {"a": 2}, {"a"', OBJECT, level="full")
    assert result.value == {"items": [{"a": 1}, {"a": 2}]}


def test_the_open_region_is_repaired_before_the_regions_inside_it() -> None:
    """`{name: "x", meta: {'k': 1}` stops reading as JSON at `n`; neither it nor `{'k': 1}` reads
    as written, and the open region's repair comes first."""
    reply = "Here: {name: \"x\", meta: {'k': 1}"
    assert outform.parse(reply, OBJECT, level="full").value == {"name": "x", "meta": {"k": 1}}


def test_several_values_in_prose_for_an_unconstrained_root_give_the_first_and_say_so() -> None:
    """A schema that says nothing takes one value: in prose, the first, its change saying which
    of how many (the second is not lost silently)."""
    result = outform.parse('see [1] {"a": 1}', {}, level="full")
    assert result.value == [1]
    assert result.changes[-1].detail == "value 1 of 2 in the reply"


def test_a_repair_of_the_open_region_keeps_the_regions_inside_it_whole() -> None:
    """`["a", "b"]` reads as written inside `{name: ...`: the open region's repair, which keeps it
    whole, is still the value."""
    schema = {"type": "object", "required": ["name", "tags"]}
    reply = 'Here: {name: "x", tags: ["a", "b"]'
    assert outform.parse(reply, schema, level="full").value == {"name": "x", "tags": ["a", "b"]}


def test_a_repair_that_tears_apart_a_region_read_as_written_is_refused() -> None:
    """json-repair reads `[0, 1) then {"a": "x"}` as `[0, 1, "then {", "a", "x"]`, which this
    schema takes: `{"a": "x"}` reads as JSON as written and is no part of that list."""
    schema = {"type": "array", "items": {"type": ["number", "string"]}, "minItems": 3}
    with pytest.raises(outform.OutputError) as caught:
        outform.parse('Math: [0, 1) then {"a": "x"}', schema, level="full")
    assert "tears apart a region" in caught.value.what


@given(st.text(alphabet=["[", "{", " ", "\n", "\u2003", "a", "1", "]"]), st.integers(0, 8))
def test_a_run_of_openers_ends_after_its_last_opener(text: str, index: int) -> None:
    """One possessive repeat of a class finds the run (five million `[` in 0.015 s, where a
    repeated group of whitespace-then-opener took 0.57 s), then steps back over the
    whitespace after its last opener: the end the repeated group finds."""
    from outform.parse.extract import opener_run_end

    run = re.compile(r"[{\[](?:\s*[{\[])*").match(text, index)
    assert opener_run_end(text, index) == (run.end() if run else None)
