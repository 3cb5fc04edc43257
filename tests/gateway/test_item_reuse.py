"""Item ids a client reuses across requests (replaying earlier items with their ids): an
`item_reference` names the newest copy among the tenant's responses that still exist, and
deleting one response never hides a copy another response still holds. On every store, then
through the official SDK."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Any

import openai
import orjson
import pytest

from outform.gateway.sqlite_store import SqliteStore
from outform.gateway.store import NO_TENANT, StoredResponse
from tests.gateway.conftest import Harness
from tests.providers.openai_wire import chat_completion

if TYPE_CHECKING:
    from tests.gateway.postgres import Backend
    from tests.postgres import PostgresServer

pytest_plugins = ["tests.gateway.postgres"]


def holder(
    response_id: str,
    *items: tuple[str, str],
    created_at: int = 1_700_000_000,
    tenant: str = NO_TENANT,
    status: str = "completed",
) -> StoredResponse:
    """A response whose input items are user messages (item id, text) and with no output."""
    inputs = [
        {"id": item_id, "type": "message", "role": "user", "content": text}
        for item_id, text in items
    ]
    response = {"id": response_id, "object": "response", "status": status, "output": []}
    return StoredResponse(
        response_id, created_at, response, inputs, conversation=inputs, tenant=tenant
    )


async def text_of(store: Any, item_id: str, tenant: str = NO_TENANT) -> str | None:
    found = await store.find_item(item_id, tenant)
    return None if found is None else str(found["content"])


def test_the_newest_existing_copy_is_found(backend: Backend) -> None:
    async def main() -> None:
        store = backend.open()
        try:
            await store.save(holder("resp_1", ("msg_s", "Alice")))
            await store.save(holder("resp_2", ("msg_s", "Mallory")))
            assert await text_of(store, "msg_s") == "Mallory"
            assert await store.delete("resp_2") is True
            assert await text_of(store, "msg_s") == "Alice"  # resp_1 still holds it
            await store.save(holder("resp_3", ("msg_s", "Carol")))
            assert await store.delete("resp_1") is True  # an older copy: no change
            assert await text_of(store, "msg_s") == "Carol"
            assert await store.delete("resp_3") is True
            assert await store.find_item("msg_s") is None
        finally:
            await store.close()

    asyncio.run(main())


def test_saving_again_without_the_item_gives_way_to_the_older_copy(backend: Backend) -> None:
    async def main() -> None:
        store = backend.open()
        try:
            await store.save(holder("resp_1", ("msg_s", "Alice")))
            await store.save(holder("resp_2", ("msg_s", "Mallory")))
            await store.save(holder("resp_2", ("msg_t", "other")))  # replaced: no msg_s now
            assert await text_of(store, "msg_s") == "Alice"
            assert await text_of(store, "msg_t") == "other"
            await store.save(holder("resp_1", ("msg_s", "Alice, again")))  # still the newest
            assert await text_of(store, "msg_s") == "Alice, again"
        finally:
            await store.close()

    asyncio.run(main())


def test_finishing_a_response_keeps_when_its_items_were_stored(backend: Backend) -> None:
    """An item is stored when its response first holds it: a response running since before
    another copy was stored does not become the newest by finishing."""

    async def main() -> None:
        store = backend.open()
        try:
            await store.save(holder("resp_1", ("msg_s", "Alice"), status="in_progress"))
            await store.save(holder("resp_2", ("msg_s", "Mallory")))
            assert await store.update(holder("resp_1", ("msg_s", "Alice"))) is True
            assert await text_of(store, "msg_s") == "Mallory"
            assert await store.delete("resp_2") is True
            assert await text_of(store, "msg_s") == "Alice"
        finally:
            await store.close()

    asyncio.run(main())


def test_purge_and_tenants_keep_the_rule(backend: Backend) -> None:
    async def main() -> None:
        store = backend.open()
        try:
            await store.save(holder("resp_new", ("msg_s", "kept"), created_at=2_000))
            await store.save(holder("resp_old", ("msg_s", "purged"), created_at=1_000))
            await store.save(holder("resp_b", ("msg_s", "B's"), tenant="b"))
            assert await text_of(store, "msg_s") == "purged"  # stored last
            assert await store.purge(1_500) == 1
            assert await text_of(store, "msg_s") == "kept"
            assert await text_of(store, "msg_s", "b") == "B's"
            assert await store.delete("resp_new") is True
            assert await store.find_item("msg_s") is None
            assert await text_of(store, "msg_s", "b") == "B's"
        finally:
            await store.close()

    asyncio.run(main())


SCHEMA_2_COPIES = (
    holder("resp_2", ("msg_s", "two"), created_at=2),
    holder("resp_1", ("msg_s", "one"), created_at=1),
)
"""Two copies of one item id in a schema-2 store, whose index names only the newest holder."""


async def _falls_back_after_upgrade(store: Any) -> None:
    """The upgraded index holds both copies: the newest first, the older once it is gone."""
    try:
        assert await text_of(store, "msg_s") == "two"
        assert await store.delete("resp_2") is True
        assert await text_of(store, "msg_s") == "one"
    finally:
        await store.close()


def test_sqlite_schema_2_files_are_upgraded(tmp_path: Path) -> None:
    """A file of the previous schema (one indexed holder per item id): every copy is indexed
    again, the newest response's first."""
    path = tmp_path / "v2.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute(
            """CREATE TABLE outform_responses (
                id TEXT PRIMARY KEY, created_at INTEGER NOT NULL, previous_response_id TEXT,
                response TEXT NOT NULL, input_items TEXT NOT NULL, conversation TEXT NOT NULL,
                stored_at REAL NOT NULL DEFAULT 0, status TEXT NOT NULL DEFAULT 'completed',
                tenant TEXT NOT NULL DEFAULT '', worker TEXT)"""
        )
        conn.execute(
            "CREATE TABLE outform_items (tenant TEXT NOT NULL, id TEXT NOT NULL,"
            " response_id TEXT NOT NULL, PRIMARY KEY (tenant, id)) WITHOUT ROWID"
        )
        conn.execute("CREATE TABLE outform_workers (id TEXT PRIMARY KEY, heartbeat_at REAL)")
        conn.execute("CREATE TABLE outform_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
        conn.execute("INSERT INTO outform_meta VALUES ('tenant_salt', 'ab')")
        for old in SCHEMA_2_COPIES:
            conn.execute(
                "INSERT INTO outform_responses (id, created_at, response, input_items,"
                " conversation, stored_at) VALUES (?, ?, ?, ?, ?, ?)",
                (
                    old.id,
                    old.created_at,
                    orjson.dumps(old.response).decode(),
                    orjson.dumps(old.input_items).decode(),
                    orjson.dumps(old.conversation).decode(),
                    old.created_at,
                ),
            )
        conn.execute("INSERT INTO outform_items VALUES ('', 'msg_s', 'resp_2')")
        conn.execute("PRAGMA user_version = 2")
    conn.close()

    async def main() -> None:
        await _falls_back_after_upgrade(SqliteStore(path))

    asyncio.run(main())


def test_postgres_schema_2_tables_are_upgraded(postgres_server: PostgresServer) -> None:
    import psycopg

    from outform.gateway.postgres_store import PostgresStore

    schema, dsn = postgres_server.schema()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            """CREATE TABLE outform_responses (
                id text PRIMARY KEY, created_at bigint NOT NULL, previous_response_id text,
                response json NOT NULL, input_items json NOT NULL, conversation json NOT NULL,
                stored_at timestamptz NOT NULL DEFAULT now(),
                status text NOT NULL DEFAULT 'completed', tenant text NOT NULL DEFAULT '',
                worker text)"""
        )
        conn.execute(
            "CREATE TABLE outform_items (tenant text NOT NULL, id text NOT NULL,"
            " response_id text NOT NULL, PRIMARY KEY (tenant, id))"
        )
        conn.execute(
            "CREATE TABLE outform_workers (id text PRIMARY KEY, heartbeat_at timestamptz NOT NULL,"
            " place text NOT NULL DEFAULT '', pid integer NOT NULL DEFAULT 0)"
        )
        conn.execute("CREATE TABLE outform_meta (name text PRIMARY KEY, value text NOT NULL)")
        conn.execute(
            "INSERT INTO outform_meta VALUES ('tenant_salt', 'ab'), ('schema_version', '2')"
        )
        for old in SCHEMA_2_COPIES:
            conn.execute(
                "INSERT INTO outform_responses (id, created_at, response, input_items,"
                " conversation) VALUES (%s, %s, %s, %s, %s)",
                (
                    old.id,
                    old.created_at,
                    orjson.dumps(old.response).decode(),
                    orjson.dumps(old.input_items).decode(),
                    orjson.dumps(old.conversation).decode(),
                ),
            )
        conn.execute("INSERT INTO outform_items VALUES ('', 'msg_s', 'resp_2')")

    async def main() -> None:
        await _falls_back_after_upgrade(PostgresStore(dsn))

    try:
        asyncio.run(main())
    finally:
        postgres_server.drop(schema)


def test_reused_ids_through_the_sdk(gw: Harness) -> None:
    """The trial's sequence: the reference follows the newest existing copy, and deleting it
    falls back to the copy an existing response still holds (listed by its input_items)."""
    replies = ("one", "two", "three", "four")  # the fifth request never reaches it
    for reply in replies:
        gw.backend.json(chat_completion(content=reply))
    said: Any = [{"type": "message", "role": "user", "id": "msg_s", "content": "Alice"}]
    first = gw.client.responses.create(model="m", input=said)
    said = [{"type": "message", "role": "user", "id": "msg_s", "content": "Mallory"}]
    second = gw.client.responses.create(model="m", input=said)
    reference: Any = [{"type": "item_reference", "id": "msg_s"}]
    gw.client.responses.create(model="m", input=reference, store=False)  # keeps no copy
    assert gw.sent()["messages"] == [{"role": "user", "content": "Mallory"}]
    gw.client.responses.delete(second.id)
    gw.client.responses.create(model="m", input=reference, store=False)
    assert gw.sent()["messages"] == [{"role": "user", "content": "Alice"}]
    [listed] = gw.client.responses.input_items.list(first.id).data
    assert listed.id == "msg_s"
    gw.client.responses.delete(first.id)
    with pytest.raises(openai.NotFoundError):
        gw.client.responses.create(model="m", input=reference, store=False)
    assert len(gw.backend.requests) == 4
