"""A batch job's rows are runs in the trace store, as generate() calls are: the job's labels,
provider, model, schema hash, changes and outcome, one run per row across rounds and
processes; a row valid as sent at its first request is counted as the fast path counts a
reply; `outform health` reports them all."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

import outform
from outform import batch
from outform.batch.runs import row_run_id
from outform.trace.health import HealthQuery, report
from outform.trace.sqlite_store import SqliteTraceStore
from tests.batch.conftest import SCHEMA, Scripted, submit
from tests.batch.fakes import BatchFake, Error
from tests.trace.sinks import restore_recording

COLUMNS = (
    "run_id", "source", "step", "agent", "tags", "provider", "model", "mode", "schema_hash",
    "outcome", "attempts", "changes", "reasks", "calls", "error_class",
)  # fmt: skip


@pytest.fixture
def trace_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The process's recorder writing to a SQLite trace store (recording as it was after)."""
    restore_recording(monkeypatch)
    path = tmp_path / "trace.sqlite"
    outform.trace.start(sinks=[SqliteTraceStore(path)])
    try:
        yield path
    finally:
        outform.trace.stop()


def stored_runs(path: Path) -> dict[str, dict[str, Any]]:
    """The trace store's runs by run id, once everything recorded is written."""
    assert outform.trace.flush()
    store = SqliteTraceStore(path)
    try:
        rows = store.query(f"SELECT {', '.join(COLUMNS)} FROM outform_trace_runs")
    finally:
        store.close()
    return {row[0]: dict(zip(COLUMNS, row, strict=True)) for row in rows}


def events_of(path: Path, run_id: str) -> list[tuple[int, str]]:
    store = SqliteTraceStore(path)
    try:
        _, events = store.run(run_id)
    finally:
        store.close()
    return [(e.attempt, e.name) for e in events]


class Mixed(Scripted):
    """Scripted, and: row 3 never valid, row 4 a provider error that is not retried."""

    def __call__(self, custom_id: str, body: Mapping[str, Any]) -> str | Error:
        if custom_id == "r3":
            self.asked[custom_id] += 1
            return '{"name": "P3"}'
        if custom_id == "r4":
            return Error(400, "bad request")
        return super().__call__(custom_id, body)


def test_each_row_is_one_run_across_rounds_and_processes(
    rows: Path, tmp_path: Path, trace_file: Path
) -> None:
    manifest = tmp_path / "m.sqlite3"
    with BatchFake("openai", Mixed(errors=11)) as fake:
        with outform.trace.labels(step="extract", agent="nightly", tags=["eu"]):
            first = submit(rows, "openai:gpt-5-mini", manifest, fake.url + "/v1", rounds=1)
        # as a resume in another process would: no labels block, a new Runner
        done = batch.resume(first.job, manifest=manifest, api_key="k")
    assert done.counts == {"ok": 22, "repaired": 6, "failed": 1, "provider_error": 1}
    runs = stored_runs(trace_file)
    # rows valid as sent at their first request are counted only (below, in the report)
    troubled = {3, 4, 5, 7, 10, 11, 14, 15, 20, 21, 22, 25, 28, 30}
    assert set(runs) == {row_run_id(first.job, n - 1) for n in troubled}
    hashes = {run["schema_hash"] for run in runs.values()}
    assert len(hashes) == 1 and None not in hashes
    for run in runs.values():
        labels = (run["source"], run["step"], run["agent"], run["tags"])
        assert labels == ("batch", "extract", "nightly", '["eu"]')
        assert (run["provider"], run["model"], run["mode"]) == (
            "openai",
            "gpt-5-mini",
            "native_schema",
        )
        assert run["calls"] == 0  # a provider batch has no latency per request

    def run_of(n: int) -> dict[str, Any]:
        return runs[row_run_id(first.job, n - 1)]

    assert run_of(5)["outcome"] == "valid" and run_of(5)["changes"] > 0  # fenced, age a string
    assert (run_of(7)["attempts"], run_of(7)["reasks"], run_of(7)["outcome"]) == (2, 1, "valid")
    assert (run_of(11)["attempts"], run_of(11)["outcome"]) == (1, "valid")  # sent again only
    assert (run_of(3)["outcome"], run_of(3)["attempts"], run_of(3)["reasks"]) == ("invalid", 2, 1)
    assert (run_of(4)["outcome"], run_of(4)["error_class"]) == ("error", "provider_error")
    assert events_of(trace_file, row_run_id(first.job, 6)) == [
        (1, "run.start"),
        (1, "format.native"),
        (1, "output.validation.fail"),
        (1, "output.reask.attempt"),
        (2, "output.reask.success"),
        (2, "run.end"),
    ]
    assert events_of(trace_file, row_run_id(first.job, 2))[-3:] == [
        (2, "output.validation.fail"),
        (2, "output.reask.fail"),
        (2, "run.end"),
    ]

    store = SqliteTraceStore(trace_file)
    try:
        health = report(store, HealthQuery(since_hours=1)).to_dict()
    finally:
        store.close()
    assert health["totals"]["runs"] == 30
    assert health["totals"]["reasked_runs"] == 5  # rows 3, 7, 14, 21, 28
    assert health["totals"]["failed_runs"] == 2  # rows 3 (invalid) and 4 (provider error)
    (step,) = health["top_steps"]
    assert step["step"] == "extract" and step["runs"] == 30
    (mode,) = health["modes"]  # the counted rows are the model's as much as the others
    assert (mode["model"], mode["mode"], mode["runs"]) == ("openai:gpt-5-mini", "native_schema", 30)
    (native,) = health["native"]
    assert (native["applied"], native["skipped"]) == (30, 0)


def test_a_live_jobs_rows_record_their_calls(rows: Path, tmp_path: Path, trace_file: Path) -> None:
    with BatchFake("live", Scripted()) as fake:
        done = batch.submit(
            rows,
            "vllm:qwen3",
            SCHEMA,
            prompt="Extract: {text}",
            base_url=fake.url + "/v1",
            manifest=tmp_path / "m.sqlite3",
            labels={"step": "extract-live"},
        )
    runs = stored_runs(trace_file)
    assert len(runs) == 30
    assert {(r["source"], r["step"], r["provider"]) for r in runs.values()} == {
        ("batch", "extract-live", "vllm")
    }
    seventh = runs[row_run_id(done.job, 6)]
    assert (seventh["calls"], seventh["attempts"], seventh["reasks"]) == (2, 2, 1)
    assert events_of(trace_file, row_run_id(done.job, 0)) == [
        (1, "run.start"),
        (1, "format.native"),
        (1, "provider.call"),
        (1, "run.end"),
    ]
