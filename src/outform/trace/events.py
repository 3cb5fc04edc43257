"""Trace events: one per intervention, flat and JSON-serialisable so any sink can store them.

Observers are plain callables. Register one globally with :func:`add_observer` (for example a
SQLite sink) or pass ``observers=[...]`` to a single call. An observer that raises does not
break the parse: the error is reported as a warning and the next observer still runs.
"""

from __future__ import annotations

import threading
import time
import warnings
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

EventName = Literal[
    "output.coercion.attempt",
    "output.coercion.success",
    "output.coercion.fail",
    "output.reask.attempt",
    "output.reask.success",
    "output.reask.fail",
    # issue 13 (agents): the text fallback of an envelope, the reasoning precheck
    "output.fallback.text",
    "precheck.pass",
    "precheck.fail",
    "precheck.skipped",
]
EventStage = Literal[
    "extract",
    "syntactic",
    "tolerant",
    "semantic",
    "custom",
    "validate",
    # issue 13 (agents)
    "fallback",
    "precheck",
]
"""Where an intervention happened: finding the JSON (extract), undoing double encoding
(syntactic), decoding malformed JSON (tolerant), schema-aware coercion (semantic), a user
processor (custom), and the final validation (validate); a reply kept as text because it ignored
the format (fallback), and the check of a plan before a generation (precheck)."""


@dataclass(frozen=True, slots=True)
class Event:
    name: EventName
    stage: EventStage
    schema_hash: str | None = None
    transforms: tuple[str, ...] = ()
    branch_index: int | None = None
    path: str = ""
    detail: str = ""
    time: float = field(default_factory=time.time)
    score: float | None = None
    """Precheck events: the plan's score (or the agreement of the plan samples)."""
    tokens: int = 0
    """Precheck events: the tokens the check spent (plan samples and the validator's call)."""

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["transforms"] = list(self.transforms)
        return out


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
    _registry.add(observer)


def remove_observer(observer: Observer) -> None:
    _registry.remove(observer)


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
