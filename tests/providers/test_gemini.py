"""The Gemini adapter.

Every request body built here is checked against the official `google-genai` SDK's types
(`gemini_wire.validate_request`), and every reply or stream chunk against its
`GenerateContentResponse` (`gemini_wire.validate_response`). A few calls are also made with the
SDK itself, against the same fake server, to show that outform sends what the SDK sends.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from google import genai
from google.genai import types

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
)
from outform.providers.gemini import GENERATED_ID_PREFIX, SKIP_SIGNATURE, Gemini
from outform.providers.registry import PROVIDERS, load_adapter
from outform.schema.dialects import translate
from outform.transport import Endpoint, RetryPolicy, Secret, Transport
from tests.providers.deltas import decode as decode_events
from tests.providers.fake import FakeServer, Reply
from tests.providers.gemini_wire import (
    as_sdk_types,
    sdk_read,
    sdk_request_keys,
    validate_request,
    validate_response,
)

MODEL = "gemini-2.5-flash"
PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}
SCHEMA = translate(PERSON, "gemini").schema
LOOKUP = Tool(
    "lookup",
    {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
    "Search the notes.",
)
PNG = b"\x89PNG\r\n\x1a\n"


def body_of(request: Request, adapter: Gemini | None = None) -> dict[str, Any]:
    """The body outform builds, after checking it against the SDK's types."""
    body = dict((adapter or Gemini()).build(request).body)
    validate_request(body)
    return body


def ask(*messages: Message, **fields: Any) -> Request:
    return Request(fields.pop("model", MODEL), messages or (Message.user("Hi"),), **fields)


def reply(*parts: dict[str, Any], finish: str = "STOP", **extra: Any) -> dict[str, Any]:
    body = {
        "candidates": [
            {"content": {"role": "model", "parts": list(parts)}, "finishReason": finish, "index": 0}
        ],
        "usageMetadata": {"promptTokenCount": 9, "candidatesTokenCount": 12, "totalTokenCount": 21},
        "modelVersion": MODEL,
        **extra,
    }
    validate_response(body)
    return body


# -- building requests ---------------------------------------------------------------------


def test_the_registry_loads_this_adapter_with_the_key_header_it_expects() -> None:
    adapter = load_adapter(PROVIDERS["gemini"])
    assert isinstance(adapter, Gemini)
    assert adapter.auth == PROVIDERS["gemini"].auth == "x-goog-api-key"


def test_the_checked_request_keys_are_ones_the_sdk_itself_writes() -> None:
    assert {"contents", "systemInstruction", "generationConfig", "tools", "toolConfig"} <= (
        sdk_request_keys()
    )


def test_a_plain_call_posts_contents_and_the_system_instruction() -> None:
    request = ask(Message.system("Be brief."), Message.user("Hi"))
    wire = Gemini().build(request)
    assert wire.path == "/models/gemini-2.5-flash:generateContent"
    assert wire.stream is None
    assert body_of(request) == {
        "contents": [{"role": "user", "parts": [{"text": "Hi"}]}],
        # the SDK labels the system instruction with role user (as gemini_wire.py checks)
        "systemInstruction": {"role": "user", "parts": [{"text": "Be brief."}]},
    }


def test_a_stream_goes_to_stream_generate_content_as_sse() -> None:
    wire = Gemini().build(ask(model="models/gemini-2.5-flash", stream=True))
    assert wire.path == "/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    assert wire.stream == "sse"


def test_a_native_schema_goes_in_response_json_schema_verbatim() -> None:
    body = body_of(ask(output=NativeSchema("Person", SCHEMA, strict=True)))
    assert body["generationConfig"] == {
        "responseMimeType": "application/json",
        "responseJsonSchema": SCHEMA,
    }


def test_the_openapi_dialect_goes_in_response_schema() -> None:
    schema = translate(PERSON, "gemini_openapi").schema
    assert schema["type"] == "OBJECT"
    body = body_of(ask(output=NativeSchema("Person", schema, form="openapi")))
    assert body["generationConfig"] == {
        "responseMimeType": "application/json",
        "responseSchema": schema,
    }


def test_json_object_mode_is_the_json_mime_type_without_a_schema() -> None:
    body = body_of(ask(output=JsonObject()))
    assert body["generationConfig"] == {"responseMimeType": "application/json"}


def test_free_text_sends_no_generation_config() -> None:
    assert "generationConfig" not in body_of(ask(output=FreeText()))


def test_a_forced_tool_is_one_more_declaration_called_in_mode_any() -> None:
    body = body_of(
        ask(output=ForcedTool("record_person", SCHEMA, description="Record."), tools=(LOOKUP,))
    )
    assert body["tools"] == [
        {
            "functionDeclarations": [
                {
                    "name": "lookup",
                    "description": "Search the notes.",
                    "parametersJsonSchema": dict(LOOKUP.parameters),
                },
                {"name": "record_person", "description": "Record.", "parametersJsonSchema": SCHEMA},
            ]
        }
    ]
    assert body["toolConfig"] == {
        "functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["record_person"]}
    }
    assert "generationConfig" not in body


@pytest.mark.parametrize(
    ("choice", "strict", "config"),
    [
        (None, None, None),
        ("auto", None, {"mode": "AUTO"}),
        ("none", None, {"mode": "NONE"}),
        ("required", None, {"mode": "ANY"}),
        (NamedTool("lookup"), None, {"mode": "ANY", "allowedFunctionNames": ["lookup"]}),
        (None, True, {"mode": "VALIDATED"}),
        ("auto", True, {"mode": "VALIDATED"}),
    ],
)
def test_tool_choice_maps_to_the_function_calling_mode(
    choice: ToolChoice | None, strict: bool | None, config: dict[str, Any] | None
) -> None:
    tool = Tool(LOOKUP.name, LOOKUP.parameters, LOOKUP.description, strict=strict)
    body = body_of(ask(tools=(tool,), tool_choice=choice))
    if config is None:
        assert "toolConfig" not in body
    else:
        assert body["toolConfig"] == {"functionCallingConfig": config}


@pytest.mark.parametrize(
    ("model", "thinking", "config"),
    [
        (MODEL, Thinking(budget_tokens=2048), {"includeThoughts": True, "thinkingBudget": 2048}),
        (MODEL, Thinking(effort="low"), {"includeThoughts": True, "thinkingBudget": 1024}),
        (MODEL, Thinking(), {"includeThoughts": True}),
        (MODEL, Thinking(enabled=False), {"thinkingBudget": 0}),
        ("gemini-2.5-pro", Thinking(enabled=False), {"thinkingBudget": 128}),
        (
            "gemini-3-pro-preview",
            Thinking(effort="high"),
            {"includeThoughts": True, "thinkingLevel": "HIGH"},
        ),
        (
            "gemini-3-flash-preview",
            Thinking(effort="minimal", budget_tokens=99),
            {"includeThoughts": True, "thinkingLevel": "MINIMAL"},
        ),
        (
            "gemini-3-pro-preview",
            Thinking(budget_tokens=4096),
            {"includeThoughts": True, "thinkingBudget": 4096},
        ),
        (
            "gemini-3-flash-preview",
            Thinking(enabled=False),
            {"thinkingLevel": "LOW", "includeThoughts": False},
        ),
    ],
)
def test_thinking_maps_to_budget_on_2_5_and_level_on_3(
    model: str, thinking: Thinking, config: dict[str, Any]
) -> None:
    body = body_of(ask(model=model, thinking=thinking))
    assert body["generationConfig"] == {"thinkingConfig": config}


def test_sampling_settings_live_in_the_generation_config() -> None:
    body = body_of(ask(temperature=0.2, max_tokens=300, stop=("END",), output=JsonObject()))
    assert body["generationConfig"] == {
        "temperature": 0.2,
        "maxOutputTokens": 300,
        "stopSequences": ["END"],
        "responseMimeType": "application/json",
    }


def conversation() -> tuple[Message, ...]:
    return (
        Message.system("Use the tools."),
        Message.user(
            "Who are these?",
            ImagePart(data=PNG, media_type="image/png"),
            ImagePart(url="https://example.com/cat.jpg"),
            ImagePart(url="data:image/webp;base64,UklGRg=="),
        ),
        Message.assistant(
            "Let me look.",
            [
                ToolCall("fc-1", "lookup", '{"q": "Ada"}'),
                ToolCall(GENERATED_ID_PREFIX + "abc", "lookup", '{"q": "Bob"}'),
            ],
        ),
        Message.tool_result("fc-1", "Ada Lovelace, 36", name="lookup"),
        Message.tool_result(GENERATED_ID_PREFIX + "abc", "Bob, 40"),
        Message.user("Thanks. Now as JSON."),
    )


def test_a_conversation_maps_roles_images_calls_and_results() -> None:
    body = body_of(ask(*conversation(), tools=(LOOKUP,)))
    assert body["systemInstruction"] == {"role": "user", "parts": [{"text": "Use the tools."}]}
    assert body["contents"] == [
        {
            "role": "user",
            "parts": [
                {"text": "Who are these?"},
                {"inlineData": {"mimeType": "image/png", "data": base64.b64encode(PNG).decode()}},
                {
                    "fileData": {
                        "mimeType": "image/jpeg",
                        "fileUri": "https://example.com/cat.jpg",
                    }
                },
                {"inlineData": {"mimeType": "image/webp", "data": "UklGRg=="}},
            ],
        },
        {
            "role": "model",
            "parts": [
                {"text": "Let me look."},
                {"functionCall": {"name": "lookup", "args": {"q": "Ada"}, "id": "fc-1"}},
                # an id outform made up is not Gemini's, so it is not sent back
                {"functionCall": {"name": "lookup", "args": {"q": "Bob"}}},
            ],
        },
        {
            # parallel results go back in one turn; the second one's name is looked up
            "role": "user",
            "parts": [
                {
                    "functionResponse": {
                        "name": "lookup",
                        "response": {"result": "Ada Lovelace, 36"},
                        "id": "fc-1",
                    }
                },
                {"functionResponse": {"name": "lookup", "response": {"result": "Bob, 40"}}},
            ],
        },
        {"role": "user", "parts": [{"text": "Thanks. Now as JSON."}]},
    ]


def test_gemini_3_replays_calls_with_the_documented_placeholder_signature() -> None:
    body = body_of(ask(*conversation(), model="gemini-3-flash-preview", tools=(LOOKUP,)))
    calls = [p for p in body["contents"][1]["parts"] if "functionCall" in p]
    # only the first call of a step carries a signature (docs: thought-signatures)
    assert [c.get("thoughtSignature") for c in calls] == [SKIP_SIGNATURE, None]


def test_extra_is_merged_last_and_nested_objects_keep_their_other_keys() -> None:
    safety = [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}]
    body = body_of(
        ask(
            output=JsonObject(),
            extra={"generationConfig": {"topK": 5}, "safetySettings": safety},
        )
    )
    assert body["generationConfig"] == {"responseMimeType": "application/json", "topK": 5}
    assert body["safetySettings"] == safety


def test_a_tool_result_whose_function_is_unknown_is_refused() -> None:
    with pytest.raises(UsageError, match="name of the function"):
        Gemini().build(ask(Message.user("Hi"), Message.tool_result("x1", "42")))


def test_tool_call_arguments_must_be_a_json_object() -> None:
    with pytest.raises(UsageError, match="not a JSON object"):
        Gemini().build(ask(Message.assistant(tool_calls=[ToolCall("a", "lookup", "[1]")])))


def test_a_forced_tool_may_not_reuse_a_tool_name() -> None:
    with pytest.raises(UsageError, match="name"):
        Gemini().build(ask(output=ForcedTool("lookup", SCHEMA), tools=(LOOKUP,)))


# -- the SDK sends the same ------------------------------------------------------------------


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as fake:
        yield fake


def endpoint(server: FakeServer, **fields: Any) -> Endpoint:
    return Endpoint(
        "gemini",
        server.url + "/v1beta",
        auth="x-goog-api-key",
        api_key=Secret("test-key"),
        **fields,
    )


def sdk_call(server: FakeServer, contents: Any, config: types.GenerateContentConfig) -> Any:
    """What the official SDK sends for the same call: (path, body)."""
    client = genai.Client(
        api_key="test-key",
        http_options=types.HttpOptions(base_url=server.url, api_version="v1beta"),
    )
    server.json(reply({"text": "{}"}))
    client.models.generate_content(model=MODEL, contents=contents, config=config)
    # the SDK sends `generationConfig: {}` when a config has nothing for it; outform omits it
    return server.last.path, {k: v for k, v in server.last.json.items() if v != {}}


def our_call(server: FakeServer, request: Request) -> Any:
    server.json(reply({"text": "{}"}))
    with Transport() as transport:
        transport.send(endpoint(server), Gemini().build(request))
    validate_request(server.last.json)
    return server.last.path, server.last.json


SDK_OFF = types.AutomaticFunctionCallingConfig(disable=True)


def test_a_structured_call_matches_what_the_sdk_sends(server: FakeServer) -> None:
    ours = our_call(
        server,
        ask(
            Message.system("Extract."),
            Message.user("Ada Lovelace, 36"),
            output=NativeSchema("Person", SCHEMA),
            temperature=0.0,
            max_tokens=200,
            stop=("END",),
            thinking=Thinking(budget_tokens=1024),
        ),
    )
    sdk = sdk_call(
        server,
        "Ada Lovelace, 36",
        types.GenerateContentConfig(
            system_instruction="Extract.",
            response_mime_type="application/json",
            response_json_schema=SCHEMA,
            temperature=0.0,
            max_output_tokens=200,
            stop_sequences=["END"],
            thinking_config=types.ThinkingConfig(thinking_budget=1024, include_thoughts=True),
        ),
    )
    assert ours[0] == sdk[0] == "/v1beta/models/gemini-2.5-flash:generateContent"
    assert as_sdk_types(ours[1]) == as_sdk_types(sdk[1])


def test_a_forced_tool_call_matches_what_the_sdk_sends(server: FakeServer) -> None:
    ours = our_call(server, ask(output=ForcedTool("record_person", SCHEMA, description="Rec.")))
    sdk = sdk_call(
        server,
        "Hi",
        types.GenerateContentConfig(
            tools=[
                types.Tool(
                    function_declarations=[
                        types.FunctionDeclaration(
                            name="record_person", description="Rec.", parameters_json_schema=SCHEMA
                        )
                    ]
                )
            ],
            tool_config=types.ToolConfig(
                function_calling_config=types.FunctionCallingConfig(
                    mode=types.FunctionCallingConfigMode.ANY,
                    allowed_function_names=["record_person"],
                )
            ),
            automatic_function_calling=SDK_OFF,
        ),
    )
    assert as_sdk_types(ours[1]) == as_sdk_types(sdk[1])


def test_a_tool_conversation_matches_what_the_sdk_sends(server: FakeServer) -> None:
    ours = our_call(
        server,
        ask(
            Message.user("Look up Ada.", ImagePart(data=PNG)),
            Message.assistant(tool_calls=[ToolCall("fc-1", "lookup", '{"q": "Ada"}')]),
            Message.tool_result("fc-1", "36", name="lookup"),
            tools=(LOOKUP,),
            tool_choice="auto",
        ),
    )
    sdk = sdk_call(
        server,
        [
            types.Content(
                role="user",
                parts=[
                    types.Part(text="Look up Ada."),
                    types.Part.from_bytes(data=PNG, mime_type="image/png"),
                ],
            ),
            types.Content(
                role="model",
                parts=[
                    types.Part(
                        function_call=types.FunctionCall(
                            id="fc-1", name="lookup", args={"q": "Ada"}
                        )
                    )
                ],
            ),
            types.Content(
                role="user",
                parts=[
                    types.Part(
                        function_response=types.FunctionResponse(
                            id="fc-1", name="lookup", response={"result": "36"}
                        )
                    )
                ],
            ),
        ],
        types.GenerateContentConfig(
            tools=[
                types.Tool(
                    function_declarations=[
                        types.FunctionDeclaration(
                            name="lookup",
                            description="Search the notes.",
                            parameters_json_schema=dict(LOOKUP.parameters),
                        )
                    ]
                )
            ],
            tool_config=types.ToolConfig(
                function_calling_config=types.FunctionCallingConfig(
                    mode=types.FunctionCallingConfigMode.AUTO
                )
            ),
            automatic_function_calling=SDK_OFF,
        ),
    )
    assert as_sdk_types(ours[1]) == as_sdk_types(sdk[1])


# -- parsing replies -----------------------------------------------------------------------


def test_a_structured_reply_is_the_text_the_sdk_would_give() -> None:
    body = reply({"text": '{"name": "Ada Lovelace", "age": 36}'})
    response = Gemini().parse(ask(output=NativeSchema("Person", SCHEMA)), body)
    assert response.text == '{"name": "Ada Lovelace", "age": 36}' == sdk_read(body).text
    assert response.finish_reason == "stop"
    assert response.usage == Usage(input_tokens=9, output_tokens=12)
    assert response.model == MODEL
    assert response.raw is body


def test_thought_parts_are_thinking_and_count_as_output() -> None:
    body = reply(
        {"text": "The user wants JSON.", "thought": True},
        {"text": '{"ok": true}', "thoughtSignature": "c2lnbmF0dXJl"},
        usageMetadata={
            "promptTokenCount": 9,
            "candidatesTokenCount": 5,
            "thoughtsTokenCount": 40,
            "cachedContentTokenCount": 4,
            "totalTokenCount": 54,
        },
    )
    response = Gemini().parse(ask(), body)
    assert response.text == '{"ok": true}' == sdk_read(body).text
    assert response.thinking == "The user wants JSON."
    assert response.usage == Usage(
        input_tokens=9, output_tokens=45, reasoning_tokens=40, cached_tokens=4
    )


def test_function_calls_become_tool_calls_with_json_text_arguments() -> None:
    body = reply(
        {"functionCall": {"id": "fc-7", "name": "lookup", "args": {"q": "Ada"}}},
        {"functionCall": {"name": "lookup", "args": {"q": "Bob"}}},
    )
    response = Gemini().parse(ask(tools=(LOOKUP,)), body)
    first, second = response.tool_calls
    assert (first.id, first.name, first.parsed_arguments()) == ("fc-7", "lookup", {"q": "Ada"})
    assert second.id.startswith(GENERATED_ID_PREFIX)
    assert second.parsed_arguments() == {"q": "Bob"}
    assert response.finish_reason == "tool_calls"
    assert response.text == ""


def test_the_forced_call_is_the_reply_text_and_not_a_tool_call() -> None:
    body = reply(
        {"functionCall": {"name": "record_person", "args": {"name": "Ada", "age": 36}}},
        {"functionCall": {"name": "lookup", "args": {"q": "x"}}},
    )
    request = ask(output=ForcedTool("record_person", SCHEMA), tools=(LOOKUP,))
    response = Gemini().parse(request, body)
    assert response.text == '{"name":"Ada","age":36}'
    assert [c.name for c in response.tool_calls] == ["lookup"]


def test_a_forced_call_alone_finishes_with_stop() -> None:
    body = reply({"functionCall": {"name": "record_person", "args": {"name": "Ada", "age": 36}}})
    response = Gemini().parse(ask(output=ForcedTool("record_person", SCHEMA)), body)
    assert (response.finish_reason, response.tool_calls) == ("stop", ())


@pytest.mark.parametrize(
    ("reason", "finish"),
    [
        ("MAX_TOKENS", "length"),
        ("SAFETY", "content_filter"),
        ("RECITATION", "content_filter"),
        ("PROHIBITED_CONTENT", "content_filter"),
        ("SPII", "content_filter"),
        ("MALFORMED_FUNCTION_CALL", "other"),
        ("OTHER", "other"),
    ],
)
def test_finish_reasons_map_to_the_neutral_vocabulary(reason: str, finish: str) -> None:
    body = reply({"text": '{"name": "Ada Lo'}, finish=reason)
    assert Gemini().parse(ask(), body).finish_reason == finish


def test_a_blocked_prompt_has_no_text_and_is_a_content_filter() -> None:
    body = {
        "promptFeedback": {"blockReason": "SAFETY"},
        "usageMetadata": {"promptTokenCount": 7, "totalTokenCount": 7},
        "modelVersion": MODEL,
    }
    validate_response(body)
    response = Gemini().parse(ask(), body)
    assert (response.text, response.finish_reason) == ("", "content_filter")
    assert response.usage == Usage(input_tokens=7)


# -- decoding streams ----------------------------------------------------------------------


def chunk(*parts: dict[str, Any], finish: str | None = None, usage: Any = None) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    event: dict[str, Any] = {"candidates": [candidate], "modelVersion": MODEL}
    if usage:
        event["usageMetadata"] = usage
    validate_response(event)
    return event


def decode(request: Request, events: list[dict[str, Any]]) -> list[Delta]:
    return decode_events(Gemini(), request, events)


RUNNING = {"promptTokenCount": 9, "totalTokenCount": 9}
TOTAL = {"promptTokenCount": 9, "candidatesTokenCount": 12, "totalTokenCount": 21}
TEXT_STREAM = [
    chunk({"text": '{"name": '}, usage=RUNNING),
    chunk({"text": '"Ada Lovelace", '}, usage=RUNNING),
    chunk({"text": '"age": 36}'}, finish="STOP", usage=TOTAL),
]


def test_a_streamed_reply_is_text_then_one_usage_then_finish() -> None:
    assert decode(ask(stream=True), TEXT_STREAM) == [
        Delta("text", '{"name": '),
        Delta("text", '"Ada Lovelace", '),
        Delta("text", '"age": 36}'),
        Delta("usage", usage=Usage(input_tokens=9, output_tokens=12)),
        Delta("finish", finish_reason="stop"),
    ]


def test_thought_parts_stream_as_thinking() -> None:
    events = [
        chunk({"text": "Plan: extract.", "thought": True}),
        chunk({"text": "{}"}, finish="STOP", usage=TOTAL),
    ]
    kinds = [(d.kind, d.text) for d in decode(ask(stream=True), events)]
    assert kinds[:2] == [("thinking", "Plan: extract."), ("text", "{}")]


def test_streamed_function_calls_arrive_whole_with_index_id_and_name() -> None:
    events = [
        chunk({"functionCall": {"id": "fc-1", "name": "lookup", "args": {"q": "Ada"}}}),
        chunk({"functionCall": {"name": "lookup", "args": {"q": "Bob"}}}, finish="STOP"),
    ]
    deltas = decode(ask(tools=(LOOKUP,), stream=True), events)
    first, second, finish = deltas
    assert (first.kind, first.index, first.tool_call_id, first.tool_name) == (
        "tool_call",
        0,
        "fc-1",
        "lookup",
    )
    assert first.text == '{"q":"Ada"}'
    assert second.index == 1
    assert second.tool_call_id is not None
    assert second.tool_call_id.startswith(GENERATED_ID_PREFIX)
    assert finish == Delta("finish", finish_reason="tool_calls")


def test_a_forced_call_streams_as_text() -> None:
    events = [
        chunk({"functionCall": {"name": "record_person", "args": {"age": 36}}}, finish="STOP")
    ]
    deltas = decode(ask(output=ForcedTool("record_person", SCHEMA), stream=True), events)
    assert deltas == [Delta("text", '{"age":36}'), Delta("finish", finish_reason="stop")]


def test_a_usage_chunk_after_the_finish_adds_only_the_increase() -> None:
    late = {"usageMetadata": {**TOTAL, "candidatesTokenCount": 15, "totalTokenCount": 24}}
    validate_response(late)
    deltas = decode(ask(stream=True), [*TEXT_STREAM, late])
    usages = [d.usage for d in deltas if d.kind == "usage" and d.usage is not None]
    assert usages == [Usage(9, 12), Usage(0, 3)]
    assert sum(usages, Usage()) == Usage(9, 15)


def test_a_blocked_prompt_stream_finishes_as_content_filter() -> None:
    event = {"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}, "usageMetadata": RUNNING}
    validate_response(event)
    assert decode(ask(stream=True), [event]) == [
        Delta("usage", usage=Usage(input_tokens=9)),
        Delta("finish", finish_reason="content_filter"),
    ]


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        ({"code": 500, "message": "Internal error", "status": "INTERNAL"}, StreamInterruptedError),
        ({"code": 429, "message": "Quota", "status": "RESOURCE_EXHAUSTED"}, RateLimitError),
    ],
)
def test_an_error_in_the_stream_raises(error: Mapping[str, Any], kind: type[Exception]) -> None:
    decoder = Gemini().decoder(ask(stream=True))
    decoder.feed(TEXT_STREAM[0])
    with pytest.raises(kind, match=str(error["message"])):
        decoder.feed({"error": error})


# -- over HTTP -----------------------------------------------------------------------------


class Sleeps:
    def __init__(self) -> None:
        self.waits: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def test_a_call_over_http_sends_the_body_with_the_key_header(server: FakeServer) -> None:
    request = ask(output=NativeSchema("Person", SCHEMA))
    server.json(reply({"text": '{"name": "Ada", "age": 36}'}))
    adapter = Gemini()
    with Transport() as transport:
        body = transport.send(endpoint(server), adapter.build(request))
    assert server.last.path == "/v1beta/models/gemini-2.5-flash:generateContent"
    assert server.last.headers["x-goog-api-key"] == "test-key"
    assert "authorization" not in server.last.headers
    assert server.last.json == adapter.build(request).body
    assert adapter.parse(request, body).text == '{"name": "Ada", "age": 36}'


def test_a_stream_over_http_decodes_as_the_sdk_reads_it(server: FakeServer) -> None:
    request = ask(stream=True)
    server.stream(TEXT_STREAM)
    adapter = Gemini()
    decoder = adapter.decoder(request)
    with Transport() as transport:
        deltas = [
            d
            for e in transport.stream(endpoint(server), adapter.build(request))
            for d in decoder.feed(e)
        ]
    assert server.last.path == "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    assert server.last.headers["accept"] == "text/event-stream"
    text = "".join(d.text for d in deltas if d.kind == "text")
    assert text == '{"name": "Ada Lovelace", "age": 36}'

    server.stream(TEXT_STREAM)  # the SDK, on the same stream, sees the same text
    client = genai.Client(
        api_key="test-key",
        http_options=types.HttpOptions(base_url=server.url, api_version="v1beta"),
    )
    chunks = client.models.generate_content_stream(model=MODEL, contents="Hi")
    assert "".join(c.text or "" for c in chunks) == text


def test_a_schema_the_api_rejects_is_a_bad_request(server: FakeServer) -> None:
    error = {
        "error": {
            "code": 400,
            "message": 'Invalid JSON payload received. Unknown name "foo" at '
            "'generation_config.response_json_schema': Cannot find field.",
            "status": "INVALID_ARGUMENT",
        }
    }
    server.json(error, status=400)
    with Transport() as transport, pytest.raises(BadRequestError) as caught:
        transport.send(endpoint(server), Gemini().build(ask(output=JsonObject())))
    assert caught.value.status == 400
    assert "Unknown name" in caught.value.what


def test_429_is_retried_after_the_wait_gemini_asks_for(server: FakeServer) -> None:
    quota = {"error": {"code": 429, "message": "Quota exceeded", "status": "RESOURCE_EXHAUSTED"}}
    server.reply(Reply(status=429, body=quota, headers={"retry-after": "7"}))
    server.json(reply({"text": "{}"}))
    sleeps = Sleeps()
    with Transport(sleep=sleeps) as transport:
        transport.send(endpoint(server), Gemini().build(ask()))
    assert sleeps.waits == [7.0]

    server.reply(Reply(status=429, body=quota, headers={"retry-after": "7"}))
    with (
        Transport(retry=RetryPolicy(retries=0)) as transport,
        pytest.raises(RateLimitError) as caught,
    ):
        transport.send(endpoint(server), Gemini().build(ask()))
    assert caught.value.retry_after == 7.0


def test_a_server_error_is_reported_after_the_retries(server: FakeServer) -> None:
    server.json({"error": {"code": 500, "message": "Internal", "status": "INTERNAL"}}, status=500)
    with (
        Transport(retry=RetryPolicy(retries=0)) as transport,
        pytest.raises(ServerError, match="Internal"),
    ):
        transport.send(endpoint(server), Gemini().build(ask()))


def test_a_dropped_stream_is_an_interruption_after_the_text_so_far(server: FakeServer) -> None:
    request = ask(stream=True)
    server.stream(TEXT_STREAM, drop_after=1)
    decoder = Gemini().decoder(request)
    seen: list[Delta] = []
    with Transport() as transport, pytest.raises(StreamInterruptedError):
        for event in transport.stream(endpoint(server), Gemini().build(request)):
            seen.extend(decoder.feed(event))
    assert seen == [Delta("text", '{"name": ')]
