"""The manifest in PostgreSQL: for jobs resumed from another machine, or watched from many.

The same tables and queries as SQLite (manifest.py). One connection per manifest, in
autocommit mode, with explicit transactions. A job's lock is a session advisory lock on that
connection, so it goes when the process dies or its connection drops; for the same reason a
lost connection is not re-opened behind the runner's back: the job stops with a StoreError,
and `resume` carries it on. The tables are created on first use under a transaction-level
advisory lock, so processes starting together do not race, and only when missing, so a user
without CREATE rights can use tables made once by another.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict

from outform.batch.manifest import TABLES, Manifest, schema
from outform.errors import ConfigError, StoreError, UsageError
from outform.gateway.postgres_store import describe_dsn

_SCHEMA_LOCK = 0x6F7574666F726E  # pg_advisory_xact_lock key while creating the tables
_WHERE = "manifest"


def _sql(text: str) -> str:
    return text.replace("?", "%s")


class _Transaction:
    def __init__(self, cursor: psycopg.Cursor[tuple[Any, ...]]) -> None:
        self.cursor = cursor

    def execute(self, sql: str, args: Sequence[Any] = ()) -> int:
        self.cursor.execute(_sql(sql), args)
        return self.cursor.rowcount

    def executemany(self, sql: str, args: Sequence[Sequence[Any]]) -> int:
        self.cursor.executemany(_sql(sql), args)
        return self.cursor.rowcount

    def fetch(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self.cursor.execute(_sql(sql), args).fetchall()


class PostgresDatabase:
    def __init__(self, dsn: str, *, timeout: float = 10.0) -> None:
        self.where = describe(dsn)
        self.files: tuple[Path, ...] = ()  # on a server: no file a job could overwrite
        self._dsn = dsn
        try:
            self._conn = psycopg.connect(
                dsn, autocommit=True, connect_timeout=max(2, round(timeout))
            )
        except psycopg.Error as exc:
            raise StoreError(
                f"cannot connect to the PostgreSQL batch manifest at {self.where}: "
                f"{self._scrub(exc)}",
                where=_WHERE,
                fix="check host, port, database, user and password, and that the server runs "
                "and accepts connections from this machine",
            ) from None
        self._create_tables()

    def _create_tables(self) -> None:
        try:
            present = self._conn.execute(
                "SELECT count(*) FROM unnest(%s::text[]) AS t WHERE to_regclass(t) IS NOT NULL",
                (list(TABLES),),
            ).fetchone()
            if present is not None and present[0] == len(TABLES):
                return
            with self._conn.transaction():
                self._conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
                for statement in schema(bytes_type="BYTEA", float_type="DOUBLE PRECISION"):
                    self._conn.execute(statement)
        except psycopg.Error as exc:
            raise StoreError(
                f"PostgreSQL batch manifest at {self.where}: creating the tables failed: "
                f"{self._scrub(exc)}",
                where=_WHERE,
                fix="grant the user CREATE on the schema, or create the tables once as another "
                "user (docs/batch.md) and grant SELECT, INSERT, UPDATE, DELETE on them",
            ) from None

    def close(self) -> None:
        self._conn.close()

    @contextlib.contextmanager
    def _errors(self) -> Iterator[None]:
        try:
            yield
        except psycopg.OperationalError as exc:
            raise StoreError(
                f"the PostgreSQL batch manifest at {self.where} failed: {self._scrub(exc)}",
                where=_WHERE,
                fix="check that the server is up; then `outform batch resume JOB` carries "
                "the job on (nothing acknowledged is lost)",
            ) from None
        except psycopg.Error as exc:
            raise StoreError(
                f"the PostgreSQL batch manifest at {self.where} refused a statement: "
                f"{self._scrub(exc)}",
                where=_WHERE,
                fix="check the server's log and the user's rights on the outform_batch_ tables",
            ) from None

    @contextlib.contextmanager
    def transaction(self) -> Iterator[_Transaction]:
        with self._errors(), self._conn.transaction(), self._conn.cursor() as cursor:
            yield _Transaction(cursor)

    def fetch(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._errors():
            return self._conn.execute(_sql(sql), args).fetchall()

    def analyze(self) -> None:
        with self._errors():  # a user who may not analyze gets a warning, not an error
            self._conn.execute("ANALYZE outform_batch_rows")

    def try_lock(self, key: int) -> bool:
        with self._errors():
            row = self._conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()
        return bool(row and row[0])

    def unlock(self, key: int) -> None:
        with self._errors():
            self._conn.execute("SELECT pg_advisory_unlock(%s)", (key,))

    def _scrub(self, exc: BaseException) -> str:
        """The error's message without the password (libpq does not echo it; be sure)."""
        message = str(exc).strip()
        with contextlib.suppress(psycopg.Error):
            password = conninfo_to_dict(self._dsn).get("password")
            if password:
                message = message.replace(str(password), "***")
        return message


def describe(dsn: str) -> str:
    """user@host:port/dbname of a DSN, without the password (as the gateway's store says it)."""
    try:
        return describe_dsn(dsn)
    except ConfigError as error:
        raise UsageError(error.what, where=_WHERE, fix=error.fix) from None


def open_postgres(dsn: str) -> Manifest:
    return Manifest(PostgresDatabase(dsn))
