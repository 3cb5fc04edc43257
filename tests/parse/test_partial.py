"""The push parser: what a snapshot shows while a reply streams in.

The rule throughout: a value once shown never changes, it only grows (`extends`). Strings may
be partial; numbers, booleans and null appear once something ends them; a key appears with its
value. The corpus tests at the end compare these choices with partial-json-parser and LangChain
on their own cases; every disagreement is listed, with its reason, in docs/streaming.md.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from outform import OutputError
from outform.parse.partial import (
    MISSING,
    PartialDict,
    PartialList,
    PartialParser,
    PartialStr,
    extends,
    is_complete,
    plain,
)
from tests.parse.strategies import json_values, prose
from tests.vendored import CORPUS, ROOT, corpus

DOC = ROOT / "docs" / "streaming.md"


def snapshots(chunks: Iterable[str], **options: Any) -> tuple[PartialParser, list[Any]]:
    """Feed the chunks; the plain value after each one, checking the no-flicker rule."""
    parser = PartialParser(**options)
    shown: list[Any] = []
    previous: Any = MISSING
    for chunk in chunks:
        parser.feed(chunk)
        current = parser.value
        assert extends(previous, current), (previous, current)
        previous = current
        shown.append(plain(current))
    return parser, shown


def by_char(text: str) -> list[str]:
    return list(text)


def show(text: str, **options: Any) -> Any:
    """The value shown after receiving `text` (in one chunk)."""
    parser = PartialParser(**options)
    parser.feed(text)
    return plain(parser.value)


# -- what a snapshot shows -------------------------------------------------------------------


def test_strings_grow_as_they_arrive() -> None:
    _, shown = snapshots(['{"name": "Ad', "a Love", 'lace"}'])
    assert shown == [{"name": "Ad"}, {"name": "Ada Love"}, {"name": "Ada Lovelace"}]


def test_numbers_appear_only_once_something_ends_them() -> None:
    assert show('{"age": 2') == {}  # it may become 25
    assert show('{"age": 25') == {}
    assert show('{"age": 25,') == {"age": 25}
    assert show('{"age": 25 ') == {"age": 25}  # whitespace ends a number too
    assert show('{"age": 25}') == {"age": 25}
    assert show("[1, 2, 3") == [1, 2]


def test_literals_are_never_guessed() -> None:
    assert show('{"ok": tr') == {}
    assert show('{"ok": true') == {}  # "true" is complete, but shown with its delimiter
    assert show('{"ok": true}') == {"ok": True}
    assert show("[null, fals") == [None]


def test_a_key_appears_with_its_value() -> None:
    assert show('{"a": 1, "na') == {"a": 1}
    assert show('{"a": 1, "name"') == {"a": 1}
    assert show('{"a": 1, "name": ') == {"a": 1}
    assert show('{"a": 1, "name": "') == {"a": 1, "name": ""}
    assert show('{"a": 1, "list": [') == {"a": 1, "list": []}


def test_escapes_split_across_chunks_show_the_text_before_them() -> None:
    _, shown = snapshots(['{"u": "caf', "\\u00", "e9 ", "\\ud83d", "\\ude00", '"}'])
    assert shown == [
        {"u": "caf"},
        {"u": "caf"},  # "\u00" is not a character yet
        {"u": "café "},
        {"u": "café "},  # a high surrogate waits for its low half
        {"u": "café 😀"},
        {"u": "café 😀"},
    ]


def test_a_lone_backslash_at_a_chunk_end_waits_for_what_it_escapes() -> None:
    _, shown = snapshots(['{"q": "say \\', '"hi\\', '""}'])
    assert shown == [{"q": "say "}, {"q": 'say "hi'}, {"q": 'say "hi"'}]


def test_partial_values_are_marked_and_complete_values_are_plain() -> None:
    parser = PartialParser()
    parser.feed('{"done": [1, 2], "open": ["a", "b')
    value = parser.value
    assert isinstance(value, PartialDict)
    assert value.open_key == "open"
    assert type(value["done"]) is list
    assert is_complete(value["done"])
    assert isinstance(value["open"], PartialList)
    assert value["open"].completed == 1
    assert isinstance(value["open"][1], PartialStr)
    assert not is_complete(value["open"][1])


def test_a_view_shows_any_value_as_the_member_being_written() -> None:
    """Layers built on snapshots (typed partial values) make views of their own values: a
    tuple, or anything else, is shown as it is, never taken for the parser's lazy member."""
    items = PartialList([1], 1, (2, 3))
    assert items[-1] == (2, 3) and items[1] == (2, 3)
    assert list(items) == [1, (2, 3)] and items.parts()[2] == (2, 3)
    members = PartialDict({"a": 1}, 1, "b", ("x",))
    assert members["b"] == ("x",) and members.get("b") == ("x",)
    assert dict(members) == {"a": 1, "b": ("x",)} and members.parts()[3] == ("x",)


def test_snapshots_share_structure_and_never_change_afterwards() -> None:
    parser = PartialParser()
    parser.feed('{"items": [{"id": 1}, {"id": 2}, ')
    before = parser.value
    first = before["items"][0]
    parser.feed('{"id": 3}, {"id": 4}]}')
    after = parser.value
    assert plain(before) == {"items": [{"id": 1}, {"id": 2}]}  # unchanged by later chunks
    assert after["items"][0] is first  # the completed item is shared, not copied
    assert after == {"items": [{"id": 1}, {"id": 2}, {"id": 3}, {"id": 4}]}


def test_a_snapshot_read_only_later_shows_the_value_as_it_was_when_taken() -> None:
    """A snapshot builds the views below its root when they are first read: read after more
    chunks (new members, a repeated key, a string closed, containers closed), it still shows
    the value as it was."""
    parser = PartialParser()
    parser.feed('{"a": {"b": [1, {"c": "x", "d": 1, "e": "te')
    early = parser.value
    parser.feed('xt", "d": 2}, 3], "f": 4}, "g": 5}')
    assert plain(early) == {"a": {"b": [1, {"c": "x", "d": 1, "e": "te"}]}}
    assert early["a"]["b"][1]["e"] == "te" and isinstance(early["a"]["b"], PartialList)
    assert parser.value == {"a": {"b": [1, {"c": "x", "d": 2, "e": "text"}, 3], "f": 4}, "g": 5}


def test_a_repeated_key_replaces_the_value_without_changing_older_snapshots() -> None:
    parser = PartialParser()
    parser.feed('{"a": 1, ')
    before = parser.value
    parser.feed('"a": 2, "b": 3}')
    assert plain(before) == {"a": 1}
    assert parser.finish() == orjson.loads('{"a": 1, "a": 2, "b": 3}') == {"a": 2, "b": 3}


# -- the start of a reply ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "reply",
    [
        '{"a": [1, 2]}',
        '  \n{"a": [1, 2]}\n',
        '```json\n{"a": [1, 2]}\n```\nAnything else?',
        '```\n{"a": [1, 2]}\n```',
        '<think>The user wants {a} as [1, 2].</think>\n{"a": [1, 2]}',
        '<thinking>\nplan: [x]\n</thinking>```json\n{"a": [1, 2]}\n```',
        'Sure! Here is the {result} you asked for:\n\n{"a": [1, 2]} Hope it helps.',
        '```python\nprint({"a": 0})\n```\nThe JSON: ```json\n{"a": [1, 2]}\n```',
    ],
)
def test_the_value_is_found_after_reasoning_prose_and_fences(reply: str) -> None:
    for size in (1, 3, 16, len(reply)):
        parser, _ = snapshots(reply[i : i + size] for i in range(0, len(reply), size))
        assert parser.finish() == {"a": [1, 2]}, size


def test_a_bracket_in_prose_is_tentative_until_it_turns_out_to_be_json() -> None:
    parser, shown = snapshots(by_char('Use {braces} like this: {"ok": 1}'))
    assert shown[-1] == {"ok": 1}
    assert all(value in (MISSING, {"ok": 1}) for value in shown)  # never {} then a rewind
    assert parser.finish() == {"ok": 1}


def test_roots_names_the_brackets_looked_for_in_prose() -> None:
    reply = 'See [1] and [2]: {"a": 1}'
    assert show(reply, roots=frozenset({"object"})) == {"a": 1}
    assert show(reply, roots=frozenset({"array"})) == [1]


def test_the_rest_of_the_reply_is_ignored_once_the_value_is_complete() -> None:
    parser = PartialParser()
    parser.feed('{"a": 1}\n```\nNote: {"b": 2}')
    assert parser.done
    assert parser.end == 8
    assert parser.finish() == {"a": 1}


def test_a_top_level_scalar_is_shown_at_the_end() -> None:
    parser = PartialParser()
    parser.feed("42")
    assert parser.value is MISSING  # "42" may be "420"
    assert parser.finish() == 42
    assert show('"just a str') == "just a str"
    assert show("1. First, open the file", scalars=True) is MISSING  # prose, not a number


def test_level_off_wants_json_from_the_first_character() -> None:
    parser = PartialParser(extract=False)
    parser.feed("Sure: {}")
    assert parser.error is not None
    assert parser.error.kind == "syntax"


# -- errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "reply",
    [
        '{"a": 1 "b": 2}',
        '{"a": [1, 2,]}',
        '{"a": oops}',
        '{"a": "line\nbreak"}',
        '{"a": "\\x"}',
        '{"a": 1]',
        '{"a": "\\ud83d"}',
    ],
)
def test_invalid_json_stops_the_parser_and_keeps_what_was_valid(reply: str) -> None:
    for size in (1, 4, len(reply)):
        parser, shown = snapshots(reply[i : i + size] for i in range(0, len(reply), size))
        assert parser.error is not None and parser.broken, size
        # what was shown before the error stays: a prefix of the reply's value, never more
        assert shown[-1] is MISSING or set(shown[-1]) <= {"a"}, size
        with pytest.raises(OutputError) as caught:
            parser.finish()
        assert caught.value.hint.is_syntax


def test_finish_says_where_an_incomplete_reply_ended() -> None:
    parser = PartialParser()
    parser.feed('{"items": [{"id": 1}, {"na')
    with pytest.raises(OutputError) as caught:
        parser.finish()
    assert "ends inside" in caught.value.hint.violations[0].found
    empty = PartialParser()
    empty.feed("No JSON here.")
    with pytest.raises(OutputError, match="not a complete JSON value"):
        empty.finish()


def test_nesting_deeper_than_max_depth_is_refused() -> None:
    parser = PartialParser(max_depth=5)
    parser.feed("[" * 10)
    assert parser.error is not None
    assert "deeper" in parser.error.found


# -- properties -------------------------------------------------------------------------------


def _serialise(value: Any, style: int) -> str:
    if style == 0:
        return orjson.dumps(value).decode()
    if style == 1:
        return json.dumps(value, indent=2, ensure_ascii=True)  # surrogate pairs as escapes
    return json.dumps(value, ensure_ascii=False, separators=(" , ", " :\n"))


def _chunked(text: str, sizes: list[int]) -> list[str]:
    out, pos, index = [], 0, 0
    while pos < len(text):
        size = sizes[index % len(sizes)]
        out.append(text[pos : pos + size])
        pos += size
        index += 1
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    json_values,
    st.integers(0, 2),
    st.lists(st.integers(1, 20), min_size=1, max_size=8),
)
def test_any_document_in_any_chunks_only_grows_and_ends_as_the_full_parse(
    value: Any, style: int, sizes: list[int]
) -> None:
    document = _serialise(value, style)
    parser, shown = snapshots(_chunked(document, sizes))
    assert parser.error is None
    assert parser.finish() == orjson.loads(document)
    if isinstance(value, dict | list):
        assert shown[-1] == orjson.loads(document)  # a container needs no finish()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_values, st.lists(st.integers(1, 9), min_size=1, max_size=5), st.data())
def test_what_is_shown_does_not_depend_on_how_the_text_was_cut(
    value: Any, sizes: list[int], data: st.DataObject
) -> None:
    document = json.dumps(value, ensure_ascii=bool(sizes[0] % 2))
    cut = data.draw(st.integers(0, len(document)))
    _, shown = snapshots(_chunked(document[:cut], sizes))
    whole = show(document[:cut])
    assert (shown[-1] if shown else MISSING) == whole


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    json_values.filter(lambda v: isinstance(v, dict | list)),
    prose,
    st.sampled_from(["plain", "fence", "reasoning"]),
    st.integers(1, 12),
)
def test_the_value_is_found_whatever_surrounds_it(
    value: Any, before: str, wrapper: str, size: int
) -> None:
    document = orjson.dumps(value).decode()
    before = before.lstrip().lstrip('"-0123456789tfn')  # not a JSON scalar itself
    reply = {
        "plain": f"{before}\n{document}\nThat is all.",
        "fence": f"{before}\n```json\n{document}\n```\nDone.",
        "reasoning": f"<think>{before} [draft] {{x}}</think>\n{document}",
    }[wrapper]
    parser, _ = snapshots(_chunked(reply, [size]))
    assert parser.finish() == value


# -- peers' cases -----------------------------------------------------------------------------

_PREFIXES = "partial_prefixes_generated.jsonl"
_PJP = "partial_json_parser.jsonl"
_LANGCHAIN = "langchain_json.jsonl"
_PEERS = ("partial_json_parser.loads", "langchain_core.parse_partial_json")


def _documented() -> str:
    return DOC.read_text(encoding="utf-8")


def _prefix_records() -> list[dict[str, Any]]:
    """The generated prefixes. Read with `json`, not orjson: the recorded peer answers hold lone
    surrogates (half an emoji), which orjson rightly refuses."""
    path = CORPUS / _PREFIXES
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _prefix_documents() -> dict[str, list[dict[str, Any]]]:
    documents: dict[str, list[dict[str, Any]]] = {}
    for record in _prefix_records():
        documents.setdefault(record["doc_id"], []).append(record)
    for records in documents.values():
        records.sort(key=lambda r: r["prefix_len"])
    return documents


def test_every_prefix_of_the_generated_documents_only_grows_and_ends_as_final() -> None:
    for doc_id, records in _prefix_documents().items():
        text = max(records, key=lambda r: r["prefix_len"])["input"]
        final = records[0]["final"]
        # Character by character, each prefix's snapshot is the previous one, grown.
        parser, shown = snapshots(by_char(text))
        assert parser.finish() == final, doc_id
        # Each prefix read on its own shows the same as when it arrived in pieces.
        for record in records:
            assert show(record["input"]) == (
                shown[record["prefix_len"] - 1] if record["prefix_len"] else MISSING
            ), record["id"]


def _prefix_agreement() -> tuple[dict[str, int], int, list[dict[str, Any]]]:
    agree = dict.fromkeys(_PEERS, 0)
    records = _prefix_records()
    split = []
    for record in records:
        ours = show(record["input"])
        ours = None if ours is MISSING else ours
        answers = [record["peers"][peer].get("value") for peer in _PEERS]
        for peer, answer in zip(_PEERS, answers, strict=True):
            agree[peer] += answer == ours
        if answers[0] != answers[1]:
            split.append(record)
    return agree, len(records), split


def test_generated_prefixes_agreement_with_each_peer() -> None:
    agree, total, split = _prefix_agreement()
    for peer, count in agree.items():
        print(f"{_PREFIXES}: agree with {peer} on {count}/{total} ({count / total:.0%})")
    print(f"the peers disagree on {len(split)} prefixes")
    # Both peers show numbers before they end; LangChain is closer (it does not guess literals).
    assert agree["langchain_core.parse_partial_json"] / total >= 0.85
    assert agree["partial_json_parser.loads"] / total >= 0.80


def test_where_the_peers_disagree_our_choice_is_documented() -> None:
    _, _, split = _prefix_agreement()
    text = _documented()
    missing = [r["id"] for r in split if r["id"] not in text]
    assert not missing, f"document these prefixes in {DOC.name}: {missing}"


def _pjp_case(record: dict[str, Any]) -> tuple[bool, Any, Any]:
    """Whether we agree with partial-json-parser on one of its cases, ours, theirs.

    `allow` names what the peer may leave partial; its STR, ARR and OBJ flags map onto our
    `partial` kinds (numbers and literals are never partial here). An `error` outcome (nothing
    can be shown) agrees with a snapshot that shows nothing or a parser that stopped.
    """
    allow = record.get("allow")
    kinds = frozenset(
        kind
        for flag, kind in (("STR", "string"), ("ARR", "array"), ("OBJ", "object"))
        if allow is None or flag in allow
    )
    parser = PartialParser(partial=kinds)
    parser.feed(record["input"])
    ours = plain(parser.value)
    if record["outcome"] == "error":
        return ours is MISSING or parser.error is not None, ours, "error"
    expected = record["expected"]
    if record["kind"] == "fix":
        expected = orjson.loads("".join(expected))
    return ours == expected and ours is not MISSING, ours, expected


def test_partial_json_parser_cases() -> None:
    records = corpus(_PJP)
    passed = [r for r in records if _pjp_case(r)[0]]
    rate = len(passed) / len(records)
    print(f"{_PJP}: {len(passed)}/{len(records)} agree ({rate:.0%})")
    assert rate >= 0.65  # the rest: numbers and literals before they end (see the doc)


def test_every_partial_json_parser_difference_is_documented() -> None:
    text = _documented()
    missing = [r["id"] for r in corpus(_PJP) if not _pjp_case(r)[0] and r["id"] not in text]
    assert not missing, f"document these cases in {DOC.name}: {missing}"


def test_langchain_parse_partial_json_cases() -> None:
    records = [r for r in corpus(_LANGCHAIN) if r["kind"] == "parse"]
    differ = [r["id"] for r in records if show(r["input"]) != r["expected"]]
    print(f"{_LANGCHAIN} parse: {len(records) - len(differ)}/{len(records)} agree")
    assert len(differ) <= 1
    text = _documented()
    assert all(ident in text for ident in differ)


@pytest.mark.parametrize(
    "record",
    [r for r in corpus(_LANGCHAIN) if r["kind"] == "stream_sequence"],
    ids=lambda r: r["id"],
)
def test_langchain_stream_sequences_show_the_same_values_minus_the_flicker(
    record: dict[str, Any],
) -> None:
    parser = PartialParser()
    distinct: list[Any] = []
    for chunk in record["chunks"]:
        parser.feed(chunk)
        value = plain(parser.value)
        if value is not MISSING and (not distinct or distinct[-1] != value):
            distinct.append(value)
    expected = record["expected"]
    remaining = iter(expected)
    assert all(any(ours == theirs for theirs in remaining) for ours in distinct)
    assert distinct[-1] == expected[-1]
    if distinct != expected:  # only numbers shown before they ended may be missing
        assert record["id"] in _documented()
