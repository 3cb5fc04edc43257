"""A native provider behind the gateway: `backend = "anthropic"`, through outform's adapter.

The fake server plays Anthropic's Messages API (bodies checked with the `anthropic` SDK's
types); the client is still the `openai` SDK, on both the Responses and the Chat endpoints.
"""

from __future__ import annotations

from typing import Any

import openai
import pytest
from pydantic import BaseModel

from outform.trace.events import FormatChoice
from tests.gateway.conftest import Harness, MakeGateway
from tests.providers.anthropic_wire import check_event, check_message, check_request
from tests.trace.sinks import ListSink

ADA = '{"name":"Ada Lovelace","age":36}'


class Person(BaseModel):
    name: str
    age: int


@pytest.fixture
def claude(make_gateway: MakeGateway) -> Harness:
    return make_gateway(
        backend="anthropic",
        env_for=lambda fake: {"ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_API_KEY": "sk-ant-test"},
    )


def message(text: str, stop: str = "end_turn") -> dict[str, Any]:
    body = {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": text}],
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 180, "output_tokens": 14},
    }
    check_message(body)
    return body


def stream(*pieces: str) -> list[Any]:
    events: list[dict[str, Any]] = [
        {
            "type": "message_start",
            "message": {
                "id": "msg_014p7gG3wDgGV9EUtLvnow3U",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 412, "output_tokens": 1},
            },
        },
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        *(
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}}
            for p in pieces
        ),
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": 15},
        },
        {"type": "message_stop"},
    ]
    for event in events:
        check_event(event)
    return [(event["type"], event) for event in events]


def test_responses_parse_through_anthropics_native_schema_mode(claude: Harness) -> None:
    claude.backend.json(message(ADA))
    parsed = claude.client.responses.parse(
        model="claude-sonnet-4-5", instructions="Extract.", input="Ada, 36", text_format=Person
    )
    assert parsed.output_parsed == Person(name="Ada Lovelace", age=36)
    assert parsed.usage is not None and parsed.usage.input_tokens == 180
    sent = claude.backend.last
    assert sent.path == "/v1/messages"
    assert sent.headers["x-api-key"] == "sk-ant-test"
    body = sent.json
    check_request(body)
    assert body["model"] == "claude-sonnet-4-5"
    assert body["system"] == "Extract."
    assert body["output_config"]["format"]["type"] == "json_schema"
    assert set(body["output_config"]["format"]["schema"]["properties"]) == {"name", "age"}


def test_responses_stream_through_anthropic(claude: Harness) -> None:
    claude.backend.stream(stream('{"name":"Ada Lovelace",', '"age":36}'))
    with claude.client.responses.stream(
        model="claude-sonnet-4-5", input="Ada, 36", text_format=Person
    ) as events:
        final = events.get_final_response()
    assert final.output_parsed == Person(name="Ada Lovelace", age=36)
    assert final.usage is not None and final.usage.output_tokens == 15
    assert claude.backend.last.json["stream"] is True


def test_chat_completions_map_through_the_neutral_model(claude: Harness) -> None:
    claude.backend.json(message(ADA))
    completion = claude.client.chat.completions.parse(
        model="claude-sonnet-4-5",
        messages=[{"role": "user", "content": "Ada, 36"}],
        response_format=Person,
    )
    assert completion.choices[0].message.parsed == Person(name="Ada Lovelace", age=36)
    check_request(claude.backend.last.json)

    claude.backend.stream(stream("Hel", "lo"))
    chunks = claude.client.chat.completions.create(
        model="claude-sonnet-4-5", messages=[{"role": "user", "content": "hi"}], stream=True
    )
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "Hello"


def test_provider_errors_come_back_in_openais_shape(claude: Harness) -> None:
    error = {"type": "error", "error": {"type": "invalid_request_error", "message": "bad schema"}}
    claude.backend.json(error, status=400)
    with pytest.raises(openai.BadRequestError) as caught:
        claude.client.responses.create(model="claude-sonnet-4-5", input="x")
    assert "bad schema" in caught.value.message
    assert isinstance(caught.value.body, dict) and caught.value.body["code"] == "anthropic_error"


# -- what the run records ------------------------------------------------------------------


def kinds(sink: ListSink) -> list[str]:
    return [e.name for e in sink.flushed()]


def test_the_run_records_how_the_provider_enforces_the_format(
    claude: Harness, recorded: ListSink
) -> None:
    """`format.native` or `format.skipped`, as generate() records it: once per run, before
    the provider call, whole or streamed; nothing for free text."""
    claude.backend.json(message(ADA))
    claude.client.responses.parse(model="claude-sonnet-4-5", input="Ada, 36", text_format=Person)
    assert kinds(recorded) == ["run.start", "format.native", "provider.call", "run.end"]
    choice = recorded.events[1].data
    assert isinstance(choice, FormatChoice)
    assert (choice.mechanism, choice.dialect, choice.enforced) == (
        "native_schema",
        "anthropic",
        True,
    )

    recorded.batches.clear()
    claude.backend.stream(stream('{"name":"Ada Lovelace",', '"age":36}'))
    with claude.client.responses.stream(
        model="claude-sonnet-4-5", input="Ada, 36", text_format=Person
    ) as events:
        events.get_final_response()
    assert kinds(recorded) == ["run.start", "format.native", "provider.call", "run.end"]

    recorded.batches.clear()
    claude.backend.json(message(ADA))
    claude.client.chat.completions.create(
        model="claude-sonnet-4-5",
        messages=[{"role": "user", "content": "Ada, 36 as JSON"}],
        response_format={"type": "json_object"},
    )
    skipped = [e for e in recorded.flushed() if e.name == "format.skipped"]
    assert len(skipped) == 1 and isinstance(skipped[0].data, FormatChoice)
    assert skipped[0].data.reason == "claude-sonnet-4-5 has no JSON-object mode"

    recorded.batches.clear()
    claude.backend.json(message("Hello"))
    claude.client.responses.create(model="claude-sonnet-4-5", input="hi")
    assert kinds(recorded) == ["run.start", "provider.call", "run.end"]


def test_an_enforced_request_records_the_format_once_whatever_its_attempts(
    claude: Harness, recorded: ListSink
) -> None:
    claude.backend.json(message('{"name": "Ada Lovelace"}'))  # no age: asked again
    claude.backend.json(message(ADA))
    claude.client.responses.parse(
        model="claude-sonnet-4-5",
        input="Ada, 36",
        text_format=Person,
        extra_headers={"x-outform-enforce": "1"},
    )
    events = recorded.flushed()
    assert [(e.attempt, e.name) for e in events if e.name.startswith(("format", "provider"))] == [
        (1, "format.native"),
        (1, "provider.call"),
        (2, "provider.call"),
    ]
