"""The trace store backends the tests run on: SQLite in a temporary directory and PostgreSQL
on the throwaway server of tests/postgres.py (a schema per test)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from outform.trace.store import TraceStore

StoreFactory = Callable[..., TraceStore]


@pytest.fixture(params=["sqlite", "postgres"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreFactory]:
    """`make_store(**options)`: a new store object on this test's database."""
    made: list[TraceStore] = []
    cleanup = None
    if request.param == "sqlite":
        from outform.trace.sqlite_store import SqliteTraceStore

        def factory(**options: Any) -> TraceStore:
            made.append(SqliteTraceStore(tmp_path / "trace.sqlite", **options))
            return made[-1]

    else:
        from outform.trace.postgres_store import PostgresTraceStore
        from tests.postgres import PostgresServer

        server: PostgresServer = request.getfixturevalue("postgres_server")
        schema, dsn = server.schema()

        def factory(**options: Any) -> TraceStore:
            made.append(PostgresTraceStore(dsn, **options))
            return made[-1]

        def cleanup() -> None:
            server.drop(schema)

    try:
        yield factory
    finally:
        for store in made:
            store.close()
        if cleanup is not None:
            cleanup()
