"""The trace store on SQLite and PostgreSQL: the same rows, the same answers, retention."""

from __future__ import annotations

import time
from pathlib import Path

import orjson
import pytest

from outform.trace import Batch, Event, Labels, Recorder, RunInfo, Tokens, labels
from outform.trace.rows import bin_of, bin_value, bucket_of, counted_run, rows_of
from outform.trace.store import Filter, TraceStore
from tests.trace.runs import RunSpec, run_events
from tests.trace.stores import StoreFactory, make_store

__all__ = ["make_store"]

NOW = time.time()


def write(store: TraceStore, *events: Event, tallies: int = 0) -> None:
    batch = Batch(list(events), time=NOW)
    if tallies:
        batch.tallies[labels_of("bare")] += tallies
    store.write(batch)


def labels_of(step: str) -> Labels:
    return Labels(step=step)


def window(hours: float = 1) -> Filter:
    return Filter(NOW - hours * 3600, NOW + 60)


def totals(store: TraceStore, where: Filter | None = None) -> dict[tuple[str, str, str], int]:
    out: dict[tuple[str, str, str], int] = {}
    for _half, _step, _model, _mode, kind, stage, key, n in store.counts(where or window(), 0):
        out[(kind, stage, key)] = out.get((kind, stage, key), 0) + int(n)
    return out


def test_a_run_becomes_one_run_row_its_events_and_its_counts(make_store: StoreFactory) -> None:
    store = make_store()
    store.open()
    spec = RunSpec(changes=(("semantic", "string_to_int", "/age"),), reasked=("/total",))
    events = run_events(spec, NOW - 10, run_id="run-a")
    write(store, *events[:3])  # a run arrives over two batches: rows merge
    write(store, *events[3:])
    (run,) = store.runs(window())
    assert run["run_id"] == "run-a" and run["outcome"] == "valid"
    assert (run["attempts"], run["changes"], run["reasks"], run["calls"]) == (2, 1, 1, 2)
    assert run["latency_ms"] == 1600.0 and run["input_tokens"] == 240
    assert (run["step"], run["provider"], run["model"], run["mode"]) == (
        "extract",
        "openai",
        "gpt-4o",
        "native_schema",
    )
    info, stored = store.run("run-a")
    assert info == run and stored == events
    counts = totals(store)
    assert counts[("output.change", "semantic", "string_to_int")] == 1
    assert counts[("output.reask.field", "schema", "/total")] == 1
    assert counts[("output.validation.path", "type", "/total")] == 1
    assert counts[("run.end", "", "valid")] == 1 and counts[("run.reasked", "", "")] == 1


def test_tallies_count_as_valid_runs_without_rows(make_store: StoreFactory) -> None:
    store = make_store()
    store.open()
    write(store, tallies=7)
    assert totals(store)[("run.end", "", "valid")] == 7
    assert store.runs(window()) == []
    assert store.labels(window()) == {"steps": ["bare"], "models": []}


def test_a_counted_run_adds_the_counts_its_events_would_without_rows(
    make_store: StoreFactory,
) -> None:
    """`Recorder.count` (a batch job's rows valid as sent): the same counts, per labels,
    provider, model and mode, as the run's events would add; no run row, no event row."""
    spec = RunSpec(step="extract", skipped="no native mode for this model")
    minute = bucket_of(NOW)
    events = run_events(spec, minute + 1)
    batch = Batch(time=minute + 2)
    batch.counted[counted_run(events)] += 2
    twice = Batch([*events, *run_events(spec, minute + 3)])
    assert rows_of(batch).counts == rows_of(twice).counts
    store = make_store()
    store.open()
    store.write(batch)
    counts = totals(store)
    assert counts[("format.skipped", "", "no native mode for this model")] == 2
    assert counts[("run.end", "", "valid")] == 2
    assert store.runs(window()) == []
    assert store.events(window(), ["run.end"]) == []


def test_counts_add_up_across_store_objects_and_batches(make_store: StoreFactory) -> None:
    first, second = make_store(), make_store()
    first.open()
    second.open()
    for store in (first, second, first):
        write(store, *run_events(RunSpec(changes=(("extract", "strip_fence", ""),)), NOW))
    assert totals(first)[("output.change", "extract", "strip_fence")] == 3
    assert len(second.runs(window())) == 3


def test_filters_by_step_model_and_window(make_store: StoreFactory) -> None:
    store = make_store()
    store.open()
    write(store, *run_events(RunSpec(step="a", model="m1"), NOW - 5))
    write(store, *run_events(RunSpec(step="b", model="m2", provider="gemini"), NOW - 5))
    write(store, *run_events(RunSpec(step="a", model="m2", provider="gemini"), NOW - 7200))
    runs = totals
    assert runs(store, Filter(NOW - 3600, NOW + 60, step="a"))[("run.end", "", "valid")] == 1
    assert runs(store, Filter(NOW - 9000, NOW + 60, step="a"))[("run.end", "", "valid")] == 2
    by_model = Filter(NOW - 9000, NOW + 60, model="gemini:m2")
    assert runs(store, by_model)[("run.end", "", "valid")] == 2
    assert [r["step"] for r in store.runs(Filter(NOW - 9000, NOW + 60, model="m2"))] == ["b", "a"]
    assert store.labels(window(3)) == {"steps": ["a", "b"], "models": ["gemini:m2", "openai:m1"]}


def test_percentiles_come_from_histograms_within_their_bin_width(
    make_store: StoreFactory,
) -> None:
    store = make_store()
    store.open()
    latencies = [100.0, 200.0, 400.0, 800.0]
    for latency in latencies:
        write(store, *run_events(RunSpec(latency_ms=latency, tokens=Tokens(0, 7)), NOW))
    rows = {(m, b): n for _p, _m, m, b, n in store.histograms(window())}
    assert {m for m, _ in rows} == {"latency_ms", "input_tokens", "output_tokens"}
    for latency in latencies:
        shown = bin_value(bin_of(latency))
        assert abs(shown - latency) / latency < 0.05
        assert rows[("latency_ms", bin_of(latency))] == 1
    assert bin_value(bin_of(0)) == 0.0 and rows[("input_tokens", bin_of(0))] == 4


def test_the_latest_events_of_some_kinds_newest_first(make_store: StoreFactory) -> None:
    store = make_store()
    store.open()
    write(store, *run_events(RunSpec(reasked=("/a",)), NOW - 20, run_id="old"))
    write(store, *run_events(RunSpec(reasked=("/b",)), NOW - 10, run_id="new"))
    found = store.events(window(), ["output.validation.fail"], limit=5)
    assert [e.run.run_id for e in found if e.run] == ["new", "old"]
    assert found[0].data is not None and "/b" in orjson.dumps(found[0].to_dict()).decode()


def test_retention_by_age_deletes_runs_events_and_counts(make_store: StoreFactory) -> None:
    store = make_store(retention_days=1)
    store.open()
    write(store, *run_events(RunSpec(), NOW - 3 * 86_400, run_id="ancient"))
    write(store, *run_events(RunSpec(), NOW - 60, run_id="recent"))
    assert store.apply_retention(NOW) == 1
    assert [r["run_id"] for r in store.runs(window(24 * 7))] == ["recent"]
    assert store.run("ancient") == (None, [])
    assert totals(store, window(24 * 7))[("run.end", "", "valid")] == 1


def test_retention_by_size_deletes_the_oldest_runs_first(make_store: StoreFactory) -> None:
    store = make_store(max_size_mb=0.4)
    store.open()
    big = tuple(("semantic", "t" * 40, f"/items/{i}") for i in range(40))
    for n in range(150):
        write(store, *run_events(RunSpec(changes=big), NOW - 3000 + n, run_id=f"r{n:03d}"))
    assert store._used_bytes(store._writer) > store.max_size_bytes
    deleted = store.apply_retention(NOW)
    assert deleted > 0
    assert store._used_bytes(store._writer) <= store.max_size_bytes
    kept = sorted(r["run_id"] for r in store.runs(Filter(0, NOW + 60)))
    assert kept == [f"r{n:03d}" for n in range(150 - len(kept), 150)]  # the newest stay
    assert totals(store, Filter(0, NOW + 60))[("run.end", "", "valid")] == 150  # counts stay


def test_a_recorder_writes_batches_to_the_store(make_store: StoreFactory) -> None:
    store = make_store()
    recorder = Recorder([store], flush_interval=60)
    try:
        recorder.record_all(run_events(RunSpec(), time.time(), run_id="via-recorder"))
        with labels(step="bare"):
            for _ in range(3):
                recorder.tally()
        assert recorder.flush()
        assert store.run("via-recorder")[0] is not None
        assert (
            totals(store, Filter(time.time() - 600, time.time() + 60))[("run.end", "", "valid")]
            == 4
        )
    finally:
        recorder.close()


def test_run_info_survives_the_round_trip(make_store: StoreFactory) -> None:
    store = make_store()
    store.open()
    info = RunInfo("tagged", step="s", agent="a", tags=("x", "y"), provider="p", model="m")
    write(store, Event("run.start", run=info, time=NOW))
    (run,) = store.runs(window())
    assert (run["agent"], run["tags"], run["outcome"]) == ("a", ["x", "y"], None)


def test_minutes_older_than_the_horizon_merge_into_hours(make_store: StoreFactory) -> None:
    from outform.trace.store import COUNTS, HISTOGRAMS, MINUTE_HORIZON

    store = make_store()
    store.open()
    hour = int(NOW - MINUTE_HORIZON - 7200) // 3600 * 3600
    for minute in (0, 5, 59):  # three minutes of one old hour
        write(store, *run_events(RunSpec(changes=CHANGE), hour + minute * 60 + 1))
    write(store, *run_events(RunSpec(changes=CHANGE), NOW - 120))  # a recent minute
    before = totals(store, Filter(0, NOW + 60))
    store.apply_retention(NOW)
    assert totals(store, Filter(0, NOW + 60)) == before
    rows = store.query(
        f"SELECT bucket, n FROM {COUNTS} WHERE kind = 'output.change' ORDER BY bucket"
    )
    assert rows == [(hour, 3), (int(NOW - 120) // 60 * 60, 1)]
    latency = store.query(
        f"SELECT bucket, SUM(n) FROM {HISTOGRAMS} WHERE metric = 'latency_ms' GROUP BY bucket"
        " ORDER BY bucket"
    )
    assert latency == [(hour, 3), (int(NOW - 120) // 60 * 60, 1)]


CHANGE = (("semantic", "string_to_int", "/n"),)


def test_the_size_limit_holds_after_every_write_free_pages_and_all(tmp_path: Path) -> None:
    """The store's file, free pages included, stays within `max_size_mb` as writes happen:
    retention runs when a write leaves the file over the limit, not only every minute."""
    from outform.trace.sqlite_store import SqliteTraceStore

    limit = 0.5
    store = SqliteTraceStore(tmp_path / "t.sqlite", max_size_mb=limit, retention_every=3600)
    store.open()
    big = tuple(("semantic", "t" * 200, f"/items/{i}") for i in range(40))
    try:
        for n in range(400):
            store._last_retention = 0.0 if n % 50 == 49 else time.time()  # the 1 s floor
            write(store, *run_events(RunSpec(changes=big), NOW - 3000 + n, run_id=f"r{n:03d}"))
        store.apply_retention()
        size = (tmp_path / "t.sqlite").stat().st_size
        assert size <= limit * 1024 * 1024
        free = store._writer.execute("PRAGMA freelist_count").fetchone()[0]
        assert free == 0  # the space deleted runs held is given back, not kept as free pages
        kept = sorted(r["run_id"] for r in store.runs(Filter(0, NOW + 60)))
        assert kept and kept[-1] == "r399"  # the newest stay
    finally:
        store.close()


def test_a_reader_never_creates_a_store(tmp_path: Path) -> None:
    from outform.errors import StoreError
    from outform.trace.sqlite_store import SqliteTraceStore

    missing = tmp_path / "typo" / "x.db"
    with pytest.raises(StoreError, match=r"no trace store at .*x\.db") as caught:
        SqliteTraceStore(missing, create=False, where="--store")
    assert caught.value.where == "--store"
    assert not missing.parent.exists()
    other = tmp_path / "other.db"
    other.write_bytes(b"")  # a file, but not a trace store: no tables are added to it
    reader = SqliteTraceStore(other, create=False)
    with pytest.raises(StoreError, match="no outform trace store"):
        reader.query("SELECT 1")
    reader.close()
    assert other.stat().st_size == 0
