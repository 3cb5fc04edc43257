"""A job's rows as runs in the trace (docs/observability.md): each row is one run, as one
generate() call is, from its first reply judged to its final status, across rounds and
processes.

A row's run has `source = "batch"`, the job's labels (resolved when the job was submitted, so
that a resume in another process records under the same ones), provider, model and mode, and
the schema's hash. Its id is derived from the job and the row, so the events of a row
re-asked in a later round, or read by a resumed process, join the same run. Each reply
judged is one attempt (a request sent again because the provider did not answer it is not):

* before the first request: `run.start` and the format event (`format.native` or
  `format.skipped`);
* a reply asked again: `output.validation.fail` and `output.reask.attempt`;
* the last: its `output.change` events (and `output.reask.success` after a re-ask), or
  `output.validation.fail` and `output.reask.fail`; then `run.end`: `valid` (ok, repaired),
  `invalid` (failed), `refused`, or `error` (`provider_error`, `expired`, as `error_class`).

A row of a provider batch valid as sent at its first request is only counted
(`count_valid`), as a reply on the pipeline's fast path is: what its events would add to the
counts, without them (a job reads thousands of rows a second; the trace's writer would fall
behind, and `keep_up` makes the job wait when it does). A provider batch has no latency per
request, so its rows have no `provider.call`; `run.end` carries the last reply's tokens, and
its duration counts from when the row's batch was recorded. A live job's row records a
`provider.call` per call. Events are recorded once the manifest has committed the row's
outcome: a crash may lose a row's events, never record them twice for one reply.
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
from collections.abc import Mapping, Sequence
from typing import Any, cast

from outform.batch.job import Prepared
from outform.batch.outcome import Verdict
from outform.run import format_event, reask_reason, reask_record
from outform.trace import runtime
from outform.trace.caller import Labels
from outform.trace.events import Event, RunInfo, RunOutcomeName, global_observers
from outform.trace.recorder import CountedRun, Recorder
from outform.trace.rows import counted_run
from outform.trace.tracer import RunTrace

KEEP_UP_SHARE = 20
"""A job waits for the trace's writer once this share of its queue is waiting (1/20: 5,000
events of the default 100,000)."""


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
        self._counted: CountedRun | None = None

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

    def keep_up(self) -> None:
        """Wait for the trace's writer when the job records faster than it writes: a job
        judges thousands of rows a second, and the queue's bound would otherwise drop their
        events (or, below it, hold a hundred thousand of them in memory)."""
        recorder = runtime.active()
        if recorder is not None and recorder.backlog > recorder.queue_size // KEEP_UP_SHARE:
            recorder.flush()

    def count_valid(self) -> None:
        """A row valid as sent at its first request: counted, as a reply on the pipeline's
        fast path is, with what its events would add to the counts (a valid run and its
        format event, under the job's labels, provider, model and mode), without them."""
        recorder = runtime.active()
        if recorder is None:
            return
        if self._counted is None:
            self._counted = counted_run(self._prototype())
        recorder.count(self._counted)

    def _prototype(self) -> list[Event]:
        """The events of a row valid as sent at its first request."""
        kept = _Kept()
        info = dataclasses.replace(self.info, run_id="counted")
        trace = RunTrace(
            info, schema_hash=self.schema_hash, observers=None, recorder=cast(Recorder, kept)
        )
        self.start(trace)
        trace.end("valid")
        return kept.events

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
            trace.end(
                "valid", changes=len(verdict.changes), tokens=verdict.usage, value=verdict.data
            )
            return
        self._ended(trace, verdict)

    def _ended(self, trace: RunTrace, verdict: Verdict) -> None:
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


class _Kept:
    """Where a prototype run's events go (nowhere else: no observer, no sink)."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def record(self, event: Event) -> None:
        self.events.append(event)


__all__ = ["RowRuns", "attempt_of", "row_run_id"]
