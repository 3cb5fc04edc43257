"""The recorder: events in on the hot path, batches out to the sinks on a background thread.

`record(event)` and `tally()` only append to a bounded queue (a deque and a length check: no
lock, no I/O, no serialisation, and for a tally no allocation either). A daemon thread wakes
every `flush_interval` seconds, or when `flush()` asks, takes everything queued as one batch,
removes secrets (`outform.trace.redact`) and hands the batch to each sink (the trace store
writes it in one transaction). When the queue is full, new events are dropped and counted;
the count is stored with the next batch (`trace.dropped`), so a loss is never silent.

`tally` is the cheapest record there is, for a reply that took the pipeline's fast path: no
event is built, the writer only counts it as a valid run with no intervention (per labels) in
the minute it was written.

A sink whose `open` raises is left out (the trace store never raises there: it keeps its
batches and opens later, `outform.trace.store`); what it was not handed is counted, and said
on standard error when the recorder closes (`outform.trace.store.TraceLossWarning`), as the
store says what it could not write. A program that tells such losses itself (the command line,
as its own error) closes the recorder with `close(warn=False)` and reads `losses`.

What a crash can lose: events recorded since the last batch was committed, that is at most
`flush_interval` seconds of them (plus a batch that failed and waits for a retry). A normal
exit flushes (an `atexit` hook), and so does `close()`. After `os.fork()` the child starts
with an empty queue and its own writer thread; sinks reopen their connections there.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import threading
import time
import warnings
import weakref
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import repeat, starmap
from typing import Protocol

from outform.trace import caller, redact
from outform.trace.caller import Labels
from outform.trace.events import Event

log = logging.getLogger("outform.trace")


@dataclass(frozen=True, eq=False)
class CountedRun:
    """A kind of run that is counted without its events (a batch job's row valid as sent,
    thousands a second): the count series (kind, stage, key, how many) its events would add,
    under its labels, provider, model and mode (`outform.trace.rows.counted_run` makes one
    from the events). Hashed by identity: one object per kind, counted in bulk like tallies."""

    step: str
    provider: str
    model: str
    mode: str
    series: tuple[tuple[str, str, str, int], ...]


class TraceLossWarning(RuntimeWarning):
    """Events a sink could not keep, nor count (the store's at close, or what a sink that
    failed to open missed): said on standard error, since the `outform.trace` logger is
    silent unless configured. Its parts are kept for a program that tells the loss itself
    (the command line, as its own error): `what` was lost and why, `where` (the store or
    sink), and the `fix`. (Also importable as `outform.trace.store.TraceLossWarning`.)"""

    def __init__(self, what: str, where: str, fix: str) -> None:
        super().__init__(f"outform trace: {what}. Fix: {fix}")
        self.what, self.where, self.fix = what, where, fix


@dataclass(frozen=True)
class Loss:
    """Events a sink could not keep, as it said so when the recorder closed: the sink, and its
    `TraceLossWarning` (what was lost and why, where, the fix)."""

    sink: Sink
    warning: TraceLossWarning


@dataclass
class Batch:
    """What the writer hands to every sink at once."""

    events: list[Event] = field(default_factory=list)
    tallies: Counter[Labels] = field(default_factory=Counter)
    """Runs that took the fast path, per caller labels."""
    counted: Counter[CountedRun] = field(default_factory=Counter)
    """Runs counted without their events (`Recorder.count`)."""
    dropped: int = 0
    time: float = field(default_factory=time.time)

    def __bool__(self) -> bool:
        return bool(self.events or self.tallies or self.counted or self.dropped)

    def size(self) -> int:
        """What losing the batch loses, in `dropped_events`' unit: its events, its counted
        runs and the drops it carried."""
        runs = sum(self.tallies.values()) + sum(self.counted.values())
        return len(self.events) + runs + self.dropped


class Sink(Protocol):
    """Where batches go. `open` and `write` run on the writer thread; `write` may raise (the
    error is logged, the recorder goes on); `close` is called once, at the end. A sink whose
    `open` raises is left out, and what it misses is counted and said at the end
    (`TraceLossWarning`)."""

    def open(self) -> None: ...

    def write(self, batch: Batch) -> None: ...

    def close(self) -> None: ...


class _Flush:
    """A marker in the queue: set once everything queued before it went to the sinks."""

    __slots__ = ("done",)

    def __init__(self) -> None:
        self.done = threading.Event()


class _Later:
    """Events to build on the writer thread (`Recorder.record_later`): the first `count` of
    what `build()` returns."""

    __slots__ = ("build", "count")

    def __init__(self, count: int, build: Callable[[], Sequence[Event]]) -> None:
        self.count = count
        self.build = build


class Recorder:
    def __init__(
        self,
        sinks: Sequence[Sink],
        *,
        queue_size: int = 100_000,
        flush_interval: float = 0.5,
        max_change_events: int | None = 1000,
    ) -> None:
        self.sinks = tuple(sinks)
        self.trace_parent = any(getattr(sink, "wants_trace_parent", False) for sink in sinks)
        """Whether a sink nests runs under the caller's span (OpenTelemetry): runs then note
        the current traceparent when they start."""
        self.queue_size = queue_size
        self.flush_interval = flush_interval
        self.max_change_events = max_change_events
        """Changes of one reply recorded one by one; the rest folded (None: all of them)."""
        self._queue: deque[Event | _Flush | _Later] = deque()
        self._tallies: deque[caller.Block | CountedRun | None] = deque()
        self._block = caller.current_block
        self._dropped = 0
        self._later = 0
        """Events queued in `_Later` items beyond the one place in the queue each takes."""
        self._drop_lock = threading.Lock()
        self._wake = threading.Event()
        self._closing = False
        self._closed = False
        self._lock = threading.Lock()
        self.missed: dict[int, tuple[Sink, BaseException, int]] = {}
        """Sinks whose `open` failed (by id): the sink, the error, and what it was not
        handed (`Batch.size`), said when the recorder closes."""
        self.losses: list[Loss] = []
        """What the sinks could not keep, when `close(warn=False)` kept it here instead of
        warning (complete once `close` returned)."""
        self._warn = True
        redact.register_environment()
        self._thread = self._start()
        _recorders.add(self)
        atexit.register(self.close)

    # -- the hot path ----------------------------------------------------------------------

    def record(self, event: Event) -> None:
        """Queue one event for the sinks."""
        if len(self._queue) + self._later < self.queue_size:
            self._queue.append(event)
        else:
            self._drop()

    def record_later(self, count: int, build: Callable[[], Sequence[Event]]) -> None:
        """Queue `count` events that `build()` makes on the writer thread, in their place in
        the queue (building many events costs more than the work that caused them). They
        count against the queue's bound like as many events: those past it are dropped."""
        with self._drop_lock:
            room = self.queue_size - len(self._queue) - self._later
            kept = max(0, min(count, room))
            self._dropped += count - kept
            if kept:
                self._later += kept - 1
        if kept:
            self._queue.append(_Later(kept, build))

    def record_all(self, events: Iterable[Event]) -> None:
        for event in events:
            self.record(event)

    def tally(self) -> None:
        """Count one run that was valid as sent (labels: the current `labels(...)` block).
        Tallies have their own queue of the blocks themselves (nothing is allocated, so the
        collector is never woken), drained in bulk and counted in C by the writer."""
        tallies = self._tallies
        if len(tallies) < self.queue_size:
            tallies.append(self._block())
        else:
            self._drop()

    def count(self, run: CountedRun) -> None:
        """Count one run of kind `run`, without its events: as cheap as a tally."""
        tallies = self._tallies
        if len(tallies) < self.queue_size:
            tallies.append(run)
        else:
            self._drop()

    def _drop(self) -> None:
        with self._drop_lock:
            self._dropped += 1

    @property
    def backlog(self) -> int:
        """Events queued and not yet handed to the sinks."""
        return len(self._queue) + self._later

    @property
    def dropped(self) -> int:
        """Events dropped since the last batch (reset when a batch carries the count)."""
        return self._dropped

    # -- control ---------------------------------------------------------------------------

    def flush(self, timeout: float | None = 30.0) -> bool:
        """Wait until everything recorded before this call went to the sinks. False when the
        timeout passed first (or the recorder is closed)."""
        if self._closed or not self._thread.is_alive():
            return False
        marker = _Flush()
        self._queue.append(marker)  # past the bound on purpose: a flush must get through
        self._wake.set()
        return marker.done.wait(timeout)

    def close(self, timeout: float = 30.0, *, warn: bool = True) -> None:
        """Flush, stop the writer and close the sinks. Idempotent. What a sink could not keep
        is said as a `TraceLossWarning` on standard error; with `warn=False` it is kept in
        `losses` instead, for the caller to tell (the command line's own error). Warning
        filters are the process's: while the sinks close, `warn=False` captures every
        warning and shows again those that are not losses, so it is for the program that
        owns the process, not for a library."""
        with self._lock:
            if self._closed:
                return
            self._warn = warn
            self._closing = True
        self._wake.set()
        self._thread.join(timeout)
        self._closed = True
        with contextlib.suppress(Exception):
            atexit.unregister(self.close)

    # -- the writer thread ------------------------------------------------------------------

    def _start(self) -> threading.Thread:
        thread = threading.Thread(target=self._run, name="outform-trace-writer", daemon=True)
        thread.start()
        return thread

    def _after_fork(self) -> None:
        # The parent's thread does not exist here, and its connections must not be used.
        self._queue = deque()
        self._tallies = deque()
        self._dropped = 0
        self._later = 0
        self.missed = {}
        self.losses = []
        self._wake = threading.Event()
        self._lock = threading.Lock()
        self._drop_lock = threading.Lock()
        if not self._closed:
            self._thread = self._start()

    def _run(self) -> None:
        opened = []
        for sink in self.sinks:
            try:
                sink.open()
                opened.append(sink)
            except Exception as exc:
                log.exception("outform trace: a sink failed to open and is left out: %r", sink)
                self.missed[id(sink)] = (sink, exc, 0)
        while True:
            self._wake.wait(self.flush_interval)
            self._wake.clear()
            closing = self._closing
            markers = self._drain(opened)
            for marker in markers:
                marker.done.set()
            if closing:
                break
        self._close_sinks(opened)

    def _close_sinks(self, opened: Sequence[Sink]) -> None:
        """Close the sinks, then say what those that failed to open missed: as warnings, or,
        after `close(warn=False)`, in `losses` (with what the sinks warned while closing)."""
        for sink in opened:
            with contextlib.nullcontext() if self._warn else _losses_of(sink, self.losses):
                try:
                    sink.close()
                except Exception:
                    log.exception("outform trace: closing a sink failed: %r", sink)
        for sink, error, lost in self.missed.values():
            if lost:
                warning = TraceLossWarning(
                    f"{lost} events were not recorded by {sink!r}, which failed to open "
                    f"({type(error).__name__}: {error})",
                    _describe(sink),
                    "check the sink's settings ([trace] in outform.toml), or set OUTFORM_TRACE=off",
                )
                if self._warn:
                    warnings.warn(warning, stacklevel=1)
                else:
                    self.losses.append(Loss(sink, warning))

    def _build(self, later: _Later) -> Sequence[Event]:
        """The events of a `_Later` item (none, counted as dropped, if building fails)."""
        try:
            events = later.build()[: later.count]
        except Exception:
            log.exception("outform trace: building %d events failed", later.count)
            events = ()
        with self._drop_lock:
            self._later -= later.count - 1
            self._dropped += later.count - len(events)
        return events

    def _drain(self, sinks: Sequence[Sink]) -> list[_Flush]:
        batch = Batch()
        markers: list[_Flush] = []
        queue = self._queue
        for _ in range(len(queue)):
            item = queue.popleft()
            if isinstance(item, _Flush):
                markers.append(item)
            elif isinstance(item, _Later):
                batch.events.extend(map(_clean, self._build(item)))
            else:
                batch.events.append(_clean(item))
        # After the events: every tally recorded before a flush marker was queued is taken.
        tallies = self._tallies
        counted = Counter(starmap(tallies.popleft, repeat((), len(tallies))))
        for block, count in counted.items():
            if isinstance(block, CountedRun):
                batch.counted[block] += count
            else:
                batch.tallies[_resolved(block)] += count
        if self._dropped:
            with self._drop_lock:
                batch.dropped, self._dropped = self._dropped, 0
        if batch:
            if self.missed:
                size = batch.size()
                self.missed = {k: (s, e, n + size) for k, (s, e, n) in self.missed.items()}
            for sink in sinks:
                try:
                    sink.write(batch)
                except Exception:
                    log.exception("outform trace: a sink failed to write a batch: %r", sink)
        return markers


def _describe(sink: Sink) -> str:
    """The sink as a person reads it: a store's own description (its path or address)."""
    describe = getattr(sink, "describe", None)
    return str(describe()) if callable(describe) else type(sink).__name__


@contextlib.contextmanager
def _losses_of(sink: Sink, losses: list[Loss]) -> Iterator[None]:
    """The `TraceLossWarning`s given in the block kept in `losses` (as `sink`'s), whatever
    the filters say; any other warning shown afterwards as the filters had it."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", TraceLossWarning)
        yield
    for said in caught:
        if isinstance(said.message, TraceLossWarning):
            losses.append(Loss(sink, said.message))
        else:
            warnings.showwarning(
                said.message, said.category, said.filename, said.lineno, said.file, said.line
            )


_recorders: weakref.WeakSet[Recorder] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for recorder in list(_recorders):
        recorder._after_fork()


os.register_at_fork(after_in_child=_after_fork_in_child)


def _clean(event: Event) -> Event:
    """The event with every secret replaced (the same object when it holds none). Each
    string is checked on its own: a piece of a key a preview cut is one at a string's edge."""
    data = event.to_dict()
    if not redact.holds_secret(data):
        return event
    return Event.from_dict(redact.scrub(data))


def _resolved(block: caller.Block | None) -> Labels:
    """The labels of the fast-path counts taken under `block` (its profile's included)."""
    given, profile = (block.labels, block.profile) if block is not None else (Labels(), None)
    try:
        return caller.resolve(given, profile)
    except Exception:  # an unknown profile must not stop the writer; keep what was given
        log.warning("outform trace: the labels of profile %r are unknown; kept as given", profile)
        return given
