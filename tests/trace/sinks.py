"""A sink that keeps what it is given, and the process's recorder started over it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

import outform
from outform.trace import Batch, Event, runtime

if TYPE_CHECKING:  # the otel extra: imported by the tests that use it
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


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


def restore_recording(monkeypatch: pytest.MonkeyPatch) -> None:
    """The process's recording as it is now, back when the test ends (it starts its own)."""
    for name in ("_recorder", "_decided", "tally"):
        monkeypatch.setattr(runtime, name, getattr(runtime, name))


def memory_spans() -> tuple[TracerProvider, InMemorySpanExporter]:
    """An OpenTelemetry tracer provider and the in-memory exporter of its finished spans."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> Iterator[ListSink]:
    """The process's recorder, writing to a ListSink; recording is as it was afterwards."""
    restore_recording(monkeypatch)
    sink = ListSink()
    outform.trace.start(sinks=[sink])
    try:
        yield sink
    finally:
        outform.trace.stop()
