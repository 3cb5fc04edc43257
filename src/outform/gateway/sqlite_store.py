"""The default response store: one SQLite file, committed before the gateway answers.

The gateway is async and SQLite is not, so every database call runs on one worker thread
per database file per process (a single-thread executor that owns the connection). Writes
are *group-committed*: `save` encodes the record on the caller's loop, queues it and waits;
the worker takes everything queued, writes it in one transaction, commits, and only then
wakes the waiting saves. Under load one commit carries many records, and no save returns
before its record is committed.

Durability, precisely (see docs/stores.md):

* when `save` (or `update`, `delete`) returns, the change is committed: every process sees
  it, and it survives a crash of this process (it is in the WAL file);
* with `synchronous=NORMAL` (the default) a commit survives an OS crash or power loss once
  the WAL is synced, at the next checkpoint; `synchronous="FULL"` syncs the WAL at every
  commit, so every acknowledged response survives them, at an fsync per group commit;
* a failed commit (disk full, a lock held past `busy_timeout`) fails every save of that
  transaction with a StoreError: the gateway answers 503, never 200, for them;
* the bytes of records waiting for the worker are bounded (`max_pending_bytes`): beyond it,
  `save` waits before queueing (back-pressure, never an unbounded backlog).

Several processes may share the file: SQLite's locks serialise writers, writes take the lock
up front (`BEGIN IMMEDIATE`) and wait up to `busy_timeout` for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

import orjson

from outform.errors import StoreError, UsageError
from outform.gateway.store import (
    NO_TENANT,
    STALE_AFTER,
    UNFINISHED,
    StoredResponse,
    check_storable,
    settle,
    storable_id,
)
from outform.gateway.stores import Budget, Row, decode_record, encode_record, row_bytes

log = logging.getLogger(__name__)

SCHEMA_VERSION = 3
TABLE = "outform_responses"
ITEMS = "outform_items"
WORKERS = "outform_workers"
META = "outform_meta"
_NOW = "((julianday('now') - 2440587.5) * 86400.0)"
SCHEMA = (
    f"""CREATE TABLE IF NOT EXISTS {TABLE} (
        id TEXT PRIMARY KEY,
        created_at INTEGER NOT NULL,
        previous_response_id TEXT,
        response TEXT NOT NULL,
        input_items TEXT NOT NULL,
        conversation TEXT NOT NULL,
        stored_at REAL NOT NULL DEFAULT {_NOW},
        status TEXT NOT NULL DEFAULT 'completed',
        tenant TEXT NOT NULL DEFAULT '',
        worker TEXT
    )""",
    f"CREATE INDEX IF NOT EXISTS {TABLE}_created_at ON {TABLE} (created_at)",
    f"CREATE INDEX IF NOT EXISTS {TABLE}_previous ON {TABLE} (previous_response_id)"
    " WHERE previous_response_id IS NOT NULL",
    # every holder of an item id (clients reuse ids), in the order they stored it: `seq` is
    # the rowid, so a new entry's is above every existing one's (see store.py, the rules)
    f"""CREATE TABLE IF NOT EXISTS {ITEMS} (
        seq INTEGER PRIMARY KEY,
        tenant TEXT NOT NULL,
        id TEXT NOT NULL,
        response_id TEXT NOT NULL,
        UNIQUE (tenant, id, response_id)
    )""",
    f"CREATE INDEX IF NOT EXISTS {ITEMS}_newest ON {ITEMS} (tenant, id, seq)",
    f"CREATE INDEX IF NOT EXISTS {ITEMS}_response ON {ITEMS} (response_id)",
    f"""CREATE TABLE IF NOT EXISTS {WORKERS} (
        id TEXT PRIMARY KEY,
        heartbeat_at REAL NOT NULL,
        place TEXT NOT NULL DEFAULT '',
        pid INTEGER NOT NULL DEFAULT 0
    )""",
    f"CREATE TABLE IF NOT EXISTS {META} (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
)
UPGRADE_FROM_1 = (
    f"ALTER TABLE {TABLE} ADD COLUMN status TEXT NOT NULL DEFAULT 'completed'",
    f"ALTER TABLE {TABLE} ADD COLUMN tenant TEXT NOT NULL DEFAULT ''",
    f"ALTER TABLE {TABLE} ADD COLUMN worker TEXT",
    f"UPDATE {TABLE} SET status = coalesce(json_extract(response, '$.status'), 'completed')",
)
UPGRADE_FROM_2 = (f"DROP TABLE IF EXISTS {ITEMS}",)  # one holder per id: rebuilt with all
_INDEX_OLD_ITEMS = (  # after an upgrade: the items of existing responses, oldest first
    f"INSERT OR IGNORE INTO {ITEMS} (tenant, id, response_id)"
    " SELECT tenant, item_id, response_id FROM ("
    + " UNION ALL ".join(
        "SELECT r.tenant, json_extract(j.value, '$.id') AS item_id, r.id AS response_id,"
        f" r.created_at, r.stored_at FROM {TABLE} r, json_each({field}) j"
        " WHERE json_extract(j.value, '$.id') IS NOT NULL"
        for field in ("r.input_items", "json_extract(r.response, '$.output')")
    )
    + ") ORDER BY created_at, stored_at",
)
_UPSERT = (
    f"INSERT INTO {TABLE} (id, created_at, previous_response_id, response, input_items,"
    " conversation, status, tenant, worker) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
    " ON CONFLICT (id) DO UPDATE SET"
    " created_at = excluded.created_at, previous_response_id = excluded.previous_response_id,"
    " response = excluded.response, input_items = excluded.input_items,"
    " conversation = excluded.conversation, stored_at = excluded.stored_at,"
    " status = excluded.status, tenant = excluded.tenant, worker = excluded.worker"
)
_UPDATE = (
    f"UPDATE {TABLE} SET created_at = ?, previous_response_id = ?, response = ?,"
    f" input_items = ?, conversation = ?, status = ?, worker = ?, stored_at = {_NOW}"
    f" WHERE id = ? AND tenant = ? AND status IN {tuple(sorted(UNFINISHED))}"
)
_INDEX_ITEM = (  # a holder already indexed keeps its place
    f"INSERT INTO {ITEMS} (tenant, id, response_id) VALUES (?, ?, ?)"
    " ON CONFLICT (tenant, id, response_id) DO NOTHING"
)
_UNINDEX_DROPPED = (  # a record saved again: the entries of the items it no longer holds
    f"DELETE FROM {ITEMS} WHERE response_id = ?"
    " AND (tenant <> ? OR id NOT IN (SELECT value FROM json_each(?)))"
)
_SELECT = (
    "SELECT r.created_at, r.previous_response_id, r.response, r.input_items, r.conversation,"
    f" r.tenant, r.worker, w.heartbeat_at FROM {TABLE} r"
    f" LEFT JOIN {WORKERS} w ON w.id = r.worker WHERE r.id = ? AND r.tenant = ?"
)
_SELECT_ITEM = (
    f"SELECT r.id, r.response, r.input_items FROM {ITEMS} i JOIN {TABLE} r"
    " ON r.id = i.response_id AND r.tenant = i.tenant WHERE i.tenant = ? AND i.id = ?"
    " ORDER BY i.seq DESC LIMIT 1"
)
_HEARTBEAT = (
    f"INSERT INTO {WORKERS} (id, heartbeat_at, place, pid) VALUES (?, ?, ?, ?)"
    " ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at"
)

T = TypeVar("T")
Job = Callable[[sqlite3.Connection], Any]


class SqliteStore:
    """Responses in one SQLite file (WAL mode), safe to share between processes."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        busy_timeout: float = 5.0,
        synchronous: Literal["NORMAL", "FULL"] = "NORMAL",
        max_pending_bytes: int = 64 * 1024 * 1024,
    ) -> None:
        """`busy_timeout`: seconds to wait for another process's lock. `synchronous`: FULL
        makes every commit survive power loss (an fsync each). `max_pending_bytes`: records
        waiting to be written, at most (beyond it `save` waits). Stores of one file in one
        process share its writer, and the first one's `busy_timeout` and `synchronous`."""
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
        self._budget = Budget(max_pending_bytes)
        self._writer = _acquire(self.path, busy_timeout, synchronous)
        self._closed = False  # no more work accepted
        self._released = False  # the writer is no longer ours

    # -- the protocol ------------------------------------------------------------------------

    async def check(self) -> None:
        """Open (creating or upgrading the tables) and commit a write: the file is usable."""
        stamp = str(time.time())
        await self._write(
            lambda conn: conn.execute(
                f"INSERT OR REPLACE INTO {META} (name, value) VALUES ('checked_at', ?)", (stamp,)
            )
        )

    async def tenant_salt(self) -> bytes:
        def read(conn: sqlite3.Connection) -> str:
            row = conn.execute(f"SELECT value FROM {META} WHERE name = 'tenant_salt'").fetchone()
            return str(row[0])

        return bytes.fromhex(await self._read(read, "reading"))

    async def save(self, record: StoredResponse) -> None:
        check_storable(record)
        row = encode_record(record)
        ids = record.item_ids()
        await self._write(lambda conn: _upsert(conn, row, ids), size=row_bytes(row))

    async def update(self, record: StoredResponse) -> bool:
        check_storable(record)
        row = encode_record(record)
        ids = record.item_ids()
        done: bool = await self._write(lambda conn: _update(conn, row, ids), size=row_bytes(row))
        return done

    async def load(self, response_id: str, tenant: str = NO_TENANT) -> StoredResponse | None:
        if not storable_id(response_id):
            return None  # never stored: see store.storable_id

        def read(conn: sqlite3.Connection) -> StoredResponse | None:
            row = conn.execute(_SELECT, (response_id, tenant)).fetchone()
            if row is None:
                return None
            record = decode_record(response_id, row[:7])
            return settle(record, row[7] is not None and row[7] > time.time() - STALE_AFTER)

        return await self._read(read, "reading")

    async def delete(self, response_id: str, tenant: str = NO_TENANT) -> bool:
        if not storable_id(response_id):
            return False  # never stored: see store.storable_id

        def delete(conn: sqlite3.Connection) -> bool:
            cursor = conn.execute(
                f"DELETE FROM {TABLE} WHERE id = ? AND tenant = ?", (response_id, tenant)
            )
            if cursor.rowcount > 0:
                conn.execute(f"DELETE FROM {ITEMS} WHERE response_id = ?", (response_id,))
            return cursor.rowcount > 0

        deleted: bool = await self._write(delete)
        return deleted

    async def find_item(self, item_id: str, tenant: str = NO_TENANT) -> dict[str, Any] | None:
        if not storable_id(item_id):
            return None  # never stored: see store.storable_id

        def read(conn: sqlite3.Connection) -> dict[str, Any] | None:
            row = conn.execute(_SELECT_ITEM, (tenant, item_id)).fetchone()
            if row is None:
                return None
            owner = StoredResponse(row[0], 0, orjson.loads(row[1]), orjson.loads(row[2]))
            return owner.find_item(item_id)

        return await self._read(read, "reading")

    async def heartbeat(self, worker: str, place: str = "", pid: int = 0) -> None:
        now = time.time()
        await self._write(lambda conn: conn.execute(_HEARTBEAT, (worker, now, place, pid)))

    async def workers(self, place: str) -> list[tuple[str, int]]:
        def read(conn: sqlite3.Connection) -> list[tuple[str, int]]:
            rows = conn.execute(f"SELECT id, pid FROM {WORKERS} WHERE place = ?", (place,))
            return [(str(row[0]), int(row[1])) for row in rows]

        return await self._read(read, "reading")

    async def retire(self, worker: str) -> None:
        await self._write(
            lambda conn: conn.execute(f"DELETE FROM {WORKERS} WHERE id = ?", (worker,))
        )

    async def unfinished(self, ids: Iterable[str]) -> set[str]:
        wanted = [i for i in ids if storable_id(i)]
        if not wanted:
            return set()

        def read(conn: sqlite3.Connection) -> set[str]:
            marks = ", ".join("?" * len(wanted))
            rows = conn.execute(
                f"SELECT id FROM {TABLE} WHERE id IN ({marks})"
                f" AND status IN {tuple(sorted(UNFINISHED))}",
                wanted,
            ).fetchall()
            return {str(row[0]) for row in rows}

        return await self._read(read, "reading")

    async def close(self) -> None:
        """Wait for the writes in flight, then release the file (the last store of it closes
        the connection)."""
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
        """Return when every write queued before this call is done. Saves are committed
        before they return (each raises its own failure); this waits for those in flight."""
        if self._released:
            return  # close() waited for everything
        self._check_open(closing=True)
        await self._submit(None, size=0)

    async def purge(self, before: int) -> int:
        """Delete the responses created before `before` (Unix seconds); how many went."""

        def purge(conn: sqlite3.Connection) -> int:
            conn.execute(
                f"DELETE FROM {ITEMS} WHERE response_id IN"
                f" (SELECT id FROM {TABLE} WHERE created_at < ?)",
                (before,),
            )
            cursor = conn.execute(f"DELETE FROM {TABLE} WHERE created_at < ?", (before,))
            conn.execute(f"DELETE FROM {WORKERS} WHERE heartbeat_at < ?", (time.time() - 86_400,))
            return cursor.rowcount

        purged: int = await self._write(purge)
        return purged

    # -- running jobs on the worker ------------------------------------------------------------

    def _check_open(self, *, closing: bool = False) -> None:
        if self._closed and not closing:
            raise UsageError(f"the SQLite response store {self.path} is closed")
        if self._writer.pid != os.getpid():
            raise UsageError(
                f"the SQLite response store {self.path} was opened before this process forked",
                fix="open the store in each worker process (e.g. in the app's startup)",
            )

    async def _write(self, job: Job, *, size: int = 256) -> Any:
        self._check_open()
        return await self._submit(job, size=size)

    async def _submit(self, job: Job | None, *, size: int) -> Any:
        held = await self._budget.acquire(size) if size else 0
        loop = asyncio.get_running_loop()
        op = _Op(job, loop, loop.create_future(), self._budget, held)
        self._writer.submit(op)
        return await op.future

    async def _read(self, job: Callable[[sqlite3.Connection], T], action: str) -> T:
        self._check_open()
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._writer.executor, self._writer.read_job, job, action)


@dataclass(slots=True)
class _Op:
    """A write waiting for the next group commit, and whom to tell when it is done (no job:
    a barrier, done when the writes queued before it are)."""

    job: Job | None
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[Any]
    budget: Budget
    held: int


def _upsert(conn: sqlite3.Connection, row: Row, item_ids: list[str]) -> None:
    conn.execute(_UPSERT, row)
    _index(conn, row[0], row[7], item_ids)


def _update(conn: sqlite3.Connection, row: Row, item_ids: list[str]) -> bool:
    (id_, created_at, previous, response, input_items, conversation, status, tenant, worker) = row
    cursor = conn.execute(
        _UPDATE,
        (created_at, previous, response, input_items, conversation, status, worker, id_, tenant),
    )
    if cursor.rowcount == 0:
        return False
    _index(conn, id_, tenant, item_ids)
    return True


def _index(conn: sqlite3.Connection, response_id: str, tenant: str, item_ids: list[str]) -> None:
    """Index the items a record now holds (its other entries go)."""
    conn.execute(_UNINDEX_DROPPED, (response_id, tenant, orjson.dumps(item_ids).decode()))
    conn.executemany(_INDEX_ITEM, [(tenant, item_id, response_id) for item_id in item_ids])


class _Writer:
    """One per file per process: the worker thread, its connection and the queued writes.
    `queue` and `flush_queued` are guarded by `lock`; `conn` is touched by the worker only."""

    def __init__(self, path: str, busy_timeout: float, synchronous: str) -> None:
        self.path = path
        self.busy_timeout = busy_timeout
        self.synchronous = synchronous
        self.pid = os.getpid()
        self.refs = 0
        self.lock = threading.Lock()
        self.queue: list[_Op] = []
        self.flush_queued = False
        self.conn: sqlite3.Connection | None = None
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="outform-sqlite")

    def connection(self) -> sqlite3.Connection:
        if self.conn is None:
            self.conn = _connect(self.path, self.busy_timeout, self.synchronous)
        return self.conn

    def submit(self, op: _Op) -> None:
        with self.lock:
            self.queue.append(op)
            queue = not self.flush_queued
            self.flush_queued = True
        if queue:
            self.executor.submit(self.commit_job)

    def commit_job(self) -> None:
        """Everything queued, in one transaction; then wake each waiting save."""
        with self.lock:
            self.flush_queued = False
            batch, self.queue = self.queue, []
        if not batch:
            return
        results: list[Any] = [None] * len(batch)
        error: BaseException | None = None
        writes = [(index, op.job) for index, op in enumerate(batch) if op.job is not None]
        try:
            if writes:
                with _errors(self.path, "writing"), _immediate(self.connection()) as conn:
                    for index, job in writes:
                        results[index] = job(conn)
        except BaseException as exc:  # each waiting caller raises it (a bug too: the worker lives)
            error = exc
        woken: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future[Any], Any, bool]]] = {}
        for index, op in enumerate(batch):
            op.budget.release(op.held)
            failed = error is not None and op.job is not None
            outcome = error if failed else results[index]
            woken.setdefault(op.loop, []).append((op.future, outcome, failed))
        for loop, settled in woken.items():  # one wake-up per loop, not one per save
            with contextlib.suppress(RuntimeError):  # the caller's loop closed: nobody waits
                loop.call_soon_threadsafe(_settle_futures, settled)

    def read_job(self, job: Callable[[sqlite3.Connection], T], action: str) -> T:
        with _errors(self.path, action):
            return job(self.connection())

    def close_job(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def _settle_futures(settled: list[tuple[asyncio.Future[Any], Any, bool]]) -> None:
    for future, outcome, failed in settled:
        if future.done():  # the waiting task was cancelled; the write happened all the same
            continue
        if failed:
            future.set_exception(outcome)
        else:
            future.set_result(outcome)


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
                _create_or_upgrade(conn, path)
    except BaseException:
        conn.close()
        raise
    return conn


def _create_or_upgrade(conn: sqlite3.Connection, path: str) -> None:
    (version,) = conn.execute("PRAGMA user_version").fetchone()
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"the SQLite response store {path} has schema version {version}; "
            f"this outform knows version {SCHEMA_VERSION}",
            where="[gateway] store",
            fix="upgrade outform, or point the store at another file",
        )
    if version == SCHEMA_VERSION:
        return
    if version == 1:
        for statement in UPGRADE_FROM_1:
            conn.execute(statement)
    if version == 2:
        for statement in UPGRADE_FROM_2:
            conn.execute(statement)
    for statement in SCHEMA:
        conn.execute(statement)
    if version in (1, 2):
        for statement in _INDEX_OLD_ITEMS:
            conn.execute(statement)
    conn.execute(
        f"INSERT OR IGNORE INTO {META} (name, value) VALUES ('tenant_salt', ?)",
        (secrets.token_hex(32),),
    )
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


@contextmanager
def _immediate(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """A write transaction that takes the write lock up front, so that two processes never
    deadlock upgrading read locks (SQLite would fail one of them without waiting)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


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
