"""The Anthropic Messages adapter: what it sends, what it reads, and both over real HTTP.

Every body the adapter builds here is checked against the official `anthropic` SDK's request
types (`tests/providers/anthropic_wire.py`). Every reply and stream event the tests feed it is
checked against the SDK's response models, so the fakes stay wire-accurate.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import orjson
import pytest

from outform.errors import (
    BadRequestError,
    RateLimitError,
    ServerError,
    StreamInterruptedError,
)
from outform.errors import UsageError as Refused
from outform.providers.anthropic import AnthropicMessages
from outform.providers.base import (
    Delta,
    ForcedTool,
    FreeText,
    ImagePart,
    JsonObject,
    Message,
    NamedTool,
    NativeSchema,
    Request,
    Thinking,
    Tool,
    ToolCall,
    ToolChoice,
    Usage,
    WireRequest,
)
from outform.providers.registry import resolve
from outform.transport import RetryPolicy, Transport
from tests.providers.anthropic_wire import check_error, check_event, check_message, check_request
from tests.providers.deltas import decode as decode_events
from tests.providers.deltas import joined
from tests.providers.fake import FakeServer, Reply

MODEL = "claude-sonnet-4-6"
PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
    "additionalProperties": False,
}
WEATHER = Tool(
    "get_weather",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    "Current weather in a city",
)
ASK = (Message.system("Extract the person."), Message.user("Ada Lovelace, 36"))
PNG = b"\x89PNG\r\n\x1a\n fake image bytes"

adapter = AnthropicMessages()


def request(**fields: Any) -> Request:
    fields.setdefault("messages", ASK)
    return Request(MODEL, **fields)


def build(req: Request) -> WireRequest:
    """Build, and check the body against the SDK's MessageCreateParams."""
    wire = adapter.build(req)
    check_request(wire.body)
    return wire


# -- building: output mechanisms -----------------------------------------------------------


def test_a_native_schema_goes_in_output_config_format_the_ga_form() -> None:
    wire = build(request(output=NativeSchema("person", PERSON, strict=True)))
    assert wire.path == "/messages"  # under the registry's base URL, which ends in /v1
    assert wire.body["output_config"] == {"format": {"type": "json_schema", "schema": PERSON}}
    assert "output_format" not in wire.body  # the deprecated beta field
    assert wire.headers == {}  # no anthropic-beta; version and key belong to the endpoint
    assert wire.stream is None
    assert wire.body["system"] == "Extract the person."
    assert wire.body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Ada Lovelace, 36"}]}
    ]


def test_max_tokens_is_required_so_it_defaults_to_4096() -> None:
    assert build(request()).body["max_tokens"] == 4096
    assert build(request(max_tokens=300)).body["max_tokens"] == 300


def test_a_forced_tool_is_the_only_call_the_model_may_make() -> None:
    output = ForcedTool("record_person", PERSON, strict=True, description="Record the person")
    wire = build(request(output=output))
    assert wire.body["tools"] == [
        {
            "name": "record_person",
            "description": "Record the person",
            "input_schema": PERSON,
            "strict": True,
        }
    ]
    assert wire.body["tool_choice"] == {
        "type": "tool",
        "name": "record_person",
        "disable_parallel_tool_use": True,
    }
    assert "output_config" not in wire.body


def test_a_forced_tool_joins_the_callers_tools_under_its_own_name() -> None:
    wire = build(request(output=ForcedTool("answer", PERSON), tools=(WEATHER,)))
    assert [t["name"] for t in wire.body["tools"]] == ["get_weather", "answer"]
    assert "strict" not in wire.body["tools"][1]  # strict=None: the API default
    with pytest.raises(Refused, match="name"):
        adapter.build(request(output=ForcedTool("get_weather", PERSON), tools=(WEATHER,)))


def test_json_object_mode_does_not_exist_on_anthropic() -> None:
    with pytest.raises(Refused, match="no JSON-object mode") as caught:
        adapter.build(request(output=JsonObject()))
    assert caught.value.fix is not None and "schema" in caught.value.fix


def test_free_text_sends_no_output_fields() -> None:
    body = build(request(output=FreeText())).body
    assert set(body) == {"model", "max_tokens", "system", "messages"}


# -- building: messages --------------------------------------------------------------------


def test_a_conversation_with_images_tool_calls_and_results_maps_to_content_blocks() -> None:
    call_a = ToolCall("toolu_01A", "get_weather", '{"city": "Paris"}')
    call_b = ToolCall("toolu_01B", "get_weather", '{"city": "Oslo"}')
    messages = (
        Message.system("You are terse."),
        Message.user(
            "What is in these pictures?",
            ImagePart(data=PNG),
            ImagePart(url="https://example.com/cat.jpg"),
            ImagePart(url="data:image/webp;base64,UklGRg=="),
        ),
        Message.assistant("Let me check the weather.", [call_a, call_b]),
        Message.tool_result("toolu_01A", "18 C, clear"),
        Message.tool_result("toolu_01B", "4 C, snow"),
        Message.user("And tomorrow?"),
        Message.system("Answer in French."),
    )
    body = build(request(messages=messages, tools=(WEATHER,))).body
    assert body["system"] == "You are terse.\n\nAnswer in French."
    user, assistant, results = body["messages"]
    assert user["content"][1:] == [
        {
            "type": "image",
            "source": {
                "type": "base64",
                "media_type": "image/png",
                "data": ImagePart(data=PNG).base64,
            },
        },
        {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.jpg"}},
        {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/webp", "data": "UklGRg=="},
        },
    ]
    assert assistant == {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Let me check the weather."},
            {
                "type": "tool_use",
                "id": "toolu_01A",
                "name": "get_weather",
                "input": {"city": "Paris"},
            },
            {
                "type": "tool_use",
                "id": "toolu_01B",
                "name": "get_weather",
                "input": {"city": "Oslo"},
            },
        ],
    }
    # Both results share one user turn (the API requires it), the follow-up question after them.
    assert results == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_01A",
                "content": [{"type": "text", "text": "18 C, clear"}],
            },
            {
                "type": "tool_result",
                "tool_use_id": "toolu_01B",
                "content": [{"type": "text", "text": "4 C, snow"}],
            },
            {"type": "text", "text": "And tomorrow?"},
        ],
    }


def test_openai_style_dict_messages_are_accepted_through_the_neutral_model() -> None:
    from outform.providers.base import as_message

    messages = tuple(
        as_message(m)
        for m in (
            {"role": "developer", "content": "Be brief."},
            {
                "role": "user",
                "content": [
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw=="}}
                ],
            },
        )
    )
    body = build(request(messages=messages)).body
    assert body["system"] == "Be brief."
    assert body["messages"][0]["content"][0]["source"]["media_type"] == "image/png"


@pytest.mark.parametrize(
    ("message", "match"),
    [
        (Message.user(ImagePart(data=b"BM..", media_type="image/bmp")), "image/bmp"),
        (Message.user(ImagePart(url="data:image/png,notbase64")), "base64"),
        (Message.user(ImagePart()), "bytes or a URL"),
        (Message.assistant("", [ToolCall("t1", "f", "{not json")]), "not a JSON object"),
        (Message.assistant("", [ToolCall("t1", "f", "[1, 2]")]), "not a JSON object"),
        (Message("tool", ()), "id of the call"),
        (Message.user(""), "no content"),
    ],
)
def test_messages_the_api_would_refuse_are_refused_before_sending(
    message: Message, match: str
) -> None:
    with pytest.raises(Refused, match=match) as caught:
        adapter.build(request(messages=(message,)))
    assert caught.value.where is not None and caught.value.where.startswith("messages[0]")


# -- building: tools -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("choice", "wire"),
    [
        ("auto", {"type": "auto"}),
        ("none", {"type": "none"}),
        ("required", {"type": "any"}),
        (NamedTool("get_weather"), {"type": "tool", "name": "get_weather"}),
        (None, None),
    ],
)
def test_tool_choices(choice: ToolChoice | None, wire: dict[str, Any] | None) -> None:
    strict_tool = Tool("lookup", {"type": "object", "properties": {}}, strict=True)
    body = build(request(tools=(WEATHER, strict_tool), tool_choice=choice)).body
    assert body.get("tool_choice") == wire
    assert body["tools"][0] == {
        "name": "get_weather",
        "description": "Current weather in a city",
        "input_schema": WEATHER.parameters,
    }
    assert body["tools"][1]["strict"] is True


def test_a_tool_choice_without_tools_is_left_out_and_an_unknown_name_is_refused() -> None:
    assert "tool_choice" not in build(request(tool_choice="required")).body
    with pytest.raises(Refused, match="not among the tools"):
        adapter.build(request(tools=(WEATHER,), tool_choice=NamedTool("nope")))


# -- building: thinking --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("thinking", "expected", "effort", "max_tokens"),
    [
        (Thinking(budget_tokens=2048), {"type": "enabled", "budget_tokens": 2048}, None, 6144),
        (Thinking(), {"type": "enabled", "budget_tokens": 1024}, None, 5120),
        (Thinking(effort="high"), {"type": "adaptive"}, "high", 16384),
        (Thinking(effort="minimal"), {"type": "adaptive"}, "low", 16384),
        (
            Thinking(budget_tokens=4000, effort="medium"),
            {"type": "enabled", "budget_tokens": 4000},
            "medium",
            8096,
        ),
        (Thinking(enabled=False), None, None, 4096),
        (Thinking(enabled=False, effort="low"), None, "low", 4096),
    ],
)
def test_thinking_settings(
    thinking: Thinking, expected: dict[str, Any] | None, effort: str | None, max_tokens: int
) -> None:
    body = build(request(thinking=thinking)).body
    assert body.get("thinking") == expected
    assert body.get("output_config", {}).get("effort") == effort
    assert body["max_tokens"] == max_tokens


def test_effort_and_the_native_format_share_output_config() -> None:
    body = build(request(output=NativeSchema("p", PERSON), thinking=Thinking(effort="max"))).body
    assert body["output_config"] == {
        "effort": "max",
        "format": {"type": "json_schema", "schema": PERSON},
    }
    assert body["thinking"] == {"type": "adaptive"}


@pytest.mark.parametrize(
    "fields",
    [
        {"output": ForcedTool("record", PERSON)},
        {"tools": (WEATHER,), "tool_choice": "required"},
        {"tools": (WEATHER,), "tool_choice": NamedTool("get_weather")},
    ],
)
@pytest.mark.parametrize("thinking", [Thinking(budget_tokens=2048), Thinking(effort="high")])
def test_thinking_with_a_forced_tool_choice_is_refused_not_sent(
    fields: dict[str, Any], thinking: Thinking
) -> None:
    with pytest.raises(Refused, match="forced tool choice") as caught:
        adapter.build(request(thinking=thinking, **fields))
    assert caught.value.fix is not None and "enabled=False" in caught.value.fix
    # With thinking off the same request is fine.
    build(request(thinking=Thinking(enabled=False), **fields))


def test_thinking_budgets_the_api_would_refuse() -> None:
    with pytest.raises(Refused, match="below the minimum of 1024"):
        adapter.build(request(thinking=Thinking(budget_tokens=512)))
    with pytest.raises(Refused, match="larger than the thinking budget"):
        adapter.build(request(thinking=Thinking(budget_tokens=2048), max_tokens=2048))
    assert build(request(thinking=Thinking(budget_tokens=2048), max_tokens=2049))


# -- building: sampling, stop, stream, extra -----------------------------------------------


def test_temperature_is_never_sent_stop_sequences_and_stream_are() -> None:
    wire = build(request(temperature=0.0, stop=("END", "\n\n"), stream=True))
    assert "temperature" not in wire.body
    assert wire.body["stop_sequences"] == ["END", "\n\n"]
    assert wire.body["stream"] is True
    assert wire.stream == "sse"


def test_extra_is_merged_last_and_verbatim() -> None:
    wire = adapter.build(request(extra={"max_tokens": 99, "temperature": 0.2}))
    # Not validated: the SDK no longer knows `temperature`; extra is the caller's escape hatch.
    assert wire.body["max_tokens"] == 99
    assert wire.body["temperature"] == 0.2


# -- parsing -------------------------------------------------------------------------------


def message(
    content: list[dict[str, Any]], stop: str | None = "end_turn", **fields: Any
) -> dict[str, Any]:
    """A realistic Messages reply, checked against the SDK's `Message`."""
    body: dict[str, Any] = {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-6",
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 180, "output_tokens": 14},
    }
    body.update(fields)
    check_message(body)
    return body


def test_a_native_schema_reply_is_the_json_text() -> None:
    body = message(
        [{"type": "text", "text": '{"name":"Ada Lovelace","age":36}'}],
        usage={
            "input_tokens": 20,
            "output_tokens": 14,
            "cache_read_input_tokens": 150,
            "cache_creation_input_tokens": 10,
            "output_tokens_details": {"thinking_tokens": 0},
        },
    )
    reply = adapter.parse(request(output=NativeSchema("p", PERSON)), body)
    assert reply.text == '{"name":"Ada Lovelace","age":36}'
    assert reply.finish_reason == "stop"
    assert reply.usage == Usage(input_tokens=180, output_tokens=14, cached_tokens=150)
    assert reply.model == "claude-sonnet-4-6"
    assert reply.raw is body


def test_a_forced_tool_reply_surfaces_its_input_as_the_text() -> None:
    body = message(
        [
            {
                "type": "tool_use",
                "id": "toolu_01",
                "name": "record",
                "input": {"name": "Ada", "age": 36},
            }
        ],
        stop="tool_use",
    )
    reply = adapter.parse(request(output=ForcedTool("record", PERSON)), body)
    assert orjson.loads(reply.text) == {"name": "Ada", "age": 36}
    assert reply.tool_calls == ()
    assert reply.finish_reason == "stop"


def test_tool_calls_the_model_chose_are_returned_as_calls() -> None:
    body = message(
        [
            {"type": "text", "text": "Checking both."},
            {
                "type": "tool_use",
                "id": "toolu_A",
                "name": "get_weather",
                "input": {"city": "Paris"},
            },
            {"type": "tool_use", "id": "toolu_B", "name": "get_weather", "input": {}},
        ],
        stop="tool_use",
    )
    reply = adapter.parse(request(tools=(WEATHER,)), body)
    assert reply.text == "Checking both."
    assert reply.tool_calls == (
        ToolCall("toolu_A", "get_weather", '{"city":"Paris"}'),
        ToolCall("toolu_B", "get_weather", "{}"),
    )
    assert reply.finish_reason == "tool_calls"


def test_thinking_blocks_are_the_thinking_not_the_text() -> None:
    body = message(
        [
            {"type": "thinking", "thinking": "The age is 36.", "signature": "EqQBCgIYAhIM"},
            {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"},
            {"type": "text", "text": '{"name":"Ada","age":36}'},
        ],
        usage={
            "input_tokens": 50,
            "output_tokens": 90,
            "output_tokens_details": {"thinking_tokens": 70},
        },
    )
    reply = adapter.parse(request(thinking=Thinking()), body)
    assert reply.thinking == "The age is 36."
    assert reply.text == '{"name":"Ada","age":36}'
    assert reply.usage.reasoning_tokens == 70


def test_a_truncated_reply_finishes_with_length() -> None:
    body = message([{"type": "text", "text": '{"name":"Ada Lov'}], stop="max_tokens")
    reply = adapter.parse(request(), body)
    assert (reply.text, reply.finish_reason) == ('{"name":"Ada Lov', "length")


def test_a_refusal_carries_its_explanation() -> None:
    body = message(
        [{"type": "text", "text": "I can"}],
        stop="refusal",
        stop_details={"type": "refusal", "category": "cyber", "explanation": "Malware request."},
    )
    reply = adapter.parse(request(), body)
    assert reply.finish_reason == "refusal"
    assert reply.refusal == "Malware request."
    bare = message([], stop="refusal", stop_details={"type": "refusal", "category": "bio"})
    assert adapter.parse(request(), bare).refusal == "refused (bio)"


@pytest.mark.parametrize(
    ("stop", "finish"),
    [
        ("stop_sequence", "stop"),
        ("pause_turn", "other"),
        ("model_context_window_exceeded", "length"),
    ],
)
def test_other_stop_reasons(stop: str, finish: str) -> None:
    assert (
        adapter.parse(request(), message([{"type": "text", "text": "x"}], stop=stop)).finish_reason
        == finish
    )


# -- streaming -----------------------------------------------------------------------------


def start(input_tokens: int = 412) -> dict[str, Any]:
    return {
        "type": "message_start",
        "message": {
            "id": "msg_014p7gG3wDgGV9EUtLvnow3U",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-6",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {
                "input_tokens": input_tokens,
                "output_tokens": 1,
                "cache_read_input_tokens": 0,
            },
        },
    }


def block_start(index: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def delta(index: int, **fields: Any) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": fields}


def stop_block(index: int) -> dict[str, Any]:
    return {"type": "content_block_stop", "index": index}


def end(stop: str, output_tokens: int, **details: Any) -> list[dict[str, Any]]:
    delta_body: dict[str, Any] = {"stop_reason": stop, "stop_sequence": None}
    delta_body.update(details)
    return [
        {"type": "message_delta", "delta": delta_body, "usage": {"output_tokens": output_tokens}},
        {"type": "message_stop"},
    ]


def text_stream(*pieces: str) -> list[dict[str, Any]]:
    return [
        start(),
        block_start(0, {"type": "text", "text": ""}),
        {"type": "ping"},
        *(delta(0, type="text_delta", text=p) for p in pieces),
        stop_block(0),
        *end("end_turn", 15),
    ]


def decode(req: Request, events: Sequence[Mapping[str, Any]]) -> list[Delta]:
    return decode_events(adapter, req, events, check_event)


def test_a_streamed_native_reply_arrives_as_text_then_usage_then_finish() -> None:
    deltas = decode(
        request(output=NativeSchema("p", PERSON)), text_stream('{"name":', '"Ada","age":36}')
    )
    assert joined(deltas, "text") == '{"name":"Ada","age":36}'
    assert [d.kind for d in deltas][-2:] == ["usage", "finish"]
    assert deltas[-2].usage == Usage(input_tokens=412, output_tokens=15)
    assert deltas[-1].finish_reason == "stop"


def test_a_streamed_forced_tool_arrives_as_text() -> None:
    events = [
        start(),
        block_start(0, {"type": "tool_use", "id": "toolu_01", "name": "record", "input": {}}),
        delta(0, type="input_json_delta", partial_json=""),
        delta(0, type="input_json_delta", partial_json='{"name": "Ada", '),
        delta(0, type="input_json_delta", partial_json='"age": 36}'),
        stop_block(0),
        *end("tool_use", 30),
    ]
    deltas = decode(request(output=ForcedTool("record", PERSON)), events)
    assert joined(deltas, "text") == '{"name": "Ada", "age": 36}'
    assert not [d for d in deltas if d.kind == "tool_call"]
    assert deltas[-1].finish_reason == "stop"


def test_streamed_thinking_and_tool_calls_keep_their_own_channels() -> None:
    events = [
        start(),
        block_start(0, {"type": "thinking", "thinking": "", "signature": ""}),
        delta(0, type="thinking_delta", thinking="Two cities, "),
        delta(0, type="thinking_delta", thinking="two calls."),
        delta(0, type="signature_delta", signature="EqQBCgIYAhIM"),
        stop_block(0),
        block_start(1, {"type": "text", "text": ""}),
        delta(1, type="text_delta", text="Checking."),
        stop_block(1),
        block_start(2, {"type": "tool_use", "id": "toolu_A", "name": "get_weather", "input": {}}),
        delta(2, type="input_json_delta", partial_json='{"city": "Par'),
        delta(2, type="input_json_delta", partial_json='is"}'),
        stop_block(2),
        block_start(3, {"type": "tool_use", "id": "toolu_B", "name": "get_weather", "input": {}}),
        delta(3, type="input_json_delta", partial_json='{"city": "Oslo"}'),
        stop_block(3),
        *end("tool_use", 80),
    ]
    deltas = decode(request(tools=(WEATHER,), thinking=Thinking()), events)
    assert joined(deltas, "thinking") == "Two cities, two calls."
    assert joined(deltas, "text") == "Checking."
    calls = [d for d in deltas if d.kind == "tool_call"]
    assert [(d.index, d.tool_call_id, d.tool_name) for d in calls if d.tool_call_id] == [
        (0, "toolu_A", "get_weather"),
        (1, "toolu_B", "get_weather"),
    ]
    assert "".join(d.text for d in calls if d.index == 0) == '{"city": "Paris"}'
    assert deltas[-1].finish_reason == "tool_calls"


def test_a_streamed_refusal_says_so_before_finishing() -> None:
    events = [
        start(),
        block_start(0, {"type": "text", "text": ""}),
        delta(0, type="text_delta", text="Here is"),
        stop_block(0),
        *end(
            "refusal", 5, stop_details={"type": "refusal", "category": "cyber", "explanation": None}
        ),
    ]
    deltas = decode(request(), events)
    assert [(d.kind, d.text) for d in deltas if d.kind == "refusal"] == [
        ("refusal", "refused (cyber)")
    ]
    assert deltas[-1].finish_reason == "refusal"


def test_an_error_event_fed_directly_raises() -> None:
    event = {"type": "error", "error": {"type": "api_error", "message": "Internal server error"}}
    check_event(event)
    with pytest.raises(StreamInterruptedError, match="Internal server error"):
        adapter.decoder(request()).feed(event)


def test_an_overloaded_error_event_fed_directly_is_a_rate_limit_as_over_http() -> None:
    event = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    check_event(event)
    with pytest.raises(RateLimitError, match="Overloaded"):
        adapter.decoder(request()).feed(event)


# -- over HTTP -----------------------------------------------------------------------------


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as fake:
        yield fake


def no_sleep(seconds: float) -> None:
    return None


def call(server: FakeServer, req: Request, *, retries: int = 2) -> Any:
    resolved = resolve(f"anthropic:{req.model}", base_url=server.url, api_key="sk-ant-test-key")
    assert isinstance(resolved.adapter, AnthropicMessages)
    assert resolved.adapter.auth == resolved.spec.auth == resolved.endpoint.auth == "x-api-key"
    with Transport(sleep=no_sleep, retry=RetryPolicy(retries=retries)) as transport:
        wire = build(req)
        if req.stream:
            decoder = resolved.adapter.decoder(req)
            return [
                d
                for event in transport.stream(resolved.endpoint, wire)
                for d in decoder.feed(event)
            ]
        return resolved.adapter.parse(req, transport.send(resolved.endpoint, wire))


def sse(events: Sequence[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """The SSE frames Anthropic sends: each event named after its type."""
    return [(e["type"], e) for e in events]


def test_a_call_through_the_registry_endpoint_sends_what_was_built(server: FakeServer) -> None:
    server.json(message([{"type": "text", "text": '{"name":"Ada","age":36}'}]))
    req = request(output=NativeSchema("p", PERSON))
    reply = call(server, req)
    assert orjson.loads(reply.text) == {"name": "Ada", "age": 36}
    received = server.last
    assert (received.method, received.path) == ("POST", "/v1/messages")
    assert received.json == adapter.build(req).body
    assert received.headers["x-api-key"] == "sk-ant-test-key"
    assert received.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in received.headers
    assert "anthropic-beta" not in received.headers


def test_a_stream_over_sse_decodes_to_the_reply(server: FakeServer) -> None:
    server.stream(sse(text_stream('{"name":"Ada",', '"age":36}')))
    deltas = call(server, request(output=NativeSchema("p", PERSON), stream=True))
    assert orjson.loads(joined(deltas, "text")) == {"name": "Ada", "age": 36}
    assert deltas[-1].finish_reason == "stop"
    assert server.last.json["stream"] is True
    assert server.last.headers["accept"] == "text/event-stream"


def test_a_schema_the_api_rejects_is_a_bad_request_not_retried(server: FakeServer) -> None:
    error = {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "output_config.format.schema: For 'integer' type, "
            "property 'minimum' is not supported",
        },
        "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy",
    }
    check_error(error)
    server.json(error, status=400)
    with pytest.raises(BadRequestError, match="'minimum' is not supported") as caught:
        call(server, request(output=NativeSchema("p", PERSON)))
    assert caught.value.status == 400 and caught.value.provider == "anthropic"
    assert len(server.requests) == 1


def test_a_rate_limit_is_retried_after_the_wait_asked_for(server: FakeServer) -> None:
    error = {
        "type": "error",
        "error": {
            "type": "rate_limit_error",
            "message": "Number of request tokens has exceeded your per-minute rate limit",
        },
    }
    check_error(error)
    server.reply(Reply(status=429, body=error, headers={"retry-after": "2"}))
    server.json(message([{"type": "text", "text": "{}"}]))
    assert call(server, request()).text == "{}"
    assert len(server.requests) == 2
    server.reply(Reply(status=429, body=error, headers={"retry-after": "2"}))
    with pytest.raises(RateLimitError) as caught:
        call(server, request(), retries=0)
    assert caught.value.retry_after == 2.0


def test_server_errors_are_retried_then_reported(server: FakeServer) -> None:
    error = {"type": "error", "error": {"type": "api_error", "message": "Internal server error"}}
    check_error(error)
    for _ in range(3):
        server.json(error, status=500)
    with pytest.raises(ServerError, match="Internal server error"):
        call(server, request())
    assert len(server.requests) == 3


def test_a_stream_that_breaks_off_is_reported_after_what_arrived(server: FakeServer) -> None:
    server.stream(sse(text_stream('{"name":', '"Ada"}')), drop_after=4)
    resolved = resolve(f"anthropic:{MODEL}", base_url=server.url, api_key="sk-ant-test-key")
    req = request(stream=True)
    decoder = adapter.decoder(req)
    received: list[Delta] = []
    with Transport(sleep=no_sleep) as transport, pytest.raises(StreamInterruptedError):
        for event in transport.stream(resolved.endpoint, build(req)):
            received += decoder.feed(event)
    assert joined(received, "text") == '{"name":'
    assert not [d for d in received if d.kind == "finish"]


def test_an_overloaded_error_event_mid_stream_is_raised(server: FakeServer) -> None:
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    check_event(overloaded)
    server.stream(sse([start(), block_start(0, {"type": "text", "text": ""}), overloaded]))
    # Transport reads the error's type: an overloaded provider is a rate limit to back off from.
    with pytest.raises(RateLimitError, match="Overloaded"):
        call(server, request(stream=True))
