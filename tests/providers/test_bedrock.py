"""The Bedrock Converse adapter: what it sends, what it reads, and both over real HTTP with
SigV4 signing.

Every body the adapter builds here is checked against botocore's `bedrock-runtime` service
model (`tests/providers/bedrock_wire.py`): ParamValidator, the rest-json serializer (same path,
same JSON) and a strict walk of the shapes. Replies, stream events and error bodies are walked
against the output, event and error shapes.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import orjson
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from outform.errors import (
    AuthenticationError,
    BadRequestError,
    RateLimitError,
    ServerError,
    StreamInterruptedError,
)
from outform.errors import UsageError as Refused
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
    WireRequest,
)
from outform.providers.bedrock import BedrockConverse
from outform.providers.registry import resolve
from outform.transport import RetryPolicy, Transport
from tests.aws import ACCESS_KEY, SECRET_KEY
from tests.providers.bedrock_wire import check_error, check_event, check_request, check_response
from tests.providers.deltas import decode as decode_events
from tests.providers.deltas import joined
from tests.providers.fake import FakeServer, Reply

CLAUDE = "anthropic.claude-sonnet-4-5-20250929-v1:0"
PROFILE_ARN = (
    "arn:aws:bedrock:eu-west-3:123456789012:inference-profile/"
    "eu.anthropic.claude-haiku-4-5-20251001-v1:0"
)
NOVA = "amazon.nova-pro-v1:0"
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

adapter = BedrockConverse()


def request(model: str = CLAUDE, **fields: Any) -> Request:
    fields.setdefault("messages", ASK)
    return Request(model, **fields)


def build(req: Request) -> WireRequest:
    """Build, and check path and body against botocore's service model and serializer."""
    wire = adapter.build(req)
    check_request(wire.path, wire.body, req.model, stream=req.stream)
    return wire


# -- building: output mechanisms -----------------------------------------------------------


def test_a_native_schema_travels_as_a_json_string_in_output_config() -> None:
    output = NativeSchema("person", PERSON, strict=True, description="The person mentioned")
    wire = build(request(output=output))
    assert wire.path == "/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse"
    assert wire.stream is None and wire.method == "POST"
    json_schema = wire.body["outputConfig"]["textFormat"]["structure"]["jsonSchema"]
    assert wire.body["outputConfig"]["textFormat"]["type"] == "json_schema"
    assert isinstance(json_schema["schema"], str)
    assert orjson.loads(json_schema["schema"]) == PERSON
    assert (json_schema["name"], json_schema["description"]) == ("person", "The person mentioned")
    assert "modelId" not in wire.body and "model" not in wire.body
    assert wire.body["system"] == [{"text": "Extract the person."}]
    assert wire.body["messages"] == [{"role": "user", "content": [{"text": "Ada Lovelace, 36"}]}]


def test_an_inference_profile_arn_is_percent_encoded_whole_in_the_path() -> None:
    wire = build(request(PROFILE_ARN, stream=True))
    assert wire.path == (
        "/model/arn%3Aaws%3Abedrock%3Aeu-west-3%3A123456789012%3Ainference-profile%2F"
        "eu.anthropic.claude-haiku-4-5-20251001-v1%3A0/converse-stream"
    )
    assert wire.stream == "aws-event-stream"


def test_a_forced_tool_keeps_its_schema_an_object_and_forces_the_call() -> None:
    output = ForcedTool("record_person", PERSON, strict=True, description="Record the person")
    wire = build(request(output=output, tools=(WEATHER,)))
    assert wire.body["toolConfig"] == {
        "tools": [
            {
                "toolSpec": {
                    "name": "get_weather",
                    "description": "Current weather in a city",
                    "inputSchema": {"json": WEATHER.parameters},
                }
            },
            {
                "toolSpec": {
                    "name": "record_person",
                    "description": "Record the person",
                    "inputSchema": {"json": PERSON},
                    "strict": True,
                }
            },
        ],
        "toolChoice": {"tool": {"name": "record_person"}},
    }
    assert "outputConfig" not in wire.body


def test_json_object_mode_does_not_exist_on_converse() -> None:
    with pytest.raises(Refused, match="no JSON-object mode"):
        adapter.build(request(output=JsonObject()))


def test_inference_settings_go_in_inference_config() -> None:
    body = build(request(NOVA, max_tokens=512, temperature=0.2, stop=("END",))).body
    assert body["inferenceConfig"] == {
        "maxTokens": 512,
        "temperature": 0.2,
        "stopSequences": ["END"],
    }
    assert "inferenceConfig" not in build(request(NOVA)).body


def test_extra_is_merged_last_and_verbatim() -> None:
    extra = {"inferenceConfig": {"maxTokens": 7}, "performanceConfig": {"latency": "optimized"}}
    body = build(request(NOVA, max_tokens=512, extra=extra)).body
    assert body["inferenceConfig"] == {"maxTokens": 7}
    assert body["performanceConfig"] == {"latency": "optimized"}


# -- building: messages --------------------------------------------------------------------


def test_a_conversation_with_images_tool_calls_and_results_maps_to_content_blocks() -> None:
    calls = [
        ToolCall("tooluse_A1", "get_weather", '{"city": "Paris"}'),
        ToolCall("tooluse_B2", "get_weather", '{"city": "Oslo"}'),
    ]
    messages = (
        Message.system("You are terse."),
        Message.user(
            "What is in these?",
            ImagePart(data=PNG),
            ImagePart(url="data:image/jpeg;base64,/9j/4AAQ"),
            ImagePart(url="s3://my-bucket/cats/cat.webp", media_type="image/webp"),
        ),
        Message.assistant("Checking the weather.", calls),
        Message.tool_result("tooluse_A1", "18 C, clear"),
        Message.tool_result("tooluse_B2", "4 C, snow"),
        Message.user("And tomorrow?"),
    )
    body = build(request(messages=messages, tools=(WEATHER,))).body
    assert body["system"] == [{"text": "You are terse."}]
    user, assistant, results = body["messages"]
    assert user["content"][1:] == [
        {"image": {"format": "png", "source": {"bytes": ImagePart(data=PNG).base64}}},
        {"image": {"format": "jpeg", "source": {"bytes": "/9j/4AAQ"}}},
        {
            "image": {
                "format": "webp",
                "source": {"s3Location": {"uri": "s3://my-bucket/cats/cat.webp"}},
            }
        },
    ]
    assert assistant == {
        "role": "assistant",
        "content": [
            {"text": "Checking the weather."},
            {
                "toolUse": {
                    "toolUseId": "tooluse_A1",
                    "name": "get_weather",
                    "input": {"city": "Paris"},
                }
            },
            {
                "toolUse": {
                    "toolUseId": "tooluse_B2",
                    "name": "get_weather",
                    "input": {"city": "Oslo"},
                }
            },
        ],
    }
    assert results == {  # one user turn: Converse wants the roles to alternate
        "role": "user",
        "content": [
            {"toolResult": {"toolUseId": "tooluse_A1", "content": [{"text": "18 C, clear"}]}},
            {"toolResult": {"toolUseId": "tooluse_B2", "content": [{"text": "4 C, snow"}]}},
            {"text": "And tomorrow?"},
        ],
    }


@pytest.mark.parametrize(
    ("message", "match"),
    [
        (Message.user(ImagePart(url="https://example.com/cat.png")), "not web URLs"),
        (Message.user(ImagePart(data=b"BM..", media_type="image/bmp")), "image/bmp"),
        (Message.assistant("", [ToolCall("t1", "f", "oops")]), "not a JSON object"),
        (Message.user(""), "no content"),
    ],
)
def test_messages_converse_would_refuse_are_refused_before_sending(
    message: Message, match: str
) -> None:
    with pytest.raises(Refused, match=match):
        adapter.build(request(messages=(message,)))


# -- building: tools -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("choice", "wire"),
    [
        ("auto", {"auto": {}}),
        ("required", {"any": {}}),
        (NamedTool("get_weather"), {"tool": {"name": "get_weather"}}),
        (None, None),
    ],
)
def test_tool_choices(choice: ToolChoice | None, wire: dict[str, Any] | None) -> None:
    config = build(request(NOVA, tools=(WEATHER,), tool_choice=choice)).body["toolConfig"]
    assert config.get("toolChoice") == wire


def test_tool_choice_none_has_no_converse_form_so_the_tools_are_left_out() -> None:
    assert "toolConfig" not in build(request(NOVA, tools=(WEATHER,), tool_choice="none")).body
    history = (
        Message.user("Weather in Paris?"),
        Message.assistant("", [ToolCall("tooluse_A1", "get_weather", '{"city":"Paris"}')]),
        Message.tool_result("tooluse_A1", "18 C"),
    )
    with pytest.raises(Refused, match="needs the tools"):
        adapter.build(request(NOVA, messages=history, tools=(WEATHER,), tool_choice="none"))
    with pytest.raises(Refused, match="needs the tools"):
        adapter.build(request(NOVA, messages=history))
    build(request(NOVA, messages=history, tools=(WEATHER,)))


# -- building: thinking --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("thinking", "fields", "effort", "max_tokens"),
    [
        (
            Thinking(budget_tokens=2048),
            {"thinking": {"type": "enabled", "budget_tokens": 2048}},
            None,
            6144,
        ),
        (Thinking(), {"thinking": {"type": "enabled", "budget_tokens": 1024}}, None, 5120),
        (Thinking(effort="high"), {"thinking": {"type": "adaptive"}}, "high", None),
        (Thinking(enabled=False), None, None, None),
    ],
)
def test_claude_thinking_rides_in_additional_model_request_fields(
    thinking: Thinking, fields: dict[str, Any] | None, effort: str | None, max_tokens: int | None
) -> None:
    body = build(request(thinking=thinking, temperature=0.3)).body
    assert body.get("additionalModelRequestFields") == fields
    assert body.get("outputConfig", {}).get("effort") == effort
    assert body.get("inferenceConfig", {}).get("maxTokens") == max_tokens
    # Claude takes only the default temperature while thinking: it is dropped then.
    assert ("temperature" in body.get("inferenceConfig", {})) is (fields is None)


def test_effort_sits_next_to_the_text_format() -> None:
    output = NativeSchema("person", PERSON)
    body = build(request(PROFILE_ARN, output=output, thinking=Thinking(effort="medium"))).body
    assert set(body["outputConfig"]) == {"textFormat", "effort"}
    assert body["outputConfig"]["effort"] == "medium"


@pytest.mark.parametrize(
    "fields",
    [
        {"output": ForcedTool("record", PERSON)},
        {"tools": (WEATHER,), "tool_choice": "required"},
        {"tools": (WEATHER,), "tool_choice": NamedTool("get_weather")},
    ],
)
def test_claude_thinking_with_a_forced_tool_choice_is_refused_not_sent(
    fields: dict[str, Any],
) -> None:
    with pytest.raises(Refused, match="forced tool choice"):
        adapter.build(request(thinking=Thinking(budget_tokens=2048), **fields))
    build(request(thinking=Thinking(enabled=False), **fields))
    build(request(NOVA, thinking=None, **fields))


def test_thinking_budgets_claude_would_refuse() -> None:
    with pytest.raises(Refused, match="below the minimum"):
        adapter.build(request(thinking=Thinking(budget_tokens=100)))
    with pytest.raises(Refused, match="larger than the thinking budget"):
        adapter.build(request(thinking=Thinking(budget_tokens=4096), max_tokens=1000))


@pytest.mark.parametrize(
    ("model", "thinking", "fields"),
    [
        ("openai.gpt-oss-120b-1:0", Thinking(effort="max"), {"reasoning_effort": "high"}),
        ("openai.gpt-oss-20b-1:0", Thinking(), None),
        ("qwen.qwen3-32b-v1:0", Thinking(effort="low"), {"reasoning_config": "low"}),
        ("qwen.qwen3-32b-v1:0", Thinking(budget_tokens=4096), {"reasoning_config": "high"}),
    ],
)
def test_other_families_get_their_own_reasoning_fields(
    model: str, thinking: Thinking, fields: dict[str, Any] | None
) -> None:
    body = build(request(model, thinking=thinking)).body
    assert body.get("additionalModelRequestFields") == fields
    assert "outputConfig" not in body


def test_thinking_on_a_model_of_unknown_family_needs_its_fields_spelled_out() -> None:
    arn = "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3d4e5f6"
    with pytest.raises(Refused, match="does not know how") as caught:
        adapter.build(request(arn, thinking=Thinking()))
    assert caught.value.fix is not None and "additionalModelRequestFields" in caught.value.fix
    fields = {"reasoningConfig": {"type": "enabled", "maxReasoningEffort": "low"}}
    body = build(
        request(arn, thinking=Thinking(), extra={"additionalModelRequestFields": fields})
    ).body
    assert body["additionalModelRequestFields"] == fields


# -- parsing -------------------------------------------------------------------------------


def converse(content: list[dict[str, Any]], stop: str = "end_turn", **usage: int) -> dict[str, Any]:
    """A realistic Converse reply, walked against the service model's output shape."""
    counts = {"inputTokens": 20, "outputTokens": 14, **usage}
    counts["totalTokens"] = sum(counts.values())
    body = {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": stop,
        "usage": counts,
        "metrics": {"latencyMs": 812},
    }
    check_response(body)
    return body


def test_a_native_schema_reply_is_the_json_text() -> None:
    body = converse(
        [{"text": '{"name":"Ada Lovelace","age":36}'}],
        cacheReadInputTokens=100,
        cacheWriteInputTokens=5,
    )
    reply = adapter.parse(request(output=NativeSchema("p", PERSON)), body)
    assert reply.text == '{"name":"Ada Lovelace","age":36}'
    assert reply.finish_reason == "stop"
    assert reply.usage == Usage(input_tokens=125, output_tokens=14, cached_tokens=100)
    assert reply.model == CLAUDE
    assert reply.raw is body


def test_a_forced_tool_reply_surfaces_its_input_as_the_text() -> None:
    body = converse(
        [
            {
                "toolUse": {
                    "toolUseId": "tooluse_kZJMlvQm",
                    "name": "record",
                    "input": {"name": "Ada", "age": 36},
                }
            }
        ],
        stop="tool_use",
    )
    reply = adapter.parse(request(output=ForcedTool("record", PERSON)), body)
    assert orjson.loads(reply.text) == {"name": "Ada", "age": 36}
    assert reply.tool_calls == ()
    assert reply.finish_reason == "stop"


def test_reasoning_and_tool_calls_the_model_chose() -> None:
    body = converse(
        [
            {
                "reasoningContent": {
                    "reasoningText": {"text": "Paris first.", "signature": "ErcBCkgIAxAC"}
                }
            },
            {"reasoningContent": {"redactedContent": "ZW5jcnlwdGVk"}},
            {"text": "Checking."},
            {
                "toolUse": {
                    "toolUseId": "tooluse_A1",
                    "name": "get_weather",
                    "input": {"city": "Paris"},
                }
            },
        ],
        stop="tool_use",
    )
    reply = adapter.parse(request(tools=(WEATHER,)), body)
    assert reply.thinking == "Paris first."
    assert reply.text == "Checking."
    assert reply.tool_calls == (ToolCall("tooluse_A1", "get_weather", '{"city":"Paris"}'),)
    assert reply.finish_reason == "tool_calls"


@pytest.mark.parametrize(
    ("stop", "finish"),
    [
        ("max_tokens", "length"),
        ("stop_sequence", "stop"),
        ("content_filtered", "content_filter"),
        ("guardrail_intervened", "content_filter"),
        ("malformed_tool_use", "other"),
        ("model_context_window_exceeded", "length"),
    ],
)
def test_stop_reasons(stop: str, finish: str) -> None:
    body = converse([{"text": '{"name":"Ad'}], stop=stop)
    assert adapter.parse(request(), body).finish_reason == finish


# -- streaming -----------------------------------------------------------------------------


def text_delta(index: int, text: str) -> dict[str, Any]:
    return {"contentBlockDelta": {"delta": {"text": text}, "contentBlockIndex": index}}


def tool_start(index: int, tool_id: str, name: str) -> dict[str, Any]:
    start = {"toolUse": {"toolUseId": tool_id, "name": name}}
    return {"contentBlockStart": {"start": start, "contentBlockIndex": index}}


def tool_delta(index: int, fragment: str) -> dict[str, Any]:
    return {
        "contentBlockDelta": {"delta": {"toolUse": {"input": fragment}}, "contentBlockIndex": index}
    }


def block_stop(index: int) -> dict[str, Any]:
    return {"contentBlockStop": {"contentBlockIndex": index}}


def finish(stop: str, output_tokens: int = 15) -> list[dict[str, Any]]:
    usage = {"inputTokens": 30, "outputTokens": output_tokens, "totalTokens": 30 + output_tokens}
    return [
        {"messageStop": {"stopReason": stop}},
        {"metadata": {"usage": usage, "metrics": {"latencyMs": 640}}},
    ]


MESSAGE_START: dict[str, Any] = {"messageStart": {"role": "assistant"}}


def text_stream(*pieces: str) -> list[dict[str, Any]]:
    return [MESSAGE_START, *(text_delta(0, p) for p in pieces), block_stop(0), *finish("end_turn")]


def decode(req: Request, events: Sequence[Mapping[str, Any]]) -> list[Delta]:
    return decode_events(adapter, req, events, check_event)


def test_a_streamed_native_reply_arrives_as_text_then_finish_then_usage() -> None:
    deltas = decode(
        request(output=NativeSchema("p", PERSON)), text_stream('{"name":', '"Ada","age":36}')
    )
    assert joined(deltas, "text") == '{"name":"Ada","age":36}'
    assert [d.kind for d in deltas][-2:] == ["finish", "usage"]
    assert deltas[-2].finish_reason == "stop"
    assert deltas[-1].usage == Usage(input_tokens=30, output_tokens=15)


def test_a_streamed_forced_tool_arrives_as_text() -> None:
    events = [
        MESSAGE_START,
        tool_start(0, "tooluse_kZJMlvQm", "record"),
        tool_delta(0, '{"name": "Ada", '),
        tool_delta(0, '"age": 36}'),
        block_stop(0),
        *finish("tool_use"),
    ]
    deltas = decode(request(output=ForcedTool("record", PERSON)), events)
    assert joined(deltas, "text") == '{"name": "Ada", "age": 36}'
    assert not [d for d in deltas if d.kind == "tool_call"]
    assert [d.finish_reason for d in deltas if d.kind == "finish"] == ["stop"]


def test_streamed_reasoning_and_tool_calls_keep_their_own_channels() -> None:
    reasoning = {
        "contentBlockDelta": {
            "delta": {"reasoningContent": {"text": "Paris first."}},
            "contentBlockIndex": 0,
        }
    }
    signature = {
        "contentBlockDelta": {
            "delta": {"reasoningContent": {"signature": "ErcBCkgI"}},
            "contentBlockIndex": 0,
        }
    }
    events = [
        MESSAGE_START,
        reasoning,
        signature,
        block_stop(0),
        text_delta(1, "Checking."),
        block_stop(1),
        tool_start(2, "tooluse_A1", "get_weather"),
        tool_delta(2, '{"city":'),
        tool_delta(2, '"Paris"}'),
        block_stop(2),
        *finish("tool_use"),
    ]
    deltas = decode(request(tools=(WEATHER,)), events)
    assert joined(deltas, "thinking") == "Paris first."
    assert joined(deltas, "text") == "Checking."
    calls = [d for d in deltas if d.kind == "tool_call"]
    assert (calls[0].index, calls[0].tool_call_id, calls[0].tool_name) == (
        0,
        "tooluse_A1",
        "get_weather",
    )
    assert "".join(d.text for d in calls) == '{"city":"Paris"}'
    assert [d.finish_reason for d in deltas if d.kind == "finish"] == ["tool_calls"]


# -- over HTTP, signed ---------------------------------------------------------------------

AUTHORIZATION = re.compile(
    r"AWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/(?P<date>\d{8})/(?P<region>[^/]+)/"
    r"(?P<service>[^/]+)/aws4_request, SignedHeaders=(?P<signed>[a-z0-9;-]+), "
    r"Signature=(?P<signature>[0-9a-f]{64})"
)


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as fake:
        yield fake


def no_sleep(seconds: float) -> None:
    return None


def endpoint(server: FakeServer, model: str = CLAUDE) -> Any:
    resolved = resolve(f"bedrock:{model}", base_url=server.url, aws_region="eu-west-3", env={})
    assert isinstance(resolved.adapter, BedrockConverse)
    assert resolved.adapter.auth == resolved.spec.auth == "sigv4"
    assert (resolved.endpoint.auth, resolved.endpoint.aws_region) == ("sigv4", "eu-west-3")
    assert resolved.model == model
    return resolved.endpoint


def verify_signature(server: FakeServer, secret: str = SECRET_KEY) -> dict[str, str]:
    """Recompute the SigV4 signature from what the server received; returns the parts."""
    received = server.last
    match = AUTHORIZATION.fullmatch(received.headers["authorization"])
    assert match, received.headers["authorization"]
    parts = match.groupdict()
    signed = parts["signed"].split(";")
    assert {"host", "x-amz-date"} <= set(signed)
    replay = AWSRequest(
        method=received.method,
        url=server.url + received.path,
        data=received.body,
        headers={name: received.headers[name] for name in signed},
    )
    replay.context["timestamp"] = received.headers["x-amz-date"]
    signer = SigV4Auth(Credentials(parts["key"], secret), parts["service"], parts["region"])
    expected = signer.signature(
        signer.string_to_sign(replay, signer.canonical_request(replay)), replay
    )
    assert parts["signature"] == expected, "the request changed after it was signed"
    return parts


def test_a_signed_call_reaches_the_server_intact(aws: None, server: FakeServer) -> None:
    server.json(converse([{"text": '{"name":"Ada","age":36}'}]))
    req = request(PROFILE_ARN, output=NativeSchema("person", PERSON))
    wire = build(req)
    with Transport(sleep=no_sleep) as transport:
        reply = adapter.parse(req, transport.send(endpoint(server, PROFILE_ARN), wire))
    assert orjson.loads(reply.text) == {"name": "Ada", "age": 36}
    received = server.last
    assert received.path == wire.path  # still percent-encoded: ':' as %3A, '/' as %2F
    assert received.json == wire.body
    parts = verify_signature(server)
    assert (parts["key"], parts["region"], parts["service"]) == (ACCESS_KEY, "eu-west-3", "bedrock")
    assert re.fullmatch(r"\d{8}T\d{6}Z", received.headers["x-amz-date"])
    assert received.headers["x-amz-date"].startswith(parts["date"])
    assert "x-amz-security-token" not in received.headers
    everything = repr(received.headers) + received.body.decode()
    assert SECRET_KEY not in everything


def test_a_session_token_is_sent_and_signed(
    aws: None, server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_SESSION_TOKEN", "FwoGZXIvYXdzEXAMPLETOKEN")
    server.json(converse([{"text": "{}"}]))
    with Transport(sleep=no_sleep) as transport:
        transport.send(endpoint(server), build(request()))
    assert server.last.headers["x-amz-security-token"] == "FwoGZXIvYXdzEXAMPLETOKEN"
    assert "x-amz-security-token" in verify_signature(server)["signed"].split(";")


def test_a_refused_signature_is_an_authentication_error_without_the_secret(
    aws: None, server: FakeServer
) -> None:
    body = {
        "message": "The request signature we calculated does not match the signature you provided."
    }
    check_error("AccessDeniedException", body)
    server.json(
        body,
        status=403,
        headers={
            "x-amzn-errortype": "AccessDeniedException:http://internal.amazon.com/coral/com.amazon.bedrock/"
        },
    )
    point = endpoint(server)
    with Transport(sleep=no_sleep) as transport, pytest.raises(AuthenticationError) as caught:
        transport.send(point, build(request()))
    assert "signature we calculated" in caught.value.what
    for text in (str(caught.value), repr(caught.value), caught.value.body or "", repr(point)):
        assert SECRET_KEY not in text and ACCESS_KEY not in text


def test_without_credentials_nothing_is_sent(
    aws: None, server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    with (
        Transport(sleep=no_sleep) as transport,
        pytest.raises(AuthenticationError, match="no AWS credentials"),
    ):
        transport.send(endpoint(server), build(request()))
    assert server.requests == []


def test_a_signed_stream_decodes_to_the_reply(aws: None, server: FakeServer) -> None:
    events = [
        MESSAGE_START,
        tool_start(0, "tooluse_1", "record"),
        tool_delta(0, '{"name":"Ada",'),
        tool_delta(0, '"age":36}'),
        block_stop(0),
        *finish("tool_use"),
    ]
    for event in events:
        check_event(event)
    server.stream(events, framing="aws-event-stream")
    req = request(NOVA, output=ForcedTool("record", PERSON), stream=True)
    decoder = adapter.decoder(req)
    with Transport(sleep=no_sleep) as transport:
        deltas = [
            d
            for event in transport.stream(endpoint(server, NOVA), build(req))
            for d in decoder.feed(event)
        ]
    assert orjson.loads(joined(deltas, "text")) == {"name": "Ada", "age": 36}
    assert server.last.path == "/model/amazon.nova-pro-v1%3A0/converse-stream"
    assert server.last.headers["accept"] == "application/vnd.amazon.eventstream"
    verify_signature(server)


def test_a_schema_bedrock_rejects_is_a_bad_request_not_retried(
    aws: None, server: FakeServer
) -> None:
    body = {
        "message": "The model returned the following errors: output_config.format.schema: "
        "For 'integer' type, property 'minimum' is not supported"
    }
    check_error("ValidationException", body)
    server.json(
        body,
        status=400,
        headers={
            "x-amzn-errortype": "ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/"
        },
    )
    with (
        Transport(sleep=no_sleep) as transport,
        pytest.raises(BadRequestError, match="'minimum' is not supported"),
    ):
        transport.send(endpoint(server), build(request(output=NativeSchema("p", PERSON))))
    assert len(server.requests) == 1


def test_throttling_is_retried_after_the_wait_asked_for_and_re_signed(
    aws: None, server: FakeServer
) -> None:
    body = {"message": "Too many requests, please wait before trying again."}
    check_error("ThrottlingException", body)
    waits: list[float] = []
    server.reply(Reply(status=429, body=body, headers={"retry-after": "3"}))
    server.json(converse([{"text": "{}"}]))
    with Transport(sleep=waits.append) as transport:
        assert transport.send(endpoint(server), build(request()))["stopReason"] == "end_turn"
    assert waits == [3.0]
    assert len(server.requests) == 2
    verify_signature(server)


def test_server_errors_are_retried_then_reported(aws: None, server: FakeServer) -> None:
    body = {"message": "The server encountered an internal error."}
    check_error("InternalServerException", body)
    for _ in range(2):
        server.json(body, status=500)
    with (
        Transport(sleep=no_sleep, retry=RetryPolicy(retries=1)) as transport,
        pytest.raises(ServerError, match="internal error"),
    ):
        transport.send(endpoint(server), build(request()))
    assert len(server.requests) == 2


def test_a_stream_that_breaks_off_is_reported_after_what_arrived(
    aws: None, server: FakeServer
) -> None:
    server.stream(text_stream('{"name":', '"Ada"}'), framing="aws-event-stream", drop_after=2)
    req = request(stream=True)
    decoder = adapter.decoder(req)
    received: list[Delta] = []
    with Transport(sleep=no_sleep) as transport, pytest.raises(StreamInterruptedError):
        for event in transport.stream(endpoint(server), build(req)):
            received += decoder.feed(event)
    assert joined(received, "text") == '{"name":'
    assert not [d for d in received if d.kind == "finish"]


@pytest.mark.parametrize(
    ("exception", "error"),
    [
        ("throttlingException", RateLimitError),
        ("modelStreamErrorException", StreamInterruptedError),
    ],
)
def test_an_exception_inside_the_stream_is_raised(
    aws: None, server: FakeServer, exception: str, error: type[Exception]
) -> None:
    check_event({exception: {"message": "Model stream failed"}})
    server.stream(
        [
            MESSAGE_START,
            text_delta(0, "{"),
            {"__exception__": exception, "message": "Model stream failed"},
        ],
        framing="aws-event-stream",
    )
    with Transport(sleep=no_sleep) as transport, pytest.raises(error, match="Model stream failed"):
        list(transport.stream(endpoint(server), build(request(stream=True))))


def test_a_schema_holding_an_integer_beyond_64_bits_is_written_digit_for_digit() -> None:
    schema = {"type": "object", "properties": {"n": {"enum": [2**64, 0]}}}
    wire = build(request(output=NativeSchema("n", schema, strict=True)))
    written = wire.body["outputConfig"]["textFormat"]["structure"]["jsonSchema"]["schema"]
    assert '"enum":[18446744073709551616,0]' in written
