"""Observability benchmarks: the health report over a million stored events, and what
recording costs on the pipeline's valid 1 KB fast path.

Run: `python -m benchmarks.bench_health [--write] [--events N]` (`--write` updates
docs/benchmarks.md).

1. A SQLite trace store is filled with N events (default 10⁶) of realistic runs spread over a
   week: 8 steps, 5 models, 3 modes, a dozen transforms, re-asks, streamed runs and aborts,
   written through the store's own batch path. `outform health` (the library call) then
   reports over the week and over the last day. Goal: < 2 s.
2. `Pipeline.run` on a valid 1 KB reply with recording off and on (the recorder running, a
   SQLite store behind it, its writer thread live): the pipeline counts each reply valid as
   sent itself (a fast-path tally). Goal: < 5% more.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any

from tests.trace.runs import RunSpec, run_events

from benchmarks.bench_parse import SCHEMA, sized
from benchmarks.report import machine, table, update_section
from benchmarks.timing import fmt_seconds, per_call
from outform import Pipeline
from outform.trace import Batch, Recorder, Tokens, runtime
from outform.trace.health import HealthQuery, report
from outform.trace.sqlite_store import SqliteTraceStore
from outform.trace.store import COUNTS

STEPS = ("extract", "classify", "summarize", "route", "enrich", "dedupe", "score", "label")
MODELS = (
    ("openai", "gpt-4o", "native_schema"),
    ("openai", "gpt-4o-mini", "native_schema"),
    ("anthropic", "claude-sonnet-4-5", "forced_tool"),
    ("gemini", "gemini-2.5-flash", "native_schema"),
    ("ollama", "llama3.1", "json_object"),
)
TRANSFORMS = (
    ("extract", "strip_fence"),
    ("extract", "extract_from_prose"),
    ("extract", "strip_reasoning"),
    ("tolerant", "json5"),
    ("tolerant", "json_repair"),
    ("syntactic", "decode_nested_json"),
    ("semantic", "string_to_integer"),
    ("semantic", "string_to_number"),
    ("semantic", "string_to_boolean"),
    ("semantic", "wrap_in_list"),
    ("semantic", "enum_case"),
    ("semantic", "fill_default"),
)
FIELDS = ("/total", "/lines/0/qty", "/customer/email", "/currency", "/label", "/score")
WEEK = 7 * 86_400
ROUNDS = 31
RUNS = 5
REPORTS = 7


def random_run(rng: random.Random) -> RunSpec:
    provider, model, mode = rng.choice(MODELS)
    changes = tuple(
        (*rng.choice(TRANSFORMS), f"/items/{rng.randrange(20)}")
        for _ in range(rng.choice((0, 0, 1, 1, 2, 3, 5)))
    )
    streamed = rng.random() < 0.2
    return RunSpec(
        step=rng.choice(STEPS),
        provider=provider,
        model=model,
        mode=mode,
        changes=changes,
        reasked=(rng.choice(FIELDS),) if rng.random() < 0.08 else (),
        outcome="invalid" if rng.random() < 0.01 else "valid",
        skipped="the call has tools" if mode == "json_object" else None,
        aborted=streamed and rng.random() < 0.1,
        streaming=streamed,
        latency_ms=rng.lognormvariate(6.5, 0.5),
        tokens=Tokens(rng.randrange(200, 3000), rng.randrange(20, 800)),
    )


def fill(path: Path, events: int, now: float) -> tuple[int, float]:
    """Write about `events` events; returns (events written, seconds taken)."""
    store = SqliteTraceStore(path, retention_days=3650, max_size_mb=100_000)
    store.open()
    rng = random.Random(12)
    written, batch = 0, []
    started = time.perf_counter()
    while written < events:
        run = run_events(random_run(rng), now - rng.random() * WEEK)
        batch += run
        written += len(run)
        if len(batch) >= 5_000:
            store.write(Batch(batch, time=batch[-1].time))
            batch = []
    if batch:
        store.write(Batch(batch, time=batch[-1].time))
    store.apply_retention(now)  # what the writer does every minute: merge old minutes
    store.close()
    return written, time.perf_counter() - started


def report_rows(path: Path, now: float) -> list[list[str]]:
    store = SqliteTraceStore(path, retention_days=3650, max_size_mb=100_000)
    rows = []
    for label, query in (
        ("the week, 12 buckets", HealthQuery(since_hours=168, now=now)),
        ("the week, 168 buckets", HealthQuery(since_hours=168, trend_buckets=168, now=now)),
        ("the last day, step and model filter", HealthQuery(
            since_hours=24, step="extract", model="openai:gpt-4o", now=now)),
    ):  # fmt: skip
        report(store, query)  # warm the page cache, as a second `outform health` would
        times = []
        for _ in range(REPORTS):
            started = time.perf_counter()
            data = report(store, query).to_dict()
            times.append(time.perf_counter() - started)
        middle = statistics.median(times)
        rows.append(
            [
                label,
                f"{data['totals']['runs']:,}",
                fmt_seconds(middle),
                f"{fmt_seconds(min(times))} to {fmt_seconds(max(times))}",
                f"{middle / 2:.2f}× the 2 s goal",
            ]
        )
    store.close()
    return rows


def recording_rows(folder: Path) -> list[list[str]]:
    """`Pipeline.run` on a valid 1 KB reply with recording off and on, in paired rounds (the
    order alternating), in `RUNS` runs of `ROUNDS` rounds: off, the fast path reads
    `runtime.tally` and finds None; on, it calls the recorder's tally (a SQLite store behind
    it, its writer thread live). The cost is the median of the runs' medians."""
    text = sized(1_000).decode()
    pipeline: Pipeline[Any] = Pipeline(SCHEMA)
    runs = [paired_rounds(pipeline, text, folder / f"recording-{n}.sqlite") for n in range(RUNS)]
    medians = sorted(statistics.median(on / off for off, on in pairs) for pairs, _, _ in runs)
    pooled = sorted(on / off for pairs, _, _ in runs for off, on in pairs)
    off = statistics.median(off for pairs, _, _ in runs for off, _ in pairs)
    on = statistics.median(on for pairs, _, _ in runs for _, on in pairs)
    quarter = len(pooled) // 4
    return [
        [
            f"valid 1 KB reply ({len(text):,} B)",
            fmt_seconds(off),
            fmt_seconds(on),
            f"{(statistics.median(medians) - 1) * 100:+.1f}%",
            f"{(medians[0] - 1) * 100:+.1f}% to {(medians[-1] - 1) * 100:+.1f}%",
            f"{(pooled[quarter] - 1) * 100:+.1f}% to {(pooled[-quarter - 1] - 1) * 100:+.1f}%",
            f"{sum(counted for _, counted, _ in runs):,}",
            str(sum(dropped for _, _, dropped in runs)),
        ]
    ]


def paired_rounds(
    pipeline: Pipeline[Any], text: str, path: Path
) -> tuple[list[tuple[float, float]], int, int]:
    """One run: (seconds off, seconds on) per round, the runs the store counted, the tallies
    dropped."""
    store = SqliteTraceStore(path)
    recorder = Recorder([store], queue_size=10_000_000, flush_interval=0.5)
    parse = partial(pipeline.run, text)
    before = runtime.tally
    pairs = []
    try:
        # Many short rounds, each measuring both sides back to back: the median of the
        # paired ratios is what a load spike on a shared machine disturbs least.
        for round_ in range(ROUNDS):
            timed = {}
            for side in ("off", "on") if round_ % 2 else ("on", "off"):
                runtime.tally = recorder.tally if side == "on" else None
                timed[side] = per_call(parse, budget=0.1, repeats=3)
            pairs.append((timed["off"], timed["on"]))
        runtime.tally = None
        recorder.flush()
        dropped = recorder.dropped
    finally:
        runtime.tally = before
        recorder.close()
    return pairs, store_tallies(path), dropped


def store_tallies(path: Path) -> int:
    """Runs the store counted from fast-path tallies (what the benchmark recorded)."""
    store = SqliteTraceStore(path)
    found = store.query(f"SELECT SUM(n) FROM {COUNTS} WHERE kind = 'run.end'")[0][0]
    store.close()
    return int(found or 0)


def run(events: int) -> str:
    now = time.time()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "trace.sqlite"
        written, fill_seconds = fill(path, events, now)
        size = path.stat().st_size + sum(p.stat().st_size for p in path.parent.glob("*-wal"))
        store = SqliteTraceStore(path)
        count_rows = store.query(f"SELECT COUNT(*) FROM {COUNTS}")[0][0]
        store.close()
        reports = report_rows(path, now)
        recording = recording_rows(Path(folder))
    report_table = table(
        [
            "report",
            "runs in the window",
            f"time (median of {REPORTS})",
            "fastest to slowest",
            "ratio",
        ],
        reports,
    )
    recording_table = table(
        [
            "payload",
            "recording off",
            "recording on",
            f"cost (median of {RUNS} runs of {ROUNDS} paired rounds)",
            "the runs' medians",
            "middle half of all rounds",
            "runs counted in the store",
            "tallies dropped",
        ],
        recording,
    )
    return f"""## Observability

Command: `python -m benchmarks.bench_health --write` ({machine()}; a shared machine: the
numbers are provisional, the ratios are what to compare).

**The health report over {written:,} stored events.** A SQLite trace store filled with
realistic runs spread over a week (8 steps, 5 models, 3 modes, 12 transforms, re-asks, streamed
runs and aborts), written through the store's batch path ({fill_seconds:.0f} s,
{written / fill_seconds:,.0f} events/s, {size / 1e6:.0f} MB). The report reads only the
counts ({count_rows:,} rows: per minute for the last 6 hours, per hour before) and the
histograms, never the events: the window's counts summed apart for its two halves, the few
kinds a trend shows per bucket, and the histograms (three queries). Goal: < 2 s.

{report_table}

**Recording on the fast path.** `Pipeline.run` on a valid 1 KB reply, recording off (the
fast path finds no recorder: one module attribute read) and on (it counts the reply: one
append of the current labels block to the recorder's queue; the writer thread live, a SQLite
store behind it), measured in {RUNS} runs of {ROUNDS} rounds of both sides back to back, the order
alternating. Goal: < 5%.

{recording_table}
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    parser.add_argument("--events", type=int, default=1_000_000, help="events to store")
    args = parser.parse_args(argv)
    markdown = run(args.events)
    print(markdown)
    if args.write:
        update_section("observability", markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
