"""The trace store in one SQLite file (the default: the user's data directory).

WAL mode, so readers (`outform health`, the dashboard) never block the writer and several
processes can record into one file (each batch takes the write lock with `BEGIN IMMEDIATE`,
waiting up to `busy_timeout`). `synchronous=NORMAL`: a committed batch survives the process
being killed; an OS crash or power loss can lose the batches since the last WAL checkpoint.
The file is created with incremental auto-vacuum, so size retention gives space back; its
size (free pages included) is what `max_size_mb` bounds. The WAL is truncated at each
retention's checkpoint and kept under `WAL_LIMIT` after the others.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import quote

from outform.errors import StoreError
from outform.trace.store import TraceStore

WAL_LIMIT = 16 * 1024 * 1024
"""Bytes the WAL file keeps after a checkpoint (SQLite's journal_size_limit)."""
COMPANIONS = ("-wal", "-shm", "-journal")
"""Files SQLite keeps beside the database, named after it: part of the store."""


class SqliteTraceStore(TraceStore):
    kind: ClassVar[str] = "sqlite"
    TYPES: ClassVar[dict[str, str]] = {
        "real": "REAL",
        "big": "INTEGER",
        "serial": "INTEGER PRIMARY KEY",
        "without_rowid": " WITHOUT ROWID",
        "least": "MIN",
        "greatest": "MAX",
    }

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        busy_timeout: float = 5.0,
        create: bool = True,
        where: str = "[trace] store",
        **options: Any,
    ) -> None:
        """`create=False` (readers: `outform health`, the dashboard): a file that does not
        exist is a StoreError naming it, and nothing is created."""
        super().__init__(create=create, where=where, **options)
        self.path = Path(path).expanduser()
        self.busy_timeout = busy_timeout
        if not create and not self.path.is_file():
            raise StoreError(
                f"no trace store at {self.path}",
                where=where,
                fix="check the path, or record runs first (outform parse/generate with [trace] "
                "enabled) to create it",
            )

    def describe(self) -> str:
        return str(self.path)

    def files(self) -> tuple[Path, ...]:
        """The database and its companions (the WAL, its index, a rollback journal)."""
        return (self.path, *(Path(f"{self.path}{end}") for end in COMPANIONS))

    def _connect(self) -> sqlite3.Connection:
        parent = self.path.absolute().parent
        if self.create and not parent.is_dir():
            # Here, not when the store is made: a store that cannot be opened fails as one
            # whose disk is full does (its events are kept, then counted or said).
            try:
                parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(
                    f"cannot create the directory of the trace store {self.path}: {exc.strerror}",
                    where=self.where,
                    fix="point [trace] store at a writable place, or set OUTFORM_TRACE=off",
                ) from None
        try:
            # mode=rw: a reader never creates the file, even if it vanished since __init__
            # (absolute: SQLite reads a name that begins with `file:` as a URI, not a file)
            target = (
                self.path.absolute() if self.create else f"file:{quote(str(self.path))}?mode=rw"
            )
            conn = sqlite3.connect(
                target, timeout=self.busy_timeout, isolation_level=None,
                check_same_thread=False, uri=not self.create,
            )  # fmt: skip
            if self.create:  # a reader leaves the file as it found it (WAL mode persists)
                conn.execute("PRAGMA auto_vacuum = INCREMENTAL")  # takes effect on a new file
                conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute(f"PRAGMA journal_size_limit = {WAL_LIMIT}")
        except sqlite3.Error as exc:
            raise StoreError(
                f"cannot open the trace store {self.path}: {exc}",
                where=self.where,
                fix="check the path and its permissions, or set OUTFORM_TRACE=off",
            ) from None
        return conn

    def _begin(self, conn: Any) -> None:
        conn.execute("BEGIN IMMEDIATE")

    def _used_bytes(self, conn: Any) -> int:
        """The file's pages, free ones included: what the disk holds."""
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        size = conn.execute("PRAGMA page_size").fetchone()[0]
        return int(pages) * int(size)

    def _over_size(self) -> bool:
        try:
            return self.path.stat().st_size > self.max_size_bytes
        except OSError:
            return False

    def _after_delete(self, conn: Any) -> None:
        # The pragma frees one page per step and has no result columns, so execute() steps it
        # once: one page freed, and the file kept every deleted run's space as free pages.
        # executescript() steps it to the end.
        conn.executescript("PRAGMA incremental_vacuum;")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
