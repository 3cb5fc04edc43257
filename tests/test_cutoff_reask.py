"""A reply cut off (at the token limit, or a stream that stopped without a stop reason) that
is not accepted is asked for again, whole, as cut off: never as a reply missing fields.

Over real HTTP: the OpenAI Chat Completions wire (tests/providers/openai_wire.py) played by the
fake server on 127.0.0.1. What the model is told (the re-ask), what the error says and what the
command line prints all say the reply was cut off, and where: the last field it wrote.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

import outform
from outform.batch.outcome import judge
from outform.cli import EXIT_INVALID, main
from outform.errors import GenerationError
from outform.gateway.checks import CheckSettings, check_reply
from outform.parse.hint import CUT, JSON_UNENDED
from outform.providers.base import Response
from outform.reask import complete_at_cut, cut_path
from outform.run import Generation
from outform.trace.events import Event, Reask
from outform.transport import RetryPolicy, Transport
from tests.providers import openai_wire
from tests.providers.fake import FakeServer
from tests.test_cli import isolated
from tests.test_generate_providers import calling

MODEL = "openai:gpt-4o-2024-08-06"
INVOICE = {
    "type": "object",
    "properties": {
        "number": {"type": "string"},
        "total": {"type": "number", "minimum": 0},
        "paid": {"type": "boolean"},
        "note": {"type": "string"},
    },
    "required": ["number", "total", "paid"],
}
GOOD = {"number": "INV-1", "total": 12.5, "paid": False}
CUT_IN_TOTAL = '{"number": "INV-1", "total": 12'
"""Cut in the middle of `total`: at level full the repair drops the number, and `total` and
`paid` are then missing from what was read."""


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as fake:
        yield fake


@pytest.fixture
def transport() -> Iterator[Transport]:
    with Transport(retry=RetryPolicy(retries=0)) as sender:
        yield sender


def answer(server: FakeServer, text: str, finish: str = "stop") -> None:
    server.json(openai_wire.chat_completion(finish=finish, content=text))


def unended(server: FakeServer, text: str) -> None:
    """A stream of `text` that closes cleanly without a finish chunk, usage or [DONE]."""
    server.stream(openai_wire.text_stream(text)[:-2])


def call(
    server: FakeServer, transport: Transport, level: str = "full", **options: Any
) -> Generation[Any]:
    return outform.generate(
        MODEL,
        "Extract the invoice",
        INVOICE,
        base_url=server.url + "/v1",
        api_key="test-key-not-secret",
        transport=transport,
        level=level,
        **options,
    )


def reask_of(server: FakeServer, number: int = 1) -> dict[str, Any]:
    body: dict[str, Any] = server.requests[number].json
    return body


# -- what the model is told ------------------------------------------------------------------


def test_a_reply_cut_at_the_token_limit_is_reasked_whole_as_cut_off_not_as_missing_fields(
    server: FakeServer, transport: Transport
) -> None:
    answer(server, CUT_IN_TOTAL, finish="length")
    answer(server, orjson.dumps(GOOD).decode())
    result = call(server, transport)
    assert result.data == GOOD
    first = result.attempts[0]
    assert first.fields == ()  # the whole reply was asked for, not some fields
    assert first.hint is not None
    said = first.hint.message()
    assert "cut off at the token limit" in said
    assert "the last field it wrote was total" in said
    assert "missing required field" not in said
    reask = reask_of(server)
    told = reask["messages"][-1]["content"]
    assert told == said
    assert "The other fields were fine" not in told
    assert "Reply again with the whole JSON, complete." in told
    schema = reask["response_format"]["json_schema"]["schema"]
    assert set(schema["properties"]) == set(INVOICE["properties"])  # the whole schema again


def test_a_stream_that_stopped_without_a_stop_reason_is_reasked_as_cut_there(
    server: FakeServer, transport: Transport
) -> None:
    unended(server, CUT_IN_TOTAL)
    server.stream(openai_wire.text_stream(orjson.dumps(GOOD).decode()))
    run = outform.stream(
        MODEL,
        "Extract the invoice",
        INVOICE,
        base_url=server.url + "/v1",
        api_key="test-key-not-secret",
        transport=transport,
        level="full",
    )
    assert list(run)[-1].data == GOOD
    assert run.generation is not None
    first = run.generation.attempts[0]
    assert first.fields == () and first.hint is not None
    said = first.hint.message()
    assert "stopped without the provider saying the reply was complete" in said
    assert "the last field it wrote was total" in said
    assert "missing required field" not in said
    assert reask_of(server)["messages"][-1]["content"] == said


def test_a_wrong_value_written_whole_before_the_cut_is_named_with_the_cut(
    server: FakeServer, transport: Transport
) -> None:
    answer(server, '{"number": "INV-1", "total": -3, "paid": false, "note": "Paid in', "length")
    answer(server, orjson.dumps(GOOD).decode())
    result = call(server, transport)
    hint = result.attempts[0].hint
    assert hint is not None
    lines = hint.explain().splitlines()
    assert "the last field it wrote was note" in lines[0]
    assert any(line.startswith("- at total: expected") for line in lines[1:])
    assert result.attempts[0].fields == ()


def test_the_reask_of_a_cut_reply_is_recorded_as_cut_off(
    server: FakeServer, transport: Transport
) -> None:
    seen: list[Event] = []
    answer(server, CUT_IN_TOTAL, finish="length")
    answer(server, orjson.dumps(GOOD).decode())
    call(server, transport, observers=[seen.append])
    asked = [e.data for e in seen if e.name == "output.reask.attempt"]
    assert len(asked) == 1 and isinstance(asked[0], Reask)
    assert asked[0].reason == "cut_off" and asked[0].fields == ()


# -- what the error says ---------------------------------------------------------------------


def test_with_no_attempt_left_the_error_says_cut_off_and_to_leave_room(
    server: FakeServer, transport: Transport
) -> None:
    answer(server, CUT_IN_TOTAL, finish="length")
    with pytest.raises(GenerationError) as caught:
        call(server, transport, retries=0)
    error = caught.value
    assert "cut off at the token limit" in str(error)
    assert "the last field it wrote was total" in str(error)
    assert "missing required field" not in str(error)
    assert error.fix is not None and "raise `max_tokens`" in error.fix
    assert "level" not in error.fix


def test_at_level_full_the_error_does_not_advise_level_full(
    server: FakeServer, transport: Transport
) -> None:
    answer(server, '{"number": "INV-1", "total": "twelve", "paid": false}')
    with pytest.raises(GenerationError) as caught:
        call(server, transport, retries=0)
    fix = caught.value.fix
    assert fix is not None and "level='full'" not in fix
    assert "another mode or model" in fix


def test_below_level_full_the_error_still_advises_level_full(
    server: FakeServer, transport: Transport
) -> None:
    answer(server, '{"number": "INV-1", "total": "twelve", "paid": false}')
    with pytest.raises(GenerationError) as caught:
        call(server, transport, level="minimal", retries=0)
    assert caught.value.fix is not None and "level='full'" in caught.value.fix


# -- what the command line prints ------------------------------------------------------------


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    yield from isolated(tmp_path, monkeypatch, {"invoice.json": INVOICE}, "OPENAI_API_KEY")


def test_the_command_line_says_cut_off_where_and_never_level_full_at_level_full(
    workdir: Path, server: FakeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    answer(server, CUT_IN_TOTAL, finish="length")
    answer(server, '{"number": "INV-1", "total": "twelve", "paid": false}')
    args = ["generate", MODEL, "x", "-s", "invoice.json", "--base-url", server.url + "/v1"]
    assert main([*args, "--level", "full", "--retries", "0"]) == EXIT_INVALID
    err = capsys.readouterr().err
    assert "the last field it wrote was total" in err
    assert "missing required field" not in err
    assert "raise --max-tokens" in err
    assert main([*args, "--level", "full", "--retries", "0"]) == EXIT_INVALID
    err = capsys.readouterr().err
    assert "at total: expected number" in err
    assert "--level full" not in err


# -- where a reply was cut -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('{"number": "INV-1", "total": 12', "/total"),
        ('{"number": "INV-1", "note": "a, b: {c', "/note"),
        ('{"number": "INV-1", ', "/number"),  # after a complete field: the last written
        ('{"number": "INV-1", "tot', "/number"),  # a key cut short names no field yet
        ('{"tags": ["a", "b', "/tags/1"),
        ('[{"n": 1}, {"n": 2, "m": tr', "/1/m"),
        ('Here it is:\n```json\n{"a": {"b~/c": [1, 2', "/a/b~0~1c/1"),
        ('{"items": [{"name": "a", "qty": 1}, ', "/items/0"),  # no item begun after the comma
        ('{"items": [{"name": "a", "qty": 1}, {', "/items/1"),
        ('{"a": 1}\n{"a": 2, "b": ', "/b"),  # a second value cut: its field
        ('{"a": 1}', None),  # nothing open: no field to name
        ("{", None),
        ("Sure, the invoice", None),
    ],
)
def test_the_field_named_is_the_last_one_the_reply_wrote(text: str, where: str | None) -> None:
    assert cut_path(text) == where


# -- the gateway's enforcement and batch jobs tell it alike -----------------------------------


def test_the_gateway_tells_a_cut_reply_it_cannot_accept_as_cut_off() -> None:
    """Enforcement (`x-outform-enforce`) answers 422 with this verdict's hint."""
    fmt = {"type": "json_schema", "name": "invoice", "schema": INVOICE, "strict": True}
    verdict = check_reply(CUT_IN_TOTAL, fmt, CheckSettings("full", 5.0), cut=True)
    assert verdict.kind == "invalid"
    for told in (verdict.hint, verdict.explanation):
        assert "cut off at the token limit" in told
        assert "the last field it wrote was total" in told
        assert "missing required field" not in told


def test_a_batch_row_cut_at_the_token_limit_is_reasked_as_cut_off() -> None:
    pipeline = outform.Pipeline(INVOICE, level="full")
    response = Response(CUT_IN_TOTAL, "length")
    verdict = judge(response, pipeline, can_reask=True)
    assert verdict.status == "reask" and verdict.hint is not None
    assert verdict.hint.is_cut
    assert [v.kind for v in verdict.hint.violations] == ["syntax"]


def test_at_minimal_the_json_that_stops_is_the_cut_s_doing_not_named_beside_it() -> None:
    """Strict JSON cannot read a cut reply at all ("the JSON is malformed (unexpected end of
    data ...)"): that is what the cut made of it, and was named beside the cut (a trial)."""
    pipeline = outform.Pipeline(INVOICE, level="minimal")
    with pytest.raises(outform.OutputError) as caught:
        pipeline.run(CUT_IN_TOTAL)
    (told,) = caught.value.hint.violations
    assert told.kind == "syntax" and told.keyword == JSON_UNENDED
    verdict = judge(Response(CUT_IN_TOTAL, "length"), pipeline, can_reask=True)
    assert verdict.hint is not None
    assert [v.keyword for v in verdict.hint.violations] == [CUT]
    assert "malformed" not in verdict.hint.message()


# -- a value the cut may have stopped in the middle of ----------------------------------------

SCALARS = [
    ({"type": "integer"}, "12", "120", 120),  # 12 may be the start of 120 or 12.5
    ({"type": "number"}, "1.5", "1.55", 1.55),
    ({"type": "boolean"}, "true", "true", True),  # no delimiter closes a literal either
    ({"type": "string"}, "Alic", "Alice", "Alice"),  # the reply itself, read as the string
]


@pytest.mark.parametrize("name", ["openai", "anthropic", "gemini", "ollama"])
@pytest.mark.parametrize(("schema", "cut", "whole", "value"), SCALARS)
def test_a_value_the_token_limit_may_have_cut_short_is_asked_for_again(
    name: str, schema: dict[str, Any], cut: str, whole: str, value: Any
) -> None:
    """Found by a trial: `12` with finish_reason=length (Gemini MAX_TOKENS, Anthropic
    max_tokens, Ollama's `length`) was accepted, exit 0. A reply cut off is taken only when
    its JSON is closed by a delimiter nothing after the cut could continue (`}`, `]`, a
    string's closing quote)."""
    with calling(name) as one:
        one.reply(one.provider.reply(cut, "length"))
        one.reply(one.provider.reply(whole, "stop"))
        result = one.generate(output=schema, retries=1)
    assert result.data == value
    first = result.attempts[0]
    assert first.hint is not None and first.hint.is_cut
    assert "cut off at the token limit" in first.hint.message()


@pytest.mark.parametrize(("schema", "cut", "whole", "value"), SCALARS)
def test_a_stream_that_stopped_without_a_stop_reason_after_a_bare_value_is_asked_again(
    server: FakeServer, transport: Transport, schema: dict[str, Any], cut: str, whole: str,
    value: Any,
) -> None:  # fmt: skip
    """Found by a trial: a stream of `12345` with no stop reason gave 12345, complete."""
    unended(server, cut)
    server.stream(openai_wire.text_stream(whole))
    run = outform.stream(
        MODEL, "How many?", schema, base_url=server.url + "/v1",
        api_key="test-key-not-secret", transport=transport, retries=1,
    )  # fmt: skip
    snapshots = list(run)
    assert snapshots[-1].data == value and snapshots[-1].complete
    assert [s.data for s in snapshots if s.complete] == [value]
    assert run.generation is not None and run.generation.attempts[0].hint is not None
    assert run.generation.attempts[0].hint.is_cut


_OBJECT = {"type": "object", "properties": {"a": {"type": "integer"}}}
_INTEGERS = {"type": "array", "items": {"type": "integer"}}


@pytest.mark.parametrize(
    ("text", "schema", "complete"),
    [
        ('{"a": 1}', _OBJECT, True),
        ('{"a": 1}\n', _OBJECT, True),
        ("[1, 2]", _INTEGERS, True),
        ('"12"', {"type": "integer"}, True),  # a JSON string: its closing quote ends it
        ('```json\n{"a": 1}\n```', _OBJECT, True),  # the fence after the value: closed
        ('{"a": 1} Hope this hel', _OBJECT, True),  # the cut is in the prose after it
        ("[1, 2] and 3", _INTEGERS, True),
        ("12", {"type": "integer"}, False),
        ("12 ", {"type": "integer"}, False),
        ("-0.5", {"type": "number"}, False),
        ("true", {"type": "boolean"}, False),
        ("null", {"type": "null"}, False),
        ("```json\n12\n```", {"type": "integer"}, False),  # a fence, but no JSON delimiter
        ("Alic", {"type": "string"}, False),  # the reply itself, as the string
        ('She said "hi"', {"type": "string"}, False),  # a quote of the text, not a string's
    ],
)
def test_a_cut_reply_is_complete_only_when_a_delimiter_closes_its_json(
    text: str, schema: dict[str, Any], complete: bool
) -> None:
    result = outform.Pipeline(schema, level="minimal").run(text)
    assert complete_at_cut(text, result.data, result.changes) is complete


def test_a_value_coerced_into_an_array_is_not_closed_by_a_bracket_it_never_had() -> None:
    assert not complete_at_cut("12", [12], ())


def test_a_repaired_reply_is_never_complete_at_a_cut() -> None:
    from outform.parse.result import Change

    repaired = Change("", "tolerant", "close_brackets", '{"a": 1', '{"a": 1}')
    assert not complete_at_cut('{"a": 1', {"a": 1}, (repaired,))
