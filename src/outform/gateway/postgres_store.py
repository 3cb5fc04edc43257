"""Responses in PostgreSQL: for several gateway processes or machines behind a load balancer.

Every operation is one autocommit statement on a pooled connection (psycopg 3 async,
`psycopg_pool.AsyncConnectionPool`), so `save` returns once the row is committed and every
gateway process sees it from then on: no state lives in the process. The table is created on
first use (`CREATE TABLE IF NOT EXISTS` under an advisory lock, so processes starting together
do not race), and `save` is an upsert.

The JSON columns are `json`, not `jsonb`: `json` keeps the text exactly as the gateway served
it (key order included), accepts every string a model can produce (`jsonb` rejects `\\u0000`),
and costs no conversion on write. Nothing queries inside the documents; the columns that are
queried (id, created_at, previous_response_id) are plain columns with indexes.

Failures become StoreErrors that name the server (host, port, database, user), never the
password.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from outform.errors import ConfigError, StoreError, UsageError
from outform.gateway.store import StoredResponse
from outform.gateway.stores import decode_record, encode_record, redact_dsn

TABLE = "outform_responses"
SCHEMA = (
    f"""CREATE TABLE IF NOT EXISTS {TABLE} (
        id text PRIMARY KEY,
        created_at bigint NOT NULL,
        previous_response_id text,
        response json NOT NULL,
        input_items json NOT NULL,
        conversation json NOT NULL,
        stored_at timestamptz NOT NULL DEFAULT now()
    )""",
    f"CREATE INDEX IF NOT EXISTS {TABLE}_created_at ON {TABLE} (created_at)",
    f"CREATE INDEX IF NOT EXISTS {TABLE}_previous ON {TABLE} (previous_response_id)"
    " WHERE previous_response_id IS NOT NULL",
)
_SCHEMA_LOCK = 0x6F7574666F726D  # pg_advisory_xact_lock key: "outform"
_UPSERT = (
    f"INSERT INTO {TABLE} (id, created_at, previous_response_id, response, input_items,"
    " conversation) VALUES (%s, %s, %s, %s::json, %s::json, %s::json)"
    " ON CONFLICT (id) DO UPDATE SET created_at = EXCLUDED.created_at,"
    " previous_response_id = EXCLUDED.previous_response_id, response = EXCLUDED.response,"
    " input_items = EXCLUDED.input_items, conversation = EXCLUDED.conversation,"
    " stored_at = now()"
)
_SELECT = (
    "SELECT created_at, previous_response_id, response::text, input_items::text,"
    f" conversation::text FROM {TABLE} WHERE id = %s"
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
    ) -> None:
        """`timeout`: seconds to wait for a connection (first connect, or a free one)."""
        self._dsn = dsn
        self._where = describe_dsn(dsn)
        self._min_size = min_size
        self._max_size = max_size
        self._timeout = timeout
        self._pool: Pool | None = None
        self._opening = asyncio.Lock()
        self._closed = False

    @property
    def where(self) -> str:
        """The server as errors name it: user@host:port/dbname, without the password."""
        return self._where

    # -- the protocol ------------------------------------------------------------------------

    async def save(self, record: StoredResponse) -> None:
        row = encode_record(record)
        async with self._connection("saving a response") as conn:
            await conn.execute(_UPSERT, row)

    async def load(self, response_id: str) -> StoredResponse | None:
        async with self._connection("loading a response") as conn:
            cursor = await conn.execute(_SELECT, (response_id,))
            row = await cursor.fetchone()
        return None if row is None else decode_record(response_id, row)

    async def delete(self, response_id: str) -> bool:
        async with self._connection("deleting a response") as conn:
            cursor = await conn.execute(f"DELETE FROM {TABLE} WHERE id = %s", (response_id,))
        return cursor.rowcount > 0

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
        async with self._connection("purging responses") as conn:
            cursor = await conn.execute(f"DELETE FROM {TABLE} WHERE created_at < %s", (before,))
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
            cursor = await conn.execute("SELECT to_regclass(%s) IS NOT NULL", (TABLE,))
            exists = await cursor.fetchone()
            if exists is None or not exists[0]:  # DDL needs rights that later use does not
                async with conn.transaction():
                    await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
                    for statement in SCHEMA:
                        await conn.execute(statement)
        except psycopg.Error as exc:
            raise StoreError(
                f"PostgreSQL response store at {self._where}: creating the table {TABLE} "
                f"failed: {_scrub(exc, self._dsn)}",
                where="[gateway] store",
                fix=f"grant the user CREATE on the schema, or create {TABLE} once as another "
                "user (see docs/stores.md) and grant SELECT, INSERT, UPDATE, DELETE on it",
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
    message = redact_dsn(str(exc).strip())
    try:
        password = conninfo_to_dict(dsn).get("password")
    except psycopg.Error:
        password = None
    if password:
        message = message.replace(str(password), "***")
    return message
