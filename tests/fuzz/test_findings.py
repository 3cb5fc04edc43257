"""The big run's findings, each kept as a regular test through the same checks (seeds of
`python -m benchmarks.bench_fuzz`). A stream stop is judged as `check_stream` judges it: the
value it followed must be doomed on its own."""

from __future__ import annotations

from typing import Any

import pytest

import outform
from outform.errors import OutputError, StreamAbortedError
from outform.gateway.checks import CheckSettings, check_reply
from outform.streaming import StreamParser
from tests.fuzz.checks import _json_starts, check_parse, check_stream
from tests.fuzz.grammar import Case

ONE_OF_NUMBERS = {"oneOf": [{"type": "integer"}, {"type": "number"}]}
CODES = {
    "type": "array",
    "items": {"anyOf": [{"const": "fixed"}, {"type": "string", "pattern": "^[a-z]+$"}]},
    "minItems": 2,
}
NUMBER_OR_OBJECT = {"oneOf": [{"type": "number"}, {"type": "object", "additionalProperties": {}}]}
NUMBERS = {"type": "array", "items": {"type": "number"}, "minItems": 1}
OBJECT = {"type": "object"}
TWO_OR_MORE = {
    "anyOf": [
        {"type": "array", "items": {"type": "string", "minLength": 2, "maxLength": 5}},
        {"type": "object", "additionalProperties": {"type": "string", "minLength": 2}},
    ]
}
OBJECTS_OF_TEXT = {
    "type": "array",
    "items": {"type": "object", "additionalProperties": {"type": "string", "minLength": 2}},
}
FENCED_MINUS_ZERO = (
    '````\n[{}, {"a": -0}]\nSure!  ```text [] ```\n- item\n- item ```js [{}, {"b": null\n}, {}]'
    " ```\n# Result\n ~~~JSON [01] ~~~\n```\n[{ /* end */}, {},]\n```"
)
NAMED = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {"Name": {"type": "integer"}},
        "required": ["Name"],
    },
}


@pytest.mark.parametrize("level", ["minimal", "full"])
def test_an_integer_beyond_64_bits_under_one_of_is_refused(level: str) -> None:
    """Seeds 61555, 123931: the fast path returned orjson's float for `2**64`."""
    outcome = check_parse(Case("hostile_schemas", "18446744073709551616", ONE_OF_NUMBERS), level)
    assert outcome[0] == "OutputError"


STREAMED: list[tuple[Case, str, list[int]]] = [
    # seed 50066: at full, `""` followed by `"fixed"""` is one triple-quoted string
    (Case("fences", '``json\n["""fixed""", "fixed"]', CODES), "full", [2, 4, 7, 9, 24, 26, 29]),
    (Case("fences", '``json\n["""fixed""", "fixed"]', CODES), "full", [10, 29]),
    # seed 51076: the pipeline reads the regions inside a string that is the whole reply
    (
        Case("stray_brackets", '"3/4 [772] {} Use { or [ here. }{]{{ ["d`a4', NUMBER_OR_OBJECT),
        "full",
        [43],
    ),
    (Case("stray_brackets", '"see {} here" 1', NUMBER_OR_OBJECT), "minimal", [5, 14, 16]),
    # seeds 108050, 127922: a first value the pipeline cannot read stops the stream at minimal
    # (the first value decides), and the check reads JSON as outform does: no `1e400`, no `01`
    (Case("fences", "````json\n[1e400]\n````\n[26.5]", NUMBERS), "minimal", [21, 30]),
    (Case("fences", "````JSON\n01\n````\n~~~json\n{}\n~~~", OBJECT), "minimal", [19, 31]),
    # seeds 30150196, 30745634 (the third big run): `-0` where a string of 2 or more goes is
    # "-0" to the pipeline (the literal), "0" to the stream's checker, which stopped on it
    (Case("stray_brackets", "[-0] ]{[ {}", TWO_OR_MORE), "minimal", [3, 4, 11]),
    (
        Case("fences", FENCED_MINUS_ZERO, OBJECTS_OF_TEXT),
        "minimal",
        [2, 5, 6, 9, 10, 21, 36, 39, 71, 74, 75, 95, 97, 104, 107, 142],
    ),
]


@pytest.mark.parametrize(("case", "level", "cuts"), STREAMED)
def test_the_stream_stops_only_on_a_value_that_decides_the_reply(
    case: Case, level: str, cuts: list[int]
) -> None:
    check_stream(case, level, cuts, check_parse(case, level))


@pytest.mark.parametrize(
    ("chunks", "stops"),
    [
        (['["', '""fixed""", "fixed"]'], False),
        (['[""', '"fixed""", "fixed"]'], False),
        (['[""', ", "], True),  # a comma confirms the empty string
    ],
)
def test_at_full_a_closing_quote_decides_once_what_follows_confirms_it(
    chunks: list[str], stops: bool
) -> None:
    parser: StreamParser[Any] = StreamParser(CODES, level="full")
    try:
        for chunk in chunks:
            parser.feed(chunk)
    except StreamAbortedError:
        assert stops
        return
    assert not stops
    assert parser.finish().data == ["fixed", "fixed"]


def test_a_union_branch_repairs_only_into_a_value_of_its_own() -> None:
    """Seed 56066: dropping `code` (the first branch's `additionalProperties: false`) gave `{}`,
    which only the second branch takes; the stream, which follows branches one by one, had
    (rightly) given both up. The first value is refused; the reply's next one is the answer.
    (The seed's block was tagged `text`: a block of code, no answer beside the object in the
    prose; untagged here, it holds the answer.)"""
    schema = {
        "anyOf": [
            {
                "type": "object",
                "properties": {"price": {"const": "fixed"}},
                "required": ["price"],
                "additionalProperties": False,
            },
            {"type": "object", "additionalProperties": {"type": "boolean"}},
        ]
    }
    text = '{"code": "~~~python\\nx = 1\\n~~~"}\n````\n{}\n```json title=x\n{}'
    case = Case("fences", text, schema)
    expected = check_parse(case, "minimal")
    assert expected[0] == "ok"
    assert "value 2 of 3" in str(expected[1][1])
    check_stream(case, "minimal", [3, 4, 7, 11, 12, 21, 23, 26, 28, 30, 64], expected)
    with pytest.raises(OutputError):
        outform.parse('{"code": "x"}', schema, level="full")


@pytest.mark.parametrize(
    ("case", "level", "cuts"),
    [
        # seed 248217: json-repair reads `[{}, {` cut off here as `[{}]`, one item
        (
            Case(
                "broken_json",
                "[{}, {",
                {"type": "object", "additionalProperties": {"type": "array"}},
            ),
            "full",
            [1, 3, 6],
        ),
        # seed 85636: and `[{}` as `[]`
        (Case("stray_brackets", '[{}, {"Name": 7}]', NAMED), "full", [1, 2, 3, 17]),
    ],
)
def test_at_full_a_cut_off_array_is_read_as_json_repair_reads_it(
    case: Case, level: str, cuts: list[int]
) -> None:
    check_stream(case, level, cuts, check_parse(case, level))


def test_a_json5_integer_too_long_to_write_out_is_refused() -> None:
    """Seed 142117: pyjson5 reads hexadecimal `0x1F99…` (3,800 digits) as an integer over
    Python's 4,300-digit limit for writing it out, which the loss rule then wrote: a crash."""
    text = "0x1F" + "9" * 3800
    for level in ("minimal", "full"):
        assert check_parse(Case("huge_numbers", text, {}), level)[0] == "OutputError"


def test_the_gateway_check_writes_a_repaired_integer_beyond_64_bits_digit_for_digit() -> None:
    """Found by the big run: the repaired reply was written with orjson, whose TypeError for
    such an integer became a 500 in enforcement mode."""
    reply = "<think>Let me see... {</think>\n12345678901234567890123"
    fmt = {"type": "json_schema", "name": "x", "schema": {"type": "integer"}}
    verdict = check_reply(reply, fmt, CheckSettings("minimal", 5.0), False)
    assert verdict.kind == "repaired"
    assert verdict.text == "12345678901234567890123"


NAME_NAME = {
    "type": "object",
    "properties": {"name": {"type": "object", "properties": {"name": {"type": "integer"}}}},
}
B_INTEGER = {"type": "object", "properties": {"b": {"type": ["integer", "null"]}}}

_PAST_64 = "\nThat is the first answer; a second one follows, as the prompt asked.\n"
"""Prose after a first value holding an escape: whether a value looks escaped (and is read
unescaped, as the pipeline does) is decided from its first 64 characters, so the stream's
verdict on that value waits for them (docs/streaming.md, "Early stop")."""

FIRST_VALUES: list[tuple[Case, list[int], str, str]] = [
    # seed 154706: an escaped lone surrogate (half of a UTF-16 pair: no Unicode text holds it)
    (
        Case("fences", '```JSON\n"no\\ud800"\n```\n~~~json\n7.125\n~~~', {}),
        [],
        "syntax",
        '"no\\ud800"',
    ),
    # seed 249746: `0x1F` is one word, and no JSON number (only `full` reads JSON5's hexadecimal)
    (Case("fences", "```json\n0x1F\n```\n{}", {}), [], "syntax", "0x1F"),
    # seeds 446883, 579512: a lone low surrogate inside the first object
    (
        Case(
            "reasoning",
            '{"a": ["\\udc00"]}' + _PAST_64 + '<thought>x</thought> {"a": {"b": 1}}',
            OBJECT,
        ),
        [3],
        "syntax",
        '{"a": ["\\udc00"]}',
    ),
    (
        Case("mixed_prose", '{"b": "1,234\\udc00"}' + _PAST_64 + 'Sure! {"b": "null"}', B_INTEGER),
        [31],
        "syntax",
        '{"b": "1,234\\udc00"}',
    ),
    # seed 836980: "1,234" is refused (its meaning depends on the locale), and the chunk that
    # completes it breaks the JSON after it: the value alone ends where its brackets balance,
    # before the `[}{}` the pipeline reads `{}` from
    (
        Case("stray_brackets", '{"name": {"name": "1,234"},, x} [}{}', NAME_NAME),
        [20],
        "schema",
        '{"name": {"name": "1,234"},, x}',
    ),
]


@pytest.mark.parametrize(("case", "splits", "reason", "first"), FIRST_VALUES)
def test_a_first_value_outform_does_not_read_stops_the_stream_at_minimal(
    case: Case, splits: list[int], reason: str, first: str
) -> None:
    """`parse` skips the reply's first value and takes a later one; the stream stops on the
    first (the first value decides: docs/streaming.md, "Limits"), which is right because that
    value alone is refused at `minimal`, by the reading the stream parser, the pipeline and the
    check share: JSON as orjson reads it, a number or literal read as the whole word it
    begins. The big run's check read these values as valid (the standard library's reader
    takes lone surrogates and the `0` of `0x1F`; the schema stop was judged with the values
    after the broken one)."""
    cuts = [*splits, len(case.text)]
    expected = check_parse(case, "minimal")
    assert expected[0] == "ok"
    assert check_parse(Case(case.family, first, case.schema), "minimal")[0] == "OutputError"
    parser: StreamParser[Any] = StreamParser(case.schema, level="minimal", degeneration=None)
    with pytest.raises(StreamAbortedError) as stopped:
        for start, end in zip([0, *cuts], cuts, strict=False):
            parser.feed(case.text[start:end])
    assert stopped.value.reason == reason
    for chunking in (cuts, list(range(1, len(case.text) + 1))):
        check_stream(case, "minimal", chunking, expected)


@pytest.mark.parametrize("level", ["off", "minimal", "full"])
@pytest.mark.parametrize(
    ("text", "schema"),
    [
        ("1,234", {"type": "integer"}),
        ('"1,234"', {"type": "number"}),
        ('{"b": "1,234"}', B_INTEGER),
        ('{"name": {"name": "1,234"}}', NAME_NAME),
    ],
)
def test_a_locale_number_is_refused_alike_by_parse_and_the_stream(
    text: str, schema: dict[str, Any], level: str
) -> None:
    """`1,234` is 1234 or 1.234 by locale: refused, whether the reply is the bare number, a
    string or a field; the stream ends as `parse` does, or stops earlier on that value."""
    case = Case("mixed_prose", text, schema)
    expected = check_parse(case, level)
    assert expected[0] == "OutputError"
    if level != "off":  # (no coercion at off: the plain type error)
        assert "groups thousands or marks decimals by locale" in expected[1]
    for cuts in ([len(text)], list(range(1, len(text) + 1))):
        check_stream(case, level, cuts, expected)


@pytest.mark.parametrize(
    "text",
    [
        *("0x1F", "7apples", "01", "1e5x", "trueish", "1e400", "1e-400", "NaN", "-Infinity"),
        *('"\\ud800"', '["\\udc00"]', "[0x1F]", "[1,]"),
        *("true", "-0", "1.5e3", "18446744073709551616", '"a\\ud83d\\ude00"', '[1, {"b": null}]'),
    ],
)
def test_the_check_reads_a_value_as_the_pipeline_does(text: str) -> None:
    """One reading of "a JSON value starts here" for the check and the pipeline; the stream
    parser stops on a JSON block at `minimal` only where neither reads one (it passes over a
    block that does not start like a value, `NaN`, as prose)."""
    read = check_parse(Case("fences", text, {}), "minimal")[0] == "ok"
    assert _json_starts(text, 0) is read
    stream: StreamParser[Any] = StreamParser({}, level="minimal", degeneration=None)
    try:
        stream.feed("```json\n" + text + "\n```\n")
    except StreamAbortedError as stop:
        assert stop.reason == "syntax"
        assert not read


@pytest.mark.parametrize("level", ["off", "minimal", "full"])
def test_an_escaped_lone_surrogate_beside_an_integer_beyond_64_bits_is_refused(level: str) -> None:
    """orjson refuses `"\\ud800"`; a text it refuses that also holds a long integer is read
    again exactly, by the standard library, which takes the lone surrogate: that reading is
    refused too, so the validator is never handed text that is not Unicode (it was an
    InternalError)."""
    for reply, schema in [
        ('["\\ud800x", 18446744073709551616, "\\ud800x"]', {"type": "integer"}),
        ('["\\ud800x", 18446744073709551616, "\\ud800x"]', {"type": "array"}),
        ('{"a": "\\ud800", "b": 18446744073709551616, "c": 1}', {"type": "object"}),
    ]:
        with pytest.raises(OutputError):
            outform.parse(reply, schema=schema, level=level)


def _seed_case(seed: int, n: int) -> tuple[Case, str, list[int]]:
    from benchmarks.bench_fuzz import kind_of, level_of

    from tests.fuzz.grammar import FAMILIES, RandomSource, chunking

    source = RandomSource(seed)
    case = FAMILIES[kind_of(seed)](source, n)
    return case, level_of(seed), chunking(source, len(case.text))


@pytest.mark.parametrize(("seed", "n"), [(4781, 19), (73013, 45), (26165, 11), (27125, 53)])
def test_a_run_of_openers_past_max_depth_ends_the_stream_as_parse(seed: int, n: int) -> None:
    """Seeds 4781 (json-repair closed ~400 `[` the extraction read as prose, and orjson could
    not write the value: an InternalError), 73013, 26165, 27125 (the stream refused the run
    as too deep at its 201st `[`, where parse read it as prose). A tolerant reading deeper
    than max_depth is refused by the depth rule; the stream judges the run once it ends."""
    case, level, cuts = _seed_case(seed, n)
    expected = check_parse(case, level)
    check_stream(case, level, cuts, expected)
    check_stream(case, level, [len(case.text)], expected)
    if seed == 4781:
        assert expected[0] == "InputError" and "max_depth" in expected[1]


@pytest.mark.parametrize("level", ["off", "minimal", "full"])
@pytest.mark.parametrize(
    "text",
    [
        "[" * 230 + "1",
        "[" * 230 + " hello",
        "[" * 230 + "\n",
        "[" * 230 + "tru",
        "{" * 230 + "key: 1",
        "{" * 230 + "key is",
        "[" * 150 + " hello " + "[" * 100 + "1",
        "Here: ```json\n" + "[" * 230 + " x\n```",
        'Here: [1 2 " ```json\n' + "[" * 230 + "1\n```",
        "<think>a [</think>" + "[" * 230 + "1",
        "[" * 230 + ' hi {"a": 1}',
        "[ [ [ " * 80 + "x",
        "[{" * 120 + '"a": 1',
    ],
)
def test_a_deep_run_of_openers_is_judged_alike_by_parse_and_the_stream(
    text: str, level: str
) -> None:
    """The rule (docs/pipeline.md, Limits): a run of openers counts toward `max_depth` when
    what follows it can begin JSON, as the extraction judges it; followed by prose it is
    prose, however long. The stream decides only once the run has ended, at any chunking."""
    for schema in ({}, OBJECT, {"type": "array"}):
        case = Case("deep_nesting", text, schema)
        expected = check_parse(case, level)
        for size in (1, 7, len(text)):
            check_stream(case, level, [*range(size, len(text), size), len(text)], expected)


@pytest.mark.parametrize(
    ("text", "schema"),
    [
        # wrap_in_array over a value 200 deep (seed 953, n 10)
        ('{"a": ' * 200 + "1" + "}" * 200, {"type": "array"}),
        ("x [" + "[" * 199 + "]" * 199 + "] y [1]", {"type": "array"}),  # gathered
        ('{"a": "' + "[" * 220 + "1" + "]" * 220 + '"}', {"properties": {"a": {"type": "array"}}}),
    ],
)
def test_a_stage_never_returns_a_value_deeper_than_max_depth(text: str, schema: Any) -> None:
    """A value a stage makes deeper than the text it read (wrapped in an array, gathered into
    a list, read out of a string) is refused by the depth rule, naming the limit."""
    outcome = check_parse(Case("deep_nesting", text, schema), "full")
    assert outcome[0] == "InputError" and "max_depth" in outcome[1]


def test_seed_953_a_wrapped_value_past_max_depth_is_refused() -> None:
    """Seed 953, n 10: a value 200 deep in prose, wrapped in an array for an array schema,
    came back 201 deep."""
    case, level, cuts = _seed_case(953, 10)
    expected = check_parse(case, level)
    assert expected[0] == "InputError" and "max_depth" in expected[1]
    check_stream(case, level, cuts, expected)


ONE_OBJECT = {"type": "object", "additionalProperties": {"type": "string"}}
OBJECTS = {"type": "array", "items": {"type": "object"}}


@pytest.mark.parametrize(
    ("text", "cuts"),
    [
        ('[{"price": "n/a"}, {"é": ', [1, 25]),  # seed 367593: the reply ends there
        ('[{}, {"tag', [3, 4, 7, 10]),  # seed 127977, cut where the stream stopped
        ('[{"a": "b"}, {"c": {"d": 1', [1, 12, 24]),  # seed 337209: a number cut off inside
    ],
)
def test_at_full_an_item_counts_against_the_limit_once_it_is_whole(
    text: str, cuts: list[int]
) -> None:
    """Seeds 127977, 337209, 367593: an object wanted, an array given, the one item it may
    hold (to be unwrapped) passed by a second the reply is cut off inside. json-repair drops
    that item (a key without a value, a number that may have been longer, then the object
    they leave empty), so the reply cut off there is valid: the stream may not stop on it."""
    case = Case("broken_json", text, ONE_OBJECT)
    expected = check_parse(case, "full")
    assert expected[0] == "ok"
    check_stream(case, "full", [*cuts, len(text)], expected)


def test_at_full_an_item_passing_the_limit_still_stops_the_stream_once_whole() -> None:
    """The rule delays the stop to the item's end; it does not drop it."""
    text = '[{"a": "b"}, {"c": "d"}, ' + '{"e": "f"}, ' * 100 + "]"
    parser: StreamParser[Any] = StreamParser(ONE_OBJECT, level="full", degeneration=None)
    with pytest.raises(StreamAbortedError) as stopped:
        for at in range(0, len(text), 8):
            parser.feed(text[at : at + 8])
    assert stopped.value.reason == "schema" and stopped.value.offset <= 40
    assert "at most 1 items" in str(stopped.value)


def test_at_full_a_number_the_received_text_ends_with_confirms_nothing() -> None:
    """Seed 434116: `[ 0.1e99 ` for a list of objects. At full, json-repair drops a number
    only whitespace follows at the end of a cut-off reply (it may have been longer), so
    the stop waits for a character that is no digit (as for a quote or a bracket). The parse
    refuses the reply: `[{}, {}]` from the regions inside it would drop the number the reply
    wrote at [0] (see docs/pipeline.md, Loss)."""
    case = Case("stray_brackets", "[ 0.1e99 [{} {}] [{}] done.", OBJECTS)
    expected = check_parse(case, "full")
    assert expected[0] == "OutputError"
    check_stream(case, "full", [9, 12, len(case.text)], expected)
    parser: StreamParser[Any] = StreamParser(OBJECTS, level="full", degeneration=None)
    parser.feed("[ 0.1e99 ")
    with pytest.raises(StreamAbortedError):
        parser.feed(", {}, ")


@pytest.mark.parametrize(("seed", "n", "outcome"), [(501892, 8, "OutputError"), (256515, 6, "ok")])
def test_a_first_value_that_is_not_json_stops_the_stream_at_minimal(
    seed: int, n: int, outcome: str
) -> None:
    """Seed 501892: a schema violation met in the chunk where the first value also broke as
    JSON (`[["I'd say MEDIUM, yes"] "E…`): below `full` a stream stops on either, and the
    check judges that stop as a syntax stop. (The pipeline read the regions inside the broken
    value as it reads prose, and answered `[]`; the reply is one document left open, whose
    pieces read alone now fall under the loss rule, and it is refused.) Seed 256515: `1e-400`
    is no number outform reads (a float cannot hold it), so the value after
    `<thought>…</thought>` that holds it is not JSON; the check read it with orjson, which
    reads 0."""
    case, level, cuts = _seed_case(seed, n)
    assert level == "minimal"
    expected = check_parse(case, level)
    assert expected[0] == outcome
    with pytest.raises(StreamAbortedError):
        parser: StreamParser[Any] = StreamParser(case.schema, level=level, degeneration=None)
        for start, end in zip([0, *cuts], cuts, strict=False):
            parser.feed(case.text[start:end])
    check_stream(case, level, cuts, expected)


def test_a_tentative_value_nested_past_max_depth_is_read_no_further(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Seeds 452933, 496613: words, then `{"a": {"a": …` 6,000 levels deep. The parser read
    it again from each of its brackets (each a value nested all but one level as deep, 200
    levels each time), and the stream ran into the 5 s time_limit where parse took 0.02 s.
    It now stops following the value, as it does for a value that is not tentative, and
    the final parse decides. Counted, not timed: values the parser starts to follow."""
    from outform.parse import partial

    started: list[int] = []
    start_container = partial.PartialParser._start_container

    def counting(self: partial.PartialParser, at: int, *, tentative: bool) -> None:
        started.append(at)
        start_container(self, at, tentative=tentative)

    monkeypatch.setattr(partial.PartialParser, "_start_container", counting)
    depth = 1000
    text = "Use it: " + '{"a": ' * depth + "1" + "}" * depth
    case = Case("deep_nesting", text, {"type": "object"})
    expected = check_parse(case, "minimal")
    assert expected[0] == "InputError" and "max_depth" in expected[1]
    started.clear()
    check_stream(case, "minimal", [*range(16, len(text), 16), len(text)], expected)
    assert started == [len("Use it: ")]


def test_seed_5007889_a_hexadecimal_integer_past_4300_digits_is_measured() -> None:
    """Seed 5007889 (a sweep after the big run): the loss measure wrote a hexadecimal word of
    4,200 digits in decimal to count its digits, and Python refuses to write an integer of more
    than 4,300: an InternalError. Its digits are now counted without writing it."""
    from outform.parse.loss import decimal_digits

    case, level, cuts = _seed_case(5007889, 2)
    expected = check_parse(case, level)
    assert expected[0] == "OutputError"
    check_stream(case, level, cuts, expected)
    assert decimal_digits(16**4000) == 4817 and decimal_digits(0) == decimal_digits(9) == 1


def test_seed_26790_a_long_open_string_of_escapes_is_measured_in_one_pass() -> None:
    """Seed 26790 (the growth phase of the second big run): the loss measure removed strings
    with a pattern that needed the closing quote, so a long string left open was tried again
    from each of its later quotes, the square of its length (200 KB: 28 s past the 5 s
    time_limit). Every match now consumes its text: the open string is one match."""
    from outform.parse.loss import _QUOTED

    text = '{"a": "' + '\\"x\\" ' * 1000
    assert [m.span() for m in _QUOTED.finditer(text)] == [(1, 4), (6, len(text))]
    case, level, cuts = _seed_case(26790, 442)
    expected = check_parse(case, level)
    check_stream(case, level, cuts, expected)


def test_an_integer_written_with_an_exponent_past_2_53_keeps_its_digits() -> None:
    """Seed 30051985 (the third big run): `-99…91E+2` is the integer it writes (the exact
    reading of docs/pipeline.md#values), not the float a plain reader rounds it to."""
    literal = "-" + "9" * 78 + "1E+2"
    outcome = check_parse(Case("huge_numbers", literal, {"type": "number"}), "minimal")
    assert outcome == ("ok", (("int", -int("9" * 78 + "1") * 100), ()))
