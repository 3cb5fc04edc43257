"""No sink ever holds a secret, end to end: generate(), stream(), parse() and the gateway are
called with known fake keys (shaped like no provider's key, so that only outform knowing them
can keep them out), replies and a backend's error body echo them, and then every sink
(SQLite, PostgreSQL, OpenTelemetry, logging), the gateway's stored rows and the error bodies
its clients received are scanned for them."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from pydantic import BaseModel

import outform
from outform.gateway.scrub import MASK
from outform.gateway.settings import GatewaySettings
from outform.gateway.stores import open_store
from outform.trace import Event, labels, register_secret
from outform.trace.logging_sink import LoggingSink
from outform.trace.otel import OtelSink
from outform.trace.sqlite_store import SqliteTraceStore
from outform.trace.store import TABLES, TraceStore
from outform.transport import RetryPolicy, Transport
from tests.gateway.harness import ChatFake, running
from tests.providers import openai_wire
from tests.providers.fake import FakeServer
from tests.trace.sinks import memory_spans, restore_recording

KEY = "fk-" + uuid.uuid4().hex  # the provider key of the library's calls
BACKEND_KEY = "bk-" + uuid.uuid4().hex  # the key the gateway sends its backend
CLIENT_KEY = "ck-" + uuid.uuid4().hex  # the key a gateway client presents
PASSWORD = "pw-" + uuid.uuid4().hex  # a store password, registered as the stores do
SECRETS = {"provider key": KEY, "backend key": BACKEND_KEY, "client key": CLIENT_KEY,
           "store password": PASSWORD}  # fmt: skip


class Person(BaseModel):
    name: str
    age: int
    email: str


def reply(text: str | dict[str, Any]) -> dict[str, Any]:
    content = text if isinstance(text, str) else orjson.dumps(text).decode()
    return openai_wire.chat_completion(content=content)


def library_calls() -> None:
    """generate(), stream() and parse(), their replies echoing the key."""
    options: dict[str, Any] = {"api_key": KEY, "level": "full"}
    with FakeServer() as server, Transport(retry=RetryPolicy(retries=0)) as transport:
        options.update(base_url=server.url, transport=transport)
        server.json(reply({"name": "Ada", "age": KEY, "email": "a@b.c"}))  # a violation says it
        server.json(reply({"age": 36}))
        server.json(reply(f'Sure: {{"name": "{KEY}", "age": "36", "email": "a@b.c"}}'))
        server.stream(openai_wire.text_stream(f'{{"name": "{KEY}", "age": 36, ', '"email": "x"}'))
        with labels(step="secrets", tags=[f"key={KEY}"]):
            outform.generate("openai:gpt-4o-mini", f"My key is {KEY}", Person, **options)
            outform.generate("openai:gpt-4o-mini", "Extract", Person, **options)
            list(outform.stream("openai:gpt-4o-mini", "Extract", Person, **options))
            outform.parse(f'Mine: {{"name": "{KEY}", "age": "36", "email": "x"}}', type=Person)
        assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"


SCHEMA = {"type": "json_schema", "json_schema": {"name": "person",
          "schema": Person.model_json_schema()}}  # fmt: skip


def gateway_calls(tmp_path: Path) -> tuple[list[bytes], Path]:
    """Requests through the gateway: enforced (its events echo the backend's key), refused by
    a backend whose error body echoes its key, and failing enforcement. The error bodies the
    client received, and the gateway's response store."""
    rows = tmp_path / "responses.sqlite"
    settings = GatewaySettings(
        backend="http://127.0.0.1:1",  # replaced below
        backend_api_key_env="BACKEND",
        api_keys=("CLIENT",),
        enforce=True,
        enforce_retries=0,
        enforce_workers=1,
    )
    env = {"BACKEND": BACKEND_KEY, "CLIENT": CLIENT_KEY}
    backend = ChatFake()
    with backend:
        settings = settings.replace(backend=backend.base)
        backend.json(reply({"name": "Ada", "age": "36", "email": "a@b.c"}))
        backend.json({"error": {"message": f"Incorrect API key provided: {BACKEND_KEY}"}}, 401)
        backend.json(reply({"name": "Ada", "age": BACKEND_KEY, "email": "a@b.c"}))
        headers = {"authorization": f"Bearer {CLIENT_KEY}", "x-outform-tags": f"k={CLIENT_KEY}"}
        store = open_store(f"sqlite:{rows}")
        with (
            running(settings, env=env, store=store) as gw,
            httpx.Client(base_url=gw.url, timeout=20) as http,
        ):
            stored = http.post(
                "/v1/responses",
                headers=headers,
                json={"model": "m", "input": "Extract: Ada, 36",
                      "text": {"format": {"type": "json_schema", "name": "person",
                                          "schema": Person.model_json_schema()}}},
            )  # fmt: skip
            assert stored.status_code == 200, stored.text
            refused = http.post(
                "/v1/chat/completions",
                headers={**headers, "x-outform-enforce": "0"},
                json={"model": "m", "messages": [{"role": "user", "content": "hi"}]},
            )
            invalid = http.post(
                "/v1/chat/completions",
                headers=headers,
                json={"model": "m", "messages": [{"role": "user", "content": "hi"}],
                      "response_format": SCHEMA},
            )  # fmt: skip
        asyncio.run(store.close())
        assert (refused.status_code, invalid.status_code) == (401, 422)
        assert all(r.headers["authorization"] == f"Bearer {BACKEND_KEY}" for r in backend.requests)
    return [refused.content, invalid.content], rows


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


def test_no_sink_and_no_gateway_answer_holds_a_secret(
    tmp_path: Path,
    postgres_store: TraceStore,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    restore_recording(monkeypatch)
    provider, exporter = memory_spans()
    trace_file = tmp_path / "trace.sqlite"
    register_secret(PASSWORD)
    seen: list[Event] = []
    outform.add_observer(seen.append)
    try:
        with caplog.at_level(logging.DEBUG, logger="outform"):
            outform.trace.start(
                sinks=[SqliteTraceStore(trace_file), postgres_store, OtelSink(provider),
                       LoggingSink()]
            )  # fmt: skip
            library_calls()
            error_bodies, rows = gateway_calls(tmp_path)
            outform.trace.emit(Event("precheck.fail", detail=f"password={PASSWORD}"))
            outform.trace.stop()
    finally:
        outform.remove_observer(seen.append)
    # The test can fail: the events recorded did carry every key, and so did the answers.
    raw = orjson.dumps([e.to_dict() for e in seen]).decode()
    assert KEY in raw and BACKEND_KEY in raw and CLIENT_KEY in raw
    assert {e.run.source for e in seen if e.run} == {"library", "gateway"}
    sqlite_files = b"".join(p.read_bytes() for p in tmp_path.glob("trace.sqlite*"))
    found: dict[str, str] = {
        "sqlite file": sqlite_files.decode("latin-1"),
        "otel spans": "".join(span.to_json() for span in exporter.get_finished_spans()),
        "log": caplog.text,
        "gateway error bodies": b"".join(error_bodies).decode(),
        "gateway stored rows": b"".join(
            p.read_bytes() for p in tmp_path.glob(rows.name + "*")
        ).decode("latin-1"),
    }
    reader = SqliteTraceStore(trace_file)
    for name, store in (("sqlite rows", reader), ("postgres rows", postgres_store)):
        found[name] = orjson.dumps([store.query(f"SELECT * FROM {t}") for t in TABLES]).decode()
        store.close()
    assert [where for where, text in found.items() if not text] == []
    assert "gateway" in found["postgres rows"] and "string_to_integer" in found["log"]
    assert "Incorrect API key provided" in found["gateway error bodies"]
    for where, text in found.items():
        for what, secret in SECRETS.items():
            assert secret not in text, f"the {what} reached the {where}"
    # Two boundaries, one mask each: the trace sinks', and the gateway's scrubber (gateway.scrub).
    assert "[redacted]" in found["sqlite rows"] and MASK in found["gateway error bodies"]
