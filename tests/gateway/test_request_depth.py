"""The gateway refuses any request it could not write again: a body nested deeper than
`max_request_depth` (64 levels, the body itself the first) is a 400 naming the limit and the
field, before anything is done for it.

Found by a new-user trial: orjson reads 1,024 levels but writes at most 254, so a body nested
300 levels deep (in `metadata`, in a backend's own parameter, with `store: false` or
`stream: true`) was a 500, sometimes after the backend had been called (billed, then lost)
when the answer or the stored row could not be written.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from outform.errors import ConfigError
from outform.gateway.settings import DEFAULT_REQUEST_DEPTH, REQUEST_DEPTH_RANGE, GatewaySettings
from tests.gateway.conftest import Harness, MakeGateway
from tests.gateway.harness import RecordingStore, response_events
from tests.providers.openai_wire import chat_completion, text_stream

MESSAGES = b'[{"role":"user","content":"hi"}]'


def nested(levels: int) -> bytes:
    """A JSON value `levels` levels deep: [[...[{"a": 1}]...]]."""
    return b"[" * (levels - 1) + b'{"a":1}' + b"]" * (levels - 1)


def responses_body(field: str, levels: int, **fields: Any) -> bytes:
    """A Responses body whose `field` nests so that the body is `levels` levels deep."""
    extra = b"".join(b',"%s":%s' % (k.encode(), orjson.dumps(v)) for k, v in fields.items())
    value = nested(levels - 1)
    return b'{"model":"m","input":"hi","%s":%s%s}' % (field.encode(), value, extra)


def _post(gw: Harness, path: str, body: bytes) -> Any:
    return gw.http.post(gw.url + path, content=body, headers={"content-type": "application/json"})


@pytest.mark.parametrize(
    ("field", "fields"),
    [
        ("metadata", {}),
        ("chat_template_kwargs", {}),  # a backend's own parameter, forwarded as it is
        ("chat_template_kwargs", {"store": False}),
        ("chat_template_kwargs", {"stream": True}),
        ("metadata", {"background": True}),
    ],
)
@pytest.mark.parametrize("levels", [65, 300, 2_000])  # 2,000: past orjson's own 1,024
def test_a_body_nested_past_the_limit_is_a_400_before_anything_is_done(
    make_gateway: MakeGateway, field: str, fields: dict[str, Any], levels: int
) -> None:
    store = RecordingStore()
    gw = make_gateway(store=store)
    answer = _post(gw, "/v1/responses", responses_body(field, levels, **fields))
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error["code"] == "request_too_deep"
    assert "max_request_depth" in error["message"]
    assert f"({DEFAULT_REQUEST_DEPTH} levels" in error["message"]
    assert error["param"] == (field if levels <= 1_024 else None)
    assert gw.backend.requests == []
    assert store.saves == {}


@pytest.mark.parametrize("levels", [65, 300, 2_000])
def test_a_chat_completions_body_nested_past_the_limit_is_a_400(gw: Harness, levels: int) -> None:
    for stream in (b"false", b"true"):
        body = b'{"model":"m","messages":%s,"stream":%s,"chat_template_kwargs":%s}' % (
            MESSAGES,
            stream,
            nested(levels - 1),
        )
        answer = _post(gw, "/v1/chat/completions", body)
        assert answer.status_code == 400, answer.text
        assert answer.json()["error"]["code"] == "request_too_deep"
    assert gw.backend.requests == []


def test_a_body_at_the_limit_is_served_and_one_level_more_is_not(
    make_gateway: MakeGateway,
) -> None:
    gw = make_gateway(max_request_depth=16)
    gw.backend.json(chat_completion(content="ok"))
    at_limit = _post(gw, "/v1/responses", responses_body("chat_template_kwargs", 16))
    assert at_limit.status_code == 200, at_limit.text
    assert orjson.dumps(gw.sent()["chat_template_kwargs"]) == nested(15)  # forwarded whole
    deeper = _post(gw, "/v1/responses", responses_body("chat_template_kwargs", 17))
    assert deeper.status_code == 400
    assert "(16 levels" in deeper.json()["error"]["message"]
    assert len(gw.backend.requests) == 1


def test_at_the_highest_limit_every_body_is_written_again_stored_and_streamed(
    make_gateway: MakeGateway,
) -> None:
    """The rule's other half: what the limit lets in, the gateway can write again, to the
    backend (whose tools nest one level deeper than the request's), to the store and to the
    client, whole or streamed."""
    highest = REQUEST_DEPTH_RANGE[1]
    gw = make_gateway(max_request_depth=highest)
    schema: Any = {"type": "object"}
    for _ in range((highest - 4) // 2):  # tools[0].parameters.properties.a...: `highest` deep
        schema = {"type": "object", "properties": {"a": schema}}
    tools = [{"type": "function", "name": "f", "parameters": schema}]
    body = orjson.loads(responses_body("chat_template_kwargs", highest))
    assert _depth({**body, "tools": tools}) == highest
    gw.backend.json(chat_completion(content="whole"))
    whole = gw.http.post(gw.url + "/v1/responses", json={**body, "tools": tools})
    assert whole.status_code == 200, whole.text
    assert gw.sent()["tools"][0]["function"]["parameters"] == schema
    assert _depth(gw.sent()) == highest + 1
    gw.backend.stream(text_stream("stre", "amed"))
    streamed = gw.http.post(gw.url + "/v1/responses", json={**body, "tools": tools, "stream": True})
    assert response_events(streamed.content)[-1]["type"] == "response.completed"
    for answer, text in ((whole.json(), "whole"), (response_events(streamed.content)[-1], None)):
        response = answer if text else answer["response"]
        stored = gw.client.responses.retrieve(response["id"])
        assert stored.tools[0].parameters == schema  # type: ignore[union-attr]
        assert stored.output_text == (text or "streamed")


def _depth(value: Any) -> int:
    """How many levels of objects and lists `value` nests (a scalar: 0)."""
    deepest, pending = 0, [(value, 1)]
    while pending:
        node, level = pending.pop()
        if isinstance(node, dict | list):
            deepest = max(deepest, level)
            children = node.values() if isinstance(node, dict) else node
            pending.extend((child, level + 1) for child in children)
    return deepest


@pytest.mark.parametrize("depth", [REQUEST_DEPTH_RANGE[0] - 1, REQUEST_DEPTH_RANGE[1] + 1, True])
def test_max_request_depth_is_a_checked_setting(depth: Any) -> None:
    with pytest.raises(ConfigError) as caught:
        GatewaySettings(max_request_depth=depth)
    assert caught.value.where == "[gateway] max_request_depth"
    assert "from 8 to 128" in caught.value.render()
    assert GatewaySettings().max_request_depth == DEFAULT_REQUEST_DEPTH == 64


# -- many small items (found by the same trial) ------------------------------------------------


@pytest.mark.parametrize(
    ("path", "field"), [("/v1/responses", "input"), ("/v1/chat/completions", "messages")]
)
def test_more_input_items_than_max_input_items_is_a_400_before_any_work(
    make_gateway: MakeGateway, path: str, field: str
) -> None:
    """100,000 items of `{"role":"user","content":"a"}` (3 MB, within max_body_bytes) took
    14 s of the event loop and hundreds of MB: each item costs work and memory many times its
    bytes. The number of items is bounded too."""
    gw = make_gateway(max_input_items=10)
    item = {"role": "user", "content": "a"}
    answer = _post(gw, path, orjson.dumps({"model": "m", field: [item] * 11}))
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert (error["param"], error["code"]) == (field, "too_many_input_items")
    assert "max_input_items" in error["message"]
    assert gw.backend.requests == []
    gw.backend.json(chat_completion(content="ok"))
    assert _post(gw, path, orjson.dumps({"model": "m", field: [item] * 10})).status_code == 200


def test_max_input_items_is_checked_when_the_settings_are_made() -> None:
    with pytest.raises(ConfigError, match="max_input_items"):
        GatewaySettings(max_input_items=0)
