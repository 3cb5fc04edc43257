"""A sink that keeps what it is given, and the process's recorder started over it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import outform
from outform.trace import Batch, Event, runtime


class ListSink:
    def __init__(self, fail: bool = False) -> None:
        self.batches: list[Batch] = []
        self.fail = fail
        self.opened = self.closed = 0

    def open(self) -> None:
        self.opened += 1

    def write(self, batch: Batch) -> None:
        if self.fail:
            raise RuntimeError("the disk is full")
        self.batches.append(batch)

    def close(self) -> None:
        self.closed += 1

    @property
    def events(self) -> list[Event]:
        return [e for b in self.batches for e in b.events]

    def flushed(self) -> list[Event]:
        """Every event recorded so far, once the recorder has written them."""
        assert outform.trace.flush()
        return self.events


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> Iterator[ListSink]:
    """The process's recorder, writing to a ListSink; recording is as it was afterwards."""
    for name in ("_recorder", "_decided", "tally"):
        monkeypatch.setattr(runtime, name, getattr(runtime, name))  # restored at the end
    sink = ListSink()
    outform.trace.start(sinks=[sink])
    try:
        yield sink
    finally:
        outform.trace.stop()
