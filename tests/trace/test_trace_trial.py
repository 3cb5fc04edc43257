"""Found by a trial of the trace tools: a report written over the store it read, a key's
prefix kept where a preview cut through it, a trouble rate counting a run twice, and events
lost at exit with no count and no word."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
import uuid
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

import outform
from outform.cli import EXIT_OK, EXIT_USAGE, main
from outform.trace import Batch, Event, Recorder, register_secret
from outform.trace.events import Change, Validation, ViolationRecord
from outform.trace.health import HealthQuery, report
from outform.trace.recorder import CountedRun, TraceLossWarning
from outform.trace.redact import MIN_PIECE, REDACTED, scrub_text
from outform.trace.sqlite_store import SqliteTraceStore
from outform.trace.store import TraceStore
from tests.trace.runs import RunSpec, run_events
from tests.trace.sinks import restore_recording
from tests.trace.stores import StoreFactory, make_store

__all__ = ["make_store"]

NOW = time.time()


def recorded_store(path: Path, runs: int = 5) -> SqliteTraceStore:
    store = SqliteTraceStore(path)
    store.open()
    events: list[Event] = []
    for n in range(runs):
        events += run_events(RunSpec(step="triage"), NOW - 600 + n)
    store.write(Batch(events, time=NOW))
    store.close()
    return store


def stored_runs(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        (count,) = conn.execute("SELECT COUNT(*) FROM outform_trace_runs").fetchone()
    return int(count)


# -- 1. a report never overwrites the store it reads ----------------------------------------


@pytest.mark.parametrize("as_format", ["--json", "--csv", None])
def test_health_refuses_to_write_its_report_over_the_store_it_reads(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, as_format: str | None
) -> None:
    path = tmp_path / "mp.db"
    recorded_store(path)
    size = path.stat().st_size
    options = [as_format] if as_format else []
    code = main(["health", "--store", f"sqlite:{path}", *options, "--output", str(path)])
    err = capsys.readouterr().err
    assert code == EXIT_USAGE
    assert f"--output {path}" in err and f"the trace store this command reads ({path})" in err
    assert "fix: write the report to another file" in err
    assert path.stat().st_size == size and stored_runs(path) == 5


def test_the_store_is_recognised_by_any_path_that_leads_to_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Relative, through `..`, a symbolic link, a hard link (the same inode), or one of the
    files SQLite keeps beside the database: all are the store."""
    path = tmp_path / "mp.db"
    recorded_store(path)
    (tmp_path / "sub").mkdir()
    (tmp_path / "symlink.db").symlink_to(path)
    os.link(path, tmp_path / "hardlink.db")
    monkeypatch.chdir(tmp_path / "sub")
    for output in ("../mp.db", "../symlink.db", "../hardlink.db", str(path) + "-wal",
                   str(path) + "-shm", str(path) + "-journal"):  # fmt: skip
        code = main(["health", "--store", "sqlite:../mp.db", "--json", "-o", output])
        assert code == EXIT_USAGE, output
        assert "trace store this command reads" in capsys.readouterr().err
    assert stored_runs(path) == 5
    assert not Path(str(path) + "-journal").exists()  # refused before anything was written


def test_another_file_beside_the_store_is_written(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "mp.db"
    recorded_store(path)
    target = tmp_path / "mp.db.json"
    code = main(["health", "--store", f"sqlite:{path}", "--json", "--output", str(target)])
    assert code == EXIT_OK and target.read_bytes().startswith(b"{")
    assert stored_runs(path) == 5


def test_a_sqlite_store_names_its_files_and_a_server_store_none(tmp_path: Path) -> None:
    store = SqliteTraceStore(tmp_path / "t.db")
    names = [p.name for p in store.files()]
    assert names == ["t.db", "t.db-wal", "t.db-shm", "t.db-journal"]
    assert TraceStore.files(store) == ()  # what PostgreSQL keeps: nothing a command writes


# -- 2. a key cut by a preview is masked ---------------------------------------------------


def a_key() -> str:
    """A key of no known shape (only outform knowing it keeps it out), registered."""
    key = uuid.uuid4().hex[:20] * 2
    register_secret(key)
    return key


def test_a_key_cut_at_the_end_of_a_preview_is_masked() -> None:
    key = a_key()
    for ellipsis in ("…", "...", ""):
        text = "p" * 100 + key[:19] + ellipsis
        assert scrub_text(text) == "p" * 100 + REDACTED + ellipsis


def test_a_key_cut_at_the_front_of_a_preview_is_masked() -> None:
    key = a_key()
    for ellipsis in ("…", "...", ""):
        text = ellipsis + key[-15:] + '", "b": 1}'
        assert scrub_text(text) == ellipsis + REDACTED + '", "b": 1}'


def test_a_piece_from_inside_a_key_cut_at_both_ends_is_masked() -> None:
    key = a_key()
    assert scrub_text("…" + key[3:17] + "…") == "…" + REDACTED + "…"


def test_a_piece_shorter_than_min_piece_is_no_secret() -> None:
    key = a_key()
    text = "an ordinary word " + key[: MIN_PIECE - 1] + "…"
    assert scrub_text(text) == text
    assert scrub_text("x" + key[:MIN_PIECE] + "…") == "x" + REDACTED + "…"


def test_a_piece_inside_a_text_is_kept_and_a_whole_key_anywhere_is_masked() -> None:
    """Only an edge is a cut: a piece in the middle of a text was not cut from a key."""
    key = a_key()
    inside = "before " + key[:12] + " after"
    assert scrub_text(inside) == inside
    assert scrub_text(f"{key} and {key[:10]}…") == f"{REDACTED} and {REDACTED}…"


class M(BaseModel):
    a: int
    c: list[str]


def test_the_trial_reply_leaves_no_piece_of_the_key_in_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The trial's case: a change's preview (wrap_in_array) cut through a registered key."""
    restore_recording(monkeypatch)
    key = a_key()
    path = tmp_path / "trace.sqlite"
    outform.trace.start(store=f"sqlite:{path}")
    outform.parse('{"a": "1", "c": "' + "p" * 100 + key + '"}', type=M)
    assert outform.trace.flush()
    outform.trace.stop()
    with sqlite3.connect(path) as conn:
        bodies = [b for (b,) in conn.execute("SELECT body FROM outform_trace_events")]
    changes = [b for b in bodies if '"output.change"' in b]
    assert changes and any(REDACTED in b for b in changes)
    pieces = {key[i : i + MIN_PIECE] for i in range(len(key) - MIN_PIECE + 1)}
    assert not any(piece in body for body in bodies for piece in pieces)


def test_every_cut_text_of_an_event_is_scrubbed_by_the_same_rule() -> None:
    """Change previews, a violation's expected and found, an envelope's sources: each is cut
    (`events.bounded`) and each goes through `scrub_text` on its way to the sinks."""
    from outform.trace.events import RunEnd
    from outform.trace.recorder import _clean

    key = a_key()
    cut = "p" * 100 + key[:19] + "…"
    change = Event("output.change", "semantic", data=Change(cut, cut))
    found = ViolationRecord("/c", "type", cut, cut)
    failed = Event("output.validation.fail", "validate", data=Validation((found,), 1))
    ended = Event("run.end", data=RunEnd("valid", sources=(cut,)))
    for event in (change, failed, ended):
        cleaned = _clean(event).to_dict()
        assert key[:MIN_PIECE] not in str(cleaned) and REDACTED in str(cleaned)


# -- 3. a run is counted once in a mode's trouble rate -------------------------------------


def write_runs(store: TraceStore, *specs: RunSpec) -> None:
    store.open()
    events: list[Event] = []
    for n, spec in enumerate(specs):
        events += run_events(spec, NOW - 600 + n)
    store.write(Batch(events, time=NOW))


def modes_of(store: TraceStore) -> dict[str, dict[str, Any]]:
    data = report(store, HealthQuery(since_hours=1, now=NOW)).to_dict()
    return {row["mode"]: row for row in data["modes"]}


def test_a_run_reasked_then_failed_is_one_troubled_run(make_store: StoreFactory) -> None:
    """The trial's numbers: 4 valid runs, 1 re-asked then failed, 1 provider error: 1 of 5
    runs with a reply (0.2, not 0.4)."""
    store = make_store()
    write_runs(
        store,
        *[RunSpec(mode="tool")] * 4,
        RunSpec(mode="tool", reasked=("/a",), outcome="invalid"),
        RunSpec(mode="tool", outcome="error"),
    )
    row = modes_of(store)["tool"]
    assert (row["runs"], row["errors"], row["reasked"], row["failed"]) == (6, 1, 1, 1)
    assert row["troubled"] == 1 and row["trouble_rate"] == 0.2


def test_the_trouble_rate_never_passes_one(make_store: StoreFactory) -> None:
    store = make_store()
    write_runs(store, *[RunSpec(mode="tool", reasked=("/a",), outcome="invalid")] * 3)
    row = modes_of(store)["tool"]
    assert (row["reasked"], row["failed"], row["troubled"], row["trouble_rate"]) == (3, 3, 3, 1.0)


def test_runs_that_were_reasked_or_failed_add_up_once_each(make_store: StoreFactory) -> None:
    """Re-asked then valid, failed at once, re-asked then refused, valid: 3 of 4."""
    store = make_store()
    write_runs(
        store,
        RunSpec(mode="tool", reasked=("/a",)),
        RunSpec(mode="tool", outcome="invalid"),
        RunSpec(mode="tool", reasked=("/a",), outcome="refused"),
        RunSpec(mode="tool"),
    )
    assert modes_of(store)["tool"]["trouble_rate"] == 0.75


def test_switch_mode_is_advised_on_runs_not_on_outcomes(make_store: StoreFactory) -> None:
    """2 of 10 runs re-asked then failed: 20%, under the 25% threshold (counted twice, it
    read 40% and advised a switch); 3 of 10: 30%, advised, with the runs as evidence."""
    store = make_store()
    for troubled in (2, 3):
        model = f"model-{troubled}"
        bad = RunSpec(model=model, mode="tool", reasked=("/a",), outcome="invalid")
        write_runs(store, *[bad] * troubled, *[RunSpec(model=model, mode="tool")] * (10 - troubled))
    found = report(store, HealthQuery(since_hours=1, now=NOW))
    (advice,) = [r for r in found.recommendations if r["kind"] == "switch_mode"]
    assert advice["target"] == {"model": "openai:model-3", "mode": "tool"}
    assert advice["evidence"]["troubled"] == 3
    assert "in 30% of 10 runs with a reply" in advice["message"]


def test_reasked_runs_recorded_without_their_outcome_keep_the_rate_at_most_one(
    tmp_path: Path,
) -> None:
    """Counts written before the outcome of a re-asked run was kept: such a run counts as
    troubled, and the rate stays a share."""
    store = SqliteTraceStore(tmp_path / "t.db")
    store.open()
    old = CountedRun("s", "openai", "gpt-4o", "tool",
                     (("run.end", "", "invalid", 1), ("run.reasked", "", "", 1)))  # fmt: skip
    store.write(Batch(counted=Counter({old: 3}), time=NOW))
    row = modes_of(store)["tool"]
    assert (row["reasked"], row["failed"], row["troubled"], row["trouble_rate"]) == (3, 3, 3, 1.0)
    store.close()


# -- 4. events lost at exit are counted, or said ------------------------------------------


def full_store(path: Path) -> SqliteTraceStore:
    """A store on a disk that fills up once it is open (SQLite's page limit: the same error,
    `database or disk is full`)."""
    store = SqliteTraceStore(path)
    store.open()
    (pages,) = store._writer.execute("PRAGMA page_count").fetchone()
    store._writer.execute(f"PRAGMA max_page_count = {pages}")
    return store


def test_events_lost_at_close_are_counted_in_dropped_events(tmp_path: Path) -> None:
    store = full_store(tmp_path / "t.db")
    events: list[Event] = []
    for n in range(50):
        events += run_events(RunSpec(), NOW - 60 + n / 100)
    with pytest.raises(sqlite3.OperationalError, match="full"):
        store.write(Batch(events, time=NOW))  # kept for a retry, as the recorder does
    store.close()  # the retry fails too: the batch is lost, and its count written
    reader = SqliteTraceStore(tmp_path / "t.db", create=False)
    data = report(reader, HealthQuery(since_hours=1)).to_dict()
    reader.close()
    assert data["totals"]["runs"] == 0 and data["totals"]["dropped_events"] == len(events)
    assert any(r["kind"] == "queue_size" for r in data["recommendations"])
    assert store.lost_events == 0


class DeadStore(SqliteTraceStore):
    """A store that can write nothing any more, not even a count."""

    dead = False

    def _begin(self, conn: Any) -> None:
        if self.dead:
            raise sqlite3.OperationalError("database or disk is full")
        super()._begin(conn)


def test_events_not_even_counted_are_said_on_standard_error(tmp_path: Path) -> None:
    store = DeadStore(tmp_path / "t.db")
    store.open()
    store.dead = True
    events = run_events(RunSpec(), NOW)
    with pytest.raises(sqlite3.OperationalError):
        store.write(
            Batch(events, tallies=Counter({outform.trace.Labels(): 2}), dropped=3, time=NOW)
        )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        store.close()
    lost = len(events) + 2 + 3  # the events, the tallied runs, the drops the batch carried
    assert store.lost_events == lost
    (warning,) = [w for w in caught if issubclass(w.category, TraceLossWarning)]
    message = str(warning.message)
    assert f"{lost} events could not be written to the trace store" in message
    assert "database or disk is full" in message and "dropped_events" in message


def test_a_process_that_loses_its_events_at_exit_says_so(tmp_path: Path) -> None:
    """End to end: the recorder's exit hook closes the store, and the warning reaches the
    process's standard error (the `outform.trace` logger is silent unless configured)."""
    script = f"""
import sqlite3, time
from outform.trace import Event, Recorder
from outform.trace.events import RunEnd
from outform.trace.sqlite_store import SqliteTraceStore

class DeadStore(SqliteTraceStore):
    def _begin(self, conn):
        if getattr(self, "dead", False):
            raise sqlite3.OperationalError("database or disk is full")
        super()._begin(conn)

store = DeadStore({str(tmp_path / "t.db")!r})
recorder = Recorder([store], flush_interval=60)
assert recorder.flush()
store.dead = True
for _ in range(7):
    recorder.record(Event("run.end", data=RunEnd("valid")))
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "TraceLossWarning: outform trace: 7 events could not be written" in done.stderr


def test_a_recorder_still_hands_every_batch_to_its_sinks(tmp_path: Path) -> None:
    """The cleaning step now checks each string: an event without a secret is kept as is."""
    store = SqliteTraceStore(tmp_path / "t.db")
    recorder = Recorder([store])
    events = run_events(RunSpec(), NOW)
    recorder.record_all(events)
    assert recorder.flush()
    recorder.close()
    reader = SqliteTraceStore(tmp_path / "t.db", create=False)
    assert reader.run(events[0].run.run_id)[1] == events  # type: ignore[union-attr]
    reader.close()


def test_a_store_named_file_colon_is_that_file_not_a_sqlite_uri(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite reads a name beginning with `file:` as a URI (`file:t.db` opened t.db), so a
    check that compares the store's path with an output's would compare the wrong file."""
    from outform.trace.sqlite_store import SqliteTraceStore

    monkeypatch.chdir(tmp_path)
    store = SqliteTraceStore("file:t.db")
    store.open()
    store.close()
    assert (tmp_path / "file:t.db").is_file()
    assert not (tmp_path / "t.db").exists()
