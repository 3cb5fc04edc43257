"""OpenTelemetry export: a span per run and per attempt, events on them, GenAI attributes;
read back with the SDK's in-memory exporter."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from outform.trace import Batch, Event, RunInfo
from outform.trace.otel import OtelSink
from tests.trace.runs import RunSpec, run_events

PARENT_TRACE = "0af7651916cd43dd8448eb211c80319c"
PARENT = f"00-{PARENT_TRACE}-b7ad6b7169203331-01"


@pytest.fixture
def exported() -> Iterator[tuple[OtelSink, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    sink = OtelSink(provider)
    sink.open()
    yield sink, exporter
    sink.close()


def by_name(spans: tuple[ReadableSpan, ...], name: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name == name]


def test_a_reasked_run_is_a_run_span_with_one_span_per_attempt(
    exported: tuple[OtelSink, InMemorySpanExporter],
) -> None:
    sink, exporter = exported
    start = time.time()
    spec = RunSpec(reasked=("/total",), changes=(("semantic", "string_to_number", "/total"),))
    events = run_events(spec, start)
    sink.write(Batch(events[:4]))  # a run may span batches
    sink.write(Batch(events[4:]))
    spans = exporter.get_finished_spans()
    (run,) = by_name(spans, "outform.run")
    attempts = sorted(by_name(spans, "chat gpt-4o"), key=lambda s: s.start_time or 0)
    assert len(attempts) == 2
    assert all(a.parent is not None and a.parent.span_id == run.context.span_id for a in attempts)
    assert all(a.kind == SpanKind.CLIENT for a in attempts)
    attributes = run.attributes or {}
    assert attributes["gen_ai.system"] == "openai"
    assert attributes["gen_ai.request.model"] == "gpt-4o"
    assert attributes["gen_ai.usage.input_tokens"] == 240  # both attempts
    assert attributes["outform.step"] == "extract" and attributes["outform.attempts"] == 2
    first = attempts[0].attributes or {}
    assert first["gen_ai.operation.name"] == "chat" and first["outform.attempt"] == 1
    assert first["gen_ai.usage.output_tokens"] == 40 and first["http.response.status_code"] == 200
    assert [e.name for e in attempts[0].events] == [
        "provider.call",
        "output.validation.fail",
        "output.reask.attempt",
    ]
    change = next(e for e in attempts[1].events if e.name == "output.change")
    assert (change.attributes or {})["outform.path"] == "/total"
    assert (change.attributes or {})["outform.transforms"] == ("string_to_number",)
    # The spans follow the events' clock, not the export's.
    assert run.start_time is not None and abs(run.start_time / 1e9 - start) < 1


def test_a_failed_run_has_an_error_status(exported: tuple[OtelSink, InMemorySpanExporter]) -> None:
    sink, exporter = exported
    sink.write(Batch(run_events(RunSpec(reasked=("/a",), outcome="invalid"), time.time())))
    (run,) = by_name(exporter.get_finished_spans(), "outform.run")
    assert run.status.status_code == StatusCode.ERROR


def test_a_run_nests_under_the_callers_span(
    exported: tuple[OtelSink, InMemorySpanExporter],
) -> None:
    sink, exporter = exported
    info = RunInfo("nested", provider="anthropic", model="claude", trace_parent=PARENT)
    sink.write(Batch([Event("run.start", run=info), Event("run.end", run=info, data=None)]))
    sink.close()  # no run.end record: ended as incomplete at close
    (run,) = by_name(exporter.get_finished_spans(), "outform.run")
    assert run.context.trace_id == int(PARENT_TRACE, 16)
    assert (run.attributes or {})["gen_ai.system"] == "anthropic"
    assert (run.attributes or {})["outform.incomplete"] is True
