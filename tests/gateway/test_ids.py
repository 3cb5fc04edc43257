"""Ids that no store can keep: a NUL character (`\\u0000`, which PostgreSQL's text cannot
hold) in a response or item id is a 404 when it is looked up and a 400 naming the field when
a request sends it, checked before the store or the backend is asked anything, and the same
on every store (memory, SQLite, a real PostgreSQL server: tests/gateway/postgres.py).

Found by a new-user trial: on PostgreSQL each looked like a database outage (503
`store_error`), and an input item's id failed only after the backend had been called.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import pytest

from outform.errors import UsageError
from outform.gateway.store import StoredResponse
from tests.gateway.conftest import MakeGateway
from tests.providers.openai_wire import chat_completion

if TYPE_CHECKING:
    from tests.gateway.postgres import Backend

pytest_plugins = ["tests.gateway.postgres"]

NUL_ID = "resp_\x00x"


def test_an_id_holding_nul_is_not_found_or_refused_on_every_store(
    make_gateway: MakeGateway, backend: Backend
) -> None:
    gw = make_gateway(store=backend.open())
    gw.backend.json(chat_completion(content="first"))
    first = gw.client.responses.create(model="m", input="hi")
    for method, path in (
        ("GET", "/v1/responses/resp_%00x"),
        ("DELETE", "/v1/responses/resp_%00x"),
        ("POST", "/v1/responses/resp_%00x/cancel"),
        ("GET", "/v1/responses/resp_%00x/input_items"),
    ):
        answer = gw.http.request(method, gw.url + path)
        assert answer.status_code == 404, (method, path, answer.text)
        assert answer.json()["error"]["code"] == "not_found"
    refused: list[tuple[dict[str, Any], str]] = [
        ({"input": "hi", "previous_response_id": "resp_\x00"}, "previous_response_id"),
        ({"input": [{"id": "msg_\x00x", "role": "user", "content": "hi"}]}, "input[0].id"),
        ({"input": [{"type": "item_reference", "id": "msg_\x00"}]}, "input[0].id"),
        ({"input": [{"id": "msg_\x00"}]}, "input[0].id"),  # a reference without its type
        ({"input": [{"type": "function_call", "id": "fc_\x00", **_CALL}]}, "input[0].id"),
    ]
    for body, param in refused:
        answer = gw.http.post(gw.url + "/v1/responses", json={"model": "m", **body})
        assert answer.status_code == 400, answer.text
        assert answer.json()["error"]["param"] == param
        assert "NUL" in answer.json()["error"]["message"]
    assert len(gw.backend.requests) == 1  # the first request's: none for the refused ones
    gw.backend.json(chat_completion(content="second"))
    second = gw.client.responses.create(model="m", input="again", previous_response_id=first.id)
    assert second.output_text == "second"  # the store was never in trouble


_CALL = {"call_id": "c1", "name": "f", "arguments": "{}"}


def test_a_store_keeps_no_nul_id_and_finds_none(backend: Backend) -> None:
    """What the stores promise themselves (store.storable_id): the gateway never gets here."""

    async def main() -> None:
        store = backend.open()
        try:
            await store.check()
            assert await store.load(NUL_ID) is None
            assert await store.delete(NUL_ID) is False
            assert await store.find_item("msg_\x00") is None
            assert await store.unfinished([NUL_ID]) == set()
            item = {"id": "msg_\x00", "type": "message", "role": "user", "content": "x"}
            record = StoredResponse("resp_ok", 1, {"id": "resp_ok", "status": "completed"}, [item])
            with pytest.raises(UsageError, match="NUL"):
                await store.save(record)
            assert await store.load("resp_ok") is None  # nothing of it was written
        finally:
            await store.close()

    asyncio.run(main())
