"""A model that echoes the call's own key: what outform raises and prints never shows it.

The key outform sent (and every secret it knows) is masked, as the transport masks it in a
provider's error, in what an error says of a reply: its message, its hint, the attempts it
carries, and all the command line prints of them (`--json` included). The value a call returns
is the caller's data, as the model wrote it; and a re-ask goes back to the provider that wrote
the reply, so it carries the reply as written.

Over real HTTP: the OpenAI Chat Completions wire played by the fake server on 127.0.0.1.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

import outform
from outform.cli import EXIT_INVALID, main
from outform.errors import GenerationError, RefusalError
from outform.run import Generation
from outform.transport import RetryPolicy, Transport
from tests.providers import openai_wire
from tests.providers.fake import FakeServer
from tests.test_cli import isolated

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
