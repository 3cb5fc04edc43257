"""Responses in PostgreSQL: for several gateway processes or machines behind a load balancer.

Every operation is one autocommit statement on a pooled connection (psycopg 3 async,
`psycopg_pool.AsyncConnectionPool`), so `save` returns once the row (and its item index
entries, in the same statement) is committed and every gateway process sees it from then on:
no state that matters lives in the process. The tables are created or upgraded on first use
(under an advisory lock, so processes starting together do not race; the schema version is
kept in `outform_meta`), and `save` is an upsert. `update` (a response's next or final
state) and a cancellation are both conditional updates of an unfinished row, so whichever
commits first wins, in any process.

The JSON columns are `json`, not `jsonb`: `json` keeps the text exactly as the gateway served
it (key order included), accepts every string a model can produce (`jsonb` rejects `\\u0000`),
and costs no conversion on write. Nothing queries inside the documents; the columns that are
queried (id, created_at, previous_response_id) are plain columns with indexes.

Failures become StoreErrors that name the server (host, port, database, user), never the
password.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from typing import Any

import orjson
import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from outform.errors import ConfigError, StoreError, UsageError
from outform.gateway.store import (
    NO_TENANT,
    STALE_AFTER,
    UNFINISHED,
    StoredResponse,
    check_storable,
    settle,
    storable_id,
)
from outform.gateway.stores import Budget, decode_record, encode_record, redact_dsn, row_bytes

SCHEMA_VERSION = 3
TABLE = "outform_responses"
ITEMS = "outform_items"
WORKERS = "outform_workers"
META = "outform_meta"
_UNFINISHED = "('" + "', '".join(sorted(UNFINISHED)) + "')"
SCHEMA = (
    f"""CREATE TABLE IF NOT EXISTS {TABLE} (
        id text PRIMARY KEY,
        created_at bigint NOT NULL,
        previous_response_id text,
        response json NOT NULL,
        input_items json NOT NULL,
        conversation json NOT NULL,
        stored_at timestamptz NOT NULL DEFAULT now(),
        status text NOT NULL DEFAULT 'completed',
        tenant text NOT NULL DEFAULT '',
        worker text
    )""",
    # from schema version 1 (no-ops on a new table):
    f"ALTER TABLE {TABLE} ADD COLUMN IF NOT EXISTS status text NOT NULL DEFAULT 'completed'",
    f"ALTER TABLE {TABLE} ADD COLUMN IF NOT EXISTS tenant text NOT NULL DEFAULT ''",
    f"ALTER TABLE {TABLE} ADD COLUMN IF NOT EXISTS worker text",
    f"UPDATE {TABLE} SET status = response->>'status'"
    " WHERE response->>'status' IS NOT NULL AND status <> response->>'status'",
    f"CREATE INDEX IF NOT EXISTS {TABLE}_created_at ON {TABLE} (created_at)",
    f"CREATE INDEX IF NOT EXISTS {TABLE}_previous ON {TABLE} (previous_response_id)"
    " WHERE previous_response_id IS NOT NULL",
    # every holder of an item id (clients reuse ids), in the order they stored it (see
    # store.py, the rules). Schema 2 kept one holder per id: rebuilt from the responses (only
    # upgrades run these statements, so the table dropped is always of an older schema).
    f"DROP TABLE IF EXISTS {ITEMS}",
    f"""CREATE TABLE {ITEMS} (
        tenant text NOT NULL,
        id text NOT NULL,
        response_id text NOT NULL,
        seq bigint GENERATED ALWAYS AS IDENTITY,
        PRIMARY KEY (tenant, id, response_id)
    )""",
    f"CREATE INDEX {ITEMS}_newest ON {ITEMS} (tenant, id, seq)",
    f"CREATE INDEX {ITEMS}_response ON {ITEMS} (response_id)",
    f"INSERT INTO {ITEMS} (tenant, id, response_id)"
    " SELECT tenant, item_id, response_id FROM ("
    + " UNION ALL ".join(
        "SELECT r.tenant, j.value->>'id' AS item_id, r.id AS response_id, r.created_at,"
        f" r.stored_at FROM {TABLE} r, json_array_elements({field}) j"
        " WHERE j.value->>'id' IS NOT NULL"
        for field in ("r.input_items", "r.response->'output'")
    )
    + ") old ORDER BY created_at, stored_at ON CONFLICT DO NOTHING",
    f"""CREATE TABLE IF NOT EXISTS {WORKERS} (
        id text PRIMARY KEY,
        heartbeat_at timestamptz NOT NULL,
        place text NOT NULL DEFAULT '',
        pid integer NOT NULL DEFAULT 0
    )""",
    f"CREATE TABLE IF NOT EXISTS {META} (name text PRIMARY KEY, value text NOT NULL)",
)
_SCHEMA_LOCK = 0x6F7574666F726D  # pg_advisory_xact_lock key: "outform"
_SAVE = (
    f"WITH saved AS (INSERT INTO {TABLE} (id, created_at, previous_response_id, response,"
    " input_items, conversation, status, tenant, worker)"
    " VALUES (%s, %s, %s, %s::json, %s::json, %s::json, %s, %s, %s)"
    " ON CONFLICT (id) DO UPDATE SET created_at = EXCLUDED.created_at,"
    " previous_response_id = EXCLUDED.previous_response_id, response = EXCLUDED.response,"
    " input_items = EXCLUDED.input_items, conversation = EXCLUDED.conversation,"
    " status = EXCLUDED.status, tenant = EXCLUDED.tenant, worker = EXCLUDED.worker,"
    " stored_at = now() RETURNING id, tenant),"
    " item AS (SELECT unnest(%s::text[]) AS id),"
    f" unindexed AS (DELETE FROM {ITEMS} i USING saved WHERE i.response_id = saved.id"
    "  AND (i.tenant <> saved.tenant OR i.id NOT IN (SELECT id FROM item)))"
    f" INSERT INTO {ITEMS} (tenant, id, response_id)"
    " SELECT saved.tenant, item.id, saved.id FROM saved, item"
    " ON CONFLICT (tenant, id, response_id) DO NOTHING"
)
_UPDATE = (
    f"WITH saved AS (UPDATE {TABLE} SET created_at = %s, previous_response_id = %s,"
    " response = %s::json, input_items = %s::json, conversation = %s::json, status = %s,"
    f" worker = %s, stored_at = now() WHERE id = %s AND tenant = %s AND status IN {_UNFINISHED}"
    " RETURNING id, tenant),"
    " item AS (SELECT unnest(%s::text[]) AS id),"
    f" unindexed AS (DELETE FROM {ITEMS} i USING saved WHERE i.response_id = saved.id"
    "  AND (i.tenant <> saved.tenant OR i.id NOT IN (SELECT id FROM item))),"
    f" indexed AS (INSERT INTO {ITEMS} (tenant, id, response_id)"
    " SELECT saved.tenant, item.id, saved.id FROM saved, item"
    " ON CONFLICT (tenant, id, response_id) DO NOTHING)"
    " SELECT count(*) FROM saved"
)
_SELECT = (
    "SELECT r.created_at, r.previous_response_id, r.response::text, r.input_items::text,"
    " r.conversation::text, r.tenant, r.worker,"
    " coalesce(w.heartbeat_at > now() - make_interval(secs => %s), false)"
    f" FROM {TABLE} r LEFT JOIN {WORKERS} w ON w.id = r.worker"
    " WHERE r.id = %s AND r.tenant = %s"
)
_SELECT_ITEM = (
    f"SELECT r.id, r.response::text, r.input_items::text FROM {ITEMS} i JOIN {TABLE} r"
    " ON r.id = i.response_id AND r.tenant = i.tenant WHERE i.tenant = %s AND i.id = %s"
    " ORDER BY i.seq DESC LIMIT 1"
)
_DELETE = (
    f"WITH gone AS (DELETE FROM {TABLE} WHERE id = %s AND tenant = %s RETURNING id),"
    f" unindexed AS (DELETE FROM {ITEMS} WHERE response_id IN (SELECT id FROM gone))"
    " SELECT count(*) FROM gone"
)
_HEARTBEAT = (
    f"INSERT INTO {WORKERS} (id, heartbeat_at, place, pid) VALUES (%s, now(), %s, %s)"
    " ON CONFLICT (id) DO UPDATE SET heartbeat_at = now()"
)

Pool = AsyncConnectionPool[psycopg.AsyncConnection[tuple[Any, ...]]]


class PostgresStore:
    """Responses in a PostgreSQL table, shared by every gateway process that uses the DSN.

    The pool is opened on first use, in the event loop that uses it; use one store per loop.
    """

    def __init__(
        self,
        dsn: str,
        *,
        min_size: int = 1,
        max_size: int = 10,
        timeout: float = 10.0,
        max_pending_bytes: int = 64 * 1024 * 1024,
    ) -> None:
        """`timeout`: seconds to wait for a connection (first connect, or a free one).
        `max_pending_bytes`: records on their way to the server, at most (beyond it `save`
        waits: back-pressure)."""
        self._dsn = dsn
        self._where = describe_dsn(dsn)
        self._min_size = min_size
        self._max_size = max_size
        self._timeout = timeout
        self._budget = Budget(max_pending_bytes)
        self._pool: Pool | None = None
        self._opening = asyncio.Lock()
        self._closed = False

    @property
    def where(self) -> str:
        """The server as errors name it: user@host:port/dbname, without the password."""
        return self._where

    # -- the protocol ------------------------------------------------------------------------

    async def check(self) -> None:
        """Connect (creating or upgrading the tables) and commit a write."""
        async with self._connection("checking the store") as conn:
            await conn.execute(
                f"INSERT INTO {META} (name, value) VALUES ('checked_at', now()::text)"
                " ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value"
            )

    async def tenant_salt(self) -> bytes:
        async with self._connection("reading the tenant salt") as conn:
            cursor = await conn.execute(f"SELECT value FROM {META} WHERE name = 'tenant_salt'")
            row = await cursor.fetchone()
        if row is None:
            raise StoreError(
                f"PostgreSQL response store at {self._where}: {META} has no tenant_salt",
                where="[gateway] store",
                fix=f"the table {META} was altered by hand; restore its tenant_salt row",
            )
        return bytes.fromhex(str(row[0]))

    async def save(self, record: StoredResponse) -> None:
        check_storable(record)
        row = encode_record(record)
        held = await self._budget.acquire(row_bytes(row))
        try:
            async with self._connection("saving a response") as conn:
                await conn.execute(_SAVE, (*row, record.item_ids()))
        finally:
            self._budget.release(held)

    async def update(self, record: StoredResponse) -> bool:
        check_storable(record)
        row = encode_record(record)
        id_, created_at, previous, response, input_items, conversation, status, tenant, worker = row
        values = (created_at, previous, response, input_items, conversation, status, worker)
        held = await self._budget.acquire(row_bytes(row))
        try:
            async with self._connection("saving a response") as conn:
                cursor = await conn.execute(_UPDATE, (*values, id_, tenant, record.item_ids()))
                found = await cursor.fetchone()
        finally:
            self._budget.release(held)
        return found is not None and found[0] > 0

    async def load(self, response_id: str, tenant: str = NO_TENANT) -> StoredResponse | None:
        if not storable_id(response_id):
            return None  # never stored: see store.storable_id
        async with self._connection("loading a response") as conn:
            cursor = await conn.execute(_SELECT, (STALE_AFTER, response_id, tenant))
            row = await cursor.fetchone()
        if row is None:
            return None
        return settle(decode_record(response_id, row[:7]), bool(row[7]))

    async def delete(self, response_id: str, tenant: str = NO_TENANT) -> bool:
        if not storable_id(response_id):
            return False  # never stored: see store.storable_id
        async with self._connection("deleting a response") as conn:
            cursor = await conn.execute(_DELETE, (response_id, tenant))
            row = await cursor.fetchone()
        return row is not None and row[0] > 0

    async def find_item(self, item_id: str, tenant: str = NO_TENANT) -> dict[str, Any] | None:
        if not storable_id(item_id):
            return None  # never stored: see store.storable_id
        async with self._connection("finding an item") as conn:
            cursor = await conn.execute(_SELECT_ITEM, (tenant, item_id))
            row = await cursor.fetchone()
        if row is None:
            return None
        owner = StoredResponse(row[0], 0, orjson.loads(row[1]), orjson.loads(row[2]))
        return owner.find_item(item_id)

    async def heartbeat(self, worker: str, place: str = "", pid: int = 0) -> None:
        async with self._connection("recording a heartbeat") as conn:
            await conn.execute(_HEARTBEAT, (worker, place, pid))

    async def workers(self, place: str) -> list[tuple[str, int]]:
        async with self._connection("reading workers") as conn:
            cursor = await conn.execute(f"SELECT id, pid FROM {WORKERS} WHERE place = %s", (place,))
            rows = await cursor.fetchall()
        return [(str(row[0]), int(row[1])) for row in rows]

    async def retire(self, worker: str) -> None:
        async with self._connection("retiring a worker") as conn:
            await conn.execute(f"DELETE FROM {WORKERS} WHERE id = %s", (worker,))

    async def unfinished(self, ids: Iterable[str]) -> set[str]:
        wanted = [i for i in ids if storable_id(i)]
        if not wanted:
            return set()
        async with self._connection("reading statuses") as conn:
            cursor = await conn.execute(
                f"SELECT id FROM {TABLE} WHERE id = ANY(%s) AND status IN {_UNFINISHED}",
                (wanted,),
            )
            rows = await cursor.fetchall()
        return {str(row[0]) for row in rows}

    async def close(self) -> None:
        self._closed = True
        if self._pool is not None:
            pool, self._pool = self._pool, None
            await pool.close()

    # -- beyond the protocol -----------------------------------------------------------------

    async def flush(self) -> None:
        """Every save is committed before it returns: nothing to wait for."""
        return

    async def purge(self, before: int) -> int:
        """Delete the responses created before `before` (Unix seconds); how many went."""
        async with self._connection("purging responses") as conn, conn.transaction():
            await conn.execute(
                f"DELETE FROM {ITEMS} WHERE response_id IN"
                f" (SELECT id FROM {TABLE} WHERE created_at < %s)",
                (before,),
            )
            cursor = await conn.execute(f"DELETE FROM {TABLE} WHERE created_at < %s", (before,))
            await conn.execute(
                f"DELETE FROM {WORKERS} WHERE heartbeat_at < now() - interval '1 day'"
            )
        return cursor.rowcount

    # -- connections -------------------------------------------------------------------------

    @asynccontextmanager
    async def _connection(self, action: str) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        pool = await self._open()
        try:
            async with pool.connection() as conn:
                yield conn
        except PoolTimeout:
            raise StoreError(
                f"no PostgreSQL connection to {self._where} within {self._timeout:g} s "
                f"while {action}",
                where="[gateway] store",
                fix="check that the server is up and reachable; if it is busy, raise max_size",
            ) from None
        except psycopg.Error as exc:
            raise self._error(f"{action} failed", exc) from None

    async def _open(self) -> Pool:
        if self._closed:
            raise UsageError(f"the PostgreSQL response store {self._where} is closed")
        if self._pool is not None:
            return self._pool
        async with self._opening:
            if self._pool is None:
                await self._create_schema()
                pool: Pool = AsyncConnectionPool(
                    self._dsn,
                    min_size=self._min_size,
                    max_size=self._max_size,
                    kwargs={"autocommit": True},
                    check=AsyncConnectionPool.check_connection,
                    timeout=self._timeout,
                    name="outform-responses",
                    open=False,
                )
                try:
                    await pool.open(wait=True, timeout=self._timeout)
                except PoolTimeout:
                    await pool.close()
                    raise self._unreachable("the pool could not connect") from None
                self._pool = pool
        return self._pool

    async def _create_schema(self) -> None:
        timeout = max(2, round(self._timeout))
        try:
            conn = await psycopg.AsyncConnection.connect(
                self._dsn, autocommit=True, connect_timeout=timeout
            )
        except psycopg.Error as exc:
            raise self._unreachable(_scrub(exc, self._dsn)) from None
        try:
            if await _schema_version(conn) == SCHEMA_VERSION:
                return  # DDL needs rights that later use does not
            async with conn.transaction():
                await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
                version = await _schema_version(conn)
                if version > SCHEMA_VERSION:
                    raise StoreError(
                        f"the PostgreSQL response store at {self._where} has schema version "
                        f"{version}; this outform knows version {SCHEMA_VERSION}",
                        where="[gateway] store",
                        fix="upgrade outform, or point the store at another database or schema",
                    )
                if version < SCHEMA_VERSION:
                    for statement in SCHEMA:
                        await conn.execute(statement)
                    await conn.execute(
                        f"INSERT INTO {META} (name, value) VALUES ('tenant_salt', %s)"
                        " ON CONFLICT (name) DO NOTHING",
                        (secrets.token_hex(32),),
                    )
                    await conn.execute(
                        f"INSERT INTO {META} (name, value) VALUES ('schema_version', %s)"
                        " ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value",
                        (str(SCHEMA_VERSION),),
                    )
        except psycopg.Error as exc:
            raise StoreError(
                f"PostgreSQL response store at {self._where}: creating the tables "
                f"{TABLE}, {ITEMS}, {WORKERS} and {META} failed: {_scrub(exc, self._dsn)}",
                where="[gateway] store",
                fix="grant the user CREATE on the schema, or create the tables once as another "
                "user (see docs/stores.md) and grant SELECT, INSERT, UPDATE, DELETE on them",
            ) from None
        finally:
            await conn.close()

    def _unreachable(self, reason: str) -> StoreError:
        return StoreError(
            f"cannot connect to the PostgreSQL response store at {self._where}: {reason}",
            where="[gateway] store",
            fix="check host, port, database name, user and password, and that the server "
            "runs and accepts connections from this machine",
        )

    def _error(self, what: str, exc: psycopg.Error) -> StoreError:
        return StoreError(
            f"PostgreSQL response store at {self._where}: {what}: {_scrub(exc, self._dsn)}",
            where="[gateway] store",
            fix="check the server's log; the store retries on the next request",
        )


async def _schema_version(conn: psycopg.AsyncConnection[Any]) -> int:
    """The version recorded in the meta table; 1 for a table of outform before it, 0 for none."""
    cursor = await conn.execute(
        "SELECT to_regclass(%s) IS NOT NULL, to_regclass(%s) IS NOT NULL", (TABLE, META)
    )
    row = await cursor.fetchone()
    if row is None or not row[0]:
        return 0
    if not row[1]:
        return 1
    cursor = await conn.execute(f"SELECT value FROM {META} WHERE name = 'schema_version'")
    found = await cursor.fetchone()
    return int(found[0]) if found is not None else 1


def describe_dsn(dsn: str) -> str:
    """user@host:port/dbname of a DSN (libpq defaults shown as such), without the password."""
    try:
        params = conninfo_to_dict(dsn)
    except psycopg.Error:
        raise ConfigError(
            f"not a valid PostgreSQL DSN: {redact_dsn(dsn)!r}",
            where="[gateway] store",
            fix="write postgres:postgresql://USER:PASSWORD@HOST:PORT/DATABASE, or "
            "postgres:host=HOST port=PORT dbname=DATABASE user=USER",
        ) from None
    host = str(params.get("hostaddr") or params.get("host") or "localhost (default)")
    port = str(params.get("port") or "5432")
    dbname = str(params.get("dbname") or "(default database)")
    user = params.get("user")
    return f"{user}@{host}:{port}/{dbname}" if user else f"{host}:{port}/{dbname}"


def _scrub(exc: BaseException, dsn: str) -> str:
    """The error's message without the password (libpq does not echo it; be sure anyway)."""
    message = redact_dsn(" ".join(str(exc).split()))  # libpq's lines, as one
    try:
        password = conninfo_to_dict(dsn).get("password")
    except psycopg.Error:
        password = None
    if password:
        message = message.replace(str(password), "***")
    return message
