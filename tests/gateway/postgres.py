"""The store backends the gateway tests run on (the PostgreSQL server: tests/postgres.py).

Loaded by the store and chain tests with `pytest_plugins = ["tests.gateway.postgres"]`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from outform.gateway.store import MemoryStore, ResponseStore
from tests.postgres import ENV_DSN, PostgresServer, postgres_server

__all__ = ["BACKENDS", "ENV_DSN", "Backend", "PostgresServer", "backend", "postgres_server"]

BACKENDS = ("memory", "sqlite", "postgres")


@dataclass
class Backend:
    """One store backend under test: `open()` returns a new store on the same database (for
    memory, the same store: there is nothing to share or reopen)."""

    name: str
    open: Callable[[], ResponseStore]
    persistent: bool
    path: Path | None = None
    dsn: str | None = None


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    """The same tests on MemoryStore, SqliteStore and PostgresStore."""
    if request.param == "memory":
        memory = MemoryStore()
        yield Backend("memory", lambda: memory, persistent=False)
    elif request.param == "sqlite":
        from outform.gateway.sqlite_store import SqliteStore

        path = tmp_path / "responses.sqlite"
        yield Backend("sqlite", lambda: SqliteStore(path), persistent=True, path=path)
    else:
        server: PostgresServer = request.getfixturevalue("postgres_server")
        from outform.gateway.postgres_store import PostgresStore

        schema, dsn = server.schema()
        try:
            yield Backend("postgres", lambda: PostgresStore(dsn), persistent=True, dsn=dsn)
        finally:
            server.drop(schema)
