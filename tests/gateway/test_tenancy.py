"""Stored responses belong to the key that created them: with two client keys, B can neither
read, list, continue, reference, cancel nor delete A's response, and is answered exactly as
for an id that does not exist. The store keeps a keyed hash of the key, never the key.
Without keys the gateway is single-tenant, and says so when it listens beyond the loopback."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import openai
import pytest

from outform.errors import ConfigError
from outform.gateway.app import create_app
from outform.gateway.settings import GatewaySettings
from outform.gateway.sqlite_store import SqliteStore
from outform.gateway.store import MemoryStore
from outform.gateway.tenancy import is_loopback, tenant_of
from tests.gateway.conftest import MakeGateway
from tests.providers.openai_wire import chat_completion

KEY_A = "sk-tenant-a-5f0c2e91b7"
KEY_B = "sk-tenant-b-0d6a3c84e2"
UNKNOWN = "resp_" + "0" * 50


def _calls(client: openai.OpenAI) -> dict[str, Callable[[str], Any]]:
    return {
        "retrieve": client.responses.retrieve,
        "input_items": client.responses.input_items.list,
        "cancel": client.responses.cancel,
        "delete": client.responses.delete,
        "continue": lambda rid: client.responses.create(
            model="m", input="and then?", previous_response_id=rid
        ),
    }


def _refusal(call: Callable[[str], Any], response_id: str) -> tuple[int, Any]:
    with pytest.raises(openai.NotFoundError) as caught:
        call(response_id)
    body = caught.value.body
    assert isinstance(body, dict)
    return caught.value.status_code, {**body, "message": body["message"].replace(response_id, "ID")}


def test_another_key_cannot_see_touch_or_continue_a_response(
    make_gateway: MakeGateway, tmp_path: Path
) -> None:
    path = tmp_path / "responses.sqlite"
    gw = make_gateway(
        store=SqliteStore(path),
        api_keys=("KEY_A", "KEY_B"),
        env={"KEY_A": KEY_A, "KEY_B": KEY_B},
        api_key=KEY_A,
    )
    a, b = gw.client, gw.client.with_options(api_key=KEY_B)
    gw.backend.json(chat_completion(content="A's plan"))
    mine = a.responses.create(model="m", input="my plan, privately")
    for name, call in _calls(b).items():
        seen = _refusal(call, mine.id)
        assert seen == _refusal(call, UNKNOWN), name  # indistinguishable from no response
    referenced: Any = [{"type": "item_reference", "id": mine.output[0].id}]
    seen = _refusal(lambda _: b.responses.create(model="m", input=referenced), mine.id)
    unknown: Any = [{"type": "item_reference", "id": "msg_" + "0" * 50}]
    assert (
        seen[0] == 404
        and _refusal(lambda _: b.responses.create(model="m", input=unknown), UNKNOWN)[0] == 404
    )
    assert len(gw.backend.requests) == 1  # B's attempts never reached the backend
    # A still has it, whole: B's delete did nothing
    assert a.responses.retrieve(mine.id).output_text == "A's plan"
    assert len(a.responses.input_items.list(mine.id).data) == 1
    gw.backend.json(chat_completion(content="B's own"))
    theirs = b.responses.create(model="m", input="mine")
    assert b.responses.retrieve(theirs.id).output_text == "B's own"
    with pytest.raises(openai.NotFoundError):
        a.responses.retrieve(theirs.id)

    async def salt() -> bytes:
        store = SqliteStore(path)
        try:
            return await store.tenant_salt()
        finally:
            await store.close()

    expected = {tenant_of(KEY_A, asyncio.run(salt())), tenant_of(KEY_B, asyncio.run(salt()))}
    with sqlite3.connect(path) as conn:
        tenants = {row[0] for row in conn.execute("SELECT tenant FROM outform_responses")}
    conn.close()
    assert tenants == expected  # keyed hashes ...
    raw = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.is_file())
    for key in (KEY_A, KEY_B):
        assert key.encode() not in raw  # ... never the keys


def test_without_keys_everyone_shares_one_tenant(make_gateway: MakeGateway) -> None:
    gw = make_gateway()
    gw.backend.json(chat_completion(content="shared"))
    made = gw.client.responses.create(model="m", input="x")
    other = gw.client.with_options(api_key="anything-at-all")
    assert other.responses.retrieve(made.id).output_text == "shared"


@pytest.mark.parametrize(
    ("host", "keyed", "warned"),
    [("0.0.0.0", False, True), ("::", False, True), ("gateway.internal", False, True),
     ("127.0.0.1", False, False), ("::1", False, False), ("localhost", False, False),
     ("0.0.0.0", True, False)],
)  # fmt: skip
def test_a_gateway_open_to_the_network_without_keys_warns_at_start_up(
    host: str, keyed: bool, warned: bool, caplog: pytest.LogCaptureFixture
) -> None:
    settings = GatewaySettings(
        host=host, store="memory", api_keys=("K",) if keyed else (), access_log=False
    )
    app = create_app(settings, store=MemoryStore(), env={"K": KEY_A})

    async def cycle() -> None:
        await app.startup()
        await app.shutdown()

    with caplog.at_level("WARNING", logger="outform.gateway"):
        asyncio.run(cycle())
    warnings = [r.getMessage() for r in caplog.records if "without client keys" in r.getMessage()]
    assert bool(warnings) is warned
    assert is_loopback(host) is (host in ("127.0.0.1", "::1", "localhost"))


def test_a_short_client_key_is_refused() -> None:
    settings = GatewaySettings(api_keys=("K",), store="memory")
    with pytest.raises(ConfigError, match="the key in K has 6 characters"):
        create_app(settings, store=MemoryStore(), env={"K": "sk-abc"})
