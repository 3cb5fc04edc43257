"""What the dashboard shows, as JSON, read from the trace store (no web framework here).

* `overview`: the health report of the window (totals, trend buckets per stage and model,
  latency percentiles, recommendations) and the steps and models to filter by;
* `failures`: the latest validation failures, failed re-asks, stream aborts and failed
  prechecks, each with the hint's violations;
* `runs`: the latest runs;
* `run_detail`: one run opened up: its labels, the mode chosen and why, the format decision,
  and per attempt the provider call, the violations, what was asked again and every change
  with its before and after; and, when the value returned was an agent envelope, the
  confidence and sources its metadata gave.
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any

from outform.trace.events import (
    Change,
    Event,
    FormatChoice,
    ProviderCall,
    Reask,
    RunEnd,
    StreamAbort,
)
from outform.trace.health import HealthQuery, report
from outform.trace.store import Filter, TraceStore

FAILURE_KINDS = ("output.validation.fail", "output.reask.fail", "stream.abort", "precheck.fail")


def overview(store: TraceStore, query: HealthQuery) -> dict[str, Any]:
    data = report(store, query).to_dict()
    now = time.time() if query.now is None else query.now
    data["filters"] = store.labels(Filter(now - query.since_hours * 3600, now + 60))
    return data


def _filter(query: HealthQuery) -> Filter:
    now = time.time() if query.now is None else query.now
    return Filter(now - query.since_hours * 3600, now + 60, query.step, query.model)


def failures(store: TraceStore, query: HealthQuery, limit: int = 20) -> list[dict[str, Any]]:
    rows = []
    for event in store.events(_filter(query), FAILURE_KINDS, limit=limit):
        run = event.run
        rows.append(
            {
                "time": event.time,
                "name": event.name,
                "run_id": run.run_id if run else None,
                "step": run.step if run else None,
                "model": _model(run.provider, run.model) if run else None,
                "attempt": event.attempt,
                "hint": _hint(event),
            }
        )
    return rows


def runs(store: TraceStore, query: HealthQuery, limit: int = 50) -> list[dict[str, Any]]:
    out = []
    for run in store.runs(_filter(query), limit=limit):
        run["model"] = _model(run.pop("provider"), run["model"])
        out.append(run)
    return out


def run_detail(store: TraceStore, run_id: str) -> dict[str, Any] | None:
    run, events = store.run(run_id)
    if run is None:
        return None
    run["model"] = _model(run.pop("provider"), run["model"])
    attempts: dict[int, dict[str, Any]] = defaultdict(
        lambda: {"call": None, "violations": [], "asked": None, "abort": None, "changes": []}
    )
    decision = None
    envelope = None
    for event in events:
        data = event.data
        if isinstance(data, RunEnd) and (data.confidence is not None or data.sources):
            envelope = {"confidence": data.confidence, "sources": list(data.sources)}
        if isinstance(data, FormatChoice):
            decision = {
                "native": event.name == "format.native",
                "mechanism": data.mechanism,
                "dialect": data.dialect,
                "enforced": data.enforced,
                "reason": data.reason,
            }
        if not event.attempt:
            continue
        attempt = attempts[event.attempt]
        if isinstance(data, ProviderCall):
            attempt["call"] = data.to_dict()
        elif event.name == "output.validation.fail":
            attempt["violations"] = _hint(event)
        elif isinstance(data, Reask) and event.name == "output.reask.attempt":
            attempt["asked"] = {"reason": data.reason, "fields": list(data.fields)}
        elif isinstance(data, StreamAbort):
            attempt["abort"] = data.to_dict()
        elif isinstance(data, Change):
            attempt["changes"].append(
                {
                    "stage": event.stage,
                    "path": event.path,
                    "transform": event.transform,
                    "before": data.before,
                    "after": data.after,
                    "expected": data.expected,
                    "actual": data.actual,
                    "lossy": data.lossy,
                }
            )
    return {
        "run": run,
        "format": decision,
        "envelope": envelope,
        "attempts": [{"number": n, **attempts[n]} for n in sorted(attempts)],
        "events": [e.to_dict() for e in events],
    }


def _hint(event: Event) -> list[str]:
    """The violations an event carries, one readable line each."""
    data = event.data
    violations = getattr(data, "violations", ()) or ()
    lines = [
        f"at {v.path or '/'}: expected {v.expected}, found {v.found}"
        if v.kind not in ("missing", "syntax")
        else f"at {v.path or '/'}: {v.kind} ({v.expected})"
        for v in violations
    ]
    if isinstance(data, StreamAbort):
        lines.append(f"cut at character {data.offset}: {data.reason}")
    if not lines and event.detail:
        lines.append(event.detail)
    return lines


def _model(provider: str | None, model: str | None) -> str | None:
    if model is None:
        return None
    return f"{provider}:{model}" if provider else model
