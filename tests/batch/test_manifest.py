"""The manifest on SQLite and on a real PostgreSQL server: the same schema and queries, the
same answers; one process drives a job at a time, and a killed process's lock goes with it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from outform import batch
from outform.batch.manifest import RowUpdate
from outform.cli import main
from outform.cli.app import EXIT_RUNNING
from outform.errors import JobBusyError, StoreError, UsageError
from tests.batch.conftest import Scripted, submit
from tests.batch.fakes import BatchFake

pytest_plugins = ["tests.postgres"]


def _rows(count: int, start: int = 0) -> list[tuple[int, str, int, int]]:
    """(index, id, line, byte offset) of `count` rows."""
    return [(i, f"r{i}", i + 1, 10 * i) for i in range(start, start + count)]


def test_a_job_through_its_states(manifest: str) -> None:
    store = batch.open_manifest(manifest)
    try:
        assert store.create_job("j1", b'{"model": "m"}', _rows(12_000)) == 12_000
        store.set_job("j1", state="running", round=0)
        pages = list(store.pending_pages("j1", 0))
        assert [len(p) for p in pages] == [5000, 5000, 2000]  # a page at a time, in order
        assert pages[2][-1].offset == 119_990

        store.start_batch("j1", "r0b0", 0, [p.idx for p in pages[0]])
        assert store.count_waiting("j1", "r0b0") == 5000
        assert store.count_pending("j1", 0) == 7000
        waiting = store.waiting("j1", "r0b0", ["r3", "r4", "r6000", "nobody"])
        assert sorted(waiting) == ["r3", "r4"]  # r6000 is in no batch yet
        store.set_batch("j1", "r0b0", "submitted", provider_id="batch_1")

        # r3 done, r4 re-asked with its reply and hint, then sent again without a new reply
        # (expired): it keeps what it is to be re-asked about
        store.record(
            "j1",
            [
                RowUpdate(3, status="ok", result=b'{"id": "r3"}'),
                RowUpdate(4, next_round=1, text="bad", hint=b'{"violations": []}'),
            ],
        )
        store.record("j1", [RowUpdate(4, next_round=2, history=b'[{"round": 1}]')])
        store.record("j1", [RowUpdate(3, status="failed", result=b"again")])  # already done
        (again,) = store.pending("j1", 2)
        assert (again.row_id, again.attempts, again.last_text) == ("r4", 2, "bad")
        assert again.last_hint == b'{"violations": []}'
        assert store.count_open("j1", 0) == 11_998
        left = [r.row_id for page in store.left_in_batch("j1", "r0b0") for r in page]
        assert len(left) == 4998 and "r3" not in left and "r4" not in left

        store.release_batch("j1", "r0b0")  # never reached the provider: rows pending again
        assert store.count_pending("j1", 0) == 11_998
        assert store.batches("j1") == []
        assert store.status_counts("j1") == {"pending": 11_999, "ok": 1}
        results = list(store.results("j1"))
        assert [i for i, _ in results] == list(range(12_000))
        assert results[3] == (3, b'{"id": "r3"}') and results[4] == (4, None)
        store.end_round("j1", 0)
        assert [r["round"] for r in store.rounds("j1")] == [0]
        assert [j.id for j in store.jobs()] == ["j1"]
        store.delete_job("j1")
        assert store.jobs() == []
    finally:
        store.close()


@pytest.mark.parametrize(
    ("rows", "lines"),
    [
        ([*_rows(3), (3, "r1", 4, 30)], "lines 2, 4"),  # in one chunk
        ([*_rows(5001), (5001, "r2", 9000, 0)], "lines 3, 9000"),  # across chunks
    ],
    ids=["same-chunk", "across-chunks"],
)
def test_a_repeated_row_id_names_both_lines_and_keeps_nothing(
    manifest: str, rows: list[tuple[int, str, int, int]], lines: str
) -> None:
    store = batch.open_manifest(manifest)
    try:
        with pytest.raises(UsageError, match="appears more than once") as caught:
            store.create_job("j1", b"{}", rows)
        assert caught.value.where == lines
        assert store.jobs() == []
    finally:
        store.close()


def test_one_process_drives_a_job(manifest: str) -> None:
    first, second = batch.open_manifest(manifest), batch.open_manifest(manifest)
    try:
        with first.claim("j1"), first.claim("j1"):  # re-entrant in one manifest
            busy = pytest.raises(JobBusyError, match="being run by another process")
            with busy, second.claim("j1"):
                pass
            with second.claim("j2"):  # another job is free
                pass
        with second.claim("j1"):  # released
            pass
    finally:
        first.close()
        second.close()


_HOLD = """
import sys
from outform import batch
store = batch.open_manifest(sys.argv[1])
with store.claim("j1"):
    print("held", flush=True)
    sys.stdin.read()
"""


def test_a_killed_process_leaves_the_job_free(manifest: str) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD, manifest],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    store = batch.open_manifest(manifest)
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == b"held\n", holder.communicate(timeout=10)
        with pytest.raises(JobBusyError), store.claim("j1"):
            pass
        holder.kill()  # SIGKILL: nothing runs on the way out
        holder.wait(10)
        with store.claim("j1"):  # the OS (or the server) dropped the lock with the process
            pass
    finally:
        store.close()
        if holder.poll() is None:
            holder.kill()


def test_status_while_another_process_runs_the_job(
    rows: Path, manifest: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`status` reads what the running process recorded, without asking the provider (it
    would race the runner's submissions); `resume` refuses, with exit code 6."""
    with BatchFake("openai", Scripted(), polls=100) as fake:
        first = submit(rows, "openai:gpt-5-mini", manifest, fake.url + "/v1", max_requests=12)
        runner = batch.open_manifest(manifest)
        try:
            with runner.claim(first.job):
                asked = len(fake.requests)
                status = batch.status(first.job, manifest=manifest, api_key="k")
                assert len(fake.requests) == asked  # the provider was not asked
                assert status.counts == {"sent": 30} and len(status.batches) == 3
                code = main(["batch", "resume", first.job, "--manifest", manifest, "--json"])
                assert code == EXIT_RUNNING
                assert "being run by another process" in capsys.readouterr().err
        finally:
            runner.close()
        status = batch.status(first.job, manifest=manifest, api_key="k")
        assert len(fake.requests) > asked  # free again: the provider is asked
    assert orjson.loads(orjson.dumps(status.to_dict()))["state"] == "running"


def test_status_lists_the_jobs(
    rows: Path, manifest: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with BatchFake("openai", Scripted(), polls=100) as fake:
        first = submit(rows, "openai:gpt-5-mini", manifest, fake.url + "/v1")
    assert main(["batch", "status", "--manifest", manifest, "--json"]) == 0
    (listed,) = orjson.loads(capsys.readouterr().out)
    assert listed["job"] == first.job and listed["rows"] == 30 and listed["state"] == "running"


def test_a_postgres_manifest_that_cannot_be_used_is_named_without_its_password(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import socket

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    dsn = f"postgres:host=127.0.0.1 port={port} user=u password=s3cret dbname=d"
    with pytest.raises(StoreError, match=f"u@127.0.0.1:{port}/d") as caught:
        batch.open_manifest(dsn)
    assert "s3cret" not in caught.value.render()
    with pytest.raises(UsageError, match="not a valid PostgreSQL DSN"):
        batch.open_manifest("postgres:not = a = dsn")
    monkeypatch.delenv("OUTFORM_TEST_NO_DSN", raising=False)
    with pytest.raises(UsageError, match="OUTFORM_TEST_NO_DSN is not set"):
        batch.open_manifest("postgres:$OUTFORM_TEST_NO_DSN")
