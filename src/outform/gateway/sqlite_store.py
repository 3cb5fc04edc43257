"""The default response store: one SQLite file, written behind, read your own writes.

The gateway is async and SQLite is not, so every database call runs on one worker thread
per database file per process (a single-thread executor that owns the connection). `save`
does not wait for the disk: it encodes the record, puts it in a pending map that `load`
consults first, queues a flush, and returns. The worker commits whatever is pending in one
transaction (group commit: under load one commit carries many records).

Durability, precisely (see docs/stores.md):

* when `save` returns, `load` on any SqliteStore of that file in this process returns the
  record (read-your-writes, before it reaches the disk);
* the worker commits it next: after the jobs already queued (other flushes, reads), waiting
  at most `busy_timeout` for another process's write lock. From then on other processes see
  it and it survives a crash of this process (it is in the WAL file);
* with `synchronous=NORMAL` (the default) a commit survives an OS crash or power loss once
  the WAL is checkpointed; `synchronous="FULL"` makes every commit survive them, at an fsync
  per flush;
* `await flush()` returns when everything saved before the call is committed; `close()`
  flushes first (no record is lost on graceful shutdown) and raises, keeping the store open,
  when that fails. Records still pending at a normal interpreter exit are committed by the
  executor's exit hook; a SIGKILL loses only records saved since the last commit.

A failed commit (disk full, lock held past `busy_timeout`) keeps the records pending and
readable here; the next save, `flush()` or `close()` retries, and the latter two raise.
Several processes may share the file: SQLite's locks serialise writers, writes take the lock
up front (`BEGIN IMMEDIATE`) and wait up to `busy_timeout` for it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Literal, TypeVar

from outform.errors import OutformError, StoreError, UsageError
from outform.gateway.store import StoredResponse
from outform.gateway.stores import Row, decode_record, encode_record

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1
TABLE = "outform_responses"
SCHEMA = (
    f"""CREATE TABLE IF NOT EXISTS {TABLE} (
        id TEXT PRIMARY KEY,
        created_at INTEGER NOT NULL,
        previous_response_id TEXT,
        response TEXT NOT NULL,
        input_items TEXT NOT NULL,
        conversation TEXT NOT NULL,
        stored_at REAL NOT NULL DEFAULT ((julianday('now') - 2440587.5) * 86400.0)
    )""",
    f"CREATE INDEX IF NOT EXISTS {TABLE}_created_at ON {TABLE} (created_at)",
    f"CREATE INDEX IF NOT EXISTS {TABLE}_previous ON {TABLE} (previous_response_id)"
    " WHERE previous_response_id IS NOT NULL",
)
_UPSERT = (
    f"INSERT INTO {TABLE} (id, created_at, previous_response_id, response, input_items,"
    " conversation) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET"
    " created_at = excluded.created_at, previous_response_id = excluded.previous_response_id,"
    " response = excluded.response, input_items = excluded.input_items,"
    " conversation = excluded.conversation, stored_at = excluded.stored_at"
)
_SELECT = (
    "SELECT created_at, previous_response_id, response, input_items, conversation"
    f" FROM {TABLE} WHERE id = ?"
)

T = TypeVar("T")
_Entry = tuple[StoredResponse, Row]


class SqliteStore:
    """Responses in one SQLite file (WAL mode), safe to share between processes."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        busy_timeout: float = 5.0,
        synchronous: Literal["NORMAL", "FULL"] = "NORMAL",
        max_pending: int = 10_000,
    ) -> None:
        """`busy_timeout`: seconds to wait for another process's lock. `max_pending`: when
        this many records wait for the disk, `save` waits for a flush (back-pressure).
        Stores of one file in one process share its writer, and the first one's settings."""
        self.path = str(path)
        if self.path != ":memory:":
            parent = Path(self.path).expanduser().absolute().parent
            if not parent.is_dir():
                raise StoreError(
                    f"cannot create the SQLite response store {self.path}: "
                    f"the directory {parent} does not exist",
                    where="[gateway] store",
                    fix=f"create {parent}, or point the store at an existing directory",
                )
        if synchronous not in ("NORMAL", "FULL"):
            raise UsageError(f"synchronous must be 'NORMAL' or 'FULL', not {synchronous!r}")
        self._max_pending = max_pending
        self._writer = _acquire(self.path, busy_timeout, synchronous)
        self._closed = False  # no more work accepted
        self._released = False  # the writer is no longer ours

    # -- the protocol ------------------------------------------------------------------------

    async def save(self, record: StoredResponse) -> None:
        self._check_open()
        entry = (record, encode_record(record))
        writer = self._writer
        with writer.lock:
            writer.pending[record.id] = entry
            queue = not writer.flush_queued
            writer.flush_queued = True
            backlog = len(writer.pending)
        if queue:
            writer.executor.submit(writer.flush_job)
        if backlog >= self._max_pending:
            await self.flush()

    async def load(self, response_id: str) -> StoredResponse | None:
        self._check_open()
        with self._writer.lock:
            entry = self._writer.pending.get(response_id)
        if entry is not None:
            return entry[0]
        return await self._run(self._writer.load_job, response_id)

    async def delete(self, response_id: str) -> bool:
        self._check_open()
        with self._writer.lock:
            pending = self._writer.pending.pop(response_id, None) is not None
        # Queued behind any flush that already took the record: that commit is undone here.
        deleted = await self._run(self._writer.delete_job, response_id)
        return pending or deleted

    async def close(self) -> None:
        """Commit everything pending, then release the file (the last store of it closes
        the connection). Raises, and stays open, when the final commit fails."""
        if self._closed:
            return
        self._closed = True  # no saves from here on
        try:
            await self.flush()
        except BaseException:
            self._closed = False
            raise
        self._released = True
        if _release(self._writer):
            await asyncio.wrap_future(self._writer.executor.submit(self._writer.close_job))
            self._writer.executor.shutdown(wait=False)

    # -- beyond the protocol -----------------------------------------------------------------

    async def flush(self) -> None:
        """Return when every record saved before this call is committed (or raise why not)."""
        if self._released:
            return  # close() flushed everything
        self._check_open(closing=True)
        await asyncio.wrap_future(self._writer.executor.submit(self._writer.flush_job))

    async def purge(self, before: int) -> int:
        """Delete the responses created before `before` (Unix seconds); how many went."""
        self._check_open()
        await self.flush()
        return await self._run(self._writer.purge_job, before)

    def _check_open(self, *, closing: bool = False) -> None:
        if self._closed and not closing:
            raise UsageError(f"the SQLite response store {self.path} is closed")
        if self._writer.pid != os.getpid():
            raise UsageError(
                f"the SQLite response store {self.path} was opened before this process forked",
                fix="open the store in each worker process (e.g. in the app's startup)",
            )

    async def _run(self, job: Callable[..., T], *args: object) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._writer.executor, job, *args)


class _Writer:
    """One per file per process: the worker thread, its connection and the pending records.
    `pending` and `flush_queued` are guarded by `lock`; `conn` is touched by the worker only."""

    def __init__(self, path: str, busy_timeout: float, synchronous: str) -> None:
        self.path = path
        self.busy_timeout = busy_timeout
        self.synchronous = synchronous
        self.pid = os.getpid()
        self.refs = 0
        self.lock = threading.Lock()
        self.pending: dict[str, _Entry] = {}
        self.flush_queued = False
        self.conn: sqlite3.Connection | None = None
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="outform-sqlite")
        self.executor.submit(self.connection)  # open early; a failure is reported on first use

    def connection(self) -> sqlite3.Connection:
        if self.conn is None:
            self.conn = _connect(self.path, self.busy_timeout, self.synchronous)
        return self.conn

    def flush_job(self) -> None:
        with self.lock:
            self.flush_queued = False
            batch = list(self.pending.values())
        if not batch:
            return
        try:
            with _errors(self.path, "writing"), _immediate(self.connection()) as conn:
                conn.executemany(_UPSERT, [row for _, row in batch])
        except OutformError as error:
            log.warning("%s (%d responses kept in memory until it works)", error, len(batch))
            raise
        with self.lock:
            for entry in batch:
                if self.pending.get(entry[0].id) is entry:
                    del self.pending[entry[0].id]

    def load_job(self, response_id: str) -> StoredResponse | None:
        with _errors(self.path, "reading"):
            row = self.connection().execute(_SELECT, (response_id,)).fetchone()
        return None if row is None else decode_record(response_id, row)

    def delete_job(self, response_id: str) -> bool:
        with _errors(self.path, "deleting"), _immediate(self.connection()) as conn:
            cursor = conn.execute(f"DELETE FROM {TABLE} WHERE id = ?", (response_id,))
        return cursor.rowcount > 0

    def purge_job(self, before: int) -> int:
        with _errors(self.path, "purging"), _immediate(self.connection()) as conn:
            cursor = conn.execute(f"DELETE FROM {TABLE} WHERE created_at < ?", (before,))
        return cursor.rowcount

    def close_job(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None


# -- one writer per file per process -------------------------------------------------------

_WRITERS: dict[str, _Writer] = {}
_WRITERS_LOCK = threading.Lock()


def _key(path: str) -> str:
    return path if path == ":memory:" else os.path.realpath(Path(path).expanduser())


def _acquire(path: str, busy_timeout: float, synchronous: str) -> _Writer:
    with _WRITERS_LOCK:
        key = _key(path)
        writer = _WRITERS.get(key)
        if key == ":memory:" or writer is None or writer.pid != os.getpid():
            writer = _Writer(path, busy_timeout, synchronous)
            if key != ":memory:":
                _WRITERS[key] = writer
        writer.refs += 1
        return writer


def _release(writer: _Writer) -> bool:
    """True when this was the last store of the writer (the caller shuts it down)."""
    with _WRITERS_LOCK:
        writer.refs -= 1
        if writer.refs > 0:
            return False
        key = _key(writer.path)
        if _WRITERS.get(key) is writer:
            del _WRITERS[key]
        return True


# -- SQLite ----------------------------------------------------------------------------------


def _connect(path: str, busy_timeout: float, synchronous: str) -> sqlite3.Connection:
    with _errors(path, "opening"):
        conn = sqlite3.connect(
            path, timeout=busy_timeout, isolation_level=None, check_same_thread=False
        )
    try:
        with _errors(path, "opening"):
            conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
            (mode,) = conn.execute("PRAGMA journal_mode = WAL").fetchone()
            if mode != "wal" and path != ":memory:":
                log.warning("SQLite store %s: journal_mode is %s, not wal", path, mode)
            conn.execute(f"PRAGMA synchronous = {synchronous}")
            with _immediate(conn):
                (version,) = conn.execute("PRAGMA user_version").fetchone()
                if version > SCHEMA_VERSION:
                    raise StoreError(
                        f"the SQLite response store {path} has schema version {version}; "
                        f"this outform knows version {SCHEMA_VERSION}",
                        where="[gateway] store",
                        fix="upgrade outform, or point the store at another file",
                    )
                for statement in SCHEMA:
                    conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    except BaseException:
        conn.close()
        raise
    return conn


@contextmanager
def _immediate(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """A write transaction that takes the write lock up front, so that two processes never
    deadlock upgrading read locks (SQLite would fail one of them without waiting)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


@contextmanager
def _errors(path: str, action: str) -> Iterator[None]:
    """sqlite3 errors as StoreErrors that name the file and what to do."""
    try:
        yield
    except sqlite3.Error as exc:
        message = str(exc)
        if "locked" in message or "busy" in message:
            fix = (
                "another process held the database lock too long: raise busy_timeout, find "
                "the long transaction, or use PostgreSQL for many writers"
            )
        elif "unable to open" in message or "readonly" in message:
            fix = "check that the file and its directory exist and are writable by the gateway"
        elif "not a database" in message or "malformed" in message:
            fix = "the file is not an intact SQLite database: restore it or use another path"
        else:
            fix = "check the file, the disk and its free space"
        raise StoreError(
            f"SQLite response store {path}: {action} failed: {message}",
            where="[gateway] store",
            fix=fix,
        ) from None
