"""The recorder: off the hot path, bounded, flushed on demand and at exit, never silent
about a loss, never losing a committed batch to kill -9, never passing a secret on."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import orjson
import pytest

from outform.trace import Event, Labels, Recorder, RunInfo, labels, register_secret
from outform.trace.redact import REDACTED
from outform.trace.sqlite_store import SqliteTraceStore
from tests.trace.runs import RunSpec, run_events
from tests.trace.sinks import ListSink

ROOT = Path(__file__).resolve().parents[2]


def test_flush_delivers_everything_recorded_before_it_in_order() -> None:
    sink = ListSink()
    recorder = Recorder([sink], flush_interval=60)  # only flush() wakes the writer
    events = run_events(RunSpec(reasked=("/a",)), time.time())
    recorder.record_all(events)
    assert recorder.flush()
    assert sink.events == events
    recorder.close()
    assert (sink.opened, sink.closed) == (1, 1)


def test_tallies_are_counted_per_resolved_labels() -> None:
    sink = ListSink()
    recorder = Recorder([sink], flush_interval=60)
    with labels(step="outer", tags=["a"]):
        recorder.tally()
        with labels(agent="bot", tags=["b"]):
            recorder.tally()
            recorder.tally()
    recorder.flush()
    recorder.close()
    (batch,) = sink.batches
    assert dict(batch.tallies) == {
        Labels(step="outer", tags=("a",)): 1,
        Labels(step="outer", agent="bot", tags=("a", "b")): 2,
    }


def test_a_full_queue_drops_new_events_and_the_next_batch_says_how_many() -> None:
    sink = ListSink()
    recorder = Recorder([sink], queue_size=100, flush_interval=60)
    recorder._wake.clear()
    events = [Event("run.start", run=RunInfo(f"r{i}")) for i in range(150)]
    # The writer sleeps until flushed: the first 100 fit, the next 50 are dropped.
    recorder.record_all(events)
    assert recorder.dropped == 50
    recorder.flush()
    recorder.close()
    assert sink.events == events[:100]
    assert sum(b.dropped for b in sink.batches) == 50


def test_events_built_later_keep_their_place_and_count_against_the_bound() -> None:
    sink = ListSink()
    recorder = Recorder([sink], queue_size=10, flush_interval=60)
    recorder._wake.clear()
    events = [Event("run.start", run=RunInfo(f"r{i}")) for i in range(12)]
    recorder.record(events[0])
    recorder.record_later(8, lambda: events[1:9])
    recorder.record_later(3, lambda: events[9:12])  # one fits: two dropped
    recorder.record(events[11])  # the queue is full
    assert (recorder.backlog, recorder.dropped) == (10, 3)
    recorder.flush()
    recorder.close()
    assert sink.events == events[:10]
    assert sum(b.dropped for b in sink.batches) == 3


def test_events_that_fail_to_build_are_counted_as_dropped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    sink = ListSink()
    recorder = Recorder([sink], flush_interval=60)
    recorder.record_later(4, lambda: 1 / 0)  # type: ignore[arg-type,return-value]
    recorder.record(Event("run.end"))
    recorder.flush()
    recorder.close()
    assert [e.name for e in sink.events] == ["run.end"]
    assert sum(b.dropped for b in sink.batches) == 4
    assert "building 4 events failed" in caplog.text


def test_a_failing_sink_is_logged_and_the_others_still_get_the_batch(
    caplog: pytest.LogCaptureFixture,
) -> None:
    broken, good = ListSink(fail=True), ListSink()
    recorder = Recorder([broken, good], flush_interval=60)
    recorder.record(Event("run.start", run=RunInfo("r")))
    recorder.flush()
    recorder.close()
    assert len(good.events) == 1
    assert "a sink failed to write a batch" in caplog.text


def test_close_flushes_and_is_idempotent() -> None:
    sink = ListSink()
    recorder = Recorder([sink], flush_interval=60)
    recorder.record(Event("run.start", run=RunInfo("r")))
    recorder.close()
    recorder.close()
    assert len(sink.events) == 1 and sink.closed == 1
    assert not recorder.flush()


def test_secrets_are_replaced_before_any_sink_sees_them() -> None:
    register_secret("my-own-long-secret-value")
    sink = ListSink()
    recorder = Recorder([sink], flush_interval=60)
    leaky = run_events(
        RunSpec(tags=("key=my-own-long-secret-value",), changes=(("extract", "fence", ""),)),
        time.time(),
    )
    leaky.append(Event("output.change", "semantic", detail="sk-proj-ABCDEFGHIJKLMNOPQRSTUV"))
    recorder.record_all(leaky)
    recorder.flush()
    recorder.close()
    text = orjson.dumps([e.to_dict() for e in sink.events]).decode()
    assert "my-own-long-secret-value" not in text and "sk-proj-ABCDEF" not in text
    assert text.count(REDACTED) >= len(leaky)  # every event of the run carries the tag


CHILD = textwrap.dedent(
    """
    import sys, time
    from outform import trace
    from outform.trace import Event, RunInfo

    recorder = trace.start(store="sqlite:" + sys.argv[1])
    recorder.flush_interval = 0.01
    seq = 0
    def record(n):
        global seq
        for _ in range(n):
            recorder.record(Event("run.start", run=RunInfo(f"r{seq:08d}", step="crash")))
            seq += 1
    record(2000)
    assert recorder.flush()
    print("committed", seq, flush=True)
    while True:  # keep the writer busy until killed
        record(500)
        if seq == 12000:
            print("busy", flush=True)
        time.sleep(0.001)
    """
)


def test_kill_9_loses_at_most_the_batch_in_flight_and_never_a_committed_one(
    tmp_path: Path,
) -> None:
    path = tmp_path / "trace.sqlite"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path)], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert child.stdout is not None
        committed = int(child.stdout.readline().split()[1])
        assert child.stdout.readline().strip() == "busy"
        child.send_signal(signal.SIGKILL)
    finally:
        child.wait(30)
    assert child.returncode == -signal.SIGKILL
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    ids = [r for (r,) in conn.execute("SELECT run_id FROM outform_trace_runs ORDER BY run_id")]
    conn.close()
    # Every committed event is there, and what is there is a prefix: batches commit whole
    # and in order, so the kill cost only what was recorded after the last commit.
    assert len(ids) >= committed == 2000
    assert ids == [f"r{i:08d}" for i in range(len(ids))]
    reopened = SqliteTraceStore(path)
    reopened.open()
    reopened.close()
