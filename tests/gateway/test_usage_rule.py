"""One rule for a backend's `usage` on every path (`gateway.usage`).

A usage is known when every count it holds is a non-negative integer; otherwise it is unknown
and left out of what the gateway writes: never a 500 (the trial's enforcement mode raised
on `"prompt_tokens": "a"`), never a negative count (`output_tokens: -5`), never a count read
as 0 because it was not one. Summed over enforcement's attempts, the total is known only when
every attempt's is: a sum of some of them is a count nobody made.
"""

from __future__ import annotations

from typing import Any

import httpx
import orjson
import pytest
from pydantic import BaseModel

from tests.gateway.conftest import Harness
from tests.providers.openai_wire import chat_completion, chat_usage

ON = {"x-outform-enforce": "1"}
ADA = '{"name": "Ada Lovelace", "age": 36}'

UNREADABLE: dict[str, Any] = {
    "a string count": {"prompt_tokens": "a", "completion_tokens": 3, "total_tokens": 8},
    "an object count": {"prompt_tokens": {"a": 1}, "completion_tokens": 3, "total_tokens": 8},
    "a negative count": {"prompt_tokens": 5, "completion_tokens": -5, "total_tokens": 0},
    "a float count": {"prompt_tokens": 5.0, "completion_tokens": 3, "total_tokens": 8},
    "a boolean count": {"prompt_tokens": True, "completion_tokens": 3, "total_tokens": 8},
    "a count left out": {"completion_tokens": 3, "total_tokens": 8},
    "details of the wrong type": {**chat_usage(5, 3), "prompt_tokens_details": 5},
    "a detail of the wrong type": {
        **chat_usage(5, 3),
        "completion_tokens_details": {"reasoning_tokens": "x"},
    },
}


class Person(BaseModel):
    name: str
    age: int


def _schema_format() -> dict[str, Any]:
    return {"type": "json_schema", "name": "Person", "schema": Person.model_json_schema()}


def _post(gw: Harness, path: str, body: dict[str, Any], headers: dict[str, str]) -> httpx.Response:
    with httpx.Client(timeout=30) as http:
        return http.post(gw.url + path, json=body, headers=headers)


@pytest.mark.parametrize("enforced", [True, False], ids=["enforced", "passed-through"])
@pytest.mark.parametrize("usage", UNREADABLE.values(), ids=UNREADABLE.keys())
def test_an_unreadable_usage_is_left_out_of_a_response(
    gw: Harness, usage: Any, enforced: bool
) -> None:
    gw.backend.json(chat_completion(content=ADA, usage=usage))
    answer = _post(
        gw,
        "/v1/responses",
        {"model": "m", "input": "Ada", "text": {"format": _schema_format()}},
        ON if enforced else {},
    )
    assert answer.status_code == 200, answer.text
    response = answer.json()
    assert response["status"] == "completed"
    assert "usage" not in response


@pytest.mark.parametrize("usage", UNREADABLE.values(), ids=UNREADABLE.keys())
def test_an_unreadable_usage_is_left_out_of_an_enforced_chat_answer(
    gw: Harness, usage: Any
) -> None:
    gw.backend.json(chat_completion(content=ADA, usage=usage))
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": "Ada"}],
        "response_format": {"type": "json_schema", "json_schema": _schema_format()},
    }
    answer = _post(gw, "/v1/chat/completions", body, ON)
    assert answer.status_code == 200, answer.text
    completion = answer.json()
    assert orjson.loads(completion["choices"][0]["message"]["content"])["age"] == 36
    assert "usage" not in completion


def test_the_usage_of_attempts_is_summed_only_when_every_attempt_has_one(gw: Harness) -> None:
    gw.backend.json(chat_completion(content='{"name": "Ada"}', usage=chat_usage(30, 8)))
    gw.backend.json(chat_completion(content=ADA, usage=chat_usage(60, 4, reasoning=2)))
    summed = gw.client.responses.parse(
        model="m", input="Ada", text_format=Person, extra_headers=ON
    ).usage
    assert summed is not None
    assert (summed.input_tokens, summed.output_tokens, summed.total_tokens) == (90, 12, 102)
    assert summed.output_tokens_details.reasoning_tokens == 2

    gw.backend.json(chat_completion(content='{"name": "Ada"}', usage=chat_usage(30, 8)))
    gw.backend.json(chat_completion(content=ADA, usage={"prompt_tokens": "a"}))
    partial = gw.client.responses.parse(
        model="m", input="Ada", text_format=Person, extra_headers=ON
    )
    assert partial.output_parsed == Person(name="Ada Lovelace", age=36)
    assert partial.usage is None  # not 30 + 8: the second attempt's count is not known
