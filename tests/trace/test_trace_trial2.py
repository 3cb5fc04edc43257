"""Found by a second new-user trial of the trace tools: a store that could not be opened lost
every event without a word, `outform health` left out up to a bucket of the window it was
asked for, and its abort rate counted aborts, not aborted runs (it could pass 100%)."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

import outform
from outform.errors import StoreError
from outform.trace import Batch, Event, Labels, Recorder
from outform.trace.events import RunEnd
from outform.trace.health import HealthQuery, report, window
from outform.trace.recorder import TraceLossWarning
from outform.trace.sqlite_store import SqliteTraceStore
from outform.trace.tracer import RunTrace
from tests.trace.runs import RunSpec, run_events
from tests.trace.sinks import ListSink, restore_recording
from tests.trace.stores import StoreFactory, make_store

__all__ = ["make_store"]

COERCED = '{"n": "1"}'  # a reply with one change: a run of three events when parsed
SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


def at(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def unopenable(tmp_path: Path, how: str) -> Path:
    """A store path that cannot be opened: a directory where the file should be, or a file
    where its directory should be (as a read-only or full disk refuses it)."""
    if how == "a directory":
        path = tmp_path / "t.db"
        path.mkdir()
        return path
    (tmp_path / "blocked").write_text("a file, not a directory")
    return tmp_path / "blocked" / "t.db"


def loss_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, TraceLossWarning)]


# -- 1. a store that cannot be opened: its events kept, then counted or said ------------------


@pytest.mark.parametrize("how", ["a directory", "a file"])
def test_an_application_whose_store_cannot_be_opened_says_what_it_lost(
    tmp_path: Path, how: str
) -> None:
    """End to end, as the trial ran it: every call succeeds, and at exit standard error says
    how many events were lost, where, and why (whatever the logging setup)."""
    store = unopenable(tmp_path, how)
    script = (
        f"import outform\nfor _ in range(3): outform.parse({COERCED!r}, {SCHEMA!r})\nprint('ok')\n"
    )
    env = {**os.environ, "OUTFORM_TRACE": f"sqlite:{store}"}
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode == 0 and done.stdout == "ok\n", done.stderr
    assert "TraceLossWarning: outform trace: 9 events could not be written to the trace store" in (
        done.stderr
    )
    assert str(store) in done.stderr and "StoreError: cannot" in done.stderr


def test_configuring_a_store_that_cannot_be_opened_does_not_break_the_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One rule for every failure of the store, when it opens or later: a directory that
    cannot be created was a StoreError from `start()`, and so from every `parse()` and
    `generate()`; a full disk later loses nothing of the calls. Now both keep the events,
    and what cannot be written is said."""
    restore_recording(monkeypatch)
    outform.trace.start(store=f"sqlite:{unopenable(tmp_path, 'a file')}")
    assert outform.parse(COERCED, SCHEMA).data == {"n": 1}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outform.trace.stop()
    (said,) = loss_warnings(caught)
    assert said.startswith("outform trace: 3 events could not be written to the trace store")
    assert "cannot create the directory of the trace store" in said
    assert "Fix: point [trace] store at a writable place, or set OUTFORM_TRACE=off" in said


def test_the_store_keeps_its_events_and_counts_them_lost_at_close(tmp_path: Path) -> None:
    store = SqliteTraceStore(unopenable(tmp_path, "a directory"))
    store.open()  # no exception: the recorder keeps the store
    events = run_events(RunSpec(), 1_700_000_000.0)
    batch = Batch(events, tallies=Counter({Labels(): 2}), dropped=1, time=1_700_000_000.0)
    with pytest.raises(StoreError, match="cannot open the trace store"):
        store.write(batch)  # kept for a retry, as a batch that failed to commit is
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        store.close()
    lost = len(events) + 2 + 1
    assert store.lost_events == lost
    (said,) = loss_warnings(caught)
    assert f"{lost} events could not be written" in said and "dropped_events" in said


def test_a_store_that_opens_later_writes_what_it_kept(tmp_path: Path) -> None:
    """A disk full when the store first opens, freed later: nothing is lost."""
    path = unopenable(tmp_path, "a file")
    store = SqliteTraceStore(path)
    store.open()
    events = run_events(RunSpec(step="late"), 1_700_000_000.0)
    with pytest.raises(StoreError):
        store.write(Batch(events, time=1_700_000_000.0))
    path.parent.unlink()  # the way is clear now
    store.write(Batch(time=1_700_000_001.0))  # the next batch opens the store first
    store.close()
    assert store.lost_events == 0
    reader = SqliteTraceStore(path, create=False)
    assert reader.run(events[0].run.run_id)[1] == events  # type: ignore[union-attr]
    reader.close()


class UnopenableSink(ListSink):
    def open(self) -> None:
        raise RuntimeError("no collector at localhost:4317")


def test_any_sink_that_fails_to_open_has_what_it_missed_said_at_close() -> None:
    sink, kept = UnopenableSink(), ListSink()
    recorder = Recorder([sink, kept], flush_interval=60)
    for event in run_events(RunSpec(), 1_700_000_000.0)[:3]:
        recorder.record(event)
    recorder.tally()
    assert recorder.flush()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        recorder.close()
    (said,) = loss_warnings(caught)
    assert said.startswith("outform trace: 4 events were not recorded by")
    assert "failed to open (RuntimeError: no collector at localhost:4317)" in said
    assert len(kept.events) == 3  # the other sinks had them


# -- 2. the health window covers at least what was asked -------------------------------------


def recorded(store: Any, when: float, spec: RunSpec | None = None) -> None:
    store.write(Batch(run_events(spec or RunSpec(), when), time=when))


def test_the_window_starts_at_or_before_the_hours_asked_for(make_store: StoreFactory) -> None:
    """At 08:15, `--since-hours 24` reported since 09:00 yesterday and left out a run 23.63
    hours old. The buckets (2 hours, ending with the current hour) now reach back to the
    bucket that holds 08:15 yesterday."""
    now = at("2026-11-30T08:15:00Z")
    store = make_store()
    store.open()
    recorded(store, now - 23.63 * 3600)
    data = report(store, HealthQuery(since_hours=24, now=now)).to_dict()
    assert data["window"]["since"] == "2026-11-29T07:00:00Z"
    assert data["totals"]["runs"] == 1
    trend = data["trend"]
    assert trend["bucket_seconds"] == 2 * 3600 and len(trend["buckets"]) == 13
    assert trend["buckets"][-1]["start"] == "2026-11-30T07:00:00Z"  # ends with the hour
    assert trend["buckets"][0]["runs"] == 1


def test_a_short_window_covers_the_seconds_asked_for_too(make_store: StoreFactory) -> None:
    now = at("2026-11-30T08:15:30Z")
    store = make_store()
    store.open()
    recorded(store, now - 3590)  # 59 minutes 50 seconds ago
    data = report(store, HealthQuery(since_hours=1, now=now)).to_dict()
    assert data["window"]["since"] <= "2026-11-30T07:15:30Z"
    assert data["totals"]["runs"] == 1


@pytest.mark.parametrize("hours", [0.01, 0.05, 1, 5.5, 6, 7, 24, 24 * 7, 24 * 365])
@pytest.mark.parametrize("asked_buckets", [1, 4, 12, 100])
def test_whatever_the_clock_the_window_holds_all_it_was_asked_for(
    hours: float, asked_buckets: int
) -> None:
    asked = hours * 3600
    for minute in range(0, 24 * 60, 7):  # a day, minute by minute (every seventh)
        now = at("2026-11-30T00:00:00Z") + minute * 60 + 17.5
        start, end, width, buckets = window(now, asked, asked_buckets)
        assert start <= now - asked < start + width  # widened by less than a bucket
        assert now < end <= now + 3600 + 60  # the last bucket holds now
        assert end - start == buckets * width and buckets <= asked_buckets + 1


# -- 3. the abort rate is a share of streamed runs -------------------------------------------


def streamed_run(recorder: Recorder, aborts: int, *, streaming: bool = True) -> RunTrace:
    run = RunTrace.begin(
        streaming=streaming, observers=None, recorder=recorder, strict=False, provider="openai"
    )
    for n in range(aborts):
        run.attempt = n + 1
        run.emit("stream.abort", data=outform.trace.events.StreamAbort(10, "schema"))
    run.end("valid")
    return run


def test_a_run_aborted_twice_is_one_aborted_run(make_store: StoreFactory) -> None:
    """Two streamed runs, one cut on two attempts: half of the streamed runs were aborted
    (the rate said 100%, and three aborts in one run said 300%)."""
    store = make_store()
    sink = ListSink()
    recorder = Recorder([store, sink])
    streamed_run(recorder, 2)
    streamed_run(recorder, 0)
    streamed_run(recorder, 0, streaming=False)
    assert recorder.flush()
    ends = [e.data for e in sink.events if isinstance(e.data, RunEnd)]
    assert [end.aborts for end in ends] == [2, 0, None]  # None: not streamed
    totals = report(store, HealthQuery(since_hours=1)).to_dict()["totals"]
    recorder.close()
    assert (totals["streamed_runs"], totals["stream_aborts"], totals["aborted_runs"]) == (2, 2, 1)
    assert totals["abort_rate"] == 0.5


def test_runs_recorded_before_their_end_kept_the_aborts_are_estimated_and_never_pass_1(
    make_store: StoreFactory,
) -> None:
    """An older store's `run.end` has no `aborts`: each abort is taken for one run, up to
    every such run, so the rate is at most 1."""
    store = make_store()
    store.open()
    now = at("2026-11-30T08:15:00Z")
    old = run_events(RunSpec(aborted=True), now - 60)
    abort = next(e for e in old if e.name == "stream.abort")
    old.insert(old.index(abort), abort)  # the same run cut twice
    stored = [Event.from_dict({**e.to_dict()}) for e in old]  # as read back: no `aborts`
    assert isinstance(stored[-1].data, RunEnd) and stored[-1].data.aborts is None
    store.write(Batch(stored, time=now))
    totals = report(store, HealthQuery(since_hours=1, now=now)).to_dict()["totals"]
    assert (totals["streamed_runs"], totals["stream_aborts"], totals["aborted_runs"]) == (1, 2, 1)
    assert totals["abort_rate"] == 1.0
