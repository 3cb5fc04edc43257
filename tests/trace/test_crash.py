"""kill -9 of a real application: a process that calls generate() in a loop against a local
fake provider, recording as outform.toml / OUTFORM_TRACE says, is killed while it works. The
trace store stays consistent, keeps every run committed before the kill, and what it holds is
a prefix of what was recorded: at most the last batch is lost."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from outform.trace.sqlite_store import SqliteTraceStore
from tests.providers import openai_wire
from tests.providers.fake import FakeServer, Reply

ROOT = Path(__file__).resolve().parents[2]

APP = textwrap.dedent(
    """
    import sys
    import outform

    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    url = sys.argv[1]
    n = 0
    while True:
        outform.generate("openai:gpt-4o-mini", "Count", schema, base_url=url, api_key="k" * 12,
                         labels={"step": f"n{n:06d}"})
        n += 1
        if n == 20:
            assert outform.trace.flush()
            print("committed", n, flush=True)
        if n == 60:
            print("busy", flush=True)
    """
)


class Answering(FakeServer):
    """A provider that gives the same repaired reply to every call."""

    def _next(self) -> Reply:
        content = 'Sure: {"n": "7"}'
        return Reply(body=openai_wire.chat_completion(content=content))


def stored(path: Path) -> Iterator[tuple[str, str | None, int]]:
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        counts = dict(
            conn.execute("SELECT run_id, COUNT(*) FROM outform_trace_events GROUP BY run_id")
        )
        for run_id, step, outcome in conn.execute(
            "SELECT run_id, step, outcome FROM outform_trace_runs ORDER BY step"
        ):
            yield step, outcome, counts.get(run_id, 0)
    finally:
        conn.close()


def test_kill_9_of_an_app_loses_at_most_the_last_batch(tmp_path: Path) -> None:
    path = tmp_path / "trace.sqlite"
    env: dict[str, Any] = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "src"),
        "OUTFORM_TRACE": f"sqlite:{path}",  # as an application configures it
    }
    with Answering() as provider:
        app = subprocess.Popen(
            [sys.executable, "-c", APP, provider.url], stdout=subprocess.PIPE, text=True, env=env
        )
        try:
            assert app.stdout is not None
            committed = int(app.stdout.readline().split()[1])
            assert app.stdout.readline().strip() == "busy"
            app.send_signal(signal.SIGKILL)
        finally:
            app.wait(30)
        assert app.returncode == -signal.SIGKILL
        calls = len(provider.requests)
    runs = list(stored(path))
    ended = [step for step, outcome, _ in runs if outcome is not None]
    # Every run ended before the flush is there, whole; the runs there form a prefix of those
    # made (batches commit whole and in order), and only the last of them may lack its end.
    assert committed == 20 and len(ended) >= committed
    assert ended == [f"n{i:06d}" for i in range(len(ended))]
    whole = {events for _, outcome, events in runs if outcome is not None}
    assert whole == {6}  # run.start, format.native, provider.call, 2 changes, run.end
    assert len(runs) - len(ended) <= 1 and len(runs) <= calls
    assert all(outcome == "valid" for _, outcome, _ in runs if outcome is not None)
    reopened = SqliteTraceStore(path)  # and the store opens for the next process
    reopened.open()
    assert orjson.loads(reopened.query("SELECT body FROM outform_trace_events LIMIT 1")[0][0])
    reopened.close()
