"""No request field is lost on the way to the backend.

`text.format` in the nested shape (`{"type": "json_schema", "json_schema": {...}}`) reaches
the backend with its schema (and is checked against it in enforcement mode); a `json_schema`
format without a schema is a 400, never an empty schema. Chat fields of the same name are
forwarded, a backend's own parameters pass as they are, and what a Chat backend (or a native
provider's neutral request) cannot honour is a 400 naming it. Real servers: the fake Chat
backend records what it received.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest

from outform.gateway.settings import GatewaySettings
from tests.gateway.harness import ChatFake, in_front_of_fake, running
from tests.providers.fake import FakeServer
from tests.providers.openai_wire import chat_completion

SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
    "additionalProperties": False,
}
NESTED = {
    "type": "json_schema",
    "json_schema": {"name": "Person", "schema": SCHEMA, "strict": True},
}


@pytest.fixture
def gw() -> Iterator[tuple[ChatFake, httpx.Client, str]]:
    with in_front_of_fake() as (backend, gateway), httpx.Client(timeout=30) as http:
        yield backend, http, gateway.url


def test_the_nested_format_reaches_the_backend_with_its_schema(
    gw: tuple[ChatFake, httpx.Client, str],
) -> None:
    backend, http, url = gw
    backend.json(chat_completion(content='{"name": "Ada", "age": 36}'))
    backend.json(chat_completion(content='Sure: {"name": "Ada", "age": "36"}'))
    body = {"model": "m", "input": "Ada, 36", "text": {"format": NESTED}}
    answer = http.post(url + "/v1/responses", json=body)
    assert answer.status_code == 200
    assert backend.last.json["response_format"] == NESTED  # the schema, not {}
    assert answer.json()["text"] == {"format": NESTED}  # echoed as sent
    enforced = http.post(url + "/v1/responses", json=body, headers={"x-outform-enforce": "1"})
    assert enforced.headers["x-outform-enforce"] == "repaired"
    text = enforced.json()["output"][0]["content"][0]["text"]
    assert orjson.loads(text) == {"name": "Ada", "age": 36}  # checked against that schema


@pytest.mark.parametrize(
    ("fmt", "param"),
    [
        ({"type": "json_schema", "name": "P"}, "text.format.schema"),
        # The nested shape's schema belongs inside `json_schema`: the param says so.
        ({"type": "json_schema", "json_schema": {"name": "P"}}, "text.format.json_schema.schema"),
        ({"type": "json_schema", "json_schema": {}}, "text.format.json_schema.schema"),
        ({"type": "json_schema", "json_schema": "P"}, "text.format.json_schema"),
        ({**NESTED, "schema": SCHEMA}, "text.format.schema"),
    ],
)
def test_a_format_without_a_schema_is_refused_not_emptied(
    gw: tuple[ChatFake, httpx.Client, str], fmt: dict[str, Any], param: str
) -> None:
    backend, http, url = gw
    answer = http.post(
        url + "/v1/responses", json={"model": "m", "input": "x", "text": {"format": fmt}}
    )
    assert answer.status_code == 400
    assert answer.json()["error"]["param"] == param
    assert backend.requests == []


def test_chat_fields_and_backend_parameters_are_forwarded(
    gw: tuple[ChatFake, httpx.Client, str],
) -> None:
    backend, http, url = gw
    backend.json(chat_completion(content="ok"))
    body = {
        "model": "m",
        "input": "x",
        "text": {"format": {"type": "text"}, "verbosity": "low"},
        "user": "u-1",
        "safety_identifier": "s-1",
        "prompt_cache_key": "k-1",
        "service_tier": "flex",
        "top_k": 20,  # vLLM's own, sent with the SDK's extra_body
        "chat_template_kwargs": {"enable_thinking": False},
        "store": False,
        "metadata": {"kept": "here"},
    }
    assert http.post(url + "/v1/responses", json=body).status_code == 200
    sent = backend.last.json
    assert {k: sent.get(k) for k in ("verbosity", "user", "safety_identifier")} == {
        "verbosity": "low",
        "user": "u-1",
        "safety_identifier": "s-1",
    }
    assert (sent["prompt_cache_key"], sent["service_tier"], sent["top_k"]) == ("k-1", "flex", 20)
    assert sent["chat_template_kwargs"] == {"enable_thinking": False}
    assert "store" not in sent and "metadata" not in sent  # the gateway's own


@pytest.mark.parametrize(
    ("extra", "param"),
    [
        ({"context_management": [{"type": "compaction"}]}, "context_management"),
        ({"moderation": {"model": "omni-moderation-latest"}}, "moderation"),
        ({"include": ["message.output_text.logprobs"]}, "include"),
        (
            {
                "input": [
                    {
                        "role": "user",
                        "content": [{"type": "input_file", "file_url": "https://x/a.pdf"}],
                    }
                ]
            },
            "input[0].content[0].file_url",
        ),
    ],
)
def test_what_a_chat_backend_cannot_honour_is_a_400(
    gw: tuple[ChatFake, httpx.Client, str], extra: dict[str, Any], param: str
) -> None:
    backend, http, url = gw
    answer = http.post(url + "/v1/responses", json={"model": "m", "input": "x", **extra})
    assert answer.status_code == 400
    assert answer.json()["error"]["param"] == param
    assert backend.requests == []


def test_a_native_provider_refuses_what_its_request_cannot_carry() -> None:
    with FakeServer() as claude:
        env = {"ANTHROPIC_BASE_URL": claude.url, "ANTHROPIC_API_KEY": "sk-ant-test"}
        settings = GatewaySettings(backend="anthropic", store="memory", access_log=False)
        with running(settings, env=env) as gw, httpx.Client(timeout=30) as http:
            messages = [{"role": "user", "content": "x"}]
            refused = http.post(
                gw.url + "/v1/chat/completions",
                json={"model": "claude-sonnet-4-5", "messages": messages, "top_p": 0.5},
            )
            assert refused.status_code == 400
            assert refused.json()["error"]["param"] == "top_p"
            assert claude.requests == []
            claude.json(
                {
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-sonnet-4-5",
                    "content": [{"type": "text", "text": "ok"}],
                    "stop_reason": "end_turn",
                    "stop_sequence": None,
                    "usage": {"input_tokens": 1, "output_tokens": 1},
                }
            )
            fine = http.post(
                gw.url + "/v1/chat/completions",
                json={
                    "model": "claude-sonnet-4-5",
                    "messages": messages,
                    "top_p": 1,  # what every provider does anyway
                    "user": "u-1",  # a label: not sent, the answer is the same
                    "reasoning_effort": "high",
                },
            )
            assert fine.status_code == 200, fine.text
            assert claude.last.json["output_config"]["effort"] == "high"


@pytest.mark.parametrize("path", ["/v1/responses", "/v1/chat/completions"])
@pytest.mark.parametrize(
    ("model", "message"),
    [
        (None, "Missing required parameter: 'model'."),
        (5, "Invalid type for 'model': expected a string, got int."),
    ],
)
def test_a_model_that_is_missing_or_no_string_is_a_400_saying_which(
    gw: tuple[ChatFake, httpx.Client, str], path: str, model: Any, message: str
) -> None:
    """Found by a new-user trial: `{"model": 5}` was told the model was missing."""
    backend, http, url = gw
    body: dict[str, Any] = {"input": "x", "messages": [{"role": "user", "content": "x"}]}
    if model is not None:
        body["model"] = model
    answer = http.post(url + path, json=body)
    assert answer.status_code == 400
    assert answer.json()["error"]["message"] == message
    assert answer.json()["error"]["param"] == "model"
    assert backend.requests == []


@pytest.mark.parametrize(
    ("extra", "param", "phrase"),
    [
        ({"input": "x", "reasoning": "high"}, "reasoning", "'reasoning' must be an object"),
        ({"input": "x", "reasoning": {"effort": 3}}, "reasoning", "'effort' a string"),
        ({"input": None}, "input", "Missing required parameter: 'input'"),
        (
            {"input": [{"role": "user", "content": [{"type": "input_text"}]}]},
            "input[0].content[0].text",
            "Missing required parameter: 'input[0].content[0].text'",
        ),
        (
            {"input": [{"type": "function_call_output", "call_id": "c", "output": {"a": 1}}]},
            "input[0].output",
            "a string or a list of parts, not dict",
        ),
        ({"input": [{"content": "hi"}]}, "input[0].type", "needs a 'type' (or a 'role'"),
    ],
)
def test_a_request_the_gateway_would_garble_is_a_400_naming_the_field(
    gw: tuple[ChatFake, httpx.Client, str], extra: dict[str, Any], param: str, phrase: str
) -> None:
    """Found by a new-user trial: `"reasoning": "high"` was dropped unseen, `"input": null`
    sent an empty conversation, a text part without its text was sent as "", and an object
    as a tool's output was told it had none."""
    backend, http, url = gw
    answer = http.post(url + "/v1/responses", json={"model": "m", **extra})
    assert answer.status_code == 400, answer.text
    assert phrase in answer.json()["error"]["message"]
    assert answer.json()["error"]["param"] == param
    assert backend.requests == []
