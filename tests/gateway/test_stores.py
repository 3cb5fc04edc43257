"""The response stores: one behavioural suite over MemoryStore, SqliteStore and PostgresStore
(a real server, see tests/gateway/postgres.py), then what is particular to each."""

from __future__ import annotations

import asyncio
import dataclasses
import socket
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import orjson
import pytest

from outform.errors import ConfigError, StoreError, UsageError
from outform.gateway.sqlite_store import SqliteStore
from outform.gateway.store import ABANDONED, MemoryStore, ResponseStore, StoredResponse
from outform.gateway.stores import DEFAULT_SQLITE_PATH, open_store, redact_dsn

if TYPE_CHECKING:
    from tests.gateway.postgres import Backend
    from tests.postgres import PostgresServer

pytest_plugins = ["tests.gateway.postgres"]
persistent_only = pytest.mark.parametrize("backend", ("sqlite", "postgres"), indirect=True)
"""For what only a database store does: something outlives the store or is shared between
stores. The memory store has nothing to outlive or share, so these tests do not run on it."""

T = TypeVar("T")
ROOT = Path(__file__).resolve().parents[2]


def run(main: Callable[[], Coroutine[Any, Any, T]]) -> T:
    return asyncio.run(main())


def record(
    response_id: str,
    text: str = "Hello.",
    *,
    created_at: int = 1_700_000_000,
    previous: str | None = None,
) -> StoredResponse:
    """A record shaped like the gateway's: Response object, input items, conversation."""
    user = {
        "id": f"msg_in_{response_id}",
        "type": "message",
        "role": "user",
        "content": [{"type": "input_text", "text": f"Say: {text}"}],
    }
    output = {
        "id": f"msg_out_{response_id}",
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}],
    }
    response = {
        "id": response_id,
        "object": "response",
        "created_at": created_at,
        "status": "completed",
        "model": "test-model",
        "instructions": "Be brief.",
        "output": [output],
        "previous_response_id": previous,
        "usage": {"input_tokens": 3, "output_tokens": 2, "total_tokens": 5},
    }
    return StoredResponse(
        id=response_id,
        created_at=created_at,
        response=response,
        input_items=[user],
        conversation=[user, output],
        previous_response_id=previous,
    )


async def flush(store: ResponseStore) -> None:
    """Saves are committed when they return: flushing has nothing left to wait for."""
    await store.flush()


# -- the shared behaviour ------------------------------------------------------------------


def test_save_load_delete(backend: Backend) -> None:
    async def main() -> None:
        store = backend.open()
        try:
            saved = record("resp_1")
            assert await store.load("resp_1") is None
            await store.save(saved)
            assert await store.load("resp_1") == saved
            assert await store.delete("resp_1") is True
            assert await store.load("resp_1") is None
            assert await store.delete("resp_1") is False
        finally:
            await store.close()

    run(main)


def test_save_again_replaces_the_record(backend: Backend) -> None:
    async def main() -> None:
        store = backend.open()
        try:
            await store.save(record("resp_1", "first"))
            await flush(store)
            await store.save(record("resp_1", "second", previous="resp_0"))
            assert await store.load("resp_1") == record("resp_1", "second", previous="resp_0")
        finally:
            await store.close()
        if backend.persistent:
            reopened = backend.open()
            try:
                loaded = await reopened.load("resp_1")
                assert loaded == record("resp_1", "second", previous="resp_0")
            finally:
                await reopened.close()

    run(main)


def test_read_your_writes_under_concurrent_saves(backend: Backend) -> None:
    async def save_then_load(store: ResponseStore, n: int) -> StoredResponse | None:
        await store.save(record(f"resp_{n}", f"text {n}"))
        return await store.load(f"resp_{n}")

    async def main() -> None:
        store = backend.open()
        try:
            loaded = await asyncio.gather(*(save_then_load(store, n) for n in range(300)))
            assert loaded == [record(f"resp_{n}", f"text {n}") for n in range(300)]
        finally:
            await store.close()
        if backend.persistent:
            reopened = backend.open()
            try:
                again = [await reopened.load(f"resp_{n}") for n in range(300)]
                assert again == loaded
            finally:
                await reopened.close()

    run(main)


@persistent_only
def test_records_outlive_the_store(backend: Backend) -> None:
    async def write() -> None:
        store = backend.open()
        for n in range(50):
            await store.save(record(f"resp_{n}", created_at=1_700_000_000 + n))
        await store.close()  # flushes: nothing saved is lost on a graceful shutdown

    async def read() -> list[StoredResponse | None]:
        store = backend.open()
        try:
            return [await store.load(f"resp_{n}") for n in range(50)]
        finally:
            await store.close()

    run(write)
    assert run(read) == [record(f"resp_{n}", created_at=1_700_000_000 + n) for n in range(50)]


@persistent_only
def test_two_stores_on_one_database_see_each_other(backend: Backend) -> None:
    """The several-gateway-processes case: what one writes, the other reads and deletes."""

    async def main() -> None:
        first, second = backend.open(), backend.open()
        try:
            await first.save(record("resp_a", "from the first"))
            await flush(first)
            assert await second.load("resp_a") == record("resp_a", "from the first")
            await second.save(record("resp_b", "from the second"))
            await flush(second)
            assert await first.load("resp_b") == record("resp_b", "from the second")
            assert await second.delete("resp_a") is True
            assert await first.load("resp_a") is None
            await asyncio.gather(
                *(first.save(record(f"resp_x{n}")) for n in range(0, 100, 2)),
                *(second.save(record(f"resp_x{n}")) for n in range(1, 100, 2)),
            )
            await flush(first)
            await flush(second)
            for n in range(100):
                assert await first.load(f"resp_x{n}") == record(f"resp_x{n}")
                assert await second.load(f"resp_x{n}") == record(f"resp_x{n}")
        finally:
            await first.close()
            await second.close()

    run(main)


def test_large_records(backend: Backend) -> None:
    text = "All work and no play makes Jack a dull boy. " * 200_000  # ~9 MB
    conversation = [
        {"type": "message", "role": "user", "content": f"turn {n}"} for n in range(5000)
    ]
    big = StoredResponse(
        id="resp_big",
        created_at=1,
        response={"id": "resp_big", "output": [{"type": "message", "text": text}]},
        input_items=conversation[-1:],
        conversation=conversation,
    )

    async def main() -> None:
        store = backend.open()
        try:
            await store.save(big)
            assert await store.load("resp_big") == big
        finally:
            await store.close()
        if backend.persistent:
            reopened = backend.open()
            try:
                assert await reopened.load("resp_big") == big
            finally:
                await reopened.close()

    run(main)


UNICODE = [
    "héllo wörld",
    "日本語のテキスト",
    "مرحبا بالعالم",
    "emoji 🧪🚀👩‍👩‍👧",
    "e\u0301 combining",
    "line\u2028separator\u2029",
    "nul \u0000 byte",  # PostgreSQL's jsonb refuses this one: the store uses json
    'quotes " \\ and \t control \x01',
    "\U0010ffff max code point",
]


def test_unicode_round_trips(backend: Backend) -> None:
    response = {"id": "resp_ü", "output": UNICODE, "métadonnées": {"clé": "ünïcödé"}}
    saved = StoredResponse(
        id="resp_ü",
        created_at=1,
        response=response,
        input_items=[{"type": "message", "role": "user", "content": s} for s in UNICODE],
        conversation=[{"type": "message", "role": "user", "content": "\u0000🧪"}],
        previous_response_id="resp_ß",
    )

    async def main() -> None:
        store = backend.open()
        try:
            await store.save(saved)
            assert await store.load("resp_ü") == saved
        finally:
            await store.close()
        if backend.persistent:
            reopened = backend.open()
            try:
                assert await reopened.load("resp_ü") == saved
            finally:
                await reopened.close()

    run(main)


def test_key_order_is_kept(backend: Backend) -> None:
    """The Response object comes back as it was served, keys in order (not jsonb's order)."""
    response = {"zeta": 1, "id": "resp_k", "alpha": {"b": 1, "a": 2}, "object": "response"}

    async def main() -> None:
        store = backend.open()
        try:
            await store.save(StoredResponse("resp_k", 1, response, []))
            await flush(store)
            other = backend.open() if backend.persistent else store
            loaded = await other.load("resp_k")
            assert loaded is not None
            assert list(loaded.response) == list(response)
            assert list(loaded.response["alpha"]) == ["b", "a"]
            if other is not store:
                await other.close()
        finally:
            await store.close()

    run(main)


@persistent_only
def test_close_commits_every_pending_write(backend: Backend) -> None:
    async def main() -> None:
        store = backend.open()
        await asyncio.gather(*(store.save(record(f"resp_{n}")) for n in range(500)))
        await store.close()
        reopened = backend.open()
        try:
            missing = [n for n in range(500) if await reopened.load(f"resp_{n}") is None]
            assert missing == []
        finally:
            await reopened.close()

    run(main)


@persistent_only
def test_values_that_are_not_json_are_refused(backend: Backend) -> None:
    """Only database stores serialise (MemoryStore keeps Python objects as they are)."""

    async def main() -> None:
        store = backend.open()
        try:
            with pytest.raises(UsageError, match=r"resp_bad: its response cannot be stored"):
                await store.save(StoredResponse("resp_bad", 1, {"output": {1, 2}}, []))
            with pytest.raises(UsageError, match="conversation"):
                await store.save(StoredResponse("resp_bad", 1, {}, [], [{"x": b"bytes"}]))
            assert await store.load("resp_bad") is None
        finally:
            await store.close()

    run(main)


@persistent_only
def test_purge_deletes_old_responses(backend: Backend) -> None:
    async def main() -> None:
        store = backend.open()
        try:
            for n, created in enumerate((100, 200, 300)):
                await store.save(record(f"resp_{n}", created_at=created))
            purge = getattr(store, "purge")  # noqa: B009 - SqliteStore and PostgresStore
            assert await purge(250) == 2
            assert [await store.load(f"resp_{n}") is None for n in range(3)] == [
                True,
                True,
                False,
            ]
        finally:
            await store.close()

    run(main)


@persistent_only
def test_a_closed_store_refuses_work(backend: Backend) -> None:
    async def main() -> None:
        store = backend.open()
        await store.save(record("resp_1"))
        await store.close()
        await store.close()  # twice is fine
        with pytest.raises(UsageError, match="closed"):
            await store.load("resp_1")
        with pytest.raises(UsageError, match="closed"):
            await store.save(record("resp_2"))
        await flush(store)  # nothing left to flush: not an error

    run(main)


def unfinished(
    response_id: str, *, tenant: str = "", worker: str | None = "wrk_a"
) -> StoredResponse:
    """A response still running (a stream's first row, a background job)."""
    done = record(response_id)
    response = {**done.response, "status": "in_progress", "output": []}
    return StoredResponse(
        response_id, done.created_at, response, done.input_items, tenant=tenant, worker=worker
    )


def test_records_belong_to_their_tenant(backend: Backend) -> None:
    """Another tenant's record is exactly as absent as an unknown one."""

    async def main() -> None:
        store = backend.open()
        try:
            mine = dataclasses.replace(record("resp_a"), tenant="tenant-a")
            await store.save(mine)
            assert await store.load("resp_a", "tenant-a") == mine
            assert await store.load("resp_a", "tenant-b") is None
            assert await store.load("resp_a") is None  # no keys: tenant ""
            assert await store.find_item("msg_out_resp_a", "tenant-a") is not None
            assert await store.find_item("msg_out_resp_a", "tenant-b") is None
            intruder = dataclasses.replace(unfinished("resp_a"), tenant="tenant-b")
            assert await store.update(intruder) is False
            assert await store.delete("resp_a", "tenant-b") is False
            assert await store.load("resp_a", "tenant-a") == mine
            assert await store.delete("resp_a", "tenant-a") is True
        finally:
            await store.close()

    run(main)


def test_update_replaces_only_an_unfinished_record(backend: Backend) -> None:
    """The rule behind cancellation: the first final state to commit stays."""

    async def main() -> None:
        store = backend.open()
        try:
            await store.heartbeat("wrk_a")
            await store.save(unfinished("resp_1"))
            assert await store.unfinished(["resp_1", "resp_missing"]) == {"resp_1"}
            loaded = await store.load("resp_1")
            assert loaded is not None and loaded.status == "in_progress"
            assert loaded.worker == "wrk_a" and not loaded.conversation
            assert await store.update(record("resp_1", "first")) is True
            assert await store.update(record("resp_1", "late")) is False  # finished: stays
            assert await store.load("resp_1") == record("resp_1", "first")
            assert await store.unfinished(["resp_1"]) == set()
            assert await store.update(record("resp_never")) is False  # nothing to update
            assert await store.load("resp_never") is None
        finally:
            await store.close()

    run(main)


def test_an_unfinished_record_of_a_process_that_stopped_reads_as_failed(
    backend: Backend,
) -> None:
    async def main() -> None:
        store = backend.open()
        try:
            await store.heartbeat("wrk_alive")
            await store.save(unfinished("resp_alive", worker="wrk_alive"))
            await store.save(unfinished("resp_orphan", worker="wrk_never_beat"))
            alive = await store.load("resp_alive")
            assert alive is not None and alive.status == "in_progress"
            orphan = await store.load("resp_orphan")
            assert orphan is not None and orphan.status == "failed"
            assert orphan.response["error"] == {"code": "server_error", "message": ABANDONED}
            await store.retire("wrk_alive")  # its process stopped
            gone = await store.load("resp_alive")
            assert gone is not None and gone.status == "failed"
        finally:
            await store.close()

    run(main)


def test_items_are_found_by_id(backend: Backend) -> None:
    async def main() -> None:
        store = backend.open()
        try:
            await store.save(record("resp_1", "one"))
            await store.save(record("resp_2", "two"))
            found = await store.find_item("msg_out_resp_2")
            assert found == record("resp_2", "two").conversation[1]
            assert await store.find_item("msg_in_resp_1") == record("resp_1", "one").input_items[0]
            assert await store.find_item("msg_nowhere") is None
            assert await store.delete("resp_2") is True
            assert await store.find_item("msg_out_resp_2") is None
        finally:
            await store.close()

    run(main)


def test_the_tenant_salt_is_random_and_kept(backend: Backend) -> None:
    async def main() -> tuple[bytes, bytes]:
        store = backend.open()
        try:
            await store.check()
            salt = await store.tenant_salt()
            assert len(salt) == 32 and salt == await store.tenant_salt()
        finally:
            await store.close()
        again = backend.open()
        try:
            return salt, await again.tenant_salt()
        finally:
            await again.close()

    first, second = run(main)
    if backend.persistent:
        assert first == second  # every gateway process of the store hashes keys alike


# -- SQLite: group commit, back-pressure, several processes -----------------------------


def rows(path: Path) -> int:
    """Committed rows, read by a connection of its own (what another process would see)."""
    with sqlite3.connect(path) as conn:
        (count,) = conn.execute("SELECT count(*) FROM outform_responses").fetchone()
    conn.close()
    return int(count)


def hold_the_worker(store: SqliteStore) -> threading.Event:
    """Block the store's worker thread until the event is set: saves stay pending."""
    gate, holding = threading.Event(), threading.Event()

    def hold() -> None:
        holding.set()
        gate.wait()

    store._writer.executor.submit(hold)
    holding.wait()
    return gate


def test_sqlite_save_returns_only_once_committed(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite"

    async def main() -> None:
        store = SqliteStore(path)
        await store.check()  # the tables exist
        gate = hold_the_worker(store)
        saving = asyncio.ensure_future(store.save(record("resp_1")))
        await asyncio.sleep(0.05)
        assert not saving.done()  # the worker is busy: not committed, not acknowledged
        assert rows(path) == 0
        gate.set()
        await saving
        assert rows(path) == 1  # committed by the time save returned: no flush needed
        await store.close()

    asyncio.run(main())


def commits(path: Path) -> int:
    """How many transactions other connections committed since `data_version` began."""
    return int(_observer(path).execute("PRAGMA data_version").fetchone()[0])


_OBSERVERS: dict[Path, sqlite3.Connection] = {}


def _observer(path: Path) -> sqlite3.Connection:
    if path not in _OBSERVERS:
        _OBSERVERS[path] = sqlite3.connect(path, check_same_thread=False)
    return _OBSERVERS[path]


def test_sqlite_saves_that_arrive_together_share_one_commit(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite"

    async def main() -> None:
        store = SqliteStore(path)
        await store.check()
        before = commits(path)
        gate = hold_the_worker(store)
        saving = [asyncio.ensure_future(store.save(record(f"resp_{n}"))) for n in range(50)]
        await asyncio.sleep(0.05)
        gate.set()
        await asyncio.gather(*saving)
        assert commits(path) == before + 1  # one transaction for the 50
        assert rows(path) == 50
        await store.close()

    try:
        asyncio.run(main())
    finally:
        _OBSERVERS.pop(path).close()


def test_sqlite_bounds_what_waits_for_the_disk(tmp_path: Path) -> None:
    """Back-pressure: beyond max_pending_bytes a save waits before it is even queued."""
    path = tmp_path / "r.sqlite"
    one = len(orjson.dumps(record("resp_0").response)) * 3

    async def main() -> None:
        store = SqliteStore(path, max_pending_bytes=one)
        await store.check()
        gate = hold_the_worker(store)
        first = asyncio.ensure_future(store.save(record("resp_1", "x" * 500)))
        second = asyncio.ensure_future(store.save(record("resp_2", "y" * 500)))
        await asyncio.sleep(0.05)
        with store._writer.lock:
            queued = len(store._writer.queue)
        assert queued == 1  # the second waits outside the queue
        assert not first.done() and not second.done()
        gate.set()
        await asyncio.gather(first, second)
        assert rows(path) == 2
        await store.close()

    asyncio.run(main())


def test_sqlite_failed_commit_is_never_acknowledged(tmp_path: Path) -> None:
    """Another process holds the write lock past busy_timeout: the save fails (the gateway
    answers 503), nothing is kept half-way, and the next save works once the lock is gone."""
    path = tmp_path / "r.sqlite"

    async def main() -> None:
        store = SqliteStore(path, busy_timeout=0.05)
        await store.check()
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")  # the other process's long write transaction
        try:
            with pytest.raises(StoreError, match="locked") as caught:
                await store.save(record("resp_1"))
            assert "raise busy_timeout" in str(caught.value)
        finally:
            other.execute("ROLLBACK")
            other.close()
        assert await store.load("resp_1") is None
        await store.save(record("resp_2"))
        await store.close()
        assert rows(path) == 1

    asyncio.run(main())


def test_sqlite_check_reports_an_unusable_path(tmp_path: Path) -> None:
    async def main() -> None:
        store = SqliteStore("/proc/outform-responses.sqlite")  # exists, never writable
        with pytest.raises(StoreError, match=r"/proc/outform-responses\.sqlite") as caught:
            await store.check()
        assert "writable" in str(caught.value)
        await store.close()

    asyncio.run(main())


def test_sqlite_schema_1_files_are_upgraded(tmp_path: Path) -> None:
    """A file of the previous outform: its responses stay readable (and referable), and
    belong to the keyless tenant."""
    path = tmp_path / "old.sqlite"
    old = record("resp_old")
    with sqlite3.connect(path) as conn:
        conn.execute(
            """CREATE TABLE outform_responses (
                id TEXT PRIMARY KEY, created_at INTEGER NOT NULL, previous_response_id TEXT,
                response TEXT NOT NULL, input_items TEXT NOT NULL, conversation TEXT NOT NULL,
                stored_at REAL NOT NULL DEFAULT 0)"""
        )
        failed = {**old.response, "status": "failed"}
        conn.execute(
            "INSERT INTO outform_responses (id, created_at, previous_response_id, response,"
            " input_items, conversation) VALUES (?, ?, ?, ?, ?, ?)",
            (
                old.id,
                old.created_at,
                None,
                orjson.dumps(failed).decode(),
                orjson.dumps(old.input_items).decode(),
                orjson.dumps(old.conversation).decode(),
            ),
        )
        conn.execute("PRAGMA user_version = 1")
    conn.close()

    async def main() -> None:
        store = SqliteStore(path)
        loaded = await store.load("resp_old")
        assert loaded is not None and loaded.response == failed and loaded.tenant == ""
        assert await store.find_item("msg_out_resp_old") == old.conversation[1]
        await store.close()

    asyncio.run(main())
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone() == (3,)
        assert conn.execute("SELECT status FROM outform_responses").fetchone() == ("failed",)
    conn.close()


CHILD = """
import asyncio, sys
from outform.gateway.sqlite_store import SqliteStore
from tests.gateway.test_stores import record

async def main(path, prefix):
    store = SqliteStore(path)
    for n in range(60):
        await store.save(record(f"{prefix}{n}", f"{prefix} {n}"))
    for n in range(30):
        assert await store.load(f"parent_{n}") == record(f"parent_{n}"), n
    await store.close()

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


def test_sqlite_file_shared_by_several_processes(tmp_path: Path) -> None:
    path = tmp_path / "shared.sqlite"

    async def main() -> None:
        store = SqliteStore(path)
        for n in range(30):
            await store.save(record(f"parent_{n}"))
        await store.flush()
        children = [
            subprocess.Popen(
                [sys.executable, "-c", CHILD, str(path), prefix],
                cwd=ROOT,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            for prefix in ("a_", "b_", "c_")
        ]
        for n in range(30, 90):  # the parent keeps writing meanwhile
            await store.save(record(f"parent_{n}"))
        outputs = [child.communicate()[0] for child in children]
        assert [child.returncode for child in children] == [0, 0, 0], outputs
        for prefix in ("a_", "b_", "c_"):
            for n in range(60):
                assert await store.load(f"{prefix}{n}") == record(f"{prefix}{n}", f"{prefix} {n}")
        await store.close()
        assert rows(path) == 90 + 3 * 60

    asyncio.run(main())


def test_sqlite_missing_directory_is_a_store_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="does not exist") as caught:
        SqliteStore(tmp_path / "nowhere" / "r.sqlite")
    assert str(tmp_path / "nowhere") in str(caught.value)


def test_sqlite_file_that_is_not_a_database(tmp_path: Path) -> None:
    path = tmp_path / "notes.sqlite"
    path.write_text("these are my notes, not a database\n" * 100)

    async def main() -> None:
        store = SqliteStore(path)
        with pytest.raises(StoreError, match="not a database") as caught:
            await store.load("resp_1")
        assert str(path) in str(caught.value)
        assert "restore it or use another path" in str(caught.value)

    asyncio.run(main())


def test_sqlite_uses_wal_and_its_tables(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite"

    async def main() -> None:
        store = SqliteStore(path)
        await store.save(record("resp_1", previous="resp_0"))
        await store.close()

    asyncio.run(main())
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert conn.execute("PRAGMA user_version").fetchone() == (3,)
        row = conn.execute(
            "SELECT id, created_at, previous_response_id, json_extract(response, '$.model')"
            " FROM outform_responses"
        ).fetchone()
        indexes = {r[1] for r in conn.execute("PRAGMA index_list(outform_responses)")}
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    conn.close()
    assert row == ("resp_1", 1_700_000_000, "resp_0", "test-model")
    assert {"outform_responses_created_at", "outform_responses_previous"} <= indexes
    assert tables == {"outform_responses", "outform_items", "outform_workers", "outform_meta"}


# -- PostgreSQL -----------------------------------------------------------------------------


def test_postgres_stores_starting_together_create_the_table_once(
    postgres_server: PostgresServer,
) -> None:
    from outform.gateway.postgres_store import PostgresStore

    schema, dsn = postgres_server.schema()

    async def main() -> None:
        stores = [PostgresStore(dsn, min_size=1, max_size=2) for _ in range(6)]
        try:
            await asyncio.gather(*(s.save(record(f"resp_{n}")) for n, s in enumerate(stores)))
            assert [await stores[0].load(f"resp_{n}") for n in range(6)] == [
                record(f"resp_{n}") for n in range(6)
            ]
        finally:
            for store in stores:
                await store.close()

    try:
        asyncio.run(main())
    finally:
        postgres_server.drop(schema)


def test_postgres_user_without_create_rights(postgres_server: PostgresServer) -> None:
    """A gateway user with only SELECT, INSERT, UPDATE, DELETE works once the table exists,
    and is told what to do while it does not."""
    import psycopg
    from psycopg.conninfo import make_conninfo

    from outform.gateway.postgres_store import PostgresStore

    schema, owner_dsn = postgres_server.schema()
    role = f"app_{schema}"
    try:
        with psycopg.connect(postgres_server.dsn, autocommit=True) as conn:
            conn.execute(f"CREATE ROLE {role} LOGIN")
            conn.execute(f"GRANT USAGE ON SCHEMA {schema} TO {role}")
    except psycopg.errors.InsufficientPrivilege:
        postgres_server.drop(schema)
        pytest.skip("the test server's user may not create roles")
    app_dsn = make_conninfo(owner_dsn, user=role)

    async def main() -> None:
        app = PostgresStore(app_dsn)
        with pytest.raises(StoreError, match="creating the tables outform_responses") as caught:
            await app.load("resp_1")
        assert "grant the user CREATE on the schema" in str(caught.value)
        await app.close()
        owner = PostgresStore(owner_dsn)
        await owner.save(record("resp_1"))
        await owner.close()
        with psycopg.connect(owner_dsn, autocommit=True) as conn:
            conn.execute(
                "GRANT SELECT, INSERT, UPDATE, DELETE ON outform_responses, outform_items,"
                f" outform_workers, outform_meta TO {role}"
            )
        app = PostgresStore(app_dsn)
        await app.check()
        assert await app.load("resp_1") == record("resp_1")
        await app.save(record("resp_2"))
        assert await app.delete("resp_1") is True
        await app.close()

    try:
        asyncio.run(main())
    finally:
        postgres_server.drop(schema)
        with psycopg.connect(postgres_server.dsn, autocommit=True) as conn:
            conn.execute(f"DROP OWNED BY {role}")
            conn.execute(f"DROP ROLE {role}")


def test_postgres_schema_1_tables_are_upgraded(postgres_server: PostgresServer) -> None:
    import psycopg

    from outform.gateway.postgres_store import PostgresStore

    schema, dsn = postgres_server.schema()
    old = record("resp_old")
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            """CREATE TABLE outform_responses (
                id text PRIMARY KEY, created_at bigint NOT NULL, previous_response_id text,
                response json NOT NULL, input_items json NOT NULL, conversation json NOT NULL,
                stored_at timestamptz NOT NULL DEFAULT now())"""
        )
        conn.execute(
            "INSERT INTO outform_responses (id, created_at, response, input_items, conversation)"
            " VALUES (%s, %s, %s, %s, %s)",
            (
                old.id,
                old.created_at,
                orjson.dumps({**old.response, "status": "incomplete"}).decode(),
                orjson.dumps(old.input_items).decode(),
                orjson.dumps(old.conversation).decode(),
            ),
        )

    async def main() -> None:
        store = PostgresStore(dsn)
        try:
            loaded = await store.load("resp_old")
            assert loaded is not None and loaded.status == "incomplete"
            assert await store.find_item("msg_in_resp_old") == old.input_items[0]
            assert await store.unfinished(["resp_old"]) == set()
        finally:
            await store.close()

    try:
        asyncio.run(main())
        with psycopg.connect(dsn, autocommit=True) as conn:
            version = conn.execute(
                "SELECT value FROM outform_meta WHERE name = 'schema_version'"
            ).fetchone()
        assert version == ("3",)
    finally:
        postgres_server.drop(schema)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def test_postgres_unreachable_names_the_host_never_the_password() -> None:
    pytest.importorskip("psycopg")
    from outform.gateway.postgres_store import PostgresStore

    port = free_port()  # nothing listens there
    store = PostgresStore(f"postgresql://alice:hunter2-secret@127.0.0.1:{port}/db", timeout=2)

    async def main() -> None:
        with pytest.raises(StoreError) as caught:
            await store.load("resp_1")
        message = str(caught.value)
        assert f"alice@127.0.0.1:{port}/db" in message
        assert "hunter2" not in message
        assert "check host, port" in message
        await store.close()

    asyncio.run(main())


def test_postgres_unknown_database_is_a_config_error(postgres_server: PostgresServer) -> None:
    from psycopg.conninfo import make_conninfo

    from outform.gateway.postgres_store import PostgresStore

    dsn = make_conninfo(postgres_server.dsn, dbname="no_such_db", password="hunter2-secret")

    async def main() -> None:
        store = PostgresStore(dsn)
        with pytest.raises(StoreError, match="no_such_db") as caught:
            await store.save(record("resp_1"))
        assert "does not exist" in str(caught.value)
        assert "hunter2" not in str(caught.value)
        await store.close()

    asyncio.run(main())


# -- open_store --------------------------------------------------------------------------


def test_open_store_forms(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "conf").mkdir()
    stores: list[Any] = []

    def opened(spec: str, **kwargs: Any) -> Any:
        store = open_store(spec, **kwargs)
        stores.append(store)
        return store

    assert isinstance(opened("memory"), MemoryStore)
    default = opened("sqlite")
    assert isinstance(default, SqliteStore)
    assert default.path == DEFAULT_SQLITE_PATH
    assert opened(f"sqlite:{tmp_path}/a.sqlite").path == f"{tmp_path}/a.sqlite"
    assert opened(f"sqlite:///{tmp_path}/b.db").path == f"{tmp_path}/b.db"
    assert opened("sqlite:///rel.db").path == "rel.db"
    assert opened("c.sqlite3", base_dir=tmp_path / "conf").path == str(tmp_path / "conf/c.sqlite3")
    assert opened("sqlite:d.sqlite", base_dir=tmp_path).path == str(tmp_path / "d.sqlite")
    synced = opened(f"sqlite:{tmp_path}/e.sqlite?synchronous=full")
    assert synced.path == f"{tmp_path}/e.sqlite" and synced._writer.synchronous == "FULL"
    with pytest.raises(ConfigError, match="unknown SQLite store option journal"):
        open_store(f"sqlite:{tmp_path}/f.sqlite?journal=off")

    async def close_all() -> None:
        for store in stores:
            await store.check()  # creates the file
            await store.close()

    asyncio.run(close_all())
    assert (tmp_path / DEFAULT_SQLITE_PATH).exists()


def test_open_store_postgres_forms() -> None:
    pytest.importorskip("psycopg")
    from outform.gateway.postgres_store import PostgresStore

    for spec, where in [
        ("postgres://bob:pw@db.example:6543/gw", "bob@db.example:6543/gw"),
        ("postgresql://db.example/gw", "db.example:5432/gw"),
        ("postgres:host=db.example dbname=gw password=pw", "db.example:5432/gw"),
        ("postgresql:postgresql://db.example/gw", "db.example:5432/gw"),
    ]:
        store = open_store(spec)  # connects on first use, not here
        assert isinstance(store, PostgresStore)
        assert store.where == where


def test_open_store_rejects_unknown_forms() -> None:
    with pytest.raises(ConfigError) as caught:
        open_store("mysql://root:hunter2@db/gw")
    message = str(caught.value)
    assert "mysql://root:***@db/gw" in message
    assert "hunter2" not in message
    assert '"memory"' in message
    assert "sqlite:PATH" in message
    assert "postgres:DSN" in message
    with pytest.raises(ConfigError, match="unknown response store ''"):
        open_store("")


def test_malformed_postgres_dsn() -> None:
    pytest.importorskip("psycopg")
    with pytest.raises(ConfigError, match="not a valid PostgreSQL DSN") as caught:
        open_store("postgres:host=db password=hunter2 oops")
    assert "hunter2" not in str(caught.value)


@pytest.mark.parametrize(
    ("text", "redacted"),
    [
        ("postgresql://u:p%40ss@h:5/d", "postgresql://u:***@h:5/d"),
        ("postgresql://u@h/d", "postgresql://u@h/d"),
        ("postgres://:secret@h/d", "postgres://:***@h/d"),
        ("host=h password=secret dbname=d", "host=h password=*** dbname=d"),
        ("host=h password = 'se cr\\'et' dbname=d", "host=h password = *** dbname=d"),
        ("postgresql://h/d?password=secret&sslmode=require", "postgresql://h/d?password=***&sslmode=require"),
    ],
)  # fmt: skip
def test_redact_dsn(text: str, redacted: str) -> None:
    assert redact_dsn(text) == redacted
