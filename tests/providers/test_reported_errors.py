"""An error a provider reports in the middle of a stream never carries a secret out.

Providers echo the key they were sent ("Incorrect API key provided: sk-proj-..."). Transport
scrubs the message and body of an HTTP error status; an error *event* inside a stream that
started fine is raised by the adapter's stream decoder, and is scrubbed the same way: the keys
outform knows (the registry registers every key it resolves) and the shapes of common provider
keys become `[redacted]` in the error's message and body.

Each API's error event is written as the provider sends it (checked against the official SDK's
type where it has one), and is raised both when fed to the decoder directly and when it arrives
over HTTP in the middle of `outform.stream`.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

import outform
from outform.errors import ProviderError, RateLimitError, StreamInterruptedError
from outform.providers.anthropic import AnthropicMessages
from outform.providers.base import Adapter, Message, Request
from outform.providers.gemini import Gemini
from outform.providers.ollama import OllamaChat
from outform.providers.openai_chat import OpenAIChat
from outform.providers.openai_responses import OpenAIResponses
from outform.transport import RetryPolicy, Transport
from tests.providers import anthropic_wire, openai_wire
from tests.providers.fake import FakeServer
from tests.providers.openapi import load

OPENAI_KEY = "sk-proj-LEAKME1234567890abcdef"
ANTHROPIC_KEY = "sk-ant-api03-LEAKME1234567890abcdef"
GEMINI_KEY = "AIzaSyLEAKME1234567890abcdefghijklmnop"
PLAIN_KEY = "LEAKME-a-key-of-no-known-shape"
"""A key no pattern recognizes: scrubbed because the registry registered it when resolving."""


@functools.cache
def conforms() -> openai_wire.Conformance:
    return openai_wire.Conformance(load())


@dataclass
class ErrorEvent:
    """One API's error event holding `key`, and how the API frames it in a stream."""

    provider: str
    adapter: Adapter
    event: dict[str, Any]
    key: str
    named: bool
    """Whether the SSE frame names the event (`event: error`), as Anthropic and the Responses
    API do; Chat Completions servers and Gemini send a bare `data:` line."""


def openai_chat(key: str) -> ErrorEvent:
    # OpenAI's spec has no error chunk; this is what OpenAI-compatible servers (vLLM, and
    # OpenAI itself on a stream that fails after it started) send.
    event = {
        "error": {
            "message": f"Incorrect API key provided: {key}. You can find your API key at "
            "https://platform.openai.com/account/api-keys.",
            "type": "invalid_request_error",
            "param": None,
            "code": "invalid_api_key",
        }
    }
    return ErrorEvent("openai", OpenAIChat(), event, key, named=False)


def openai_responses(key: str) -> ErrorEvent:
    event = openai_wire.Events()(
        "error",
        code="invalid_api_key",
        message=f"Incorrect API key provided: {key}.",
        param=None,
    )
    conforms()("ResponseStreamEvent", event)
    return ErrorEvent("openai-responses", OpenAIResponses(), event, key, named=True)


def anthropic(key: str) -> ErrorEvent:
    event = {
        "type": "error",
        "error": {"type": "api_error", "message": f"Internal error while serving key {key}"},
    }
    anthropic_wire.check_event(event)
    return ErrorEvent("anthropic", AnthropicMessages(), event, key, named=True)


def gemini(key: str) -> ErrorEvent:
    # google.rpc.Status, as the API puts it in a stream chunk
    event = {
        "error": {
            "code": 400,
            "message": f"API key not valid: {key}. Please pass a valid API key.",
            "status": "INVALID_ARGUMENT",
        }
    }
    return ErrorEvent("gemini", Gemini(), event, key, named=False)


def ollama(key: str) -> ErrorEvent:
    return ErrorEvent("ollama", OllamaChat(), {"error": f"upstream refused key {key}"}, key, False)


ERROR_EVENTS = {
    "openai": openai_chat(OPENAI_KEY),
    "openai-responses": openai_responses(OPENAI_KEY),
    "anthropic": anthropic(ANTHROPIC_KEY),
    "gemini": gemini(GEMINI_KEY),
    "ollama": ollama(OPENAI_KEY),
}


def assert_scrubbed(error: ProviderError, key: str) -> None:
    texts = {
        "str()": str(error),
        ".what": error.what,
        ".body": error.body or "",
        ".where": error.where or "",
        ".fix": error.fix or "",
    }
    for name, text in texts.items():
        assert key not in text, f"the key shows in {name}: {text}"
    assert "[redacted]" in error.what or "***" in error.what


@pytest.mark.parametrize("name", sorted(ERROR_EVENTS))
def test_a_streamed_error_event_is_raised_without_the_key(name: str) -> None:
    case = ERROR_EVENTS[name]
    decoder = case.adapter.decoder(Request("m", (Message.user("Hi"),), stream=True))
    with pytest.raises(StreamInterruptedError) as caught:
        decoder.feed(case.event)
    error = caught.value
    assert error.provider == case.provider
    assert error.body is not None and "[redacted]" in error.body  # the rest of it is kept
    assert_scrubbed(error, case.key)


def test_what_the_provider_said_is_kept_around_the_key() -> None:
    decoder = OpenAIChat().decoder(Request("m", (Message.user("Hi"),), stream=True))
    with pytest.raises(StreamInterruptedError) as caught:
        decoder.feed(openai_chat(OPENAI_KEY).event)
    assert caught.value.what == (
        "openai stream failed (invalid_api_key): Incorrect API key provided: [redacted]. You "
        "can find your API key at https://platform.openai.com/account/api-keys."
    )


def test_an_error_event_saying_overloaded_is_a_rate_limit_in_every_decoder() -> None:
    """The decoders classify an error event as transport does one it reads itself."""
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    quota = {"error": {"code": 429, "message": "Quota exceeded", "status": "RESOURCE_EXHAUSTED"}}
    limit = openai_wire.Events()(
        "error", code="rate_limit_exceeded", message="Rate limit reached", param=None
    )
    cases: list[tuple[Adapter, dict[str, Any]]] = [
        (AnthropicMessages(), overloaded),
        (Gemini(), quota),
        (OpenAIResponses(), limit),
        (OpenAIChat(), {"error": {"message": "Rate limit reached", "code": "rate_limit_exceeded"}}),
    ]
    for adapter, event in cases:
        with pytest.raises(RateLimitError):
            adapter.decoder(Request("m", (Message.user("Hi"),), stream=True)).feed(event)


# -- over HTTP, in the middle of outform.stream -------------------------------------------------


MODELS = {
    "openai": "openai:gpt-5.2",
    "openai-responses": "openai-responses:gpt-5.2",
    "anthropic": "anthropic:claude-sonnet-4-5",
    "gemini": "gemini:gemini-2.5-flash",
}


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as fake:
        yield fake


@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("key", [PLAIN_KEY, "shaped"])
def test_a_key_echoed_by_an_error_event_mid_stream_never_reaches_the_caller(
    name: str, key: str, server: FakeServer
) -> None:
    """The key the call was made with, echoed back: scrubbed whether or not it looks like a
    key, and whether transport (a named `event: error`) or the decoder raises it."""
    shaped = {"openai": OPENAI_KEY, "openai-responses": OPENAI_KEY}
    shaped |= {"anthropic": ANTHROPIC_KEY, "gemini": GEMINI_KEY}
    key = shaped[name] if key == "shaped" else key
    case = {
        "openai": openai_chat,
        "openai-responses": openai_responses,
        "anthropic": anthropic,
        "gemini": gemini,
    }[name](key)
    frame: Any = (case.event["type"], case.event) if case.named else case.event
    server.stream([frame])
    with Transport(retry=RetryPolicy(retries=0)) as transport:
        run = outform.stream(
            MODELS[name],
            [{"role": "user", "content": "Extract the person."}],
            {"type": "object"},
            base_url=server.url,
            api_key=key,
            transport=transport,
        )
        with pytest.raises(ProviderError) as caught:
            list(run)
    assert_scrubbed(caught.value, key)
