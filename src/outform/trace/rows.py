"""A batch of events as the trace store's rows: runs, events, counts and histograms.

The store keeps four tables (docs/observability.md, "The trace store"):

* `runs`: one row per run, merged from its events (labels, mode, outcome, attempts, sums);
* `events`: one row per event, the whole event as JSON plus the columns filters use;
* `counts`: per minute, step, provider, model and mode, how many events of each kind, stage
  and key (the transform of a change, the reason of a skip or an abort, the outcome of a run,
  the path of a violation or a re-asked field). The health report and the dashboard's charts
  read only this table and the next, so their cost follows the number of distinct
  (minute, labels, kind) combinations, not the number of events;
* `histograms`: per minute, step, provider and model, provider-call latency, time to first
  token and token counts in logarithmic bins 10% wide, from which percentiles are read (to
  within ±5%).

A fast-path tally counts as a run that ended `valid` with no change; it has no row in `runs`.
A counted run (`Recorder.count`) adds the series its events would, and has no row either.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from outform.trace.events import (
    Change,
    Event,
    FormatChoice,
    Precheck,
    ProviderCall,
    Reask,
    RunEnd,
    RunInfo,
    StreamAbort,
    Validation,
)
from outform.trace.recorder import Batch, CountedRun

BUCKET_SECONDS = 60
BIN_RATIO = 1.1
ZERO_BIN = -1_000
"""The bin of values ≤ 0 (a zero token count, a latency below the clock's resolution)."""

CountKey = tuple[int, str, str, str, str, str, str, str]
"""bucket, step, provider, model, mode, kind, stage, key."""
HistogramKey = tuple[int, str, str, str, str, int]
"""bucket, step, provider, model, metric, bin."""
METRICS = ("latency_ms", "ttft_ms", "input_tokens", "output_tokens")
REASKED_OUTCOME = "run.reasked.outcome"
"""The count of re-asked runs per outcome (the key), beside `run.reasked` (no key): what
tells a run re-asked then failed from two runs."""
STREAMED_ABORTED, STREAMED_WHOLE = "aborted", "whole"
"""The key of `run.streamed`: the run had at least one `stream.abort`, or none; `""` for a
run recorded before its `run.end` kept the number (`RunEnd.aborts` None)."""


def bucket_of(when: float) -> int:
    return int(when // BUCKET_SECONDS) * BUCKET_SECONDS


def bin_of(value: float) -> int:
    if value <= 0:
        return ZERO_BIN
    return math.floor(math.log(value) / math.log(BIN_RATIO))


def bin_value(index: int) -> float:
    """The value a bin stands for: its geometric middle."""
    if index == ZERO_BIN:
        return 0.0
    return float(BIN_RATIO ** (index + 0.5))


@dataclass
class RunRow:
    run_id: str
    started: float
    source: str = "library"
    ended: float | None = None
    step: str | None = None
    agent: str | None = None
    tags: str | None = None
    provider: str | None = None
    model: str | None = None
    mode: str | None = None
    mode_reason: str | None = None
    schema_hash: str | None = None
    streaming: int = 0
    outcome: str | None = None
    attempts: int = 0
    changes: int = 0
    reasks: int = 0
    aborts: int = 0
    calls: int = 0
    latency_ms: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    duration_ms: float | None = None
    error_class: str | None = None

    COLUMNS = (
        "run_id", "started", "source", "ended", "step", "agent", "tags", "provider", "model",
        "mode", "mode_reason", "schema_hash", "streaming", "outcome", "attempts", "changes",
        "reasks", "aborts", "calls", "latency_ms", "input_tokens", "output_tokens",
        "duration_ms", "error_class",
    )  # fmt: skip

    def values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.COLUMNS)


EVENT_COLUMNS = (
    "run_id", "attempt", "time", "name", "stage", "path", "transform", "step", "provider",
    "model", "body",
)  # fmt: skip


@dataclass
class Rows:
    runs: dict[str, RunRow] = field(default_factory=dict)
    events: list[tuple[Any, ...]] = field(default_factory=list)
    counts: Counter[CountKey] = field(default_factory=Counter)
    histograms: Counter[HistogramKey] = field(default_factory=Counter)
    counted: int = 0
    """Runs counted without events (tallies, `Recorder.count`) and drops carried: what the
    batch stood for beside its events, should it be lost."""

    def __bool__(self) -> bool:
        return bool(self.runs or self.events or self.counts or self.histograms)

    def size(self) -> int:
        """What losing these rows loses, in `dropped_events`' unit: its events, its counted
        runs and the drops it carried."""
        return len(self.events) + self.counted


def rows_of(batch: Batch) -> Rows:
    rows = Rows()
    for event in batch.events:
        _add(rows, event)
    minute = bucket_of(batch.time)
    for labels, n in batch.tallies.items():
        key = (minute, labels.step or "", "", "", "", "run.end", "", "valid")
        rows.counts[key] += n
    for run, n in batch.counted.items():
        for kind, stage, name, weight in run.series:
            rows.counts[
                (minute, run.step, run.provider, run.model, run.mode, kind, stage, name)
            ] += n * weight
    if batch.dropped:
        rows.counts[(minute, "", "", "", "", "trace.dropped", "", "")] += batch.dropped
    rows.counted = sum(batch.tallies.values()) + sum(batch.counted.values()) + batch.dropped
    return rows


def counted_run(events: Sequence[Event]) -> CountedRun:
    """What the events of one run add to the counts, as a kind of run the recorder counts
    without its events (`Recorder.count`): the same series, under the same labels."""
    run = events[0].run
    series = tuple(
        (kind, sub if sub is not None else event.stage or "", key, weight)
        for event in events
        for kind, key, sub, weight in _series(event)
    )
    return CountedRun(
        (run.step if run else None) or "",
        (run.provider if run else None) or "",
        (run.model if run else None) or "",
        (run.mode if run else None) or "",
        series,
    )


def _add(rows: Rows, event: Event) -> None:
    run = event.run
    dims = (
        bucket_of(event.time),
        (run.step if run else None) or "",
        (run.provider if run else None) or "",
        (run.model if run else None) or "",
        (run.mode if run else None) or "",
    )
    stage = event.stage or ""
    for kind, key, sub, weight in _series(event):
        rows.counts[(*dims, kind, sub if sub is not None else stage, key)] += weight
    data = event.data
    if isinstance(data, ProviderCall):
        for metric, value in (
            ("latency_ms", data.latency_ms),
            ("ttft_ms", data.ttft_ms),
            ("input_tokens", data.tokens.input_tokens),
            ("output_tokens", data.tokens.output_tokens),
        ):
            if value is not None:
                rows.histograms[(*dims[:4], metric, bin_of(float(value)))] += 1
    if run is not None:
        _merge_run(rows, run, event)
    rows.events.append(
        (
            run.run_id if run else None,
            event.attempt,
            event.time,
            event.name,
            event.stage,
            event.path,
            event.transform,
            run.step if run else None,
            run.provider if run else None,
            run.model if run else None,
            orjson.dumps(event.to_dict()).decode(),
        )
    )


def _series(event: Event) -> list[tuple[str, str, str | None, int]]:
    """The count series an event adds to: (kind, key, stage or None for the event's own, how
    many: a folded change stands for `count` of them)."""
    data = event.data
    name = event.name
    key = ""
    weight = 1
    extra: list[tuple[str, str, str | None, int]] = []
    if isinstance(data, Change) or name.startswith("output.coercion."):
        key = event.transform or ""
        weight = data.count if isinstance(data, Change) else 1
    elif isinstance(data, FormatChoice):
        key = data.mechanism if name == "format.native" else data.reason
    elif isinstance(data, Reask):
        key = data.reason
        if name == "output.reask.attempt":
            extra += [("output.reask.field", path, data.reason, 1) for path in data.fields or ("",)]
    elif isinstance(data, Validation):
        paths = dict.fromkeys((v.path, v.kind) for v in data.violations)
        extra += [("output.validation.path", path, kind, 1) for path, kind in paths]
    elif isinstance(data, StreamAbort):
        key = data.reason
    elif isinstance(data, Precheck):
        key = data.check
    elif isinstance(data, ProviderCall):
        key = data.error_class or (str(data.status) if (data.status or 0) >= 400 else "")
    elif isinstance(data, RunEnd):
        key = data.outcome
        if data.attempts > 1:  # and how the re-asked run ended: a run re-asked then failed
            extra.append(("run.reasked", "", None, 1))  # is one troubled run, not two
            extra.append((REASKED_OUTCOME, data.outcome, None, 1))
        if event.run is not None and event.run.streaming:
            aborted = (
                "" if data.aborts is None else STREAMED_ABORTED if data.aborts else STREAMED_WHOLE
            )
            extra.append(("run.streamed", aborted, None, 1))
    return [(name, key, None, weight), *extra]


def _merge_run(rows: Rows, run: RunInfo, event: Event) -> None:
    row = rows.runs.get(run.run_id)
    if row is None:
        row = rows.runs[run.run_id] = RunRow(run.run_id, event.time, run.source)
    row.started = min(row.started, event.time)
    row.step, row.agent, row.provider, row.model = run.step, run.agent, run.provider, run.model
    row.tags = orjson.dumps(list(run.tags)).decode() if run.tags else row.tags
    row.mode, row.mode_reason = run.mode or row.mode, run.mode_reason or row.mode_reason
    row.streaming = int(run.streaming)
    row.schema_hash = event.schema_hash or row.schema_hash
    row.attempts = max(row.attempts, event.attempt)
    data = event.data
    if isinstance(data, Change):
        row.changes += data.count
    elif event.name == "output.reask.attempt":
        row.reasks += 1
    elif isinstance(data, StreamAbort):
        row.aborts += 1
    elif isinstance(data, ProviderCall):
        row.calls += 1
        row.latency_ms += data.latency_ms
        row.input_tokens += data.tokens.input_tokens
        row.output_tokens += data.tokens.output_tokens
    elif isinstance(data, RunEnd):
        row.ended = event.time
        row.outcome = data.outcome
        row.attempts = max(row.attempts, data.attempts)
        row.duration_ms = data.duration_ms
        row.error_class = data.error_class
