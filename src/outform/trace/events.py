"""Trace events: one typed, serialisable model for everything outform does to a call.

An `Event` names what happened (`name`), where in the pipeline (`stage`, `path`,
`transforms`, `branch_index`), the call it belongs to (`run`, `attempt`) and, for the kinds
that carry more, a typed record (`data`). Every event carries its run's labels, so a stored
row is self-contained: no join is needed to know which step, model and mode it came from.

Events reach two kinds of consumers:

* observers, plain callables called in line (`add_observer`, or `observers=[...]` per call).
  An observer that raises does not break the call: the error is reported as a warning and the
  next observer still runs;
* sinks (the trace store, OpenTelemetry, logging), fed off the hot path by the recorder
  (`outform.trace.recorder`).

`to_dict()` / `from_dict()` round-trip through JSON; `Event.from_dict(e.to_dict()) == e`.
"""

from __future__ import annotations

import threading
import time
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Literal, get_args

from outform.usage import Usage

EventName = Literal[
    "run.start",
    "run.end",
    "format.native",
    "format.skipped",
    "output.change",
    "output.coercion.attempt",
    "output.coercion.success",
    "output.coercion.fail",
    "output.validation.fail",
    "output.reask.attempt",
    "output.reask.success",
    "output.reask.fail",
    "stream.abort",
    "output.fallback.text",
    "precheck.pass",
    "precheck.fail",
    "precheck.skipped",
    "provider.call",
]
EVENT_NAMES: tuple[EventName, ...] = get_args(EventName)

EventStage = Literal[
    "extract",
    "syntactic",
    "tolerant",
    "semantic",
    "custom",
    "validate",
    "fallback",
    "precheck",
    "dialect",
]
"""Where an intervention happened: finding the JSON (extract), undoing double encoding
(syntactic), decoding malformed JSON (tolerant), schema-aware coercion (semantic), a user
processor (custom), and the final validation (validate); a reply kept as text because it
ignored the format (fallback), and the check of a plan before a generation (precheck). A
`dialect` change is no intervention on the reply: outform mapping a value sent in the
provider's shape (a wrapped root, an absent key sent as null) back to the caller's schema,
recorded so that the value's provenance is whole, and left out of the health report."""
NOT_INTERVENTIONS: frozenset[str] = frozenset({"dialect"})
"""The stages whose changes are outform undoing its own translation (see EventStage)."""
EVENT_STAGES: tuple[EventStage, ...] = get_args(EventStage)

RunOutcomeName = Literal["valid", "invalid", "refused", "tool_calls", "error"]
Source = Literal["library", "gateway", "batch"]

PREVIEW_CHARS = 120
"""Longest before/after preview (and violation text) an event keeps: events are stored for
weeks and may be exported; the full reply stays with the caller."""
MAX_SOURCES = 10
"""Sources of an envelope's metadata kept in `run.end`."""
MAX_VIOLATIONS = 20
"""Violations kept per event, as in the hint sent to the model; `total` says how many there
were."""


def bounded(text: str, limit: int = PREVIEW_CHARS) -> str:
    """`text` cut to `limit` characters, an ellipsis marking the cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


# -- who and what: the run -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RunInfo:
    """The call an event belongs to: the same object for every event of one run.

    `step`, `agent` and `tags` are the caller's labels (per call, from
    `outform.trace.labels(...)`, or from the call's profile: its name is the step). `mode`
    is the plan's mode (`native_schema`, `forced_tool`, `json_object`, `instructions`,
    `unconstrained` or `text`) and `mode_reason` why it was chosen. `trace_parent` is the
    W3C traceparent of the caller's span when the call started, so that exported spans nest
    under it."""

    run_id: str
    source: Source = "library"
    step: str | None = None
    agent: str | None = None
    tags: tuple[str, ...] = ()
    provider: str | None = None
    model: str | None = None
    mode: str | None = None
    mode_reason: str | None = None
    streaming: bool = False
    trace_parent: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["tags"] = list(self.tags)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunInfo:
        values = _known(cls, data)
        values["tags"] = tuple(values.get("tags") or ())
        return cls(**values)


# -- what happened: the typed records of each kind -----------------------------------------


class Detail:
    """Base of the typed records an event may carry in `data`."""

    __slots__ = ()
    KINDS: ClassVar[tuple[str, ...]] = ()

    def to_dict(self) -> dict[str, Any]:
        return {f.name: _plain(getattr(self, f.name)) for f in fields(self)}  # type: ignore[arg-type]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Detail:
        return cls(**_known(cls, data))


Tokens = Usage
"""Token counts of a call or a run: `outform.Usage` itself (one model; this name is kept for
the trace API)."""


@dataclass(frozen=True, slots=True)
class RunEnd(Detail):
    """How a run ended: `valid`, `invalid` (no valid reply within the bounds), `refused`,
    `tool_calls` (the model called the caller's tools) or `error` (an exception, named by
    `error_class`). `changes` counts the interventions in the value returned. `confidence`
    and `sources`: what the value says of itself when it carries an agent envelope's
    `metadata` (`confidence` from 0 to 1, `sources` as strings; the first `MAX_SOURCES`,
    bounded), so that a run can be judged beside its interventions. `aborts`: for a streamed
    run, its `stream.abort` events (0: none); None for a run not streamed, or recorded
    before outform kept the number (the health report then estimates, see
    `outform.trace.health`)."""

    KINDS: ClassVar[tuple[str, ...]] = ("run.end",)
    outcome: RunOutcomeName
    attempts: int = 1
    changes: int = 0
    duration_ms: float | None = None
    tokens: Usage = field(default_factory=Usage)
    error_class: str | None = None
    confidence: float | None = None
    sources: tuple[str, ...] = ()
    aborts: int | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunEnd:
        values = _known(cls, data)
        values["tokens"] = Usage.from_dict(values.get("tokens"))
        values["sources"] = tuple(values.get("sources") or ())
        return cls(**values)


def envelope_metadata(value: Any) -> tuple[float | None, tuple[str, ...]]:
    """`confidence` and `sources` of a value shaped as an agent envelope (an object whose
    `metadata` object holds them); (None, ()) for any other value."""
    metadata = value.get("metadata") if isinstance(value, dict) else None
    if not isinstance(metadata, dict):
        return None, ()
    found = metadata.get("confidence")
    confidence = None
    if isinstance(found, int | float) and not isinstance(found, bool) and 0 <= found <= 1:
        confidence = float(found)
    listed = metadata.get("sources")
    sources = tuple(
        bounded(s)
        for s in (listed if isinstance(listed, list) else ())[:MAX_SOURCES]
        if isinstance(s, str)
    )
    return confidence, sources


@dataclass(frozen=True, slots=True)
class FormatChoice(Detail):
    """`format.native`: the provider enforces the format (`mechanism`: native_schema or
    forced_tool, `dialect` the schema dialect, `enforced` false when it is only guidance).
    `format.skipped`: it does not, and `reason` says why (the profile has no native mode, the
    call streams or has tools, the schema cannot be expressed, the caller asked)."""

    KINDS: ClassVar[tuple[str, ...]] = ("format.native", "format.skipped")
    mechanism: str
    reason: str = ""
    dialect: str | None = None
    enforced: bool = False


@dataclass(frozen=True, slots=True)
class Change(Detail):
    """`output.change`: one value the pipeline changed (the event's `stage`, `path`,
    `transforms[0]` and `branch_index` say where and how). `before`/`after` are bounded
    previews; `lossy` is true when information was dropped (text around a value, a unit,
    digits past an integer).

    `count`: how many changes the event stands for. 1, except past the first
    `max_change_events` changes of one reply (`[trace]`), where the rest are stored as one
    event per stage, transform and lossiness: its path and previews are the first of them,
    and every count the store keeps includes all of them."""

    KINDS: ClassVar[tuple[str, ...]] = ("output.change",)
    before: str | None = None
    after: str | None = None
    expected: str | None = None
    actual: str | None = None
    lossy: bool = False
    count: int = 1

    def __post_init__(self) -> None:
        for name in ("before", "after"):
            value = getattr(self, name)
            if value is not None and len(value) > PREVIEW_CHARS:
                object.__setattr__(self, name, bounded(value))


@dataclass(frozen=True, slots=True)
class ViolationRecord:
    """One reason a reply did not match (see `outform.parse.hint.Violation`)."""

    path: str
    kind: str
    expected: str
    found: str

    def to_dict(self) -> dict[str, str]:
        return {"path": self.path, "kind": self.kind, "expected": self.expected,
                "found": self.found}  # fmt: skip

    @classmethod
    def of(cls, violation: Any) -> ViolationRecord:
        """From anything with path, kind, expected and found (a hint's Violation)."""
        return cls(
            str(violation.path),
            str(violation.kind),
            bounded(str(violation.expected)),
            bounded(str(violation.found)),
        )


def _violations(items: Iterable[Any]) -> tuple[ViolationRecord, ...]:
    return tuple(ViolationRecord.of(item) for item in list(items)[:MAX_VIOLATIONS])


@dataclass(frozen=True, slots=True)
class Validation(Detail):
    """`output.validation.fail`: the reply (after every repair) did not validate. Keeps the
    first `MAX_VIOLATIONS` of the hint's violations; `total` counts them all."""

    KINDS: ClassVar[tuple[str, ...]] = ("output.validation.fail",)
    violations: tuple[ViolationRecord, ...] = ()
    total: int = 0

    @classmethod
    def of(cls, violations: Iterable[Any]) -> Validation:
        items = list(violations)
        return cls(_violations(items), len(items))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Validation:
        found = tuple(ViolationRecord(**v) for v in data.get("violations") or ())
        return cls(found, int(data.get("total", len(found))))


@dataclass(frozen=True, slots=True)
class Reask(Detail):
    """`output.reask.attempt|success|fail`: what was asked again. `fields` are the JSON paths
    of a field re-ask (empty: the whole reply); `reason` is `syntax`, `schema`, `cut_off` or
    `stream_aborted`; `violations` what the hint told the model (bounded)."""

    KINDS: ClassVar[tuple[str, ...]] = (
        "output.reask.attempt",
        "output.reask.success",
        "output.reask.fail",
    )
    reason: str = ""
    fields: tuple[str, ...] = ()
    violations: tuple[ViolationRecord, ...] = ()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Reask:
        found = tuple(ViolationRecord(**v) for v in data.get("violations") or ())
        return cls(str(data.get("reason", "")), tuple(data.get("fields") or ()), found)


@dataclass(frozen=True, slots=True)
class StreamAbort(Detail):
    """`stream.abort`: a streamed reply was cut at `offset` characters, because `reason`."""

    KINDS: ClassVar[tuple[str, ...]] = ("stream.abort",)
    offset: int
    reason: str


@dataclass(frozen=True, slots=True)
class Precheck(Detail):
    """`precheck.pass|fail|skipped`: the reasoning precheck before a generation (`check`
    names the check: checklist, plan, consensus; `detail` says what it found or why it was
    skipped)."""

    KINDS: ClassVar[tuple[str, ...]] = ("precheck.pass", "precheck.fail", "precheck.skipped")
    check: str
    detail: str = ""
    score: float | None = None
    """The plan's score (or the agreement of the plan samples)."""
    tokens: int = 0
    """The tokens the check spent (plan samples and the validator's call)."""


@dataclass(frozen=True, slots=True)
class ProviderCall(Detail):
    """`provider.call`: one HTTP exchange with the provider. `latency_ms` from the request to
    the last byte, `ttft_ms` to the first text of a stream, `status` the HTTP status (None
    when no response came), `retries` the transport's retries before this answer,
    `error_class` the exception's class name when the call failed."""

    KINDS: ClassVar[tuple[str, ...]] = ("provider.call",)
    latency_ms: float
    ttft_ms: float | None = None
    status: int | None = None
    tokens: Usage = field(default_factory=Usage)
    retries: int = 0
    error_class: str | None = None
    finish_reason: str | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ProviderCall:
        values = _known(cls, data)
        values["tokens"] = Usage.from_dict(values.get("tokens"))
        return cls(**values)


_DETAIL_TYPES: tuple[type[Detail], ...] = (
    RunEnd, FormatChoice, Change, Validation, Reask, StreamAbort, Precheck, ProviderCall,
)  # fmt: skip
DETAILS: dict[str, type[Detail]] = {kind: cls for cls in _DETAIL_TYPES for kind in cls.KINDS}
"""The record type each event name carries in `data` (names not listed carry none)."""


# -- the event -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Event:
    """One thing outform did to a call. The first seven fields are positional (as they were
    before runs and records were added); the rest are keywords."""

    name: EventName
    stage: EventStage | None = None
    schema_hash: str | None = None
    transforms: tuple[str, ...] = ()
    branch_index: int | None = None
    path: str = ""
    detail: str = ""
    time: float = field(default_factory=time.time)
    run: RunInfo | None = None
    attempt: int = 0
    """1 for the first request of a run, 2 for the first re-ask...; 0 outside a run."""
    data: Detail | None = None

    @property
    def transform(self) -> str | None:
        """The transform of an `output.change` (the first of `transforms`)."""
        return self.transforms[0] if self.transforms else None

    def to_dict(self) -> dict[str, Any]:
        """Flat JSON; `run`, `attempt` and `data` appear when set (an event of a bare parse
        has the keys it always had)."""
        out: dict[str, Any] = {
            "name": self.name,
            "stage": self.stage,
            "schema_hash": self.schema_hash,
            "transforms": list(self.transforms),
            "branch_index": self.branch_index,
            "path": self.path,
            "detail": self.detail,
            "time": self.time,
        }
        if self.run is not None:
            out["run"] = self.run.to_dict()
        if self.attempt:
            out["attempt"] = self.attempt
        if self.data is not None:
            out["data"] = self.data.to_dict()
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Event:
        """The event `to_dict` wrote (unknown keys are ignored, so older readers can read
        newer rows)."""
        name = data["name"]
        if name not in EVENT_NAMES:
            raise ValueError(f"unknown event name {name!r}")
        record = data.get("data")
        kind = DETAILS.get(name)
        run = data.get("run")
        return cls(
            name=name,
            stage=data.get("stage"),
            schema_hash=data.get("schema_hash"),
            transforms=tuple(data.get("transforms") or ()),
            branch_index=data.get("branch_index"),
            path=data.get("path") or "",
            detail=data.get("detail") or "",
            time=float(data.get("time") or 0.0),
            run=RunInfo.from_dict(run) if run else None,
            attempt=int(data.get("attempt") or 0),
            data=kind.from_dict(record) if kind is not None and record else None,
        )


def _known(cls: type, data: Mapping[str, Any]) -> dict[str, Any]:
    names = {f.name for f in fields(cls)}
    return {k: v for k, v in data.items() if k in names}


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    to_dict = getattr(value, "to_dict", None)
    return to_dict() if to_dict is not None else value


# -- observers -----------------------------------------------------------------------------

Observer = Callable[[Event], None]


class _Registry:
    """The global observers, replaced (never mutated) under a lock so dispatch needs none."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.observers: tuple[Observer, ...] = ()

    def add(self, observer: Observer) -> None:
        with self.lock:
            self.observers = (*self.observers, observer)

    def remove(self, observer: Observer) -> None:
        with self.lock:
            # == rather than `is`: a bound method is a new object at every attribute access.
            self.observers = tuple(o for o in self.observers if o != observer)


_registry = _Registry()


def add_observer(observer: Observer) -> None:
    """Receive every event of every call from now on."""
    if not callable(observer):
        from outform.arguments import refused

        raise refused("observer", "a callable (it receives each Event)", observer)
    _registry.add(observer)


def remove_observer(observer: Observer) -> None:
    _registry.remove(observer)


def global_observers() -> tuple[Observer, ...]:
    """The observers `add_observer` registered."""
    return _registry.observers


def dispatch(events: Iterable[Event], extra: Iterable[Observer] = ()) -> None:
    """Deliver events to the global observers and to `extra` ones, in order."""
    targets = (*_registry.observers, *extra)
    if not targets:
        return
    for event in events:
        for observer in targets:
            try:
                observer(event)
            except Exception as exc:  # an observer must never break a parse
                warnings.warn(
                    f"outform observer {observer!r} raised {exc!r}; event dropped for it",
                    RuntimeWarning,
                    stacklevel=2,
                )
