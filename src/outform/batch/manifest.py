"""The job manifest: jobs, rows, provider batches, rounds; in SQLite or PostgreSQL.

Every state change that matters for exactly-once is one transaction, committed before the
next provider call: a batch is recorded as `submitting` (with its rows) before it is sent
and as `submitted` (with the provider's id) after, and a row's outcome is committed with the
row leaving its batch. A process killed at any moment leaves a manifest from which `resume`
knows which rows are done, which are in which provider batch, and which batches may or may
not exist at the provider (those still `submitting`: the runner asks the provider).

A batch's creation call is recorded too (`outform_batch_creates`): as not sent when the batch
is recorded, then with its deadline just before it is sent. A `submitting` batch whose call
was never sent made nothing; one whose call was sent may be made at the provider until that
deadline (a call cut off, or a process killed while it waited), so it is looked for until
then and only released after it (see `Runner._recover`). The record outlives a released
batch, so that its key (the label a late batch would carry) is never given to another.

Row states: `pending` (to send in its round), `sent` (in batch `batch`), `done` (final
status and output line stored). Memory stays flat: rows are read a page at a time, by key.

The schema and every query are written once, here; a `Database` (manifest_sqlite,
manifest_postgres) only connects, runs them in transactions and holds the job locks. One
process drives a job at a time (`claim`): a second one, such as `status` refreshing while
`run` submits in another terminal, would release or submit the same rows again.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from outform.errors import JobBusyError, UsageError

_SCHEMA = """
CREATE TABLE IF NOT EXISTS outform_batch_jobs (
    id TEXT PRIMARY KEY,
    spec {bytes} NOT NULL,
    state TEXT NOT NULL,
    round INTEGER NOT NULL DEFAULT 0,
    rows INTEGER NOT NULL DEFAULT 0,
    created {float} NOT NULL,
    updated {float} NOT NULL,
    message TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS outform_batch_rows (
    job TEXT NOT NULL,
    idx INTEGER NOT NULL,
    row_id TEXT NOT NULL,
    line INTEGER NOT NULL,
    byte_offset BIGINT NOT NULL,
    state TEXT NOT NULL DEFAULT 'pending',
    round INTEGER NOT NULL DEFAULT 0,
    batch TEXT,
    attempts INTEGER NOT NULL DEFAULT 0,
    status TEXT,
    result {bytes},
    last_text TEXT,
    last_hint {bytes},
    history {bytes},
    PRIMARY KEY (job, idx),
    UNIQUE (job, row_id)
);
CREATE INDEX IF NOT EXISTS outform_batch_rows_state
    ON outform_batch_rows (job, state, round, idx);
CREATE INDEX IF NOT EXISTS outform_batch_rows_batch ON outform_batch_rows (job, batch, state);
CREATE TABLE IF NOT EXISTS outform_batch_batches (
    job TEXT NOT NULL,
    key TEXT NOT NULL,
    round INTEGER NOT NULL,
    state TEXT NOT NULL,
    provider_id TEXT,
    size INTEGER NOT NULL,
    started {float} NOT NULL,
    submitted {float},
    ended {float},
    message TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (job, key)
);
CREATE TABLE IF NOT EXISTS outform_batch_rounds (
    job TEXT NOT NULL,
    round INTEGER NOT NULL,
    started {float} NOT NULL,
    ended {float},
    sent INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (job, round)
);
CREATE TABLE IF NOT EXISTS outform_batch_creates (
    job TEXT NOT NULL,
    key TEXT NOT NULL,
    deadline {float},
    PRIMARY KEY (job, key)
);
CREATE TABLE IF NOT EXISTS outform_batch_warnings (
    job TEXT NOT NULL,
    batch TEXT NOT NULL,
    provider_id TEXT,
    line INTEGER NOT NULL,
    kind TEXT NOT NULL,
    row_id TEXT,
    detail TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (job, batch, line)
);
"""
TABLES = (
    "outform_batch_jobs",
    "outform_batch_rows",
    "outform_batch_batches",
    "outform_batch_rounds",
    "outform_batch_warnings",
    "outform_batch_creates",
)

_JOB = "SELECT id, spec, state, round, rows, created, updated, message FROM outform_batch_jobs"
_BATCH = (
    "SELECT key, round, state, provider_id, size, started, submitted, message "
    "FROM outform_batch_batches WHERE job = ?"
)
_WAITING = (
    "SELECT row_id, idx, round, attempts, line, history FROM outform_batch_rows "
    "WHERE job = ? AND batch = ? AND state = 'sent'"
)
_PAGE = 5000


def schema(*, bytes_type: str, float_type: str) -> list[str]:
    """The manifest's tables and indexes, as statements, in a database's type names."""
    text = _SCHEMA.format(bytes=bytes_type, float=float_type)
    return [s.strip() for s in text.split(";") if s.strip()]


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
    history: bytes | None
    """The row's rounds so far (JSON), for its output line."""


@dataclass(frozen=True)
class WaitingRow:
    """A row waiting in a provider batch for its result."""

    row_id: str
    idx: int
    round: int
    attempts: int
    line: int
    history: bytes | None


@dataclass(frozen=True)
class RowUpdate:
    """A row's outcome: final (`status` and `result` set) or sent again in `next_round`
    (with the reply to re-ask about, or, without `text`, as it was last sent)."""

    idx: int
    status: str | None = None
    result: bytes | None = None
    next_round: int | None = None
    text: str | None = None
    hint: bytes | None = None
    history: bytes | None = None


WarningKind = Literal["unknown_id", "unreadable", "duplicate"]


@dataclass(frozen=True)
class ResultWarning:
    """A line of a batch's results that was not used: a result for an id that is no row of
    the job, a line that is not a result (not JSON, or not the API's shape), or a second
    result for a row (the first is kept). `line` counts the results' non-empty lines from 1
    (OpenAI's error file follows its output file)."""

    batch: str
    provider_id: str | None
    line: int
    kind: WarningKind
    row_id: str | None = None
    detail: str = ""

    def message(self) -> str:
        where = f"batch {self.batch}" + (f" ({self.provider_id})" if self.provider_id else "")
        where += f", results line {self.line}"
        if self.kind == "unknown_id":
            what = f"a result for {self.row_id!r}, which is no row of the job: ignored"
        elif self.kind == "duplicate":
            what = f"a second result for row {self.row_id!r}: ignored (the first was kept)"
        elif self.row_id is not None:  # a line with a row's id, but not a result
            what = (
                f"{self.detail or 'not a result'} (custom id {self.row_id!r}): ignored (that "
                "row is sent again while rounds remain, unless a later line answers it)"
            )
        else:
            what = (
                f"{self.detail or 'not a result'}: ignored (a row it may have answered is "
                "sent again while rounds remain)"
            )
        return f"{where}: {what}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "batch": self.batch,
            "provider_id": self.provider_id,
            "line": self.line,
            "kind": self.kind,
            "row_id": self.row_id,
            "detail": self.detail,
            "message": self.message(),
        }


class Transaction(Protocol):
    def execute(self, sql: str, args: Sequence[Any] = ()) -> int:
        """Run one statement; the number of rows it changed."""
        ...

    def executemany(self, sql: str, args: Sequence[Sequence[Any]]) -> int: ...

    def fetch(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...


class Database(Protocol):
    """What the manifest needs of a database: statements are written with `?` parameters."""

    where: str
    """The database as errors name it (a path, or user@host:port/db without a password)."""
    files: tuple[Path, ...]
    """The files the database lives in (SQLite: the file, its -wal, -shm, -journal and
    .lock companions); none for a server. No job's input or output may be one of them."""

    def transaction(self) -> contextlib.AbstractContextManager[Transaction]: ...

    def fetch(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Rows of one query, outside any transaction (a consistent snapshot)."""
        ...

    def analyze(self) -> None:
        """Refresh the planner's statistics after many rows arrived (PostgreSQL would walk a
        whole job's rows for every row updated without them)."""
        ...

    def try_lock(self, key: int) -> bool:
        """Take the lock `key` for this process, or False when another process holds it. The
        lock goes with the process (or its connection) when it dies."""
        ...

    def unlock(self, key: int) -> None: ...

    def close(self) -> None: ...


class Manifest:
    """The job manifest over one database (see the module's docstring)."""

    def __init__(self, database: Database) -> None:
        self.db = database
        self._lock = threading.RLock()
        self._claims: Counter[str] = Counter()

    @property
    def where(self) -> str:
        return self.db.where

    @property
    def files(self) -> tuple[Path, ...]:
        return self.db.files

    def close(self) -> None:
        self.db.close()

    def _fetch(self, sql: str, *args: Any) -> list[tuple[Any, ...]]:
        with self._lock:
            return self.db.fetch(sql, args)

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[Transaction]:
        with self._lock, self.db.transaction() as tx:
            yield tx

    # -- one process per job -------------------------------------------------------------------

    @contextlib.contextmanager
    def claim(self, job: str) -> Iterator[None]:
        """Drive `job` from this process only, for the `with` block: JobBusyError if another
        process (or another manifest object in this one) drives it now."""
        key = lock_key(job)
        with self._lock:
            if not self._claims[job] and not self.db.try_lock(key):
                raise JobBusyError(
                    f"batch job {job} is being run by another process",
                    where=self.where,
                    fix="wait for that process (`outform batch status JOB` shows where the job "
                    "stands), or stop it and resume here",
                )
            self._claims[job] += 1
        try:
            yield
        finally:
            with self._lock:
                self._claims[job] -= 1
                if not self._claims[job]:
                    del self._claims[job]
                    self.db.unlock(key)

    # -- jobs ----------------------------------------------------------------------------------

    def create_job(self, job: str, spec: bytes, rows: Iterable[tuple[int, str, int, int]]) -> int:
        """Record the job and its rows in one transaction: all of them, or none (a bad row
        raises, and nothing of the job is kept). Returns the number of rows."""
        now = time.time()
        count = 0
        with self._transaction() as tx:
            tx.execute(
                "INSERT INTO outform_batch_jobs (id, spec, state, created, updated) "
                "VALUES (?, ?, 'new', ?, ?)",
                (job, spec, now, now),
            )
            chunk: list[tuple[str, int, str, int, int]] = []
            for idx, row_id, line, offset in rows:
                chunk.append((job, idx, row_id, line, offset))
                if len(chunk) >= _PAGE:
                    count += self._insert_rows(tx, chunk)
                    chunk = []
            count += self._insert_rows(tx, chunk)
            tx.execute("UPDATE outform_batch_jobs SET rows = ? WHERE id = ?", (count, job))
        with self._lock:
            self.db.analyze()
        return count

    def _insert_rows(self, tx: Transaction, chunk: list[tuple[str, int, str, int, int]]) -> int:
        """Insert a chunk of rows; a repeated row id is a UsageError naming both lines."""
        if not chunk:
            return 0
        inserted = tx.executemany(
            "INSERT INTO outform_batch_rows (job, idx, row_id, line, byte_offset) "
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            chunk,
        )
        if inserted == len(chunk):
            return inserted
        job = chunk[0][0]
        lines: dict[str, list[int]] = {}
        for _, _, row_id, line, _ in chunk:
            lines.setdefault(row_id, []).append(line)
        ids = list(lines)
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            for row_id, line in tx.fetch(
                "SELECT row_id, line FROM outform_batch_rows "
                f"WHERE job = ? AND row_id IN ({_marks(len(part))})",
                (job, *part),
            ):
                lines[row_id].append(line)
        # an id met on two lines, in this chunk or an earlier one
        repeated = next(row_id for row_id, seen in lines.items() if len(set(seen)) > 1)
        raise UsageError(
            f"the row id {repeated!r} appears more than once",
            where=f"lines {', '.join(map(str, sorted(set(lines[repeated]))))}",
            fix="give every row its own id (it is the provider's custom id)",
        )

    def delete_job(self, job: str) -> None:
        with self._transaction() as tx:
            for table in TABLES[1:]:
                tx.execute(f"DELETE FROM {table} WHERE job = ?", (job,))
            tx.execute("DELETE FROM outform_batch_jobs WHERE id = ?", (job,))

    def job(self, job: str) -> JobRecord:
        rows = self._fetch(_JOB + " WHERE id = ?", job)
        if not rows:
            raise UsageError(
                f"no batch job {job!r} in the manifest",
                where=self.where,
                fix="check the job id (`outform batch status` lists the jobs) and --manifest",
            )
        return _job_record(rows[0])

    def jobs(self) -> list[JobRecord]:
        return [_job_record(r) for r in self._fetch(_JOB + " ORDER BY created DESC")]

    def set_job(
        self, job: str, *, state: str | None = None, round: int | None = None, message: str = ""
    ) -> None:
        now = time.time()
        with self._transaction() as tx:
            if state is not None:
                tx.execute(
                    "UPDATE outform_batch_jobs SET state = ?, message = ?, updated = ? "
                    "WHERE id = ?",
                    (state, message, now, job),
                )
            if round is not None:
                tx.execute(
                    "UPDATE outform_batch_jobs SET round = ?, updated = ? WHERE id = ?",
                    (round, now, job),
                )
                tx.execute(
                    "INSERT INTO outform_batch_rounds (job, round, started) VALUES (?, ?, ?) "
                    "ON CONFLICT DO NOTHING",
                    (job, round, now),
                )

    # -- rows ----------------------------------------------------------------------------------

    def pending(
        self, job: str, round: int, after: int = -1, limit: int = _PAGE
    ) -> list[PendingRow]:
        rows = self._fetch(
            "SELECT idx, row_id, line, byte_offset, attempts, last_text, last_hint, history "
            "FROM outform_batch_rows WHERE job = ? AND state = 'pending' AND round = ? "
            "AND idx > ? ORDER BY idx LIMIT ?",
            job,
            round,
            after,
            limit,
        )
        return [_pending(r) for r in rows]

    def pending_pages(self, job: str, round: int) -> Iterator[list[PendingRow]]:
        """The rows pending in `round`, a page at a time, in input order."""
        after = -1
        while page := self.pending(job, round, after):
            yield page
            after = page[-1].idx

    def count_pending(self, job: str, round: int | None = None) -> int:
        if round is None:
            return self._count("state = 'pending'", job)
        return self._count("state = 'pending' AND round = ?", job, round)

    def count_open(self, job: str, round: int) -> int:
        """Rows of `round` not done: pending, or waiting in a batch."""
        return self._count("state IN ('pending', 'sent') AND round = ?", job, round)

    def count_waiting(self, job: str, key: str) -> int:
        """Rows still waiting in batch `key` for their result."""
        return self._count("batch = ? AND state = 'sent'", job, key)

    def _count(self, where: str, job: str, *args: Any) -> int:
        ((n,),) = self._fetch(
            f"SELECT COUNT(*) FROM outform_batch_rows WHERE job = ? AND {where}", job, *args
        )
        return int(n)

    def status_counts(self, job: str) -> dict[str, int]:
        counts: dict[str, int] = {}
        for state, status, n in self._fetch(
            "SELECT state, status, COUNT(*) FROM outform_batch_rows WHERE job = ? "
            "GROUP BY state, status",
            job,
        ):
            name = status if state == "done" else state
            counts[name] = counts.get(name, 0) + int(n)
        return counts

    def waiting(self, job: str, key: str, row_ids: Sequence[str]) -> dict[str, WaitingRow]:
        """Of `row_ids`, the rows still waiting in batch `key` (not done since). Looked up
        by id (the unique index), the batch and state checked here: the planner would
        otherwise walk the whole batch through its index for every group."""
        found: dict[str, WaitingRow] = {}
        for start in range(0, len(row_ids), 500):
            part = row_ids[start : start + 500]
            for r in self._fetch(
                "SELECT row_id, idx, round, attempts, line, history, batch, state "
                f"FROM outform_batch_rows WHERE job = ? AND row_id IN ({_marks(len(part))})",
                job,
                *part,
            ):
                if r[6] == key and r[7] == "sent":
                    found[r[0]] = _waiting(r)
        return found

    def left_in_batch(self, job: str, key: str) -> Iterator[list[WaitingRow]]:
        """The rows of batch `key` still waiting, a page at a time (those the provider's
        results did not mention)."""
        after = -1
        while True:
            rows = self._fetch(
                _WAITING + " AND idx > ? ORDER BY idx LIMIT ?", job, key, after, _PAGE
            )
            if not rows:
                return
            yield [_waiting(r) for r in rows]
            after = rows[-1][1]

    def record(self, job: str, updates: Sequence[RowUpdate]) -> None:
        """Outcomes of rows, in one transaction. A row already done is left as it is (a
        result read twice after a restart changes nothing). A row sent again without a new
        reply keeps the reply and hint it was last re-asked with."""
        if not updates:
            return
        final = [
            (u.status, u.result, u.history, job, u.idx) for u in updates if u.next_round is None
        ]
        again = [
            (u.next_round, u.text, u.hint, u.history, job, u.idx)
            for u in updates
            if u.next_round is not None
        ]
        with self._transaction() as tx:
            if final:
                tx.executemany(
                    "UPDATE outform_batch_rows SET state = 'done', status = ?, result = ?, "
                    "history = ?, attempts = attempts + 1, last_text = NULL, last_hint = NULL "
                    "WHERE job = ? AND idx = ? AND state != 'done'",
                    final,
                )
            if again:
                tx.executemany(
                    "UPDATE outform_batch_rows SET state = 'pending', round = ?, batch = NULL, "
                    "last_text = COALESCE(?, last_text), last_hint = COALESCE(?, last_hint), "
                    "history = ?, attempts = attempts + 1 "
                    "WHERE job = ? AND idx = ? AND state != 'done'",
                    again,
                )

    def results(self, job: str) -> Iterator[tuple[int, bytes | None]]:
        """(idx, output line) of every row in input order, a page at a time; None for rows
        not done yet."""
        after = -1
        while True:
            rows = self._fetch(
                "SELECT idx, result FROM outform_batch_rows WHERE job = ? AND idx > ? "
                "ORDER BY idx LIMIT ?",
                job,
                after,
                _PAGE,
            )
            if not rows:
                return
            for idx, result in rows:
                yield idx, _bytes(result)
            after = rows[-1][0]

    # -- batches -------------------------------------------------------------------------------

    def start_batch(self, job: str, key: str, round: int, idxs: Sequence[int]) -> None:
        """Before the provider calls: the batch as `submitting`, its rows as `sent` in it, its
        creation call as not sent yet."""
        with self._transaction() as tx:
            tx.execute(
                "INSERT INTO outform_batch_batches (job, key, round, state, size, started) "
                "VALUES (?, ?, ?, 'submitting', ?, ?)",
                (job, key, round, len(idxs), time.time()),
            )
            tx.execute("DELETE FROM outform_batch_creates WHERE job = ? AND key = ?", (job, key))
            tx.execute(
                "INSERT INTO outform_batch_creates (job, key, deadline) VALUES (?, ?, NULL)",
                (job, key),
            )
            tx.executemany(
                "UPDATE outform_batch_rows SET state = 'sent', batch = ? "
                "WHERE job = ? AND idx = ? AND state = 'pending'",
                [(key, job, idx) for idx in idxs],
            )
            _count_sent(tx, job, round, len(idxs))

    def creating(self, job: str, key: str, deadline: float) -> None:
        """Just before batch `key`'s creation call is sent: the time (Unix) until which the
        provider may still make the batch, the call's deadline."""
        with self._transaction() as tx:
            tx.execute(
                "UPDATE outform_batch_creates SET deadline = ? WHERE job = ? AND key = ?",
                (deadline, job, key),
            )

    def create_deadlines(self, job: str) -> dict[str, float | None]:
        """Of the job's batches still `submitting`, the deadline of each one's creation call:
        None when the call was never sent. A batch missing here was recorded by an older
        outform (whether its call was sent is not known)."""
        rows = self._fetch(
            "SELECT c.key, c.deadline FROM outform_batch_creates c "
            "JOIN outform_batch_batches b ON b.job = c.job AND b.key = c.key "
            "WHERE c.job = ? AND b.state = 'submitting'",
            job,
        )
        return {key: None if deadline is None else float(deadline) for key, deadline in rows}

    def add_sent(self, job: str, round: int, count: int) -> None:
        """Rows sent in `round` as ordinary calls (a live job, or a tail too small for a
        batch), counted as a batch's rows are."""
        with self._transaction() as tx:
            _count_sent(tx, job, round, count)

    def set_batch(
        self,
        job: str,
        key: str,
        state: str,
        *,
        provider_id: str | None = None,
        message: str = "",
    ) -> None:
        now = time.time()
        with self._transaction() as tx:
            if provider_id is not None:
                tx.execute(
                    "UPDATE outform_batch_batches SET state = ?, provider_id = ?, submitted = ?, "
                    "message = ? WHERE job = ? AND key = ?",
                    (state, provider_id, now, message, job, key),
                )
            else:
                ended = now if state in ("done", "failed") else None
                tx.execute(
                    "UPDATE outform_batch_batches SET state = ?, message = ?, "
                    "ended = COALESCE(?, ended) WHERE job = ? AND key = ?",
                    (state, message, ended, job, key),
                )

    def release_batch(self, job: str, key: str) -> None:
        """A batch that never reached the provider: its rows go back to pending, they are
        no longer counted as sent in its round (they are counted when sent again), and it is
        forgotten (its rows will be sent again under a new key: see `next_batch_number`). All
        of it, or none of it."""
        with self._transaction() as tx:
            for round_, size in tx.fetch(
                "SELECT round, size FROM outform_batch_batches WHERE job = ? AND key = ?",
                (job, key),
            ):
                _count_sent(tx, job, int(round_), -int(size))
            tx.execute(
                "UPDATE outform_batch_rows SET state = 'pending', batch = NULL "
                "WHERE job = ? AND batch = ? AND state = 'sent'",
                (job, key),
            )
            tx.execute("DELETE FROM outform_batch_batches WHERE job = ? AND key = ?", (job, key))

    def batches(self, job: str, states: Sequence[str] | None = None) -> list[BatchRecord]:
        query, args = _BATCH, [job]
        if states:
            query += f" AND state IN ({_marks(len(states))})"
            args += list(states)
        return [BatchRecord(*r) for r in self._fetch(query + " ORDER BY started", *args)]

    def next_batch_number(self, job: str) -> int:
        """The number of the job's next batch key (`r{round}b{number}`): one above any key the
        job has used, released batches' included (a batch released while later ones live
        would otherwise lend its number, or a live batch's, to the next)."""
        rows = self._fetch(
            "SELECT key FROM outform_batch_batches WHERE job = ? "
            "UNION SELECT key FROM outform_batch_creates WHERE job = ?",
            job,
            job,
        )
        numbers = (str(key).rpartition("b")[2] for (key,) in rows)
        return max((int(n) for n in numbers if n.isdigit()), default=-1) + 1

    def rounds(self, job: str) -> list[Mapping[str, Any]]:
        rows = self._fetch(
            "SELECT round, started, ended, sent FROM outform_batch_rounds WHERE job = ? "
            "ORDER BY round",
            job,
        )
        return [{"round": r, "started": s, "ended": e, "sent": n} for r, s, e, n in rows]

    # -- warnings ------------------------------------------------------------------------------

    def add_warnings(self, job: str, warnings: Sequence[ResultWarning]) -> None:
        """Record lines of results that were not used; a line read again (after a restart)
        is recorded once."""
        if not warnings:
            return
        with self._transaction() as tx:
            tx.executemany(
                "INSERT INTO outform_batch_warnings "
                "(job, batch, provider_id, line, kind, row_id, detail) "
                "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                [
                    (job, w.batch, w.provider_id, w.line, w.kind, w.row_id, w.detail)
                    for w in warnings
                ],
            )

    def warnings(self, job: str, limit: int = _PAGE) -> list[ResultWarning]:
        """The job's warnings (at most `limit`), by batch and line."""
        rows = self._fetch(
            "SELECT batch, provider_id, line, kind, row_id, detail FROM outform_batch_warnings "
            "WHERE job = ? ORDER BY batch, line LIMIT ?",
            job,
            limit,
        )
        return [ResultWarning(b, p, int(n), k, r, d) for b, p, n, k, r, d in rows]

    def warning_counts(self, job: str) -> dict[str, int]:
        rows = self._fetch(
            "SELECT kind, COUNT(*) FROM outform_batch_warnings WHERE job = ? GROUP BY kind", job
        )
        return {kind: int(n) for kind, n in rows}

    def row_indexes(self, job: str, row_ids: Sequence[str]) -> dict[str, int]:
        """Of `row_ids`, those that are rows of the job, with their index."""
        found: dict[str, int] = {}
        for start in range(0, len(row_ids), 500):
            part = row_ids[start : start + 500]
            for row_id, idx in self._fetch(
                "SELECT row_id, idx FROM outform_batch_rows "
                f"WHERE job = ? AND row_id IN ({_marks(len(part))})",
                job,
                *part,
            ):
                found[row_id] = int(idx)
        return found

    def end_round(self, job: str, round: int) -> None:
        with self._transaction() as tx:
            tx.execute(
                "UPDATE outform_batch_rounds SET ended = ? "
                "WHERE job = ? AND round = ? AND ended IS NULL",
                (time.time(), job, round),
            )


def lock_key(job: str) -> int:
    """A job's lock as a 62-bit number: a PostgreSQL advisory lock key, a byte offset."""
    digest = hashlib.blake2b(f"outform-batch:{job}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 2


def _marks(n: int) -> str:
    return ", ".join("?" * n)


def _bytes(value: Any) -> bytes | None:
    """A bytes column as bytes (PostgreSQL may hand back a memoryview)."""
    return None if value is None else bytes(value)


def _pending(r: tuple[Any, ...]) -> PendingRow:
    return PendingRow(r[0], r[1], r[2], r[3], r[4], r[5], _bytes(r[6]), _bytes(r[7]))


def _waiting(r: tuple[Any, ...]) -> WaitingRow:
    return WaitingRow(r[0], r[1], r[2], r[3], r[4], _bytes(r[5]))


def _job_record(row: tuple[Any, ...]) -> JobRecord:
    return JobRecord(row[0], bytes(row[1]), *row[2:])


def _count_sent(tx: Transaction, job: str, round: int, count: int) -> None:
    tx.execute(
        "UPDATE outform_batch_rounds SET sent = sent + ? WHERE job = ? AND round = ?",
        (count, job, round),
    )
