"""The big run's findings, each kept as a regular test through the same checks (seeds of
`python -m benchmarks.bench_fuzz`). A stream stop is judged as `check_stream` judges it: the
value it followed must be doomed on its own."""

from __future__ import annotations

from typing import Any

import pytest

from outform.errors import StreamAbortedError
from outform.streaming import StreamParser
from tests.fuzz.checks import check_parse, check_stream
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
        (['[""', ', "fixed"]'], True),  # a comma confirms the empty string
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
