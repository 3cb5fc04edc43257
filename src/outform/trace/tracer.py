"""The events of one run, stamped and delivered: what generate(), stream(), a reply parsed on
its own and the gateway record through.

A `RunTrace` is made when a run starts (`RunTrace.begin`): it resolves the caller's labels,
numbers the run, and from then on turns each thing that happens into an `Event` carrying the
run (`RunInfo`) and the current attempt, given in line to the observers (global ones and the
call's own) and queued for the sinks (`Recorder.record`, no I/O). When nobody listens (no
observer, recording off), nothing is built: each method returns at its first line.

What goes where: observers see every event of the run; the sinks get all of them but the
per-stage summaries `output.coercion.*`, which say again, less precisely, what the
`output.change` events of the same reply say (they stay in `ParseResult.events`).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

from outform.errors import ConfigError, OutformError
from outform.trace import caller, runtime
from outform.trace.caller import Labels
from outform.trace.events import (
    Detail,
    Event,
    EventName,
    EventStage,
    Observer,
    ProviderCall,
    RunEnd,
    RunInfo,
    RunOutcomeName,
    Source,
    StreamAbort,
    Validation,
    dispatch,
    envelope_metadata,
    global_observers,
)
from outform.trace.recorder import Recorder
from outform.usage import Usage

OBSERVED_ONLY = frozenset(
    {"output.coercion.attempt", "output.coercion.success", "output.coercion.fail"}
)
"""Kinds given to observers and not recorded (see the module's docstring)."""


def new_run_id() -> str:
    """128 random bits, as 32 hex digits (what uuid4 would give, without its version bits)."""
    return os.urandom(16).hex()


_UNHEARD = RunInfo("")
"""The run of a call nobody listens to (recording off, no observer)."""


class RunTrace:
    """One run's events. `attempt` is the number of the provider call in progress (1 for the
    first, 2 for the first re-ask...): the caller sets it as the attempts go."""

    __slots__ = (
        "aborts",
        "attempt",
        "ended",
        "info",
        "observed",
        "observers",
        "recorder",
        "schema_hash",
        "started",
        "wanted",
    )

    def __init__(
        self,
        info: RunInfo,
        *,
        schema_hash: str | None = None,
        observers: Sequence[Observer] | None = (),
        recorder: Recorder | None = None,
    ) -> None:
        self.info = info
        self.schema_hash = schema_hash
        self.observed = observers is not None
        """False: the events go to the sinks only (a bare parse keeps its observers' events
        as they always were: `ParseResult.events`)."""
        self.observers = tuple(observers or ())
        self.recorder = recorder
        self.wanted = recorder is not None or (
            self.observed and bool(self.observers or global_observers())
        )
        """Whether anyone listens; fixed when the run starts."""
        self.attempt = 1
        self.aborts = 0
        """`stream.abort` events emitted: `run.end` keeps the number (streamed runs)."""
        self.started = time.perf_counter()
        self.ended = False

    @classmethod
    def begin(
        cls,
        *,
        source: Source = "library",
        labels: Labels | Mapping[str, Any] | None = None,
        profile: str | caller.Active | None = caller.ACTIVE,
        provider: str | None = None,
        model: str | None = None,
        mode: str | None = None,
        mode_reason: str | None = None,
        streaming: bool = False,
        schema_hash: str | None = None,
        observers: Sequence[Observer] | None = (),
        recorder: Recorder | bool | None = True,
        strict: bool = True,
        start: bool = True,
    ) -> RunTrace:
        """A new run, its labels resolved (`labels`: the call's own, over the current
        `labels(...)` block, over those of `profile` (None: no profile; by default the one
        active now) and `[defaults]`; an unknown profile is a ConfigError, raised here, before
        any request, unless `strict` is off: then the labels are kept as given, the profile's
        name as the step). `recorder`: True for the process's recorder (None when recording is
        off), or the one to use; `observers` None: sinks only. `start`: emit `run.start` now
        (else `start()` does, when the run really begins)."""
        chosen = runtime.active() if recorder is True else recorder or None
        observed = observers is not None and bool(observers or global_observers())
        if not strict and chosen is None and not observed:  # nobody listens: nothing to do
            return cls(_UNHEARD, observers=None)
        try:
            resolved = caller.resolve(labels, profile)
        except ConfigError:
            if strict:
                raise
            named = caller.active_profile() if isinstance(profile, caller.Active) else profile
            resolved = Labels.of(labels).over(caller.current()).over(Labels(step=named))
        parent = None
        if chosen is not None and chosen.trace_parent:
            from outform.trace.otel import current_parent

            parent = current_parent()
        info = RunInfo(
            new_run_id(),
            source,
            resolved.step,
            resolved.agent,
            resolved.tags,
            provider,
            model,
            mode,
            mode_reason,
            streaming,
            parent,
        )
        run = cls(info, schema_hash=schema_hash, observers=observers, recorder=chosen)
        if start:
            run.start()
        return run

    def start(self) -> None:
        """`run.start`; the run's duration counts from here."""
        self.started = time.perf_counter()
        self.emit("run.start")

    # -- events ----------------------------------------------------------------------------

    def emit(
        self,
        name: EventName,
        stage: EventStage | None = None,
        *,
        data: Detail | None = None,
        path: str = "",
        transforms: tuple[str, ...] = (),
        branch_index: int | None = None,
        detail: str = "",
        attempt: int | None = None,
    ) -> None:
        if not self.wanted:
            return
        if name == "stream.abort":
            self.aborts += 1
        event = Event(
            name,
            stage,
            self.schema_hash,
            transforms,
            branch_index,
            path,
            detail,
            run=self.info,
            attempt=self.attempt if attempt is None else attempt,
            data=data,
        )
        self.deliver((event,))

    def deliver(self, events: Sequence[Event]) -> None:
        """Events already stamped: to the observers, then (but the observed-only kinds) to
        the recorder."""
        if self.observed:
            dispatch(events, self.observers)
        recorder = self.recorder
        if recorder is not None:
            for event in events:
                if event.name not in OBSERVED_ONLY:
                    recorder.record(event)

    def forward(self, events: Iterable[Event]) -> None:
        """Events of a parse of this run's reply (`ParseResult.events`, a verdict's changes),
        stamped with the run and the attempt."""
        if self.wanted:
            info, attempt, schema_hash = self.info, self.attempt, self.schema_hash
            self.deliver(
                [
                    replace(e, run=info, attempt=attempt, schema_hash=e.schema_hash or schema_hash)
                    for e in events
                ]
            )

    def changes(self, changes: Sequence[Any]) -> None:
        """One `output.change` per change of a parse result (`outform.parse.result.Change`).
        Observers get every one, in line. The sinks get the first `max_change_events` of the
        recorder and the rest folded (`outform.parse.result.fold`), built on the recorder's
        thread (`deferred_events`), so a reply with many changes does not pay for its record
        on the caller's clock (docs/pipeline.md, "Limits")."""
        if not self.wanted:
            return
        fields = {
            "run": self.info,
            "attempt": self.attempt,
            "schema_hash": self.schema_hash,
            "time": time.time(),
        }
        if self.observed and (self.observers or global_observers()):
            dispatch([c.event(**fields) for c in changes], self.observers)
        if self.recorder is not None:
            from outform.parse.result import deferred_events  # (parse imports trace)

            keep = self.recorder.max_change_events
            self.recorder.record_later(*deferred_events(changes, keep, **fields))

    def validation_failed(self, violations: Sequence[Any]) -> None:
        if self.wanted:
            self.emit("output.validation.fail", "validate", data=Validation.of(violations))

    def call(
        self,
        latency_ms: float,
        *,
        status: int | None = None,
        retries: int = 0,
        ttft_ms: float | None = None,
        tokens: Usage | None = None,
        finish_reason: str | None = None,
        error: BaseException | str | None = None,
    ) -> None:
        """`provider.call`: one exchange with the provider (or backend)."""
        if not self.wanted:
            return
        data = ProviderCall(
            round(latency_ms, 3),
            None if ttft_ms is None else round(ttft_ms, 3),
            status,
            tokens or Usage(),
            retries,
            error_class(error),
            finish_reason,
        )
        self.emit("provider.call", data=data)

    def end(
        self,
        outcome: RunOutcomeName,
        *,
        changes: int = 0,
        tokens: Usage | None = None,
        error: BaseException | str | None = None,
        value: Any = None,
    ) -> None:
        """`run.end`; its `attempts` is the attempt in progress; `value` the value returned
        (an envelope's confidence and sources are kept); a streamed run's `aborts`, the
        `stream.abort` events it emitted."""
        self.ended = True
        if not self.wanted:
            return
        duration = (time.perf_counter() - self.started) * 1000
        confidence, sources = envelope_metadata(value)
        data = RunEnd(
            outcome,
            self.attempt,
            changes,
            round(duration, 3),
            tokens or Usage(),
            error_class(error),
            confidence,
            sources,
            self.aborts if self.info.streaming else None,
        )
        self.emit("run.end", data=data)

    @contextlib.contextmanager
    def recording(self, tokens: Callable[[], Usage] | None = None) -> Iterator[None]:
        """Around the work of a run (a driver, a gateway request): an exception that did not
        end the run ends it as an error, with the tokens `tokens()` says were spent."""
        try:
            yield
        except BaseException as error:
            if not self.ended:
                self.end("error", error=error, tokens=tokens() if tokens is not None else None)
            raise


def record_parse(
    parse: Callable[[], Any],
    recorder: Recorder,
    *,
    schema_hash: str | None,
    streaming: bool = False,
) -> Any:
    """Run `parse` (a parse of one reply on its own, returning a ParseResult) and record it as
    a run of its own, for the sinks only: the changes of the value returned, the violations
    when there is none, the end. What `parse` raises is raised again, unchanged."""
    run = RunTrace.begin(
        schema_hash=schema_hash,
        streaming=streaming,
        observers=None,
        recorder=recorder,
        strict=False,
    )
    try:
        result = parse()
    except OutformError as error:
        hint = getattr(error, "hint", None)
        if hint is not None:
            run.validation_failed(hint.violations)
            run.end("invalid")
        else:
            run.end("error", error=error)
        raise
    run.changes(result.changes)
    run.end("valid", changes=len(result.changes), value=result.data)
    return result


def record_abort(
    recorder: Recorder,
    schema_hash: str | None,
    offset: int,
    reason: str,
    violations: Sequence[Any],
) -> None:
    """A reply streamed on its own and cut off because it could no longer be valid, recorded
    as a streamed run of its own: the abort, the violation, the end (invalid)."""
    run = RunTrace.begin(
        schema_hash=schema_hash, streaming=True, observers=None, recorder=recorder, strict=False
    )
    run.emit("stream.abort", data=StreamAbort(offset, reason))
    run.validation_failed(violations)
    run.end("invalid")


def error_class(error: BaseException | str | None) -> str | None:
    """The name an error is recorded under: its class (never its message, which may quote a
    reply or a key)."""
    if error is None or isinstance(error, str):
        return error
    return type(error).__name__


def elapsed_ms(since: float | None, now: float | None = None) -> float:
    """Milliseconds from `since` (a `time.perf_counter()` reading) to now."""
    if since is None:
        return 0.0
    return ((time.perf_counter() if now is None else now) - since) * 1000
