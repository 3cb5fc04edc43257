"""Choosing a response store from one string, and what every store shares.

`open_store(spec)` turns the `[gateway] store` setting (or `--store`) into a store:

    memory                      MemoryStore: one process, lost on restart (tests)
    sqlite                      SqliteStore on ./outform-responses.sqlite (the default)
    sqlite:PATH                 SqliteStore on PATH (also sqlite:///relative, sqlite:////absolute)
    sqlite:PATH?synchronous=full   the same, every commit synced (survives power loss)
    PATH.sqlite / .sqlite3 / .db   the same, spelled as a bare path
    postgres:DSN, postgresql:DSN   PostgresStore; DSN is a libpq URL or "host=... dbname=..."
    postgres://..., postgresql://...

The store modules are imported only when chosen: psycopg is an optional dependency
(`pip install 'outform[postgres]'`).

Records are stored as JSON text written by orjson (one encoder for SQLite and PostgreSQL), and
a DSN is only ever shown with its password replaced by `***`. `Budget` bounds the bytes of
records on their way to a database (back-pressure instead of an unbounded backlog), and
`check_store` is what `outform serve` runs before it listens.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import threading
from collections import deque
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qsl

import orjson

from outform.errors import ConfigError, UsageError
from outform.gateway.store import MemoryStore, ResponseStore, StoredResponse

DEFAULT_SQLITE_PATH = "outform-responses.sqlite"
FORMS = (
    '"memory"',
    '"sqlite" (./outform-responses.sqlite) or "sqlite:PATH"',
    '"postgres:DSN" or a "postgresql://user@host/db" URL',
)
_SQLITE_SUFFIXES = (".sqlite", ".sqlite3", ".db")

Row = tuple[str, int, str | None, str, str, str, str, str, str | None]
"""id, created_at, previous_response_id, response, input_items, conversation (JSON text),
status, tenant, worker."""


def open_store(spec: str, *, base_dir: str | Path | None = None) -> ResponseStore:
    """The store `spec` names. Relative SQLite paths are resolved against `base_dir` (the
    directory of the config file that set them) or else the working directory."""
    text = spec.strip()
    lowered = text.lower()
    if lowered == "memory":
        return MemoryStore()
    if lowered == "sqlite" or lowered.startswith("sqlite:"):
        path, options = _sqlite_options(text[len("sqlite:") :] or DEFAULT_SQLITE_PATH)
        return _sqlite(_sqlite_path(path), base_dir, **options)
    if lowered.startswith(("postgres://", "postgresql://")):
        return _postgres(text)
    for scheme in ("postgresql:", "postgres:"):
        if lowered == scheme[:-1] or lowered.startswith(scheme):
            return _postgres(text[len(scheme) :].strip())
    if lowered.endswith(_SQLITE_SUFFIXES) and "://" not in text:
        return _sqlite(text, base_dir)
    raise ConfigError(
        f"unknown response store {redact_dsn(text)!r}",
        where="[gateway] store",
        fix="use one of " + "; ".join(FORMS),
    )


def check_store(spec: str, *, base_dir: str | Path | None = None) -> None:
    """Open the store `spec` names, prove it usable (reachable, tables in place, a write
    committed) and close it: `outform serve` calls this before anything listens, so a bad
    or unreachable store is one configuration error (exit 2), not a failure per request."""

    async def probe() -> None:
        store = open_store(spec, base_dir=base_dir)
        try:
            await store.check()
        finally:
            await store.close()

    asyncio.run(probe())


def _sqlite_path(rest: str) -> str:
    # sqlite:///relative.db and sqlite:////absolute.db, as SQLAlchemy spells them.
    return rest[3:] if rest.startswith("///") else rest


def _sqlite_options(text: str) -> tuple[str, dict[str, Any]]:
    """`PATH?synchronous=full`: the one option a SQLite store takes from its string."""
    path, _, query = text.partition("?")
    options: dict[str, Any] = {}
    for key, value in parse_qsl(query, keep_blank_values=True):
        if key != "synchronous" or value.upper() not in ("NORMAL", "FULL"):
            raise ConfigError(
                f"unknown SQLite store option {key}={value!r}",
                where="[gateway] store",
                fix="the only option is ?synchronous=normal (the default) or ?synchronous=full",
            )
        options["synchronous"] = _synchronous(value)
    return path, options


def _synchronous(value: str) -> Literal["NORMAL", "FULL"]:
    return "FULL" if value.upper() == "FULL" else "NORMAL"


def _sqlite(path: str, base_dir: str | Path | None, **options: Any) -> ResponseStore:
    from outform.gateway.sqlite_store import SqliteStore

    if path == ":memory:":
        return SqliteStore(path, **options)
    resolved = Path(path).expanduser()
    if not resolved.is_absolute() and base_dir is not None:
        resolved = Path(base_dir) / resolved
    return SqliteStore(resolved, **options)


def _postgres(dsn: str) -> ResponseStore:
    try:
        from outform.gateway.postgres_store import PostgresStore
    except ImportError as exc:  # psycopg is the optional `postgres` extra
        raise ConfigError(
            f"the PostgreSQL response store needs psycopg, which is not installed ({exc})",
            where="[gateway] store",
            fix="pip install 'outform[postgres]', or use a sqlite: store",
        ) from None
    return PostgresStore(dsn)


# -- DSNs without passwords ------------------------------------------------------------------

_URL_PASSWORD = re.compile(r"(?P<head>[a-z][a-z0-9+.-]*://[^:/@?#]*):[^@/?#]*@", re.IGNORECASE)
_KEY_PASSWORD = re.compile(
    r"(?P<head>\bpassword\s*=\s*)(?:'(?:[^'\\]|\\.)*'|[^\s&]+)", re.IGNORECASE
)


def redact_dsn(text: str) -> str:
    """`text` with any DSN password replaced by `***` (URL userinfo, `password=` keys)."""
    text = _URL_PASSWORD.sub(r"\g<head>:***@", text)
    return _KEY_PASSWORD.sub(r"\g<head>***", text)


# -- JSON ------------------------------------------------------------------------------------


def _default(value: Any) -> Any:
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, Sequence) and not isinstance(value, str | bytes | bytearray):
        return list(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


def encode_json(value: Any, *, record_id: str, field: str) -> str:
    try:
        return orjson.dumps(value, default=_default).decode()
    except orjson.JSONEncodeError as exc:
        raise UsageError(
            f"response {record_id}: its {field} cannot be stored as JSON ({exc})",
            where=f"StoredResponse.{field}",
            fix="store only JSON values: str keys, no NaN, no bytes, valid UTF-8",
        ) from None


def encode_record(record: StoredResponse) -> Row:
    """The record as one row of JSON text, or a UsageError naming the field that is not JSON.
    A finished record has no worker: nobody runs it any more."""
    return (
        record.id,
        int(record.created_at),
        record.previous_response_id,
        encode_json(record.response, record_id=record.id, field="response"),
        encode_json(record.input_items, record_id=record.id, field="input_items"),
        encode_json(record.conversation, record_id=record.id, field="conversation"),
        record.status,
        record.tenant,
        None if record.finished else record.worker,
    )


def row_bytes(row: Row) -> int:
    """Roughly what a row weighs in memory until it is written (its JSON texts)."""
    return len(row[3]) + len(row[4]) + len(row[5]) + 256


def decode_record(response_id: str, row: Sequence[Any]) -> StoredResponse:
    """A record from its row: created_at, previous_response_id, the three JSON texts, tenant
    and worker."""
    created_at, previous_response_id, response, input_items, conversation, tenant, worker = row
    return StoredResponse(
        id=response_id,
        created_at=int(created_at),
        response=orjson.loads(response),
        input_items=orjson.loads(input_items),
        conversation=orjson.loads(conversation),
        previous_response_id=previous_response_id,
        tenant=tenant,
        worker=worker,
    )


# -- back-pressure ---------------------------------------------------------------------------


class Budget:
    """Bytes of records on their way to the database. A save that would go over `limit`
    waits until earlier ones are written: a bounded queue, so a slow disk slows clients down
    instead of growing a backlog in memory. A record larger than the whole budget goes alone.
    Released from any thread (the SQLite worker), awaited from event loops."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self._lock = threading.Lock()
        self._waiters: deque[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = deque()

    async def acquire(self, size: int) -> int:
        """Wait for room for `size` bytes; returns what to `release` later."""
        size = min(size, self.limit)
        loop = asyncio.get_running_loop()
        while True:
            with self._lock:
                if self.used == 0 or self.used + size <= self.limit:
                    self.used += size
                    return size
                waiter: asyncio.Future[None] = loop.create_future()
                self._waiters.append((loop, waiter))
            await waiter

    def release(self, size: int) -> None:
        with self._lock:
            self.used -= size
            waiters = list(self._waiters)
            self._waiters.clear()
        for loop, waiter in waiters:
            with contextlib.suppress(RuntimeError):  # that loop closed: nobody waits there
                loop.call_soon_threadsafe(_wake, waiter)


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)
