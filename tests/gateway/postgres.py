"""The store backends the gateway tests run on: memory, SQLite and PostgreSQL (a real server,
started by tests/postgres.py).

Loaded by the store and chain tests with `pytest_plugins = ["tests.gateway.postgres"]`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from outform.gateway.store import MemoryStore, ResponseStore

if TYPE_CHECKING:
    from tests.postgres import PostgresServer

pytest_plugins = ["tests.postgres"]
BACKENDS = ("memory", "sqlite", "postgres")


# -- the store backends ----------------------------------------------------------------------


@dataclass
class Backend:
    """One store backend under test: `open()` returns a new store on the same database (for
    memory, the same store: there is nothing to share or reopen)."""

    name: str
    open: Callable[[], ResponseStore]
    persistent: bool
    path: Path | None = None
    dsn: str | None = None

    def require_persistent(self) -> None:
        if not self.persistent:
            pytest.skip(f"{self.name}: nothing outlives the store or is shared between stores")


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
