"""Building the events of realistic runs, as generate() and the gateway will record them."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from outform.trace.events import (
    Change,
    Event,
    EventName,
    FormatChoice,
    ProviderCall,
    Reask,
    RunEnd,
    RunInfo,
    StreamAbort,
    Tokens,
    Validation,
    ViolationRecord,
)

_ids = itertools.count(1)


@dataclass
class RunSpec:
    """One run: what happened to it, attempt by attempt."""

    step: str = "extract"
    provider: str = "openai"
    model: str = "gpt-4o"
    mode: str = "native_schema"
    changes: tuple[tuple[str, str, str], ...] = ()
    """(stage, transform, path) of each change in the accepted reply."""
    reasked: tuple[str, ...] = ()
    """Fields asked again after a first invalid reply (a re-ask happens when given)."""
    outcome: str = "valid"
    skipped: str | None = None
    """The reason native enforcement was skipped (None: it was applied)."""
    aborted: bool = False
    latency_ms: float = 800.0
    tokens: Tokens = field(default_factory=lambda: Tokens(120, 40))
    agent: str | None = None
    tags: tuple[str, ...] = ()
    streaming: bool = False
    confidence: float | None = None
    """What an agent envelope returned said of itself (with `sources`)."""
    sources: tuple[str, ...] = ()


def run_events(spec: RunSpec, start: float, run_id: str | None = None) -> list[Event]:
    """The events of `spec`, starting at `start` (seconds), one millisecond apart."""
    info = RunInfo(
        run_id or f"run-{next(_ids)}",
        step=spec.step,
        agent=spec.agent,
        tags=spec.tags,
        provider=spec.provider,
        model=spec.model,
        mode=spec.mode,
        mode_reason="the profile's strongest mode",
        streaming=spec.streaming or spec.aborted,
    )
    clock = itertools.count()

    def at() -> float:
        return start + next(clock) / 1000

    def call(attempt: int) -> Event:
        data = ProviderCall(spec.latency_ms, 90.0 if info.streaming else None, 200, spec.tokens)
        return Event("provider.call", run=info, attempt=attempt, time=at(), data=data)

    events = [Event("run.start", schema_hash="h1", run=info, time=at())]
    if spec.skipped is None:
        choice = FormatChoice(spec.mode, dialect="openai_strict", enforced=True)
        events.append(Event("format.native", run=info, time=at(), data=choice))
    else:
        choice = FormatChoice(spec.mode, reason=spec.skipped)
        events.append(Event("format.skipped", run=info, time=at(), data=choice))
    attempt = 1
    events.append(call(attempt))
    if spec.aborted:
        abort = StreamAbort(42, "a required field cannot appear any more")
        events.append(Event("stream.abort", run=info, attempt=attempt, time=at(), data=abort))
    if spec.reasked or spec.aborted:
        found = tuple(ViolationRecord(p, "type", "integer", 'string "x"') for p in spec.reasked)
        events.append(
            Event(
                "output.validation.fail",
                "validate",
                run=info,
                attempt=attempt,
                time=at(),
                data=Validation(found, len(found)),
            )
        )
        reason = "stream_aborted" if spec.aborted else "schema"
        ask = Reask(reason, spec.reasked, found)
        events.append(Event("output.reask.attempt", run=info, attempt=attempt, time=at(), data=ask))
        attempt = 2
        events.append(call(attempt))
    for stage, transform, path in spec.changes:
        events.append(
            Event(
                "output.change",
                stage,  # type: ignore[arg-type]
                "h1",
                (transform,),
                path=path,
                run=info,
                attempt=attempt,
                time=at(),
                data=Change('"42"', "42", "integer", "string"),
            )
        )
    if attempt > 1:
        name: EventName = "output.reask.success" if spec.outcome == "valid" else "output.reask.fail"
        events.append(Event(name, run=info, attempt=attempt, time=at(), data=Reask("schema")))
    end = RunEnd(
        spec.outcome,  # type: ignore[arg-type]
        attempt,
        len(spec.changes),
        spec.latency_ms * attempt,
        confidence=spec.confidence,
        sources=spec.sources,
    )
    events.append(Event("run.end", run=info, attempt=attempt, time=at(), data=end))
    return events
