"""Every field the gateway reads, echoes or forwards is held to the type (and the bounds) the
OpenAPI document gives it: a request with one of the wrong shape is a 400 naming the field,
and the backend is never called for it. Found by a new-user trial, where such requests were
a 500 (`"refusal": 5` in an assistant part), or were answered 200 with a Response that broke
the spec (`"metadata": {"a": 1}`, `"truncation": 5`) or forwarded as they were
(`"service_tier": 5`, `"max_output_tokens": -1`).

Also here: errors of routing (405 `method_not_allowed`) and `GET /v1/responses/{id}` with
`stream=true`, which the gateway cannot replay (a 400, never JSON that an SDK's stream reads
as no events).
"""

from __future__ import annotations

from typing import Any

import openai
import pytest

from tests.gateway.conftest import Harness, MakeGateway
from tests.gateway.harness import RecordingStore
from tests.providers.openai_wire import chat_completion

HI: Any = {"role": "user", "content": "hi"}


def _refused(gw: Harness, body: dict[str, Any], param: str, code: str | None = None) -> str:
    """POST the body: a 400 naming `param` (and `code`), and no backend call. Its message."""
    answer = gw.http.post(gw.url + "/v1/responses", json={"model": "m", **body})
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error["param"] == param
    if code is not None:
        assert error["code"] == code
    assert gw.backend.requests == []
    message: str = error["message"]
    return message


# -- content parts and items (bug 1) ---------------------------------------------------------


@pytest.mark.parametrize(
    ("item", "param", "code"),
    [
        (
            {"role": "assistant", "content": [{"type": "refusal", "refusal": 5}]},
            "input[0].content[0].refusal",
            "invalid_type",
        ),
        (
            {"role": "assistant", "content": [{"type": "refusal", "refusal": ["no"]}]},
            "input[0].content[0].refusal",
            "invalid_type",
        ),
        (
            {"role": "assistant", "content": [{"type": "refusal"}]},
            "input[0].content[0].refusal",
            "missing_required",
        ),
        (
            {"role": "assistant", "content": [{"type": "output_text", "text": {"a": 1}}]},
            "input[0].content[0].text",
            "invalid_type",
        ),
        (  # a Chat assistant message takes text and refusal parts only: never dropped unseen
            {
                "role": "assistant",
                "content": [{"type": "input_image", "image_url": "https://x/a.png"}],
            },
            "input[0].content[0].type",
            "unsupported_content",
        ),
        (
            {"role": "user", "content": [{"type": "refusal", "refusal": "no"}]},
            "input[0].content[0].type",
            "unsupported_content",
        ),
        (
            {"role": "user", "content": [{"type": "input_image", "image_url": 5}]},
            "input[0].content[0].image_url",
            "unsupported_content",
        ),
        (
            {
                "role": "user",
                "content": [{"type": "input_image", "image_url": "https://x/a.png", "detail": 5}],
            },
            "input[0].content[0].detail",
            "invalid_type",
        ),
        (
            {"role": "user", "content": [{"type": "input_file", "file_data": "x", "filename": 5}]},
            "input[0].content[0].filename",
            "invalid_type",
        ),
        (
            {"role": "user", "content": [{"type": "input_audio", "input_audio": "x"}]},
            "input[0].content[0].input_audio",
            None,
        ),
        (
            {
                "role": "user",
                "content": [{"type": "input_audio", "input_audio": {"data": 5, "format": "wav"}}],
            },
            "input[0].content[0].input_audio.data",
            "invalid_type",
        ),
        (
            {"type": "function_call", "call_id": "c", "name": 5, "arguments": "{}"},
            "input[0].name",
            None,
        ),
        (
            {
                "type": "function_call_output",
                "call_id": "c",
                "output": [{"type": "input_text", "text": 5}],
            },
            "input[0].output[0].text",
            "invalid_type",
        ),
        (
            {"role": "user", "content": "hi", "status": "done"},
            "input[0].status",
            "invalid_value",
        ),
    ],
)
def test_a_part_or_item_field_of_the_wrong_type_is_a_400_naming_it(
    gw: Harness, item: dict[str, Any], param: str, code: str | None
) -> None:
    _refused(gw, {"input": [item, HI]}, param, code)


def test_a_refusal_part_of_the_right_type_reaches_the_backend_as_chats_refusal(
    gw: Harness,
) -> None:
    gw.backend.json(chat_completion(content="ok"))
    refusal: Any = {"role": "assistant", "content": [{"type": "refusal", "refusal": "I can't."}]}
    gw.client.responses.create(model="m", input=[refusal, HI])
    assert gw.sent()["messages"] == [
        {"role": "assistant", "content": "", "refusal": "I can't."},
        {"role": "user", "content": "hi"},
    ]


# -- request fields (bug 4) --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "param", "code"),
    [
        ({"truncation": 5}, "truncation", "invalid_type"),
        ({"truncation": "sometimes"}, "truncation", "invalid_value"),
        ({"top_logprobs": "x"}, "top_logprobs", "invalid_type"),
        ({"top_logprobs": 21}, "top_logprobs", "invalid_value"),
        ({"max_tool_calls": "x"}, "max_tool_calls", "invalid_type"),
        ({"max_output_tokens": -1}, "max_output_tokens", "invalid_value"),
        ({"max_output_tokens": 15}, "max_output_tokens", "invalid_value"),  # the spec's minimum
        ({"max_output_tokens": 64.5}, "max_output_tokens", "invalid_type"),
        ({"temperature": 2.5}, "temperature", "invalid_value"),
        ({"top_p": True}, "top_p", "invalid_type"),
        ({"metadata": {"a": 1}}, "metadata.a", "invalid_type"),
        ({"metadata": {"a": "x" * 513}}, "metadata.a", "invalid_value"),
        ({"metadata": {"k" * 65: "x"}}, "metadata", "invalid_value"),
        ({"metadata": {f"k{i}": "x" for i in range(17)}}, "metadata", "invalid_value"),
        ({"metadata": ["a"]}, "metadata", "invalid_type"),
        ({"include": [1]}, "include[0]", "invalid_type"),
        ({"include": ["everything"]}, "include[0]", "invalid_value"),
        ({"include": "reasoning.encrypted_content"}, "include", "invalid_type"),
        ({"user": 5}, "user", "invalid_type"),
        ({"safety_identifier": {"id": 1}}, "safety_identifier", "invalid_type"),
        ({"safety_identifier": "s" * 65}, "safety_identifier", "invalid_value"),
        ({"prompt_cache_key": ["k"]}, "prompt_cache_key", "invalid_type"),
        ({"prompt_cache_retention": "forever"}, "prompt_cache_retention", "invalid_value"),
        ({"prompt_cache_options": {"ttl": 30}}, "prompt_cache_options.ttl", "invalid_type"),
        ({"service_tier": 5}, "service_tier", "invalid_type"),
        ({"service_tier": "turbo"}, "service_tier", "invalid_value"),
        ({"stream_options": "x"}, "stream_options", "invalid_type"),
        ({"reasoning": {"summary": 5}}, "reasoning.summary", "invalid_type"),
        ({"reasoning": {"effort": "extreme"}}, "reasoning.effort", "invalid_value"),
        ({"text": {"verbosity": "loud"}}, "text.verbosity", "invalid_value"),
        (
            {"text": {"format": {"type": "json_schema", "name": 5, "schema": {}}}},
            "text.format.name",
            "invalid_type",
        ),
        (
            {"tools": [{"type": "function", "name": "f", "parameters": "{}"}]},
            "tools[0].parameters",
            "invalid_type",
        ),
        (
            {"tools": [{"type": "function", "name": "f", "strict": "yes"}]},
            "tools[0].strict",
            "invalid_type",
        ),
        (
            {"tool_choice": {"type": "allowed_tools", "mode": "sometimes", "tools": []}},
            "tool_choice.mode",
            "invalid_value",
        ),
        ({"input": [{"id": {"a": 1}, "role": "user", "content": "hi"}]}, "input[0].id", None),
    ],
)
def test_a_request_field_of_the_wrong_type_or_out_of_bounds_is_a_400_naming_it(
    make_gateway: MakeGateway, fields: dict[str, Any], param: str, code: str | None
) -> None:
    store = RecordingStore()
    gw = make_gateway(store=store)
    body = {"input": "x", **fields}
    for streamed in (False, True):  # refused alike, before the stream starts
        message = _refused(gw, {**body, "stream": streamed}, param, code)
        assert f"'{param}'" in message
    assert store.saves == {}  # nothing stored either


def test_the_spec_bounds_themselves_are_accepted_and_echoed(gw: Harness) -> None:
    metadata = {f"k{i:02}" + "k" * 61: "v" * 512 for i in range(16)}
    mine: Any = {"id": "msg_mine", "role": "user", "content": "hi", "status": "completed"}
    gw.backend.json(chat_completion(content="ok"))
    response = gw.client.responses.create(
        model="m",
        input=[mine],
        metadata=metadata,
        max_output_tokens=16,
        top_logprobs=20,
        temperature=2,
        truncation="auto",
        safety_identifier="s" * 64,
        service_tier="flex",
        include=["reasoning.encrypted_content"],
    )
    assert response.metadata == metadata
    assert (response.max_output_tokens, response.top_logprobs) == (16, 20)
    assert response.truncation == "auto"
    sent = gw.sent()
    assert (sent["max_tokens"], sent["safety_identifier"], sent["service_tier"]) == (
        16,
        "s" * 64,
        "flex",
    )
    listed = gw.http.get(f"{gw.url}/v1/responses/{response.id}/input_items").json()
    assert listed["first_id"] == listed["data"][0]["id"] == "msg_mine"  # the client's, as sent


def test_a_chat_completions_stream_that_is_no_boolean_is_a_400(gw: Harness) -> None:
    messages = [HI]
    for stream in ("yes", 1, {"on": True}):
        answer = gw.http.post(
            gw.url + "/v1/chat/completions",
            json={"model": "m", "messages": messages, "stream": stream},
        )
        assert answer.status_code == 400, answer.text
        assert answer.json()["error"]["param"] == "stream"
        assert answer.json()["error"]["code"] == "invalid_type"
    assert gw.backend.requests == []
    with pytest.raises(openai.BadRequestError):
        gw.client.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "hi"}],
            extra_body={"stream": "true"},
        )
    assert gw.backend.requests == []


# -- routing and retrieval (bug 5) ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("PUT", "/v1/responses", "POST"),
        ("GET", "/v1/responses", "POST"),
        ("GET", "/v1/chat/completions", "POST"),
        ("POST", "/v1/responses/resp_1", "DELETE, GET"),
    ],
)
def test_a_method_a_path_does_not_take_is_a_405_method_not_allowed(
    gw: Harness, method: str, path: str, allowed: str
) -> None:
    answer = gw.http.request(method, gw.url + path)
    assert answer.status_code == 405
    error = answer.json()["error"]
    assert error["code"] == "method_not_allowed"
    assert error["message"] == f"Method Not Allowed: {method} {path}"
    assert answer.headers["allow"] == allowed  # every method of the path's routes
    unknown = gw.http.get(gw.url + "/v1/nothing-here")
    assert (unknown.status_code, unknown.json()["error"]["code"]) == (404, "not_found")


def test_retrieving_a_stored_response_as_a_stream_is_a_400_naming_stream(gw: Harness) -> None:
    gw.backend.json(chat_completion(content="stored"))
    created = gw.client.responses.create(model="m", input="x")
    with pytest.raises(openai.BadRequestError) as caught:
        gw.client.responses.retrieve(created.id, stream=True)
    assert caught.value.body["param"] == "stream"  # type: ignore[index]
    assert "not supported" in caught.value.message
    for missing in ("resp_" + "0" * 50, created.id):  # refused before the lookup
        answer = gw.http.get(f"{gw.url}/v1/responses/{missing}", params={"stream": "true"})
        assert answer.status_code == 400
    plain = gw.http.get(f"{gw.url}/v1/responses/{created.id}", params={"stream": "false"})
    assert plain.status_code == 200 and plain.json()["output"][0]["content"][0]["text"] == "stored"
    assert gw.client.responses.retrieve(created.id).output_text == "stored"
