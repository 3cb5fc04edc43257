"""Several calls of the forced output tool, and text beside them, on every API that forces a
tool: OpenAI Chat Completions and Responses, Anthropic, Gemini and Bedrock (Ollama cannot
force a tool, so it has no tool mode).

The rule (providers/forced.py, docs/generate.md, "Tool mode"): several calls of the forced
tool are several values of one reply, their arguments the text in call order, one per line;
calls with exactly equal arguments are one value; none of them is in `Response.tool_calls`;
text beside them is not part of the reply. Whole replies and streams alike.

Every reply body and stream event here is checked against the provider's official artifact
(OpenAI's OpenAPI document and SDK types, the anthropic and google-genai SDK types,
botocore's service model), and the end-to-end tests go through `outform.generate` and
`outform.stream` over real HTTP to the fake server.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

import orjson
import pytest
from pydantic import BaseModel

import outform
from outform.providers.anthropic import AnthropicMessages
from outform.providers.assemble import Assembler
from outform.providers.base import Adapter, Delta, ForcedTool, Message, Request, Response, Tool
from outform.providers.bedrock import BedrockConverse
from outform.providers.gemini import Gemini
from outform.providers.openai_chat import OpenAIChat
from outform.providers.openai_responses import OpenAIResponses
from outform.run import Stream
from outform.transport import RetryPolicy, Transport
from tests.providers import anthropic_wire, bedrock_wire, gemini_wire, openai_wire
from tests.providers.deltas import decode
from tests.providers.fake import FakeServer, Framing

ITEM = {
    "type": "object",
    "properties": {"a": {"type": "integer"}},
    "required": ["a"],
    "additionalProperties": False,
}
OUTPUT = "Item"
WEATHER = Tool(
    "get_weather",
    {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    },
)
ASK = (Message.user("Give the items."),)

ONE, TWO = '{"a":1}', '{"a":2}'
PARIS = '{"city":"Paris"}'

Piece = tuple[str, str]
"""`("", text)`: text the model wrote; `(name, arguments)`: a call of a tool."""


def call(arguments: str, name: str = OUTPUT) -> Piece:
    return (name, arguments)


def prose(text: str) -> Piece:
    return ("", text)


def halves(text: str) -> list[str]:
    """A call's arguments in two fragments, as the APIs stream them."""
    middle = len(text) // 2
    return [text[:middle], text[middle:]]


# -- wire-accurate replies and streams, per API ----------------------------------------------

_SPEC: list[openai_wire.Conformance] = []


def _conforms(name: str, payload: Any) -> None:
    if not _SPEC:
        from tests.providers.openapi import load

        _SPEC.append(openai_wire.Conformance(load()))
    _SPEC[0](name, payload)


def _chat_reply(pieces: Sequence[Piece]) -> dict[str, Any]:
    text = "".join(t for name, t in pieces if not name)
    calls = [
        openai_wire.tool_call(f"call_{i}", name, t) for i, (name, t) in enumerate(pieces) if name
    ]
    fields: dict[str, Any] = {"content": text or None}
    if calls:
        fields["tool_calls"] = calls
    body = openai_wire.chat_completion(finish="tool_calls" if calls else "stop", **fields)
    _conforms("CreateChatCompletionResponse", body)
    return body


def _chat_stream(pieces: Sequence[Piece]) -> list[Any]:
    chunk = openai_wire.chunk
    events = [chunk({"role": "assistant", "content": None})]
    index = 0
    for name, text in pieces:
        if not name:
            events.append(chunk({"content": text}))
            continue
        start = {"index": index, **openai_wire.tool_call(f"call_{index}", name, "")}
        events.append(chunk({"tool_calls": [start]}))
        events += [
            chunk({"tool_calls": [{"index": index, "function": {"arguments": part}}]})
            for part in halves(text)
        ]
        index += 1
    events.append(chunk({}, finish="tool_calls" if index else "stop"))
    events.append(chunk(usage=openai_wire.chat_usage()))
    for event in events:
        _conforms("CreateChatCompletionStreamResponse", event)
    return events


def _responses_items(pieces: Sequence[Piece]) -> list[dict[str, Any]]:
    return [
        openai_wire.function_call_item(f"call_{i}", name, text, item_id=f"fc_{i}")
        if name
        else openai_wire.message_item(openai_wire.output_text(text), item_id=f"msg_{i}")
        for i, (name, text) in enumerate(pieces)
    ]


def _responses_reply(pieces: Sequence[Piece]) -> dict[str, Any]:
    body = openai_wire.response_body(*_responses_items(pieces))
    _conforms("Response", body)
    return body


def _responses_stream(pieces: Sequence[Piece]) -> list[Any]:
    ev = openai_wire.Events()
    events: list[dict[str, Any]] = []
    for i, (name, text) in enumerate(pieces):
        if name:
            events += ev.function_call(i, f"call_{i}", name, *halves(text), item_id=f"fc_{i}")
        else:
            events += ev.text_message(i, text, item_id=f"msg_{i}")
    done = openai_wire.response_body(*_responses_items(pieces))
    events.append(ev("response.completed", response=done))
    for event in events:
        _conforms("ResponseStreamEvent", event)
    return events


def _anthropic_reply(pieces: Sequence[Piece]) -> dict[str, Any]:
    content = [
        {"type": "tool_use", "id": f"toolu_0{i}", "name": name, "input": orjson.loads(text)}
        if name
        else {"type": "text", "text": text}
        for i, (name, text) in enumerate(pieces)
    ]
    body = {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": content,
        "stop_reason": "tool_use" if any(name for name, _ in pieces) else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 412, "output_tokens": 28},
    }
    anthropic_wire.check_message(body)
    return body


def _anthropic_stream(pieces: Sequence[Piece]) -> list[Any]:
    message = {**_anthropic_reply([]), "content": [], "stop_reason": None}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": message}]
    for i, (name, text) in enumerate(pieces):
        if name:
            block = {"type": "tool_use", "id": f"toolu_0{i}", "name": name, "input": {}}
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in halves(text)]
        else:
            block = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": text}]
        events.append({"type": "content_block_start", "index": i, "content_block": block})
        events += [{"type": "content_block_delta", "index": i, "delta": d} for d in deltas]
        events.append({"type": "content_block_stop", "index": i})
    stop = "tool_use" if any(name for name, _ in pieces) else "end_turn"
    events += [
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": 28},
        },
        {"type": "message_stop"},
    ]
    for event in events:
        anthropic_wire.check_event(event)
    return events


def _gemini_part(index: int, name: str, text: str) -> dict[str, Any]:
    if name:
        return {"functionCall": {"id": f"fc-{index}", "name": name, "args": orjson.loads(text)}}
    return {"text": text}


def _gemini_chunk(parts: list[dict[str, Any]], last: bool) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if last:
        candidate["finishReason"] = "STOP"
    body = {
        "candidates": [candidate],
        "usageMetadata": {
            "promptTokenCount": 51,
            "candidatesTokenCount": 19,
            "totalTokenCount": 70,
        },
        "modelVersion": "gemini-2.5-flash",
        "responseId": "mP0oafKUJfPjz7IP0NaEsAY",
    }
    gemini_wire.validate_response(body)
    return body


def _gemini_reply(pieces: Sequence[Piece]) -> dict[str, Any]:
    return _gemini_chunk([_gemini_part(i, *piece) for i, piece in enumerate(pieces)], True)


def _gemini_stream(pieces: Sequence[Piece]) -> list[Any]:
    last = len(pieces) - 1
    return [_gemini_chunk([_gemini_part(i, *p)], i == last) for i, p in enumerate(pieces)]


def _bedrock_reply(pieces: Sequence[Piece]) -> dict[str, Any]:
    content = [
        {"toolUse": {"toolUseId": f"tooluse_{i}", "name": name, "input": orjson.loads(text)}}
        if name
        else {"text": text}
        for i, (name, text) in enumerate(pieces)
    ]
    body = {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": "tool_use" if any(name for name, _ in pieces) else "end_turn",
        "usage": {"inputTokens": 389, "outputTokens": 27, "totalTokens": 416},
        "metrics": {"latencyMs": 812},
    }
    bedrock_wire.check_response(body)
    return body


def _bedrock_stream(pieces: Sequence[Piece]) -> list[Any]:
    events: list[dict[str, Any]] = [{"messageStart": {"role": "assistant"}}]
    for i, (name, text) in enumerate(pieces):
        if name:
            start = {"toolUse": {"toolUseId": f"tooluse_{i}", "name": name}}
            events.append({"contentBlockStart": {"start": start, "contentBlockIndex": i}})
            events += [
                {"contentBlockDelta": {"delta": {"toolUse": {"input": p}}, "contentBlockIndex": i}}
                for p in halves(text)
            ]
        else:
            events.append({"contentBlockDelta": {"delta": {"text": text}, "contentBlockIndex": i}})
        events.append({"contentBlockStop": {"contentBlockIndex": i}})
    stop = "tool_use" if any(name for name, _ in pieces) else "end_turn"
    usage = {"inputTokens": 389, "outputTokens": 27, "totalTokens": 416}
    events += [
        {"messageStop": {"stopReason": stop}},
        {"metadata": {"usage": usage, "metrics": {"latencyMs": 640}}},
    ]
    for event in events:
        bedrock_wire.check_event(event)
    return events


Build = Callable[[Sequence[Piece]], Any]


@dataclass(frozen=True)
class Wire:
    adapter: Adapter
    model: str
    """`provider:model` for generate() and stream()."""
    reply: Build
    """A whole reply of these pieces (checked)."""
    stream: Build
    """The stream events of these pieces (checked)."""
    check_request: Callable[[str, Any], object]
    """Checks a request the adapter sent (path, body) against the official artifact."""
    framing: Framing = "sse"
    named_events: bool = False
    """The API names each SSE event (`event:` line) after its `type`."""

    @property
    def model_id(self) -> str:
        return self.model.partition(":")[2]


WIRES: dict[str, Wire] = {
    "openai": Wire(
        OpenAIChat(),
        "openai:gpt-5.2",
        _chat_reply,
        _chat_stream,
        lambda path, body: _conforms("CreateChatCompletionRequest", body),
    ),
    "openai-responses": Wire(
        OpenAIResponses(),
        "openai-responses:gpt-5.2",
        _responses_reply,
        _responses_stream,
        lambda path, body: _conforms("CreateResponse", body),
        named_events=True,
    ),
    "anthropic": Wire(
        AnthropicMessages(),
        "anthropic:claude-sonnet-4-5",
        _anthropic_reply,
        _anthropic_stream,
        lambda path, body: anthropic_wire.check_request(body),
        named_events=True,
    ),
    "gemini": Wire(
        Gemini(),
        "gemini:gemini-2.5-flash",
        _gemini_reply,
        _gemini_stream,
        lambda path, body: gemini_wire.validate_request(body),
    ),
    "bedrock": Wire(
        BedrockConverse(),
        "bedrock:anthropic.claude-sonnet-4-5-20250929-v1:0",
        _bedrock_reply,
        _bedrock_stream,
        lambda path, body: bedrock_wire.check_request(
            path, body, unquote(path.split("/")[2]), stream="converse-stream" in path
        ),
        framing="aws-event-stream",
    ),
}


@pytest.fixture(params=sorted(WIRES))
def wire(request: pytest.FixtureRequest) -> Wire:
    return WIRES[request.param]


def request_of(wire: Wire, *, stream: bool, tools: tuple[Tool, ...] = ()) -> Request:
    output = ForcedTool(OUTPUT, ITEM, strict=True)
    return Request(wire.model_id, ASK, output=output, tools=tools, stream=stream)


def assembled(deltas: Sequence[Delta]) -> Response:
    """The reply a stream's deltas make, as the run loop puts it together."""
    parts = Assembler()
    for delta in deltas:
        parts.add(delta)
    return parts.response()


def answer(
    wire: Wire, pieces: Sequence[Piece], *, streamed: bool, tools: tuple[Tool, ...] = ()
) -> Response:
    """The neutral reply the adapter makes of these pieces, whole or streamed."""
    req = request_of(wire, stream=streamed, tools=tools)
    if streamed:
        return assembled(decode(wire.adapter, req, wire.stream(pieces)))
    return wire.adapter.parse(req, wire.reply(pieces))


STREAMED = pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])


# -- the rule, per API, whole and streamed -------------------------------------------------


@STREAMED
def test_two_calls_with_different_arguments_are_two_lines_of_the_text(
    wire: Wire, streamed: bool
) -> None:
    reply = answer(wire, [call(ONE), call(TWO)], streamed=streamed)
    assert reply.text == '{"a":1}\n{"a":2}'
    assert reply.tool_calls == ()
    assert reply.finish_reason == "stop"


@STREAMED
def test_two_equal_calls_are_one_value(wire: Wire, streamed: bool) -> None:
    reply = answer(wire, [call(ONE), call(ONE)], streamed=streamed)
    assert (reply.text, reply.tool_calls, reply.finish_reason) == (ONE, (), "stop")


@STREAMED
def test_a_call_equal_to_any_earlier_one_is_written_once(wire: Wire, streamed: bool) -> None:
    reply = answer(wire, [call(ONE), call(TWO), call(ONE), call(TWO)], streamed=streamed)
    assert reply.text == f"{ONE}\n{TWO}"


@STREAMED
def test_text_beside_the_forced_calls_is_not_part_of_the_reply(wire: Wire, streamed: bool) -> None:
    pieces = [prose("Here you go: "), call(ONE), prose("and also"), call(TWO), prose(" Done.")]
    reply = answer(wire, pieces, streamed=streamed)
    assert reply.text == f"{ONE}\n{TWO}"
    assert reply.tool_calls == ()


@STREAMED
def test_a_reply_without_a_call_of_the_forced_tool_is_its_text(wire: Wire, streamed: bool) -> None:
    reply = answer(wire, [prose("Sorry, "), prose("I cannot tell.")], streamed=streamed)
    assert (reply.text, reply.tool_calls) == ("Sorry, I cannot tell.", ())
    assert reply.finish_reason == "stop"


@STREAMED
def test_calls_of_the_callers_tools_among_them_stay_tool_calls(wire: Wire, streamed: bool) -> None:
    pieces = [call(ONE), call(PARIS, "get_weather"), call(TWO)]
    reply = answer(wire, pieces, streamed=streamed, tools=(WEATHER,))
    assert reply.text == f"{ONE}\n{TWO}"
    assert [(c.name, orjson.loads(c.arguments)) for c in reply.tool_calls] == [
        ("get_weather", {"city": "Paris"})
    ]
    assert reply.finish_reason == "tool_calls"


# -- streams: what is written when ---------------------------------------------------------


def _chat_decode(events: list[Any]) -> list[Delta]:
    for event in events:
        _conforms("CreateChatCompletionStreamResponse", event)
    return decode(OpenAIChat(), request_of(WIRES["openai"], stream=True), events)


def _chat_call(index: int, *fragments: str, name: str = OUTPUT) -> list[Any]:
    start = {"index": index, **openai_wire.tool_call(f"call_{index}", name, "")}
    return [
        openai_wire.chunk({"tool_calls": [start]}),
        *(
            openai_wire.chunk({"tool_calls": [{"index": index, "function": {"arguments": f}}]})
            for f in fragments
        ),
    ]


def test_a_later_call_is_held_back_only_while_it_repeats_an_earlier_one() -> None:
    """The first call is text as it arrives; the second is written, on a new line, the moment
    it differs from the first, so nothing held back is content the text lacks."""
    events = [
        *_chat_call(0, '{"a":', "1}"),
        *_chat_call(1, '{"a":', "2", "}"),
        openai_wire.chunk({}, finish="stop"),
    ]
    texts = [d.text for d in _chat_decode(events) if d.kind == "text"]
    assert texts == ['{"a":', "1}", '\n{"a":2', "}"]


def test_a_stream_cut_while_a_call_repeats_an_earlier_one_has_lost_nothing() -> None:
    events = [*_chat_call(0, '{"a":1}'), *_chat_call(1, '{"a":')]  # no finish: cut
    reply = assembled(_chat_decode(events))
    assert (reply.text, reply.end_stated) == (ONE, False)


def test_a_stream_cut_before_any_call_has_no_text_to_show() -> None:
    """Text beside the calls is held back until the reply ends: it is the reply only when the
    reply ends without a call of the forced tool."""
    events = [openai_wire.chunk({"role": "assistant", "content": "Let me think"})]
    reply = assembled(_chat_decode(events))
    assert (reply.text, reply.end_stated) == ("", False)


def test_fragments_of_two_calls_that_interleave_are_not_json_and_not_read() -> None:
    events = [
        *_chat_call(0, '{"a":'),
        *_chat_call(1, '{"b":'),
        openai_wire.chunk({"tool_calls": [{"index": 0, "function": {"arguments": "1}"}}]}),
        openai_wire.chunk({"tool_calls": [{"index": 1, "function": {"arguments": "2}"}}]}),
        openai_wire.chunk({}, finish="stop"),
    ]
    text = assembled(_chat_decode(events)).text
    assert text == '{"a":\n{"b":1}2}'
    for level in ("off", "minimal", "full"):
        with pytest.raises(outform.OutputError):
            outform.parse(text, ITEM, level=level)


# -- end to end: generate() and stream() over HTTP -------------------------------------------


class Item(BaseModel):
    a: int


ITEMS_TOOL = outform.ResponseFormat.of(list[Item]).name
ITEM_TOOL = outform.ResponseFormat.of(Item).name


@pytest.fixture
def server(aws: None) -> Iterator[FakeServer]:
    with FakeServer() as fake:
        yield fake


def checked(wire: Wire, server: FakeServer) -> None:
    """Every request the fake received is the API's shape."""
    for request in server.requests:
        wire.check_request(request.path, request.json)


def generate(wire: Wire, server: FakeServer, output: Any, **options: Any) -> Any:
    with Transport(retry=RetryPolicy(retries=0)) as transport:
        try:
            return outform.generate(
                wire.model,
                [{"role": "user", "content": "Give the items."}],
                output,
                mode="tool",
                base_url=server.url,
                api_key="test-key-not-secret",
                transport=transport,
                **options,
            )
        finally:
            checked(wire, server)


def test_two_calls_for_a_list_are_its_two_items(wire: Wire, server: FakeServer) -> None:
    """A model not held to the tool's schema may write each item as a call of its own."""
    server.json(wire.reply([call(ONE, ITEMS_TOOL), call(TWO, ITEMS_TOOL)]))
    result = generate(wire, server, list[Item])
    assert result.mode == "forced_tool"
    assert result.value == [Item(a=1), Item(a=2)]
    assert result.text == '{"a":1}\n{"a":2}'
    assert result.tool_calls == () and result.response.tool_calls == ()
    assert result.parse is not None and not result.parse.lossy
    assert [c.transform for c in result.parse.changes] == ["collect_values"]
    assert len(server.requests) == 1


def test_two_calls_for_an_object_keep_the_first_and_record_the_second_as_lost(
    wire: Wire, server: FakeServer
) -> None:
    server.json(wire.reply([call(ONE, ITEM_TOOL), call(TWO, ITEM_TOOL)]))
    result = generate(wire, server, Item)
    assert result.value == Item(a=1)
    assert result.parse is not None and result.parse.lossy
    (change,) = result.parse.changes
    assert (change.transform, change.detail, change.lost) == (
        "extract_from_prose",
        "value 1 of 2 in the reply",
        2,  # the `a` and the `2` of the second call
    )
    assert result.tool_calls == () and result.response.tool_calls == ()


def test_two_equal_calls_for_an_object_are_one_value_and_no_change(
    wire: Wire, server: FakeServer
) -> None:
    server.json(wire.reply([call(ONE, ITEM_TOOL), call(ONE, ITEM_TOOL)]))
    result = generate(wire, server, Item)
    assert (result.value, result.text) == (Item(a=1), ONE)
    assert result.parse is not None and result.parse.changes == ()


def test_at_level_off_several_values_are_not_one_document_and_are_asked_again(
    server: FakeServer,
) -> None:
    wire = WIRES["anthropic"]
    server.json(wire.reply([call(ONE, ITEM_TOOL), call(TWO, ITEM_TOOL)]))
    server.json(wire.reply([call(TWO, ITEM_TOOL)]))
    result = generate(wire, server, Item, level="off")
    assert result.value == Item(a=2)
    assert result.attempts[0].text == '{"a":1}\n{"a":2}'
    assert result.attempts[0].hint is not None


def test_two_calls_that_each_wrap_a_list_are_asked_again_not_dropped(server: FakeServer) -> None:
    """A list travels to a tool wrapped (`{"value": [...]}`, a tool's arguments being an
    object). Two such calls are both in the reply's text; their gathering is no list of items,
    so the reply is asked again (never one of them taken while the other is dropped)."""
    wire = WIRES["openai"]
    first, second = '{"value":[{"a":1}]}', '{"value":[{"a":2}]}'
    server.json(wire.reply([call(first, ITEMS_TOOL), call(second, ITEMS_TOOL)]))
    server.json(wire.reply([call('{"value":[{"a":1},{"a":2}]}', ITEMS_TOOL)]))
    result = generate(wire, server, list[Item])
    assert result.value == [Item(a=1), Item(a=2)]
    assert result.attempts[0].text == f"{first}\n{second}"
    assert result.attempts[0].hint is not None


def test_a_streamed_reply_of_two_calls_for_a_list_is_its_two_items(
    wire: Wire, server: FakeServer
) -> None:
    events = wire.stream([call(ONE, ITEMS_TOOL), call(TWO, ITEMS_TOOL)])
    framed = [(e["type"], e) for e in events] if wire.named_events else events
    server.stream(framed, framing=wire.framing)
    with Transport(retry=RetryPolicy(retries=0)) as transport:
        run: Stream[Any] = outform.stream(
            wire.model,
            [{"role": "user", "content": "Give the items."}],
            list[Item],
            mode="tool",
            base_url=server.url,
            api_key="test-key-not-secret",
            transport=transport,
        )
        final = list(run)[-1]
    checked(wire, server)
    assert final.value == [Item(a=1), Item(a=2)]
    assert run.generation is not None
    assert run.generation.text == '{"a":1}\n{"a":2}'
    assert run.generation.response.tool_calls == ()
