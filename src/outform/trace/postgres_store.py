"""The trace store in PostgreSQL: one database for several processes (gateway workers, app
servers), with the tables and queries of the SQLite store.

Each process writes its own batches (one transaction each, on the recorder's connection);
counts and histograms are added to with upserts, so processes writing the same minute add up.
Tables are created on first use under an advisory lock. Errors name the server, never the
password (the DSN's password is also registered as a secret, so no sink can show it).
"""

from __future__ import annotations

import contextlib
from typing import Any, ClassVar

import psycopg
from psycopg.conninfo import conninfo_to_dict

from outform.errors import StoreError
from outform.gateway.postgres_store import describe_dsn
from outform.gateway.stores import redact_dsn
from outform.trace import redact
from outform.trace.store import TABLES, TraceStore

_SCHEMA_LOCK = 0x6F7574747263  # pg_advisory_xact_lock key: "outtrc"


class PostgresTraceStore(TraceStore):
    kind: ClassVar[str] = "postgres"
    TYPES: ClassVar[dict[str, str]] = {
        "real": "DOUBLE PRECISION",
        "big": "BIGINT",
        "serial": "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
        "without_rowid": "",
        "least": "LEAST",
        "greatest": "GREATEST",
    }

    def __init__(self, dsn: str, *, connect_timeout: float = 10.0, **options: Any) -> None:
        super().__init__(**options)
        self._dsn = dsn
        self._where = describe_dsn(dsn)
        self.connect_timeout = connect_timeout
        with contextlib.suppress(psycopg.Error):  # describe_dsn rejected a malformed DSN
            redact.register_secret(str(conninfo_to_dict(dsn).get("password") or ""))

    def describe(self) -> str:
        return f"postgres:{self._where}"

    def sql(self, text: str) -> str:
        return super().sql(text).replace("?", "%s")

    def _connect(self) -> psycopg.Connection[tuple[Any, ...]]:
        try:
            return psycopg.connect(self._dsn, connect_timeout=int(max(1, self.connect_timeout)))
        except psycopg.Error as exc:
            raise StoreError(
                f"cannot connect to the PostgreSQL trace store at {self._where}: "
                f"{redact_dsn(str(exc).strip())}",
                where=self.where,
                fix="check host, port, database, user and password, and that the server runs",
            ) from None

    def _begin(self, conn: Any) -> None:
        pass  # psycopg opens a transaction with the first statement

    def _lock_schema(self, conn: Any) -> None:
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))

    def _used_bytes(self, conn: Any) -> int:
        """The live rows' size: PostgreSQL does not give deleted rows' space back to the file
        system (autovacuum makes it reusable), so file sizes would never go down."""
        total = 0
        for table in TABLES:
            row = conn.execute(f"SELECT COALESCE(SUM(pg_column_size(t.*)), 0) FROM {table} t")
            total += int(row.fetchone()[0])
        conn.rollback()
        return total
