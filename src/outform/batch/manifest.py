"""The job manifest: jobs, rows, provider batches, rounds, in SQLite.

Every state change that matters for exactly-once is one transaction, committed before the
next provider call: a batch is recorded as `submitting` (with its rows) before it is sent
and as `submitted` (with the provider's id) after, and a row's outcome is committed with the
row leaving its batch. A process killed at any moment leaves a manifest from which `resume`
knows which rows are done, which are in which provider batch, and which batches may or may
not exist at the provider (those still `submitting`: the runner asks the provider).

Row states: `pending` (to send in its round), `sent` (in batch `batch`), `done` (final
status and output line stored). Memory stays flat: rows are read with cursors.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from outform.errors import StoreError, UsageError

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY,
    spec BLOB NOT NULL,
    state TEXT NOT NULL,
    round INTEGER NOT NULL DEFAULT 0,
    rows INTEGER NOT NULL DEFAULT 0,
    created REAL NOT NULL,
    updated REAL NOT NULL,
    message TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS rows (
    job TEXT NOT NULL,
    idx INTEGER NOT NULL,
    row_id TEXT NOT NULL,
    line INTEGER NOT NULL,
    offset INTEGER NOT NULL,
    state TEXT NOT NULL DEFAULT 'pending',
    round INTEGER NOT NULL DEFAULT 0,
    batch TEXT,
    attempts INTEGER NOT NULL DEFAULT 0,
    status TEXT,
    result BLOB,
    last_text TEXT,
    last_hint BLOB,
    history BLOB,
    PRIMARY KEY (job, idx),
    UNIQUE (job, row_id)
);
CREATE INDEX IF NOT EXISTS rows_state ON rows (job, state, round, idx);
CREATE INDEX IF NOT EXISTS rows_batch ON rows (job, batch, state);
CREATE TABLE IF NOT EXISTS batches (
    job TEXT NOT NULL,
    key TEXT NOT NULL,
    round INTEGER NOT NULL,
    state TEXT NOT NULL,
    provider_id TEXT,
    size INTEGER NOT NULL,
    started REAL NOT NULL,
    submitted REAL,
    ended REAL,
    message TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (job, key)
);
CREATE TABLE IF NOT EXISTS rounds (
    job TEXT NOT NULL,
    round INTEGER NOT NULL,
    started REAL NOT NULL,
    ended REAL,
    sent INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (job, round)
);
"""


@dataclass(frozen=True)
class JobRecord:
    id: str
    spec: bytes
    state: str
    round: int
    rows: int
    created: float
    updated: float
    message: str


@dataclass(frozen=True)
class BatchRecord:
    key: str
    round: int
    state: str
    provider_id: str | None
    size: int
    started: float
    submitted: float | None
    message: str


@dataclass(frozen=True)
class PendingRow:
    idx: int
    row_id: str
    line: int
    offset: int
    attempts: int
    last_text: str | None
    last_hint: bytes | None


@dataclass(frozen=True)
class RowUpdate:
    """A row's outcome: final (`status` and `result` set) or re-asked in `next_round`."""

    idx: int
    status: str | None = None
    result: bytes | None = None
    next_round: int | None = None
    text: str | None = None
    hint: bytes | None = None
    history: bytes | None = None


class SqliteManifest:
    """The manifest in one SQLite file (WAL, synchronous=FULL)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(
                self.path, isolation_level=None, check_same_thread=False, timeout=30.0
            )
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.executescript(_SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(
                f"cannot open the batch manifest: {exc}",
                where=str(self.path),
                fix="check the path and its permissions (--manifest, or [batch] manifest)",
            ) from None
        self._lock = threading.RLock()

    def close(self) -> None:
        self._db.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    # -- jobs ----------------------------------------------------------------------------------

    def create_job(self, job: str, spec: bytes, rows: Iterable[tuple[int, str, int, int]]) -> int:
        """Record the job and its rows in one transaction: all of them, or none (a bad row
        raises, and nothing of the job is kept). Returns the number of rows."""
        now = time.time()
        count = 0
        with self.transaction() as db:
            db.execute(
                "INSERT INTO jobs (id, spec, state, created, updated) VALUES (?, ?, 'new', ?, ?)",
                (job, spec, now, now),
            )
            insert = "INSERT INTO rows (job, idx, row_id, line, offset) VALUES (?, ?, ?, ?, ?)"
            chunk: list[tuple[str, int, str, int, int]] = []
            for idx, row_id, line, offset in rows:
                chunk.append((job, idx, row_id, line, offset))
                if len(chunk) >= 5000:
                    count += self._insert_rows(db, insert, chunk)
                    chunk = []
            count += self._insert_rows(db, insert, chunk)
            db.execute("UPDATE jobs SET rows = ? WHERE id = ?", (count, job))
        return count

    def _insert_rows(
        self, db: sqlite3.Connection, insert: str, chunk: list[tuple[str, int, str, int, int]]
    ) -> int:
        try:
            db.executemany(insert, chunk)
        except sqlite3.IntegrityError:
            for job, _, row_id, _line, _ in chunk:  # find which one, to name both lines
                first = db.execute(
                    "SELECT line FROM rows WHERE job = ? AND row_id = ?", (job, row_id)
                ).fetchone()
                later = [c for c in chunk if c[2] == row_id]
                if first is not None or len(later) > 1:
                    lines = sorted({*(c[3] for c in later), *([first[0]] if first else [])})
                    raise UsageError(
                        f"the row id {row_id!r} appears more than once",
                        where=f"lines {', '.join(map(str, lines))}",
                        fix="give every row its own id (it is the provider's custom id)",
                    ) from None
            raise
        return len(chunk)

    def job(self, job: str) -> JobRecord:
        row = self._db.execute(
            "SELECT id, spec, state, round, rows, created, updated, message FROM jobs WHERE id = ?",
            (job,),
        ).fetchone()
        if row is None:
            raise UsageError(
                f"no batch job {job!r} in the manifest",
                where=str(self.path),
                fix="check the job id (`outform batch status` lists the jobs) and --manifest",
            )
        return JobRecord(*row)

    def jobs(self) -> list[JobRecord]:
        rows = self._db.execute(
            "SELECT id, spec, state, round, rows, created, updated, message FROM jobs "
            "ORDER BY created DESC"
        ).fetchall()
        return [JobRecord(*r) for r in rows]

    def set_job(
        self, job: str, *, state: str | None = None, round: int | None = None, message: str = ""
    ) -> None:
        with self.transaction() as db:
            if state is not None:
                db.execute(
                    "UPDATE jobs SET state = ?, message = ?, updated = ? WHERE id = ?",
                    (state, message, time.time(), job),
                )
            if round is not None:
                db.execute(
                    "UPDATE jobs SET round = ?, updated = ? WHERE id = ?", (round, time.time(), job)
                )
                db.execute(
                    "INSERT OR IGNORE INTO rounds (job, round, started) VALUES (?, ?, ?)",
                    (job, round, time.time()),
                )

    # -- rows ----------------------------------------------------------------------------------

    def pending(self, job: str, round: int, after: int = -1, limit: int = 5000) -> list[PendingRow]:
        rows = self._db.execute(
            "SELECT idx, row_id, line, offset, attempts, last_text, last_hint FROM rows "
            "WHERE job = ? AND state = 'pending' AND round = ? AND idx > ? ORDER BY idx LIMIT ?",
            (job, round, after, limit),
        ).fetchall()
        return [PendingRow(*r) for r in rows]

    def count(self, job: str, where: str, *args: Any) -> int:
        (n,) = self._db.execute(
            f"SELECT COUNT(*) FROM rows WHERE job = ? AND {where}", (job, *args)
        ).fetchone()
        return int(n)

    def status_counts(self, job: str) -> dict[str, int]:
        counts: dict[str, int] = {}
        for state, status, n in self._db.execute(
            "SELECT state, status, COUNT(*) FROM rows WHERE job = ? GROUP BY state, status", (job,)
        ):
            name = status if state == "done" else state
            counts[name] = counts.get(name, 0) + int(n)
        return counts

    def sent_rows(self, job: str, key: str) -> dict[str, tuple[int, int, int, int]]:
        """custom id -> (idx, round, attempts, line) of the rows still waiting in a batch."""
        return {
            row_id: (idx, rnd, attempts, line)
            for row_id, idx, rnd, attempts, line in self._db.execute(
                "SELECT row_id, idx, round, attempts, line FROM rows "
                "WHERE job = ? AND batch = ? AND state = 'sent'",
                (job, key),
            )
        }

    def history(self, job: str, idx: int) -> bytes | None:
        row = self._db.execute(
            "SELECT history FROM rows WHERE job = ? AND idx = ?", (job, idx)
        ).fetchone()
        return None if row is None else row[0]

    def record(self, job: str, updates: Sequence[RowUpdate]) -> None:
        """Outcomes of rows, in one transaction. A row already done is left as it is (a
        result read twice after a restart changes nothing)."""
        if not updates:
            return
        with self.transaction() as db:
            final = [
                (u.status, u.result, u.history, job, u.idx) for u in updates if u.next_round is None
            ]
            again = [
                (u.next_round, u.text, u.hint, u.history, job, u.idx)
                for u in updates
                if u.next_round is not None
            ]
            db.executemany(
                "UPDATE rows SET state = 'done', status = ?, result = ?, history = ?, "
                "attempts = attempts + 1, last_text = NULL, last_hint = NULL "
                "WHERE job = ? AND idx = ? AND state != 'done'",
                final,
            )
            db.executemany(
                "UPDATE rows SET state = 'pending', round = ?, batch = NULL, last_text = ?, "
                "last_hint = ?, history = ?, attempts = attempts + 1 "
                "WHERE job = ? AND idx = ? AND state != 'done'",
                again,
            )

    def results(self, job: str) -> Iterator[tuple[int, bytes | None]]:
        """(idx, output line) of every row in input order; None for rows not done yet."""
        cursor = self._db.execute("SELECT idx, result FROM rows WHERE job = ? ORDER BY idx", (job,))
        yield from cursor

    # -- batches -------------------------------------------------------------------------------

    def start_batch(self, job: str, key: str, round: int, idxs: Sequence[int]) -> None:
        """Before the provider call: the batch as `submitting`, its rows as `sent` in it."""
        with self.transaction() as db:
            db.execute(
                "INSERT INTO batches (job, key, round, state, size, started) "
                "VALUES (?, ?, ?, 'submitting', ?, ?)",
                (job, key, round, len(idxs), time.time()),
            )
            db.executemany(
                "UPDATE rows SET state = 'sent', batch = ? "
                "WHERE job = ? AND idx = ? AND state = 'pending'",
                [(key, job, idx) for idx in idxs],
            )
            db.execute(
                "UPDATE rounds SET sent = sent + ? WHERE job = ? AND round = ?",
                (len(idxs), job, round),
            )

    def set_batch(
        self,
        job: str,
        key: str,
        state: str,
        *,
        provider_id: str | None = None,
        message: str = "",
    ) -> None:
        with self.transaction() as db:
            now = time.time()
            if provider_id is not None:
                db.execute(
                    "UPDATE batches SET state = ?, provider_id = ?, submitted = ?, message = ? "
                    "WHERE job = ? AND key = ?",
                    (state, provider_id, now, message, job, key),
                )
            else:
                db.execute(
                    "UPDATE batches SET state = ?, message = ?, ended = CASE WHEN ? IN "
                    "('done', 'failed') THEN ? ELSE ended END WHERE job = ? AND key = ?",
                    (state, message, state, now, job, key),
                )

    def release_batch(self, job: str, key: str) -> None:
        """A batch that never reached the provider: its rows go back to pending, and it is
        forgotten (it will be sent again under a new key)."""
        with self.transaction() as db:
            db.execute(
                "UPDATE rows SET state = 'pending', batch = NULL "
                "WHERE job = ? AND batch = ? AND state = 'sent'",
                (job, key),
            )
            db.execute("DELETE FROM batches WHERE job = ? AND key = ?", (job, key))

    def batches(self, job: str, states: Sequence[str] | None = None) -> list[BatchRecord]:
        query = (
            "SELECT key, round, state, provider_id, size, started, submitted, message "
            "FROM batches WHERE job = ?"
        )
        args: list[Any] = [job]
        if states:
            query += f" AND state IN ({', '.join('?' for _ in states)})"
            args += list(states)
        return [BatchRecord(*r) for r in self._db.execute(query + " ORDER BY started", args)]

    def next_batch_number(self, job: str) -> int:
        (n,) = self._db.execute("SELECT COUNT(*) FROM batches WHERE job = ?", (job,)).fetchone()
        return int(n)

    def rounds(self, job: str) -> list[Mapping[str, Any]]:
        rows = self._db.execute(
            "SELECT round, started, ended, sent FROM rounds WHERE job = ? ORDER BY round", (job,)
        ).fetchall()
        return [{"round": r, "started": s, "ended": e, "sent": n} for r, s, e, n in rows]

    def end_round(self, job: str, round: int) -> None:
        with self.transaction() as db:
            db.execute(
                "UPDATE rounds SET ended = ? WHERE job = ? AND round = ? AND ended IS NULL",
                (time.time(), job, round),
            )


def dumps(value: Any) -> bytes:
    return orjson.dumps(value)


def loads_map(data: bytes | None) -> Mapping[str, Any]:
    return orjson.loads(data) if data else {}
