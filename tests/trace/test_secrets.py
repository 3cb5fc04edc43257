"""No sink ever holds a secret: a real generate() call with a known fake key, its events
built as the run loop records them, every sink written, every sink scanned.

The events are built here from the call's result (the run loop records them itself from
phase 2 of issue 12 on, and this test then repeats end to end)."""

from __future__ import annotations

import dataclasses
import logging
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import BaseModel

import outform
from outform.trace import (
    Change,
    Event,
    ProviderCall,
    Reask,
    Recorder,
    RunEnd,
    RunInfo,
    Sink,
    Tokens,
    Validation,
    register_secret,
)
from outform.trace.logging_sink import LoggingSink
from outform.trace.otel import OtelSink
from outform.trace.sqlite_store import SqliteTraceStore
from outform.trace.store import TABLES, TraceStore
from outform.transport import RetryPolicy, Transport
from tests.providers.fake import FakeServer

KEY = "sk-fake-" + uuid.uuid4().hex  # the provider key of the call
PASSWORD = "pw-" + uuid.uuid4().hex  # a store password, registered as the stores do


class Person(BaseModel):
    name: str
    age: int
    email: str


def chat(text: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "gpt-4o-mini",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 20, "completion_tokens": 9, "total_tokens": 29},
    }


def call_events() -> list[Event]:
    """A generate() call whose first reply echoes the key, and the events it records."""
    seen: list[Event] = []
    with FakeServer() as server, Transport(retry=RetryPolicy(retries=0)) as transport:
        server.json(chat(orjson.dumps({"name": "Ada", "age": KEY, "email": "a@b.c"}).decode()))
        server.json(chat(f'My key is {KEY}. {{"age": "36"}}'))
        started = time.time()
        result = outform.generate(
            "openai:gpt-4o-mini",
            f"Extract the person (the API key is {KEY}): Ada, 36",
            Person,
            base_url=server.url,
            api_key=KEY,
            transport=transport,
            observers=[seen.append],
            level="full",
        )
        assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    info = RunInfo(
        "secret-run",
        step="secrets",
        tags=(f"key={KEY}",),
        provider="openai",
        model="gpt-4o-mini",
        mode=result.mode,
        mode_reason=result.mode_reason,
    )
    events = [Event("run.start", run=info, time=started)]
    for number, attempt in enumerate(result.attempts, 1):
        tokens = Tokens(attempt.usage.input_tokens, attempt.usage.output_tokens)
        call = ProviderCall(5.0, status=200, tokens=tokens, finish_reason=attempt.finish_reason)
        events.append(Event("provider.call", run=info, attempt=number, data=call))
        if attempt.hint is not None:
            events.append(
                Event(
                    "output.validation.fail",
                    run=info,
                    attempt=number,
                    data=Validation.of(attempt.hint.violations),
                )
            )
            ask = Reask("schema", ("/age",), Validation.of(attempt.hint.violations).violations)
            events.append(Event("output.reask.attempt", run=info, attempt=number, data=ask))
    assert result.parse is not None
    last = len(result.attempts)
    for change in result.parse.changes:
        events.append(
            Event(
                "output.change",
                change.stage,
                transforms=(change.transform,),
                path=change.path,
                run=info,
                attempt=last,
                data=Change(str(change.before), str(change.after)),
            )
        )
    events += [dataclasses.replace(e, run=info, attempt=last) for e in seen]
    events.append(Event("run.end", run=info, attempt=last, data=RunEnd("valid", last)))
    return events


@pytest.fixture
def postgres_store(request: pytest.FixtureRequest) -> Iterator[TraceStore]:
    from outform.trace.postgres_store import PostgresTraceStore
    from tests.postgres import PostgresServer

    server: PostgresServer = request.getfixturevalue("postgres_server")
    schema, dsn = server.schema()
    try:
        yield PostgresTraceStore(dsn)
    finally:
        server.drop(schema)


def test_no_sink_holds_a_secret(
    tmp_path: Path, postgres_store: TraceStore, caplog: pytest.LogCaptureFixture
) -> None:
    events = call_events()
    register_secret(PASSWORD)
    events.append(Event("precheck.fail", detail=f"password={PASSWORD}", run=events[0].run))
    raw = orjson.dumps([e.to_dict() for e in events]).decode()
    assert KEY in raw and PASSWORD in raw  # the test can fail: the events do carry them
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    sqlite = SqliteTraceStore(tmp_path / "trace.sqlite")
    sinks: list[Sink] = [sqlite, postgres_store, OtelSink(provider), LoggingSink()]
    with caplog.at_level(logging.DEBUG, logger="outform"):
        recorder = Recorder(sinks, flush_interval=60)
        recorder.record_all(events)
        assert recorder.flush()
        recorder.close()
    stored: dict[str, str] = {
        "sqlite file": b"".join(p.read_bytes() for p in tmp_path.glob("trace.sqlite*")).decode(
            "latin-1"
        ),
        "otel spans": "".join(span.to_json() for span in exporter.get_finished_spans()),
        "log": caplog.text,
    }
    reader = SqliteTraceStore(tmp_path / "trace.sqlite")
    for name, store in (("sqlite rows", reader), ("postgres rows", postgres_store)):
        stored[name] = orjson.dumps(
            [store.query(f"SELECT * FROM {table}") for table in TABLES]
        ).decode()
        store.close()
    assert all(stored.values())
    assert "secret-run" in stored["postgres rows"] and "string_to_integer" in stored["log"]
    for name, text in stored.items():
        assert KEY not in text, f"the provider key reached the {name}"
        assert PASSWORD not in text, f"the store password reached the {name}"
    assert "[redacted]" in stored["sqlite rows"]
