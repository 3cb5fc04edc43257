"""The trace store in one SQLite file (the default: the user's data directory).

WAL mode, so readers (`outform health`, the dashboard) never block the writer and several
processes can record into one file (each batch takes the write lock with `BEGIN IMMEDIATE`,
waiting up to `busy_timeout`). `synchronous=NORMAL`: a committed batch survives the process
being killed; an OS crash or power loss can lose the batches since the last WAL checkpoint.
The file is created with incremental auto-vacuum, so size retention gives space back.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any, ClassVar

from outform.errors import StoreError
from outform.trace.store import TraceStore


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
        self, path: str | os.PathLike[str], *, busy_timeout: float = 5.0, **options: Any
    ) -> None:
        super().__init__(**options)
        self.path = Path(path).expanduser()
        self.busy_timeout = busy_timeout
        parent = self.path.absolute().parent
        if not parent.is_dir():
            try:
                parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(
                    f"cannot create the directory of the trace store {self.path}: {exc.strerror}",
                    where="[trace] store",
                    fix="point [trace] store at a writable place, or set OUTFORM_TRACE=off",
                ) from None

    def describe(self) -> str:
        return str(self.path)

    def _connect(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(
                self.path, timeout=self.busy_timeout, isolation_level=None,
                check_same_thread=False,
            )  # fmt: skip
            conn.execute("PRAGMA auto_vacuum = INCREMENTAL")  # takes effect on a new file
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
        except sqlite3.Error as exc:
            raise StoreError(
                f"cannot open the trace store {self.path}: {exc}",
                where="[trace] store",
                fix="check the path and its permissions, or set OUTFORM_TRACE=off",
            ) from None
        return conn

    def _begin(self, conn: Any) -> None:
        conn.execute("BEGIN IMMEDIATE")

    def _used_bytes(self, conn: Any) -> int:
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        free = conn.execute("PRAGMA freelist_count").fetchone()[0]
        size = conn.execute("PRAGMA page_size").fetchone()[0]
        return int(pages - free) * int(size)

    def _after_delete(self, conn: Any) -> None:
        conn.execute("PRAGMA incremental_vacuum")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
