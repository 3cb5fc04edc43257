"""OpenTelemetry export (the `otel` extra: `pip install 'outform[otel]'`).

A recorder sink that turns each run into spans, after the fact and off the hot path:

* a run span `outform.run` from the run's first event to `run.end`, a child of the caller's
  span when the run recorded one (`RunInfo.trace_parent`);
* one span per attempt, `chat {model}` (the GenAI semantic conventions' name for a model
  call), from the provider call's start to the next attempt or the end of the run;
* every event as a span event on its attempt's span (or on the run span), its fields as
  attributes (`outform.*`).

GenAI attributes where they fit: `gen_ai.system` and `gen_ai.provider.name` (the provider),
`gen_ai.operation.name` (`chat`), `gen_ai.request.model`, `gen_ai.usage.input_tokens` and
`gen_ai.usage.output_tokens` (per attempt, and summed on the run), and
`gen_ai.response.finish_reasons`; `http.response.status_code` and `error.type` for a failed
call. Runs that end invalid, refused or in error get an ERROR status.

Spans go to the tracer provider given, or the global one (set up by the application as for
any other library). Events outside a run and fast-path tallies are not exported.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer, TracerProvider
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from outform.trace.events import Event, ProviderCall, RunEnd, RunInfo
from outform.trace.recorder import Batch

log = logging.getLogger("outform.trace")

GEN_AI_SYSTEMS = {
    "openai": "openai",
    "openai-responses": "openai",
    "azure": "az.ai.openai",
    "anthropic": "anthropic",
    "gemini": "gcp.gemini",
    "vertex": "gcp.vertex_ai",
    "bedrock": "aws.bedrock",
    "groq": "groq",
    "mistral": "mistral_ai",
    "xai": "xai",
    "deepseek": "deepseek",
}
"""outform's provider names as the GenAI conventions' `gen_ai.system` values (others pass
unchanged)."""
MAX_OPEN_RUNS = 10_000
"""Runs waiting for their `run.end`; past this, the oldest is ended as incomplete."""
_FAILED = ("invalid", "refused", "error")


def _ns(seconds: float) -> int:
    return int(seconds * 1e9)


def gen_ai_system(provider: str | None) -> str | None:
    return GEN_AI_SYSTEMS.get(provider, provider) if provider else None


@dataclass
class _OpenRun:
    span: Span
    attempts: dict[int, Span] = field(default_factory=dict)
    input_tokens: int = 0
    output_tokens: int = 0


def current_parent() -> str | None:
    """The W3C traceparent of the caller's current span (None outside any), noted when a run
    starts so that its spans, built later on the writer thread, nest under it."""
    carrier: dict[str, str] = {}
    TraceContextTextMapPropagator().inject(carrier)
    return carrier.get("traceparent")


class OtelSink:
    wants_trace_parent = True
    """Runs note the caller's span when they start (`RunInfo.trace_parent`)."""

    def __init__(self, tracer_provider: TracerProvider | None = None) -> None:
        self._provider = tracer_provider
        self._tracer: Tracer | None = None
        self._runs: OrderedDict[str, _OpenRun] = OrderedDict()

    def open(self) -> None:
        from outform import __version__

        provider = self._provider or trace.get_tracer_provider()
        self._tracer = provider.get_tracer("outform", __version__)

    def write(self, batch: Batch) -> None:
        for event in batch.events:
            if event.run is not None:
                self._on(event, event.run)

    def close(self) -> None:
        while self._runs:
            _, run = self._runs.popitem(last=False)
            _end_incomplete(run)

    # -- one event -------------------------------------------------------------------------

    def _on(self, event: Event, info: RunInfo) -> None:
        run = self._runs.get(info.run_id)
        data = event.data
        started = event.time
        if isinstance(data, ProviderCall):
            started -= data.latency_ms / 1000
        if run is None:
            run = self._open_run(info, started)
        span = run.span
        if event.attempt > 0:
            span = run.attempts.get(event.attempt) or self._open_attempt(run, info, event, started)
        span.add_event(event.name, _attributes(event), timestamp=_ns(event.time))
        if isinstance(data, ProviderCall):
            _describe_call(span, data)
            run.input_tokens += data.tokens.input_tokens
            run.output_tokens += data.tokens.output_tokens
        if isinstance(data, RunEnd):
            self._end_run(info.run_id, run, event.time, data)

    def _open_run(self, info: RunInfo, started: float) -> _OpenRun:
        assert self._tracer is not None
        context = None
        if info.trace_parent:
            context = TraceContextTextMapPropagator().extract({"traceparent": info.trace_parent})
        span = self._tracer.start_span(
            "outform.run",
            context=context,
            kind=SpanKind.INTERNAL,
            attributes=_run_attributes(info),
            start_time=_ns(started),
        )
        run = self._runs[info.run_id] = _OpenRun(span)
        if len(self._runs) > MAX_OPEN_RUNS:
            _, oldest = self._runs.popitem(last=False)
            _end_incomplete(oldest)
        return run

    def _open_attempt(self, run: _OpenRun, info: RunInfo, event: Event, started: float) -> Span:
        assert self._tracer is not None
        for number, previous in list(run.attempts.items()):
            if previous.is_recording():
                previous.end(end_time=_ns(started))
            del run.attempts[number]
        attributes = {
            **_run_attributes(info),
            "gen_ai.operation.name": "chat",
            "outform.attempt": event.attempt,
        }
        span = self._tracer.start_span(
            f"chat {info.model}" if info.model else "chat",
            context=trace.set_span_in_context(run.span),
            kind=SpanKind.CLIENT,
            attributes=_clean(attributes),
            start_time=_ns(started),
        )
        run.attempts[event.attempt] = span
        return span

    def _end_run(self, run_id: str, run: _OpenRun, ended: float, data: RunEnd) -> None:
        for span in run.attempts.values():
            span.end(end_time=_ns(ended))
        run.span.set_attribute(
            "gen_ai.usage.input_tokens", run.input_tokens or data.tokens.input_tokens
        )
        run.span.set_attribute(
            "gen_ai.usage.output_tokens", run.output_tokens or data.tokens.output_tokens
        )
        run.span.set_attribute("outform.outcome", data.outcome)
        run.span.set_attribute("outform.attempts", data.attempts)
        if data.outcome in _FAILED:
            run.span.set_status(Status(StatusCode.ERROR, data.outcome))
            if data.error_class:
                run.span.set_attribute("error.type", data.error_class)
        run.span.end(end_time=_ns(ended))
        self._runs.pop(run_id, None)


def _end_incomplete(run: _OpenRun) -> None:
    for span in run.attempts.values():
        span.end()
    run.span.set_attribute("outform.incomplete", True)
    run.span.end()


def _run_attributes(info: RunInfo) -> dict[str, Any]:
    system = gen_ai_system(info.provider)
    return _clean(
        {
            "gen_ai.system": system,
            "gen_ai.provider.name": system,
            "gen_ai.request.model": info.model,
            "outform.run_id": info.run_id,
            "outform.source": info.source,
            "outform.step": info.step,
            "outform.agent": info.agent,
            "outform.tags": list(info.tags) or None,
            "outform.mode": info.mode,
            "outform.mode_reason": info.mode_reason,
            "outform.streaming": info.streaming,
        }
    )


def _describe_call(span: Span, data: ProviderCall) -> None:
    attributes: dict[str, Any] = {
        "gen_ai.usage.input_tokens": data.tokens.input_tokens,
        "gen_ai.usage.output_tokens": data.tokens.output_tokens,
        "http.response.status_code": data.status,
        "error.type": data.error_class,
        "gen_ai.response.finish_reasons": [data.finish_reason] if data.finish_reason else None,
        "outform.latency_ms": data.latency_ms,
        "outform.ttft_ms": data.ttft_ms,
        "outform.retries": data.retries,
    }
    span.set_attributes(_clean(attributes))
    if data.error_class:
        span.set_status(Status(StatusCode.ERROR, data.error_class))


def _attributes(event: Event) -> dict[str, Any]:
    """An event's fields as span-event attributes: scalars as they are, the rest as JSON."""
    flat: dict[str, Any] = {
        "outform.stage": event.stage,
        "outform.path": event.path or None,
        "outform.transforms": list(event.transforms) or None,
        "outform.branch_index": event.branch_index,
        "outform.detail": event.detail or None,
        "outform.schema_hash": event.schema_hash,
        "outform.attempt": event.attempt,
    }
    if event.data is not None:
        for key, value in event.data.to_dict().items():
            flat[f"outform.{key}"] = value
    return _clean(flat)


def _clean(values: Mapping[str, Any]) -> dict[str, Any]:
    """Attributes OpenTelemetry accepts: None left out, mappings and mixed lists as JSON."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        if value is None:
            continue
        if isinstance(value, dict) or (
            isinstance(value, list) and not all(isinstance(v, str) for v in value)
        ):
            out[key] = orjson.dumps(value).decode()
        else:
            out[key] = value
    return out
