"""Trace events the store could not keep are the command's error, told after its output.

`OUTFORM_TRACE=sqlite:reply.txt/sub/t.db outform parse reply.txt` (a store that cannot be
created), or a store on a full disk, printed the value, then Python's warning at exit
(`.../store.py:345: TraceLossWarning: outform trace: 1 events could not be written ...` and a
`warnings.warn(` line), and exited 0. The rule (docs/cli.md, "Exit codes"): a command that
records closes the recording itself once its output is printed; what the store could not keep
is told as every error is (`error:`, `where:` the store, `fix:`), and a command that succeeded
exits 2. One that failed keeps its own code, the loss said after its error. The library's own
rule is unchanged: a program that is not the command line gets the `TraceLossWarning` at exit.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import subprocess
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from outform.cli import EXIT_INVALID, EXIT_OK, EXIT_USAGE, main
from outform.trace import Event, Recorder, runtime
from outform.trace.events import RunEnd
from outform.trace.recorder import TraceLossWarning
from outform.trace.sqlite_store import SqliteTraceStore
from tests.providers import openai_wire
from tests.providers.fake import FakeServer
from tests.test_cli import CONSOLE_SCRIPT, isolated
from tests.trace.sinks import restore_recording

SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
VALUE = {"a": 1}
CANNOT_CREATE = "point [trace] store at a writable place, or set OUTFORM_TRACE=off"
"""The store's fix for a directory it cannot create."""


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    (tmp_path / "good.txt").write_text('{"a": 1}')
    (tmp_path / "bad.txt").write_text('{"b": 1}')
    (tmp_path / "schema.json").write_bytes(orjson.dumps(SCHEMA))
    (tmp_path / "rows.jsonl").write_text('{"id": "r1", "text": "one"}\n')
    return tmp_path


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as fake:
        yield fake


def blocked(workdir: Path) -> Path:
    """A store that cannot be created: its directory would be under a regular file (refused
    to root too, unlike a directory without write permission)."""
    return workdir / "good.txt" / "sub" / "t.db"


def outform(
    workdir: Path, store: Path, *args: str, prefix: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    """The installed console script, recording into `store`, no config from outside."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OUTFORM_")}
    env |= {"OUTFORM_TRACE": f"sqlite:{store}", "OPENAI_API_KEY": "k"}
    return subprocess.run(
        [*prefix, str(CONSOLE_SCRIPT), *args],
        cwd=workdir,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def loss_told(stderr: str, store: Path, fix: str) -> str:
    """The error that tells the loss, last on standard error, in the command line's form;
    its first line (what was lost, and why)."""
    what, where, fixed, end = stderr.split("\n")[-4:]
    assert (where, fixed, end) == (f"  where: {store}", f"  fix: {fix}", "")
    assert what.startswith("error: ") and f"to the trace store {store} and are lost" in what
    assert "warnings.warn" not in stderr and "TraceLossWarning" not in stderr
    assert "Traceback" not in stderr
    return what


def run_command(name: str, workdir: Path, store: Path, server: FakeServer) -> Any:
    """`name` run to success, recording into `store`: (the process, the value it gave, on
    standard output, or for a batch in its output file)."""
    if name == "parse":
        done = outform(workdir, store, "parse", "good.txt", "-s", "schema.json")
        return done, orjson.loads(done.stdout or "null")
    server.json(openai_wire.chat_completion(content='{"a": 1}'))
    url = server.url + "/v1"
    if name == "generate":
        model = "openai:gpt-4o"
        done = outform(workdir, store, "generate", model, "hi", "-s", "schema.json",
                       "--base-url", url)  # fmt: skip
        return done, orjson.loads(done.stdout or "null")
    done = outform(
        workdir, store, "batch", "run", "rows.jsonl", "-m", "openai:gpt-4o", "-s", "schema.json",
        "-p", "{text}", "-o", "out.jsonl", "--live", "--base-url", url, "--json",
    )  # fmt: skip
    assert orjson.loads(done.stdout)["counts"]  # standard output: the job's summary
    return done, orjson.loads((workdir / "out.jsonl").read_text())["value"]


COMMANDS = ["parse", "generate", "batch run --live"]


@pytest.mark.parametrize("command", COMMANDS)
def test_a_store_that_cannot_be_created_is_the_commands_error_after_its_output(
    workdir: Path, server: FakeServer, command: str
) -> None:
    store = blocked(workdir)
    done, value = run_command(command.partition(" ")[0], workdir, store, server)
    assert done.returncode == EXIT_USAGE, done.stderr
    assert value == VALUE
    what = loss_told(done.stderr, store, CANNOT_CREATE)
    assert "cannot create the directory of the trace store" in what and "Not a directory" in what


def test_a_command_that_failed_keeps_its_code_and_says_the_loss_after_its_error(
    workdir: Path,
) -> None:
    store = blocked(workdir)
    done = outform(workdir, store, "parse", "bad.txt", "-s", "schema.json")
    assert done.returncode == EXIT_INVALID
    assert done.stderr.index("error: the reply does not match") < done.stderr.index("events")
    loss_told(done.stderr, store, CANNOT_CREATE)


@pytest.mark.parametrize("command", ["parse", "generate"])
def test_a_store_that_works_is_written_before_the_command_exits(
    workdir: Path, server: FakeServer, command: str
) -> None:
    store = workdir / "trace" / "t.db"
    done, value = run_command(command, workdir, store, server)
    assert (done.returncode, value) == (EXIT_OK, VALUE)
    assert "error" not in done.stderr and "warn" not in done.stderr
    with sqlite3.connect(store) as conn:
        ended = conn.execute(
            "SELECT key, n FROM outform_trace_counts WHERE kind = 'run.end'"
        ).fetchall()
    assert ended == [("valid", 1)]


def test_a_command_that_records_nothing_says_nothing_of_the_store(workdir: Path) -> None:
    done = outform(workdir, blocked(workdir), "schema", "schema.json", "--dialect", "openai")
    assert done.returncode == EXIT_OK and "error" not in done.stderr


class CountOnlyStore(SqliteTraceStore):
    """A store with room for one row only: no batch fits, the count of what was lost does."""

    def _apply(self, conn: Any, rows: Any) -> None:
        raise sqlite3.OperationalError("database or disk is full")


def test_a_loss_the_store_could_still_count_is_no_error_of_the_command(
    workdir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The loss is in the store (`outform health` reports it as dropped_events): the library
    says nothing of it, and the command line neither."""
    path = workdir / "t.db"
    restore_recording(monkeypatch)
    monkeypatch.setattr(runtime, "_recorder", None)
    monkeypatch.setattr(runtime, "_decided", False)  # the command starts the recorder
    monkeypatch.setattr(runtime, "tally", runtime._decide_then_tally)
    monkeypatch.setattr(runtime, "sinks_for", lambda *_, **__: [CountOnlyStore(path)])
    monkeypatch.setenv("OUTFORM_TRACE", f"sqlite:{path}")
    with contextlib.contextmanager(isolated)(workdir, monkeypatch, {}):  # (config reread)
        assert main(["parse", "good.txt", "-s", "schema.json"]) == EXIT_OK
    assert "error" not in capsys.readouterr().err
    with sqlite3.connect(path) as conn:
        counted = conn.execute("SELECT kind, n FROM outform_trace_counts").fetchall()
    assert counted == [("trace.dropped", 1)]


# -- a full disk: a tmpfs filled up, mounted in a user namespace (no root needed) --------------


FULL_DISK = (
    'mount -t tmpfs -o size=64k tmpfs "$1" && '
    '{ dd if=/dev/zero of="$1/fill" bs=4k 2>/dev/null; shift; exec "$@"; }'
)


def _full_disk_available(tmp_path: Path) -> bool:
    if shutil.which("unshare") is None:
        return False
    done = subprocess.run(
        ["unshare", "-rm", "sh", "-c", FULL_DISK, "-", str(tmp_path), "df", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    return done.returncode == 0 and "100%" in done.stdout


def test_a_store_on_a_full_disk_is_the_commands_error(workdir: Path, tmp_path: Path) -> None:
    disk = tmp_path / "disk"
    disk.mkdir()
    if not _full_disk_available(disk):
        pytest.skip("needs util-linux's unshare and user namespaces (unshare -rm) to mount a tmpfs")
    store = disk / "t.db"
    prefix = ("unshare", "-rm", "sh", "-c", FULL_DISK, "-", str(disk))
    done = outform(workdir, store, "parse", "good.txt", "-s", "schema.json", prefix=prefix)
    assert done.returncode == EXIT_USAGE, done.stderr
    assert orjson.loads(done.stdout) == VALUE
    what = loss_told(done.stderr, store, "check the path and its permissions, or set "
                                        "OUTFORM_TRACE=off")  # fmt: skip
    assert "database or disk is full" in what


# -- the recorder: a loss warned, or kept for the caller to tell ---------------------------


def unopened(tmp_path: Path) -> tuple[Recorder, SqliteTraceStore]:
    """A recorder over a store that cannot be created, holding one event."""
    store = SqliteTraceStore(blocked(tmp_path))
    recorder = Recorder([store], flush_interval=60)
    recorder.record(Event("run.end", data=RunEnd("valid")))
    return recorder, store


def test_a_recorder_closed_without_warning_keeps_the_loss_for_its_caller(
    workdir: Path,
) -> None:
    recorder, store = unopened(workdir)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        recorder.close(warn=False)
    assert not caught
    (loss,) = recorder.losses
    assert loss.sink is store and store.lost_events == 1
    assert loss.warning.what.startswith("1 events could not be written")


def test_a_recorder_closed_as_a_library_closes_it_still_warns(workdir: Path) -> None:
    recorder, store = unopened(workdir)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        recorder.close()
    assert [w.category for w in caught] == [TraceLossWarning]
    assert recorder.losses == [] and store.lost_events == 1
