"""A model that echoes the call's own key: what outform raises and prints never shows it.

The key outform sent (and every secret it knows) is masked, as the transport masks it in a
provider's error, in what an error says of a reply: its message, its hint, the attempts it
carries, and all the command line prints of them (`--json` included). The value a call returns
is the caller's data, as the model wrote it; and a re-ask goes back to the provider that wrote
the reply, so it carries the reply as written.

Over real HTTP: the OpenAI Chat Completions wire played by the fake server on 127.0.0.1.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

import outform
from outform.cli import EXIT_INVALID, main
from outform.errors import GenerationError, RefusalError, sealed
from outform.run import Generation
from outform.transport import RetryPolicy, Transport
from tests.providers import openai_wire
from tests.providers.fake import FakeServer
from tests.test_cli import isolated
from tests.test_generate_providers import calling
from tests.test_stream_providers import PROVIDERS as STREAMED
from tests.test_stream_providers import Case

MODEL = "openai:gpt-4o-2024-08-06"
KEY = "test-key-Zq81xWv0Lm3"
"""Shaped like no provider's key: masked because it is the call's own, not by its shape."""
INVOICE = {
    "type": "object",
    "properties": {
        "number": {"type": "string"},
        "total": {"type": "number"},
        "paid": {"type": "boolean"},
    },
    "required": ["number", "total", "paid"],
}
ECHOED = orjson.dumps({"number": "INV-1", "total": KEY, "paid": False}).decode()
"""The key where a number belongs: the violation found is the key."""


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as fake:
        yield fake


@pytest.fixture
def transport() -> Iterator[Transport]:
    with Transport(retry=RetryPolicy(retries=0)) as sender:
        yield sender


def answer(server: FakeServer, text: str | None, **message: Any) -> None:
    server.json(openai_wire.chat_completion(content=text, **message))


def call(server: FakeServer, transport: Transport, **options: Any) -> Generation[Any]:
    return outform.generate(
        MODEL,
        "Extract the invoice",
        INVOICE,
        base_url=server.url + "/v1",
        api_key=KEY,
        transport=transport,
        **options,
    )


def shown(error: GenerationError | RefusalError) -> str:
    """Everything the error says, and every attempt it carries."""
    parts = [str(error), repr(error.args)]
    for attempt in error.attempts:
        parts.append(attempt.text)
        if attempt.hint is not None:
            parts.append(orjson.dumps(attempt.hint.to_dict()).decode())
    if isinstance(error, GenerationError):
        parts.append(orjson.dumps(error.hint.to_dict()).decode())
    return "\n".join(parts)


# -- errors ----------------------------------------------------------------------------------


def test_a_key_the_model_echoes_is_masked_in_the_error_and_its_attempts(
    server: FakeServer, transport: Transport
) -> None:
    answer(server, ECHOED)
    with pytest.raises(GenerationError) as caught:
        call(server, transport, retries=0)
    said = shown(caught.value)
    assert KEY not in said
    assert 'found string "***"' in str(caught.value)
    assert caught.value.attempts[0].text == ECHOED.replace(KEY, "***")


def test_a_key_written_with_json_escapes_is_masked_too(
    server: FakeServer, transport: Transport
) -> None:
    escaped = "".join(f"\\u{ord(c):04x}" for c in KEY)
    answer(server, '{"number": "INV-1", "total": "' + escaped + '", "paid": false}')
    with pytest.raises(GenerationError) as caught:
        call(server, transport, retries=0)
    said = shown(caught.value)
    assert KEY not in said and escaped not in said


def test_a_streamed_reply_echoing_the_key_is_masked_in_the_error(
    server: FakeServer, transport: Transport
) -> None:
    server.stream(openai_wire.text_stream(ECHOED[:20], ECHOED[20:]))
    run = outform.stream(
        MODEL,
        "Extract the invoice",
        INVOICE,
        base_url=server.url + "/v1",
        api_key=KEY,
        transport=transport,
        retries=0,
    )
    with pytest.raises(GenerationError) as caught:
        list(run)
    assert KEY not in shown(caught.value)


def test_a_refusal_echoing_the_key_is_masked_in_the_refusal_error(
    server: FakeServer, transport: Transport
) -> None:
    answer(server, None, refusal=f"I will not repeat {KEY} to you.")
    with pytest.raises(RefusalError) as caught:
        call(server, transport)
    assert KEY not in shown(caught.value) and KEY not in caught.value.refusal
    assert "***" in caught.value.refusal


# -- what is not an error --------------------------------------------------------------------


def test_the_reask_carries_the_reply_as_the_model_wrote_it(
    server: FakeServer, transport: Transport
) -> None:
    answer(server, ECHOED)
    answer(server, '{"total": 12.5}')
    result = call(server, transport, retries=1)
    assert result.data == {"number": "INV-1", "total": 12.5, "paid": False}
    sent = server.requests[1].json["messages"]
    assert sent[-2] == {"role": "assistant", "content": ECHOED}
    assert KEY in sent[-1]["content"]  # the hint, to the provider that wrote the key
    first = result.attempts[0]  # the record of the failed attempt: masked
    assert first.hint is not None and KEY not in first.hint.message() and KEY not in first.text


def test_a_valid_value_holding_the_key_is_returned_as_written(
    server: FakeServer, transport: Transport
) -> None:
    written = orjson.dumps({"number": KEY, "total": 1, "paid": True}).decode()
    answer(server, written)
    result = call(server, transport)
    assert result.data["number"] == KEY
    assert result.text == written and result.attempts[0].text == written


# -- the command line ------------------------------------------------------------------------


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("INVOICE_KEY", KEY)
    yield from isolated(tmp_path, monkeypatch, {"invoice.json": INVOICE}, "OPENAI_API_KEY")


@pytest.mark.parametrize("as_json", [False, True])
def test_the_command_line_never_prints_the_key_the_model_echoed(
    workdir: Path, server: FakeServer, capsys: pytest.CaptureFixture[str], as_json: bool
) -> None:
    answer(server, ECHOED)
    args = ["generate", MODEL, "x", "-s", "invoice.json", "--base-url", server.url + "/v1"]
    args += ["--api-key-env", "INVOICE_KEY", "--retries", "0", *(["--json"] if as_json else [])]
    assert main(args) == EXIT_INVALID
    captured = capsys.readouterr()
    assert KEY not in captured.out and KEY not in captured.err
    assert "***" in (captured.out if as_json else captured.err)


def test_a_key_holding_slashes_echoed_with_json_escapes_is_masked(
    server: FakeServer, transport: Transport
) -> None:
    """JSON may write `/` as `\\/`: a key holding slashes, echoed so, was left in the error's
    attempts and in a provider error's body (found by a trial)."""
    key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
    escaped = key.replace("/", "\\/")
    answer(server, f'{{"number": "INV-1", "total": "{escaped}", "paid": false}}')
    with pytest.raises(GenerationError) as caught:
        outform.generate(
            MODEL, "Extract", INVOICE, base_url=server.url + "/v1", api_key=key,
            transport=transport, retries=0,
        )  # fmt: skip
    said = shown(caught.value)
    assert key not in said and escaped not in said
    server.json({"error": {"message": f"Incorrect API key provided: {escaped}"}}, status=401)
    with pytest.raises(outform.AuthenticationError) as refused:
        outform.generate(
            MODEL, "Extract", INVOICE, base_url=server.url + "/v1", api_key=key,
            transport=transport, retries=0,
        )  # fmt: skip
    for text in (str(refused.value), refused.value.body or ""):
        assert key not in text and escaped not in text


# -- everything an error carries, and its traceback ------------------------------------------

PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
    "additionalProperties": False,
}
NAME_ONLY = orjson.dumps({"name": KEY, "age": "thirty-six"}).decode()
"""The key in a field that is valid: the violation found (at `age`) does not show it."""
ECHOED_TWICE = orjson.dumps({"name": KEY, "age": f"not a number {KEY}"}).decode()


def printed(error: BaseException) -> str:
    """What Python prints of the error left uncaught, and what `logging.exception()` writes:
    its traceback, with every exception of its chain."""
    formatted = logging.Formatter().formatException((type(error), error, error.__traceback__))
    return "".join(traceback.format_exception(error)) + formatted


def carried(error: BaseException) -> str:
    """Every text the error and each exception of its chain hold, shown or not: messages,
    hints, attempts, the partial result's text, value and changes."""
    parts: list[str] = []
    seen: set[int] = set()
    stack: list[BaseException | None] = [error]
    while stack:
        exc = stack.pop()
        if exc is None or id(exc) in seen:
            continue
        seen.add(id(exc))
        parts += [str(exc), repr(exc.args)]
        for value in vars(exc).values():
            parts.append(repr(value))
        result = getattr(exc, "result", None)
        if result is not None:
            parts += [result.text, repr(result.data), repr(result.changes)]
        stack += [exc.__cause__, exc.__context__]
    return "\n".join(parts)


def _generated(name: str, reply: str) -> GenerationError:
    with calling(name) as one:
        one.reply(one.provider.reply(reply, "stop"))
        with pytest.raises(GenerationError) as caught:
            outform.generate(
                one.provider.model, "Extract the person", PERSON, base_url=one.server.url,
                api_key=KEY, transport=one.transport, retries=0,
            )  # fmt: skip
    return caught.value


def _streamed(name: str, reply: str) -> GenerationError:
    with FakeServer() as server, Transport(retry=RetryPolicy(retries=0)) as sender:
        Case(name, server).send(reply)
        run = outform.stream(
            STREAMED[name].model, "Extract the person", PERSON, base_url=server.url,
            api_key=KEY, transport=sender, retries=0,
        )  # fmt: skip
        with pytest.raises(GenerationError) as caught:
            list(run)
    return caught.value


@pytest.mark.parametrize("name", ["openai", "anthropic", "gemini"])
@pytest.mark.parametrize("call_with", [_generated, _streamed], ids=["generate", "stream"])
@pytest.mark.parametrize("reply", [ECHOED_TWICE, NAME_ONLY], ids=["in-violation", "valid-field"])
def test_no_traceback_log_or_attribute_of_the_error_shows_the_key(
    name: str, call_with: Callable[[str, str], GenerationError], reply: str
) -> None:
    """Found by a trial: str() and the attempts were masked, but the error's `__context__`
    (the parse's OutputError, quoting the reply) and its `result` held the key, so an uncaught
    error, `logging.exception()` or `traceback.format_exception()` printed it. The error
    summarises the reply's own error: the chain is left out (`from None`), and what it
    carries is masked; a streamed reply cut early (StreamAbortedError) is summarised so too."""
    error = call_with(name, reply)
    assert KEY not in printed(error)
    assert KEY not in carried(error)
    assert error.result is None or '"***"' in error.result.text
    assert "During handling of the above exception" not in printed(error)


def test_the_chain_of_an_error_keeps_an_exception_that_shows_no_key() -> None:
    """The rule behind the masking (`errors.sealed`): an exception of the chain that shows
    the key is cut off, with what it chains; one that shows none stays, for the traceback."""

    def hide(text: str) -> str:
        return text.replace(KEY, "***")

    try:
        try:
            try:
                raise ValueError(f"the reply said {KEY}")
            except ValueError as inner:
                raise KeyError("no such field") from inner
        except KeyError:
            raise outform.OutputError(f"bad reply {KEY}", hint=outform.RetryHint(())) from None
    except outform.OutputError as caught:
        error = sealed(caught, hide)
    assert KEY not in printed(error) and KEY not in carried(error)
    assert error.what == "bad reply ***"
    kept = error.__context__
    assert isinstance(kept, KeyError)  # (shows no key: kept, and still suppressed as raised)
    assert kept.__cause__ is None  # the ValueError quoting the key is cut off
