"""What a second trial of `outform serve` found, each as the HTTP exchange it saw.

1. Under enforcement, a Chat `response_format` enforcement could not read (`"json"`, a list,
   a number, a format without `type`) was read as no format: 200 with the backend's text and
   nobody checking it. It is a 400 naming `response_format` or `response_format.type`.
2. A request with nothing to send (`input: []`) was forwarded with no message at all, and
   `previous_response_id: ""` was read as absent.
3. A `json_schema` format without its `name` (which the spec requires) was forwarded.
4. A tool or content part without `type` was "type None is not supported"; a required field
   left out is `missing_required`.
5. Under enforcement, a reply nested deeper than the pipeline's `max_depth` was a 422 at once,
   with no re-ask and `param: null`, not naming the setting.
6. An integer too large for JSON readers (`max_output_tokens: 10**23`) was "expected an
   integer, got float".
"""

from __future__ import annotations

from typing import Any

import httpx2
import openai
import pytest

from tests.gateway.conftest import Harness, MakeGateway
from tests.providers.openai_wire import chat_completion

ENFORCE = "x-outform-enforce"
ON = {ENFORCE: "1"}
SCHEMA: Any = {"type": "object", "properties": {"age": {"type": "integer"}}, "required": ["age"]}
MESSAGES: Any = [{"role": "user", "content": "x"}]
NOT_JSON = "not json at all"


def _error(answer: httpx2.Response, status: int = 400) -> dict[str, Any]:
    assert answer.status_code == status, answer.text
    error: dict[str, Any] = answer.json()["error"]
    assert "None" not in error["message"]
    return error


def _chat(gw: Harness, response_format: Any, headers: Any = None) -> httpx2.Response:
    body = {"model": "m", "messages": MESSAGES, "response_format": response_format}
    return gw.http.post(gw.url + "/v1/chat/completions", json=body, headers=headers or ON)


def _responses(gw: Harness, fields: dict[str, Any], headers: Any = None) -> httpx2.Response:
    body = {"model": "m", "input": "x", **fields}
    return gw.http.post(gw.url + "/v1/responses", json=body, headers=headers or {})


# -- 1. a response_format enforcement cannot read is a 400, never an unchecked 200 --------------

UNREADABLE_FORMATS = [
    ("json", "response_format", "invalid_type"),
    (["json_object"], "response_format", "invalid_type"),
    (5, "response_format", "invalid_type"),
    ({"json_schema": {"name": "x", "schema": SCHEMA}}, "response_format.type", "missing_required"),
    (
        {"type": None, "json_schema": {"name": "x", "schema": SCHEMA}},
        "response_format.type",
        "missing_required",
    ),
    ({"type": 5}, "response_format.type", "invalid_type"),
    ({"type": "json"}, "response_format.type", "invalid_value"),
]


@pytest.mark.parametrize(("response_format", "param", "code"), UNREADABLE_FORMATS)
def test_an_enforced_response_format_that_cannot_be_read_is_a_400(
    gw: Harness, response_format: Any, param: str, code: str
) -> None:
    gw.backend.json(chat_completion(content=NOT_JSON))
    error = _error(_chat(gw, response_format))
    assert (error["param"], error["code"]) == (param, code)
    assert f"'{param}'" in error["message"]
    assert gw.backend.requests == []


@pytest.mark.parametrize(("response_format", "param", "code"), UNREADABLE_FORMATS)
def test_a_native_backend_refuses_the_same_formats_without_enforcement(
    make_gateway: MakeGateway, response_format: Any, param: str, code: str
) -> None:
    """A native provider's adapter translates the format (into the provider's own schema
    mode): it was read as no format there too."""
    gw = make_gateway(
        backend="anthropic",
        env_for=lambda fake: {"ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_API_KEY": "sk-ant-x"},
    )
    body = {"model": "claude-sonnet-4-5", "messages": MESSAGES, "response_format": response_format}
    error = _error(gw.http.post(gw.url + "/v1/chat/completions", json=body))
    assert (error["param"], error["code"]) == (param, code)
    assert gw.backend.requests == []


def test_the_pass_through_forwards_a_chat_format_as_it_is(gw: Harness) -> None:
    """Without enforcement, `/v1/chat/completions` checks no format: the backend judges."""
    gw.backend.json(chat_completion(content=NOT_JSON))
    answer = _chat(gw, {"type": "grammar", "grammar": "root ::= 'x'"}, headers={ENFORCE: "0"})
    assert answer.status_code == 200, answer.text
    assert gw.sent()["response_format"]["type"] == "grammar"


def test_no_format_or_a_text_format_is_answered_unenforced(gw: Harness) -> None:
    gw.backend.json(chat_completion(content=NOT_JSON))
    answer = gw.http.post(
        gw.url + "/v1/chat/completions", json={"model": "m", "messages": MESSAGES}, headers=ON
    )
    assert answer.status_code == 200, answer.text
    assert ENFORCE not in answer.headers
    gw.backend.json(chat_completion(content=NOT_JSON))
    answer = _chat(gw, {"type": "text"})
    assert answer.status_code == 200, answer.text
    assert ENFORCE not in answer.headers


# -- 2. nothing to send ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "param", "code"),
    [
        ({"input": []}, "input", "invalid_value"),
        ({"input": [{"type": "reasoning", "summary": []}]}, "input", "invalid_value"),
        ({"input": None}, "input", "missing_required"),
        ({"previous_response_id": ""}, "previous_response_id", "invalid_value"),
        ({"input": [], "previous_response_id": ""}, "previous_response_id", "invalid_value"),
    ],
)
def test_a_request_with_nothing_to_send_is_a_400(
    gw: Harness, fields: dict[str, Any], param: str, code: str
) -> None:
    error = _error(_responses(gw, fields))
    assert (error["param"], error["code"]) == (param, code)
    assert gw.backend.requests == []


def test_an_empty_input_with_instructions_sends_the_instructions(gw: Harness) -> None:
    gw.backend.json(chat_completion(content="hi"))
    response = gw.client.responses.create(model="m", input=[], instructions="Say hi.")
    assert response.output_text == "hi"
    assert gw.sent()["messages"] == [{"role": "system", "content": "Say hi."}]


def test_an_empty_input_goes_on_from_a_previous_response(gw: Harness) -> None:
    gw.backend.json(chat_completion(content="first"))
    first = gw.client.responses.create(model="m", input="x")
    gw.backend.json(chat_completion(content="second"))
    gw.client.responses.create(model="m", input=[], previous_response_id=first.id)
    assert [m["content"] for m in gw.sent()["messages"]] == ["x", "first"]


# -- 3. a json_schema format needs its name ---------------------------------------------------


@pytest.mark.parametrize("enforcing", [False, True])
def test_a_json_schema_format_without_a_name_is_a_400(gw: Harness, enforcing: bool) -> None:
    headers = ON if enforcing else {}
    for fmt, param in (
        ({"type": "json_schema", "schema": SCHEMA}, "text.format.name"),
        (
            {"type": "json_schema", "json_schema": {"schema": SCHEMA}},
            "text.format.json_schema.name",
        ),
        ({"type": "json_schema", "name": None, "schema": SCHEMA}, "text.format.name"),
    ):
        error = _error(_responses(gw, {"text": {"format": fmt}}, headers))
        assert (error["param"], error["code"]) == (param, "missing_required")
    unnamed: Any = {"format": {"type": "json_schema", "schema": SCHEMA}}
    with pytest.raises(openai.BadRequestError):  # the SDK sees the refusal as one
        gw.client.responses.create(model="m", input="x", text=unnamed, extra_headers=headers)
    assert gw.backend.requests == []


def test_an_enforced_chat_format_without_a_name_is_a_400(gw: Harness) -> None:
    for fmt, param in (
        ({"type": "json_schema", "json_schema": {"schema": SCHEMA}}, "response_format.json_schema"),
        ({"type": "json_schema", "schema": SCHEMA}, "response_format"),
    ):
        error = _error(_chat(gw, fmt))
        assert (error["param"], error["code"]) == (f"{param}.name", "missing_required")
    assert gw.backend.requests == []


# -- 4. a type left out is missing, never "type None" -----------------------------------------

_FN: Any = {"type": "function", "name": "f", "parameters": {"type": "object"}}


@pytest.mark.parametrize(
    ("fields", "param", "code"),
    [
        (
            {"input": [{"role": "user", "content": [{"text": "hi"}]}]},
            "input[0].content[0].type",
            "missing_required",
        ),
        (
            {"input": [{"role": "assistant", "content": [{"text": "hi"}]}]},
            "input[0].content[0].type",
            "missing_required",
        ),
        (
            {"input": [{"role": "user", "content": [{"type": 5, "text": "hi"}]}]},
            "input[0].content[0].type",
            "invalid_type",
        ),
        ({"tools": [{"name": "f"}]}, "tools[0].type", "missing_required"),
        ({"tools": [{"type": None, "name": "f"}]}, "tools[0].type", "missing_required"),
        ({"tools": [{"type": 5, "name": "f"}]}, "tools[0].type", "invalid_type"),
        ({"tools": ["f"]}, "tools[0]", "invalid_type"),
        (
            {
                "tools": [_FN],
                "tool_choice": {"type": "allowed_tools", "mode": "auto", "tools": [{"name": "f"}]},
            },
            "tool_choice.tools[0].type",
            "missing_required",
        ),
        ({"input": [{"type": 5, "content": "x"}]}, "input[0].type", "invalid_type"),
    ],
)
def test_a_type_left_out_is_missing_required(
    gw: Harness, fields: dict[str, Any], param: str, code: str
) -> None:
    error = _error(_responses(gw, fields))
    assert (error["param"], error["code"]) == (param, code)
    assert gw.backend.requests == []


# -- 5. a reply nested too deep is asked for again ------------------------------------------

DEEP = '{"a":' * 5000 + "1" + "}" * 5000


def test_a_reply_nested_too_deep_is_asked_for_again(make_gateway: MakeGateway) -> None:
    gw = make_gateway(enforce_retries=1)
    gw.backend.json(chat_completion(content=DEEP))
    gw.backend.json(chat_completion(content='{"age": 36}'))
    fmt = {"type": "json_schema", "name": "A", "schema": SCHEMA}
    answer = _responses(gw, {"text": {"format": fmt}}, ON)
    assert answer.status_code == 200, answer.text
    assert answer.headers["x-outform-attempts"] == "2"
    hint = gw.backend.chat_requests()[1]["messages"][-1]
    assert hint["role"] == "user" and "5000 levels deep" in hint["content"]


@pytest.mark.parametrize(
    ("path", "param"),
    [("/v1/responses", "text.format"), ("/v1/chat/completions", "response_format")],
)
def test_a_reply_nested_too_deep_each_time_is_the_422_naming_the_setting(
    make_gateway: MakeGateway, path: str, param: str
) -> None:
    gw = make_gateway(enforce_retries=1)
    for _ in range(2):
        gw.backend.json(chat_completion(content=DEEP))
    fmt = {"type": "json_schema", "name": "A", "schema": SCHEMA}
    body: dict[str, Any] = (
        {"model": "m", "input": "x", "text": {"format": fmt}}
        if path == "/v1/responses"
        else {"model": "m", "messages": MESSAGES, "response_format": {"type": "json_schema",
              "json_schema": {"name": "A", "schema": SCHEMA}}}
    )  # fmt: skip
    error = _error(gw.http.post(gw.url + path, json=body, headers=ON), 422)
    assert (error["param"], error["code"]) == (param, "output_invalid")
    assert "2 attempt(s)" in error["message"]
    assert "5000 levels deep, over the limit of 200" in error["message"]
    assert "max_depth, set in [parse] of outform.toml" in error["message"]
    assert len(gw.backend.requests) == 2


# -- 6. an integer out of range ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("literal", "said"),
    [
        (b"100000000000000000000000", "from 16 to 18446744073709551615"),
        (b"-100000000000000000000000", "from 16 to 18446744073709551615"),
    ],
)
def test_an_integer_too_large_to_read_is_out_of_range(
    gw: Harness, literal: bytes, said: str
) -> None:
    """orjson reads an integer literal beyond 64 bits as a float: it was "got float"."""
    body = b'{"model": "m", "input": "x", "max_output_tokens": ' + literal + b"}"
    answer = gw.http.post(
        gw.url + "/v1/responses", content=body, headers={"content-type": "application/json"}
    )
    error = _error(answer)
    assert (error["param"], error["code"]) == ("max_output_tokens", "invalid_value")
    assert "out of range" in error["message"] and said in error["message"]
    assert "float" not in error["message"]


def test_a_large_number_for_a_bounded_integer_names_its_bounds(gw: Harness) -> None:
    body = b'{"model": "m", "input": "x", "top_logprobs": 1e30}'
    answer = gw.http.post(
        gw.url + "/v1/responses", content=body, headers={"content-type": "application/json"}
    )
    error = _error(answer)
    assert (error["param"], error["code"]) == ("top_logprobs", "invalid_value")
    assert "from 0 to 20" in error["message"]
