"""Acknowledged means stored: `kill -9` in the middle of concurrent stored requests (small
and 1 MB inputs, streamed and not), a restart on the same store, and every response a client
had received whole is served back whole. SQLite and PostgreSQL, each with a real gateway
process (tests/gateway/crash.py has the scenario; benchmarks/bench_durability.py runs it with
2,000 requests)."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import pytest

from tests.gateway import crash, served

pytest_plugins = ["tests.gateway.postgres"]


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_kill_9_loses_no_acknowledged_response(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    env: dict[str, str] = {}
    if kind == "sqlite":
        store = f"sqlite:{tmp_path / 'responses.sqlite'}"
    else:
        server = request.getfixturevalue("postgres_server")
        schema, env["OUTFORM_TEST_STORE"] = server.schema()
        request.addfinalizer(lambda: server.drop(schema))
        store = "postgres:$OUTFORM_TEST_STORE"
    seed = random.randrange(1 << 32)
    outcomes = crash.requests(120, large_every=6)  # 20 inputs of 1 MB
    kill_after = random.Random(seed).randint(10, 60)
    with crash.EchoBackend() as backend:
        first = served.start(backend.base, store, tmp_path, env=env)
        try:
            asyncio.run(crash.load(first.url, outcomes, kill_after=kill_after, kill=first.crash))
        finally:
            first.kill()
        with served.serving(backend.base, store, tmp_path, env=env) as second:
            report = asyncio.run(crash.verify(second.url, outcomes))
    context = f"seed {seed}, killed after {kill_after} answers: {report}"
    assert kill_after <= report.acknowledged < report.sent, context  # killed mid-way
    assert report.missing == [], context
    assert report.half_written == [], context
    assert report.intact == report.acknowledged
    # streams the kill cut short were stored in_progress before their first event; the new
    # process retired the dead one, so they read as failed (or completed, when the final
    # row was committed and only the last event was lost), never in_progress, never 404
    assert set(report.unacknowledged) <= {"failed", "completed"}, context
