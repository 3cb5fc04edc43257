"""Enforcement mode: schema-valid output from a backend that ignores `response_format`.

Off by default, where the same bad reply passes through untouched; on per request
(`x-outform-enforce: 1`) or per deployment (`enforce = true`, which a request can turn off).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import openai
import orjson
import pytest
from pydantic import BaseModel

import outform.config
from tests.gateway.conftest import Harness, MakeGateway
from tests.gateway.harness import response_events
from tests.providers.openai_wire import chat_completion, chat_usage

ON = {"x-outform-enforce": "1"}
IGNORED = (
    "Sure! Here is the person you asked for:\n```json\n"
    '{"name": "Ada Lovelace", "age": "36",}\n```\nAnything else?'
)
"""What a backend without constrained decoding writes: prose, a fence, a string number."""


ADA = '{"name": "Ada Lovelace", "age": 36}'


class Person(BaseModel):
    name: str
    age: int


def test_off_by_default_the_reply_passes_through_untouched(gw: Harness) -> None:
    gw.backend.json(chat_completion(content=IGNORED))
    response = gw.client.responses.create(
        model="m", input="Ada, 36", text={"format": _person_format()}
    )
    assert response.output_text == IGNORED
    assert len(gw.backend.requests) == 1


def test_a_reply_outform_can_repair_is_returned_valid_at_once(gw: Harness) -> None:
    gw.backend.json(chat_completion(content=IGNORED))
    raw = gw.client.responses.with_raw_response.parse(
        model="m", input="Ada, 36", text_format=Person, extra_headers=ON
    )
    parsed = raw.parse()
    assert parsed.output_parsed == Person(name="Ada Lovelace", age=36)
    assert orjson.loads(parsed.output_text) == {"name": "Ada Lovelace", "age": 36}
    assert raw.headers["x-outform-enforce"] == "repaired"
    assert raw.headers["x-outform-attempts"] == "1"
    assert len(gw.backend.requests) == 1
    assert gw.sent()["response_format"]["json_schema"]["name"] == "Person"  # still forwarded


def test_a_valid_reply_is_left_exactly_as_sent(gw: Harness) -> None:
    text = '{ "name" : "Ada Lovelace" , "age" : 36 }'
    gw.backend.json(chat_completion(content=text))
    response = gw.client.responses.parse(
        model="m", input="Ada", text_format=Person, extra_headers=ON
    )
    assert response.output_text == text


def test_an_invalid_reply_is_asked_for_again_with_the_hint(gw: Harness) -> None:
    gw.backend.json(chat_completion(content='{"name": "Ada Lovelace"}', usage=chat_usage(30, 8)))
    gw.backend.json(chat_completion(content=ADA, usage=chat_usage(60, 4)))
    raw = gw.client.responses.with_raw_response.parse(
        model="m", input="Ada, 36", text_format=Person, extra_headers=ON
    )
    parsed = raw.parse()
    assert parsed.output_parsed == Person(name="Ada Lovelace", age=36)
    assert raw.headers["x-outform-attempts"] == "2"
    assert parsed.usage is not None
    assert (parsed.usage.input_tokens, parsed.usage.output_tokens) == (90, 12)
    first, second = gw.backend.chat_requests()
    assert second["messages"][: len(first["messages"])] == first["messages"]
    bad, hint = second["messages"][-2:]
    assert bad == {"role": "assistant", "content": '{"name": "Ada Lovelace"}'}
    assert hint["role"] == "user"
    assert "missing required field 'age'" in hint["content"]
    assert second["response_format"] == first["response_format"]  # the client's, unchanged


def test_after_the_last_attempt_the_client_gets_422_with_the_hint(
    make_gateway: MakeGateway,
) -> None:
    gw = make_gateway(enforce=True, enforce_retries=1)
    for _ in range(2):
        gw.backend.json(chat_completion(content="I do not know this person."))
    with pytest.raises(openai.UnprocessableEntityError) as caught:
        gw.client.responses.create(model="m", input="?", text={"format": _person_format()})
    error = caught.value.body
    assert isinstance(error, dict) and error["code"] == "output_invalid"
    assert "2 attempt(s)" in error["message"]
    assert "expected" in error["message"]  # the violations, for people:
    assert "Reply again" not in error["message"]  # not the words sent to the model
    assert len(gw.backend.requests) == 2
    assert error["param"] == "text.format"
    # Chat Completions states the format in `response_format`: the error names that.
    for _ in range(2):
        gw.backend.json(chat_completion(content="I do not know this person."))
    with pytest.raises(openai.UnprocessableEntityError) as caught:
        gw.client.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "?"}],
            response_format={"type": "json_schema", "json_schema": _person_format()},
        )
    assert isinstance(caught.value.body, dict)
    assert caught.value.body["param"] == "response_format"


def test_a_deployment_default_can_be_turned_off_per_request(make_gateway: MakeGateway) -> None:
    gw = make_gateway(enforce=True)
    gw.backend.json(chat_completion(content=IGNORED))
    response = gw.client.responses.create(
        model="m",
        input="Ada",
        text={"format": _person_format()},
        extra_headers={"x-outform-enforce": "0"},
    )
    assert response.output_text == IGNORED


def test_tool_calls_and_plain_text_are_not_enforced(make_gateway: MakeGateway) -> None:
    gw = make_gateway(enforce=True)
    gw.backend.json(chat_completion(content="Just text."))
    assert gw.client.responses.create(model="m", input="x").output_text == "Just text."
    gw.backend.json(chat_completion(refusal="No."))
    refused = gw.client.responses.parse(model="m", input="x", text_format=Person)
    assert refused.output_parsed is None
    assert len(gw.backend.requests) == 2


def test_a_streamed_request_streams_the_validated_result(gw: Harness) -> None:
    gw.backend.json(chat_completion(content=IGNORED))
    with gw.client.responses.stream(
        model="m", input="Ada", text_format=Person, extra_headers=ON
    ) as stream:
        final = stream.get_final_response()
    assert final.output_parsed == Person(name="Ada Lovelace", age=36)
    assert "stream" not in gw.sent()  # the backend was asked for a whole answer


def test_chat_completions_are_enforced_too(gw: Harness) -> None:
    gw.backend.json(chat_completion(content=IGNORED))
    completion = gw.client.chat.completions.parse(
        model="m",
        messages=[{"role": "user", "content": "Ada, 36"}],
        response_format=Person,
        extra_headers=ON,
    )
    assert completion.choices[0].message.parsed == Person(name="Ada Lovelace", age=36)
    gw.backend.json(chat_completion(content=IGNORED))
    stream = gw.http.post(
        gw.url + "/v1/chat/completions",
        json={
            "model": "m",
            "messages": [{"role": "user", "content": "Ada, 36"}],
            "response_format": {"type": "json_object"},
            "stream": True,
        },
        headers=ON,
    )
    assert stream.headers["x-outform-enforce"] == "repaired"
    text = "".join(
        c["choices"][0]["delta"].get("content") or ""
        for c in _chunks(stream.content)
        if c["choices"]
    )
    assert orjson.loads(text) == {"name": "Ada Lovelace", "age": "36"}  # json_object: no schema


def test_json_object_enforcement_extracts_the_object(gw: Harness) -> None:
    gw.backend.json(chat_completion(content=IGNORED))
    answer = gw.http.post(
        gw.url + "/v1/responses",
        json={
            "model": "m",
            "input": "x",
            "text": {"format": {"type": "json_object"}},
            "stream": True,
        },
        headers=ON,
    )
    final = response_events(answer.content)[-1]["response"]
    assert orjson.loads(final["output"][0]["content"][0]["text"]) == {
        "name": "Ada Lovelace",
        "age": "36",
    }


def test_a_bad_enforce_header_is_a_400(gw: Harness) -> None:
    answer = gw.http.post(
        gw.url + "/v1/responses",
        json={"model": "m", "input": "x"},
        headers={"x-outform-enforce": "maybe"},
    )
    assert answer.status_code == 400
    assert answer.json()["error"]["param"] == "x-outform-enforce"


@pytest.mark.parametrize(
    ("schema", "said", "param"),
    [
        ({"type": 5}, "not a valid JSON Schema", "text.format.schema.type"),
        ({"$ref": "https://example.com/person.json"}, "remote document", "text.format.schema.$ref"),
        ({"type": "string", "pattern": "("}, "cannot be compiled", "text.format.schema.pattern"),
    ],
)
def test_a_schema_enforcement_cannot_use_is_a_400_before_the_backend_is_called(
    gw: Harness, schema: dict[str, Any], said: str, param: str
) -> None:
    """Found by the fuzzer: the schema was first compiled by the check of the backend's reply,
    in a worker, whose SchemaError became a 500 after a backend call had been paid for."""
    fmt = {"type": "json_schema", "name": "Bad", "schema": schema}
    answer = gw.http.post(
        gw.url + "/v1/responses",
        json={"model": "m", "input": "x", "text": {"format": fmt}},
        headers=ON,
    )
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["param"] == param  # down to the keyword (test_request_trial.py)
    assert said in error["message"]
    assert gw.backend.requests == []


def _person_format() -> Any:
    return {
        "type": "json_schema",
        "name": "Person",
        "strict": True,
        "schema": Person.model_json_schema() | {"additionalProperties": False},
    }


def _chunks(body: bytes) -> list[Any]:
    return [
        orjson.loads(line[6:])
        for line in body.split(b"\n")
        if line.startswith(b"data: ") and line != b"data: [DONE]"
    ]


def test_the_profile_header_picks_the_parse_settings_of_a_profile(
    gw: Harness, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "outform.toml").write_text('[profiles.exact]\nlevel = "off"\n', encoding="utf-8")
    monkeypatch.delenv("OUTFORM_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    outform.config.reload()
    try:
        gw.backend.json(chat_completion(content=IGNORED))
        gw.backend.json(chat_completion(content=ADA))
        raw = gw.client.responses.with_raw_response.parse(
            model="m",
            input="Ada, 36",
            text_format=Person,
            extra_headers={**ON, "x-outform-profile": "exact"},
        )
        assert raw.headers["x-outform-attempts"] == "2"  # level off: asked again, not repaired
        with pytest.raises(openai.BadRequestError, match="unknown profile 'loose'"):
            gw.client.responses.create(
                model="m",
                input="Ada",
                text={"format": _person_format()},
                extra_headers={**ON, "x-outform-profile": "loose"},
            )
    finally:
        monkeypatch.undo()
        outform.config.reload()


@pytest.mark.parametrize("cut", ["12", "1.5", "true"])
def test_a_reply_cut_at_the_token_limit_after_a_bare_value_is_asked_for_again(
    gw: Harness, cut: str
) -> None:
    """A backend stopped at its token limit (`finish_reason: length`) after `12` may have
    been writing `120` or `12.5`: only JSON closed by `}`, `]` or a closing quote is known
    to be complete there, so the reply is asked for again as cut off."""
    gw.backend.json(chat_completion(content=cut, finish="length"))
    gw.backend.json(chat_completion(content="120"))
    response = gw.client.responses.create(
        model="m",
        input="How many?",
        text={"format": {"type": "json_schema", "name": "n", "schema": {}}},
        extra_headers=ON,
    )
    assert response.output_text == "120"
    _, second = gw.backend.chat_requests()
    assert "cut off" in second["messages"][-1]["content"]
