"""A backend answer the gateway reads must hold the types the Chat Completions spec gives
(`gateway.answers`); one that does not is refused naming what was wrong, never read as
something it did not say.

The trial: a tool call with `id: 5`, `name: null` and object arguments became a
`function_call` named `""`; `content: 5` became the text `"5"`; streamed chunks whose
`choices` was an object, or whose `finish_reason` was `5`, were skipped, and the response
passed as completed.
"""

from __future__ import annotations

from typing import Any

import httpx
import orjson
import pytest

from tests.gateway.conftest import Harness
from tests.gateway.harness import response_events, sse_events
from tests.providers.openai_wire import chat_completion, chunk, tool_call

BAD_ANSWERS: dict[str, tuple[dict[str, Any], str]] = {
    "a tool call id that is a number": (
        {"tool_calls": [{**tool_call("call_1", "f", "{}"), "id": 5}]},
        "choices[0].message.tool_calls[0].id is 5, not a string",
    ),
    "a tool call without a name": (
        {
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": None, "arguments": {}}}
            ]
        },
        "choices[0].message.tool_calls[0].function.name is missing (or null), not the name "
        "of a function",
    ),
    "a tool call without its function": (
        {"tool_calls": [{"id": "call_1", "type": "function"}]},
        "choices[0].message.tool_calls[0].function is missing (or null), not an object",
    ),
    "content that is a number": (
        {"content": 5},
        "choices[0].message.content is 5, not a string, null or a list of parts",
    ),
    "a refusal that is a list": (
        {"content": None, "refusal": ["no"]},
        "choices[0].message.refusal is a list, not a string",
    ),
    "reasoning that is a number": (
        {"content": "hi", "reasoning_content": 12},
        "choices[0].message.reasoning_content is 12, not a string",
    ),
}


@pytest.mark.parametrize("path", ["/v1/responses", "/v1/chat/completions"])
@pytest.mark.parametrize(("message", "said"), BAD_ANSWERS.values(), ids=list(BAD_ANSWERS.keys()))
def test_a_whole_answer_of_the_wrong_types_is_a_502_naming_the_field(
    gw: Harness, message: dict[str, Any], said: str, path: str
) -> None:
    gw.backend.json(chat_completion(finish="tool_calls", **message))
    body: dict[str, Any] = {"model": "m"}
    if path == "/v1/responses":
        body["input"] = "hi"
    else:
        body["messages"] = [{"role": "user", "content": "hi"}]
    with httpx.Client(timeout=30) as http:
        answer = http.post(gw.url + path, json=body)
    assert answer.status_code == 502
    error = answer.json()["error"]
    assert error["code"] == "backend_error"
    assert error["message"] == (
        f"The backend's answer is not a valid Chat Completions answer: {said}."
    )


def test_a_finish_reason_that_is_no_string_is_refused(gw: Harness) -> None:
    completion = chat_completion(content="hi")
    completion["choices"][0]["finish_reason"] = 5
    gw.backend.json(completion)
    with httpx.Client(timeout=30) as http:
        answer = http.post(gw.url + "/v1/responses", json={"model": "m", "input": "hi"})
    assert answer.status_code == 502
    assert "choices[0].finish_reason is 5, not a string" in answer.json()["error"]["message"]


def test_arguments_sent_as_an_object_are_read_as_their_json_text(gw: Harness) -> None:
    """The one tolerance: a few servers send a call's arguments as an object, which says the
    same as its JSON text (nothing is guessed)."""
    call = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": {"a": 1}}}
    gw.backend.json(chat_completion(finish="tool_calls", tool_calls=[call]))
    response = gw.client.responses.create(model="m", input="hi")
    item = response.output[0]
    assert item.type == "function_call"
    assert (item.call_id, item.name, orjson.loads(item.arguments)) == ("call_1", "f", {"a": 1})


BAD_CHUNKS: dict[str, tuple[Any, str]] = {
    "choices that are an object": ({"choices": {"a": 1}}, "choices is an object, not a list"),
    "a choice that is a number": ({"choices": [5]}, "choices[0] is 5, not an object"),
    "a finish_reason that is a number": (
        {"choices": [{"index": 0, "delta": {}, "finish_reason": 5}]},
        "choices[0].finish_reason is 5, not a string",
    ),
    "content that is a number": (
        {"choices": [{"index": 0, "delta": {"content": 5}, "finish_reason": None}]},
        "choices[0].delta.content is 5, not a string, null or a list of parts",
    ),
    "tool calls that are a number": (
        {"choices": [{"index": 0, "delta": {"tool_calls": 5}, "finish_reason": None}]},
        "choices[0].delta.tool_calls is 5, not a list",
    ),
    "a tool call index that is a string": (
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {"tool_calls": [{"index": "x", "function": {"arguments": "{}"}}]},
                    "finish_reason": None,
                }
            ]
        },
        "choices[0].delta.tool_calls[0].index is a string, not a non-negative integer",
    ),
}


def _stream_with(bad: Any) -> list[Any]:
    head = {k: v for k, v in chunk({}).items() if k != "choices"}
    return [
        chunk({"role": "assistant", "content": ""}),
        chunk({"content": "hi"}),
        {**head, **bad},
        chunk({}, finish="stop"),
        "[DONE]",
    ]


@pytest.mark.parametrize(("bad", "said"), BAD_CHUNKS.values(), ids=list(BAD_CHUNKS.keys()))
def test_a_chunk_of_the_wrong_types_ends_the_stream_naming_the_field(
    gw: Harness, bad: Any, said: str
) -> None:
    expected = f"The backend sent a stream event that is not a valid Chat Completions chunk: {said}"
    gw.backend.stream(_stream_with(bad))
    with httpx.Client(timeout=30) as http:
        answer = http.post(
            gw.url + "/v1/responses", json={"model": "m", "input": "hi", "stream": True}
        )
    last = response_events(answer.content)[-1]
    assert last["type"] == "response.failed"
    assert last["response"]["error"]["message"] == expected
    assert gw.client.responses.retrieve(last["response"]["id"]).status == "failed"

    gw.backend.stream(_stream_with(bad))
    with httpx.Client(timeout=30) as http:
        relayed = http.post(
            gw.url + "/v1/chat/completions",
            json={"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True},
        )
    frames = [orjson.loads(data) for _, data in sse_events(relayed.content)]
    assert frames[-1]["error"]["message"] == expected
    assert all("error" not in frame for frame in frames[:-1])
    assert not any(frame.get("choices") == bad.get("choices") for frame in frames)  # not relayed
