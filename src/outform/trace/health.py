"""The health report: where repairs, re-asks, aborts and failures happen, per step, model and
time, and what to do about them. `outform health` prints it; the dashboard draws it.

It reads only the store's counts and histograms (three queries, whatever the number of
events): the window's counts apart for its two halves, the trend's few kinds per bucket, and
the histograms; so it costs the same over a thousand events or a million
(benchmarks/bench_health.py).

Definitions (docs/observability.md, "outform health"):

* a *run* is one generate()/stream() call, one gateway request, one batch job's row, or one
  reply parsed on its own; runs are counted when they end;
* an *intervention* is one `output.change`: one value the pipeline changed (not one of the
  `dialect` stage: outform mapping its own translation back, see events.EventStage);
* the *re-ask rate* is the share of runs asked again at least once; the *abort rate* the
  share of streamed runs with at least one stream abort (each run once: `run.end` keeps its
  aborts; for runs recorded before it did, each abort is taken for one run, up to every such
  run); the *precheck failure rate* failures per check run; a mode's *trouble rate* the share
  of its runs with a reply that were re-asked or failed, each run once;
* percentiles come from histograms with 10% wide bins: within ±5% of the exact value;
* the window is widened to whole trend buckets, never narrowed: buckets of whole minutes, or
  of whole hours when the window is longer than the 6 hours the store keeps per-minute counts,
  as wide as the window asked for divided by the buckets asked for (rounded up to the unit);
  the last one ends with the current minute or hour, the first one holds the start of the
  window asked for (so there may be one bucket more than asked; `window.since` says where it
  starts); the *rising* step or model
  is the one whose interventions per 100 runs grew most from the first half of the buckets
  to the second (at least `MIN_RUNS` runs in each half).
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from operator import itemgetter
from typing import Any

from outform.errors import UsageError
from outform.trace.events import NOT_INTERVENTIONS
from outform.trace.rows import (
    BUCKET_SECONDS,
    REASKED_OUTCOME,
    STREAMED_ABORTED,
    bin_value,
    bucket_of,
)
from outform.trace.store import HOUR, MINUTE_HORIZON, Filter, TraceStore

REPORT_VERSION = 1
MIN_RUNS = 5
"""Runs a step, model or mode needs (in a window, or in each half of it) to be ranked."""
PROCESSOR_MIN_COUNT = 10
PROCESSOR_MIN_PER_100 = 20.0
FIELD_MIN_REASKS = 5
FIELD_MIN_SHARE = 0.10
MODE_MIN_RUNS = 10
MODE_MAX_TROUBLE = 0.25
MODE_BETTER_BY = 0.10
FAILED = ("invalid", "refused", "error")
NO_LABEL = "(none)"
_METRICS = ("latency_ms", "ttft_ms", "input_tokens", "output_tokens")
_PROCESSOR_POINT = {"semantic": "after_decode", "custom": "after_decode"}


@dataclass(frozen=True)
class HealthQuery:
    since_hours: float = 24.0
    step: str | None = None
    model: str | None = None
    trend_buckets: int = 12
    top: int = 10
    now: float | None = None

    def __post_init__(self) -> None:
        if not (0 < self.since_hours <= 24 * 3650):
            raise UsageError(
                f"--since-hours must be more than 0 (and at most ten years), not "
                f"{self.since_hours}",
                where="--since-hours",
            )
        if not (1 <= self.trend_buckets <= 1000):
            raise UsageError("--trend-buckets must be from 1 to 1000", where="--trend-buckets")
        if not (1 <= self.top <= 1000):
            raise UsageError("--top must be from 1 to 1000", where="--top")


@dataclass(frozen=True)
class Table:
    """One table of the report, as the CLI prints it and the CSV export writes it."""

    name: str
    title: str
    columns: tuple[str, ...]
    rows: list[tuple[Any, ...]] = field(default_factory=list)


@dataclass
class HealthReport:
    data: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return self.data

    @property
    def recommendations(self) -> list[dict[str, Any]]:
        recommendations: list[dict[str, Any]] = self.data["recommendations"]
        return recommendations

    def tables(self) -> list[Table]:
        return _tables(self.data)


# -- reading the store ---------------------------------------------------------------------


_Count = tuple[Any, ...]
"""slot (or half), step, model, mode, kind, stage, key, n: a row as the store returns it."""
_COLUMN = {"slot": 0, "step": 1, "model": 2, "mode": 3, "kind": 4, "stage": 5, "key": 6}


class _Counts:
    """The rows of the window, grouped by kind once: each question reads only its kind."""

    def __init__(self, rows: Iterable[_Count]) -> None:
        self.by_kind: dict[str, list[_Count]] = defaultdict(list)
        for row in rows:
            if row[4] == "output.change" and row[5] in NOT_INTERVENTIONS:
                continue  # outform undoing its own translation: no intervention
            self.by_kind[row[4]].append(row)

    def of(self, kind: str) -> list[_Count]:
        return self.by_kind.get(kind, [])

    def sum(self, kind: str, **match: str) -> int:
        if not match:
            return sum(c[7] for c in self.of(kind))
        wanted = tuple(match.values())
        key = itemgetter(*(_COLUMN[k] for k in match))
        if len(wanted) == 1:
            return sum(c[7] for c in self.of(kind) if key(c) == wanted[0])
        return sum(c[7] for c in self.of(kind) if key(c) == wanted)

    def group(self, kind: str, *keys: str) -> dict[tuple[str, ...], int]:
        out: dict[tuple[str, ...], int] = defaultdict(int)
        indexes = [_COLUMN[k] for k in keys]
        if len(indexes) == 1:
            (index,) = indexes
            for c in self.of(kind):
                out[(c[index],)] += c[7]
            return out
        key = itemgetter(*indexes)
        for c in self.of(kind):
            out[key(c)] += c[7]
        return out

    def slots(self) -> dict[int, _Counts]:
        per_slot: dict[int, list[_Count]] = defaultdict(list)
        for rows in self.by_kind.values():
            for c in rows:
                per_slot[c[0]].append(c)
        return {slot: _Counts(rows) for slot, rows in per_slot.items()}


def _model_name(provider: str, model: str) -> str:
    return f"{provider}:{model}" if provider else model


def report(store: TraceStore, query: HealthQuery | None = None) -> HealthReport:
    """The report over the last `since_hours`, widened to whole trend buckets (see the
    module's docstring and `window`)."""
    query = query or HealthQuery()
    now = time.time() if query.now is None else query.now
    start, end, width, buckets = window(now, query.since_hours * 3600, query.trend_buckets)
    where = Filter(start, end, query.step, query.model)
    counts = _Counts(store.counts(where, start + math.ceil(buckets / 2) * width))
    per_slot = _Counts(store.trend(where, width)).slots()
    histograms = store.histograms(where)
    data = _build(
        counts, per_slot, histograms, query, now=now, start=start, width=width, buckets=buckets
    )
    return HealthReport(data)


def window(now: float, asked: float, trend_buckets: int) -> tuple[int, int, int, int]:
    """(start, end, bucket width, buckets) of a report over the last `asked` seconds: whole
    buckets that hold all of [now - asked, now]. Buckets are whole minutes, or whole hours
    once the window reaches counts already merged into hours; their width is the window
    asked for divided by `trend_buckets`, rounded up to the unit. The last bucket ends with
    the current minute (or hour); the first holds `now - asked`, so the window is never
    narrower than asked, and may take one bucket more than `trend_buckets`."""
    unit = HOUR if asked > MINUTE_HORIZON else BUCKET_SECONDS
    width = max(unit, math.ceil(asked / trend_buckets / unit) * unit)
    end = math.ceil((bucket_of(now) + BUCKET_SECONDS) / unit) * unit
    earliest = math.floor((now - asked) / unit) * unit
    buckets = max(1, math.ceil((end - earliest) / width))
    return end - buckets * width, end, width, buckets


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _share(part: float, whole: float) -> float | None:
    return round(part / whole, 4) if whole else None


def _per_100(part: float, runs: float) -> float | None:
    return round(100 * part / runs, 2) if runs else None


def _label(value: str) -> str:
    return value or NO_LABEL


Row = dict[str, Any]


def _ranked(rows: Iterable[Row], by: Callable[[Row], Any]) -> list[Row]:
    return sorted(rows, key=by)


# -- building it ---------------------------------------------------------------------------


def _build(
    counts: _Counts,
    per_slot: Mapping[int, _Counts],
    histograms: list[tuple[Any, ...]],
    query: HealthQuery,
    *,
    now: float,
    start: float,
    width: int,
    buckets: int,
) -> dict[str, Any]:
    top = query.top
    runs = counts.sum("run.end")
    interventions = counts.sum("output.change")
    reasked = counts.sum("run.reasked")
    streamed = counts.sum("run.streamed")
    aborts = counts.sum("stream.abort")
    aborted = _aborted_runs(counts, aborts)
    runs_by_step = counts.group("run.end", "step")
    runs_by_model = counts.group("run.end", "model")
    changes_by_step = counts.group("output.change", "step")
    prechecks = {k: counts.sum(f"precheck.{k}") for k in ("pass", "fail", "skipped")}
    invalid = sum(n for (key,), n in counts.group("run.end", "key").items() if key in FAILED)

    steps = _ranked(
        (
            {
                "step": _label(step),
                "runs": n,
                "interventions": changes_by_step.get((step,), 0),
                "per_100_runs": _per_100(changes_by_step.get((step,), 0), n),
                "reask_rate": _share(counts.sum("run.reasked", step=step), n),
            }
            for (step,), n in runs_by_step.items()
        ),
        by=lambda r: (-(r["per_100_runs"] or 0), -r["interventions"], r["step"]),
    )
    transforms = _ranked(
        (
            {
                "stage": stage,
                "transform": key,
                "count": n,
                "share": _share(n, interventions),
                "per_100_runs": _per_100(n, runs),
            }
            for (stage, key), n in counts.group("output.change", "stage", "key").items()
        ),
        by=lambda r: (-r["count"], r["stage"], r["transform"]),
    )
    stages_overall = [
        {"stage": stage, "count": n, "share": _share(n, interventions)}
        for (stage,), n in sorted(
            counts.group("output.change", "stage").items(), key=lambda i: (-i[1], i[0])
        )
    ]
    by_step = [
        {"step": _label(step), "stage": stage, "count": n}
        for (step, stage), n in sorted(counts.group("output.change", "step", "stage").items())
    ]
    by_model = [
        {"model": _label(model), "stage": stage, "count": n}
        for (model, stage), n in sorted(counts.group("output.change", "model", "stage").items())
    ]
    native = _native(counts, runs_by_model)
    reask_fields = _ranked(
        (
            {"step": _label(step), "path": key or "(whole reply)", "reason": stage, "count": n}
            for (step, key, stage), n in counts.group(
                "output.reask.field", "step", "key", "stage"
            ).items()
        ),
        by=lambda r: (-r["count"], r["step"], r["path"]),
    )
    violations = _ranked(
        (
            {"path": key or "/", "kind": stage, "count": n}
            for (key, stage), n in counts.group("output.validation.path", "key", "stage").items()
        ),
        by=lambda r: (-r["count"], r["path"]),
    )
    abort_rows = _ranked(
        (
            {"model": _label(model), "reason": key, "count": n}
            for (model, key), n in counts.group("stream.abort", "model", "key").items()
        ),
        by=lambda r: (-r["count"], r["model"]),
    )
    precheck_rows = _ranked(
        (
            {"check": key, "outcome": kind.split(".", 1)[1], "count": n}
            for kind in ("precheck.pass", "precheck.fail", "precheck.skipped")
            for (key,), n in counts.group(kind, "key").items()
        ),
        by=lambda r: (r["check"], r["outcome"]),
    )
    modes = _modes(counts)
    latency = _percentiles(histograms)
    errors = _ranked(
        (
            {"model": _label(model), "error": key, "count": n}
            for (model, key), n in counts.group("provider.call", "model", "key").items()
            if key
        ),
        by=lambda r: (-r["count"], r["model"]),
    )
    trend = _trend(counts, per_slot, start, width, buckets)
    data: dict[str, Any] = {
        "version": REPORT_VERSION,
        "generated_at": _iso(now),
        "window": {
            "since": _iso(start),
            "until": _iso(now),
            "hours": query.since_hours,
            "step": query.step,
            "model": query.model,
        },
        "totals": {
            "runs": runs,
            "interventions": interventions,
            "interventions_per_100_runs": _per_100(interventions, runs),
            "reasked_runs": reasked,
            "reask_rate": _share(reasked, runs),
            "failed_runs": invalid,
            "failure_rate": _share(invalid, runs),
            "streamed_runs": streamed,
            "stream_aborts": aborts,
            "aborted_runs": aborted,
            "abort_rate": _share(aborted, streamed),
            "prechecks": prechecks,
            "precheck_failure_rate": _share(
                prechecks["fail"], prechecks["pass"] + prechecks["fail"]
            ),
            "provider_calls": counts.sum("provider.call"),
            "provider_errors": sum(r["count"] for r in errors),
            "dropped_events": counts.sum("trace.dropped"),
        },
        "top_steps": steps[:top],
        "top_transforms": transforms[:top],
        "stages": {"overall": stages_overall, "by_step": by_step, "by_model": by_model},
        "native": native,
        "reasks": {
            "rate": _share(reasked, runs),
            "success": counts.sum("output.reask.success"),
            "fail": counts.sum("output.reask.fail"),
            "fields": reask_fields[:top],
            "violations": violations[:top],
        },
        "streams": {"aborts": abort_rows[:top], "rate": _share(aborted, streamed)},
        "prechecks": precheck_rows,
        "modes": modes,
        "latency": latency,
        "provider_errors": errors[:top],
        "trend": trend,
    }
    data["recommendations"] = _recommend(data, counts, runs_by_step, top)
    return data


def _aborted_runs(counts: _Counts, aborts: int) -> int:
    """Streamed runs with at least one stream abort, each once. A run's end says whether it
    had one (`run.streamed`, keyed `aborted` or `whole`); for runs recorded before it did
    (no key), the aborts left over (the window's, less one per run known aborted) are taken
    for one run each, up to every such run: an estimate, never more than those runs."""
    known = counts.sum("run.streamed", key=STREAMED_ABORTED)
    unknown = counts.sum("run.streamed", key="")
    return known + min(max(aborts - known, 0), unknown)


def _native(counts: _Counts, runs_by_model: Mapping[tuple[str, ...], int]) -> list[dict[str, Any]]:
    applied = counts.group("format.native", "model")
    skipped = counts.group("format.skipped", "model", "key")
    models = sorted({m for (m,) in applied} | {m for (m, _) in skipped})
    rows = []
    for model in models:
        reasons = sorted(
            ((key, n) for (m, key), n in skipped.items() if m == model), key=lambda i: -i[1]
        )
        total_skipped = sum(n for _, n in reasons)
        rows.append(
            {
                "model": _label(model),
                "applied": applied.get((model,), 0),
                "skipped": total_skipped,
                "skip_share": _share(total_skipped, total_skipped + applied.get((model,), 0)),
                "reasons": [
                    {"reason": key or "(no reason given)", "count": n} for key, n in reasons
                ],
                "runs": runs_by_model.get((model,), 0),
            }
        )
    return _ranked(rows, by=lambda r: (-r["skipped"], r["model"]))


def _modes(counts: _Counts) -> list[dict[str, Any]]:
    runs = counts.group("run.end", "model", "mode")
    outcomes = counts.group("run.end", "model", "mode", "key")
    reasked = counts.group("run.reasked", "model", "mode")
    reasked_then = _reasked_outcomes(counts)
    rows = []
    for (model, mode), n in runs.items():
        # A run that ended in an error (the provider's, a timeout) had no reply to judge: it
        # says nothing of the mode, so the trouble rate is of the runs that had one.
        errors = outcomes.get((model, mode, "error"), 0)
        failed = sum(outcomes.get((model, mode, k), 0) for k in FAILED if k != "error")
        asked = reasked.get((model, mode), 0)
        known, not_failed = reasked_then.get((model, mode), (0, 0))
        # Each run once: the failed ones, and the re-asked ones that did not fail. A re-asked
        # run recorded before its outcome was kept with it (`unknown`) is counted as troubled
        # (at most every run with a reply: the rate never passes 1).
        unknown = max(asked - known, 0)
        troubled = min(failed + not_failed + unknown, n - errors)
        rows.append(
            {
                "model": _label(model),
                "mode": _label(mode),
                "runs": n,
                "errors": errors,
                "reasked": asked,
                "failed": failed,
                "troubled": troubled,
                "trouble_rate": _share(troubled, n - errors),
            }
        )
    return _ranked(rows, by=lambda r: (r["model"], -r["runs"], r["mode"]))


def _reasked_outcomes(counts: _Counts) -> dict[tuple[str, ...], tuple[int, int]]:
    """Per (model, mode): the re-asked runs whose outcome is known, and those of them that
    neither failed nor ended in an error (re-asked, then valid)."""
    out: dict[tuple[str, ...], tuple[int, int]] = {}
    for (model, mode, outcome), n in counts.group(REASKED_OUTCOME, "model", "mode", "key").items():
        known, not_failed = out.get((model, mode), (0, 0))
        out[(model, mode)] = (known + n, not_failed + (0 if outcome in FAILED else n))
    return out


def _percentile(bins: list[tuple[int, int]], q: float) -> float | None:
    total = sum(n for _, n in bins)
    if not total:
        return None
    target, seen = q * total, 0
    for index, n in bins:
        seen += n
        if seen >= target:
            return round(bin_value(index), 2)
    return round(bin_value(bins[-1][0]), 2)


def _percentiles(histograms: list[tuple[Any, ...]]) -> list[dict[str, Any]]:
    bins: dict[tuple[str, str], dict[str, dict[int, int]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(int))
    )
    for provider, model, metric, index, n in histograms:
        bins[(provider, model)][metric][int(index)] += int(n)
    rows = []
    for (provider, model), metrics in sorted(bins.items()):
        ordered = {m: sorted(b.items()) for m, b in metrics.items()}
        row: dict[str, Any] = {
            "model": _label(_model_name(provider, model)),
            "calls": sum(n for _, n in ordered.get("latency_ms", [])),
        }
        for metric in _METRICS:
            for q in (50, 90, 99):
                row[f"{metric}_p{q}"] = _percentile(ordered.get(metric, []), q / 100)
        rows.append(row)
    return rows


def _trend(
    counts: _Counts, per_slot: Mapping[int, _Counts], start: float, width: int, buckets: int
) -> dict[str, Any]:
    empty = _Counts(())
    rows = []
    for slot in range(buckets):
        in_slot = per_slot.get(slot, empty)
        runs = in_slot.sum("run.end")
        changes = in_slot.sum("output.change")
        rows.append(
            {
                "start": _iso(start + slot * width),
                "runs": runs,
                "interventions": changes,
                "per_100_runs": _per_100(changes, runs),
                "reasked_runs": in_slot.sum("run.reasked"),
                "stream_aborts": in_slot.sum("stream.abort"),
                "failed_runs": sum(in_slot.sum("run.end", key=k) for k in FAILED),
                "by_stage": {
                    s: n for (s,), n in sorted(in_slot.group("output.change", "stage").items())
                },
                "by_model": {
                    _label(m): n
                    for (m,), n in sorted(in_slot.group("output.change", "model").items())
                },
            }
        )
    return {
        "bucket_seconds": width,
        "buckets": rows,
        "rising_step": _rising(counts, "step", buckets),
        "rising_model": _rising(counts, "model", buckets),
    }


def _rising(counts: _Counts, label: str, buckets: int) -> dict[str, Any] | None:
    """The label whose interventions per 100 runs grew most from the first half of the
    buckets to the second (the counts' first column says which half)."""
    if buckets < 2:
        return None
    tallies: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    column = _COLUMN[label]
    for c in (*counts.of("run.end"), *counts.of("output.change")):
        tallies[c[column]][(2 if c[0] else 0) + (c[4] == "output.change")] += int(c[7])
    best: Row | None = None
    for name, (runs_before, changes_before, runs_after, changes_after) in tallies.items():
        if runs_before < MIN_RUNS or runs_after < MIN_RUNS:
            continue
        before = 100 * changes_before / runs_before
        after = 100 * changes_after / runs_after
        if after > before and (best is None or after - before > best["delta"]):
            best = {
                label: _label(name),
                "before_per_100_runs": round(before, 2),
                "after_per_100_runs": round(after, 2),
                "delta": round(after - before, 2),
            }
    return best


# -- recommendations -----------------------------------------------------------------------


def _recommend(
    data: dict[str, Any],
    counts: _Counts,
    runs_by_step: Mapping[tuple[str, ...], int],
    top: int,
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    out += _recommend_native(data["native"])
    for (step, stage, transform), n in sorted(
        counts.group("output.change", "step", "stage", "key").items(), key=lambda i: -i[1]
    ):
        runs = runs_by_step.get((step,), 0)
        rate = _per_100(n, runs)
        if n >= PROCESSOR_MIN_COUNT and rate is not None and rate >= PROCESSOR_MIN_PER_100:
            point = _PROCESSOR_POINT.get(stage, "before_extract")
            out.append(
                {
                    "kind": "custom_processor",
                    "target": {"step": _label(step), "stage": stage, "transform": transform},
                    "message": (
                        f"'{transform}' ({stage}) fired {n} times in {runs} runs of step "
                        f"{_label(step)} ({rate} per 100 runs): change the prompt so replies "
                        f"need no {transform}, or add a custom processor at '{point}' that "
                        "does it once, on purpose"
                    ),
                    "evidence": {"count": n, "runs": runs, "per_100_runs": rate},
                }
            )
    for (step, path, reason), n in sorted(
        counts.group("output.reask.field", "step", "key", "stage").items(), key=lambda i: -i[1]
    ):
        runs = runs_by_step.get((step,), 0)
        if n >= FIELD_MIN_REASKS and runs and n / runs >= FIELD_MIN_SHARE:
            field_name = path or "the whole reply"
            out.append(
                {
                    "kind": "tighten_field",
                    "target": {"step": _label(step), "path": path or "", "reason": reason},
                    "message": (
                        f"{field_name} was asked again {n} times in {runs} runs of step "
                        f"{_label(step)} ({reason}): tighten the prompt or the schema there "
                        "(a description, an example, an enum, or a constraint the model can "
                        "meet)"
                    ),
                    "evidence": {"reasks": n, "runs": runs},
                }
            )
    out += _recommend_modes(data["modes"])
    dropped = data["totals"]["dropped_events"]
    if dropped:
        out.append(
            {
                "kind": "queue_size",
                "target": {},
                "message": (
                    f"{dropped} events were dropped because the recorder's queue was full: "
                    "raise [trace] queue_size, or lower flush_interval"
                ),
                "evidence": {"dropped": dropped},
            }
        )
    return out[: max(top, 1) * 4]


def _recommend_native(native: list[dict[str, Any]]) -> list[dict[str, Any]]:
    from outform.providers.profiles import capabilities

    out = []
    for row in native:
        if not row["skipped"] or ":" not in row["model"]:
            continue
        provider, _, model = row["model"].partition(":")
        try:
            caps = capabilities(provider, model)
        except Exception:  # a provider this outform does not know: no advice
            continue
        if caps.native_dialect is None:
            continue
        reason = row["reasons"][0]["reason"] if row["reasons"] else ""
        out.append(
            {
                "kind": "enable_native",
                "target": {"model": row["model"]},
                "message": (
                    f"{row['model']} supports native schema enforcement ({caps.native_dialect}), "
                    f"but {row['skipped']} of {row['skipped'] + row['applied']} runs went "
                    f"without it (most often: {reason}): call it with mode='native', or "
                    "remove what blocked it"
                ),
                "evidence": {
                    "skipped": row["skipped"],
                    "applied": row["applied"],
                    "reasons": row["reasons"],
                },
            }
        )
    return out


def _recommend_modes(modes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    by_model: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in modes:
        by_model[row["model"]].append(row)
    for model, rows in by_model.items():
        for row in rows:
            rate = row["trouble_rate"] or 0.0
            if row["runs"] - row["errors"] < MODE_MIN_RUNS or rate < MODE_MAX_TROUBLE:
                continue
            better = [
                r
                for r in rows
                if r is not row
                and r["runs"] - r["errors"] >= MODE_MIN_RUNS
                and (r["trouble_rate"] or 0.0) <= rate - MODE_BETTER_BY
            ]
            if better:
                best = min(better, key=lambda r: r["trouble_rate"] or 0.0)
                advice = (
                    f"mode {best['mode']} did better ({_pct(best['trouble_rate'])} of "
                    f"{best['runs'] - best['errors']} runs)"
                )
            else:
                advice = "try another mode (native, tool, json)"
            out.append(
                {
                    "kind": "switch_mode",
                    "target": {"model": model, "mode": row["mode"]},
                    "message": (
                        f"{model} in mode {row['mode']} needed a re-ask or failed in "
                        f"{_pct(rate)} of {row['runs'] - row['errors']} runs with a reply: "
                        f"switch its mode; {advice}"
                    ),
                    "evidence": {
                        k: row[k]
                        for k in ("runs", "errors", "reasked", "failed", "troubled", "trouble_rate")
                    },
                }
            )
    return out


def _pct(share: float | None) -> str:
    return "-" if share is None else f"{100 * share:.0f}%"


# -- tables --------------------------------------------------------------------------------


def _tables(data: dict[str, Any]) -> list[Table]:
    def table(name: str, title: str, rows: list[dict[str, Any]], *columns: str) -> Table:
        return Table(name, title, columns, [tuple(r.get(c) for c in columns) for r in rows])

    totals = data["totals"]
    flat_totals = [
        {"metric": k, "value": v} for k, v in totals.items() if not isinstance(v, dict)
    ] + [{"metric": f"prechecks_{k}", "value": v} for k, v in totals["prechecks"].items()]
    native = [
        {**r, "reasons": "; ".join(f"{x['reason']} ({x['count']})" for x in r["reasons"])}
        for r in data["native"]
    ]
    trend = [
        {**b, "by_stage": " ".join(f"{s}={n}" for s, n in b["by_stage"].items())}
        for b in data["trend"]["buckets"]
    ]
    rising = [
        {"label": label, **row}
        for label in ("step", "model")
        if (row := data["trend"][f"rising_{label}"]) is not None
    ]
    for row in rising:
        row["name"] = row.pop(row["label"])
    latency_columns = (
        "model",
        "calls",
        *(f"{m}_p{q}" for m in _METRICS for q in (50, 90, 99)),
    )
    return [
        table("totals", "Totals", flat_totals, "metric", "value"),
        table("top_steps", "Steps by interventions per 100 runs", data["top_steps"],
              "step", "runs", "interventions", "per_100_runs", "reask_rate"),
        table("top_transforms", "Top transforms", data["top_transforms"],
              "stage", "transform", "count", "share", "per_100_runs"),
        table("stages", "Stages", data["stages"]["overall"], "stage", "count", "share"),
        table("stages_by_step", "Stages per step", data["stages"]["by_step"],
              "step", "stage", "count"),
        table("stages_by_model", "Stages per model", data["stages"]["by_model"],
              "model", "stage", "count"),
        table("native", "Native format enforcement", native,
              "model", "applied", "skipped", "skip_share", "reasons"),
        table("reask_fields", "What was asked again", data["reasks"]["fields"],
              "step", "path", "reason", "count"),
        table("violations", "Validation failures by path", data["reasks"]["violations"],
              "path", "kind", "count"),
        table("stream_aborts", "Stream aborts", data["streams"]["aborts"],
              "model", "reason", "count"),
        table("prechecks", "Prechecks", data["prechecks"], "check", "outcome", "count"),
        table("modes", "Modes", data["modes"],
              "model", "mode", "runs", "errors", "reasked", "failed", "troubled",
              "trouble_rate"),
        table("latency", "Latency and tokens (percentiles)", data["latency"], *latency_columns),
        table("provider_errors", "Provider errors", data["provider_errors"],
              "model", "error", "count"),
        table("trend", "Trend", trend, "start", "runs", "interventions", "per_100_runs",
              "reasked_runs", "stream_aborts", "failed_runs", "by_stage"),
        table("rising", "Rising", rising, "label", "name", "before_per_100_runs",
              "after_per_100_runs", "delta"),
        table("recommendations", "Recommendations", data["recommendations"], "kind", "message"),
    ]  # fmt: skip
