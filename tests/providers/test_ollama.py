"""The Ollama `/api/chat` adapter.

Every request body built here, every reply and every stream line used is validated against the
JSON Schemas in `ollama_wire` (transcribed from Ollama's docs/openapi.yaml and guides; the
official Python client is not installed). Replies are shaped like the examples in Ollama's docs.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import pytest

from outform.errors import (
    BadRequestError,
    RateLimitError,
    ServerError,
    StreamInterruptedError,
    UsageError,
)
from outform.providers.base import (
    Delta,
    ForcedTool,
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
)
from outform.providers.ollama import GENERATED_ID_PREFIX, OllamaChat
from outform.providers.registry import PROVIDERS, load_adapter, resolve
from outform.schema.dialects import translate
from outform.transport import Endpoint, RetryPolicy, Transport
from tests.providers.deltas import decode as decode_events
from tests.providers.fake import FakeServer, Reply
from tests.providers.ollama_wire import (
    validate_request,
    validate_response,
    validate_stream_event,
)

MODEL = "qwen3:8b"
PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}
SCHEMA = translate(PERSON, "ollama").schema
WEATHER = Tool(
    "get_temperature",
    {
        "type": "object",
        "required": ["city"],
        "properties": {"city": {"type": "string", "description": "The name of the city"}},
    },
    "Get the current temperature for a city",
)
PNG = b"\x89PNG\r\n\x1a\n"
CREATED = "2026-08-21T10:00:00.000000Z"


def body_of(request: Request) -> dict[str, Any]:
    body = dict(OllamaChat().build(request).body)
    validate_request(body)
    return body


def ask(*messages: Message, **fields: Any) -> Request:
    return Request(fields.pop("model", MODEL), messages or (Message.user("Hi"),), **fields)


def reply(message: dict[str, Any], done_reason: str = "stop", **extra: Any) -> dict[str, Any]:
    body = {
        "model": MODEL,
        "created_at": CREATED,
        "message": {"role": "assistant", **message},
        "done_reason": done_reason,
        "done": True,
        "total_duration": 2254970291,
        "load_duration": 574751416,
        "prompt_eval_count": 34,
        "prompt_eval_duration": 1502000000,
        "eval_count": 12,
        "eval_duration": 175000000,
        **extra,
    }
    validate_response(body)
    return body


# -- building requests ---------------------------------------------------------------------


def test_the_registry_resolves_ollama_host_to_this_adapter() -> None:
    resolved = resolve("ollama:qwen3:8b", env={"OLLAMA_HOST": "gpu-box:11434"})
    assert isinstance(resolved.adapter, OllamaChat)
    assert resolved.model == "qwen3:8b"
    assert resolved.endpoint.base_url == "http://gpu-box:11434/api"
    assert load_adapter(PROVIDERS["ollama"]).auth == PROVIDERS["ollama"].auth == "none"


def test_a_plain_call_always_says_whether_to_stream() -> None:
    request = ask(Message.system("Be brief."), Message.user("Hi"))
    wire = OllamaChat().build(request)
    assert (wire.path, wire.stream) == ("/chat", None)  # under the base URL's /api
    assert body_of(request) == {
        "model": MODEL,
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hi"},
        ],
        "stream": False,  # the server streams unless told not to (its API docs)
    }


def test_a_stream_is_ndjson() -> None:
    wire = OllamaChat().build(ask(stream=True))
    assert (wire.stream, wire.body["stream"]) == ("ndjson", True)


def test_a_native_schema_is_the_format_verbatim() -> None:
    body = body_of(ask(output=NativeSchema("Person", SCHEMA, strict=True)))
    assert body["format"] == SCHEMA
    assert set(body) == {"model", "messages", "stream", "format"}  # no name, no strict


def test_json_mode_is_format_json() -> None:
    assert body_of(ask(output=JsonObject()))["format"] == "json"


def test_a_forced_tool_is_refused_naming_the_native_schema_instead() -> None:
    with pytest.raises(UsageError, match="cannot force") as caught:
        OllamaChat().build(ask(output=ForcedTool("record_person", SCHEMA)))
    assert caught.value.fix is not None
    assert "native schema" in caught.value.fix


@pytest.mark.parametrize("choice", ["required", NamedTool("get_temperature")])
def test_forcing_a_tool_through_tool_choice_is_refused(choice: ToolChoice) -> None:
    with pytest.raises(UsageError, match="cannot force"):
        OllamaChat().build(ask(tools=(WEATHER,), tool_choice=choice))


@pytest.mark.parametrize(("choice", "sent"), [(None, True), ("auto", True), ("none", False)])
def test_tools_are_function_definitions_unless_the_choice_is_none(
    choice: ToolChoice | None, sent: bool
) -> None:
    body = body_of(ask(tools=(WEATHER,), tool_choice=choice))
    expected = [
        {
            "type": "function",
            "function": {
                "name": "get_temperature",
                "description": "Get the current temperature for a city",
                "parameters": dict(WEATHER.parameters),
            },
        }
    ]
    assert body.get("tools") == (expected if sent else None)


@pytest.mark.parametrize(
    ("thinking", "think"),
    [
        (Thinking(), True),
        (Thinking(enabled=False), False),
        (Thinking(effort="medium"), "medium"),
        (Thinking(effort="minimal"), "low"),
        (Thinking(effort="max"), "high"),
        (Thinking(budget_tokens=2048), True),  # Ollama has no budget
    ],
)
def test_thinking_is_a_bool_or_a_level(thinking: Thinking, think: bool | str) -> None:
    assert body_of(ask(thinking=thinking))["think"] == think


def test_sampling_settings_are_options() -> None:
    body = body_of(ask(temperature=0.0, max_tokens=256, stop=("</s>",)))
    assert body["options"] == {"temperature": 0.0, "num_predict": 256, "stop": ["</s>"]}


def test_extra_is_merged_last_and_options_keep_their_other_keys() -> None:
    body = body_of(ask(temperature=0.5, extra={"options": {"num_ctx": 8192}, "keep_alive": "5m"}))
    assert body["options"] == {"temperature": 0.5, "num_ctx": 8192}
    assert body["keep_alive"] == "5m"


def test_a_conversation_maps_images_tool_calls_and_tool_results() -> None:
    body = body_of(
        ask(
            Message.user(
                "Where is this, and how warm?",
                ImagePart(data=PNG),
                ImagePart(url="data:image/jpeg;base64,/9j/4AAQ"),
            ),
            Message.assistant(
                tool_calls=[
                    ToolCall(GENERATED_ID_PREFIX + "1", "get_temperature", '{"city": "Paris"}'),
                    ToolCall(GENERATED_ID_PREFIX + "2", "get_temperature", '{"city": "Rome"}'),
                ]
            ),
            Message.tool_result(GENERATED_ID_PREFIX + "1", "22°C", name="get_temperature"),
            Message.tool_result(GENERATED_ID_PREFIX + "2", "25°C"),
            tools=(WEATHER,),
        )
    )
    assert body["messages"] == [
        {
            "role": "user",
            "content": "Where is this, and how warm?",
            "images": [base64.b64encode(PNG).decode(), "/9j/4AAQ"],
        },
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"function": {"name": "get_temperature", "arguments": {"city": "Paris"}}},
                {"function": {"name": "get_temperature", "arguments": {"city": "Rome"}}},
            ],
        },
        {"role": "tool", "content": "22°C", "tool_name": "get_temperature"},
        # the name comes from the call the result answers
        {"role": "tool", "content": "25°C", "tool_name": "get_temperature"},
    ]


def test_an_image_url_is_refused_since_ollama_takes_only_data() -> None:
    with pytest.raises(UsageError, match="base64"):
        OllamaChat().build(ask(Message.user("What is it?", ImagePart(url="https://x/cat.png"))))


# -- parsing replies -----------------------------------------------------------------------


def test_a_structured_reply_is_the_message_content() -> None:
    body = reply({"content": '{"name": "Ada Lovelace", "age": 36}', "thinking": "Extract."})
    response = OllamaChat().parse(ask(output=NativeSchema("Person", SCHEMA)), body)
    assert response.text == '{"name": "Ada Lovelace", "age": 36}'
    assert response.thinking == "Extract."
    assert response.finish_reason == "stop"
    assert response.usage == Usage(input_tokens=34, output_tokens=12)
    assert response.model == MODEL


def test_tool_calls_carry_their_arguments_as_json_text() -> None:
    body = reply(
        {
            "content": "",
            "tool_calls": [
                {
                    "function": {
                        "name": "get_temperature",
                        "arguments": {"city": "New York"},
                    }
                }
            ],
        }
    )
    response = OllamaChat().parse(ask(tools=(WEATHER,)), body)
    (call,) = response.tool_calls
    assert call.name == "get_temperature"
    assert call.parsed_arguments() == {"city": "New York"}
    assert call.id.startswith(GENERATED_ID_PREFIX)
    assert response.finish_reason == "tool_calls"


@pytest.mark.parametrize(
    ("done_reason", "finish"), [("stop", "stop"), ("length", "length"), ("load", "other")]
)
def test_done_reasons_map_to_the_neutral_vocabulary(done_reason: str, finish: str) -> None:
    body = reply({"content": '{"name": "Ada'}, done_reason=done_reason)
    assert OllamaChat().parse(ask(), body).finish_reason == finish


def test_a_reply_without_done_reason_from_an_older_server_is_a_stop() -> None:
    body = reply({"content": "Hello! How are you today?"})
    del body["done_reason"]
    validate_response(body)
    assert OllamaChat().parse(ask(), body).finish_reason == "stop"


# -- decoding streams ----------------------------------------------------------------------


def line(content: str = "", thinking: str | None = None, **extra: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if thinking is not None:
        message["thinking"] = thinking
    event = {"model": MODEL, "created_at": CREATED, "message": message, "done": False, **extra}
    validate_stream_event(event)
    return event


FINAL: dict[str, Any] = {
    "done": True,
    "done_reason": "stop",
    "total_duration": 4883583458,
    "load_duration": 1334875,
    "prompt_eval_count": 26,
    "prompt_eval_duration": 342546000,
    "eval_count": 282,
    "eval_duration": 4535599000,
}
STREAM = [
    line(thinking="The user wants "),
    line(thinking="JSON."),
    line('{"name": '),
    line('"Ada", "age": 36}'),
    line(**FINAL),
]


def decode(request: Request, events: list[dict[str, Any]]) -> list[Delta]:
    return decode_events(OllamaChat(), request, events)


def test_a_stream_is_thinking_then_text_then_usage_and_finish() -> None:
    assert decode(ask(stream=True), STREAM) == [
        Delta("thinking", "The user wants "),
        Delta("thinking", "JSON."),
        Delta("text", '{"name": '),
        Delta("text", '"Ada", "age": 36}'),
        Delta("usage", usage=Usage(input_tokens=26, output_tokens=282)),
        Delta("finish", finish_reason="stop"),
    ]


def test_streamed_tool_calls_arrive_whole() -> None:
    call = {"function": {"name": "get_temperature", "arguments": {"city": "Paris"}}}
    events = [
        {**line(), "message": {"role": "assistant", "content": "", "tool_calls": [call]}},
        line(**FINAL),
    ]
    for event in events:
        validate_stream_event(event)
    deltas = decode(ask(tools=(WEATHER,), stream=True), events)
    first = deltas[0]
    assert (first.kind, first.index, first.tool_name, first.text) == (
        "tool_call",
        0,
        "get_temperature",
        '{"city":"Paris"}',
    )
    assert first.tool_call_id is not None
    assert deltas[-1] == Delta("finish", finish_reason="tool_calls")


def test_an_error_line_in_the_stream_raises() -> None:
    decoder = OllamaChat().decoder(ask(stream=True))
    decoder.feed(STREAM[2])
    with pytest.raises(StreamInterruptedError, match="out of memory"):
        decoder.feed({"error": "model runner has unexpectedly stopped: out of memory"})


# -- over HTTP -----------------------------------------------------------------------------


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as fake:
        yield fake


def endpoint(server: FakeServer) -> Endpoint:
    return Endpoint("ollama", server.url + "/api", auth="none")


class Sleeps:
    def __init__(self) -> None:
        self.waits: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def test_a_call_over_http_sends_the_body_without_credentials(server: FakeServer) -> None:
    request = ask(output=NativeSchema("Person", SCHEMA))
    server.json(reply({"content": '{"name": "Ada", "age": 36}'}))
    adapter = OllamaChat()
    with Transport() as transport:
        body = transport.send(endpoint(server), adapter.build(request))
    assert (server.last.method, server.last.path) == ("POST", "/api/chat")
    assert "authorization" not in server.last.headers
    assert server.last.json == adapter.build(request).body
    validate_request(server.last.json)
    assert adapter.parse(request, body).text == '{"name": "Ada", "age": 36}'


def test_a_stream_over_http_reads_ndjson_lines(server: FakeServer) -> None:
    request = ask(stream=True)
    server.stream(STREAM, framing="ndjson")
    decoder = OllamaChat().decoder(request)
    with Transport() as transport:
        deltas = [
            d
            for e in transport.stream(endpoint(server), OllamaChat().build(request))
            for d in decoder.feed(e)
        ]
    assert server.last.headers["accept"] == "application/x-ndjson"
    assert server.last.json["stream"] is True
    assert "".join(d.text for d in deltas if d.kind == "text") == '{"name": "Ada", "age": 36}'
    assert deltas[-1] == Delta("finish", finish_reason="stop")


def test_a_format_the_server_rejects_is_a_bad_request(server: FakeServer) -> None:
    message = 'invalid format: expected "json" or a valid JSON schema'
    server.json({"error": message}, status=400)
    with Transport() as transport, pytest.raises(BadRequestError) as caught:
        transport.send(endpoint(server), OllamaChat().build(ask(output=JsonObject())))
    assert caught.value.status == 400
    assert message in caught.value.what


def test_429_is_retried_after_the_wait_the_server_asks_for(server: FakeServer) -> None:
    busy = {"error": "server busy, please try again. maximum pending requests exceeded"}
    server.reply(Reply(status=429, body=busy, headers={"retry-after": "2"}))
    server.json(reply({"content": "{}"}))
    sleeps = Sleeps()
    with Transport(sleep=sleeps) as transport:
        transport.send(endpoint(server), OllamaChat().build(ask()))
    assert sleeps.waits == [2.0]

    server.reply(Reply(status=429, body=busy, headers={"retry-after": "2"}))
    with (
        Transport(retry=RetryPolicy(retries=0)) as transport,
        pytest.raises(RateLimitError, match="server busy") as caught,
    ):
        transport.send(endpoint(server), OllamaChat().build(ask()))
    assert caught.value.retry_after == 2.0


def test_a_server_error_is_reported_after_the_retries(server: FakeServer) -> None:
    server.json({"error": "llama runner process has terminated"}, status=500)
    with (
        Transport(retry=RetryPolicy(retries=0)) as transport,
        pytest.raises(ServerError, match="terminated"),
    ):
        transport.send(endpoint(server), OllamaChat().build(ask()))


def test_a_dropped_stream_is_an_interruption_after_the_text_so_far(server: FakeServer) -> None:
    request = ask(stream=True)
    server.stream(STREAM, framing="ndjson", drop_after=3)
    decoder = OllamaChat().decoder(request)
    seen: list[Delta] = []
    with Transport() as transport, pytest.raises(StreamInterruptedError):
        for event in transport.stream(endpoint(server), OllamaChat().build(request)):
            seen.extend(decoder.feed(event))
    assert [d.kind for d in seen] == ["thinking", "thinking", "text"]
