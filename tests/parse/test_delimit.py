"""Where the string values of broken JSON begin and end (parse/delimit.py), before json-repair."""

from __future__ import annotations

from typing import Any

import orjson
import pyjson5
import pytest

import outform
from outform.parse import loss
from outform.parse.delimit import Delimited, delimit

CODE = {"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]}
TEXTS = {"type": "array", "items": {"type": "string"}}
NOTE = {
    "type": "object",
    "properties": {"title": {"type": "string"}, "count": {"type": "integer"}},
    "required": ["title", "count"],
}


def _delimited(text: str) -> Delimited:
    """What the pass writes for `text` (it rewrites something there)."""
    delimited = delimit(text)
    assert delimited is not None
    return delimited


def _read(text: str) -> Any:
    return pyjson5.decode(_delimited(text).closed)


# -- foreign literals -------------------------------------------------------------------------


def test_a_triple_quoted_value_becomes_a_dedented_json_string() -> None:
    assert _read('{"code": """\n    def f():\n        pass\n"""}') == {"code": "def f():\n    pass"}


def test_python_triple_single_quotes_are_a_literal_too() -> None:
    assert _read("{'code': '''def f(): pass''', 'lang': 'py'}") == {
        "code": "def f(): pass",
        "lang": "py",
    }
    assert _read("{'code': '''\n    if x:\n        y()\n'''}") == {"code": "if x:\n    y()"}
    assert _read("['''a 'quoted' b''']") == ["a 'quoted' b"]


def test_the_pipeline_reads_python_triple_single_quotes() -> None:
    result = outform.parse("{'code': '''def f(): pass''', 'lang': 'py'}", level="full")
    assert result.data == {"code": "def f(): pass", "lang": "py"}


def test_a_backtick_value_keeps_its_inner_quotes() -> None:
    assert _read('{"code": `say "hi"`}') == {"code": 'say "hi"'}


def test_a_fenced_value_loses_its_info_string() -> None:
    assert _read('{"code": ```python\nprint(1)\n```}') == {"code": "print(1)"}


def test_fenced_values_as_array_items() -> None:
    assert _read("[```py\nx = 1\n```, ```py\ny = 2\n```]") == ["x = 1", "y = 2"]


def test_text_that_no_rule_changes_gives_none() -> None:
    assert delimit('{"a": "plain", "b": [1, 2]}') is None
    assert delimit('{"a": "has ` and \\" inside"}') is None


def test_a_literal_that_is_never_closed_is_left_to_the_decoder() -> None:
    assert delimit('{"code": `unclosed}') is None


def test_a_literal_where_no_value_may_start_is_left_alone() -> None:
    assert delimit("{`key`: 1}") is None


# -- quotes inside a string -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('["alpha", "it"s broken", "omega"]', ["alpha", 'it"s broken', "omega"]),
        ('["one", "two"three"]', ["one", 'two"three']),
        ("['it's', 'fine']", ["it's", "fine"]),
        ("{'title': 'Don't panic', 'count': 1}", {"title": "Don't panic", "count": 1}),
    ],
)
def test_a_quote_inside_a_word_does_not_end_the_string(text: str, expected: Any) -> None:
    assert _read(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('["x", "the "best", "y"]', ["x", 'the "best', "y"]),
        ('{"name": "the "best"}', {"name": 'the "best'}),
        ('{"name": "the "best" one", "n": 1}', {"name": 'the "best" one', "n": 1}),
        ('{"the "key": 1}', {'the "key': 1}),
    ],
)
def test_a_quote_followed_by_a_letter_does_not_end_the_string(text: str, expected: Any) -> None:
    """After a value only a closer, a comma or (a comma missing) the next member may follow:
    `"best` is none of them, so that quote is inside the string."""
    assert _read(text) == expected


def test_the_pipeline_keeps_an_inner_quote_without_an_extra_item() -> None:
    result = outform.parse('["x", "the "best", "y"]', TEXTS, level="full")
    assert result.data == ["x", 'the "best', "y"]
    assert outform.parse('{"name": "5" screen"}', level="full").data == {"name": '5" screen'}


def test_a_search_for_the_end_stops_at_a_quote_that_ends_a_key() -> None:
    # `x"y` is inside a word; the next quote that could end the string is after `b`, which a
    # colon follows: the string would swallow the member `b`. Left to the decoder.
    assert delimit('{"a": "x"y, "b": "z"}') is None


def test_unquoted_keys_keep_their_role() -> None:
    delimited = _delimited("{title: 'O'Neil', count: 1}")
    assert delimited.text == '{title: "O\'Neil", count: 1}'


def test_the_string_ends_at_the_first_quote_that_can_end_it() -> None:
    # `s"` is followed by `, then` (no key): not the end; `e"` is followed by `,` and a key.
    assert _read('{"title": "it"s, then more", "count": 1}') == {
        "title": 'it"s, then more',
        "count": 1,
    }


def test_in_an_array_a_quote_then_a_space_and_a_word_is_left_to_the_decoder() -> None:
    # `"value1" value2"` may be two items, the second missing its opening quote: json-repair's
    # reading stands.
    assert delimit('["value1" value2", "value3"]') is None


def test_in_an_object_a_quote_then_a_space_and_a_word_that_is_no_key_is_inside() -> None:
    # A comma missing would need a key and its colon after the quote: `screen"` is none.
    assert _read('{"name": "5" screen"}') == {"name": '5" screen'}
    assert _read('{"name": "5" screen", "n": 1}') == {"name": '5" screen', "n": 1}
    assert delimit('{"name": "x" n: 1}') is None


@pytest.mark.parametrize(
    "text",
    [
        '{"key": ""value"}',  # right after the opening quote
        '{"a": "first, b: "second"}',  # after `: `: it opens a value, the string before is open
        '{"k": "a\\\\"b"}',  # after a backslash: JSON escaped inside a string
        '{"key": "value" /* comment',  # a comment may follow any value
        '{"key": "value"```',  # so may a fence that closes the JSON
    ],
)
def test_quotes_the_rule_leaves_to_the_decoder(text: str) -> None:
    assert delimit(text) is None


def test_a_string_cut_after_a_quote_inside_a_word_runs_to_the_end() -> None:
    assert _read('{"a": "it"s') == {"a": 'it"s'}


def test_a_string_whose_end_no_quote_can_be_is_left_to_the_decoder() -> None:
    # `x"y` is inside a word, but no later quote is followed by what ends a value in an object.
    assert delimit('{"a": "x"y", "b" "z" w}') is None


# -- unquoted values --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{name: widget price: 1.5}", {"name": "widget", "price": 1.5}),
        ("{name: big widget\nprice: 1.5}", {"name": "big widget", "price": 1.5}),
        ('{name: widget "unit price": 1.5}', {"name": "widget", "unit price": 1.5}),
        ("{a: 1 b: 2}", {"a": 1, "b": 2}),
        ("{url: see http://x.org/a, n: 1}", {"url": "see http://x.org/a", "n": 1}),
    ],
)
def test_an_unquoted_value_ends_at_the_next_key(text: str, expected: Any) -> None:
    """The next key, in unquoted text: whitespace (a line break too), a name (letters, digits,
    `_`, `$`, `-`, not starting with a digit) or a quoted name, then `:` (not `://`)."""
    assert outform.parse(text, level="full").data == expected


def test_an_unquoted_value_keeps_words_that_no_colon_follows() -> None:
    assert outform.parse("{name: big red widget}", level="full").data == {"name": "big red widget"}


def test_a_cut_list_of_unquoted_objects_keeps_each_member() -> None:
    reply = '{"items": [{name: item0 price: 1.5 tags: [x]},{name: item1 price: 1.5 tags: [x]}'
    result = outform.parse(reply, {"type": "object"}, level="full")
    assert result.data == {
        "items": [
            {"name": "item0", "price": 1.5, "tags": ["x"]},
            {"name": "item1", "price": 1.5, "tags": ["x"]},
        ]
    }
    assert "ended an unquoted value at the next key" in result.changes[-1].detail


# -- brackets ---------------------------------------------------------------------------------


def test_a_closer_of_the_wrong_kind_after_a_value_closes_the_innermost_container() -> None:
    result = outform.parse('{"a": {"x": "y"], "b": "zeta"}', {"type": "object"}, level="full")
    assert result.data == {"a": {"x": "y"}, "b": "zeta"}
    assert "read a ']' that closes nothing as the '}' of the object" in result.changes[-1].detail


def test_a_closer_written_twice_is_dropped_and_said() -> None:
    result = outform.parse('[{"k": "v"}},{"k": "w"}]', {"type": "array"}, level="full")
    assert result.data == [{"k": "v"}, {"k": "w"}]
    assert "written after a closer" in result.changes[-1].detail


# -- Markdown values --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            '{"body": **First, second**\n\nA paragraph.\n}',
            {"body": "**First, second**\n\nA paragraph."},
        ),
        ('{"body": *a note, nothing more*, "n": 1}', {"body": "*a note, nothing more*", "n": 1}),
        ('{"body": - milk\n- bread\n}', {"body": "- milk\n- bread"}),
        ("{body: **bold**, then plain, n: 2}", {"body": "**bold**, then plain", "n": 2}),
        ('{"body": # Title\ntext}', {"body": "# Title\ntext"}),
        ("[**a**, _b_]", ["**a**", "_b_"]),
    ],
)
def test_a_markdown_value_is_kept_whole_with_its_markers(text: str, expected: Any) -> None:
    delimited = _delimited(text)
    assert "Markdown" in delimited.detail
    assert pyjson5.decode(delimited.closed) == expected


def test_a_negative_number_is_no_markdown_list() -> None:
    assert delimit('{"n": -1}') is None
    assert _read('{"n": -1, "m": - 2}') == {"n": -1, "m": "- 2"}  # a bullet: a string


# -- the end of a cut reply -------------------------------------------------------------------


def test_a_string_cut_at_the_end_keeps_its_line_breaks() -> None:
    assert _read('{"a": "first line\n') == {"a": "first line\n"}
    assert _read('["a", "b\n\n') == ["a", "b\n\n"]


def test_a_string_cut_at_the_end_is_written_as_a_json_string() -> None:
    """Its escapes read as in any string: `\\/` is `/` (json-repair kept `\\/`); an escaped
    backslash ending the reply is one backslash."""
    delimited = _delimited('{"a": "x \\/ y \\\\')
    assert orjson.loads(delimited.closed) == {"a": "x / y \\"}
    assert "closed a string cut off at the end" in delimited.detail
    assert not delimited.escape


@pytest.mark.parametrize(
    ("text", "expected"),
    [('["a", "', ["a"]), ('{"a": 1, "b": "', {"a": 1}), ('{"a": ["', {})],
)
def test_a_string_cut_off_after_its_opening_quote_is_no_value(text: str, expected: Any) -> None:
    """Nothing of it was written: dropped with its key, as a key left without a value is."""
    delimited = _delimited(text)
    assert orjson.loads(delimited.closed) == expected
    assert "dropped the string cut off at the end before its first character" in delimited.detail


@pytest.mark.parametrize(
    ("text", "expected"),
    [('{"a": "hello}', {"a": "hello"}), ('{"a": ["x, y]}', {"a": ["x, y"]})],
)
def test_closers_ending_a_cut_string_end_it(text: str, expected: Any) -> None:
    """Closers that close what is open, and nothing after them: the closing quote was left
    out before them."""
    delimited = _delimited(text)
    assert orjson.loads(delimited.closed) == expected
    assert "closing quote was left out before a closer" in delimited.detail


@pytest.mark.parametrize(
    ("text", "expected"),
    [('{"s": "x} y', {"s": "x} y"}), ('{"s": "x}1', {"s": "x}1"}), ('["a]b', ["a]b"])],
)
def test_a_bracket_inside_a_cut_string_is_its_text(text: str, expected: Any) -> None:
    """Found by a new-user trial: json-repair ended the string at the bracket and dropped
    what followed (`y`, `1`), and the loss rule did not see it (it took the bracket for the
    region's end)."""
    delimited = _delimited(text)
    assert orjson.loads(delimited.closed) == expected
    assert outform.parse(text, level="full").data == expected


def test_a_cut_string_holding_a_member_is_left_to_the_decoder() -> None:
    """`{"a": "x, b: 1}`: maybe the quote left out before a member whose key is unquoted."""
    assert delimit('{"a": "x, b: 1}') is None
    assert delimit('{"a": "x\n`b`: 1}') is None


@pytest.mark.parametrize(
    "body", ["Note: the meeting is at 10:30\n\n", "a: \\n\\n", "see http://x.com/a"]
)
def test_a_colon_in_the_prose_of_a_cut_string_is_its_text(body: str) -> None:
    """Found by a new-user trial: any colon left the string to json-repair, which trims its
    final line breaks (`{"c": "a: \\n\\n` read as `a:`)."""
    expected = orjson.loads('"' + body.replace("\n", "\\n") + '"')
    assert outform.parse('{"c": "' + body, level="full").data == {"c": expected}


def test_what_json_repair_drops_after_a_bracket_in_a_cut_string_is_counted() -> None:
    """The region a decoder reads runs past a closer inside a string left open."""
    assert loss.region('{"s": "x} y') == '{"s": "x} y'
    assert loss.region('{"s": "x"} y') == '{"s": "x"}'
    with pytest.raises(outform.OutputError, match="discarded"):  # (json-repair: {"s": "x"})
        outform.parse('{"s": "x} y\nz: 1', level="full")


@pytest.mark.parametrize(
    ("text", "expected", "escape", "lost"),
    [
        ('{"a": "path C:\\', {"a": "path C:"}, "\\", 1),
        ('{"a": "x \\u00', {"a": "x "}, "\\u00", 2),
        ('{"a": "x\\ud83d', {"a": "x"}, "\\ud83d", 1),
        ('{"a": "x\\ud83d\\', {"a": "x"}, "\\ud83d\\", 1),
        ('{"a": "x\\ud83d\\ude', {"a": "x"}, "\\ud83d\\ude", 2),
        ('["\\„\\u', ["„"], "\\u", 1),
        ('["a", "b\\\\\\', ["a", "b\\"], "\\", 1),  # an escaped backslash, then one begun
        ('["\\\\ud83d\\u', ["\\ud83d"], "\\u", 1),  # `\\ud83d` is text there
    ],
)
def test_an_escape_cut_off_at_the_end_is_dropped_and_counted(
    text: str, expected: Any, escape: str, lost: int
) -> None:
    """Found by a trial: `{"a": "path C:\\` (a reply cut at the token limit) kept the backslash,
    a character the reply never wrote: it had begun an escape (`\\\\`, `\\n`, `\\"`, ...)
    whose character is not known. An escape the end cut short (a backslash alone, `\\u` and
    fewer than four digits, half of a surrogate pair) is dropped, said in the detail and
    counted in `lost` (what the loss rule counts of it, at least 1), as the stream parser,
    which shows no escape before it is whole, showed it. (Before, `\\u` cut short gained a
    quote, `„\\u"`, and half a surrogate pair refused the whole reply.)"""
    delimited = _delimited(text)
    assert delimited.escape == escape
    result = outform.parse(text, level="full")
    assert result.data == expected
    (change,) = result.changes
    assert f"dropped the escape {escape} cut off at the end" in change.detail
    assert change.lost == lost
    assert result.lossy


@pytest.mark.parametrize(
    ("text", "expected"),
    [('{"a": 1, "b": "\\', {"a": 1}), ('["x", "\\u0', ["x"]), ('{"a": "\\', {})],
)
def test_a_string_holding_only_an_escape_cut_off_is_no_value(text: str, expected: Any) -> None:
    """Without the escape nothing of the string was written: dropped with its key, as a string
    of which only the opening quote was written is."""
    result = outform.parse(text, level="full")
    assert result.data == expected
    assert "dropped the string cut off at the end before its first character" in (
        result.changes[0].detail
    )
    assert result.lossy


def test_an_escape_cut_off_is_what_the_stream_shows_none_of() -> None:
    """The stream parser shows a string to its last whole escape; the final parse agrees."""
    from outform.streaming import StreamParser

    parser: StreamParser[Any] = StreamParser(
        {"type": "object", "properties": {"a": {"type": "string"}}}, level="full"
    )
    shown = [
        snapshot.data for chunk in ('{"a": "path', " C:", "\\") for snapshot in parser.feed(chunk)
    ]
    assert shown[-1] == {"a": "path C:"}
    assert parser.finish().data == {"a": "path C:"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [('{"s": "x", "t": tru', {"s": "x"}), ("[1, fal", [1]), ('["a", n', ["a"])],
)
def test_a_literal_cut_off_at_the_end_is_dropped(text: str, expected: Any) -> None:
    """As a cut number is (json-repair made `tru` the string "tru")."""
    result = outform.parse(text, level="full")
    assert result.data == expected
    assert "dropped the literal" in result.changes[0].detail
    assert result.lossy


def test_a_key_cut_off_at_the_end_is_absent_whatever_it_holds() -> None:
    """Found by a new-user trial: a cut key holding a colon was read as a member."""
    assert outform.parse('{"title": "x", "n": {"note: see', level="full").data == {"title": "x"}


@pytest.mark.parametrize(
    "text",
    [
        '{"name": "Ana", "nick":',
        '{"name": "Ana", "nick": ',
        '{"name": "Ana", "nick"',
        '{"name": "Ana", "ni',
    ],
)
def test_a_key_left_without_a_value_at_the_end_is_dropped(text: str) -> None:
    delimited = _delimited(text)
    assert orjson.loads(delimited.closed) == {"name": "Ana"}
    assert "without a value" in delimited.detail


def test_a_nested_key_left_without_a_value_is_dropped_from_its_object() -> None:
    assert _read('{"user": {"name": "Ana", "age":') == {"user": {"name": "Ana"}}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"name": "Rivet", "tags": ["a", "b", {"x": 1', {"name": "Rivet", "tags": ["a", "b"]}),
        ('{"name": "Rivet", "dims": {"w": 12', {"name": "Rivet"}),
        ('{"a": {"b": {"c":', {}),
        ("[1, [2", [1]),
    ],
)
def test_a_container_left_empty_by_what_the_end_dropped_is_dropped_too(
    text: str, expected: Any
) -> None:
    """No `{}` the reply never wrote: the container goes with its key."""
    delimited = _delimited(text)
    assert orjson.loads(delimited.closed) == expected
    assert "left empty" in delimited.detail


def test_the_pipeline_drops_a_cut_item_whole_and_counts_it_lost() -> None:
    schema = {
        "type": "object",
        "properties": {"tags": {"type": "array", "items": {"type": "string"}}},
    }
    result = outform.parse('{"name":"Rivet","tags":["a","b",{"x": 1', schema, level="full")
    assert result.data == {"name": "Rivet", "tags": ["a", "b"]}
    assert result.lossy


def test_a_container_that_keeps_something_stays() -> None:
    assert _read('{"user": {"name": "Ana", "age": 4') == {"user": {"name": "Ana"}}


def test_the_first_key_left_alone_leaves_an_empty_object() -> None:
    assert _read('{"name":') == {}


@pytest.mark.parametrize(
    ("text", "read", "key"),
    [
        ('{"a": "b", "c": , "m": 1}', {"a": "b", "m": 1}, '"c"'),
        ('{"c": , "m": 1}', {"m": 1}, '"c"'),
        ('{"name": "Ana", "nick": }', {"name": "Ana"}, '"nick"'),
        ('{"c":}', {}, '"c"'),
        ('{"a": {"c": }, "b": 1}', {"a": {}, "b": 1}, '"c"'),
        ('{"c": // none\n , "m": 1}', {"m": 1}, '"c"'),
        ("{c: , m: 1}", {"m": 1}, "c"),
    ],
)
def test_a_key_whose_member_ends_after_its_colon_is_dropped(text: str, read: Any, key: str) -> None:
    """Never given `""` (json-repair's reading): what is dropped is kept for the loss rule."""
    delimited = _delimited(text)
    assert pyjson5.decode(delimited.closed) == read
    assert "without a value" in delimited.detail
    (dropped,) = delimited.dropped
    assert key in dropped


# -- comments ---------------------------------------------------------------------------------


def test_quotes_inside_comments_are_not_strings() -> None:
    assert delimit('{\n  "a": 1, // don\'t\n  "b": 2\n}') is None


# -- through the pipeline ---------------------------------------------------------------------


def test_the_pipeline_reads_a_triple_quoted_value_at_level_full() -> None:
    result = outform.parse('{"code": """\n    x = "y"\n"""}', CODE, level="full")
    assert result.value == {"code": 'x = "y"'}
    assert "rewrote" in result.changes[-1].detail


def test_the_pipeline_reads_a_backtick_value_at_level_full() -> None:
    result = outform.parse('{"code": `a "q" b`}', CODE, level="full")
    assert result.value == {"code": 'a "q" b'}


def test_the_pipeline_records_what_it_delimited() -> None:
    result = outform.parse('["alpha", "it"s broken", "omega"]', TEXTS, level="full")
    assert result.data == ["alpha", 'it"s broken', "omega"]
    (change,) = result.changes
    assert change.stage == "tolerant"
    assert "quotes inside a string" in change.detail
    assert not result.lossy


def test_a_cut_reply_keeps_the_end_of_its_string_through_the_pipeline() -> None:
    schema = {"type": "object", "properties": {"log": {"type": "string"}}}
    result = outform.parse('{"log": "line 1\nline 2\n', schema, level="full")
    assert result.data == {"log": "line 1\nline 2\n"}
    assert "closed 1 bracket" in result.changes[-1].detail


def test_a_key_without_a_value_at_the_end_is_absent_so_a_required_field_is_reported() -> None:
    with pytest.raises(outform.OutputError) as caught:
        outform.parse('{"title": "T", "count":', NOTE, level="full")
    assert "count" in str(caught.value)


def test_a_key_without_a_value_at_the_end_gets_its_declared_default() -> None:
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "nick": {"type": ["string", "null"]}},
        "required": ["name"],
    }
    result = outform.parse('{"name": "Ana", "nick":', schema, level="full")
    assert result.data == {"name": "Ana"}
    schema["properties"]["nick"]["default"] = None  # type: ignore[index]
    result = outform.parse('{"name": "Ana", "nick":', schema, level="full")
    assert result.data == {"name": "Ana", "nick": None}
    assert [c.transform for c in result.changes] == ["json_repair", "fill_default"]


def test_a_closer_of_the_wrong_kind_after_text_left_to_the_decoder_is_copied() -> None:
    # `z"` is text the pass did not delimit: it does not know what the `]` closes.
    delimited = delimit('{"a":"x}``` [1,"z"]\n","b":"y"}')
    assert delimited is None or "closes nothing" not in delimited.detail


# -- a key without a value, through the pipeline ----------------------------------------------

FIELDS: dict[str, Any] = {
    "a": {"type": "string"},
    "c": {"type": "string"},
    "m": {"type": "integer"},
}
LABELLED = {"type": "object", "properties": FIELDS}


def test_a_key_without_a_value_is_absent_not_an_empty_string() -> None:
    """json-repair reads `"c": ,` as `"c": ""`, a value the reply never wrote."""
    result = outform.parse('{"a": "b", "c": , "m": 1}', LABELLED, level="full")
    assert result.data == {"a": "b", "m": 1}
    assert result.lossy
    (change,) = result.changes
    assert change.lost == 1  # the key's one letter
    assert "dropped the key 'c' left without a value" in change.detail


def test_a_key_without_a_value_inside_the_object_gets_its_declared_default() -> None:
    schema = {**LABELLED, "properties": {**FIELDS, "c": {"default": "dflt"}}}
    result = outform.parse('{"a": "b", "c": , "m": 1}', schema, level="full")
    assert result.data == {"a": "b", "m": 1, "c": "dflt"}
    assert [c.transform for c in result.changes] == ["json_repair", "fill_default"]


def test_a_required_key_without_a_value_inside_the_object_is_reported_missing() -> None:
    schema = {"type": "object", "properties": {"c": {"type": "integer"}}, "required": ["c"]}
    with pytest.raises(outform.OutputError) as caught:
        outform.parse('{"a": "b", "c": , "m": 1}', schema, level="full")
    (violation,) = caught.value.hint.violations
    assert violation.kind == "missing"
    assert '""' not in violation.line()


def test_a_closed_object_with_a_key_without_a_value_lacks_that_key() -> None:
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "nick": {"type": "string"}},
        "additionalProperties": False,
    }
    result = outform.parse('{"name": "Ana", "nick": }', schema, level="full")
    assert result.data == {"name": "Ana"}
    assert result.lossy


@pytest.mark.parametrize("chunk", [1, 2, 3, 5, 8])
def test_a_long_body_rewritten_in_chunks_is_the_body_rewritten_at_once(
    monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    """The deadline is read between chunks of a string body; a chunk never ends inside an
    escape (a run of backslashes is cut only after an even number of them)."""
    from outform.parse import delimit as module
    from outform.parse.context import Deadline

    bodies = ["\\\\\\\\\\n" * 5, 'a\\"b\\\\"c', "\\u00e9\\'x\\", "é\n\t\\x41" * 3, "\\" * 9]
    whole = [module._as_json_string(body) for body in bodies]
    monkeypatch.setattr(module, "_CHUNK", chunk)
    assert [module._as_json_string(body, Deadline.never()) for body in bodies] == whole


@pytest.mark.parametrize(
    "reply",
    [
        '{"a": 1, // c\n "m": {"b": 2}, "s": NaN',
        '{\'a\': 1, "m": {"b": 2}, "s": NaN',
        '{"a": "\\d", "m": {"b": 2}, "s": NaN',
    ],
)
def test_a_piece_of_a_cut_document_is_not_its_answer(reply: str) -> None:
    """Found by a new-user trial: when no reading of a reply cut off worked, an object found
    inside it (after the point where it stops reading as strict JSON) was returned as the
    answer, the rest of the document left out without a word. It is read as a piece of the
    document, under the loss rule."""
    with pytest.raises(outform.OutputError, match="one region of the broken JSON document"):
        outform.parse(reply, level="full")
