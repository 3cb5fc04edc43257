"""A job's rows as runs in the trace (docs/observability.md): each row is one run, as one
generate() call is, from its first reply judged to its final status, across rounds and
processes.

A row's run has `source = "batch"`, the job's labels (resolved when the job was submitted, so
that a resume in another process records under the same ones), provider, model and mode, and
the schema's hash. Its id is derived from the job and the row, so the events of a row
re-asked in a later round, or read by a resumed process, join the same run. Each reply
judged is one attempt:

* the first: `run.start` and the format event (`format.native` or `format.skipped`);
* a reply asked again: `output.validation.fail` and `output.reask.attempt`;
* the last: its `output.change` events (and `output.reask.success` after a re-ask), or
  `output.validation.fail` and `output.reask.fail`; then `run.end`: `valid` (ok, repaired),
  `invalid` (failed), `refused`, or `error` (`provider_error`, `expired`, as `error_class`).

A live job's row also records a `provider.call` per call. A provider batch has no latency
per request, so its rows have none; `run.end` carries the last reply's tokens, and its
duration counts from when the row's batch was recorded. Events are recorded once the
manifest has committed the row's outcome: a crash may lose a row's events, never record
them twice for one reply.
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
from collections.abc import Mapping, Sequence
from typing import Any

from outform.batch.job import Prepared
from outform.batch.outcome import Verdict
from outform.run import format_event, reask_reason, reask_record
from outform.trace import runtime
from outform.trace.caller import Labels
from outform.trace.events import RunInfo, RunOutcomeName, global_observers
from outform.trace.tracer import RunTrace


def attempt_of(history: Sequence[Mapping[str, Any]]) -> int:
    """The attempt a row's next reply answers: one more than its replies that were asked
    again (`history`, its rounds so far). A request the provider did not answer (a
    transient error, an expired batch) is sent again in the next round without being an
    attempt: as a call that transport retries is one attempt of generate()."""
    return 1 + sum(1 for entry in history if entry.get("outcome") == "invalid")


def row_run_id(job: str, idx: int) -> str:
    """The run id of a job's row: the same in every round and process (32 hex digits)."""
    return hashlib.sha256(f"outform-batch:{job}:{idx}".encode()).hexdigest()[:32]


class RowRuns:
    """The runs of one job's rows; nothing is built when nobody listens."""

    def __init__(self, prepared: Prepared, job: str) -> None:
        labels = Labels.of(prepared.spec.labels)
        self.job = job
        self.plan = prepared.plan
        self.schema_hash = prepared.pipeline.schema_hash
        self.info = RunInfo(
            "",
            "batch",
            labels.step,
            labels.agent,
            labels.tags,
            prepared.resolved.spec.name,
            prepared.resolved.model,
            self.plan.mode,
            self.plan.reason,
        )

    def run(self, idx: int, *, since: float | None = None) -> RunTrace:
        """Row `idx`'s run; `since` (Unix time): where its duration starts, else now."""
        recorder = runtime.active()
        if recorder is None and not global_observers():
            return RunTrace(RunInfo(""), observers=None)  # nobody listens
        info = dataclasses.replace(self.info, run_id=row_run_id(self.job, idx))
        trace = RunTrace(info, schema_hash=self.schema_hash, recorder=recorder)
        if since is not None:
            trace.started -= max(0.0, time.time() - since)
        return trace

    def start(self, trace: RunTrace) -> None:
        """Before the row's first request: its run starts."""
        if trace.wanted:
            trace.attempt = 1
            trace.emit("run.start")
            format_event(trace, self.plan)

    def judged(self, trace: RunTrace, verdict: Verdict) -> None:
        """What the verdict on the reply to the row's attempt `trace.attempt` records."""
        if not trace.wanted:
            return
        attempt = trace.attempt
        trace.forward(verdict.events)
        hint = verdict.hint
        if verdict.status == "reask":
            if hint is not None:
                trace.validation_failed(hint.violations)
                data = reask_record(reask_reason(hint, None), (), hint)
                trace.emit("output.reask.attempt", data=data)
            return  # an expired or retryable request is only sent again: a new attempt
        if verdict.status in ("ok", "repaired"):
            trace.changes(verdict.changes)
            if attempt > 1:
                detail = f"valid after {attempt} attempts"
                trace.emit("output.reask.success", detail=detail, data=reask_record("", (), None))
            trace.end("valid", changes=len(verdict.changes), tokens=verdict.usage)
            return
        self.ended(trace, verdict)

    def ended(self, trace: RunTrace, verdict: Verdict) -> None:
        """A final status without a valid value."""
        outcome: RunOutcomeName = "error"
        error: str | None = verdict.status
        if verdict.status == "failed":
            outcome, error = ("refused", None) if verdict.refused else ("invalid", None)
            if verdict.hint is not None:
                trace.validation_failed(verdict.hint.violations)
                why = f"{trace.attempt} attempt(s) failed"
                data = reask_record(reask_reason(verdict.hint, None), (), verdict.hint)
                trace.emit("output.reask.fail", detail=why, data=data)
        trace.end(outcome, tokens=verdict.usage, error=error)


__all__ = ["RowRuns", "attempt_of", "row_run_id"]
