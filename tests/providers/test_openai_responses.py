"""OpenAI Responses API: what goes on the wire, what comes back.

Request bodies are checked against `CreateResponse` of OpenAI's OpenAPI document; reply bodies
against `Response` and stream events against `ResponseStreamEvent` (and the official SDK's
types for both).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from outform.errors import (
    BadRequestError,
    ProviderError,
    RateLimitError,
    StreamInterruptedError,
    UsageError,
)
from outform.providers.base import (
    Adapter,
    Delta,
    FinishReason,
    ForcedTool,
    ImagePart,
    JsonObject,
    Message,
    NamedTool,
    NativeSchema,
    Output,
    Request,
    Thinking,
    Tool,
    ToolCall,
    Usage,
)
from outform.providers.openai_responses import OpenAIResponses
from outform.providers.registry import PROVIDERS, load_adapter
from outform.transport import Endpoint, Secret, Transport
from tests.providers.deltas import decode as decode_events
from tests.providers.fake import FakeServer
from tests.providers.openai_wire import (
    Conformance,
    Events,
    function_call_item,
    message_item,
    output_text,
    reasoning_item,
    response_body,
    response_usage,
)
from tests.providers.openapi import load

PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": ["integer", "null"]}},
    "required": ["name", "age"],
    "additionalProperties": False,
}
WEATHER = Tool(
    "get_weather",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    description="Current weather in a city",
)
ASK = (Message.system("Extract the person as JSON."), Message.user("Ada Lovelace, 36"))
ADA = '{"name":"Ada Lovelace","age":36}'


@pytest.fixture(scope="session")
def conforms() -> Conformance:
    return Conformance(load())


def request(output: Output | None = None, **fields: Any) -> Request:
    fields.setdefault("messages", ASK)
    return Request(
        "gpt-5.2", output=output or NativeSchema("person", PERSON, strict=True), **fields
    )


def body(conforms: Conformance, req: Request) -> dict[str, Any]:
    wire = OpenAIResponses().build(req)
    assert wire.path == "/responses"
    conforms("CreateResponse", wire.body)
    return dict(wire.body)


# -- building ------------------------------------------------------------------------------


def test_a_schema_request_is_flat_text_format_with_instructions(conforms: Conformance) -> None:
    sent = body(conforms, request(NativeSchema("person", PERSON, strict=True, description="P")))
    assert sent == {
        "model": "gpt-5.2",
        "instructions": "Extract the person as JSON.",
        "input": [
            {"role": "user", "content": [{"type": "input_text", "text": "Ada Lovelace, 36"}]}
        ],
        "text": {
            "format": {
                "type": "json_schema",
                "name": "person",
                "description": "P",
                "schema": PERSON,
                "strict": True,
            }
        },
        "store": False,
    }


def test_json_object_mode_keeps_the_system_text_where_the_json_check_looks(
    conforms: Conformance,
) -> None:
    sent = body(conforms, request(JsonObject()))
    assert "instructions" not in sent
    assert sent["input"][0] == {
        "role": "system",
        "content": [{"type": "input_text", "text": "Extract the person as JSON."}],
    }
    assert sent["text"] == {"format": {"type": "json_object"}}


def test_a_forced_tool_is_a_flat_function_tool_and_a_named_choice(conforms: Conformance) -> None:
    sent = body(conforms, request(ForcedTool("person", PERSON, strict=True)))
    assert sent["tools"] == [
        {"type": "function", "name": "person", "parameters": PERSON, "strict": True}
    ]
    assert sent["tool_choice"] == {"type": "function", "name": "person"}
    assert sent["parallel_tool_calls"] is False
    assert "text" not in sent


def test_a_tool_that_does_not_ask_for_strict_is_sent_strict_false(conforms: Conformance) -> None:
    sent = body(conforms, request(tools=(WEATHER,), tool_choice=NamedTool("get_weather")))
    assert sent["tools"] == [
        {
            "type": "function",
            "name": "get_weather",
            "description": "Current weather in a city",
            "parameters": WEATHER.parameters,
            "strict": False,
        }
    ]
    assert sent["tool_choice"] == {"type": "function", "name": "get_weather"}


@pytest.mark.parametrize("choice", ["auto", "none", "required"])
def test_tool_choice_strings_pass_through(choice: Any, conforms: Conformance) -> None:
    assert body(conforms, request(tools=(WEATHER,), tool_choice=choice))["tool_choice"] == choice


def test_a_conversation_with_images_and_tool_turns(conforms: Conformance) -> None:
    call = ToolCall("call_7Qx", "get_weather", '{"city":"Paris"}')
    messages = (
        Message.system("Be brief."),
        Message.user("What is this?", ImagePart(url="https://example.com/a.png")),
        Message.user(ImagePart(data=b"\x89PNG")),
        Message.assistant("Let me check.", tool_calls=[call]),
        Message.tool_result("call_7Qx", '{"temp": 21}'),
        Message.assistant("It is 21 degrees."),
        Message.user("Thanks"),
    )
    sent = body(conforms, Request("gpt-5.2", messages, tools=(WEATHER,)))
    assert sent["instructions"] == "Be brief."
    assert sent["input"] == [
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "What is this?"},
                {"type": "input_image", "image_url": "https://example.com/a.png", "detail": "auto"},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "input_image",
                    "image_url": "data:image/png;base64,iVBORw==",
                    "detail": "auto",
                }
            ],
        },
        {"role": "assistant", "content": "Let me check."},
        {
            "type": "function_call",
            "call_id": "call_7Qx",
            "name": "get_weather",
            "arguments": '{"city":"Paris"}',
        },
        {"type": "function_call_output", "call_id": "call_7Qx", "output": '{"temp": 21}'},
        {"role": "assistant", "content": "It is 21 degrees."},
        {"role": "user", "content": [{"type": "input_text", "text": "Thanks"}]},
    ]


@pytest.mark.parametrize(
    ("thinking", "reasoning"),
    [
        (Thinking(effort="high"), {"effort": "high", "summary": "auto"}),
        (Thinking(), {"summary": "auto"}),
        (Thinking(enabled=False), {"effort": "none"}),
        (Thinking(effort="minimal", budget_tokens=999), {"effort": "minimal", "summary": "auto"}),
    ],
)
def test_thinking_is_the_reasoning_object(
    thinking: Thinking, reasoning: dict[str, Any], conforms: Conformance
) -> None:
    assert body(conforms, request(thinking=thinking))["reasoning"] == reasoning


def test_settings_and_streaming(conforms: Conformance) -> None:
    wire = OpenAIResponses().build(request(temperature=0.3, max_tokens=400, stream=True))
    conforms("CreateResponse", wire.body)
    assert (wire.body["temperature"], wire.body["max_output_tokens"]) == (0.3, 400)
    assert wire.body["stream"] is True
    assert wire.stream == "sse"


def test_extra_fields_win_even_over_store(conforms: Conformance) -> None:
    sent = body(conforms, request(extra={"store": True, "metadata": {"run": "7"}}))
    assert sent["store"] is True
    assert sent["metadata"] == {"run": "7"}


@pytest.mark.parametrize(
    ("fields", "match"),
    [
        ({"stop": ("END",)}, "no stop sequences"),
        ({"max_tokens": 8}, "at least 16"),
        ({"output": ForcedTool("get_weather", PERSON), "tools": (WEATHER,)}, "get_weather"),
        ({"messages": (Message("tool", ()),)}, "id of the call"),
    ],
)
def test_requests_the_api_cannot_take_are_refused(fields: dict[str, Any], match: str) -> None:
    with pytest.raises(UsageError, match=match):
        OpenAIResponses().build(request(**fields))


def test_the_spec_check_tells_the_two_apis_schema_shapes_apart(conforms: Conformance) -> None:
    nested = dict(OpenAIResponses().build(request()).body)
    nested["text"] = {"format": {"type": "json_schema", "json_schema": {"name": "p", "schema": {}}}}
    with pytest.raises(AssertionError, match="'name' is a required property"):
        conforms("CreateResponse", nested)


def test_it_is_an_adapter() -> None:
    adapter: Adapter = OpenAIResponses()  # mypy checks the protocol; the run loop relies on it
    assert adapter.auth == "bearer"


def test_the_registry_builds_this_adapter() -> None:
    adapter = load_adapter(PROVIDERS["openai-responses"])
    assert isinstance(adapter, OpenAIResponses)
    assert adapter.name == "openai-responses"


# -- parsing -------------------------------------------------------------------------------


def test_a_json_reply_with_reasoning_and_usage(conforms: Conformance) -> None:
    reply = response_body(
        reasoning_item("The user wants a person.", "Age is 36."),
        message_item(output_text(ADA)),
        usage=response_usage(40, 120, reasoning=96, cached=32),
    )
    conforms("Response", reply)
    parsed = OpenAIResponses().parse(request(), reply)
    assert parsed.text == ADA
    assert parsed.finish_reason == "stop"
    assert parsed.thinking == "The user wants a person.\n\nAge is 36."
    assert parsed.usage == Usage(40, 120, 96, 32)
    assert parsed.model == "gpt-5.2-2025-12-11"
    assert parsed.raw is reply


def test_a_refusal_part(conforms: Conformance) -> None:
    reply = response_body(message_item({"type": "refusal", "refusal": "I can't help with that."}))
    conforms("Response", reply)
    parsed = OpenAIResponses().parse(request(), reply)
    assert (parsed.text, parsed.refusal, parsed.finish_reason) == (
        "",
        "I can't help with that.",
        "refusal",
    )


@pytest.mark.parametrize(
    ("reason", "finish"), [("max_output_tokens", "length"), ("content_filter", "content_filter")]
)
def test_an_incomplete_reply(reason: str, finish: str, conforms: Conformance) -> None:
    reply = response_body(
        message_item(output_text('{"name":"Ada'), status="incomplete"),
        status="incomplete",
        incomplete=reason,
    )
    conforms("Response", reply)
    parsed = OpenAIResponses().parse(request(), reply)
    assert (parsed.text, parsed.finish_reason) == ('{"name":"Ada', finish)


def test_function_calls(conforms: Conformance) -> None:
    reply = response_body(
        function_call_item("call_1", "get_weather", '{"city":"Paris"}', item_id="fc_1"),
        function_call_item("call_2", "get_weather", '{"city":"Oslo"}', item_id="fc_2"),
    )
    conforms("Response", reply)
    parsed = OpenAIResponses().parse(Request("m", ASK, tools=(WEATHER,)), reply)
    assert parsed.tool_calls == (
        ToolCall("call_1", "get_weather", '{"city":"Paris"}'),
        ToolCall("call_2", "get_weather", '{"city":"Oslo"}'),
    )
    assert (parsed.text, parsed.finish_reason) == ("", "tool_calls")


def test_the_forced_call_is_the_reply_text(conforms: Conformance) -> None:
    reply = response_body(reasoning_item(), function_call_item("call_9", "person", ADA))
    conforms("Response", reply)
    parsed = OpenAIResponses().parse(request(ForcedTool("person", PERSON)), reply)
    assert (parsed.text, parsed.tool_calls, parsed.finish_reason) == (ADA, (), "stop")
    assert parsed.thinking is None


# A reply is read only when the response finished: `completed`, or `incomplete` (cut short,
# its finish reason says why). Otherwise there is no answer to read, only an error to raise.

LEAKED = "sk-proj-LEAKME1234567890abcdef"


def test_a_failed_response_raises_the_providers_error_and_code(conforms: Conformance) -> None:
    message = f"The model failed. Request made with key {LEAKED}."
    reply = response_body(status="failed", error={"code": "server_error", "message": message})
    conforms("Response", reply)
    with pytest.raises(ProviderError) as caught:
        OpenAIResponses().parse(request(), reply)
    error = caught.value
    assert type(error) is ProviderError  # a whole reply: not a stream that broke off
    assert "(server_error): The model failed." in error.what
    assert error.provider == "openai-responses"
    assert error.body is not None and "server_error" in error.body
    for text in (str(error), error.what, error.body):
        assert LEAKED not in text


def test_a_response_failed_on_a_rate_limit_is_a_rate_limit_error(conforms: Conformance) -> None:
    reply = response_body(
        status="failed", error={"code": "rate_limit_exceeded", "message": "Slow down."}
    )
    conforms("Response", reply)
    with pytest.raises(RateLimitError, match="rate_limit_exceeded"):
        OpenAIResponses().parse(request(), reply)


@pytest.mark.parametrize("status", ["cancelled", "in_progress", "queued"])
def test_a_response_that_did_not_complete_is_not_read_as_a_reply(
    status: str, conforms: Conformance
) -> None:
    """A cut value must not pass for an answer: `background` responses come back unfinished."""
    reply = response_body(message_item(output_text('{"name":"Ada'), status="in_progress"))
    reply["status"] = status
    conforms("Response", reply)
    with pytest.raises(ProviderError, match=f"did not complete \\(status '{status}'\\)") as caught:
        OpenAIResponses().parse(request(), reply)
    assert caught.value.fix is not None


# -- stream decoding -----------------------------------------------------------------------


def decode(req: Request, events: list[dict[str, Any]]) -> list[Delta]:
    return decode_events(OpenAIResponses(), req, events)


def test_a_text_stream(conforms: Conformance) -> None:
    ev = Events()
    events = [
        ev("response.created", response=response_body(status="in_progress")),
        ev("response.in_progress", response=response_body(status="in_progress")),
        ev(
            "response.output_item.added",
            output_index=0,
            item={"id": "rs_1", "type": "reasoning", "summary": []},
        ),
        ev(
            "response.reasoning_summary_part.added",
            item_id="rs_1",
            output_index=0,
            summary_index=0,
            part={"type": "summary_text", "text": ""},
        ),
        ev(
            "response.reasoning_summary_text.delta",
            item_id="rs_1",
            output_index=0,
            summary_index=0,
            delta="Wants a person.",
        ),
        ev(
            "response.reasoning_summary_text.delta",
            item_id="rs_1",
            output_index=0,
            summary_index=1,
            delta="Age 36.",
        ),
        *ev.text_message(1, '{"name":"Ada Lovelace",', '"age":36}'),
        ev(
            "response.completed",
            response=response_body(
                reasoning_item("Wants a person.", "Age 36.", item_id="rs_1"),
                message_item(output_text(ADA)),
                usage=response_usage(30, 50, reasoning=20),
            ),
        ),
    ]
    conforms.all("ResponseStreamEvent", events)
    assert decode(request(stream=True), events) == [
        Delta("thinking", "Wants a person."),
        Delta("thinking", "\n\nAge 36."),
        Delta("text", '{"name":"Ada Lovelace",'),
        Delta("text", '"age":36}'),
        Delta("usage", usage=Usage(30, 50, 20)),
        Delta("finish", finish_reason="stop"),
    ]


def test_function_call_arguments_are_numbered_by_announcement(conforms: Conformance) -> None:
    ev = Events()
    first = ev.function_call(1, "call_1", "get_weather", '{"city":', '"Paris"}', item_id="fc_1")
    second = ev.function_call(2, "call_2", "get_weather", '{"city":"Oslo"}', item_id="fc_2")
    done = ev(
        "response.completed",
        response=response_body(
            reasoning_item(),
            function_call_item("call_1", "get_weather", '{"city":"Paris"}', item_id="fc_1"),
            function_call_item("call_2", "get_weather", '{"city":"Oslo"}', item_id="fc_2"),
        ),
    )
    events = [*first, *second, done]
    conforms.all("ResponseStreamEvent", events)
    deltas = decode(Request("m", ASK, tools=(WEATHER,), stream=True), events)
    assert deltas[:5] == [
        Delta("tool_call", "", 0, "call_1", "get_weather"),
        Delta("tool_call", '{"city":', 0),
        Delta("tool_call", '"Paris"}', 0),
        Delta("tool_call", "", 1, "call_2", "get_weather"),
        Delta("tool_call", '{"city":"Oslo"}', 1),
    ]
    assert deltas[-1] == Delta("finish", finish_reason="tool_calls")


def test_the_forced_calls_arguments_stream_as_text(conforms: Conformance) -> None:
    ev = Events()
    events = [
        *ev.function_call(
            0, "call_9", "person", '{"name":"Ada Lovelace",', '"age":36}', item_id="fc_9"
        ),
        ev(
            "response.completed",
            response=response_body(function_call_item("call_9", "person", ADA)),
        ),
    ]
    conforms.all("ResponseStreamEvent", events)
    deltas = decode(request(ForcedTool("person", PERSON), stream=True), events)
    assert deltas == [
        Delta("text", '{"name":"Ada Lovelace",'),
        Delta("text", '"age":36}'),
        Delta("usage", usage=Usage(36, 22)),
        Delta("finish", finish_reason="stop"),
    ]


def test_a_streamed_refusal(conforms: Conformance) -> None:
    ev = Events()
    where = {"item_id": "msg_1", "output_index": 0, "content_index": 0}
    refusal = {"type": "refusal", "refusal": "I can't help."}
    events = [
        ev("response.refusal.delta", **where, delta="I can't "),
        ev("response.refusal.delta", **where, delta="help."),
        ev("response.refusal.done", **where, refusal="I can't help."),
        ev("response.completed", response=response_body(message_item(refusal, item_id="msg_1"))),
    ]
    conforms.all("ResponseStreamEvent", events)
    deltas = decode(request(stream=True), events)
    assert [d.text for d in deltas if d.kind == "refusal"] == ["I can't ", "help."]
    assert deltas[-1] == Delta("finish", finish_reason="refusal")


def test_an_incomplete_stream_finishes_with_length(conforms: Conformance) -> None:
    ev = Events()
    event = ev(
        "response.incomplete",
        response=response_body(
            message_item(output_text('{"na'), status="incomplete"),
            status="incomplete",
            incomplete="max_output_tokens",
        ),
    )
    conforms("ResponseStreamEvent", event)
    assert decode(request(), [event])[-1] == Delta("finish", finish_reason="length")


def test_an_error_event_is_raised(conforms: Conformance) -> None:
    event = Events()("error", code="server_error", message="Something broke", param=None)
    conforms("ResponseStreamEvent", event)
    with pytest.raises(StreamInterruptedError, match="Something broke"):
        decode(request(), [event])


def test_a_response_failed_event_raises_the_error_it_carries(conforms: Conformance) -> None:
    ev = Events()
    failed = response_body(
        message_item(output_text('{"name":"Ada'), status="incomplete"),
        status="failed",
        error={"code": "server_error", "message": f"The model failed ({LEAKED})."},
    )
    events = [*ev.text_message(0, '{"name":"Ada')[:3], ev("response.failed", response=failed)]
    conforms.all("ResponseStreamEvent", events)
    decoder, received = OpenAIResponses().decoder(request(stream=True)), []
    with pytest.raises(StreamInterruptedError) as caught:
        for event in events:
            received += decoder.feed(event)
    assert received == [Delta("text", '{"name":"Ada')]  # and no finish: nothing is complete
    error = caught.value
    assert "(server_error): The model failed" in error.what
    for text in (str(error), error.what, error.body or ""):
        assert LEAKED not in text


@pytest.mark.parametrize(
    ("reason", "finish"),
    [("max_output_tokens", "length"), ("content_filter", "content_filter"), (None, "other")],
)
def test_a_response_incomplete_event_finishes_with_its_reason(
    reason: str | None, finish: FinishReason, conforms: Conformance
) -> None:
    event = Events()(
        "response.incomplete",
        response=response_body(
            message_item(output_text('{"na'), status="incomplete"),
            status="incomplete",
            incomplete=reason,
        ),
    )
    conforms("ResponseStreamEvent", event)
    assert decode(request(), [event])[-1] == Delta("finish", finish_reason=finish)


# -- over HTTP -----------------------------------------------------------------------------


@pytest.fixture
def server(conforms: Conformance) -> Iterator[FakeServer]:
    """The fake server; every body it received is checked against the spec at the end."""
    with FakeServer() as fake:
        yield fake
    for received in fake.requests:
        conforms("CreateResponse", received.json)


def endpoint(server: FakeServer) -> Endpoint:
    return Endpoint("openai-responses", server.url + "/v1", api_key=Secret("sk-test-123"))


def test_a_schema_call_over_http(server: FakeServer, conforms: Conformance) -> None:
    adapter, req = OpenAIResponses(), request()
    reply = response_body(message_item(output_text(ADA)))
    conforms("Response", reply)
    server.json(reply)
    with Transport() as transport:
        parsed = adapter.parse(req, transport.send(endpoint(server), adapter.build(req)))
    assert parsed.text == ADA
    assert (server.last.method, server.last.path) == ("POST", "/v1/responses")
    assert server.last.headers["authorization"] == "Bearer sk-test-123"
    assert server.last.json == adapter.build(req).body
    conforms("CreateResponse", server.last.json)


def test_a_named_event_stream_over_http(server: FakeServer, conforms: Conformance) -> None:
    """OpenAI names each SSE event (`event: response.output_text.delta`) as well as typing it."""
    adapter, req = OpenAIResponses(), request(stream=True)
    ev = Events()
    events = [
        ev("response.created", response=response_body(status="in_progress")),
        *ev.text_message(0, '{"name":', '"Ada Lovelace","age":36}'),
        ev("response.completed", response=response_body(message_item(output_text(ADA)))),
    ]
    conforms.all("ResponseStreamEvent", events)
    server.stream([(e["type"], e) for e in events])
    with Transport() as transport:
        decoder = adapter.decoder(req)
        stream = transport.stream(endpoint(server), adapter.build(req))
        deltas = [d for event in stream for d in decoder.feed(event)]
    assert "".join(d.text for d in deltas if d.kind == "text") == ADA
    assert deltas[-1] == Delta("finish", finish_reason="stop")
    assert server.last.json["stream"] is True


def test_an_error_event_over_http_is_raised_by_transport(
    server: FakeServer, conforms: Conformance
) -> None:
    ev = Events()
    events = [
        *ev.text_message(0, "{")[:3],
        ev("error", code="rate_limit_exceeded", message="Rate limit reached", param=None),
    ]
    conforms.all("ResponseStreamEvent", events)
    server.stream([(e["type"], e) for e in events])
    adapter, req = OpenAIResponses(), request(stream=True)
    decoder, deltas = adapter.decoder(req), []
    with Transport() as transport, pytest.raises(RateLimitError, match="Rate limit"):
        for event in transport.stream(endpoint(server), adapter.build(req)):
            deltas.extend(decoder.feed(event))
    assert deltas == [Delta("text", "{")]


def test_a_json_mode_request_without_json_in_the_input_is_a_bad_request(
    server: FakeServer,
) -> None:
    message = (
        "Response input messages must contain the word 'json' in some form to use "
        "'text.format' of type 'json_object'."
    )
    server.json(
        {"error": {"message": message, "type": "invalid_request_error", "param": "input"}},
        status=400,
    )
    req = request(JsonObject(), messages=(Message.user("Ada Lovelace, 36"),))
    with Transport() as transport, pytest.raises(BadRequestError, match="word 'json'"):
        transport.send(endpoint(server), OpenAIResponses().build(req))
