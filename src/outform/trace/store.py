"""The trace store: what SQLite and PostgreSQL share (tables, writes, retention, queries).

A store is a recorder sink: `open` and `write` run on the recorder's thread, each batch in
one transaction (runs merged, events inserted, counts and histograms added to). A batch the
store cannot take, because it could not be opened (a read-only directory, a disk already full,
a server down) or because the commit failed, is kept and retried with the next one (a store
not open tries to open again first), up to `max_pending_events` events (beyond, the oldest
pending batch is dropped and counted in `trace.dropped`). What is still pending at `close` is
lost: counted in `trace.dropped` if that count can be written, else said on standard error
(`TraceLossWarning`) and kept in `lost_events`. One rule, whenever the store fails.

Reads (`counts`, `histograms`, `runs`, `run`, `events`) may come from any thread: each thread
gets its own connection. The SQL is written once, with `?` placeholders and `{least}` /
`{greatest}` for the two-argument minimum and maximum, and each backend supplies its types.

Retention runs when the store opens, every `retention_every` seconds, and after any write
that leaves the store over `max_size_mb` (`_over_size`, a cheap check: SQLite's file size; at
most once a second): rows older than `retention_days` go, freed space is given back, and while
the store is still larger than `max_size_mb` the oldest runs and their events go (counts and
histograms hold no content and stay until their age). Size is what the store takes: SQLite's
whole file, free pages included (incremental vacuum gives them back; the WAL is checkpointed
and truncated), PostgreSQL's row sizes (its files keep the space for new rows after
autovacuum).
"""

from __future__ import annotations

import logging
import threading
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import orjson

from outform.trace.events import Event
from outform.trace.recorder import Batch, TraceLossWarning
from outform.trace.rows import EVENT_COLUMNS, Rows, RunRow, bucket_of, rows_of

log = logging.getLogger("outform.trace")

SCHEMA_VERSION = 1
HOUR = 3600
MINUTE_HORIZON = 6 * HOUR
"""Counts and histograms keep per-minute rows this long; older ones are merged into hourly
rows (the hour's first minute), which bounds the rows a report over weeks reads."""
RUNS, EVENTS = "outform_trace_runs", "outform_trace_events"
COUNTS, HISTOGRAMS, META = "outform_trace_counts", "outform_trace_histograms", "outform_trace_meta"
TABLES = (RUNS, EVENTS, COUNTS, HISTOGRAMS)
TREND_KINDS = ("run.end", "output.change", "run.reasked", "stream.abort")
"""What a trend bucket shows: runs (and how they ended), interventions, re-asks, aborts."""
_COUNT_DIMS = ("step", "provider", "model", "mode", "kind", "stage", "key")
_HISTOGRAM_DIMS = ("step", "provider", "model", "metric", "bin")
_HOUR_OF = f"(bucket / {HOUR}) * {HOUR}"
_MODEL_NAME = "CASE WHEN provider = '' THEN model ELSE provider || ':' || model END"

_SCHEMA = (
    f"""CREATE TABLE IF NOT EXISTS {META} (key TEXT PRIMARY KEY, value TEXT NOT NULL)""",
    f"""CREATE TABLE IF NOT EXISTS {RUNS} (
        run_id TEXT PRIMARY KEY, started {{real}} NOT NULL, source TEXT NOT NULL,
        ended {{real}}, step TEXT, agent TEXT, tags TEXT, provider TEXT, model TEXT,
        mode TEXT, mode_reason TEXT, schema_hash TEXT, streaming INTEGER NOT NULL,
        outcome TEXT, attempts INTEGER NOT NULL, changes INTEGER NOT NULL,
        reasks INTEGER NOT NULL, aborts INTEGER NOT NULL, calls INTEGER NOT NULL,
        latency_ms {{real}} NOT NULL, input_tokens {{big}} NOT NULL,
        output_tokens {{big}} NOT NULL, duration_ms {{real}}, error_class TEXT)""",
    f"CREATE INDEX IF NOT EXISTS {RUNS}_started ON {RUNS} (started)",
    f"""CREATE TABLE IF NOT EXISTS {EVENTS} (
        id {{serial}}, run_id TEXT, attempt INTEGER NOT NULL, time {{real}} NOT NULL,
        name TEXT NOT NULL, stage TEXT, path TEXT, transform TEXT, step TEXT, provider TEXT,
        model TEXT, body TEXT NOT NULL)""",
    f"CREATE INDEX IF NOT EXISTS {EVENTS}_run ON {EVENTS} (run_id, id)",
    f"CREATE INDEX IF NOT EXISTS {EVENTS}_time ON {EVENTS} (time)",
    f"CREATE INDEX IF NOT EXISTS {EVENTS}_name ON {EVENTS} (name, time)",
    f"""CREATE TABLE IF NOT EXISTS {COUNTS} (
        bucket {{big}} NOT NULL, step TEXT NOT NULL, provider TEXT NOT NULL,
        model TEXT NOT NULL, mode TEXT NOT NULL, kind TEXT NOT NULL, stage TEXT NOT NULL,
        key TEXT NOT NULL, n {{big}} NOT NULL,
        PRIMARY KEY (bucket, step, provider, model, mode, kind, stage, key)){{without_rowid}}""",
    f"""CREATE TABLE IF NOT EXISTS {HISTOGRAMS} (
        bucket {{big}} NOT NULL, step TEXT NOT NULL, provider TEXT NOT NULL,
        model TEXT NOT NULL, metric TEXT NOT NULL, bin INTEGER NOT NULL, n {{big}} NOT NULL,
        PRIMARY KEY (bucket, step, provider, model, metric, bin)){{without_rowid}}""",
)

_LATEST_WINS = (
    "step", "agent", "tags", "provider", "model", "mode", "mode_reason", "schema_hash",
    "outcome", "duration_ms", "error_class",
)  # fmt: skip
_SUMMED = ("changes", "reasks", "aborts", "calls", "latency_ms", "input_tokens", "output_tokens")
_MERGE_RUN = (
    f"INSERT INTO {RUNS} ({', '.join(RunRow.COLUMNS)})"
    f" VALUES ({', '.join('?' * len(RunRow.COLUMNS))})"
    f" ON CONFLICT (run_id) DO UPDATE SET started = {{least}}({RUNS}.started, excluded.started),"
    f" ended = COALESCE(excluded.ended, {RUNS}.ended),"
    + ",".join(f" {c} = COALESCE(excluded.{c}, {RUNS}.{c})" for c in _LATEST_WINS)
    + f", streaming = {{greatest}}({RUNS}.streaming, excluded.streaming)"
    f", attempts = {{greatest}}({RUNS}.attempts, excluded.attempts),"
    + ",".join(f" {c} = {RUNS}.{c} + excluded.{c}" for c in _SUMMED)
)
_INSERT_EVENT = (
    f"INSERT INTO {EVENTS} ({', '.join(EVENT_COLUMNS)})"
    f" VALUES ({', '.join('?' * len(EVENT_COLUMNS))})"
)
_ADD_COUNT = (
    f"INSERT INTO {COUNTS} (bucket, step, provider, model, mode, kind, stage, key, n)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (bucket, step, provider, model, mode,"
    f" kind, stage, key) DO UPDATE SET n = {COUNTS}.n + excluded.n"
)
_ADD_HISTOGRAM = (
    f"INSERT INTO {HISTOGRAMS} (bucket, step, provider, model, metric, bin, n)"
    " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (bucket, step, provider, model, metric, bin)"
    f" DO UPDATE SET n = {HISTOGRAMS}.n + excluded.n"
)


@dataclass(frozen=True)
class Filter:
    """Which rows a read looks at: a time window [since, until) and optional labels. `model`
    matches the bare model name or `provider:model`."""

    since: float
    until: float
    step: str | None = None
    model: str | None = None

    def where(self, time_column: str, *, labelled: bool = True) -> tuple[str, list[Any]]:
        clauses = [f"{time_column} >= ?", f"{time_column} < ?"]
        params: list[Any] = [self.since, self.until]
        if self.step is not None and labelled:
            clauses.append("step = ?")
            params.append(self.step)
        if self.model is not None and labelled:
            clauses.append("(model = ? OR provider || ':' || model = ?)")
            params += [self.model, self.model]
        return " AND ".join(clauses), params

    def bucketed(self) -> tuple[int, int]:
        """The window in whole count buckets: from the bucket holding `since`."""
        return bucket_of(self.since), int(self.until)


class TraceStore:
    """The trace store over one database; subclasses connect and name their types."""

    kind: ClassVar[str] = ""
    TYPES: ClassVar[dict[str, str]] = {}

    def __init__(
        self,
        *,
        retention_days: float = 30.0,
        max_size_mb: float = 1024,
        retention_every: float = 60.0,
        max_pending_events: int = 100_000,
        create: bool = True,
        where: str = "[trace] store",
    ) -> None:
        """`create=False`: a reader's store, which must exist already (its tables are never
        created); `where`: the setting that named it, for messages."""
        self.create = create
        self.where = where
        self.retention_days = retention_days
        self.max_size_bytes = int(max_size_mb * 1024 * 1024)
        self.retention_every = retention_every
        self.max_pending_events = max_pending_events
        self._writer: Any = None
        """The writing connection; None until `open` succeeds (`write` then tries again)."""
        self._pending: list[Rows] = []
        self._pending_dropped = 0
        self.lost_events = 0
        """Events lost at `close` with not even their count written (see `_lose_pending`)."""
        self._last_retention = 0.0
        self._local = threading.local()
        self._readers: list[Any] = []
        self._readers_lock = threading.Lock()

    # -- to implement ----------------------------------------------------------------------

    def _connect(self) -> Any:
        raise NotImplementedError

    def _begin(self, conn: Any) -> None:
        raise NotImplementedError

    def _used_bytes(self, conn: Any) -> int:
        raise NotImplementedError

    def _after_delete(self, conn: Any) -> None:
        """Give freed space back (SQLite's incremental vacuum)."""

    def _over_size(self) -> bool:
        """A cheap check after each write: is the store over `max_size_mb`? (False where
        there is no cheap answer: retention then runs every `retention_every` seconds.)"""
        return False

    def _lock_schema(self, conn: Any) -> None:
        """Serialise schema creation between processes (PostgreSQL's advisory lock)."""

    def sql(self, text: str) -> str:
        """`text` in this backend's spelling."""
        return text.format(**self.TYPES)

    def describe(self) -> str:
        """Where the store is, for messages (never a password)."""
        raise NotImplementedError

    def files(self) -> tuple[Path, ...]:
        """The files the store is kept in (none for a server's database): what no command
        may write its output over."""
        return ()

    # -- the sink --------------------------------------------------------------------------

    def open(self) -> None:
        """Open the writing connection. A store that cannot be opened does not raise: it is
        left closed, its batches are kept as those of a failed commit are, and each `write`
        tries to open it again (see the module's docstring)."""
        try:
            self._open_writer()
        except Exception as exc:
            log.error(
                "outform trace: the trace store %s cannot be opened (%s); its events are kept "
                "and it is tried again with each batch",
                self.describe(),
                _reason(exc),
            )

    def _open_writer(self) -> None:
        conn = self._connect()
        try:
            self.prepare(conn)
        except BaseException:
            try:
                conn.close()
            except Exception:
                log.debug("closing a trace store connection failed", exc_info=True)
            raise
        self._writer = conn
        try:
            self.apply_retention()
        except Exception:  # the store is open; retention runs again within a minute
            log.exception("outform trace: retention failed on %s", self.describe())

    def prepare(self, conn: Any) -> None:
        """Create the tables (idempotent; a reader's store only checks they are there) and
        check the schema version."""
        if not self.create:
            self._require_tables(conn)
        self._begin(conn)
        try:
            self._lock_schema(conn)
            for statement in _SCHEMA:
                conn.execute(self.sql(statement))
            found = conn.execute(self.sql(f"SELECT value FROM {META} WHERE key = ?"),
                                 ("schema_version",)).fetchone()  # fmt: skip
            if found is None:
                conn.execute(
                    self.sql(f"INSERT INTO {META} (key, value) VALUES (?, ?)"),
                    ("schema_version", str(SCHEMA_VERSION)),
                )
            conn.commit()
        except BaseException:
            conn.rollback()
            raise
        if found is not None and int(found[0]) > SCHEMA_VERSION:
            from outform.errors import StoreError

            raise StoreError(
                f"the trace store {self.describe()} has schema version {found[0]}, newer "
                f"than this outform understands ({SCHEMA_VERSION})",
                where=self.where,
                fix="upgrade outform, or point [trace] store at another database",
            )

    def _require_tables(self, conn: Any) -> None:
        from outform.errors import StoreError

        try:
            conn.execute(self.sql(f"SELECT value FROM {META} WHERE key = ?"), ("schema_version",))
        except Exception:
            conn.rollback()
            raise StoreError(
                f"no outform trace store in {self.describe()}",
                where=self.where,
                fix="check the store named there, or record runs first (with [trace] enabled)",
            ) from None
        conn.rollback()

    def write(self, batch: Batch) -> None:
        rows = rows_of(batch)
        if rows:
            self._pending.append(rows)
        self._bound_pending()
        if self._writer is None:
            self._open_writer()  # raises as a failed commit does: the batches wait
        if self._pending or self._pending_dropped:
            self._commit_pending()
        since = time.time() - self._last_retention
        if since >= self.retention_every or (since >= 1.0 and self._over_size()):
            self.apply_retention()

    def close(self) -> None:
        if self._pending or self._pending_dropped:
            try:
                if self._writer is None:
                    self._open_writer()
                self._commit_pending()
            except Exception as exc:
                log.exception("outform trace: the last batch could not be written")
                self._lose_pending(exc)
        for conn in [self._writer, *self._readers]:
            if conn is not None:
                try:
                    conn.close()
                except Exception:
                    log.debug("closing a trace store connection failed", exc_info=True)
        self._writer, self._readers = None, []

    def _lose_pending(self, error: BaseException) -> None:
        """The batches that could not be written at the end are lost: count them in
        `trace.dropped` (one row may still fit where a batch did not), or, when even that
        fails, say so on standard error (`TraceLossWarning`) and in `lost_events`."""
        lost = self._pending_dropped + sum(r.size() for r in self._pending)
        self._pending.clear()
        self._pending_dropped = lost
        if self._writer is not None:
            try:
                self._commit_pending()
                return
            except Exception:
                log.debug("outform trace: the count of lost events could not be written either")
        self._pending_dropped = 0
        self.lost_events += lost
        fix = getattr(error, "fix", None) or "free disk space, or point [trace] store elsewhere"
        what = (
            f"{lost} events could not be written to the trace store {self.describe()} and "
            f"are lost ({type(error).__name__}: {_reason(error)}); they are not counted in "
            "its dropped_events"
        )
        warnings.warn(TraceLossWarning(what, self.describe(), fix), stacklevel=1)

    def _bound_pending(self) -> None:
        while len(self._pending) > 1 and (
            sum(len(r.events) for r in self._pending) > self.max_pending_events
        ):
            lost = self._pending.pop(0)
            self._pending_dropped += lost.size()
            log.warning("outform trace: dropped %d events the store could not take", lost.size())

    def _commit_pending(self) -> None:
        conn = self._writer
        self._begin(conn)
        try:
            for rows in self._pending:
                self._apply(conn, rows)
            if self._pending_dropped:
                minute = bucket_of(time.time())
                conn.execute(
                    self.sql(_ADD_COUNT),
                    (minute, "", "", "", "", "trace.dropped", "", "", self._pending_dropped),
                )
            conn.commit()
        except BaseException:
            conn.rollback()
            raise
        self._pending.clear()
        self._pending_dropped = 0

    def _apply(self, conn: Any, rows: Rows) -> None:
        cursor = conn.cursor()
        if rows.runs:
            cursor.executemany(self.sql(_MERGE_RUN), [r.values() for r in rows.runs.values()])
        if rows.events:
            cursor.executemany(self.sql(_INSERT_EVENT), rows.events)
        if rows.counts:
            cursor.executemany(self.sql(_ADD_COUNT), [(*k, n) for k, n in rows.counts.items()])
        if rows.histograms:
            cursor.executemany(
                self.sql(_ADD_HISTOGRAM), [(*k, n) for k, n in rows.histograms.items()]
            )

    # -- retention -------------------------------------------------------------------------

    def apply_retention(self, now: float | None = None) -> int:
        """Delete what is past `retention_days`, then the oldest runs while the store is over
        `max_size_mb`. Returns the number of runs deleted."""
        conn = self._writer
        now = time.time() if now is None else now
        self._last_retention = now
        cutoff = now - self.retention_days * 86_400
        deleted = self._delete_before(conn, cutoff, with_counts=True)
        self.compact(conn, now)
        used = self._used_bytes(conn)
        if deleted or used > self.max_size_bytes:
            self._after_delete(conn)  # free pages first: they count, and may be enough
            used = self._used_bytes(conn)
        for _ in range(20):
            if used <= self.max_size_bytes:
                break
            total = conn.execute(self.sql(f"SELECT COUNT(*) FROM {RUNS}")).fetchone()[0]
            if not total:
                break
            # The oldest share of runs that should bring the store under the limit, and 5%.
            share = min(1.0, (used - self.max_size_bytes) / used + 0.05)
            edge = conn.execute(
                self.sql(f"SELECT started FROM {RUNS} ORDER BY started LIMIT 1 OFFSET ?"),
                (max(0, int(total * share) - 1),),
            ).fetchone()[0]
            deleted += self._delete_before(conn, edge + 1e-6, with_counts=False)
            self._after_delete(conn)
            used = self._used_bytes(conn)
        return deleted

    def compact(self, conn: Any, now: float) -> None:
        """Merge per-minute counts and histograms older than `MINUTE_HORIZON` into hourly
        rows (whole hours only)."""
        horizon = int(now - MINUTE_HORIZON) // HOUR * HOUR
        self._begin(conn)
        try:
            for table, dims in ((COUNTS, _COUNT_DIMS), (HISTOGRAMS, _HISTOGRAM_DIMS)):
                columns = ", ".join(dims)
                conn.execute(
                    self.sql(
                        f"INSERT INTO {table} (bucket, {columns}, n)"
                        f" SELECT {_HOUR_OF}, {columns}, SUM(n) FROM {table}"
                        f" WHERE bucket < ? AND bucket <> {_HOUR_OF} GROUP BY {_HOUR_OF}, {columns}"
                        f" ON CONFLICT (bucket, {columns}) DO UPDATE SET n = {table}.n + excluded.n"
                    ),
                    (horizon,),
                )
                conn.execute(
                    self.sql(f"DELETE FROM {table} WHERE bucket < ? AND bucket <> {_HOUR_OF}"),
                    (horizon,),
                )
            conn.commit()
        except BaseException:
            conn.rollback()
            raise

    def _delete_before(self, conn: Any, cutoff: float, *, with_counts: bool) -> int:
        self._begin(conn)
        try:
            gone = conn.execute(self.sql(f"DELETE FROM {RUNS} WHERE started < ?"), (cutoff,))
            deleted = max(int(gone.rowcount), 0)
            conn.execute(self.sql(f"DELETE FROM {EVENTS} WHERE time < ?"), (cutoff,))
            if with_counts:
                for table in (COUNTS, HISTOGRAMS):
                    statement = self.sql(f"DELETE FROM {table} WHERE bucket < ?")
                    conn.execute(statement, (bucket_of(cutoff),))
            conn.commit()
        except BaseException:
            conn.rollback()
            raise
        return deleted

    # -- reads -----------------------------------------------------------------------------

    def _reader(self) -> Any:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect()
            self.prepare(conn)
            self._local.conn = conn
            with self._readers_lock:
                self._readers.append(conn)
        return conn

    def query(self, text: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        conn = self._reader()
        try:
            rows = conn.execute(self.sql(text), tuple(params)).fetchall()
        finally:
            conn.rollback()  # end the read transaction: the next read sees new commits
        return [tuple(r) for r in rows]

    def counts(self, where: Filter, half: float) -> list[tuple[Any, ...]]:
        """(half, step, model, mode, kind, stage, key, n) summed over the window, apart for
        its two halves (`half`: where the second begins; 0 before, 1 from there on); `model`
        is `provider:model` (or the bare name)."""
        start, end = where.bucketed()
        clause, params = Filter(start, end, where.step, where.model).where("bucket")
        return self.query(
            f"SELECT CASE WHEN bucket >= ? THEN 1 ELSE 0 END AS half, step, {_MODEL_NAME},"
            f" mode, kind, stage, key, CAST(SUM(n) AS BIGINT) FROM {COUNTS} WHERE {clause}"
            " GROUP BY half, step, provider, model, mode, kind, stage, key",
            [half, *params],
        )

    def trend(self, where: Filter, width: int) -> list[tuple[Any, ...]]:
        """(slot, '', model, '', kind, stage, key, n) of the kinds a trend shows
        (`TREND_KINDS`), summed per slot of `width` seconds from the window's first bucket:
        only the dimensions the trend reads, so a long trend costs few rows (the key is kept
        for run ends only, where it is the outcome)."""
        start, end = where.bucketed()
        clause, params = Filter(start, end, where.step, where.model).where("bucket")
        kinds = ", ".join("?" * len(TREND_KINDS))
        return self.query(
            f"SELECT (bucket - ?) / ? AS slot, '', {_MODEL_NAME} AS name, '', kind, stage,"
            " CASE WHEN kind = 'run.end' THEN key ELSE '' END AS outcome,"
            f" CAST(SUM(n) AS BIGINT) FROM {COUNTS} WHERE kind IN ({kinds}) AND {clause}"
            " GROUP BY slot, name, kind, stage, outcome",
            [start, width, *TREND_KINDS, *params],
        )

    def histograms(self, where: Filter) -> list[tuple[Any, ...]]:
        """(provider, model, metric, bin, n) over the window."""
        start, end = where.bucketed()
        clause, params = Filter(start, end, where.step, where.model).where("bucket")
        return self.query(
            f"SELECT provider, model, metric, bin, CAST(SUM(n) AS BIGINT) FROM {HISTOGRAMS}"
            f" WHERE {clause}"
            " GROUP BY provider, model, metric, bin",
            params,
        )

    def events(self, where: Filter, names: Sequence[str], *, limit: int = 20) -> list[Event]:
        """The latest events of the given names, newest first."""
        clause, params = where.where("time")
        marks = ", ".join("?" * len(names))
        rows = self.query(
            f"SELECT body FROM {EVENTS} WHERE name IN ({marks}) AND {clause}"
            " ORDER BY time DESC LIMIT ?",
            [*names, *params, limit],
        )
        return [Event.from_dict(orjson.loads(body)) for (body,) in rows]

    def runs(self, where: Filter, *, limit: int = 50) -> list[dict[str, Any]]:
        """The latest runs that started in the window, newest first."""
        clause, params = where.where("started")
        rows = self.query(
            f"SELECT {', '.join(RunRow.COLUMNS)} FROM {RUNS} WHERE {clause}"
            " ORDER BY started DESC LIMIT ?",
            [*params, limit],
        )
        return [_run_dict(row) for row in rows]

    def run(self, run_id: str) -> tuple[dict[str, Any] | None, list[Event]]:
        """One run and all its events, in the order they were recorded."""
        found = self.query(
            f"SELECT {', '.join(RunRow.COLUMNS)} FROM {RUNS} WHERE run_id = ?", [run_id]
        )
        bodies = self.query(f"SELECT body FROM {EVENTS} WHERE run_id = ? ORDER BY id", [run_id])
        events = [Event.from_dict(orjson.loads(body)) for (body,) in bodies]
        return (_run_dict(found[0]) if found else None), events

    def labels(self, where: Filter) -> dict[str, list[str]]:
        """The steps and models seen in the window (for filter menus)."""
        start, end = where.bucketed()
        out: dict[str, list[str]] = {}
        shown = {"step": "step", "model": _MODEL_NAME}
        for column in ("step", "model"):
            rows = self.query(
                f"SELECT DISTINCT {shown[column]} FROM {COUNTS}"
                f" WHERE bucket >= ? AND bucket < ? AND {column} <> '' ORDER BY 1",
                [start, end],
            )
            out[column + "s"] = [r[0] for r in rows]
        return out


def _reason(error: BaseException) -> str:
    """What went wrong, on one line (an outform error's `what`, without its where and fix)."""
    return str(getattr(error, "what", None) or error).strip()


def _run_dict(row: Sequence[Any]) -> dict[str, Any]:
    out = dict(zip(RunRow.COLUMNS, row, strict=True))
    out["tags"] = orjson.loads(out["tags"]) if out["tags"] else []
    out["streaming"] = bool(out["streaming"])
    return out
