"""Choosing a response store from one string, and what every store shares.

`open_store(spec)` turns the `[gateway] store` setting (or `--store`) into a store:

    memory                      MemoryStore: one process, lost on restart (tests)
    sqlite                      SqliteStore on ./outform-responses.sqlite (the default)
    sqlite:PATH                 SqliteStore on PATH (also sqlite:///relative, sqlite:////absolute)
    PATH.sqlite / .sqlite3 / .db   the same, spelled as a bare path
    postgres:DSN, postgresql:DSN   PostgresStore; DSN is a libpq URL or "host=... dbname=..."
    postgres://..., postgresql://...

The store modules are imported only when chosen: psycopg is an optional dependency
(`pip install 'outform[postgres]'`).

Records are stored as JSON text written by orjson (one encoder for SQLite and PostgreSQL), and
a DSN is only ever shown with its password replaced by `***`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

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

Row = tuple[str, int, str | None, str, str, str]
"""id, created_at, previous_response_id, response, input_items, conversation (JSON text)."""


def open_store(spec: str, *, base_dir: str | Path | None = None) -> ResponseStore:
    """The store `spec` names. Relative SQLite paths are resolved against `base_dir` (the
    directory of the config file that set them) or else the working directory."""
    text = spec.strip()
    lowered = text.lower()
    if lowered == "memory":
        return MemoryStore()
    if lowered == "sqlite" or lowered.startswith("sqlite:"):
        return _sqlite(_sqlite_path(text[len("sqlite:") :] or DEFAULT_SQLITE_PATH), base_dir)
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


def _sqlite_path(rest: str) -> str:
    # sqlite:///relative.db and sqlite:////absolute.db, as SQLAlchemy spells them.
    return rest[3:] if rest.startswith("///") else rest


def _sqlite(path: str, base_dir: str | Path | None) -> ResponseStore:
    from outform.gateway.sqlite_store import SqliteStore

    if path == ":memory:":
        return SqliteStore(path)
    resolved = Path(path).expanduser()
    if not resolved.is_absolute() and base_dir is not None:
        resolved = Path(base_dir) / resolved
    return SqliteStore(resolved)


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
    """The record as one row of JSON text, or a UsageError naming the field that is not JSON."""
    return (
        record.id,
        int(record.created_at),
        record.previous_response_id,
        encode_json(record.response, record_id=record.id, field="response"),
        encode_json(record.input_items, record_id=record.id, field="input_items"),
        encode_json(record.conversation, record_id=record.id, field="conversation"),
    )


def decode_record(response_id: str, row: Sequence[Any]) -> StoredResponse:
    """A record from its row: created_at, previous_response_id, then the three JSON texts."""
    created_at, previous_response_id, response, input_items, conversation = row
    return StoredResponse(
        id=response_id,
        created_at=int(created_at),
        response=orjson.loads(response),
        input_items=orjson.loads(input_items),
        conversation=orjson.loads(conversation),
        previous_response_id=previous_response_id,
    )
