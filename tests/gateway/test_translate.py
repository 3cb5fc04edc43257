"""The pure translations: Responses request -> Chat request, Chat answer -> Response, Chat
chunks -> Responses events. Every event produced here is validated against the spec's
`ResponseStreamEvent` and the stream invariants clients rely on; a streamed answer must build
the same Response as the same answer whole.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from outform.gateway.events import SSEDecoder
from outform.gateway.output import Shell, response_from_completion
from outform.gateway.replies import GatewayError
from outform.gateway.stream import StreamTranslator, completion_chunks
from outform.gateway.translate import (
    chat_messages,
    chat_request,
    chat_response_format,
    chat_tool_choice,
    check_request,
)
from tests.gateway.harness import check_stream, response_events
from tests.providers.openai_wire import (
    Conformance,
    chat_completion,
    chat_usage,
    chunk,
    text_stream,
    tool_call,
)

SCHEMA = {"type": "object", "properties": {"a": {"type": "string"}}}


# -- requests ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fmt", "expected"),
    [
        (None, None),
        ({"type": "text"}, None),
        ({"type": "json_object"}, {"type": "json_object"}),
        (
            {"type": "json_schema", "name": "a", "schema": SCHEMA},
            {"type": "json_schema", "json_schema": {"name": "a", "schema": SCHEMA}},
        ),
        (
            {
                "type": "json_schema",
                "strict": True,
                "schema": SCHEMA,
                "description": "d",
                "name": "a",
            },
            {
                "type": "json_schema",
                "json_schema": {"strict": True, "schema": SCHEMA, "description": "d", "name": "a"},
            },
        ),
        ({"type": "regex", "pattern": "[a-z]+"}, {"type": "regex", "pattern": "[a-z]+"}),
    ],
)
def test_text_format_to_response_format(fmt: Any, expected: Any) -> None:
    got = chat_response_format(fmt)
    assert got == expected
    if got is not None and got["type"] == "json_schema":
        assert list(got["json_schema"]) == [k for k in fmt if k != "type"]
        assert got["json_schema"]["schema"] is fmt["schema"]  # the client's object, not a copy


def test_every_input_shape_becomes_the_right_messages() -> None:
    items: list[dict[str, Any]] = [
        {"role": "developer", "content": "Be brief."},
        {"role": "system", "content": [{"type": "input_text", "text": "Use metric units."}]},
        {"type": "message", "role": "user", "content": "What is this?"},
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "And this:"},
                {"type": "input_image", "image_url": "https://example.org/a.png", "detail": "low"},
            ],
        },
        {"role": "assistant", "content": "Let me look it up."},
        {"type": "function_call", "call_id": "c1", "name": "lookup", "arguments": '{"q":"a"}'},
        {"type": "function_call", "call_id": "c2", "name": "lookup", "arguments": '{"q":"b"}'},
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"type": "function_call_output", "call_id": "c1", "output": "A"},
        {
            "type": "function_call_output",
            "call_id": "c2",
            "output": [{"type": "input_text", "text": "B"}],
        },
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Both found.", "annotations": []}],
        },
        {"type": "function_call", "call_id": "c3", "name": "lookup", "arguments": "{}"},
    ]
    assert chat_messages(items) == [
        {"role": "system", "content": "Be brief."},
        {"role": "system", "content": "Use metric units."},
        {"role": "user", "content": "What is this?"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "And this:"},
                {
                    "type": "image_url",
                    "image_url": {"url": "https://example.org/a.png", "detail": "low"},
                },
            ],
        },
        {
            "role": "assistant",
            "content": "Let me look it up.",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "lookup", "arguments": '{"q":"a"}'},
                },
                {
                    "id": "c2",
                    "type": "function",
                    "function": {"name": "lookup", "arguments": '{"q":"b"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "A"},
        {"role": "tool", "tool_call_id": "c2", "content": [{"type": "text", "text": "B"}]},
        {
            "role": "assistant",
            "content": "Both found.",
            "tool_calls": [
                {"id": "c3", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
            ],
        },
    ]
    (alone,) = chat_messages([items[5]])
    assert (alone["role"], alone["content"], len(alone["tool_calls"])) == ("assistant", None, 1)


def test_the_request_fields_that_map_are_mapped() -> None:
    req = {
        "model": "m",
        "instructions": "Be kind.",
        "temperature": 0.2,
        "top_p": 0.9,
        "max_output_tokens": 64,
        "reasoning": {"effort": "low"},
        "parallel_tool_calls": False,
        "tools": [{"type": "function", "name": "f", "parameters": SCHEMA, "strict": None}],
        "tool_choice": "required",
        "metadata": {"k": "v"},
        "store": True,
        "user": "u-1",
    }
    check_request(req)
    assert chat_request(req, "backend-model", [], stream=True) == {
        "model": "backend-model",
        "messages": [{"role": "system", "content": "Be kind."}],
        "tools": [{"type": "function", "function": {"name": "f", "parameters": SCHEMA}}],
        "parallel_tool_calls": False,
        "tool_choice": "required",
        "temperature": 0.2,
        "top_p": 0.9,
        "max_tokens": 64,
        "reasoning_effort": "low",
        "user": "u-1",  # Chat has it too, with the same meaning
        "stream": True,
        "stream_options": {"include_usage": True},
    }


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ("auto", "auto"),
        ("none", "none"),
        ("required", "required"),
        ({"type": "function", "name": "f"}, {"type": "function", "function": {"name": "f"}}),
        ({"type": "custom", "name": "g"}, {"type": "custom", "custom": {"name": "g"}}),
        (
            {
                "type": "allowed_tools",
                "mode": "required",
                "tools": [{"type": "function", "name": "f"}],
            },
            {
                "type": "allowed_tools",
                "allowed_tools": {
                    "mode": "required",
                    "tools": [{"type": "function", "function": {"name": "f"}}],
                },
            },
        ),
    ],
)
def test_every_tool_choice_form_in_chats_shape(choice: Any, expected: Any) -> None:
    assert chat_tool_choice(choice) == expected


@pytest.mark.parametrize(
    ("choice", "param"),
    [
        ("sometimes", "tool_choice"),
        ({"type": "file_search"}, "tool_choice"),
        (
            {"type": "allowed_tools", "mode": "auto", "tools": [{"type": "web_search"}]},
            "tool_choice.tools[0]",
        ),
    ],
)
def test_tool_choices_a_chat_backend_cannot_take_are_refused(choice: Any, param: str) -> None:
    with pytest.raises(GatewayError) as caught:
        chat_tool_choice(choice)
    assert caught.value.status == 400 and caught.value.param == param


# -- answers and streams -------------------------------------------------------------------

COMPLETIONS = {
    "text": chat_completion(content="Hello there."),
    "tool calls only": chat_completion(
        finish="tool_calls",
        tool_calls=[tool_call("c1", "f", '{"x":1}'), tool_call("c2", "g", "{}")],
    ),
    "text and a tool call": chat_completion(
        finish="tool_calls", content="Checking.", tool_calls=[tool_call("c1", "f", "{}")]
    ),
    "refusal": chat_completion(refusal="I can't."),
    "reasoning": chat_completion(content="42", reasoning_content="Six times seven."),
    "cut off": chat_completion(finish="length", content='{"a": "b'),
    "filtered": chat_completion(finish="content_filter", content=""),
    "nothing": chat_completion(content=""),
}


def _shell(**fields: Any) -> Shell:
    return Shell({"model": "m", **fields}, "resp_test", 1_767_225_600)


def _events(translator: StreamTranslator, chunks: list[Any]) -> list[dict[str, Any]]:
    body = translator.start() + b"".join(translator.feed(c) for c in chunks)
    body += translator.finish() + translator.terminal()
    return response_events(body)


def _without_ids(response: dict[str, Any]) -> Any:
    items = [{k: v for k, v in item.items() if k != "id"} for item in response["output"]]
    return {**{k: v for k, v in response.items() if k != "completed_at"}, "output": items}


@pytest.mark.parametrize("name", list(COMPLETIONS))
def test_a_streamed_answer_builds_the_response_the_whole_answer_builds(
    name: str, conforms: Conformance
) -> None:
    completion = COMPLETIONS[name]
    whole = response_from_completion(_shell(), completion)
    translator = StreamTranslator(_shell())
    events = _events(translator, completion_chunks(completion))
    conforms.all("ResponseStreamEvent", events)
    conforms("Response", whole)
    check_stream(events)
    assert _without_ids(events[-1]["response"]) == _without_ids(whole)
    assert translator.response == events[-1]["response"]
    if name == "tool calls only":
        assert [item["type"] for item in whole["output"]] == ["function_call", "function_call"]
    if name == "cut off":
        assert events[-1]["type"] == "response.incomplete"
        assert whole["incomplete_details"] == {"reason": "max_output_tokens"}


def test_a_fragmented_stream_builds_the_same_response(conforms: Conformance) -> None:
    chunks = [
        chunk({"role": "assistant", "content": None}),
        chunk({"reasoning_content": "Let me "}),
        chunk({"reasoning_content": "think."}),
        chunk({"content": "Calling "}),
        chunk({"content": "two tools."}),
        chunk({"tool_calls": [_call(0, "c1", "f", "")]}),
        chunk({"tool_calls": [_call(1, "c2", "g", "{}")]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"x":'}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": "1}"}}]}),
        chunk({}, finish="tool_calls"),
        chunk(usage=chat_usage(7, 5)),
    ]  # fmt: skip
    events = _events(StreamTranslator(_shell()), chunks)
    conforms.all("ResponseStreamEvent", events)
    check_stream(events)
    final = events[-1]["response"]
    whole = response_from_completion(
        _shell(),
        chat_completion(
            finish="tool_calls",
            content="Calling two tools.",
            reasoning_content="Let me think.",
            tool_calls=[tool_call("c1", "f", '{"x":1}'), tool_call("c2", "g", "{}")],
            usage=chat_usage(7, 5),
        ),
    )
    assert _without_ids(final) == _without_ids(whole)
    assert [item["type"] for item in final["output"]] == [
        "reasoning",
        "message",
        "function_call",
        "function_call",
    ]


def _call(index: int, call_id: str, name: str, arguments: str) -> dict[str, Any]:
    function = {"name": name, "arguments": arguments}
    return {"index": index, "id": call_id, "type": "function", "function": function}


def test_text_and_refusal_in_one_message_are_two_parts(conforms: Conformance) -> None:
    chunks = [
        chunk({"role": "assistant", "content": "Partly: "}),
        chunk({"refusal": "the rest I can't."}),
        chunk({}, finish="stop"),
    ]
    events = _events(StreamTranslator(_shell()), chunks)
    conforms.all("ResponseStreamEvent", events)
    check_stream(events)
    content = events[-1]["response"]["output"][0]["content"]
    assert content == [
        {"type": "output_text", "text": "Partly: ", "annotations": [], "logprobs": []},
        {"type": "refusal", "refusal": "the rest I can't."},
    ]
    assert "usage" not in events[-1]["response"]  # the backend sent none


def test_a_role_only_first_chunk_creates_no_item() -> None:
    translator = StreamTranslator(_shell())
    translator.start()
    assert translator.feed(chunk({"role": "assistant", "content": ""})) == b""
    assert translator.items == []


def test_the_echo_has_every_field_strict_clients_need(conforms: Conformance) -> None:
    req: dict[str, Any] = {
        "model": "m",
        "input": "x",
        "text": {"format": {"type": "json_object"}, "verbosity": "low"},
        "tools": [{"type": "function", "name": "f", "parameters": SCHEMA}],
        "tool_choice": {"type": "function", "name": "f"},
        "metadata": {"run": "7"},
        "instructions": "Be kind.",
        "temperature": 0.3,
    }
    response = response_from_completion(_shell(**req), chat_completion(content="{}"))
    conforms("Response", response)
    assert response["text"] is req["text"]
    assert response["tools"] == [{**req["tools"][0], "strict": None}]
    assert (response["tool_choice"], response["metadata"]) == (req["tool_choice"], req["metadata"])
    assert (response["instructions"], response["temperature"]) == ("Be kind.", 0.3)
    assert response["parallel_tool_calls"] is True and response["store"] is True


def test_the_sse_decoder_reads_what_servers_send() -> None:
    decoder = SSEDecoder()
    stream = (
        b': keep-alive\r\n\r\ndata: {"a":\r\ndata: 1}\r\n\r\nevent: x\ndata: [DONE]\n\ndata: {"b"'
    )
    got = [decoder.feed(stream[i : i + 3]) for i in range(0, len(stream), 3)]
    assert [data for part in got for data in part] == [b'{"a":\n1}', b"[DONE]"]
    assert decoder.finish() == [b'{"b"']


def test_completion_chunks_are_wire_accurate_chunks(conforms: Conformance) -> None:
    for completion in COMPLETIONS.values():
        conforms.all("CreateChatCompletionStreamResponse", completion_chunks(completion))
    assert orjson.loads(orjson.dumps(text_stream("a"))) == text_stream("a")
