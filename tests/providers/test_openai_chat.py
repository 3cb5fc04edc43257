"""OpenAI Chat Completions and its compatible flavors: what goes on the wire, what comes back.

Every request body built here is checked against `CreateChatCompletionRequest` of OpenAI's
OpenAPI document (minus the few documented non-OpenAI fields, asserted on their own), and
every reply body and chunk against `CreateChatCompletionResponse` /
`CreateChatCompletionStreamResponse` and the official SDK's types.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from outform.errors import (
    BadRequestError,
    ProviderError,
    RateLimitError,
    ServerError,
    StreamInterruptedError,
    UsageError,
)
from outform.providers.base import (
    Adapter,
    Delta,
    ForcedTool,
    FreeText,
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
from outform.providers.openai_chat import FLAVORS, OpenAIChat
from outform.providers.registry import PROVIDERS, load_adapter
from outform.transport import Endpoint, RetryPolicy, Secret, Transport
from tests.providers.fake import FakeServer, Reply
from tests.providers.openai_wire import (
    Conformance,
    chat_completion,
    chat_usage,
    chunk,
    text_stream,
    tool_call,
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
    {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    },
    description="Current weather in a city",
    strict=True,
)
ASK = (Message.system("Extract the person as JSON."), Message.user("Ada Lovelace, 36"))
EXTRAS = ("structured_outputs", "chat_template_kwargs", "thinking", "reasoning_format")
"""Documented fields of compatible servers that OpenAI's spec does not define."""


@pytest.fixture(scope="session")
def conforms() -> Conformance:
    return Conformance(load())


def request(output: Output | None = None, **fields: Any) -> Request:
    fields.setdefault("messages", ASK)
    return Request("gpt-5.2", output=output or JsonObject(), **fields)


def body(flavor: str, conforms: Conformance, req: Request) -> dict[str, Any]:
    """The built body, after checking it against the spec (documented extras aside)."""
    wire = OpenAIChat(flavor).build(req)
    assert wire.path == "/chat/completions"
    conforms("CreateChatCompletionRequest", wire.body, minus=EXTRAS)
    return dict(wire.body)


# -- building: output mechanisms -----------------------------------------------------------


def test_native_schema_is_the_nested_json_schema_response_format(conforms: Conformance) -> None:
    sent = body(
        "openai",
        conforms,
        request(NativeSchema("person", PERSON, strict=True, description="A person")),
    )
    assert sent == {
        "model": "gpt-5.2",
        "messages": [
            {"role": "system", "content": "Extract the person as JSON."},
            {"role": "user", "content": "Ada Lovelace, 36"},
        ],
        "response_format": {
            "type": "json_schema",
            "json_schema": {
                "name": "person",
                "schema": PERSON,
                "strict": True,
                "description": "A person",
            },
        },
    }


def test_strict_and_description_are_left_out_when_not_given(conforms: Conformance) -> None:
    sent = body("mistral", conforms, request(NativeSchema("person", PERSON)))
    assert sent["response_format"]["json_schema"] == {"name": "person", "schema": PERSON}


def test_json_object_mode_is_the_json_object_response_format(conforms: Conformance) -> None:
    assert body("openai", conforms, request(JsonObject()))["response_format"] == {
        "type": "json_object"
    }


def test_a_forced_tool_is_one_function_tool_that_must_be_called(conforms: Conformance) -> None:
    sent = body(
        "openai", conforms, request(ForcedTool("person", PERSON, strict=True, description="Out"))
    )
    assert sent["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "person",
                "description": "Out",
                "parameters": PERSON,
                "strict": True,
            },
        }
    ]
    assert sent["tool_choice"] == {"type": "function", "function": {"name": "person"}}
    assert sent["parallel_tool_calls"] is False
    assert "response_format" not in sent


def test_deepseek_forces_a_tool_without_parallel_tool_calls(conforms: Conformance) -> None:
    sent = body("deepseek", conforms, request(ForcedTool("person", PERSON)))
    assert sent["tool_choice"] == {"type": "function", "function": {"name": "person"}}
    assert "parallel_tool_calls" not in sent
    assert "strict" not in sent["tools"][0]["function"]


def test_deepseek_has_no_json_schema_mode_and_says_what_to_use() -> None:
    with pytest.raises(UsageError, match="deepseek has no JSON-schema") as caught:
        OpenAIChat("deepseek").build(request(NativeSchema("person", PERSON)))
    assert "forced tool" in (caught.value.fix or "")


def test_vllm_and_sglang_get_the_response_format_every_version_reads(
    conforms: Conformance,
) -> None:
    for flavor in ("vllm", "sglang"):
        sent = body(flavor, conforms, request(NativeSchema("person", PERSON, strict=True)))
        assert sent["response_format"] == {
            "type": "json_schema",
            "json_schema": {"name": "person", "schema": PERSON, "strict": True},
        }
        assert "structured_outputs" not in sent and "guided_json" not in sent


def test_llamacpp_gets_the_nested_form_its_server_reads(conforms: Conformance) -> None:
    sent = body("llamacpp", conforms, request(NativeSchema("person", PERSON)))
    assert sent["response_format"]["json_schema"]["schema"] == PERSON
    assert "schema" not in sent["response_format"]  # the flat form degrades to "any object"


MECHANISMS: dict[str, Output] = {
    "native": NativeSchema("person", PERSON, strict=True),
    "forced": ForcedTool("person", PERSON, strict=True),
    "json_object": JsonObject(),
    "free_text": FreeText(),
}


@pytest.mark.parametrize(
    ("flavor", "mechanism"),
    [
        (flavor, mechanism)
        for flavor in sorted(FLAVORS)
        for mechanism in MECHANISMS
        if (flavor, mechanism) != ("deepseek", "native")  # refused, tested above
    ],
)
def test_every_flavor_builds_a_body_openai_would_accept(
    flavor: str, mechanism: str, conforms: Conformance
) -> None:
    req = Request(
        "m",
        ASK,
        output=MECHANISMS[mechanism],
        tools=(WEATHER,),
        thinking=Thinking(effort="high"),
        temperature=0.2,
        max_tokens=512,
        stop=("END",),
        stream=True,
    )
    sent = body(flavor, conforms, req)
    assert sent["stream"] is True
    assert sent["messages"][1] == {"role": "user", "content": "Ada Lovelace, 36"}


def test_the_spec_check_tells_the_two_apis_schema_shapes_apart(conforms: Conformance) -> None:
    flat = body("openai", conforms, request(NativeSchema("person", PERSON)))
    flat["response_format"] = {"type": "json_schema", "name": "person", "schema": PERSON}
    with pytest.raises(AssertionError, match="'json_schema' is a required property"):
        conforms("CreateChatCompletionRequest", flat)


def test_the_registry_builds_this_adapter_for_every_compatible_provider() -> None:
    for name in ("openai", *FLAVORS):
        adapter = load_adapter(PROVIDERS[name])
        assert isinstance(adapter, OpenAIChat)
        assert adapter.name == name


def test_it_is_an_adapter() -> None:
    adapter: Adapter = OpenAIChat("groq")  # mypy checks the protocol; the run loop relies on it
    assert adapter.auth == "bearer"


def test_an_unknown_flavor_is_refused() -> None:
    with pytest.raises(UsageError, match="unknown OpenAI-compatible flavor"):
        OpenAIChat("openrouter")


# -- building: tools, messages, settings ---------------------------------------------------


@pytest.mark.parametrize(
    ("choice", "wire"),
    [
        ("auto", "auto"),
        ("none", "none"),
        ("required", "required"),
        (NamedTool("get_weather"), {"type": "function", "function": {"name": "get_weather"}}),
    ],
)
def test_tool_choice(choice: Any, wire: Any, conforms: Conformance) -> None:
    sent = body("openai", conforms, Request("gpt-5.2", ASK, tools=(WEATHER,), tool_choice=choice))
    assert sent["tool_choice"] == wire
    assert sent["tools"][0]["function"]["strict"] is True


def test_a_conversation_with_images_tool_calls_and_results(conforms: Conformance) -> None:
    call = ToolCall("call_7Qx", "get_weather", '{"city":"Paris"}')
    messages = (
        Message.system("Be brief."),
        Message.user("What is in this picture?", ImagePart(url="https://example.com/a.png")),
        Message.user(ImagePart(data=b"\x89PNG", media_type="image/png")),
        Message.assistant(tool_calls=[call]),
        Message.tool_result("call_7Qx", '{"temp": 21}', name="get_weather"),
        Message.assistant("It is 21 degrees."),
    )
    sent = body("openai", conforms, Request("gpt-5.2", messages, tools=(WEATHER,)))
    assert sent["messages"] == [
        {"role": "system", "content": "Be brief."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is in this picture?"},
                {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw=="}}
            ],
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_7Qx",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_7Qx", "content": '{"temp": 21}'},
        {"role": "assistant", "content": "It is 21 degrees."},
    ]


def test_a_tool_result_without_a_call_id_is_refused() -> None:
    with pytest.raises(UsageError, match="id of the call"):
        OpenAIChat().build(Request("m", (Message("tool", ()),)))


def test_the_output_tool_may_not_shadow_a_callers_tool() -> None:
    with pytest.raises(UsageError, match="get_weather"):
        OpenAIChat().build(request(ForcedTool("get_weather", PERSON), tools=(WEATHER,)))


@pytest.mark.parametrize(
    ("flavor", "field"),
    [("openai", "max_completion_tokens"), ("groq", "max_tokens"), ("vllm", "max_tokens")],
)
def test_openai_gets_max_completion_tokens_compatible_servers_max_tokens(
    flavor: str, field: str, conforms: Conformance
) -> None:
    sent = body(flavor, conforms, request(max_tokens=300, temperature=0.0, stop=("\n\n",)))
    other = "max_tokens" if field == "max_completion_tokens" else "max_completion_tokens"
    assert sent[field] == 300
    assert other not in sent
    assert sent["temperature"] == 0.0
    assert sent["stop"] == ["\n\n"]


@pytest.mark.parametrize(
    ("flavor", "options"),
    [("openai", {"include_usage": True}), ("deepseek", {"include_usage": True}), ("mistral", None)],
)
def test_a_stream_asks_for_usage_where_the_server_accepts_it(
    flavor: str, options: Any, conforms: Conformance
) -> None:
    wire = OpenAIChat(flavor).build(request(stream=True))
    conforms("CreateChatCompletionRequest", wire.body)
    assert wire.stream == "sse"
    assert wire.body["stream"] is True
    assert wire.body.get("stream_options") == options


def test_extra_fields_are_merged_last_and_win(conforms: Conformance) -> None:
    sent = body(
        "openai",
        conforms,
        request(JsonObject(), extra={"response_format": {"type": "text"}, "seed": 7}),
    )
    assert sent["response_format"] == {"type": "text"}
    assert sent["seed"] == 7


# -- building: thinking --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flavor", "thinking", "fields"),
    [
        ("openai", Thinking(effort="low"), {"reasoning_effort": "low"}),
        ("openai", Thinking(), {}),
        ("openai", Thinking(enabled=False), {"reasoning_effort": "none"}),
        (
            "deepseek",
            Thinking(effort="medium"),
            {"thinking": {"type": "enabled"}, "reasoning_effort": "high"},
        ),
        ("deepseek", Thinking(enabled=False), {"thinking": {"type": "disabled"}}),
        (
            "groq",
            Thinking(effort="minimal"),
            {"reasoning_format": "parsed", "reasoning_effort": "low"},
        ),
        ("groq", Thinking(enabled=False), {"reasoning_effort": "none"}),
        ("xai", Thinking(effort="medium"), {"reasoning_effort": "high"}),
        ("xai", Thinking(enabled=False), {}),
        ("vllm", Thinking(), {"chat_template_kwargs": {"enable_thinking": True}}),
        ("sglang", Thinking(enabled=False), {"chat_template_kwargs": {"enable_thinking": False}}),
        ("llamacpp", Thinking(effort="high"), {"chat_template_kwargs": {"enable_thinking": True}}),
        ("mistral", Thinking(effort="high", budget_tokens=2048), {}),
        ("together", Thinking(enabled=False), {}),
        ("fireworks", Thinking(effort="low"), {}),
    ],
)
def test_thinking_uses_each_flavors_own_fields(
    flavor: str, thinking: Thinking, fields: dict[str, Any], conforms: Conformance
) -> None:
    sent = body(flavor, conforms, request(thinking=thinking))
    assert {k: v for k, v in sent.items() if k not in ("model", "messages", "response_format")} == (
        fields
    )


# -- parsing -------------------------------------------------------------------------------


def test_a_json_reply_is_the_text_with_usage_and_model(conforms: Conformance) -> None:
    reply = chat_completion(
        content='{"name":"Ada Lovelace","age":36}',
        usage=chat_usage(prompt=40, completion=15, reasoning=6, cached=32),
    )
    conforms("CreateChatCompletionResponse", reply)
    parsed = OpenAIChat().parse(request(NativeSchema("person", PERSON)), reply)
    assert parsed.text == '{"name":"Ada Lovelace","age":36}'
    assert parsed.finish_reason == "stop"
    assert parsed.usage == Usage(40, 15, 6, 32)
    assert parsed.model == "gpt-5.2-2025-12-11"
    assert parsed.refusal is None and parsed.thinking is None and parsed.tool_calls == ()
    assert parsed.raw is reply


def test_a_refusal_is_reported_as_such(conforms: Conformance) -> None:
    reply = chat_completion(refusal="I can't help with that request.")
    conforms("CreateChatCompletionResponse", reply)
    parsed = OpenAIChat().parse(request(NativeSchema("person", PERSON)), reply)
    assert parsed.refusal == "I can't help with that request."
    assert parsed.text == ""
    assert parsed.finish_reason == "refusal"


def test_a_truncated_reply_finishes_with_length(conforms: Conformance) -> None:
    reply = chat_completion(finish="length", content='{"name":"Ada Lov')
    conforms("CreateChatCompletionResponse", reply)
    parsed = OpenAIChat().parse(request(), reply)
    assert (parsed.text, parsed.finish_reason) == ('{"name":"Ada Lov', "length")


def test_tool_calls_come_back_with_their_arguments_as_text(conforms: Conformance) -> None:
    reply = chat_completion(
        finish="tool_calls",
        tool_calls=[
            tool_call("call_1", "get_weather", '{"city":"Paris"}'),
            tool_call("call_2", "get_weather", '{"city":"Oslo"}'),
        ],
    )
    conforms("CreateChatCompletionResponse", reply)
    parsed = OpenAIChat().parse(Request("m", ASK, tools=(WEATHER,)), reply)
    assert parsed.tool_calls == (
        ToolCall("call_1", "get_weather", '{"city":"Paris"}'),
        ToolCall("call_2", "get_weather", '{"city":"Oslo"}'),
    )
    assert parsed.finish_reason == "tool_calls"
    assert parsed.tool_calls[1].parsed_arguments() == {"city": "Oslo"}


@pytest.mark.parametrize("finish", ["tool_calls", "stop"])
def test_the_forced_tool_call_becomes_the_reply_text(finish: str, conforms: Conformance) -> None:
    reply = chat_completion(
        finish=finish,
        tool_calls=[tool_call("call_9", "person", '{"name":"Ada Lovelace","age":36}')],
    )
    conforms("CreateChatCompletionResponse", reply)
    parsed = OpenAIChat().parse(request(ForcedTool("person", PERSON)), reply)
    assert parsed.text == '{"name":"Ada Lovelace","age":36}'
    assert parsed.tool_calls == ()
    assert parsed.finish_reason == "stop"


@pytest.mark.parametrize(
    ("flavor", "field"),
    [("deepseek", "reasoning_content"), ("vllm", "reasoning"), ("groq", "reasoning")],
)
def test_thinking_text_is_read_from_either_reasoning_field(
    flavor: str, field: str, conforms: Conformance
) -> None:
    reply = chat_completion(
        model="deepseek-reasoner", content='{"name":"Ada"}', **{field: "The user wants JSON."}
    )
    conforms("CreateChatCompletionResponse", reply)
    parsed = OpenAIChat(flavor).parse(request(), reply)
    assert parsed.thinking == "The user wants JSON."
    assert parsed.text == '{"name":"Ada"}'


def test_deepseek_cache_hits_count_as_cached_tokens(conforms: Conformance) -> None:
    usage = {
        "prompt_tokens": 50,
        "completion_tokens": 9,
        "total_tokens": 59,
        "prompt_cache_hit_tokens": 48,
        "prompt_cache_miss_tokens": 2,
    }
    reply = chat_completion(model="deepseek-chat", content="{}", usage=usage)
    conforms("CreateChatCompletionResponse", reply)
    parsed = OpenAIChat("deepseek").parse(request(), reply)
    assert parsed.usage == Usage(50, 9, 0, 48)


def test_unknown_finish_reasons_are_other_and_model_length_is_length() -> None:
    """Values outside OpenAI's enum (so outside its spec) that compatible servers send."""
    adapter = OpenAIChat("mistral")
    assert adapter.parse(request(), chat_completion("model_length", content="")).finish_reason == (
        "length"
    )
    assert adapter.parse(request(), chat_completion("error", content="")).finish_reason == "other"


def test_a_reply_without_choices_is_a_provider_error() -> None:
    with pytest.raises(ProviderError, match="without choices"):
        OpenAIChat("vllm").parse(request(), {"object": "error", "message": "boom"})


# -- stream decoding -----------------------------------------------------------------------


def feed_all(adapter: OpenAIChat, req: Request, events: list[dict[str, Any]]) -> list[Delta]:
    decoder = adapter.decoder(req)
    return [d for event in events for d in decoder.feed(event)]


def test_a_text_stream_gives_text_then_finish_then_usage(conforms: Conformance) -> None:
    events = text_stream('{"name":', '"Ada"}', usage=chat_usage(prompt=20, completion=5))
    conforms.all("CreateChatCompletionStreamResponse", events)
    deltas = feed_all(OpenAIChat(), request(stream=True), events)
    assert deltas == [
        Delta("text", '{"name":'),
        Delta("text", '"Ada"}'),
        Delta("finish", finish_reason="stop"),
        Delta("usage", usage=Usage(20, 5)),
    ]


def test_tool_call_fragments_carry_index_and_the_id_and_name_once(
    conforms: Conformance,
) -> None:
    events = [
        chunk({"role": "assistant", "content": None}),
        chunk({"tool_calls": [{"index": 0, **tool_call("call_1", "get_weather", "")}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"city":'}}]}),
        chunk({"tool_calls": [{"index": 1, **tool_call("call_2", "get_weather", '{"ci')}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"Paris"}'}}]}),
        chunk({"tool_calls": [{"index": 1, "function": {"arguments": 'ty":"Oslo"}'}}]}),
        chunk({}, finish="tool_calls"),
        chunk(usage=chat_usage()),
    ]
    conforms.all("CreateChatCompletionStreamResponse", events)
    deltas = feed_all(OpenAIChat(), Request("m", ASK, tools=(WEATHER,), stream=True), events)
    assert deltas[:5] == [
        Delta("tool_call", "", 0, "call_1", "get_weather"),
        Delta("tool_call", '{"city":', 0),
        Delta("tool_call", '{"ci', 1, "call_2", "get_weather"),
        Delta("tool_call", '"Paris"}', 0),
        Delta("tool_call", 'ty":"Oslo"}', 1),
    ]
    assert deltas[5] == Delta("finish", finish_reason="tool_calls")


def test_the_forced_tools_fragments_stream_as_text(conforms: Conformance) -> None:
    events = [
        chunk({"role": "assistant", "content": None}),
        chunk({"tool_calls": [{"index": 0, **tool_call("call_9", "person", "")}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"name":'}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"Ada"}'}}]}),
        chunk({}, finish="stop"),
    ]
    conforms.all("CreateChatCompletionStreamResponse", events)
    deltas = feed_all(OpenAIChat(), request(ForcedTool("person", PERSON), stream=True), events)
    assert deltas == [
        Delta("text", '{"name":'),
        Delta("text", '"Ada"}'),
        Delta("finish", finish_reason="stop"),
    ]


def test_a_forced_tool_finishing_with_tool_calls_finishes_with_stop(
    conforms: Conformance,
) -> None:
    events = [
        chunk({"tool_calls": [{"index": 0, **tool_call("c", "person", "{}")}]}),
        chunk({}, finish="tool_calls"),
    ]
    conforms.all("CreateChatCompletionStreamResponse", events)
    deltas = feed_all(OpenAIChat("groq"), request(ForcedTool("person", PERSON)), events)
    assert deltas == [Delta("text", "{}"), Delta("finish", finish_reason="stop")]


def test_a_streamed_refusal(conforms: Conformance) -> None:
    events = [
        chunk({"role": "assistant", "content": None, "refusal": ""}),
        chunk({"refusal": "I can't "}),
        chunk({"refusal": "help with that."}),
        chunk({}, finish="stop"),
    ]
    conforms.all("CreateChatCompletionStreamResponse", events)
    deltas = feed_all(OpenAIChat(), request(NativeSchema("person", PERSON)), events)
    assert deltas == [
        Delta("refusal", "I can't "),
        Delta("refusal", "help with that."),
        Delta("finish", finish_reason="refusal"),
    ]


@pytest.mark.parametrize(
    ("flavor", "field"), [("deepseek", "reasoning_content"), ("vllm", "reasoning")]
)
def test_streamed_thinking(flavor: str, field: str, conforms: Conformance) -> None:
    events = [
        chunk({"role": "assistant", "content": None, field: ""}),
        chunk({"content": None, field: "Need JSON."}),
        chunk({"content": "{}", field: None}),
        chunk({}, finish="stop", usage=chat_usage(reasoning=3)),
    ]
    conforms.all("CreateChatCompletionStreamResponse", events)
    deltas = feed_all(OpenAIChat(flavor), request(), events)
    assert deltas == [
        Delta("thinking", "Need JSON."),
        Delta("text", "{}"),
        Delta("usage", usage=Usage(31, 12, 3)),
        Delta("finish", finish_reason="stop"),
    ]


def test_groq_usage_arrives_in_x_groq(conforms: Conformance) -> None:
    last = chunk({}, finish="stop")
    last["x_groq"] = {"id": "req_01", "usage": {"prompt_tokens": 9, "completion_tokens": 4}}
    conforms("CreateChatCompletionStreamResponse", last)
    deltas = feed_all(OpenAIChat("groq"), request(), [chunk({"content": "{}"}), last])
    assert Delta("usage", usage=Usage(9, 4)) in deltas


def test_an_error_in_the_stream_is_raised() -> None:
    """vLLM's mid-stream error chunk (not an OpenAI shape: its spec has no error chunk)."""
    decoder = OpenAIChat("vllm").decoder(request())
    decoder.feed(chunk({"content": "{"}))
    with pytest.raises(StreamInterruptedError, match="out of memory"):
        decoder.feed({"error": {"message": "CUDA out of memory", "type": "InternalServerError"}})


# -- over HTTP -----------------------------------------------------------------------------


@pytest.fixture
def server(conforms: Conformance) -> Iterator[FakeServer]:
    """The fake server; every body it received is checked against the spec at the end."""
    with FakeServer() as fake:
        yield fake
    for received in fake.requests:
        conforms("CreateChatCompletionRequest", received.json, minus=EXTRAS)


def endpoint(server: FakeServer) -> Endpoint:
    return Endpoint("openai", server.url + "/v1", api_key=Secret("sk-test-123"))


class Sleeps:
    """Records the waits transport asks for instead of sleeping."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def test_a_schema_call_over_http(server: FakeServer, conforms: Conformance) -> None:
    adapter, req = OpenAIChat(), request(NativeSchema("person", PERSON, strict=True))
    reply = chat_completion(content='{"name":"Ada Lovelace","age":36}')
    conforms("CreateChatCompletionResponse", reply)
    server.json(reply)
    with Transport() as transport:
        parsed = adapter.parse(req, transport.send(endpoint(server), adapter.build(req)))
    assert parsed.text == '{"name":"Ada Lovelace","age":36}'
    received = server.last
    assert (received.method, received.path) == ("POST", "/v1/chat/completions")
    assert received.headers["authorization"] == "Bearer sk-test-123"
    assert received.json == adapter.build(req).body
    conforms("CreateChatCompletionRequest", received.json)


def test_a_streamed_call_over_http(server: FakeServer, conforms: Conformance) -> None:
    adapter = OpenAIChat()
    req = request(ForcedTool("person", PERSON, strict=True), stream=True)
    events: list[Any] = [
        chunk({"role": "assistant", "content": None}),
        chunk({"tool_calls": [{"index": 0, **tool_call("call_9", "person", "")}]}),
        *(
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": part}}]})
            for part in ('{"name":"Ada', ' Lovelace","age"', ":36}")
        ),
        chunk({}, finish="stop"),
        chunk(usage=chat_usage(prompt=50, completion=14)),
    ]
    conforms.all("CreateChatCompletionStreamResponse", events)
    server.stream([*events, "[DONE]"])
    with Transport() as transport:
        stream = transport.stream(endpoint(server), adapter.build(req))
        decoder = adapter.decoder(req)
        deltas = [d for event in stream for d in decoder.feed(event)]
    assert "".join(d.text for d in deltas if d.kind == "text") == (
        '{"name":"Ada Lovelace","age":36}'
    )
    assert deltas[-2:] == [
        Delta("finish", finish_reason="stop"),
        Delta("usage", usage=Usage(50, 14)),
    ]
    assert server.last.headers["accept"] == "text/event-stream"
    assert server.last.json["stream_options"] == {"include_usage": True}


def test_a_rejected_schema_is_a_bad_request_with_openais_message(server: FakeServer) -> None:
    message = (
        "Invalid schema for response_format 'person': In context=(), 'additionalProperties' "
        "is required to be supplied and to be false."
    )
    server.json(
        {
            "error": {
                "message": message,
                "type": "invalid_request_error",
                "param": "response_format",
                "code": None,
            }
        },
        status=400,
    )
    req = request(NativeSchema("person", {"type": "object"}, strict=True))
    with Transport() as transport, pytest.raises(BadRequestError) as caught:
        transport.send(endpoint(server), OpenAIChat().build(req))
    assert "additionalProperties" in caught.value.what
    assert caught.value.status == 400
    assert len(server.requests) == 1


def test_429_is_retried_after_the_wait_openai_asks_for(
    server: FakeServer, conforms: Conformance
) -> None:
    limit = {"error": {"message": "Rate limit reached", "type": "requests", "code": None}}
    reply = chat_completion(content="{}")
    conforms("CreateChatCompletionResponse", reply)
    server.reply(Reply(status=429, body=limit, headers={"retry-after": "2"}))
    server.json(reply)
    sleeps = Sleeps()
    with Transport(sleep=sleeps) as transport:
        received = transport.send(endpoint(server), OpenAIChat().build(request()))
    assert OpenAIChat().parse(request(), received).text == "{}"
    assert sleeps.waits == [2.0]
    assert server.requests[0].json == server.requests[1].json


def test_a_persistent_500_is_a_server_error(server: FakeServer) -> None:
    for _ in range(2):
        server.json({"error": {"message": "The server had an error"}}, status=500)
    with (
        Transport(sleep=Sleeps(), retry=RetryPolicy(retries=1)) as transport,
        pytest.raises(ServerError, match="server had an error"),
    ):
        transport.send(endpoint(server), OpenAIChat().build(request()))


def test_a_persistent_429_carries_retry_after(server: FakeServer) -> None:
    for _ in range(2):
        server.reply(
            Reply(status=429, body={"error": {"message": "slow"}}, headers={"retry-after": "5"})
        )
    with (
        Transport(sleep=Sleeps(), retry=RetryPolicy(retries=1)) as transport,
        pytest.raises(RateLimitError) as caught,
    ):
        transport.send(endpoint(server), OpenAIChat().build(request()))
    assert caught.value.retry_after == 5.0


def test_a_stream_that_drops_keeps_what_arrived(server: FakeServer, conforms: Conformance) -> None:
    adapter, req = OpenAIChat("vllm"), request(stream=True)
    events = text_stream('{"name":', '"Ada"', "}")
    conforms.all("CreateChatCompletionStreamResponse", events)
    server.stream(events, drop_after=3)
    deltas: list[Delta] = []
    with Transport() as transport, pytest.raises(StreamInterruptedError):
        decoder = adapter.decoder(req)
        for event in transport.stream(endpoint(server), adapter.build(req)):
            deltas.extend(decoder.feed(event))
    assert deltas == [Delta("text", '{"name":'), Delta("text", '"Ada"')]
