"""`item_reference` input items: resolved against the caller's own stored items (input and
output items of earlier responses), with the official SDK as the client."""

from __future__ import annotations

from typing import Any

import openai
import pytest

from tests.gateway.conftest import Harness, MakeGateway
from tests.providers.openai_wire import chat_completion, tool_call


def test_references_stand_for_the_stored_items(gw: Harness) -> None:
    gw.backend.json(chat_completion(tool_calls=[tool_call("call_1", "lookup", '{"name": "Ada"}')]))
    first = gw.client.responses.create(model="m", input="Who is Ada?")
    call = first.output[0]
    assert call.type == "function_call"
    question = gw.client.responses.input_items.list(first.id).data[0]
    gw.backend.json(chat_completion(content="Ada Lovelace, mathematician."))
    inputs: Any = [
        {"type": "item_reference", "id": question.id},
        {"type": "item_reference", "id": call.id},
        {"type": "function_call_output", "call_id": "call_1", "output": '{"born": 1815}'},
    ]
    second = gw.client.responses.create(model="m", input=inputs)
    assert second.output_text == "Ada Lovelace, mathematician."
    messages = gw.sent()["messages"]
    assert messages[0] == {"role": "user", "content": "Who is Ada?"}
    assert messages[1]["tool_calls"][0]["function"] == {
        "name": "lookup",
        "arguments": '{"name": "Ada"}',
    }
    assert messages[2] == {"role": "tool", "tool_call_id": "call_1", "content": '{"born": 1815}'}
    listed = gw.client.responses.input_items.list(second.id, order="asc").data
    assert [item.id for item in listed[:2]] == [question.id, call.id]  # the items themselves


def test_unknown_and_other_keys_items_are_not_found(make_gateway: MakeGateway) -> None:
    gw = make_gateway(
        api_keys=("A", "B"), env={"A": "sk-ref-key-a-1234", "B": "sk-ref-key-b-5678"},
        api_key="sk-ref-key-a-1234",
    )  # fmt: skip
    gw.backend.json(chat_completion(content="A's answer"))
    mine = gw.client.responses.create(model="m", input="x")
    other = gw.client.with_options(api_key="sk-ref-key-b-5678")
    for client, item_id in ((other, mine.output[0].id), (gw.client, "msg_" + "f" * 50)):
        reference: Any = [{"type": "item_reference", "id": item_id}]
        with pytest.raises(openai.NotFoundError) as caught:
            client.responses.create(model="m", input=reference)
        assert caught.value.body["param"] == "input[0].id"  # type: ignore[index]
    assert len(gw.backend.requests) == 1
