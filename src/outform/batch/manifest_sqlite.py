"""The manifest in one SQLite file (WAL, synchronous=FULL): the default, for one machine.

A job's lock is a byte-range lock (`lockf`) at the job's own offset of a lock file beside the
manifest, held by the process and dropped by the OS when it dies. POSIX locks belong to the
process and vanish when any of its descriptors of the file is closed, so each lock file is
opened once per process and kept open; claims within the process are counted by `Manifest`.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from outform.batch.manifest import Manifest, schema
from outform.errors import StoreError

try:
    import fcntl
except ImportError:  # Windows: claims are checked within the process only
    fcntl = None  # type: ignore[assignment]

_LOCK_FILES: dict[str, int] = {}
_LOCK_FILES_LOCK = threading.Lock()
_HELD: set[tuple[str, int]] = set()
"""(lock file, key) held by this process: POSIX locks do not stop the process itself."""


class _Transaction:
    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def execute(self, sql: str, args: Sequence[Any] = ()) -> int:
        return self.db.execute(sql, args).rowcount

    def executemany(self, sql: str, args: Sequence[Sequence[Any]]) -> int:
        return self.db.executemany(sql, args).rowcount

    def fetch(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self.db.execute(sql, args).fetchall()


class SqliteDatabase:
    def __init__(self, path: str | Path, *, create: bool = True) -> None:
        """`create=False` (status, resume, results): a file that does not exist is an error
        naming it, and nothing is created."""
        self.path = Path(path)
        self.where = str(self.path)
        self.files = sqlite_files(self.path)
        if not create and not self.path.is_file():
            raise StoreError(
                f"no batch manifest at {self.path}",
                where="--manifest (or [batch] manifest, OUTFORM_BATCH_MANIFEST)",
                fix="run the command where the job was submitted, or pass --manifest PATH",
            )
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(  # (absolute: SQLite reads `file:NAME` as a URI)
                self.path.absolute(), isolation_level=None, check_same_thread=False, timeout=30.0
            )
            if not create and not self._holds_jobs():
                self._db.close()
                raise StoreError(
                    f"no batch manifest in {self.path}: it is a SQLite file without outform's "
                    "batch tables (another program's database, or a trace store)",
                    where="--manifest (or [batch] manifest, OUTFORM_BATCH_MANIFEST)",
                    fix="pass the manifest the job was submitted with",
                )
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            with self.transaction() as tx:
                for statement in schema(bytes_type="BLOB", float_type="REAL"):
                    tx.execute(statement)
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(
                f"cannot open the batch manifest: {exc}",
                where=str(self.path),
                fix="check the path and its permissions (--manifest, or [batch] manifest)",
            ) from None

    def _holds_jobs(self) -> bool:
        """Whether the file is a batch manifest (its jobs table exists): one a reading command
        opens is never given outform's tables."""
        found = self._db.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'outform_batch_jobs'"
        ).fetchone()
        return found is not None

    def close(self) -> None:
        self._db.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[_Transaction]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield _Transaction(self._db)
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def fetch(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self._db.execute(sql, args).fetchall()

    def analyze(self) -> None:
        self._db.execute("PRAGMA optimize")

    # -- job locks -----------------------------------------------------------------------------

    def _lock_file(self) -> tuple[str, int]:
        name = str(self.path.resolve()) + ".lock"
        with _LOCK_FILES_LOCK:
            if name not in _LOCK_FILES:
                _LOCK_FILES[name] = os.open(name, os.O_RDWR | os.O_CREAT, 0o644)
            return name, _LOCK_FILES[name]

    def try_lock(self, key: int) -> bool:
        name, fd = self._lock_file()
        with _LOCK_FILES_LOCK:
            if (name, key) in _HELD:
                return False
            if fcntl is not None:
                try:
                    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, key)
                except OSError:
                    return False
            _HELD.add((name, key))
        return True

    def unlock(self, key: int) -> None:
        name, fd = self._lock_file()
        with _LOCK_FILES_LOCK:
            if fcntl is not None:
                fcntl.lockf(fd, fcntl.LOCK_UN, 1, key)
            _HELD.discard((name, key))


COMPANIONS = ("-wal", "-shm", "-journal", ".lock")
"""What SQLite (and the job locks) keep beside a manifest file."""


def sqlite_files(path: str | Path) -> tuple[Path, ...]:
    """The manifest file and its companions, as named and as resolved (SQLite keeps its
    -wal beside the file a symbolic link points to)."""
    named = Path(path).absolute()
    bases = dict.fromkeys([named, named.resolve()])
    return tuple(
        base.with_name(base.name + suffix) for base in bases for suffix in ("", *COMPANIONS)
    )


def open_sqlite(path: str | Path, *, create: bool = True) -> Manifest:
    return Manifest(SqliteDatabase(path, create=create))
