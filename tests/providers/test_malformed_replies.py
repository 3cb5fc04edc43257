"""A reply that is JSON but not its API's shape is a ProviderError that says where it broke.

Each adapter checks a body (and each stream event) against the shape of the fields it reads
before reading them (`outform.providers.replies`). So `"choices": [null]` or a number where
the text goes is not an AttributeError from deep inside an adapter, nor a value of the wrong
type passed on as the reply: it is a `ProviderError` (a `StreamInterruptedError` for a stream
event, as for an event that is not JSON) naming the provider, the path where the shape broke
(`.where`) and what the API has there, with a scrubbed excerpt of the body (`.body`).

Every case starts from a well-formed reply, checked against the provider's official artifact,
and breaks one field of it.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterator
from copy import deepcopy
from dataclasses import dataclass
from typing import Any

import orjson
import pytest

import outform
from outform.errors import ProviderError, StreamInterruptedError
from outform.providers import openai_chat
from outform.providers.anthropic import AnthropicMessages
from outform.providers.base import Adapter, Message, Request
from outform.providers.bedrock import BedrockConverse
from outform.providers.gemini import Gemini
from outform.providers.ollama import OllamaChat
from outform.providers.openai_chat import OpenAIChat
from outform.providers.openai_responses import OpenAIResponses
from outform.transport import RetryPolicy, Transport
from tests.providers import anthropic_wire, bedrock_wire, gemini_wire, ollama_wire, openai_wire
from tests.providers.fake import FakeServer
from tests.providers.openapi import load

ADA = '{"name": "Ada", "age": 36}'
REQUEST = Request("m", (Message.user("Extract the person."),))

_SPEC: list[openai_wire.Conformance] = []


def openai_checks(name: str) -> Callable[[Any], None]:
    def check(payload: Any) -> None:
        if not _SPEC:
            _SPEC.append(openai_wire.Conformance(load()))
        _SPEC[0](name, payload)

    return check


# -- well-formed replies, one per API ----------------------------------------------------------


def chat_reply() -> dict[str, Any]:
    return openai_wire.chat_completion(content=ADA)


def responses_reply() -> dict[str, Any]:
    return openai_wire.response_body(openai_wire.message_item(openai_wire.output_text(ADA)))


def anthropic_reply() -> dict[str, Any]:
    return {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": [{"type": "text", "text": ADA}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 412, "output_tokens": 28},
    }


def gemini_reply() -> dict[str, Any]:
    return {
        "candidates": [
            {"content": {"role": "model", "parts": [{"text": ADA}]}, "finishReason": "STOP"}
        ],
        "usageMetadata": {"promptTokenCount": 51, "candidatesTokenCount": 19},
        "modelVersion": "gemini-2.5-flash",
    }


def bedrock_reply() -> dict[str, Any]:
    return {
        "output": {"message": {"role": "assistant", "content": [{"text": ADA}]}},
        "stopReason": "end_turn",
        "usage": {"inputTokens": 389, "outputTokens": 27, "totalTokens": 416},
        "metrics": {"latencyMs": 812},
    }


def ollama_reply() -> dict[str, Any]:
    return {
        "model": "llama3.2",
        "created_at": "2026-11-21T17:21:00.000Z",
        "message": {"role": "assistant", "content": ADA},
        "done": True,
        "done_reason": "stop",
        "prompt_eval_count": 26,
        "eval_count": 21,
    }


@dataclass
class API:
    adapter: Adapter
    reply: Callable[[], dict[str, Any]]
    check: Callable[[Any], object]


APIS = {
    "openai": API(OpenAIChat(), chat_reply, openai_checks("CreateChatCompletionResponse")),
    "openai-responses": API(OpenAIResponses(), responses_reply, openai_checks("Response")),
    "anthropic": API(AnthropicMessages(), anthropic_reply, anthropic_wire.check_message),
    "gemini": API(Gemini(), gemini_reply, gemini_wire.validate_response),
    "bedrock": API(BedrockConverse(), bedrock_reply, bedrock_wire.check_response),
    "ollama": API(OllamaChat(), ollama_reply, ollama_wire.validate_response),
}


def broken(value: dict[str, Any], path: str, bad: Any) -> dict[str, Any]:
    """A copy of `value` with the field at `path` (`choices[0].message.content`) set to `bad`."""
    copy = deepcopy(value)
    keys: list[str | int] = [
        int(index) if index else name for name, index in re.findall(r"([^.\[\]]+)|\[(\d+)\]", path)
    ]
    target: Any = copy
    for key in keys[:-1]:
        target = target[key]
    target[keys[-1]] = bad
    return copy


# -- whole replies -----------------------------------------------------------------------------

BODIES = [
    # (API, field set, the value it is set to, where the shape breaks)
    ("openai", "choices", [None], "choices[0]"),
    ("openai", "choices", "abc", "choices"),
    ("openai", "choices[0].message", "hi", "choices[0].message"),
    ("openai", "choices[0].message.content", 5, "choices[0].message.content"),
    ("openai", "choices[0].message.tool_calls", "x", "choices[0].message.tool_calls"),
    ("openai", "choices[0].message.refusal", 7, "choices[0].message.refusal"),
    ("openai", "usage.prompt_tokens_details", [1], "usage.prompt_tokens_details"),
    ("anthropic", "content", "hi", "content"),
    ("anthropic", "content", [None], "content[0]"),
    ("gemini", "candidates", [None], "candidates[0]"),
    ("gemini", "candidates[0].content", "x", "candidates[0].content"),
    ("gemini", "candidates[0].content.parts", "x", "candidates[0].content.parts"),
    ("gemini", "candidates[0].content.parts", [None], "candidates[0].content.parts[0]"),
    ("gemini", "usageMetadata", "x", "usageMetadata"),
    ("gemini", "promptFeedback", "x", "promptFeedback"),
    ("openai-responses", "output", "x", "output"),
    ("openai-responses", "output", [None], "output[0]"),
    ("openai-responses", "output[0].content", [None], "output[0].content[0]"),
    ("openai-responses", "output[0].content[0].text", 5, "output[0].content[0].text"),
    ("openai-responses", "incomplete_details", "x", "incomplete_details"),
    ("bedrock", "output.message.content", "x", "output.message.content"),
    ("ollama", "message.content", 5, "message.content"),
]


@pytest.mark.parametrize(
    ("api", "field", "value", "where"),
    BODIES,
    ids=[f"{api}: {field} = {orjson.dumps(value).decode()}" for api, field, value, _ in BODIES],
)
def test_a_body_that_is_not_the_apis_shape_is_a_provider_error(
    api: str, field: str, value: Any, where: str
) -> None:
    one = APIS[api]
    good = one.reply()
    one.check(good)
    assert one.adapter.parse(REQUEST, good).text == ADA
    with pytest.raises(ProviderError) as caught:
        one.adapter.parse(REQUEST, broken(good, field, value))
    error = caught.value
    assert type(error) is ProviderError  # the class transport uses for a body that is not JSON
    assert error.provider == one.adapter.name
    assert error.where == where
    assert error.what.startswith(f"{one.adapter.name} answered with a body that is not")
    assert f"{where} is " in error.what and "where the API has" in error.what
    assert error.body is not None and error.body.startswith("{")


def test_the_message_says_what_was_found_and_what_the_api_has_there() -> None:
    body = broken(chat_reply(), "choices[0].message.content", 5)
    with pytest.raises(ProviderError) as caught:
        OpenAIChat().parse(REQUEST, body)
    assert caught.value.what == (
        "openai answered with a body that is not its API's shape: choices[0].message.content "
        "is the number 5, where the API has a string or an array"
    )


def test_a_key_in_a_malformed_body_is_scrubbed_from_message_and_excerpt() -> None:
    key = "sk-proj-LEAKME1234567890abcdef"
    body = broken(chat_reply(), "choices[0].message", f"Incorrect API key provided: {key}")
    with pytest.raises(ProviderError) as caught:
        OpenAIChat().parse(REQUEST, body)
    error = caught.value
    for text in (str(error), error.what, error.body or ""):
        assert key not in text
    assert "[redacted]" in error.what and "[redacted]" in (error.body or "")


def test_a_long_body_is_cut_to_an_excerpt() -> None:
    body = broken(chat_reply(), "choices[0].message.content", [{"type": "text", "text": 5}])
    body["padding"] = "x" * 10_000
    with pytest.raises(ProviderError) as caught:
        OpenAIChat().parse(REQUEST, body)
    assert caught.value.where == "choices[0].message.content[0].text"
    assert caught.value.body is not None and len(caught.value.body) == 2_001  # and an ellipsis


def test_a_bug_in_outform_reading_a_well_formed_body_is_not_disguised(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The check only judges the body: an error raised while a well-formed body is read is
    outform's own, and surfaces as it is."""

    def faulty(*args: Any) -> Any:
        raise TypeError("a bug in outform")

    monkeypatch.setattr(openai_chat, "_finish", faulty)
    with pytest.raises(TypeError, match="a bug in outform"):
        OpenAIChat().parse(REQUEST, chat_reply())


# -- stream events -----------------------------------------------------------------------------


def chat_text_chunk() -> dict[str, Any]:
    return openai_wire.chunk({"content": "{"})


def chat_tool_chunk() -> dict[str, Any]:
    call = openai_wire.tool_call("call_1", "get_weather", "")
    return openai_wire.chunk({"tool_calls": [{"index": 0, **call}]})


def anthropic_text_delta() -> dict[str, Any]:
    return {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "{"}}


def anthropic_message_delta() -> dict[str, Any]:
    return {
        "type": "message_delta",
        "delta": {"stop_reason": "end_turn", "stop_sequence": None},
        "usage": {"output_tokens": 15},
    }


def gemini_chunk() -> dict[str, Any]:
    return {
        "candidates": [{"content": {"role": "model", "parts": [{"text": "{"}]}, "index": 0}],
        "usageMetadata": {"promptTokenCount": 9, "totalTokenCount": 9},
        "modelVersion": "gemini-2.5-flash",
    }


def responses_completed() -> dict[str, Any]:
    return openai_wire.Events()("response.completed", response=responses_reply())


def bedrock_delta() -> dict[str, Any]:
    return {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": "{"}}}


def ollama_line() -> dict[str, Any]:
    return {
        "model": "llama3.2",
        "created_at": "2026-11-21T17:21:00.000Z",
        "message": {"role": "assistant", "content": "{"},
        "done": False,
    }


EVENT_CHECKS: dict[str, Callable[[Any], object]] = {
    "openai": openai_checks("CreateChatCompletionStreamResponse"),
    "openai-responses": openai_checks("ResponseStreamEvent"),
    "anthropic": anthropic_wire.check_event,
    "gemini": gemini_wire.validate_response,
    "bedrock": bedrock_wire.check_event,
    "ollama": ollama_wire.validate_stream_event,
}

EVENTS = [
    # (API, a well-formed event, field set, the value it is set to, where the shape breaks)
    ("openai", chat_text_chunk, "choices", [None], "choices[0]"),
    ("openai", chat_text_chunk, "choices[0].delta.content", 5, "choices[0].delta.content"),
    (
        "openai",
        chat_tool_chunk,
        "choices[0].delta.tool_calls[0].index",
        None,
        "choices[0].delta.tool_calls[0].index",
    ),
    ("anthropic", anthropic_text_delta, "index", "z", "index"),
    ("anthropic", anthropic_message_delta, "usage", "x", "usage"),
    (
        "gemini",
        gemini_chunk,
        "candidates[0].content.parts",
        ["x"],
        "candidates[0].content.parts[0]",
    ),
    ("gemini", gemini_chunk, "usageMetadata", "x", "usageMetadata"),
    ("openai-responses", responses_completed, "response.output", "x", "response.output"),
    (
        "bedrock",
        bedrock_delta,
        "contentBlockDelta.contentBlockIndex",
        "z",
        "contentBlockDelta.contentBlockIndex",
    ),
    ("ollama", ollama_line, "message.content", 5, "message.content"),
]


@pytest.mark.parametrize(
    ("api", "event", "field", "value", "where"),
    EVENTS,
    ids=[f"{api}: {field} = {orjson.dumps(value).decode()}" for api, _, field, value, _ in EVENTS],
)
def test_a_stream_event_that_is_not_the_apis_shape_interrupts_the_stream(
    api: str, event: Callable[[], dict[str, Any]], field: str, value: Any, where: str
) -> None:
    adapter, good = APIS[api].adapter, event()
    EVENT_CHECKS[api](good)
    adapter.decoder(REQUEST).feed(good)
    with pytest.raises(StreamInterruptedError) as caught:
        adapter.decoder(REQUEST).feed(broken(good, field, value))
    error = caught.value
    assert error.provider == adapter.name
    assert error.where == where
    assert error.what.startswith(f"{adapter.name} sent a stream event that is not")
    assert error.body is not None and error.body.startswith("{")


# -- through generate() and stream(), over HTTP --------------------------------------------------


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as fake:
        yield fake


def test_generate_raises_the_provider_error_and_does_not_ask_again(server: FakeServer) -> None:
    server.json(broken(chat_reply(), "choices[0].message", "hi"))
    with (
        Transport(retry=RetryPolicy(retries=0)) as transport,
        pytest.raises(ProviderError) as caught,
    ):
        outform.generate(
            "openai:gpt-5.2",
            "Extract the person: Ada, 36",
            {"type": "object"},
            base_url=server.url,
            api_key="test-key-not-secret",
            transport=transport,
        )
    assert caught.value.where == "choices[0].message"
    assert len(server.requests) == 1


def test_stream_raises_where_the_broken_event_arrives(server: FakeServer) -> None:
    good = gemini_chunk()
    server.stream([good, broken(good, "candidates[0].content.parts", ["x"])])
    with Transport(retry=RetryPolicy(retries=0)) as transport:
        run = outform.stream(
            "gemini:gemini-2.5-flash",
            "Extract the person: Ada, 36",
            {"type": "object"},
            base_url=server.url,
            api_key="test-key-not-secret",
            transport=transport,
        )
        with pytest.raises(StreamInterruptedError) as caught:
            list(run)
    assert caught.value.where == "candidates[0].content.parts[0]"
    assert caught.value.provider == "gemini"


# -- the two checks of a shape agree -----------------------------------------------------------

_HOSTILE: list[Any] = [None, 5, 1.0, 1.5, True, "x", [], [None], ["x"], {}, {"type": 5}]


def _variants(value: Any) -> Iterator[Any]:
    """`value`, then `value` with one of its parts (any depth) replaced by each hostile value."""
    yield value
    if isinstance(value, dict):
        for key in value:
            for part in [*_HOSTILE, *_variants(value[key])]:
                yield {**value, key: part}
    elif isinstance(value, list):
        for index in range(len(value)):
            for part in [*_HOSTILE, *_variants(value[index])]:
                yield [*value[:index], part, *value[index + 1 :]]


_SHAPED: list[tuple[str, Any, Callable[[], Any]]] = [
    ("openai", openai_chat._REPLY, chat_reply),
    ("openai chunk", openai_chat._CHUNK, chat_text_chunk),
    ("openai tool chunk", openai_chat._CHUNK, chat_tool_chunk),
    ("responses", importlib.import_module("outform.providers.openai_responses")._RESPONSE,
     responses_reply),
    ("responses event", importlib.import_module("outform.providers.openai_responses")._EVENT,
     responses_completed),
    ("anthropic", importlib.import_module("outform.providers.anthropic")._MESSAGE,
     anthropic_reply),
    ("anthropic event", importlib.import_module("outform.providers.anthropic")._EVENT,
     anthropic_text_delta),
    ("gemini", importlib.import_module("outform.providers.gemini")._RESPONSE, gemini_reply),
    ("gemini chunk", importlib.import_module("outform.providers.gemini")._RESPONSE,
     gemini_chunk),
    ("bedrock", importlib.import_module("outform.providers.bedrock")._REPLY, bedrock_reply),
    ("bedrock event", importlib.import_module("outform.providers.bedrock")._EVENT,
     bedrock_delta),
    ("ollama", importlib.import_module("outform.providers.ollama")._REPLY, ollama_reply),
]  # fmt: skip


@pytest.mark.parametrize(("name", "shape", "reply"), _SHAPED, ids=[n for n, _, _ in _SHAPED])
def test_the_compiled_check_and_the_walk_that_explains_it_agree(
    name: str, shape: Any, reply: Callable[[], Any]
) -> None:
    """Every reply is checked by jsonschema-rs (the shape as a JSON Schema, in C); the walk
    in Python that says where a reply broke runs only when that check fails. Both must judge
    alike: a well-formed reply, and each of its parts replaced by a hostile value."""
    judged = 0
    for value in _variants(reply()):
        assert shape.accepts(value) == (shape.mismatch(value, "") is None), value
        judged += 1
    assert judged > 20
